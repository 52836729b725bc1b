//! What palaver asks of the operating system, each in one place so that every feature gets the
//! same guarantees by construction: [`read`] is the one bounded reader (network bodies, files,
//! pipes, children's output, each under a named budget), and [`spawn`] is the one way to start a
//! process (environment by policy, its own process group, reaped with its descendants,
//! sandboxed where it runs what a model chose), and [`temp`] holds the temporary files removed on
//! every exit path. `clippy.toml` forbids the unbounded reads
//! anywhere else.

pub mod read;
pub mod secrets;
pub mod spawn;
pub mod temp;
