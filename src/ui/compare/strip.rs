//! The metrics strip under the columns: for each column (aligned under it) a bar for time to
//! first token, tokens per second, output tokens and cost, scaled to the largest value across
//! the columns, with the best of each highlighted. Live while the replies stream.

use super::metrics::{ColumnMetrics, Phase};
use crate::app::State;
use crate::app::compare::Compare;
use crate::engine::metrics::best_all;
use crate::ui::fmt;
use crate::ui::sanitize::sanitize;
use crate::ui::theme::Role as R;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Padding};

/// Rows the strip takes, frame included: model names and four metrics.
pub const HEIGHT: u16 = 7;
/// Partial blocks for bar ends, in eighths.
const EIGHTHS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];

/// One metric row.
struct Metric {
    label: &'static str,
    /// Only finished replies compete (a count still growing is not "fewest").
    finished_only: bool,
    /// (value for the bar, text) per column.
    values: Vec<Option<(f64, String)>>,
    lower_is_better: bool,
    /// What an absent value says, per column.
    missing: Vec<&'static str>,
}

/// Draws the strip into `area`; `segments` are the columns' x ranges (x, width) to align under.
pub fn draw(f: &mut Frame, area: Rect, state: &State, cmp: &Compare, segments: &[(u16, u16)]) {
    let theme = &state.theme;
    // In an arena before the vote no number shows: the time to the first token, token counts,
    // their rate and cost can all tell the models apart (a server, a tokenizer, a price).
    let hidden = cmp.hidden();
    let title = if hidden {
        " Metrics · after the vote "
    } else {
        " Metrics · longer bar = better · ★ best: first token soonest, most tok/s, fewest output tokens, lowest cost "
    };
    let block = Block::bordered()
        .border_style(theme.style(R::Border))
        .padding(Padding::horizontal(1))
        .title(Span::styled(super::clip(title, usize::from(area.width.saturating_sub(4))), theme.style(R::Title)));
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 || inner.width < 8 {
        return;
    }
    let metrics: Vec<ColumnMetrics> = cmp.columns.iter().map(|c| ColumnMetrics::of(state, c)).collect();
    #[allow(clippy::cast_precision_loss)]
    let rows = [
        Metric {
            label: "ttft",
            finished_only: false,
            values: metrics.iter().map(|m| m.reply.ttft_ms.map(|v| (v as f64, fmt::duration(v)))).collect(),
            lower_is_better: true,
            missing: vec!["—"; metrics.len()],
        },
        Metric {
            label: "tok/s",
            finished_only: false,
            values: metrics
                .iter()
                .map(|m| {
                    let est = if m.reply.tps_estimated { "~" } else { "" };
                    m.reply.tokens_per_s.map(|v| (v, format!("{est}{v:.0}")))
                })
                .collect(),
            lower_is_better: false,
            missing: vec!["—"; metrics.len()],
        },
        Metric {
            label: "out",
            finished_only: true,
            values: metrics
                .iter()
                .map(|m| {
                    let est = if m.output_estimated { "~" } else { "" };
                    m.output.map(|v| (v as f64, format!("{est}{}", fmt::thousands(v))))
                })
                .collect(),
            lower_is_better: true,
            missing: vec!["—"; metrics.len()],
        },
        Metric {
            label: "cost",
            finished_only: true,
            values: metrics
                .iter()
                .map(|m| m.reply.cost.map(|v| (v, crate::engine::metrics::money_label(v, m.reply.cost_estimated))))
                .collect(),
            lower_is_better: true,
            missing: cmp
                .columns
                .iter()
                .map(|c| {
                    let priced = state.cfg.model_facts(&c.target.model).is_some_and(|f| f.price.is_some());
                    // Where to set one, since the strip is where its absence shows.
                    if priced { "—" } else { "no price: [models] in config.toml" }
                })
                .collect(),
        },
    ];
    // Model names, under each column.
    for (i, &(x, w)) in segments.iter().enumerate() {
        if cmp.columns.get(i).is_none() {
            continue;
        }
        let name = sanitize(&cmp.label(i)).into_owned();
        let style =
            if cmp.focus == i { theme.style(R::Title).add_modifier(Modifier::BOLD) } else { theme.style(R::Title) };
        let (x, w) = clamp_segment(inner, x, w);
        f.buffer_mut().set_string(x, inner.y, super::clip(&name, usize::from(w)), style);
    }
    let shown = if hidden { &rows[..0] } else { &rows[..] };
    if hidden && inner.height > 1 {
        let note = "timings, speed, tokens and cost show after the vote: they tell models apart";
        let line = Line::from(Span::styled(super::clip(note, usize::from(inner.width)), theme.style(R::Dim)));
        f.buffer_mut().set_line(inner.x, inner.y + 1, &line, inner.width);
    }
    for (r, metric) in shown.iter().enumerate() {
        let y = inner.y + 1 + u16::try_from(r).unwrap_or(0);
        if y >= inner.y + inner.height {
            break;
        }
        let numbers: Vec<Option<f64>> = metric.values.iter().map(|v| v.as_ref().map(|(n, _)| *n)).collect();
        // A failed or cancelled reply's numbers show, but it cannot be the best; and a best
        // only means something when at least two columns have the number.
        let contenders: Vec<Option<f64>> = numbers
            .iter()
            .zip(&metrics)
            .map(|(v, m)| match m.phase {
                Phase::Failed(_) | Phase::Cancelled => None,
                Phase::Done => *v,
                _ if metric.finished_only => None,
                _ => *v,
            })
            .collect();
        let present = contenders.iter().filter(|v| v.is_some()).count();
        let winners = if present >= 2 { best_all(&contenders, metric.lower_is_better) } else { Vec::new() };
        let max = numbers.iter().flatten().fold(0.0f64, |a, &b| a.max(b));
        let min = numbers.iter().flatten().fold(f64::INFINITY, |a, &b| a.min(b));
        // The longer bar is always the better: a lower-is-better figure fills by min / value.
        let scale = Scale { lower_is_better: metric.lower_is_better, min, max };
        let value_w = metric.values.iter().flatten().map(|(_, t)| crate::ui::wrap::width(t)).max().unwrap_or(0);
        for (i, &(x, w)) in segments.iter().enumerate() {
            let (x, w) = clamp_segment(inner, x, w);
            let line = segment(state, metric, i, winners.contains(&i), scale, value_w, usize::from(w));
            f.buffer_mut().set_line(x, y, &line, w);
        }
    }
}

