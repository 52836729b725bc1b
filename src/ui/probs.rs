//! The token-probability heatmap of one message (`Overlay::Probs`): every token tinted by how
//! sure the model was, with text attributes that carry the same ranks without colour (NO_COLOR:
//! underlined, bold underlined, reversed), the cursor's token in ⟦brackets⟧, and below, that
//! token's alternatives with their probabilities. Only the lines in view are drawn.

use super::sanitize::sanitize;
use super::theme::Role as R;
use crate::app::State;
use crate::engine::logprobs::{Token, light, stats_of, token_at};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use unicode_width::UnicodeWidthStr;

/// Rows under the heatmap: a rule, the token, up to five alternatives, the legend.
const DETAIL_ROWS: u16 = 8;

pub fn draw(f: &mut Frame, state: &State, id: u64, cursor: usize) {
    let screen = f.area();
    let area = Rect { height: screen.height.saturating_sub(1).max(1.min(screen.height)), ..screen };
    let Some(chunks) = state.transcript.message(id).map(|m| &m.main().logprobs) else { return };
    // Every frame: the tokens' text and probability borrowed, the cursor's alternatives alone built.
    let toks = light(chunks);
    let cursor = cursor.min(toks.len().saturating_sub(1));
    let title = match stats_of(chunks) {
        Some(s) => format!(
            " Token probabilities · {} tokens · mean logprob {:.2} · perplexity {:.2} ",
            s.tokens, s.mean_logprob, s.perplexity
        ),
        None => " Token probabilities ".to_owned(),
    };
    let hint = if area.width >= 70 {
        " ←→ token · ↑↓ line · n next unsure · Home/End · Esc close "
    } else {
        " ←→ · n · Esc "
    };
    let block = super::overlays::frame_block(state, title.trim(), hint.trim());
    let inner = block.inner(area);
    f.render_widget(Clear, area);
    f.render_widget(block, area);
    if inner.width < 12 || inner.height < 3 || toks.is_empty() {
        return;
    }
    let detail_h = DETAIL_ROWS.min(inner.height / 2);
    let map = Rect { height: inner.height - detail_h, ..inner };
    let detail = Rect { y: map.y + map.height, height: detail_h, ..inner };
    let (lines, cursor_line) = heatmap(state, &toks, cursor, usize::from(map.width));
    let rows = usize::from(map.height);
    let top = cursor_line.saturating_sub(rows / 2).min(lines.len().saturating_sub(rows));
    let shown: Vec<Line<'static>> = lines.into_iter().skip(top).take(rows).collect();
    f.render_widget(Paragraph::new(shown), map);
    if let Some(t) = token_at(chunks, cursor) {
        f.render_widget(Paragraph::new(details(state, &t, usize::from(detail.width))), detail);
    }
}

/// How sure the model was, in four ranks: 0 (≥ 90 %) … 3 (< 30 %).
#[must_use]
pub fn rank(p: f64) -> usize {
    match p {
        p if p >= 0.9 => 0,
        p if p >= 0.6 => 1,
        p if p >= 0.3 => 2,
        _ => 3,
    }
}

/// The style of a rank: a colour from the theme's severity scale, and an attribute that says
/// the same without colour.
fn rank_style(state: &State, rank: usize) -> Style {
    let t = &state.theme;
    match rank {
        0 => t.style(R::Base),
        1 => t.style(R::SeverityLow).add_modifier(Modifier::UNDERLINED),
        2 => t.style(R::SeverityMedium).add_modifier(Modifier::UNDERLINED | Modifier::BOLD),
        _ => t.style(R::SeverityHigh).add_modifier(Modifier::REVERSED),
    }
}

/// The tokens laid out in `width` columns; returns the lines and the line of the cursor.
fn heatmap(state: &State, toks: &[(&str, f64)], cursor: usize, width: usize) -> (Vec<Line<'static>>, usize) {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    let mut cursor_line = 0;
    let cursor_style = state.theme.style(R::Selection).add_modifier(Modifier::BOLD);
    for (i, &(token, logprob)) in toks.iter().enumerate() {
        let text = sanitize(token);
        let p = logprob.exp().clamp(0.0, 1.0);
        let (style, open, close) =
            if i == cursor { (cursor_style, "⟦", "⟧") } else { (rank_style(state, rank(p)), "", "") };
        let mut pieces = text.split('\n').peekable();
        let mut first = true;
        while let Some(piece) = pieces.next() {
            if !first {
                lines.push(Line::from(std::mem::take(&mut cur)));
                used = 0;
            }
            let shown =
                format!("{}{piece}{}", if first { open } else { "" }, if pieces.peek().is_none() { close } else { "" });
            let w = shown.width();
            if used + w > width && used > 0 {
                lines.push(Line::from(std::mem::take(&mut cur)));
                used = 0;
            }
            if i == cursor {
                cursor_line = lines.len();
            }
            if !shown.is_empty() {
                cur.push(Span::styled(shown, style));
            }
            used += w;
            first = false;
        }
    }
    lines.push(Line::from(cur));
    (lines, cursor_line)
}

/// A token as text: whitespace made visible.
fn visible(token: &str) -> String {
    sanitize(&token.replace('\n', "⏎").replace('\t', "⇥")).into_owned()
}

fn details(state: &State, t: &Token, width: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    let mut out = vec![Line::from(Span::styled("─".repeat(width), theme.style(R::Border)))];
    out.push(Line::from(vec![
        Span::styled("token ", dim),
        Span::styled(format!("“{}”", visible(&t.token)), rank_style(state, rank(t.prob()))),
        Span::styled(format!("  {:.1} %  logprob {:.3}", t.prob() * 100.0, t.logprob), theme.style(R::Base)),
    ]));
    if t.top.is_empty() {
        out.push(Line::from(Span::styled("no alternatives sent (ask with /logprobs N)", dim)));
    }
    let bar_w = (width / 4).clamp(4, 24);
    for a in t.top.iter().take(5) {
        let p = a.logprob.exp().clamp(0.0, 1.0);
        let filled = (p * bar_w as f64).round() as usize;
        let chosen = a.token == t.token;
        out.push(Line::from(vec![
            Span::styled("█".repeat(filled), theme.style(R::GaugeFilled)),
            Span::styled("░".repeat(bar_w - filled.min(bar_w)), theme.style(R::GaugeEmpty)),
            Span::styled(format!(" {:>5.1} %  ", p * 100.0), theme.style(R::Base)),
            Span::styled(format!("“{}”", visible(&a.token)), rank_style(state, rank(p))),
            Span::styled(if chosen { "  ◂ chosen" } else { "" }, theme.style(R::Accent)),
        ]));
    }
    let mut legend = vec![Span::styled("≥90 % plain · ", dim)];
    for (r, label) in [(1, "60–90 %"), (2, "30–60 %"), (3, "<30 %")] {
        legend.push(Span::styled(label, rank_style(state, r)));
        legend.push(Span::styled(" · ", dim));
    }
    legend.push(Span::styled("⟦cursor⟧", theme.style(R::Selection).add_modifier(Modifier::BOLD)));
    out.push(Line::from(legend));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_split_at_90_60_and_30_percent() {
        assert_eq!(
            [rank(1.0), rank(0.9), rank(0.89), rank(0.6), rank(0.59), rank(0.3), rank(0.29)],
            [0, 0, 1, 1, 2, 2, 3]
        );
    }
}
