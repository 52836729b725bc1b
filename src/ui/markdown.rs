//! Markdown to ratatui lines. (Placeholder: plain lines.)

use super::theme::Theme;
use ratatui::text::Line;

/// Renders complete markdown text wrapped to `width` columns.
#[must_use]
pub fn render(text: &str, _width: u16, _theme: &Theme) -> Vec<Line<'static>> {
    text.lines().map(|l| Line::raw(l.to_owned())).collect()
}

/// A fenced code block found in the text (for "copy code block").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    pub lang: String,
    pub code: String,
}

#[must_use]
pub fn code_blocks(_text: &str) -> Vec<CodeBlock> {
    Vec::new()
}
