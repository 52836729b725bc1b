//! The elicitation form (`Overlay::Elicit`): which server asks, its message, one line a field
//! (title, the value being typed, a switch or a choice; a `*` on the required ones), the focused
//! field's description, why Accept did not answer, and the three buttons. Everything the server
//! wrote is sanitised.

use super::sanitize::sanitize;
use super::theme::Role as R;
use super::wrap;
use crate::app::State;
use crate::app::elicit::{BUTTONS, ElicitForm};
use crate::tools::mcp::elicit::{Field, FieldKind};
use ratatui::Frame;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

/// The hint at the bottom of the frame.
const HINT: &str = "Tab ↑↓ move · Space switches · Tab to a button, then Enter · Esc cancels";

pub fn draw(f: &mut Frame, state: &State) {
    let Some(form) = state.tools.forms.front() else { return };
    let area = super::overlays::centered(f.area(), 76, u16::MAX);
    let inner = usize::from(area.width.saturating_sub(2)).max(1);
    let lines = body(state, form, inner, usize::from(area.height.saturating_sub(2)));
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX).min(area.height);
    let area = super::overlays::centered(f.area(), area.width, height);
    let waiting = state.tools.forms.len() - 1;
    let title = if waiting > 0 {
        format!("MCP server {} asks ({waiting} more waiting)", sanitize(&form.server))
    } else {
        format!("MCP server {} asks", sanitize(&form.server))
    };
    f.render_widget(Clear, area);
    f.render_widget(Paragraph::new(lines).block(super::overlays::frame_block(state, &title, HINT)), area);
}

/// The form's lines within `rows`: the message, the fields (a window around the focused one
/// when they do not all fit, one line each), the focused field's description, the error and
/// the buttons — which always show.
fn body(state: &State, form: &ElicitForm, cols: usize, rows: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let mut out = wrap::plain(&sanitize(&form.message), cols, theme.style(R::Base));
    out.push(Line::default());
    let mut tail = Vec::new();
    if let Some(f) = form.fields.get(form.focus).filter(|f| !f.description.trim().is_empty()) {
        tail.extend(wrap::plain(&sanitize(f.description.trim()), cols, theme.style(R::Dim)));
    }
    tail.push(Line::default());
    if let Some(e) = &form.error {
        tail.extend(wrap::plain(&format!("✗ {}", sanitize(e)), cols, theme.style(R::Error)));
    }
    let room = rows.saturating_sub(out.len() + tail.len() + 1).max(1);
    let n = form.fields.len();
    let start = if n <= room { 0 } else { form.focus.min(n - 1).saturating_sub(room - 1).min(n - room) };
    for (i, field) in form.fields.iter().enumerate().skip(start).take(room) {
        let mut line = wrap::spans(field_line(state, field, form.focus == i), cols);
        line.truncate(1);
        out.extend(line);
    }
    out.extend(tail);
    let mut buttons = Vec::new();
    for (i, b) in BUTTONS.iter().enumerate() {
        let on = form.button() == Some(i);
        let style = if on { theme.style(R::Selection).add_modifier(Modifier::BOLD) } else { theme.style(R::Accent) };
        buttons.push(Span::styled(format!("[ {b} ]"), style));
        buttons.push(Span::raw("  "));
    }
    if form.armed {
        buttons.push(Span::styled("Enter answers", theme.style(R::Dim)));
    }
    out.extend(wrap::spans(buttons, cols));
    out
}

/// `▸ Title*  value▌` for a field: the focused one marked, with a cursor where text goes.
fn field_line(state: &State, field: &Field, on: bool) -> Vec<Span<'static>> {
    let theme = &state.theme;
    let star = if field.required { "*" } else { "" };
    let mut spans = vec![
        Span::styled(if on { " ▸ " } else { "   " }, theme.style(R::Accent)),
        Span::styled(format!("{}{star}  ", sanitize(&field.title)), theme.style(R::Strong)),
    ];
    let value = match &field.kind {
        FieldKind::Bool => if field.value == "true" { "[x] yes" } else { "[ ] no" }.to_owned(),
        FieldKind::Choice(options) => {
            let label = options.iter().find(|o| o.0 == field.value).map_or("(none)", |o| o.1.as_str());
            format!("‹ {} ›", sanitize(label))
        }
        FieldKind::Text | FieldKind::Number { .. } => {
            let cursor = if on { "▌" } else { "" };
            format!("{}{cursor}", sanitize(&field.value))
        }
    };
    let style = if on { theme.style(R::Selection) } else { theme.style(R::Base) };
    spans.push(Span::styled(value, style));
    spans
}
