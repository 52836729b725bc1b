//! Helpers shared by the integration tests: reconstructing a reply from SSE bytes split into
//! arbitrary reads, exactly as the client does.

#![allow(dead_code)]

pub mod cli;
pub mod screen;
pub mod tmux;

#[allow(unused_imports)] // not every test crate that includes this module reconstructs
pub use palaver::engine::turn::reconstruct;

/// Splits `body` into reads of `n` bytes.
pub fn chunks(body: &[u8], n: usize) -> Vec<&[u8]> {
    body.chunks(n.max(1)).collect()
}
