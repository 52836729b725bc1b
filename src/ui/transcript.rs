//! The transcript pane: lays out only the cells that are visible, from the scroll anchor (or up
//! from the bottom when following), and reports where it settled and where each cell is.

use super::cache::RenderCache;
use super::cells;
use super::theme::Role as R;
use crate::app::State;
use crate::app::msg::{Anchor, CellRows, ViewReport};
use crate::app::state::Focus;
use crate::app::transcript::Cell;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

/// Body text starts this many columns into the pane (gutter, then indent).
const BODY_X: u16 = 3;

/// Draws the transcript into `area`; returns the view report.
pub fn draw(f: &mut Frame, area: Rect, state: &State, cache: &mut RenderCache) -> ViewReport {
    let theme = &state.theme;
    let focused = state.focus == Focus::Transcript && state.overlays.is_empty();
    let border = theme.style(if focused { R::BorderFocused } else { R::Border });
    let title = format!(
        " palaver ─ {} · {} · {} ",
        super::sanitize::sanitize(&state.target.provider),
        super::sanitize::sanitize(&state.target.model),
        state.target.api.name()
    );
    let block = Block::bordered().border_style(border).title(Span::styled(title, theme.style(R::Title)));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let mut report = ViewReport {
        height: inner.height,
        transcript: (inner.x, inner.y, inner.width, inner.height),
        at_bottom: true,
        ..ViewReport::default()
    };
    if inner.width <= BODY_X + 1 || inner.height == 0 {
        return report;
    }
    let cells = &state.transcript.cells;
    if cells.is_empty() {
        welcome(f, inner, state);
        return report;
    }
    cache.retain(state);
    let cols = body_cols(state, inner.width);
    let rows = usize::from(inner.height);
    let mut height = |i: usize| cache.cell(state, i, cols).map_or(1, super::cache::CachedCell::height);
    let (top, at_bottom) = if state.scroll.follow {
        (from_bottom(cells.len(), rows, &mut height), true)
    } else {
        resolve(state.scroll.anchor, cells.len(), rows, &mut height)
    };
    report.top = top;
    report.at_bottom = at_bottom;

    let mut y = inner.y;
    let bottom = inner.y + inner.height;
    let mut index = top.cell;
    let mut line = usize::try_from(top.line).unwrap_or(0);
    while y < bottom && index < cells.len() {
        let header = match &cells[index] {
            Cell::Message(m) => Some(cells::header(state, m, index)),
            Cell::Notice(_) => None,
        };
        let selected = state.selected == Some(cells[index].id());
        let Some(cell) = cache.cell(state, index, cols) else { break };
        let first = y;
        let (from, height) = (line, cell.height());
        let slots = (!cell.images.is_empty()).then(|| (cell.images.clone(), usize::from(cell.header)));
        let body_x = if cell.header { inner.x + BODY_X } else { inner.x + 1 };
        for r in line..cell.height() {
            if y >= bottom {
                break;
            }
            let body_row = r.checked_sub(usize::from(cell.header));
            let is_separator = body_row.is_some_and(|b| b >= cell.body_len());
            if selected && !is_separator {
                f.buffer_mut().set_string(inner.x, y, "▌", theme.style(R::Accent));
            }
            match (body_row, &header) {
                (None, Some(h)) => {
                    f.buffer_mut().set_line(inner.x + 1, y, h, inner.width - 1);
                }
                (Some(b), _) => {
                    if let Some(l) = cell.body_line(b) {
                        let x = if cell.header { inner.x + BODY_X } else { inner.x + 1 };
                        f.buffer_mut().set_line(x, y, l, inner.width - (x - inner.x));
                    }
                }
                (None, None) => {}
            }
            y += 1;
        }
        if let Some((slots, header)) = slots {
            // Cell row `r` is on screen row `first + r - from`, for rows drawn this frame.
            let rows = ImageRows { first, from, header, drawn: y - first, x: body_x };
            for slot in &slots {
                super::images_draw::draw(f, &mut cache.images, slot, &rows, theme);
            }
        }
        // Whole only when drawn from its first line to its last: a selected message whose top
        // is scrolled off must be scrolled to, not taken as on screen.
        let whole = from == 0 && usize::from(y - first) >= height;
        report.cells.push(CellRows { id: cells[index].id(), top: first, bottom: y, whole });
        index += 1;
        line = 0;
    }
    if !state.scroll.follow && !at_bottom {
        let (text, role) = if state.unseen {
            (format!(" ↓ new output below · {} ", state.keymap.hint(crate::app::keymap::Action::Bottom)), R::Accent)
        } else {
            (" ↓ more below ".to_owned(), R::Dim)
        };
        let w = u16::try_from(super::wrap::width(&text)).unwrap_or(0).min(inner.width);
        let style = theme.style(role).add_modifier(Modifier::REVERSED);
        f.buffer_mut().set_string(inner.x + inner.width - w, bottom - 1, text, style);
    }
    report
}

