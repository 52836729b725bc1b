//! A table rendered as its rows arrive. Each row is read from pulldown-cmark's parse of the
//! head, the delimiter row and that row (its cells exactly as the whole table's parse gives
//! them), measured once, and drawn only when it is read: a 20,000-row table on screen shows a
//! screenful of rows, and a change of the columns' widths (the id column gaining a digit)
//! costs a pass over the rows' measures instead of drawing them all again. The layout rules are
//! `markdown::TableColumns`', the same the whole table's render uses.

use super::markdown::{self, CellMeasure, Paragraph, TableColumns};
use super::sanitize::sanitize;
use super::stream_block::{BlockKind, GrowingBlock};
use super::theme::Role;
use super::theme::Theme;
use super::wrap;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::borrow::Cow;
use std::cell::OnceCell;

type Cell = Vec<(String, Style)>;

/// A row's cells and their measures.
#[derive(Debug)]
struct Row {
    cells: Vec<Cell>,
    measures: Vec<CellMeasure>,
}

/// A table growing a row at a time.
#[derive(Debug)]
pub struct TableBlock {
    cols: usize,
    width: u16,
    theme: Theme,
    /// The head and delimiter lines, which every row is parsed after.
    head_text: String,
    head: Vec<Cell>,
    rows: Vec<Row>,
    columns: TableColumns,
    /// The top rule, the head and, once a row came, the rule under it.
    top: Vec<Line<'static>>,
    /// Where each row's lines start among the rows' lines.
    starts: Vec<usize>,
    body_len: usize,
    /// Each row's lines, drawn when first read.
    drawn: Vec<OnceCell<Vec<Line<'static>>>>,
    bottom: Vec<Line<'static>>,
    /// How many times the columns' widths changed.
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
            top: Vec::new(),
            starts: Vec::new(),
            body_len: 0,
            drawn: Vec::new(),
            bottom: Vec::new(),
            relayouts: 0,
        };
        block.relayout();
        block.relayouts = 0;
        Some(block)
    }

    /// How many times the columns' widths changed, so that every row's height was found again.
    #[must_use]
    pub fn relayouts(&self) -> usize {
        self.relayouts
    }

    /// Lines as the renderer emits them at the top level, fitted as the streamed answer is.
    fn fitted(&self, spans: Vec<Vec<Span<'static>>>) -> Vec<Line<'static>> {
        if self.width == 0 {
            return Vec::new();
        }
        let lines = spans.into_iter().map(|s| markdown::top_line(s, self.width)).collect();
        wrap::fit(lines, self.cols)
    }

    /// The columns' widths changed: the head and rules are drawn again, every row's height is
    /// found again, and rows drawn before are forgotten.
    fn relayout(&mut self) {
        self.relayouts += 1;
        self.draw_top();
        self.bottom = self.fitted(self.columns.bottom().into_iter().collect());
        let rows = std::mem::take(&mut self.rows);
        self.starts.clear();
        self.drawn.clear();
        self.body_len = 0;
        for row in rows {
            self.add_row(row);
        }
    }

    fn draw_top(&mut self) {
        let mut spans: Vec<_> = self.columns.top().into_iter().collect();
        self.columns.draw(&self.head, &mut spans);
        if !self.rows.is_empty() {
            spans.extend(self.columns.mid());
        }
        self.top = self.fitted(spans);
    }

    /// Places a row after the others under the current columns: its height is found from its
    /// cells' measures (only a cell wider than its column is wrapped, to count its lines), and
    /// it is drawn when read. Without boxed columns it is drawn now, to learn its height.
    fn add_row(&mut self, row: Row) {
        let height = if self.width == 0 { Some(0) } else { self.columns.row_height(&row.cells, &row.measures) };
        let (height, drawn) = match height {
            Some(h) => (h, OnceCell::new()),
            None => {
                let lines = self.draw_row(&row);
                (lines.len(), OnceCell::from(lines))
            }
        };
        self.starts.push(self.body_len);
        self.body_len += height;
        self.drawn.push(drawn);
        self.rows.push(row);
    }

    fn draw_row(&self, row: &Row) -> Vec<Line<'static>> {
        let mut spans = Vec::new();
        self.columns.draw(&row.cells, &mut spans);
        self.fitted(spans)
    }

    /// A row's cells as the parse of the head and that row gives them, or `None` when the row
    /// does not continue the table.
    fn parsed_row(&self, line: &str) -> Option<Vec<Cell>> {
        let mut table = markdown::table_of(&format!("{}\n{line}", self.head_text), &self.theme)?;
        table.rows.pop().filter(|_| table.rows.is_empty())
    }

    /// A row's cells read without the table's parse (most rows of a long table): a line that
    /// starts and ends with a pipe starts no other block, and when no backslash can hide a pipe
    /// in it, its cells are the text between its pipes, trimmed, padded or cut to the head's
    /// count as the table's parse does. A cell without inline markup is one run in the body's
    /// style; any other is parsed alone, as the table's parse reads a cell (inline markup never
    /// spans a pipe).
    fn plain_row(&self, line: &str) -> Option<Vec<Cell>> {
        let inner = line.trim_end_matches([' ', '\t']).strip_prefix('|')?.strip_suffix('|')?;
        // A line the sanitizer would change (a tab to expand) is left to the parse, which
        // sanitizes.
        if inner.contains('\\') || matches!(sanitize(inner), Cow::Owned(_)) {
            return None;
        }
        let style = self.theme.style(Role::Base);
        let mut cells = Vec::with_capacity(self.head.len());
        for text in inner.split('|').take(self.head.len()).map(|cell| cell.trim_matches([' ', '\t'])) {
            cells.push(match text {
                "" => Vec::new(),
                _ if Paragraph::inline_plain(text) => vec![(text.to_owned(), style)],
                // Text that alone parses as another block (`# x`, `- x`) is left to the table's
                // parse.
                _ => markdown::inline_runs(text, &self.theme)?,
            });
        }
        cells.resize(self.head.len(), Vec::new());
        Some(cells)
    }

    /// Line `j` of the rows' lines, drawing its row when it was not drawn yet.
    fn body_line(&self, j: usize) -> Option<&Line<'static>> {
        let r = self.starts.partition_point(|&s| s <= j).checked_sub(1)?;
        let (row, drawn) = (self.rows.get(r)?, self.drawn.get(r)?);
        drawn.get_or_init(|| self.draw_row(row)).get(j - self.starts[r])
    }
}

