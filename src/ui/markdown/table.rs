//! GFM table layout: columns sized to content, shrunk to fit, drawn with box-drawing
//! borders. Cells wrap within their column; a cell taller than [`MAX_CELL_LINES`] is cut
//! with `…` so one runaway cell cannot push the whole conversation off screen.

use super::wrap::{Run, Spans, ellipsize, extent, spans_width, wrap};
use crate::ui::theme::{Role, Theme};
use pulldown_cmark::Alignment;
use ratatui::style::Style;
use ratatui::text::Span;

/// Most lines one cell may take before it is truncated.
pub(super) const MAX_CELL_LINES: usize = 6;

/// A table collected from parser events.
#[derive(Debug, Default, Clone)]
pub struct Table {
    pub aligns: Vec<Alignment>,
    pub head: Vec<Vec<Run>>,
    pub rows: Vec<Vec<Vec<Run>>>,
}

/// Lays the table out in `width` columns.
pub(super) fn render(table: &Table, width: usize, theme: &Theme) -> Vec<Spans> {
    let head = head_cells(&table.head, theme);
    let mut columns = Columns::new(&table.aligns, width, theme);
    columns.add(&head);
    for row in &table.rows {
        columns.add(row);
    }
    let mut out = columns.draw_upto(&head, &table.rows);
    out.extend(columns.bottom());
    out
}

/// The head's cells as drawn: strong.
#[must_use]
pub fn head_cells(cells: &[Vec<Run>], theme: &Theme) -> Vec<Vec<Run>> {
    let strong = theme.style(Role::Strong);
    cells.iter().map(|cell| cell.iter().map(|(t, s)| (t.clone(), s.patch(strong))).collect()).collect()
}

/// How the columns are drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    /// No column at all: nothing is drawn.
    Empty,
    /// Narrower than the borders need: each row wrapped on its own ([`fallback`]).
    Narrow,
    /// Bordered columns of these widths.
    Boxed(Vec<usize>),
}

/// A table's columns for a width: each column's natural width (its widest cell so far) and
/// the layout they fit into. The whole table's render adds every row before drawing; a table
/// streamed row by row adds each as it comes and draws its rows again only when
/// [`Columns::add`] says the layout changed.
#[derive(Debug, Clone)]
pub struct Columns {
    aligns: Vec<Alignment>,
    width: usize,
    natural: Vec<usize>,
    layout: Layout,
    border: Style,
}

impl Columns {
    #[must_use]
    pub fn new(aligns: &[Alignment], width: usize, theme: &Theme) -> Self {
        let natural = vec![1; aligns.len()];
        let layout = layout(&natural, width);
        Self { aligns: aligns.to_vec(), width, natural, layout, border: theme.style(Role::TableBorder) }
    }

    /// Takes a row's cells into the natural widths. Returns whether the layout changed: rows
    /// drawn before are then drawn differently.
    pub fn add(&mut self, row: &[Vec<Run>]) -> bool {
        let widths: Vec<usize> = row.iter().map(|cell| measure(cell).width).collect();
        self.add_widths(&widths)
    }

    /// [`Self::add`] for a row whose cells' natural widths were measured already.
    pub fn add_widths(&mut self, row: &[usize]) -> bool {
        let mut grew = row.len() > self.natural.len();
        if grew {
            self.natural.resize(row.len(), 1);
        }
        for (n, &w) in self.natural.iter_mut().zip(row) {
            if w > *n {
                *n = w;
                grew = true;
            }
        }
        if !grew {
            return false;
        }
        let layout = layout(&self.natural, self.width);
        let changed = layout != self.layout;
        self.layout = layout;
        changed
    }

    /// How many lines [`Self::draw`] draws for a row whose cells measure `measures`, without
    /// drawing it, when the columns are boxed (`None` when not).
    #[must_use]
    pub fn row_height(&self, row: &[Vec<Run>], measures: &[Measure]) -> Option<usize> {
        let Layout::Boxed(widths) = &self.layout else { return None };
        let cell_height = |c: usize, w: usize| match (row.get(c), measures.get(c)) {
            (Some(_), Some(m)) if m.one_line && m.width <= w => 1,
            (Some(cell), _) => extent(cell, w).0.min(MAX_CELL_LINES),
            (None, _) => 1,
        };
        Some(widths.iter().enumerate().map(|(c, &w)| cell_height(c, w)).max().unwrap_or(1))
    }