/// How a metric's values map to bar lengths.
#[derive(Clone, Copy)]
struct Scale {
    lower_is_better: bool,
    min: f64,
    max: f64,
}

impl Scale {
    /// The filled fraction for `v`: the best value fills the bar whichever way is better.
    fn fraction(self, v: f64) -> f64 {
        let f = if self.lower_is_better {
            if v > 0.0 { self.min / v } else { 1.0 }
        } else if self.max > 0.0 {
            v / self.max
        } else {
            0.0
        };
        f.clamp(0.0, 1.0)
    }
}

/// A segment inside the strip's frame.
fn clamp_segment(inner: Rect, x: u16, w: u16) -> (u16, u16) {
    let x0 = x.max(inner.x);
    let x1 = (x + w).min(inner.x + inner.width);
    (x0, x1.saturating_sub(x0))
}

/// "ttft  ██████▍    180 ms ★" for one column.
fn segment(
    state: &State,
    m: &Metric,
    i: usize,
    is_best: bool,
    scale: Scale,
    value_w: usize,
    width: usize,
) -> Line<'static> {
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    let label = format!("{:<6}", m.label);
    let mut spans = vec![Span::styled(label, dim)];
    let Some((v, text)) = m.values.get(i).cloned().flatten() else {
        let missing = m.missing.get(i).copied().unwrap_or("—");
        // Where to set a price, when the column has room to say it.
        let missing = if crate::ui::wrap::width(missing) > width.saturating_sub(6) && missing.starts_with("no price") {
            "no price set"
        } else {
            missing
        };
        spans.push(Span::styled(missing, dim));
        return Line::from(spans);
    };
    let star = if is_best { " ★" } else { "  " };
    let bar_w = width.saturating_sub(6 + 1 + value_w + star.chars().count());
    let (fill, empty): (Style, Style) = if is_best {
        (theme.style(R::Success), theme.style(R::GaugeEmpty))
    } else {
        (theme.style(R::GaugeFilled), theme.style(R::GaugeEmpty))
    };
    if bar_w > 0 {
        spans.extend(bar(scale.fraction(v), bar_w, fill, empty));
    }
    let value_style = if is_best { theme.style(R::Success).add_modifier(Modifier::BOLD) } else { theme.style(R::Base) };
    spans.push(Span::styled(format!(" {text:>value_w$}"), value_style));
    spans.push(Span::styled(star, theme.style(R::Success).add_modifier(Modifier::BOLD)));
    Line::from(spans)
}

/// A bar filled to `frac` of `width` cells, in eighths.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
fn bar(frac: f64, width: usize, fill: Style, empty: Style) -> Vec<Span<'static>> {
    let frac = frac.clamp(0.0, 1.0);
    let eighths = (frac * (width * 8) as f64).round() as usize;
    // Any value at all shows at least a sliver.
    let eighths = if frac > 0.0 { eighths.max(1) } else { eighths };
    let full = eighths / 8;
    let part = EIGHTHS[eighths % 8];
    let mut filled = "█".repeat(full);
    filled.push_str(part);
    let used = full + usize::from(!part.is_empty());
    vec![Span::styled(filled, fill), Span::styled("░".repeat(width.saturating_sub(used)), empty)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(spans: &[Span<'_>]) -> String {
        spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn bars_scale_in_eighths() {
        let s = Style::default();
        assert_eq!(text(&bar(1.0, 4, s, s)), "████");
        assert_eq!(text(&bar(0.5, 4, s, s)), "██░░");
        assert_eq!(text(&bar(0.1, 4, s, s)), "▍░░░");
        assert_eq!(text(&bar(0.0001, 4, s, s)), "▏░░░");
        assert_eq!(text(&bar(0.0, 3, s, s)), "░░░");
    }

    #[test]
    fn the_best_fills_the_bar_whichever_way_is_better() {
        let lower = Scale { lower_is_better: true, min: 180.0, max: 420.0 };
        assert!((lower.fraction(180.0) - 1.0).abs() < 1e-9);
        assert!(lower.fraction(420.0) < 0.5);
        let higher = Scale { lower_is_better: false, min: 69.0, max: 131.0 };
        assert!((higher.fraction(131.0) - 1.0).abs() < 1e-9);
        assert!(higher.fraction(69.0) < 0.6);
    }
}
