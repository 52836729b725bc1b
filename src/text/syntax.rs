//! syntect's syntax and theme sets, loaded once per process: the chat screen's code blocks and
//! the conversation page both highlight with them (each set is megabytes once loaded).

use std::sync::OnceLock;
use syntect::highlighting::ThemeSet;
use syntect::parsing::SyntaxSet;

/// The default syntaxes (with newlines), loaded on first use.
pub fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// The default themes, loaded on first use.
pub fn themes() -> &'static ThemeSet {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
}