    /// The table down to its last row (without [`Self::bottom`]).
    #[must_use]
    pub fn draw_upto(&self, head: &[Vec<Run>], rows: &[Vec<Vec<Run>>]) -> Vec<Spans> {
        let mut out: Vec<Spans> = self.top().into_iter().collect();
        self.draw(head, &mut out);
        if !rows.is_empty() {
            out.extend(self.mid());
        }
        for row in rows {
            self.draw(row, &mut out);
        }
        out
    }

    /// One row's lines (the head's cells as [`head_cells`] gives them).
    pub fn draw(&self, row: &[Vec<Run>], out: &mut Vec<Spans>) {
        match &self.layout {
            Layout::Empty => {}
            Layout::Narrow => fallback(row, self.width, self.border, out),
            Layout::Boxed(widths) => draw_row(row, widths, &self.aligns, self.border, out),
        }
    }

    #[must_use]
    pub fn top(&self) -> Option<Spans> {
        self.rule("┌", "┬", "┐")
    }

    /// The rule between the head and the first row.
    #[must_use]
    pub fn mid(&self) -> Option<Spans> {
        self.rule("├", "┼", "┤")
    }

    #[must_use]
    pub fn bottom(&self) -> Option<Spans> {
        self.rule("└", "┴", "┘")
    }

    fn rule(&self, l: &str, m: &str, r: &str) -> Option<Spans> {
        let Layout::Boxed(widths) = &self.layout else { return None };
        let mut s = String::from(l);
        for (i, w) in widths.iter().enumerate() {
            s.push_str(&"─".repeat(w + 2));
            s.push_str(if i + 1 == widths.len() { r } else { m });
        }
        Some(vec![Span::styled(s, self.border)])
    }
}

/// A cell's natural width (its widest line, unwrapped) and whether it is one line: such a
/// cell is drawn on one line in any column at least that wide.
#[derive(Debug, Clone, Copy)]
pub struct Measure {
    pub width: usize,
    pub one_line: bool,
}

#[must_use]
pub fn measure(cell: &[Run]) -> Measure {
    let (lines, widest) = extent(cell, usize::MAX / 2);
    Measure { width: widest, one_line: lines == 1 }
}

/// The layout of columns of these natural widths in `width` columns.
fn layout(natural: &[usize], width: usize) -> Layout {
    let ncols = natural.len();
    if ncols == 0 {
        return Layout::Empty;
    }
    let overhead = 3 * ncols + 1;
    if width < overhead + ncols {
        return Layout::Narrow;
    }
    Layout::Boxed(fit(natural, width - overhead))
}

/// Column widths summing to at most `budget`: columns that fit keep their natural
/// width, the widest ones are capped at a common limit (water-filling).
fn fit(natural: &[usize], budget: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= budget {
        return natural.to_vec();
    }
    let capped = |cap: usize| natural.iter().map(|&n| n.min(cap)).sum::<usize>();
    let (mut lo, mut hi) = (1, natural.iter().copied().max().unwrap_or(1));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if capped(mid) <= budget { lo = mid } else { hi = mid - 1 }
    }
    let mut widths: Vec<usize> = natural.iter().map(|&n| n.min(lo)).collect();
    let mut spare = budget.saturating_sub(capped(lo));
    for (w, &n) in widths.iter_mut().zip(natural) {
        if spare > 0 && n > *w {
            *w += 1;
            spare -= 1;
        }
    }
    widths
}

