//! A table rendered as its rows arrive. Each row is read from pulldown-cmark's parse of the
//! head, the delimiter row and that row (its cells exactly as the whole table's parse gives
//! them) and drawn on its own; the columns' natural widths are running maxima, and only when
//! their fit to the width changes are the rows drawn again, once. The layout rules are
//! `markdown::TableColumns`', the same the whole table's render uses.

use super::markdown::{self, TableColumns};
use super::stream_block::{BlockKind, GrowingBlock};
use super::theme::Theme;
use super::wrap;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

type Cell = Vec<(String, Style)>;

/// A table growing a row at a time.
#[derive(Debug)]
pub struct TableBlock {
    cols: usize,
    width: u16,
    theme: Theme,
    /// The head and delimiter lines, which every row is parsed after.
    head_text: String,
    head: Vec<Cell>,
    rows: Vec<Vec<Cell>>,
    columns: TableColumns,
    /// The rows drawn down to the last table row, and the bottom rule.
    lines: Vec<Line<'static>>,
    bottom: Vec<Line<'static>>,
    /// How many times the rows were drawn again for a change of column widths.
    relayouts: usize,
}

impl TableBlock {
    /// A table whose head is `header` and `delimiter`, or `None` when they do not make one.
    #[must_use]
    pub fn start(header: &str, delimiter: &str, cols: usize, theme: &Theme) -> Option<Self> {
        if [header, delimiter].iter().any(|l| l.trim().is_empty() || l.contains('\n')) {
            return None;
        }
        let head_text = format!("{header}\n{delimiter}");
        let table = markdown::table_of(&head_text, theme).filter(|t| t.rows.is_empty())?;
        let width = u16::try_from(cols).unwrap_or(u16::MAX);
        let head = markdown::head_cells(&table.head, theme);
        let mut columns = TableColumns::new(&table.aligns, usize::from(width), theme);
        columns.add(&head);
        let mut block = Self {
            cols,
            width,
            theme: theme.clone(),
            head_text,
            head,
            rows: Vec::new(),
            columns,
            lines: Vec::new(),
            bottom: Vec::new(),
            relayouts: 0,
        };
        block.draw_all();
        block.relayouts = 0;
        Some(block)
    }

    /// How many times the rows were drawn again because a column's width changed.
    #[must_use]
    pub fn relayouts(&self) -> usize {
        self.relayouts
    }

    /// Lines as the renderer emits them at the top level, fitted as the streamed answer is.
    fn fitted(&self, spans: Vec<Vec<Span<'static>>>, out: &mut Vec<Line<'static>>) {
        if self.width == 0 {
            return;
        }
        let lines = spans.into_iter().map(|s| markdown::top_line(s, self.width)).collect();
        out.extend(wrap::fit(lines, self.cols));
    }

    /// Draws every row again (the column widths changed).
    fn draw_all(&mut self) {
        self.relayouts += 1;
        let mut lines = Vec::new();
        self.fitted(self.columns.draw_upto(&self.head, &self.rows), &mut lines);
        self.lines = lines;
        self.draw_bottom();
    }

    fn draw_bottom(&mut self) {
        let mut bottom = Vec::new();
        self.fitted(self.columns.bottom().into_iter().collect(), &mut bottom);
        self.bottom = bottom;
    }
}

impl GrowingBlock for TableBlock {
    fn push(&mut self, line: &str) -> bool {
        if line.trim().is_empty() || line.contains('\n') {
            return false;
        }
        let text = format!("{}\n{line}", self.head_text);
        let Some(mut table) = markdown::table_of(&text, &self.theme) else { return false };
        let Some(row) = table.rows.pop().filter(|_| table.rows.is_empty()) else { return false };
        let changed = self.columns.add(&row);
        self.rows.push(row);
        if changed {
            self.draw_all();
            return true;
        }
        let mut spans = Vec::new();
        if self.rows.len() == 1 {
            spans.extend(self.columns.mid());
        }
        if let Some(row) = self.rows.last() {
            self.columns.draw(row, &mut spans);
        }
        let mut lines = std::mem::take(&mut self.lines);
        self.fitted(spans, &mut lines);
        self.lines = lines;
        true
    }

    fn len(&self) -> usize {
        self.lines.len() + self.bottom.len()
    }

    fn get(&self, i: usize) -> Option<&Line<'static>> {
        super::stream_block::row_of(&self.lines, &self.bottom, i)
    }

    fn kind(&self) -> BlockKind {
        BlockKind::Table
    }
}

#[cfg(test)]
#[path = "stream_table_tests.rs"]
mod tests;
