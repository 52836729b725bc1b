//! Syntax highlighting for code blocks via syntect, with size guards.
//!
//! The syntax and theme sets are loaded once (they take tens of milliseconds to
//! deserialize) and shared. Highlighting is regex-driven and can be slow on
//! pathological input, so oversized blocks are left plain rather than stalling a frame.
//!
//! [`LineHighlighter`] carries syntect's parse and highlight state from one line to the next,
//! so a code block that arrives a line at a time has each line highlighted once; the
//! whole-block [`highlight`] is the same highlighter run over every line.

pub use crate::text::code::lang_token;
use ratatui::style::{Color, Modifier, Style};
use syntect::highlighting::{FontStyle, HighlightIterator, HighlightState, Highlighter};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference};
use syntect::util::LinesWithEndings;

/// Blocks with more lines than this are not highlighted.
pub const MAX_LINES: usize = 2_000;
/// Blocks with any line longer than this (in chars) are not highlighted.
pub const MAX_LINE_CHARS: usize = 1_000;

/// One highlighted line: styled pieces, no trailing newline.
pub type HighlightedLine = Vec<(Style, String)>;

use crate::text::syntax::{syntaxes, themes};

/// Names people write after a fence that the bundled syntaxes know under another token.
fn alias(lang: &str) -> &str {
    match lang.to_ascii_lowercase().as_str() {
        "shell" | "console" | "zsh" | "sh-session" | "shellsession" => "bash",
        "py3" | "python3" => "py",
        "c++" => "cpp",
        "ts" | "typescript" | "tsx" | "jsx" | "mjs" | "cjs" => "js",
        "jsonc" | "json5" => "json",
        "yml" => "yaml",
        "golang" => "go",
        "rs" => "rust",
        _ => lang,
    }
}

fn find_syntax(lang: &str) -> Option<&'static SyntaxReference> {
    let lang = lang_token(lang);
    if lang.is_empty() {
        return None;
    }
    let set = syntaxes();
    set.find_syntax_by_token(lang).or_else(|| set.find_syntax_by_token(alias(lang)))
}

/// Whether a block of `lang` would be highlighted with the syntect theme `theme_name` (a
/// known language and theme), without building a highlighter.
#[must_use]
pub fn can_highlight(lang: &str, theme_name: &str) -> bool {
    find_syntax(lang).is_some() && themes().themes.contains_key(theme_name)
}

/// True when `lang` names a syntax we can highlight.
#[must_use]
pub fn knows_language(lang: &str) -> bool {
    find_syntax(lang).is_some()
}

/// Whether a line is over [`MAX_LINE_CHARS`] (the cheap byte test first).
#[must_use]
pub fn line_too_long(line: &str) -> bool {
    line.len() > MAX_LINE_CHARS && line.chars().count() > MAX_LINE_CHARS
}

/// Highlights `code` (already sanitized) as `lang` with the named syntect theme.
///
/// `None` means "render it plain": unknown language or theme, a block over the size
/// guards, or a highlighter error.
#[must_use]
pub fn highlight(code: &str, lang: &str, theme_name: &str) -> Option<Vec<HighlightedLine>> {
    if code.lines().count() > MAX_LINES || code.lines().any(line_too_long) {
        return None;
    }
    let mut hl = LineHighlighter::new(lang, theme_name)?;
    LinesWithEndings::from(code).map(|line| hl.line(line)).collect()
}

/// A highlighter that keeps its place: each call highlights the next line of the block.
/// Lines are passed with their `\n` (syntect's newline syntaxes expect it), except the last
/// line of a block, which has none.
pub struct LineHighlighter {
    highlighter: Highlighter<'static>,
    parse: ParseState,
    state: HighlightState,
}

impl LineHighlighter {
    /// `None` for an unknown language or theme (the block is then plain).
    #[must_use]
    pub fn new(lang: &str, theme_name: &str) -> Option<Self> {
        let syntax = find_syntax(lang)?;
        let theme = themes().themes.get(theme_name)?;
        let highlighter = Highlighter::new(theme);
        let state = HighlightState::new(&highlighter, ScopeStack::new());
        Some(Self { highlighter, parse: ParseState::new(syntax), state })
    }

