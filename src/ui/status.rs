//! The status bar: the reply's state (waiting with a spinner, streaming, done, cancelled,
//! error), time to first token, tokens per second, elapsed time, and key hints or a flash.

use super::cells::spinner;
use super::fmt;
use super::theme::Role as R;
use crate::app::State;
use crate::app::keymap::Action;
use crate::engine::message::{Message, MessageStatus, Role};
use crate::engine::tool_loop::ToolMode;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// Draws the one-line status bar.
pub fn draw(f: &mut Frame, area: Rect, state: &State) {
    let theme = &state.theme;
    let bar = theme.style(R::StatusBar);
    let mut left: Vec<Span<'static>> = Vec::new();
    let last = state.transcript.cells.iter().rev().filter_map(|c| c.message()).find(|m| m.role() == Role::Assistant);
    match last {
        Some(_) if state.tools.busy() => left.extend(super::tool_card::status_spans(state)),
        Some(m) => left.extend(reply_state(state, m)),
        None => left.push(Span::styled(" ready", bar)),
    }
    if let Some(vim) = &state.vim {
        left.insert(0, vim_span(state, vim));
    }
    // What the next request offers: a model must never get tools unnoticed (only a flash that
    // needs the whole line hides it, for its few seconds).
    left.push(tools_span(state));
    // The spans after the timings: the tools, then the schema and the cost when there.
    let mut segments = 1;
    for span in [schema_span(state), cost_span(state)].into_iter().flatten() {
        left.push(span);
        segments += 1;
    }
    let width = usize::from(area.width);
    // How full the next request is: always there when the window is known, so on a narrow
    // line it goes short and the reply's timings give way to it.
    // "F1 help " and a space before it.
    let help_w = super::wrap::width(&state.keymap.hint(Action::Help)) + 7;
    if let Some(full) = super::compaction::meter(state, false) {
        let spans_w = |l: &[Span<'_>]| -> usize { l.iter().map(|s| super::wrap::width(&s.content)).sum() };
        let fits = |l: &[Span<'_>], m: &Span<'_>| spans_w(l) + super::wrap::width(&m.content) + help_w <= width;
        let meter = if fits(&left, &full) { full } else { super::compaction::meter(state, true).unwrap_or(full) };
        // Timings are the (gap, figure) pairs between the state's label and the segments.
        while !fits(&left, &meter) && left.len() > 2 + segments {
            let end = left.len() - segments;
            left.drain(end - 2..end);
        }
        left.push(meter);
    }
    let left_w: usize = left.iter().map(|s| super::wrap::width(&s.content)).sum();
    // A flash that took the line leaves no room for where requests go either.
    let mut took_line = false;
    let right = match &state.flash {
        Some(flash) => {
            let role = if flash.error { R::StatusError } else { R::Accent };
            // A flash matters more than the metrics: it takes the whole line if it needs it (a
            // cut flash loses its end: the path `/export html` wrote, the key that undoes). Only
            // the vim mode stays, first, as the keys typed next depend on it.
            let text = super::sanitize::sanitize(&flash.text);
            // `{text} ` and at least one space before it.
            if width <= left_w + 24 || super::wrap::width(&text) + left_w + 2 > width {
                left.truncate(usize::from(state.vim.is_some()));
                took_line = true;
                // The failure mark the metrics carried stays with an error that replaced them.
                if flash.error {
                    left.push(Span::styled(" ✗ ", theme.style(R::StatusError)));
                }
            }
            let kept: usize = left.iter().map(|s| super::wrap::width(&s.content)).sum();
            let text = super::wrap::ellipsize(&text, width.saturating_sub(kept + 2));
            Span::styled(format!("{text} "), theme.style(role))
        }
        None => {
            let k = |a| state.keymap.hint(a);
            let full =
                format!("{} palette · {} models · {} help ", k(Action::Palette), k(Action::Models), k(Action::Help));
            // On a narrow line the help key alone stays: it leads to the rest.
            let hint =
                if left_w + super::wrap::width(&full) <= width { full } else { format!("{} help ", k(Action::Help)) };
            Span::styled(hint, theme.style(R::Dim))
        }
    };
    // Where requests go, shown when there is room after the state and the hints or flash.
    let target = Span::styled(
        format!(
            "  {} · {} · {}",
            super::sanitize::sanitize(&state.target.provider),
            super::sanitize::sanitize(&state.target.model),
            state.target.api.name()
        ),
        theme.style(R::Dim),
    );
    let w = |spans: &[Span<'_>]| -> usize { spans.iter().map(|s| super::wrap::width(&s.content)).sum() };
    let right_w = super::wrap::width(&right.content);
    if !left.is_empty() && !took_line && w(&left) + super::wrap::width(&target.content) + right_w < width {
        left.push(target);
    }
    let left_w = w(&left);
    let mut spans = left;
    // At least one space between the two sides, or they run together ("tools offF1 help").
    if left_w + right_w < width {
        spans.push(Span::styled(" ".repeat(width - left_w - right_w), bar));
        spans.push(right);
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(bar), area);
}

/// " tools off", " tools 6 auto", " tools 6 ask": how many tools the next request offers, and
/// whether read-only ones run without asking; " tools 6 ignored?" when the server seemed to
/// drop the ones it was sent.
fn tools_span(state: &State) -> Span<'static> {
    let theme = &state.theme;
    match state.tools.flags.mode {
        ToolMode::Off => Span::styled("  tools off", theme.style(R::Dim)),
        mode => {
            let n = state.tools.definitions().len();
            if state.tools_ignored_here() {
                // The server seemed to drop them: the model cannot call any.
                return Span::styled(format!("  tools {n} ignored?"), theme.style(R::Error));
            }
            let role = if mode == ToolMode::Auto { R::Warning } else { R::Accent };
            Span::styled(format!("  tools {n} {}", mode.name()), theme.style(role))
        }
    }
}

/// " schema" while `/schema` holds the answers to one: a reply that must be JSON should not
/// surprise.
fn schema_span(state: &State) -> Option<Span<'static>> {
    state.settings.schema.as_ref()?;
    Some(Span::styled("  schema", state.theme.style(R::Accent)))
}

/// The conversation's cost so far, when the usage panel that shows it is hidden (`~` when it is
/// the catalogue's estimate).
fn cost_span(state: &State) -> Option<Span<'static>> {
    if state.panels_shown() {
        return None;
    }
    let cost = state.totals.cost?;
    let label = crate::engine::metrics::money_label(cost, state.totals.cost_estimated);
    Some(Span::styled(format!("  {label}"), state.theme.style(R::Dim)))
}

