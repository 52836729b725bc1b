//! Replays the fuzzing corpus kept in `fuzz/corpus/<target>/` (and any saved crash inputs in
//! `fuzz/regressions/<target>/`) through the same checks the fuzz targets run.

#![allow(clippy::disallowed_methods)] // tests read what they wrote

use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut n = 0;
    for dir in [root.join("corpus").join(target), root.join("regressions").join(target)] {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            if let Ok(data) = std::fs::read(e.path()) {
                check(&data);
                n += 1;
            }
        }
    }
    // Also the recorded SSE fixtures, which seed the corpus.
    if let Ok(entries) = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sse")) {
        for e in entries.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "sse")) {
            if let Ok(data) = std::fs::read(e.path()) {
                check(&data);
                n += 1;
            }
        }
    }
    assert!(n > 0, "no corpus for {target}");
}

#[test]
fn sse_decoder_corpus() {
    replay("sse_decoder", palaver::fuzzing::sse_decoder);
}

#[test]
fn mappers_and_reducer_corpus() {
    replay("mappers_and_reducer", palaver::fuzzing::mappers_and_reducer);
}

#[test]
fn markdown_corpus() {
    replay("markdown", palaver::fuzzing::markdown);
}

#[test]
fn sanitizer_corpus() {
    replay("sanitizer", palaver::fuzzing::sanitizer);
}

#[test]
fn headers_and_errors_corpus() {
    replay("headers_and_errors", palaver::fuzzing::headers_and_errors);
}
