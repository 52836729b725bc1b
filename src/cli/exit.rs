//! The exit statuses of the CLI contract (DESIGN.md §2), one home for every subcommand.

/// The run did what was asked.
pub const EXIT_OK: u8 = 0;
/// The provider or the API failed (HTTP error, error frame, dropped or stalled stream).
pub const EXIT_PROVIDER: u8 = 1;
/// A usage or configuration error.
pub const EXIT_USAGE: u8 = 2;
/// The user interrupted it (Ctrl+C).
pub const EXIT_INTERRUPTED: u8 = 130;
/// A prompt set ran, but a model passed fewer `expect` checks than `--min-pass` asks (every
/// check by default); or an answer does not follow `--schema`.
pub const EXIT_CHECKS: u8 = 3;
/// The provider's content filter stopped the reply (`finish_reason: content_filter`).
pub const EXIT_FILTERED: u8 = 4;
