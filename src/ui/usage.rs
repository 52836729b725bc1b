//! The usage panel: exactly the numbers the provider sent for a reply, palaver's own time to
//! first token and tokens per second, the server's own speeds when it sent them (llama.cpp
//! `timings`), the conversation's totals, cost from configured prices, and a context gauge when
//! the window is known. It never invents a number: "provider sent no usage" is a valid state.

use super::fmt;
use super::theme::{Role as R, Theme};
use crate::app::State;
use crate::app::totals::reply_cost;
use crate::engine::message::Message;
use crate::engine::metrics::{ReplyMetrics, money_label};
use crate::engine::usage::{ServerTimings, UsageView};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

/// The panel's lines for reply `m` (or none), `cols` wide.
#[must_use]
pub fn lines(state: &State, m: Option<&Message>, cols: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let mut out = Vec::new();
    let Some(m) = m else {
        out.push(note("no reply yet", theme));
        return out;
    };
    out.push(heading("this reply", theme));
    match &m.usage {
        None if m.is_live() => out.push(note("waiting for usage…", theme)),
        None => out.push(note("provider sent no usage", theme)),
        // A usage value may hold only the server's timings: that is no count at all.
        Some(raw) if !UsageView::from_raw(raw).has_counts() => out.push(note("provider sent no token counts", theme)),
        Some(raw) => {
            let u = UsageView::from_raw(raw);
            let rows: [(&str, Option<u64>); 9] = [
                ("prompt", u.prompt),
                ("  cached", u.cached),
                ("  audio", u.prompt_audio),
                ("completion", u.completion),
                ("  reasoning", u.reasoning),
                ("  audio", u.completion_audio),
                ("  accepted pred.", u.accepted_prediction),
                ("  rejected pred.", u.rejected_prediction),
                ("total", u.total),
            ];
            for (label, value) in rows {
                if let Some(v) = value {
                    out.push(row(label, &fmt::thousands(v), cols, theme));
                }
            }
            if let Some((cost, estimated)) = reply_cost(&state.cfg, m, &state.target.model, &u) {
                out.push(row("cost", &money_label(cost, estimated), cols, theme));
            }
        }
    }
    out.extend(speed(state, m, cols));
    if let Some(t) = m.usage.as_ref().and_then(ServerTimings::from_usage) {
        out.push(Line::default());
        out.extend(server(&t, cols, theme));
    }
    out.push(Line::default());
    out.extend(conversation(state, cols));
    out.extend(gauge(state, m, cols));
    out
}

/// What palaver measured itself: time to first token and generation speed (`~` when counted
/// from deltas because the provider sent no completion count).
fn speed(state: &State, m: &Message, cols: usize) -> Vec<Line<'static>> {
    let r = ReplyMetrics::of(m, &state.cfg, &state.target.model);
    let mut out = Vec::new();
    if let Some(ttft) = r.ttft_ms {
        out.push(row("ttft", &fmt::duration(ttft), cols, &state.theme));
    }
    // The same rate as the status bar's (`metrics::generation_rate`).
    if let Some(tps) = r.tokens_per_s {
        let approx = if r.tps_estimated { "~" } else { "" };
        out.push(row("gen", &format!("{approx}{tps:.0} tok/s"), cols, &state.theme));
    }
    // With `--logprobs`: how sure the model was of this answer, over all its tokens.
    if let Some(s) = crate::engine::logprobs::stats_of(&m.main().logprobs) {
        out.push(row("mean logprob", &format!("{:.2}", s.mean_logprob), cols, &state.theme));
        out.push(row("perplexity", &format!("{:.2}", s.perplexity), cols, &state.theme));
    }
    out
}

/// The server's own speeds: prompt processing and generation, each with its tokens and time.
fn server(t: &ServerTimings, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ms = |v: f64| fmt::duration(v.round() as u64);
    let mut out = vec![heading("server timings", theme)];
    let sides = [
        ("prompt", t.prompt_per_second, t.prompt_n, t.prompt_ms, t.cache_n.filter(|c| *c > 0)),
        ("gen", t.predicted_per_second, t.predicted_n, t.predicted_ms, None),
    ];
    for (label, rate, n, time, cached) in sides {
        if let Some(rate) = rate {
            out.push(row(label, &format!("{rate:.0} tok/s"), cols, theme));
        }
        let tokens = match (n, cached) {
            (Some(n), Some(c)) => Some(format!("  {} tok + {} cached", fmt::thousands(n), fmt::thousands(c))),
            (Some(n), None) => Some(format!("  {} tok", fmt::thousands(n))),
            (None, _) => None,
        };
        match (tokens, time) {
            (Some(tokens), Some(time)) => out.push(row(&tokens, &ms(time), cols, theme)),
            (Some(tokens), None) => out.push(row(&tokens, "", cols, theme)),
            (None, Some(time)) => out.push(row("  time", &ms(time), cols, theme)),
            (None, None) => {}
        }
    }
    out
}

