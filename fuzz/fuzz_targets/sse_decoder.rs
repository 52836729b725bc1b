#![no_main]
//! cargo-fuzz target; the checks live in `palaver::fuzzing::sse_decoder` so `cargo test` replays the corpus.
libfuzzer_sys::fuzz_target!(|data: &[u8]| palaver::fuzzing::sse_decoder(data));