    /// Highlights the next line and moves past it; `None` on a highlighter error.
    pub fn line(&mut self, line: &str) -> Option<HighlightedLine> {
        highlight_with(&self.highlighter, &mut self.parse, &mut self.state, line)
    }

    /// Highlights `line` as the next line without moving past it (a line that may still be
    /// the last of its block, or may yet be followed by more).
    #[must_use]
    pub fn peek(&self, line: &str) -> Option<HighlightedLine> {
        let (mut parse, mut state) = (self.parse.clone(), self.state.clone());
        highlight_with(&self.highlighter, &mut parse, &mut state, line)
    }
}

fn highlight_with(
    highlighter: &Highlighter<'_>,
    parse: &mut ParseState,
    state: &mut HighlightState,
    line: &str,
) -> Option<HighlightedLine> {
    let ops = parse.parse_line(line, syntaxes()).ok()?;
    let pieces = HighlightIterator::new(state, &ops, line, highlighter);
    let mut converted: HighlightedLine = Vec::new();
    for (style, text) in pieces {
        let text = text.trim_end_matches(['\n', '\r']);
        if !text.is_empty() {
            converted.push((convert(style), text.to_owned()));
        }
    }
    Some(converted)
}

/// Foreground and font style only: the background belongs to the ratatui theme.
fn convert(s: syntect::highlighting::Style) -> Style {
    let c = s.foreground;
    let mut style = Style::new().fg(Color::Rgb(c.r, c.g, c.b));
    if s.font_style.contains(FontStyle::BOLD) {
        style = style.add_modifier(Modifier::BOLD);
    }
    if s.font_style.contains(FontStyle::ITALIC) {
        style = style.add_modifier(Modifier::ITALIC);
    }
    if s.font_style.contains(FontStyle::UNDERLINE) {
        style = style.add_modifier(Modifier::UNDERLINED);
    }
    style
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::theme::SYNTAX_THEMES;

    #[test]
    fn highlights_rust() {
        let lines = highlight("fn main() {\n    let x = 1;\n}\n", "rust", "base16-ocean.dark").unwrap();
        assert_eq!(lines.len(), 3);
        let text: String = lines[1].iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(text, "    let x = 1;");
        let colours: std::collections::HashSet<_> = lines.iter().flatten().map(|(s, _)| s.fg).collect();
        assert!(colours.len() > 1, "expected several colours: {colours:?}");
    }

    #[test]
    fn unknown_language_or_theme_is_plain() {
        assert!(highlight("x", "no-such-lang", "base16-ocean.dark").is_none());
        assert!(highlight("x", "", "base16-ocean.dark").is_none());
        assert!(highlight("x", "rust", "no-such-theme").is_none());
    }

    #[test]
    fn every_bundled_theme_name_exists() {
        for name in SYNTAX_THEMES {
            assert!(themes().themes.contains_key(name), "{name}");
        }
    }

    #[test]
    fn size_guards() {
        let long_line = "a".repeat(MAX_LINE_CHARS + 1);
        assert!(highlight(&long_line, "rust", "base16-ocean.dark").is_none());
        let many = "x\n".repeat(MAX_LINES + 1);
        assert!(highlight(&many, "rust", "base16-ocean.dark").is_none());
        let ok = "x\n".repeat(MAX_LINES);
        assert!(highlight(&ok, "rust", "base16-ocean.dark").is_some());
    }

    #[test]
    fn lang_tokens_and_aliases() {
        assert_eq!(lang_token("rust,ignore"), "rust");
        assert_eq!(lang_token(" {.python} "), "python");
        assert_eq!(lang_token("sh title=x"), "sh");
        assert!(knows_language("Rust"));
        assert!(knows_language("shell"));
        assert!(knows_language("py"));
        assert!(knows_language("ts"));
        assert!(!knows_language("klingon"));
    }
}
