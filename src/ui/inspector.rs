//! The flow inspector overlay: the turn's steps on the left (requests, responses, frames,
//! replies, tool runs), the raw JSON of the selected step on the right, scrollable.

use super::sanitize::sanitize;
use super::theme::Role as R;
use super::wrap;
use crate::app::State;
use crate::app::inspector::{StepKind, step_text, steps};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

/// Most raw lines laid out at once (the export has everything).
const MAX_RAW_LINES: usize = 5_000;

pub fn draw(f: &mut Frame, state: &State) {
    let theme = &state.theme;
    let screen = f.area();
    // Everything but the status bar, so flashes ("copied", "exported to …") stay visible.
    let area = Rect { height: screen.height.saturating_sub(1).max(1.min(screen.height)), ..screen };
    let steps = steps(state);
    let selected = state.flow.selected.min(steps.len().saturating_sub(1));
    let rounds = steps.iter().filter(|s| s.kind == StepKind::Request).count();
    let src = state.flow_source();
    let whose = src.label.as_deref().map(|l| format!("{} · ", sanitize(l))).unwrap_or_default();
    let title =
        format!(" Flow inspector · {whose}this turn: {rounds} round trip{} ", if rounds == 1 { "" } else { "s" });
    let columns = if src.column.is_some() { "Tab column · " } else { "" };
    let hint = if area.width >= 100 {
        format!(" {columns}↑↓ step · PgUp/PgDn scroll · c copy as curl · y copy JSON · x export · Esc close ")
    } else {
        format!(" {}↑↓ · PgUp/PgDn · c curl · y JSON · x export · Esc ", if columns.is_empty() { "" } else { "Tab · " })
    };
    let block = Block::bordered()
        .border_style(theme.style(R::BorderFocused))
        .title(Span::styled(title, theme.style(R::Title).add_modifier(Modifier::BOLD)))
        .title_bottom(Line::from(Span::styled(hint, theme.style(R::Dim))).right_aligned())
        .style(theme.style(R::Base));
    let inner = block.inner(area);
    f.render_widget(Clear, area);
    f.render_widget(block, area);
    if inner.width < 10 || inner.height == 0 {
        return;
    }
    if steps.is_empty() {
        let text = if src.hidden {
            "The arena hides the models until you vote: requests and frames name them. The round trips show here after the vote."
        } else {
            "Nothing sent yet: the inspector shows the requests, frames and tool runs of a turn."
        };
        f.render_widget(Paragraph::new(wrap::plain(text, usize::from(inner.width), theme.style(R::Dim))), inner);
        return;
    }
    let list_w = (inner.width * 2 / 5).clamp(20.min(inner.width), 46);
    let list = Rect { width: list_w, ..inner };
    let raw = Rect { x: inner.x + list_w + 1, width: inner.width.saturating_sub(list_w + 1), ..inner };
    for y in inner.y..inner.y + inner.height {
        f.buffer_mut().set_string(inner.x + list_w, y, "│", theme.style(R::Border));
    }
    // The list: two lines per step (title, detail), scrolled to keep the selection in view.
    let lw = usize::from(list_w);
    let rows = usize::from(list.height);
    let per = 2;
    let first = (selected * per + per).saturating_sub(rows).div_ceil(per);
    let mut lines: Vec<Line<'static>> = Vec::new();
    for (i, s) in steps.iter().enumerate().skip(first) {
        if lines.len() + per > rows + 1 {
            break;
        }
        let role = match s.kind {
            StepKind::Prompt => R::User,
            StepKind::Request => R::Accent,
            StepKind::Response | StepKind::Frames => R::Base,
            StepKind::Reply => R::Assistant,
            StepKind::Tool => R::Tool,
        };
        let indent = if matches!(s.kind, StepKind::Prompt | StepKind::Request) { "" } else { "  " };
        let mut title = Line::from(vec![
            Span::styled(if i == selected { "▸ " } else { "  " }, theme.style(R::Accent)),
            Span::styled(format!("{indent}{}", sanitize(&s.title)), theme.style(role).add_modifier(Modifier::BOLD)),
        ]);
        let mut detail = Line::from(Span::styled(format!("  {indent}  {}", sanitize(&s.detail)), theme.style(R::Dim)));
        if i == selected {
            for span in title.spans.iter_mut().chain(detail.spans.iter_mut()) {
                span.style = span.style.patch(theme.style(R::Selection));
            }
        }
        lines.push(clip_line(title, lw));
        lines.push(clip_line(detail, lw));
    }
    f.render_widget(Paragraph::new(lines), list);
    // The raw pane.
    let Some(step) = steps.get(selected) else { return };
    let text = step_text(state, step);
    let rw = usize::from(raw.width).max(1);
    let mut raw_lines: Vec<Line<'static>> = Vec::new();
    for l in text.lines() {
        raw_lines.extend(wrap::plain(&sanitize(l), rw, theme.style(R::Base)));
        if raw_lines.len() > MAX_RAW_LINES {
            raw_lines.push(Line::from(Span::styled("… cut here; x exports everything", theme.style(R::Dim))));
            break;
        }
    }
    let max_scroll = raw_lines.len().saturating_sub(usize::from(raw.height));
    let scroll = usize::from(state.flow.scroll).min(max_scroll);
    let shown: Vec<Line<'static>> = raw_lines.into_iter().skip(scroll).take(usize::from(raw.height)).collect();
    f.render_widget(Paragraph::new(shown), raw);
}

/// A line cut to `cols` columns with an ellipsis.
fn clip_line(line: Line<'static>, cols: usize) -> Line<'static> {
    if line.width() <= cols {
        return line;
    }
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut w = 0;
    for span in line.spans {
        let mut text = String::new();
        for c in span.content.chars() {
            let cw = wrap::width(c.encode_utf8(&mut [0; 4]));
            if w + cw + 1 > cols {
                text.push('…');
                out.push(Span::styled(text, span.style));
                return Line::from(out);
            }
            w += cw;
            text.push(c);
        }
        out.push(Span::styled(text, span.style));
    }
    Line::from(out)
}
