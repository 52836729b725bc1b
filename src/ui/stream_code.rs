//! A streamed code block whose rows are highlighted when they are first read, not when they
//! arrive: a long answer streams its code blocks past the bottom of the screen faster than
//! frames are drawn, and a line nobody looks at never needs syntect. Rows are highlighted in
//! order (syntect's parse and highlight state carried from line to line), each line once; the
//! last line of a block that may still grow is highlighted again only when it is read again
//! after more arrived.
//!
//! The layout does not wait for highlighting: a code line's rows are its hard wrap, which for
//! ASCII text (or a line that fits) does not depend on where the colours change. A line whose
//! rows could (wide or combining characters over the width) is highlighted as soon as it is
//! complete. The rows are those `markdown::render` gives the same block, with one exception:
//! when syntect fails on a line (never seen with the bundled syntaxes) the rows from there on
//! are plain, where the whole-block renderer draws the whole block plain.

use super::highlight::{self, LineHighlighter, MAX_LINES, line_too_long};
use super::markdown::{code_base, highlighted_rows, plain_rows, top_line};
use super::theme::Theme;
use super::wrap;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::cell::{OnceCell, RefCell};
use unicode_width::UnicodeWidthStr;

/// A code block's rows for a width, highlighted on first read.
#[derive(Debug)]
pub struct LazyCode {
    base: Style,
    /// Columns of the code (the markdown width) and of the screen (for the final fit).
    width: u16,
    cols: usize,
    /// Whether rows are plain: no colour, an unknown language, or over a size guard.
    plain: bool,
    lang: String,
    syntax_theme: String,
    /// Every line so far, sanitized, without its newline.
    lines: Vec<String>,
    /// First row of each line but the last, and the rows of those lines.
    starts: Vec<usize>,
    settled: Vec<OnceCell<Line<'static>>>,
    /// Rows of the last line as if it ended the block (it is read without its newline).
    last: OnceCell<Vec<Line<'static>>>,
    last_rows: usize,
    progress: RefCell<Progress>,
}

/// How far highlighting has got.
#[derive(Default)]
struct Progress {
    hl: Option<LineHighlighter>,
    /// Lines highlighted with their newline, in order.
    next: usize,
    /// syntect failed: lines from `next` on are plain.
    failed: bool,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").field("next", &self.next).field("failed", &self.failed).finish_non_exhaustive()
    }
}

impl LazyCode {
    /// An empty block of `lang` (a fence's language token) for a screen of `cols` columns.
    #[must_use]
    pub fn new(lang: &str, theme: &Theme, cols: usize) -> Self {
        let syntax_theme = theme.syntax_theme().to_owned();
        let plain = theme.no_color() || !highlight::can_highlight(lang, &syntax_theme);
        let mut code = Self {
            base: code_base(theme),
            width: u16::try_from(cols).unwrap_or(u16::MAX),
            cols,
            plain,
            lang: lang.to_owned(),
            syntax_theme,
            lines: Vec::new(),
            starts: Vec::new(),
            settled: Vec::new(),
            last: OnceCell::new(),
            last_rows: 0,
            progress: RefCell::default(),
        };
        code.layout_last();
        code
    }

    /// Adds the next line (sanitized, without its newline).
    pub fn push(&mut self, line: &str) {
        if self.lines.last().is_some() {
            // The previous line is now followed: its rows are settled.
            self.settle(self.lines.len() - 1);
        }
        self.lines.push(line.to_owned());
        // The guards of `highlight` (a last empty line is not counted, as `str::lines` does not).
        let counted = self.lines.len() - usize::from(line.is_empty());
        if !self.plain && (line_too_long(line) || counted > MAX_LINES) {
            self.plain = true;
            self.progress = RefCell::default();
            // Lines whose rows were drawn highlighted are drawn again, plain.
            let n = self.lines.len() - 1;
            self.starts.clear();
            self.settled.clear();
            for k in 0..n {
                self.settle(k);
            }
        }
        self.layout_last();
    }

    /// Lays out line `k`, which is followed by another: its rows when that needs them drawn.
    fn settle(&mut self, k: usize) {
        let first = self.settled.len();
        self.starts.push(first);
        match rows_of(&self.lines[k], usize::from(self.width)) {
            Some(n) => self.settled.extend((0..n).map(|_| OnceCell::new())),
            None => {
                // Rows that may depend on the colours: drawn now (after the lines before).
                self.catch_up(k);
                let rows = self.line_rows(k, true);
                self.settled.extend(rows.into_iter().map(OnceCell::from));
            }
        }
    }

