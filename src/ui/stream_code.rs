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
//!
//! Within a frame's [`FrameBudget`](super::frame_budget::FrameBudget) (the frame loop holds one)
//! a read highlights lines only until the budget is spent: a row whose line is not reached
//! yet is drawn plain (the same row breaks, without the colours) and the next frames go on
//! from where this one stopped, each line still highlighted once.

use super::frame_budget;
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
    /// Plain stand-ins for settled rows read before the budget reached their line.
    draft: Vec<OnceCell<Line<'static>>>,
    /// Rows of the last line as if it ended the block (it is read without its newline).
    last: OnceCell<Vec<Line<'static>>>,
    /// The last line's rows drawn plain, when the budget did not reach it.
    last_draft: OnceCell<Vec<Line<'static>>>,
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
            draft: Vec::new(),
            last: OnceCell::new(),
            last_draft: OnceCell::new(),
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
            self.draft.clear();
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
                // Rows that may depend on the colours: drawn now (after the lines before),
                // whatever the budget, as the layout needs them.
                self.catch_up(k, false);
                let rows = self.line_rows(k, true);
                self.settled.extend(rows.into_iter().map(OnceCell::from));
            }
        }
        self.draft.resize_with(self.settled.len(), OnceCell::new);
    }

    /// Highlights every line before `k` not yet highlighted, in order, keeping their rows;
    /// `bounded` stops when the frame's budget is spent. Whether every line before `k` is done
    /// (or will be drawn plain anyway).
    fn catch_up(&self, k: usize, bounded: bool) -> bool {
        if self.plain {
            return true;
        }
        loop {
            let (next, failed) = {
                let p = self.progress.borrow();
                (p.next, p.failed)
            };
            // After a failure the rest is plain, drawn line by line when read.
            if failed || next >= k {
                return true;
            }
            if bounded && !frame_budget::allow() {
                return false;
            }
            let rows = frame_budget::charge(|| self.line_rows(next, true));
            for (cell, row) in self.settled[self.starts[next]..].iter().zip(rows) {
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
            if let Some(row) = cell.get() {
                return Some(row);
            }
            let k = self.line_of(i);
            // Line `k` too: it is highlighted within the budget like those above it.
            if self.catch_up(k + 1, true) {
                return Some(cell.get_or_init(|| self.realize(i)));
            }
            return self.draft_row(k, i);
        }
        let j = i - self.settled.len();
        if let Some(last) = self.last.get() {
            return last.get(j);
        }
        match self.last_line_rows(true) {
            Some(rows) => self.last.get_or_init(|| rows).get(j),
            None => {
                let k = self.lines.len() - 1;
                self.last_draft.get_or_init(|| self.plain_line_rows(k)).get(j)
            }
        }
    }

    /// The line that settled row `i` belongs to.
    fn line_of(&self, i: usize) -> usize {
        self.starts.partition_point(|&s| s <= i).saturating_sub(1)
    }

    /// Settled row `i` of line `k` drawn plain, for a frame whose budget did not reach it.
    fn draft_row(&self, k: usize, i: usize) -> Option<&Line<'static>> {
        let cell = self.draft.get(i)?;
        if cell.get().is_none() {
            for (r, row) in self.plain_line_rows(k).into_iter().enumerate() {
                if let Some(c) = self.draft.get(self.starts[k] + r) {
                    let _ = c.set(row);
                }
            }
        }
        cell.get()
    }

    /// The rows of line `k` without colours: the same breaks as highlighted (a line whose
    /// breaks could differ is highlighted when it arrives, never drafted).
    fn plain_line_rows(&self, k: usize) -> Vec<Line<'static>> {
        plain_rows(self.base, usize::from(self.width), &self.lines[k]).into_iter().flat_map(|s| self.fit(s)).collect()
    }

    /// Highlights (or draws plain) the line holding settled row `i`, keeping its other rows
    /// and those of the lines before it; returns row `i`.
    fn realize(&self, i: usize) -> Line<'static> {
        let k = self.line_of(i);
        // Every line before `k` first, in order: each carries syntect's state to the next.
        self.catch_up(k, false);
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
    /// nothing highlighted at all, as the whole-block renderer draws it. `None` when `bounded`
    /// and the budget ran out before the lines above it were highlighted.
    fn last_line_rows(&self, bounded: bool) -> Option<Vec<Line<'static>>> {
        let Some(k) = self.lines.len().checked_sub(1) else {
            return Some(self.empty_block());
        };
        if !self.plain && self.lines[k].is_empty() {
            return Some(if self.settled.is_empty() { self.empty_block() } else { Vec::new() });
        }
        if !self.catch_up(k, bounded) || (bounded && !frame_budget::allow()) {
            return None;
        }
        Some(frame_budget::charge(|| self.line_rows(k, false)))
    }

    fn empty_block(&self) -> Vec<Line<'static>> {
        plain_rows(self.base, usize::from(self.width), "").into_iter().flat_map(|s| self.fit(s)).collect()
    }

    /// How many rows the last line takes, and its rows now when that depends on them.
    fn layout_last(&mut self) {
        self.last = OnceCell::new();
        self.last_draft = OnceCell::new();
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
            let rows = self.last_line_rows(false).unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::frame_budget::FrameBudget;

    /// A long Rust block whose colours depend on the lines before (a comment and a string
    /// that span lines), with lines that wrap at the width used.
    fn block(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| match i % 7 {
                0 => format!("fn f{i}(x: u32) -> u32 {{ x + {i} }}"),
                1 => "/* a comment that goes on".to_owned(),
                2 => "   over the next line */ let s = \"and a string".to_owned(),
                3 => "   that spans lines\"; // with a trailing comment long enough to wrap the row".to_owned(),
                4 => String::new(),
                5 => format!("    let v{i} = vec![1, 2, 3];"),
                _ => "}".to_owned(),
            })
            .collect()
    }

    fn code(lines: &[String], theme: &Theme) -> LazyCode {
        let mut c = LazyCode::new("rust", theme, 40);
        for l in lines {
            c.push(l);
        }
        c
    }

    fn rows(c: &LazyCode, range: std::ops::Range<usize>) -> Vec<Line<'static>> {
        range.map(|i| c.row(i).cloned().unwrap()).collect()
    }

    #[test]
    fn a_long_block_is_highlighted_in_bounded_steps_and_ends_as_the_whole_block() {
        let theme = Theme::load("dark", None, false).unwrap();
        let lines = block(300);
        let whole = code(&lines, &theme);
        let want = rows(&whole, 0..whole.len());
        let streamed = code(&lines, &theme);
        assert_eq!(streamed.len(), want.len());
        // The screen shows the block's last 30 rows, every frame.
        let screen = want.len() - 30..want.len();
        let mut frames = 0;
        loop {
            frames += 1;
            let before = streamed.progress.borrow().next;
            let budget = FrameBudget::lines(40);
            let got = rows(&streamed, screen.clone());
            let done = !budget.starved();
            drop(budget);
            let after = streamed.progress.borrow().next;
            assert!(after - before <= 40, "frame {frames} highlighted {} lines", after - before);
            // Rows not reached yet are the same text, drawn plain.
            let text = |l: &[Line<'static>]| l.iter().map(ToString::to_string).collect::<Vec<_>>();
            assert_eq!(text(&got), text(&want[screen.clone()]));
            if done {
                assert_eq!(got, want[screen.clone()], "the frame that was not short is highlighted");
                break;
            }
            assert_ne!(got, want[screen.clone()], "a short frame draws some rows plain");
            assert!(frames < 100, "highlighting makes progress");
        }
        assert!(frames >= 300 / 40, "the block took {frames} frames");
        // Every row, read afterwards without a budget, is the whole block's.
        assert_eq!(rows(&streamed, 0..streamed.len()), want);
    }

    #[test]
    fn a_short_frame_then_more_lines_still_highlights_each_line_once_in_order() {
        let theme = Theme::load("dark", None, false).unwrap();
        let lines = block(120);
        let mut streamed = code(&lines[..60], &theme);
        {
            let _budget = FrameBudget::lines(10);
            let _ = rows(&streamed, streamed.len() - 5..streamed.len());
        }
        for l in &lines[60..] {
            streamed.push(l);
        }
        let whole = code(&lines, &theme);
        assert_eq!(rows(&streamed, 0..streamed.len()), rows(&whole, 0..whole.len()));
    }
}
