#![no_main]
//! cargo-fuzz target; the checks live in `palaver::fuzzing::sanitizer` so `cargo test` replays the corpus.
libfuzzer_sys::fuzz_target!(|data: &[u8]| palaver::fuzzing::sanitizer(data));