fn draw_row(row: &[Vec<Run>], widths: &[usize], aligns: &[Alignment], border: Style, out: &mut Vec<Spans>) {
    let cells: Vec<Vec<Spans>> = widths
        .iter()
        .enumerate()
        .map(|(c, &w)| {
            let mut lines = row.get(c).map_or_else(|| vec![Vec::new()], |cell| wrap(cell, w));
            if lines.len() > MAX_CELL_LINES {
                lines.truncate(MAX_CELL_LINES);
                if let Some(last) = lines.last_mut() {
                    *last = ellipsize(last, w, true);
                }
            }
            lines
        })
        .collect();
    let height = cells.iter().map(Vec::len).max().unwrap_or(1);
    for i in 0..height {
        let mut line: Spans = vec![Span::styled("│", border)];
        for (c, &w) in widths.iter().enumerate() {
            let content = cells[c].get(i).cloned().unwrap_or_default();
            let pad = w.saturating_sub(spans_width(&content));
            let (left, right) = match aligns.get(c) {
                Some(Alignment::Right) => (pad, 0),
                Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                _ => (0, pad),
            };
            line.push(Span::raw(" ".repeat(left + 1)));
            line.extend(content);
            line.push(Span::raw(" ".repeat(right + 1)));
            line.push(Span::styled("│", border));
        }
        out.push(line);
    }
}

/// A row too narrow for borders: its cells wrapped as one text, separated by `│`.
fn fallback(row: &[Vec<Run>], width: usize, border: Style, out: &mut Vec<Spans>) {
    let mut runs: Vec<Run> = Vec::new();
    for (i, cell) in row.iter().enumerate() {
        if i > 0 {
            runs.push((" │ ".to_owned(), border));
        }
        runs.extend(cell.iter().cloned());
    }
    out.extend(wrap(&runs, width));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(s: &str) -> Vec<Run> {
        vec![(s.to_owned(), Style::new())]
    }

    fn text(lines: &[Spans]) -> Vec<String> {
        lines.iter().map(|l| l.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    fn sample() -> Table {
        Table {
            aligns: vec![Alignment::Left, Alignment::Right],
            head: vec![cell("name"), cell("n")],
            rows: vec![vec![cell("alpha beta gamma"), cell("1")], vec![cell("x")]],
        }
    }

    #[test]
    fn natural_widths_when_it_fits() {
        let out = text(&render(&sample(), 80, &Theme::default()));
        assert_eq!(
            out,
            [
                "┌──────────────────┬───┐",
                "│ name             │ n │",
                "├──────────────────┼───┤",
                "│ alpha beta gamma │ 1 │",
                "│ x                │   │",
                "└──────────────────┴───┘",
            ]
        );
    }

    #[test]
    fn shrinks_and_wraps_cells() {
        let out = text(&render(&sample(), 16, &Theme::default()));
        assert!(out.iter().all(|l| unicode_width::UnicodeWidthStr::width(l.as_str()) <= 16), "{out:#?}");
        assert!(out.contains(&"│ alpha    │ 1 │".to_owned()), "{out:#?}");
    }

    #[test]
    fn fit_caps_widest_columns() {
        assert_eq!(fit(&[3, 20, 30], 30), vec![3, 14, 13]);
        assert_eq!(fit(&[3, 4], 30), vec![3, 4]);
        assert_eq!(fit(&[10, 10], 2), vec![1, 1]);
    }

    #[test]
    fn tall_cells_are_truncated() {
        let t =
            Table { aligns: vec![Alignment::None], head: vec![cell("h")], rows: vec![vec![cell(&"w ".repeat(50))]] };
        let out = text(&render(&t, 5, &Theme::default()));
        // 2 borders + head + separator + MAX_CELL_LINES body lines.
        assert_eq!(out.len(), 4 + MAX_CELL_LINES);
        assert!(out[out.len() - 2].contains('…'), "{out:#?}");
    }

    #[test]
    fn narrow_fallback_has_no_borders() {
        let out = text(&render(&sample(), 6, &Theme::default()));
        assert!(out.iter().all(|l| !l.contains('┌')));
        assert!(out.iter().all(|l| unicode_width::UnicodeWidthStr::width(l.as_str()) <= 6), "{out:#?}");
    }
}
