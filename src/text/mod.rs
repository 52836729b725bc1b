//! Text helpers every layer above may need and none of them draws with: sanitising text for a
//! terminal or an HTML page, formatting numbers, durations and sizes, pretty JSON, and finding code blocks in
//! markdown. No palaver module below this one; pure functions only.

pub mod code;
pub mod fmt;
pub mod html;
pub mod markdown;
pub mod sanitize;
pub mod secrets;
pub mod syntax;