/// Totals over the replies in the transcript that carried usage (counted by the state).
fn conversation(state: &State, cols: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let t = &state.totals;
    let mut out = vec![heading("conversation", theme)];
    if t.with_usage == 0 {
        out.push(note(if t.replies == 0 { "no replies yet" } else { "provider sent no usage" }, theme));
        return out;
    }
    if t.prompt.is_none() && t.completion.is_none() && t.total.is_none() {
        // Replies whose usage held only the server's timings.
        out.push(note("provider sent no token counts", theme));
        return out;
    }
    for (label, v) in [("prompt", t.prompt), ("completion", t.completion), ("total", t.total)] {
        if let Some(v) = v {
            out.push(row(label, &fmt::thousands(v), cols, theme));
        }
    }
    if let Some(c) = t.cost {
        out.push(row("cost", &money_label(c, t.cost_estimated), cols, theme));
    }
    if t.with_usage < t.replies {
        out.push(note(&format!("{} of {} replies sent usage", t.with_usage, t.replies), theme));
    }
    out
}

/// How full the model's context window is after reply `m`, when the window is configured.
fn gauge(state: &State, m: &Message, cols: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let model = m.model.as_deref().unwrap_or(&state.target.model);
    let Some(window) = state.cfg.model_facts(model).and_then(|f| f.context_window).filter(|w| *w > 0) else {
        return Vec::new();
    };
    let Some(u) = m.usage.as_ref().map(UsageView::from_raw) else { return Vec::new() };
    // A summary's own request held the turns it replaced; what stays in context is the summary.
    let used = if crate::engine::compact::effective(m) {
        u.completion
    } else {
        u.total.or_else(|| Some(u.prompt? + u.completion?))
    };
    let Some(used) = used else { return Vec::new() };
    #[allow(clippy::cast_precision_loss)]
    let ratio = (used as f64 / window as f64).clamp(0.0, 1.0);
    let bar_w = cols.saturating_sub(14).clamp(4, 24);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let filled = ((ratio * bar_w as f64).round() as usize).min(bar_w);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let pct = (ratio * 100.0).round() as u64;
    vec![
        Line::default(),
        Line::from(vec![
            Span::styled("context ", theme.style(R::Base)),
            // From 80 % the gauge warns, as the status bar's meter does.
            Span::styled("▓".repeat(filled), theme.style(if ratio >= 0.8 { R::Warning } else { R::GaugeFilled })),
            Span::styled("░".repeat(bar_w - filled), theme.style(R::GaugeEmpty)),
            Span::styled(format!(" {pct}%"), theme.style(R::Base)),
        ]),
        note(&format!("{} / {}", fmt::thousands(used), fmt::thousands(window)), theme),
    ]
}

/// A label on the left, a number on the right.
#[must_use]
pub fn row(label: &str, value: &str, cols: usize, theme: &Theme) -> Line<'static> {
    let gap = cols.saturating_sub(label.chars().count() + value.chars().count()).max(1);
    Line::from(vec![
        Span::styled(label.to_owned(), theme.style(R::Base)),
        Span::raw(" ".repeat(gap)),
        Span::styled(value.to_owned(), theme.style(R::Base).add_modifier(Modifier::BOLD)),
    ])
}

#[must_use]
pub fn heading(text: &str, theme: &Theme) -> Line<'static> {
    Line::from(Span::styled(text.to_owned(), theme.style(R::Heading).add_modifier(Modifier::BOLD)))
}

#[must_use]
pub fn note(text: &str, theme: &Theme) -> Line<'static> {
    Line::from(Span::styled(text.to_owned(), theme.style(R::Dim).add_modifier(Modifier::ITALIC)))
}
