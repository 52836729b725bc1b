//! GFM table layout: columns sized to content, shrunk to fit, drawn with box-drawing
//! borders. Cells wrap within their column; a cell taller than [`MAX_CELL_LINES`] is cut
//! with `…` so one runaway cell cannot push the whole conversation off screen.

use super::wrap::{Run, Spans, ellipsize, spans_width, wrap};
use crate::ui::theme::{Role, Theme};
use pulldown_cmark::Alignment;
use ratatui::style::Style;
use ratatui::text::Span;

/// Most lines one cell may take before it is truncated.
pub(super) const MAX_CELL_LINES: usize = 6;

/// A table collected from parser events.
#[derive(Default)]
pub(super) struct Table {
    pub aligns: Vec<Alignment>,
    pub head: Vec<Vec<Run>>,
    pub rows: Vec<Vec<Vec<Run>>>,
}

/// Lays the table out in `width` columns.
pub(super) fn render(table: &Table, width: usize, theme: &Theme) -> Vec<Spans> {
    let strong = theme.style(Role::Strong);
    let head: Vec<Vec<Run>> =
        table.head.iter().map(|cell| cell.iter().map(|(t, s)| (t.clone(), s.patch(strong))).collect()).collect();
    let rows: Vec<&Vec<Vec<Run>>> = std::iter::once(&head).chain(&table.rows).collect();
    let ncols = rows.iter().map(|r| r.len()).max().unwrap_or(0).max(table.aligns.len());
    if ncols == 0 {
        return Vec::new();
    }
    let overhead = 3 * ncols + 1;
    if width < overhead + ncols {
        return fallback(&rows, width, theme);
    }
    let natural: Vec<usize> = (0..ncols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| wrap(cell, usize::MAX / 2).iter().map(|l| spans_width(l)).max().unwrap_or(0))
                .max()
                .unwrap_or(0)
                .max(1)
        })
        .collect();
    let widths = fit(&natural, width - overhead);

    let border = theme.style(Role::TableBorder);
    let rule = |l: &str, m: &str, r: &str| -> Spans {
        let mut s = String::from(l);
        for (i, w) in widths.iter().enumerate() {
            s.push_str(&"─".repeat(w + 2));
            s.push_str(if i + 1 == widths.len() { r } else { m });
        }
        vec![Span::styled(s, border)]
    };
    let mut out = vec![rule("┌", "┬", "┐")];
    for (i, row) in rows.iter().enumerate() {
        draw_row(row, &widths, &table.aligns, border, &mut out);
        if i == 0 && rows.len() > 1 {
            out.push(rule("├", "┼", "┤"));
        }
    }
    out.push(rule("└", "┴", "┘"));
    out
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

/// Too narrow for borders: one wrapped line group per row, cells separated by `│`.
fn fallback(rows: &[&Vec<Vec<Run>>], width: usize, theme: &Theme) -> Vec<Spans> {
    let border = theme.style(Role::TableBorder);
    let mut out = Vec::new();
    for row in rows {
        let mut runs: Vec<Run> = Vec::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                runs.push((" │ ".to_owned(), border));
            }
            runs.extend(cell.iter().cloned());
        }
        out.extend(wrap(&runs, width));
    }
    out
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
