//! The queued messages under the transcript: one row each (the newest few), what they will
//! send, and the keys that edit, remove or send them now.

use super::theme::Role as R;
use crate::app::State;
use crate::app::keymap::Action;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// Most queued messages shown as rows; the rest are counted on the last one.
const MAX_ROWS: usize = 3;

/// Rows the queue takes (0 when nothing is queued), never more than leaves two for the transcript.
#[must_use]
pub fn height(state: &State, available: u16) -> u16 {
    let n = state.queue.items.len().min(MAX_ROWS);
    if n == 0 {
        return 0;
    }
    let rows = u16::try_from(n + 1).unwrap_or(0);
    rows.min(available.saturating_sub(2))
}

/// Takes the queue's rows off the bottom of the transcript's area: (transcript, queue).
#[must_use]
pub fn split(area: Rect, state: &State) -> (Rect, Rect) {
    let h = height(state, area.height);
    let transcript = Rect { height: area.height - h, ..area };
    let queue = Rect { y: area.y + area.height - h, height: h, ..area };
    (transcript, queue)
}

/// The rows: a header with the keys, then each queued message on one line.
#[must_use]
pub fn lines(state: &State, width: u16) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let items = &state.queue.items;
    if items.is_empty() {
        return Vec::new();
    }
    let k = |a| state.keymap.hint(a);
    let when = if state.queue.held {
        "held after a stop · Enter sends".to_owned()
    } else {
        format!("after this turn · {} now", k(Action::SendNow))
    };
    let header =
        format!(" queued ({}) · {when} · {} edit · {} remove", items.len(), k(Action::HistoryPrev), k(Action::Unqueue));
    let mut out = vec![Line::from(Span::styled(header, theme.style(R::Dim)))];
    let skip = items.len().saturating_sub(MAX_ROWS);
    let room = usize::from(width).saturating_sub(8).max(8);
    for (i, q) in items.iter().enumerate().skip(skip) {
        let flat: String = q.text.split_whitespace().collect::<Vec<_>>().join(" ");
        let flat = super::sanitize::sanitize(&flat).into_owned();
        let mut shown: String = flat.chars().take(room).collect();
        if shown.len() < flat.len() {
            shown.push('…');
        }
        let chips = if q.attachments.is_empty() { String::new() } else { format!(" +{} file", q.attachments.len()) };
        out.push(Line::from(vec![
            Span::styled(format!(" {:>2}. ", i + 1), theme.style(R::Accent)),
            Span::styled(shown, theme.style(R::User)),
            Span::styled(chips, theme.style(R::Dim)),
        ]));
    }
    out
}

pub fn draw(f: &mut Frame, area: Rect, state: &State) {
    if area.height == 0 {
        return;
    }
    for (i, line) in lines(state, area.width).iter().enumerate().take(usize::from(area.height)) {
        let y = area.y + u16::try_from(i).unwrap_or(0);
        f.buffer_mut().set_line(area.x, y, line, area.width);
    }
}
