//! The side column: the usage panel above the safety panel, both about the selected reply (or
//! the last one).

use super::theme::Role as R;
use super::{safety, usage};
use crate::app::State;
use crate::engine::message::{Message, Role};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Padding, Paragraph};

/// The reply the panels describe: the selected one (a selected prompt means its reply), else the last.
#[must_use]
pub fn subject(state: &State) -> Option<&Message> {
    let cells = &state.transcript.cells;
    if let Some(i) = state.selected.and_then(|id| state.transcript.index_of(id)) {
        let found = cells[i..].iter().filter_map(|c| c.message()).find(|m| m.role() == Role::Assistant);
        if found.is_some() {
            return found;
        }
    }
    cells.iter().rev().filter_map(|c| c.message()).find(|m| m.role() == Role::Assistant)
}

/// Draws both panels into `area`.
pub fn draw(f: &mut Frame, area: Rect, state: &State) {
    let m = subject(state);
    let cols = usize::from(area.width.saturating_sub(4));
    let which = match (state.selected.is_some(), m) {
        (_, None) => String::new(),
        (true, Some(_)) => " · selected".to_owned(),
        (false, Some(_)) => " · last reply".to_owned(),
    };
    // Long notes and values wrap rather than vanish at the edge.
    let usage_lines = super::wrap::fit(usage::lines(state, m, cols), cols);
    let safety_lines = super::wrap::fit(safety::lines(state, m, cols), cols);
    // Both whole when they fit; otherwise usage gets what it needs up to two thirds.
    let rows = |n: usize| u16::try_from(n).unwrap_or(u16::MAX).saturating_add(2);
    let (usage_want, safety_want) = (rows(usage_lines.len()), rows(safety_lines.len()));
    let usage_h = if usage_want.saturating_add(safety_want) <= area.height {
        usage_want
    } else {
        usage_want.min(area.height.saturating_mul(2) / 3).max(3.min(area.height))
    };
    let [top, bottom] = Layout::vertical([Constraint::Length(usage_h), Constraint::Min(0)]).areas(area);
    panel(f, top, &format!(" Usage{which} "), usage_lines, state);
    if bottom.height >= 3 {
        panel(f, bottom, " Safety ", safety_lines, state);
    }
}

fn panel(f: &mut Frame, area: Rect, title: &str, lines: Vec<Line<'static>>, state: &State) {
    let theme = &state.theme;
    let block = Block::bordered()
        .border_style(theme.style(R::Border))
        .padding(Padding::horizontal(1))
        .title(Span::styled(title.to_owned(), theme.style(R::Title)));
    f.render_widget(Paragraph::new(lines).block(block).style(theme.style(R::Base)), area);
}