/// Where a cell's rows went on screen this frame (see `images_draw`).
pub struct ImageRows {
    /// Screen row of the first cell row drawn.
    pub first: u16,
    /// The first cell row drawn (rows above are scrolled off).
    pub from: usize,
    /// Header rows before the body.
    pub header: usize,
    /// Rows drawn.
    pub drawn: u16,
    /// Screen column of the body.
    pub x: u16,
}

/// Prose is wrapped to at most this many columns unless `prose_width` says otherwise.
pub const DEFAULT_PROSE_WIDTH: u16 = 100;

/// Columns of cell body in a transcript pane `inner_width` wide: all of it, but no wider than
/// `prose_width` (default 100; 0 for no limit): lines of 200 columns are hard to read.
#[must_use]
pub fn body_cols(state: &State, inner_width: u16) -> usize {
    let all = usize::from(inner_width.saturating_sub(BODY_X));
    match state.cfg.prose_width.unwrap_or(DEFAULT_PROSE_WIDTH) {
        0 => all,
        cap => all.min(usize::from(cap.max(20))),
    }
}

/// The top line when the last line sits at the bottom of `rows` rows.
fn from_bottom(n: usize, rows: usize, height: &mut impl FnMut(usize) -> usize) -> Anchor {
    let mut need = rows;
    let mut i = n;
    while i > 0 {
        i -= 1;
        let h = height(i);
        if h >= need {
            return Anchor { cell: i, line: i64::try_from(h - need).unwrap_or(0) };
        }
        need -= h;
    }
    Anchor::default()
}

/// Normalises a scroll anchor against the heights, walking only over the cells it moves past.
/// Returns the anchor to draw from and whether the bottom is in view (then it bottom-aligns).
fn resolve(anchor: Anchor, n: usize, rows: usize, height: &mut impl FnMut(usize) -> usize) -> (Anchor, bool) {
    let as_i64 = |h: usize| i64::try_from(h).unwrap_or(i64::MAX);
    let mut cell = anchor.cell.min(n - 1);
    let mut line = anchor.line;
    while line < 0 {
        if cell == 0 {
            line = 0;
            break;
        }
        cell -= 1;
        line += as_i64(height(cell));
    }
    loop {
        let h = as_i64(height(cell));
        if line < h {
            break;
        }
        if cell + 1 >= n {
            line = h - 1;
            break;
        }
        line -= h;
        cell += 1;
    }
    // Lines from the anchor to the end, counted until they overflow the view. The bottom is in
    // view only when every cell was counted and they fit: stopping the count as soon as it
    // *reached* `rows` (as this once did) took "exactly a screenful so far" for "the end", so
    // an anchor whose cells summed to exactly one screen snapped to the bottom, and PgUp,
    // Ctrl+Home and selecting an early message jumped back to the last turn.
    let mut shown = usize::try_from(as_i64(height(cell)) - line).unwrap_or(0);
    let mut j = cell + 1;
    while shown <= rows && j < n {
        shown += height(j);
        j += 1;
    }
    if shown <= rows {
        return (from_bottom(n, rows, height), true);
    }
    (Anchor { cell, line }, false)
}