    /// Highlights every line before `k` not yet highlighted, in order, keeping their rows.
    fn catch_up(&self, k: usize) {
        if self.plain {
            return;
        }
        let next = self.progress.borrow().next;
        for j in next..k {
            let rows = self.line_rows(j, true);
            for (cell, row) in self.settled[self.starts[j]..].iter().zip(rows) {
                let _ = cell.set(row);
            }
        }
    }

    /// Rows so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.settled.len() + self.last_rows
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `i`, highlighted (with every line before it) if it was not yet.
    #[must_use]
    pub fn row(&self, i: usize) -> Option<&Line<'static>> {
        if let Some(cell) = self.settled.get(i) {
            return Some(cell.get_or_init(|| self.realize(i)));
        }
        let last = self.last.get_or_init(|| self.last_line_rows());
        last.get(i - self.settled.len())
    }

    /// Highlights (or draws plain) the line holding settled row `i`, keeping its other rows
    /// and those of the lines before it; returns row `i`.
    fn realize(&self, i: usize) -> Line<'static> {
        let k = self.starts.partition_point(|&s| s <= i).saturating_sub(1);
        // Every line before `k` first, in order: each carries syntect's state to the next.
        self.catch_up(k);
        let rows = self.line_rows(k, true);
        let mut wanted = None;
        for (r, row) in rows.into_iter().enumerate() {
            let at = self.starts[k] + r;
            if at == i {
                wanted = Some(row);
            } else if let Some(cell) = self.settled.get(at) {
                let _ = cell.set(row);
            }
        }
        wanted.unwrap_or_default()
    }

    /// The rows of line `k`; `followed` when another line comes after it (it is then
    /// highlighted with its newline, and syntect's state moves past it).
    fn line_rows(&self, k: usize, followed: bool) -> Vec<Line<'static>> {
        let line = &self.lines[k];
        let width = usize::from(self.width);
        let spans = if self.plain {
            plain_rows(self.base, width, line)
        } else {
            let mut p = self.progress.borrow_mut();
            if p.hl.is_none() && !p.failed {
                p.hl = LineHighlighter::new(&self.lang, &self.syntax_theme);
                p.failed = p.hl.is_none();
            }
            let highlighted = if p.failed {
                None
            } else if followed && p.next == k {
                p.next += 1;
                let text = format!("{line}\n");
                p.hl.as_mut().and_then(|hl| hl.line(&text))
            } else {
                p.hl.as_ref().and_then(|hl| hl.peek(line))
            };
            match highlighted {
                Some(pieces) => highlighted_rows(self.base, width, pieces),
                None => {
                    p.failed = true;
                    plain_rows(self.base, width, line)
                }
            }
        };
        spans.into_iter().flat_map(|s| self.fit(s)).collect()
    }

    /// The last line's rows, after every line before it; one plain empty row for a block with
    /// nothing highlighted at all, as the whole-block renderer draws it.
    fn last_line_rows(&self) -> Vec<Line<'static>> {
        let Some(k) = self.lines.len().checked_sub(1) else {
            return self.empty_block();
        };
        if !self.plain && self.lines[k].is_empty() {
            return if self.settled.is_empty() { self.empty_block() } else { Vec::new() };
        }
        self.catch_up(k);
        self.line_rows(k, false)
    }

    fn empty_block(&self) -> Vec<Line<'static>> {
        plain_rows(self.base, usize::from(self.width), "").into_iter().flat_map(|s| self.fit(s)).collect()
    }

    /// How many rows the last line takes, and its rows now when that depends on them.
    fn layout_last(&mut self) {
        self.last = OnceCell::new();
        let Some(line) = self.lines.last() else {
            self.last_rows = 1;
            return;
        };
        self.last_rows = if !self.plain && line.is_empty() {
            // An empty last line is no line to syntect; a block of nothing else is one row.
            usize::from(self.settled.is_empty())
        } else if let Some(n) = rows_of(line, usize::from(self.width)) {
            n
        } else {
            let rows = self.last_line_rows();
            let n = rows.len();
            self.last = OnceCell::from(rows);
            n
        };
    }

    fn fit(&self, spans: Vec<Span<'static>>) -> Vec<Line<'static>> {
        wrap::fit(vec![top_line(spans, self.width)], self.cols)
    }
}

/// The rows a code line takes at `width` when they do not depend on its colours: ASCII text
/// breaks every `width` characters, and a line that fits is one row.
fn rows_of(line: &str, width: usize) -> Option<usize> {
    let width = width.max(1);
    if line.is_ascii() {
        Some(line.len().div_ceil(width).max(1))
    } else if line.width() <= width {
        Some(1)
    } else {
        None
    }
}
