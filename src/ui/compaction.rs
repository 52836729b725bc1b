//! The compaction card above a summary (how many turns it replaced, tokens before and after,
//! the key that opens the originals) and the context meter of the status bar.

use super::fmt;
use super::theme::Role as R;
use crate::app::State;
use crate::app::keymap::Action;
use crate::engine::compact::{self, Compaction};
use crate::engine::message::{Message, MessageStatus};
use crate::engine::usage::UsageView;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

/// The card's lines, drawn before the summary's text.
#[must_use]
pub fn card(m: &Message, c: &Compaction, state: &State, cols: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    let turns = format!("{} turn{}", c.turns, if c.turns == 1 { "" } else { "s" });
    let before = fmt::thousands(c.tokens_before);
    let how = if c.auto { "auto-compact" } else { "compact" };
    let (title, role) = if m.is_live() {
        (format!("◆ {how}: summarising {turns} ({before} tokens)…"), R::Accent)
    } else if compact::effective(m) {
        let after = m
            .usage
            .as_ref()
            .and_then(|u| UsageView::from_raw(u).completion)
            .map_or_else(|| format!("~{}", fmt::thousands(compact::estimate(m.text()))), fmt::thousands);
        let cut = if compact::cut(m) { " · cut at its token budget, kept as it is" } else { "" };
        (format!("◆ {how}: {turns} summarised · {before} → {after} tokens{cut}"), R::Accent)
    } else if m.status == MessageStatus::Complete {
        (format!("◆ {how}: the summary of {turns} came back empty · nothing was replaced"), R::Warning)
    } else {
        (format!("◆ {how} of {turns} did not finish · nothing was replaced"), R::Warning)
    };
    let mut out = super::wrap::plain(&title, cols, theme.style(role).add_modifier(Modifier::BOLD));
    if compact::effective(m) {
        let key = state.keymap.hint(Action::ToggleOutput);
        let hint = if state.tools.open.contains(&m.id) {
            format!("▴ the originals are shown above · select this card and press {key} to fold them")
        } else {
            let select = state.keymap.hint(Action::Select);
            format!("▸ the originals are kept, folded above · select this card ({select}) and press {key} to open them")
        };
        out.extend(super::wrap::plain(&hint, cols, dim));
        if let Some(i) = &c.instructions {
            out.extend(super::wrap::plain(
                &format!("  kept in particular: {}", super::sanitize::sanitize(i)),
                cols,
                dim,
            ));
        }
    }
    out.push(Line::default());
    out
}

/// "  ctx 42% 3.4k/8.0k" (`short`: "  ctx 42%"): the next request against the window, in the
/// warning colour from 80 %; nothing when the window is unknown.
#[must_use]
pub fn meter(state: &State, short_form: bool) -> Option<Span<'static>> {
    let (used, window) = state.context_meter()?;
    #[allow(clippy::cast_precision_loss)]
    let share = used as f64 / window as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let pct = (share * 100.0).round() as u64;
    let role = if share >= 0.8 { R::Warning } else { R::Dim };
    let text =
        if short_form { format!("  ctx {pct}%") } else { format!("  ctx {pct}% {}/{}", short(used), short(window)) };
    Some(Span::styled(text, state.theme.style(role)))
}

/// A token count in a few characters: 950, 3.4k, 128k, 1.0M.
#[must_use]
pub fn short(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let f = n as f64;
    match n {
        0..1_000 => n.to_string(),
        1_000..10_000 => format!("{:.1}k", f / 1e3),
        10_000..1_000_000 => format!("{:.0}k", f / 1e3),
        _ => format!("{:.1}M", f / 1e6),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_are_short() {
        let s = super::short;
        assert_eq!([s(950), s(3_400), s(128_000), s(1_048_576)], ["950", "3.4k", "128k", "1.0M"]);
    }
}