/// "● streaming  ttft 180 ms  42 tok/s  3.1 s" and friends.
fn reply_state(state: &State, m: &Message) -> Vec<Span<'static>> {
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    let t = &m.timing;
    let elapsed = match (m.is_live(), &state.live) {
        (true, Some(live)) => live.started_ms.map(|s| state.now_ms.saturating_sub(s)),
        _ => t.total_ms,
    };
    let (label, style): (String, Style) = match m.status {
        MessageStatus::Waiting => (format!(" {} waiting", spinner(state.now_ms)), theme.style(R::StatusStreaming)),
        MessageStatus::Streaming => (" ● streaming".to_owned(), theme.style(R::StatusStreaming)),
        // Stopped by the provider's filter is not a success, whatever the stream said after.
        MessageStatus::Complete if m.main().finish_reason.as_deref() == Some("content_filter") => {
            (" ⊘ filtered".to_owned(), theme.style(R::StatusError))
        }
        MessageStatus::Complete if m.main().finish_reason.as_deref() == Some("length") => {
            (" … cut off".to_owned(), theme.style(R::Warning))
        }
        MessageStatus::Complete => (" ✓ done".to_owned(), theme.style(R::Success)),
        MessageStatus::Cancelled => (" ■ cancelled".to_owned(), theme.style(R::Warning)),
        MessageStatus::Failed | MessageStatus::Interrupted => (" ✗ error".to_owned(), theme.style(R::StatusError)),
    };
    let mut out = vec![Span::styled(label, style)];
    let mut metric = |s: String| {
        out.push(Span::styled("  ", dim));
        out.push(Span::styled(s, dim));
    };
    if let Some(ttft) = t.ttft_ms {
        metric(format!("ttft {}", fmt::duration(ttft)));
    }
    if let Some((rate, estimated)) = crate::engine::metrics::generation_rate(m, elapsed) {
        metric(format!("{}{rate:.0} tok/s", if estimated { "~" } else { "" }));
    }
    if let Some(e) = elapsed {
        metric(fmt::duration(e));
    }
    out
}

/// The vim mode indicator (with a half-typed command), first on the bar.
fn vim_span(state: &State, vim: &crate::app::vim::Vim) -> Span<'static> {
    use crate::app::vim::Mode;
    let mode = match vim.mode {
        Mode::Normal => "NORMAL",
        Mode::Insert => "INSERT",
        Mode::Visual => "VISUAL",
    };
    let pending = vim.pending();
    let text = if pending.is_empty() { format!(" {mode} ·") } else { format!(" {mode} {pending} ·") };
    Span::styled(text, state.theme.style(R::Accent).add_modifier(ratatui::style::Modifier::BOLD))
}
