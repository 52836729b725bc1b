//! The sampling modal (`Overlay::Sample`): which server asks to use the model, what it would run
//! on (the conversation's provider and model), its max tokens and model hints, its system prompt
//! and messages (as many lines as fit), and the two buttons. Everything the server wrote is
//! sanitised.

use super::sanitize::sanitize;
use super::theme::Role as R;
use super::wrap;
use crate::app::State;
use crate::app::sample::{SAMPLE_BUTTONS, SampleAsk};
use crate::tools::mcp::sample::SampleRole;
use ratatui::Frame;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

/// The hint at the bottom of the frame.
const HINT: &str = "Tab ←→ choose · Enter on a chosen button · Esc declines";

pub fn draw(f: &mut Frame, state: &State) {
    let Some(ask) = state.tools.samples.front() else { return };
    let area = super::overlays::centered(f.area(), 76, u16::MAX);
    let inner = usize::from(area.width.saturating_sub(2)).max(1);
    let lines = body(state, ask, inner, usize::from(area.height.saturating_sub(2)));
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX).min(area.height);
    let area = super::overlays::centered(f.area(), area.width, height);
    let waiting = state.tools.samples.len() - 1;
    let server = sanitize(&ask.request.server);
    let title = if waiting > 0 {
        format!("MCP server {server} asks to use the model ({waiting} more waiting)")
    } else {
        format!("MCP server {server} asks to use the model")
    };
    f.render_widget(Clear, area);
    f.render_widget(Paragraph::new(lines).block(super::overlays::frame_block(state, &title, HINT)), area);
}

/// The modal's lines within `rows`; the buttons always show.
fn body(state: &State, ask: &SampleAsk, cols: usize, rows: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let r = &ask.request;
    let t = &state.target;
    let mut out = wrap::plain(
        &format!("It would run on {} / {}, not streamed.", sanitize(&t.provider), sanitize(&t.model)),
        cols,
        theme.style(R::Strong),
    );
    let hints = if r.hints.is_empty() { "none".to_owned() } else { sanitize(&r.hints.join(", ")).into_owned() };
    let max_output = state.cfg.model_facts(&t.model).and_then(|f| f.max_output);
    let tokens = match crate::engine::sampling::max_tokens(r.max_tokens, max_output) {
        (n, Some(_)) if max_output.is_some() => format!("{} → {n} (the model's output limit)", r.max_tokens),
        (n, Some(_)) => format!("{} → {n} (SAMPLE_MAX_TOKENS_UNKNOWN: the model's limit is not known)", r.max_tokens),
        (n, None) => n.to_string(),
    };
    out.extend(wrap::plain(&format!("max tokens {tokens} · model hints: {hints}"), cols, theme.style(R::Dim)));
    out.push(Line::default());
    let mut asked = Vec::new();
    if let Some(system) = &r.system {
        asked.extend(wrap::plain(&format!("system: {}", sanitize(system.trim())), cols, theme.style(R::Dim)));
    }
    for (role, text) in &r.messages {
        let who = if *role == SampleRole::Assistant { "assistant" } else { "user" };
        asked.extend(wrap::plain(&format!("{who}: {}", sanitize(text.trim())), cols, theme.style(R::Base)));
    }
    let room = rows.saturating_sub(out.len() + 2).max(1);
    if asked.len() > room {
        let more = asked.len() - room + 1;
        asked.truncate(room - 1);
        asked.push(Line::styled(format!("… {more} more lines"), theme.style(R::Dim)));
    }
    out.extend(asked);
    out.push(Line::default());
    let mut buttons = Vec::new();
    for (i, b) in SAMPLE_BUTTONS.iter().enumerate() {
        let on = ask.focus == Some(i);
        let style = if on { theme.style(R::Selection).add_modifier(Modifier::BOLD) } else { theme.style(R::Accent) };
        buttons.push(Span::styled(format!("[ {b} ]"), style));
        buttons.push(Span::raw("  "));
    }
    if ask.armed {
        buttons.push(Span::styled("Enter answers", theme.style(R::Dim)));
    }
    out.extend(wrap::spans(buttons, cols));
    out
}
