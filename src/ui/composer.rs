//! The composer pane: the text area in a frame whose title says what Enter will do.

use super::theme::Role as R;
use crate::app::State;
use crate::app::keymap::Action;
use crate::app::state::Focus;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Padding};

/// Most text rows the composer grows to.
const MAX_ROWS: u16 = 10;

/// Rows the composer wants at `width` (frame included), at most a third of `screen_h`.
#[must_use]
pub fn height(state: &State, width: u16, screen_h: u16) -> u16 {
    let inner = usize::from(width.saturating_sub(4).max(1));
    let rows: usize = state.composer.area.lines().iter().map(|l| super::wrap::width(l).max(1).div_ceil(inner)).sum();
    let rows = u16::try_from(rows).unwrap_or(MAX_ROWS).clamp(1, MAX_ROWS);
    rows.min((screen_h / 3).saturating_sub(2).max(1)) + 2 + u16::from(!state.attachments.is_empty())
}

/// The attachment chips: one per file, then the key that removes the newest.
#[must_use]
pub fn chips(state: &State) -> Line<'static> {
    let theme = &state.theme;
    let mut spans = Vec::new();
    for a in &state.attachments {
        let mut text = format!(" ▣ {} ", super::sanitize::sanitize(&a.name));
        if let (Some(w), Some(h)) = (a.width, a.height) {
            text.push_str(&format!("{w}×{h} "));
        }
        if a.size > 0 {
            text.push_str(&format!("{} ", super::tool_card::size(usize::try_from(a.size).unwrap_or(usize::MAX))));
        }
        spans.push(Span::styled(text, theme.style(R::Accent).add_modifier(Modifier::REVERSED)));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::styled(format!("{} removes the last", state.keymap.hint(Action::Detach)), theme.style(R::Dim)));
    Line::from(spans)
}

pub fn draw(f: &mut Frame, area: Rect, state: &State) {
    let theme = &state.theme;
    let focused = state.focus == Focus::Composer && state.overlays.is_empty();
    // "Keep typing" only where typing really lands here.
    let typing = if state.typing_reaches_composer() { " · you can keep typing" } else { "" };
    let cancel = state.keymap.hint(Action::Cancel);
    // With a draft typed during a turn, say what Enter does with it (not while a tool call
    // asks: Enter belongs to its choices then, and a sentence's Enter decides nothing).
    let queues = state.turn_running() && state.tools.approval.is_none();
    let typing = if queues && !state.composer.is_empty() && !typing.is_empty() {
        format!(" · Enter queues · {} sends now", state.keymap.hint(Action::SendNow))
    } else {
        typing.to_owned()
    };
    let title = if state.editing.is_some() {
        " editing an earlier message · Enter resends (old branch kept) · Esc cancels ".to_owned()
    } else if state.tools.approval.is_some() {
        format!(" a tool call waits above · {cancel} cancels the turn{typing} ")
    } else if state.tools.busy() {
        format!(" tools at work · {cancel} cancels the turn{typing} ")
    } else if state.live.is_some() {
        format!(" reply streaming · {cancel} cancels{typing} ")
    } else if state.focus == Focus::Transcript && super::tool_card::has_cards(state) {
        " message selected · Enter cards · y copy · r regenerate · Esc back ".to_owned()
    } else if state.focus == Focus::Transcript {
        " message selected · y copy · b code · e edit · r regenerate · Esc back ".to_owned()
    } else if let Some((n, bytes)) = state.composer.pasted() {
        // What a send would carry, before it goes: size and a rough token count.
        let what = if n == 1 { "1 paste".to_owned() } else { format!("{n} pastes") };
        format!(
            " message · {what} · {} · ~{} tokens · {} opens · Enter sends ",
            super::tool_card::size(bytes),
            super::fmt::thousands(crate::engine::compact::text_bytes_tokens(u64::try_from(bytes).unwrap_or(u64::MAX))),
            state.keymap.hint(Action::OpenPaste)
        )
    } else {
        " message ".to_owned()
    };
    let border = theme.style(if focused { R::BorderFocused } else { R::Border });
    let block = Block::bordered()
        .border_style(border)
        .padding(Padding::horizontal(1))
        .title(Span::styled(title, theme.style(R::Title)));
    let inner = block.inner(area);
    f.render_widget(block, area);
    draw_inside(f, inner, state, focused);
}

/// Inside the composer's frame (the chat's and the compare screen's): the attachment chips,
/// then the draft.
pub fn draw_inside(f: &mut Frame, mut inner: Rect, state: &State, focused: bool) {
    if !state.attachments.is_empty() && inner.height > 1 {
        f.buffer_mut().set_line(inner.x, inner.y, &chips(state), inner.width);
        inner.y += 1;
        inner.height -= 1;
    }
    if focused {
        f.render_widget(&state.composer.area, inner);
    } else {
        // Without focus the cursor should not blink at the user: draw a copy without it.
        let mut area = state.composer.area.clone();
        area.set_cursor_style(area.style());
        f.render_widget(&area, inner);
    }
}