fn welcome(f: &mut Frame, area: Rect, state: &State) {
    use crate::app::keymap::Action;
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    let k = |a| state.keymap.hint(a);
    let lines = vec![
        Line::from(Span::styled("palaver", theme.style(R::Title).add_modifier(Modifier::BOLD))),
        Line::from(Span::styled(
            format!(
                "{} · {} · {}",
                super::sanitize::sanitize(&state.target.provider),
                super::sanitize::sanitize(&state.target.model),
                state.target.api.name()
            ),
            dim,
        )),
        Line::default(),
        Line::from(Span::styled("Type a message and press Enter.", theme.style(R::Base))),
        Line::from(Span::styled(
            format!("{} help · {} commands · {} models", k(Action::Help), k(Action::Palette), k(Action::Models)),
            dim,
        )),
    ];
    let mut lines = lines;
    if let Some(why) = &state.demo_fallback {
        // Nobody asked for the demo: say why it answers and how to reach a real provider.
        let cols = usize::from(area.width.saturating_sub(2)).clamp(1, 90);
        let warn = theme.style(R::Warning);
        lines.push(Line::default());
        let text = format!("This is the built-in demo provider: scripted answers, not a model ({why}).");
        lines.extend(super::wrap::plain(&super::sanitize::sanitize(&text), cols, warn));
        let how = "For a real provider: set OPENAI_API_KEY (and OPENAI_BASE_URL for another server), \
                   or run `palaver config init` and name one in config.toml.";
        lines.extend(super::wrap::plain(how, cols, dim));
    }
    let lines: Vec<Line<'static>> = lines
        .into_iter()
        .map(|l| {
            Line::from(
                l.spans.into_iter().map(|s| Span::styled(s.content.trim_end().to_owned(), s.style)).collect::<Vec<_>>(),
            )
        })
        .collect();
    let h = u16::try_from(lines.len()).unwrap_or(0);
    let top = area.y + area.height.saturating_sub(h) / 2;
    let rect = Rect { x: area.x, y: top, width: area.width, height: h.min(area.height) };
    f.render_widget(Paragraph::new(lines).centered(), rect);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_normalise_and_snap_to_bottom() {
        let heights = [5usize, 5, 5, 5];
        let mut h = |i: usize| heights[i];
        assert_eq!(from_bottom(4, 7, &mut h), Anchor { cell: 2, line: 3 });
        assert_eq!(from_bottom(4, 100, &mut h), Anchor { cell: 0, line: 0 });
        // Scrolled above the first line: clamps to the top.
        assert_eq!(resolve(Anchor { cell: 1, line: -20 }, 4, 7, &mut h), (Anchor { cell: 0, line: 0 }, false));
        // An anchor past a cell moves on to the next one.
        assert_eq!(resolve(Anchor { cell: 0, line: 7 }, 4, 7, &mut h), (Anchor { cell: 1, line: 2 }, false));
        // Close enough to the end that the bottom shows: bottom-aligned.
        assert_eq!(resolve(Anchor { cell: 3, line: 0 }, 4, 7, &mut h), (Anchor { cell: 2, line: 3 }, true));
        // Cells that fill exactly one screen with more below are not the bottom.
        let heights = [3usize, 31, 3, 31];
        let mut h = |i: usize| heights[i];
        assert_eq!(resolve(Anchor { cell: 0, line: 0 }, 4, 34, &mut h), (Anchor { cell: 0, line: 0 }, false));
        assert_eq!(resolve(Anchor { cell: 1, line: -2 }, 4, 34, &mut h), (Anchor { cell: 0, line: 1 }, false));
    }
}
