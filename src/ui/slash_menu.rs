//! The `/` menu and the argument hint, drawn in a box just above the composer from state only
//! (`State::slash_menu`, `State::argument_hint`; the entries are sanitised there).

use super::theme::Role as R;
use super::wrap::{ellipsize, width};
use crate::app::State;
use crate::app::slash_menu::Entry;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear};

/// Most rows the menu lists at once (it scrolls to keep the chosen one in view).
const MAX_ROWS: usize = 10;

/// Draws the menu, or else the argument hint, above `composer` (the composer's frame).
pub fn draw(f: &mut Frame, composer: Rect, state: &State) {
    if let Some((rows, chosen)) = state.slash_menu() {
        draw_menu(f, composer, state, &rows, chosen);
    } else if let Some((entry, missing)) = state.argument_hint() {
        draw_hint(f, composer, state, &entry, &missing);
    }
}

/// A bordered box of `lines` rows sitting on the composer's top edge; `None` when there is no
/// room above it.
fn place(composer: Rect, lines: usize) -> Option<Rect> {
    let h = u16::try_from(lines + 2).unwrap_or(u16::MAX).min(composer.y);
    (h >= 3).then(|| Rect { x: composer.x, y: composer.y - h, width: composer.width, height: h })
}

fn draw_menu(f: &mut Frame, composer: Rect, state: &State, rows: &[Entry], chosen: usize) {
    let theme = &state.theme;
    let Some(area) = place(composer, rows.len().min(MAX_ROWS)) else { return };
    let shown = usize::from(area.height - 2);
    let first = chosen.saturating_sub(shown - 1).min(rows.len().saturating_sub(shown));
    let count = if rows.len() > shown { format!(" {}/{} ", chosen + 1, rows.len()) } else { String::new() };
    let title = ellipsize(
        " commands · ↑↓ choose · Tab completes · Enter runs · Esc closes ",
        usize::from(area.width.saturating_sub(2)).saturating_sub(count.len()),
    );
    let block = Block::bordered()
        .border_style(theme.style(R::BorderFocused))
        .title(Span::styled(title, theme.style(R::Title)))
        .title_top(Line::from(Span::styled(count, theme.style(R::Dim))).right_aligned());
    let inner = block.inner(area);
    f.render_widget(Clear, area);
    f.render_widget(block, area);
    let cols = usize::from(inner.width);
    // The usage column as wide as the widest shown, at most half the box.
    let usage_w = rows.iter().map(|e| width(&e.usage())).max().unwrap_or(0).min(cols / 2).max(1);
    for (i, e) in rows.iter().enumerate().skip(first).take(shown) {
        let usage = ellipsize(&e.usage(), usage_w);
        let pad = " ".repeat(usage_w.saturating_sub(width(&usage)) + 2);
        let about = ellipsize(&e.about, cols.saturating_sub(usage_w + 3));
        let mut spans = vec![
            Span::styled(if i == chosen { "▸" } else { " " }, theme.style(R::Accent)),
            Span::styled(usage, theme.style(R::Accent)),
            Span::raw(pad),
            Span::styled(about, theme.style(R::Dim)),
        ];
        if i == chosen {
            for s in &mut spans {
                s.style = s.style.patch(theme.style(R::Selection));
            }
        }
        let y = inner.y + u16::try_from(i - first).unwrap_or(0);
        f.buffer_mut().set_line(inner.x, y, &Line::from(spans), inner.width);
    }
}

/// The command's usage and what it does; an MCP prompt's arguments one a line, the required
/// ones still missing marked.
fn draw_hint(f: &mut Frame, composer: Rect, state: &State, entry: &Entry, missing: &[String]) {
    let theme = &state.theme;
    let Some(area) = place(composer, 1 + entry.params.len()) else { return };
    let block = Block::bordered().border_style(theme.style(R::Border));
    let inner = block.inner(area);
    f.render_widget(Clear, area);
    f.render_widget(block, area);
    let cols = usize::from(inner.width);
    let usage = ellipsize(&entry.usage(), cols);
    let about = ellipsize(&format!("  {}", entry.about), cols.saturating_sub(width(&usage)));
    let mut lines =
        vec![Line::from(vec![Span::styled(usage, theme.style(R::Accent)), Span::styled(about, theme.style(R::Dim))])];
    for p in &entry.params {
        let (mark, role) = match (p.required, missing.contains(&p.name)) {
            (true, true) => ("(required, missing)", R::Warning),
            (true, false) => ("(required)", R::Dim),
            (false, _) => ("(optional)", R::Dim),
        };
        let head = format!("  {} ", p.name);
        let about = if p.about.is_empty() { String::new() } else { format!(" — {}", p.about) };
        let tail = ellipsize(&about, cols.saturating_sub(width(&head) + width(mark)));
        lines.push(Line::from(vec![
            Span::styled(head, theme.style(R::Base)),
            Span::styled(mark, theme.style(role)),
            Span::styled(tail, theme.style(R::Dim)),
        ]));
    }
    for (i, line) in lines.iter().enumerate().take(usize::from(inner.height)) {
        let y = inner.y + u16::try_from(i).unwrap_or(0);
        f.buffer_mut().set_line(inner.x, y, line, inner.width);
    }
}