impl GrowingBlock for TableBlock {
    fn push(&mut self, line: &str) -> bool {
        if line.trim().is_empty() || line.contains('\n') {
            return false;
        }
        let Some(cells) = self.plain_row(line).or_else(|| self.parsed_row(line)) else { return false };
        let measures: Vec<_> = cells.iter().map(|c| markdown::measure_cell(c)).collect();
        let widths: Vec<usize> = measures.iter().map(|m| m.width).collect();
        let changed = self.columns.add_widths(&widths);
        let row = Row { cells, measures };
        let first = self.rows.is_empty();
        self.add_row(row);
        if changed {
            self.relayout();
        } else if first {
            // The rule under the head comes with the first row.
            self.draw_top();
        }
        true
    }

    fn len(&self) -> usize {
        self.top.len() + self.body_len + self.bottom.len()
    }

    fn get(&self, i: usize) -> Option<&Line<'static>> {
        let Some(j) = i.checked_sub(self.top.len()) else { return self.top.get(i) };
        match j.checked_sub(self.body_len) {
            None => self.body_line(j),
            Some(k) => self.bottom.get(k),
        }
    }

    fn kind(&self) -> BlockKind {
        BlockKind::Table
    }
}

#[cfg(test)]
#[path = "stream_table_tests.rs"]
mod tests;
