#![no_main]
//! cargo-fuzz target; the checks live in `palaver::fuzzing::headers_and_errors` so `cargo test` replays the corpus.
libfuzzer_sys::fuzz_target!(|data: &[u8]| palaver::fuzzing::headers_and_errors(data));
