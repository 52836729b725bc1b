#![no_main]
//! cargo-fuzz target; the checks live in `palaver::fuzzing::mappers_and_reducer` so `cargo test` replays the corpus.
libfuzzer_sys::fuzz_target!(|data: &[u8]| palaver::fuzzing::mappers_and_reducer(data));
