//! A code block's rows for the whole-answer renderer, built a line at a time with the
//! highlighter that keeps its place: each line is highlighted once, with its newline when
//! another follows, the last one without (as syntect sees the end of a block). The size guards
//! of `highlight` hold for the block as a whole: a block past them is plain, every line of it.
//! The helpers that turn a line into rows are shared with the streaming renderer
//! (`ui::stream_code`), so both draw the same rows.

use super::super::highlight::{HighlightedLine, LineHighlighter, MAX_LINES, line_too_long};
use super::super::theme::{Role, Theme};
use super::wrap::{Spans, hard_wrap};
use ratatui::style::Style;
use ratatui::text::Span;
use unicode_width::UnicodeWidthStr;

/// A code block being rendered for a width.
pub struct CodeRows {
    base: Style,
    width: usize,
    /// `None` once the block is plain (no colour, an unknown language, over a guard, an error).
    hl: Option<LineHighlighter>,
    /// Every line so far, sanitized, without its newline.
    lines: Vec<String>,
    /// Rows of every line but the last.
    rows: Vec<Spans>,
}

impl std::fmt::Debug for CodeRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeRows")
            .field("lines", &self.lines.len())
            .field("rows", &self.rows.len())
            .field("highlighted", &self.hl.is_some())
            .finish_non_exhaustive()
    }
}

impl CodeRows {
    /// An empty block of language `lang` (a fence's language token) for `width` columns.
    #[must_use]
    pub fn new(lang: &str, theme: &Theme, width: usize) -> Self {
        let base = base(theme);
        let hl = if theme.no_color() { None } else { LineHighlighter::new(lang, theme.syntax_theme()) };
        Self { base, width, hl, lines: Vec::new(), rows: Vec::new() }
    }

    /// The line above a block's code: its language, when it has one.
    #[must_use]
    ///
    /// Without colour a code block would read as prose: a rule (with the language) goes above it
    /// and [`CodeRows::foot`] below it.
    pub fn head(lang: &str, theme: &Theme, width: usize) -> Option<Vec<Span<'static>>> {
        if theme.no_color() {
            let label = if lang.is_empty() { "code" } else { lang };
            let rest = width.saturating_sub(label.width() + 4);
            return Some(vec![Span::styled(format!("── {label} {}", "─".repeat(rest)), theme.style(Role::Rule))]);
        }
        (!lang.is_empty()).then(|| vec![Span::styled(lang.to_owned(), theme.style(Role::Dim))])
    }

    /// The line below a block's code: a rule, without colour only.
    pub fn foot(theme: &Theme, width: usize) -> Option<Vec<Span<'static>>> {
        theme.no_color().then(|| vec![Span::styled("─".repeat(width), theme.style(Role::Rule))])
    }

    /// Adds the next line (sanitized, without its newline).
    pub fn push(&mut self, line: &str) {
        self.lines.push(line.to_owned());
        let n = self.lines.len();
        if n >= 2 {
            // The previous line was not the last: it is highlighted now, with its newline, once.
            let prev = &self.lines[n - 2];
            let rows = match &mut self.hl {
                Some(hl) => hl.line(&format!("{prev}\n")).map(|l| highlighted(self.base, self.width, l)),
                None => Some(plain(self.base, self.width, prev)),
            };
            match rows {
                Some(rows) => self.rows.extend(rows),
                None => self.go_plain(),
            }
        }
        // The guards of `highlight`: a line too long, or more lines than it highlights (a last
        // empty line is not counted, as `str::lines` does not count it).
        let counted = n - usize::from(line.is_empty());
        if self.hl.is_some() && (line_too_long(line) || counted > MAX_LINES) {
            self.go_plain();
        }
    }

    /// Rows of the last line, as the end of the block (after the rows of the lines before it).
    fn last(&mut self) -> Vec<Spans> {
        let Some(line) = self.lines.last() else {
            // No line at all is one empty row, as an empty block always was.
            return plain(self.base, self.width, "");
        };
        let rows = match &self.hl {
            // A last line that is empty is not a line to syntect (`LinesWithEndings`).
            Some(_) if line.is_empty() => Vec::new(),
            Some(hl) => match hl.peek(line) {
                Some(l) => highlighted(self.base, self.width, l),
                None => {
                    self.go_plain();
                    return self.last();
                }
            },
            None => plain(self.base, self.width, line),
        };
        if rows.is_empty() && self.rows.is_empty() {
            // Nothing highlighted at all renders as one plain empty row.
            return plain(self.base, self.width, "");
        }
        rows
    }

    /// Every row of the finished block.
    #[must_use]
    pub fn finish(mut self) -> Vec<Spans> {
        let last = self.last();
        let mut rows = self.rows;
        rows.extend(last);
        rows
    }

    /// From here on the block is plain, the lines already rendered included.
    fn go_plain(&mut self) {
        self.hl = None;
        let done = self.lines.len().saturating_sub(1);
        self.rows = self.lines[..done].iter().flat_map(|l| plain(self.base, self.width, l)).collect();
    }
}

/// The style code is drawn in, under any highlighting.
#[must_use]
pub fn base(theme: &Theme) -> Style {
    theme.style(Role::Base).patch(theme.style(Role::CodeBlock))
}

/// The rows of one highlighted code line, wrapped hard at `width` columns.
#[must_use]
pub fn highlighted(base: Style, width: usize, line: HighlightedLine) -> Vec<Spans> {
    let pieces: Vec<(Style, String)> = line.into_iter().map(|(s, t)| (base.patch(s), t)).collect();
    hard_wrap(&pieces, width)
}

/// The rows of one code line drawn plain, wrapped hard at `width` columns.
#[must_use]
pub fn plain(base: Style, width: usize, line: &str) -> Vec<Spans> {
    hard_wrap(&[(base, line.to_owned())], width)
}
