//! Per-reply numbers a user compares models by: time to first token, tokens per second, total
//! time, usage and cost. Only numbers the provider sent or palaver measured; never invented.

use super::message::Message;
use super::safety::any_flagged;
use super::usage::UsageView;
use crate::config::{Config, Price};

/// Cost in dollars from per-million prices; cached prompt tokens at the cached price when set.
#[must_use]
pub fn cost(p: &Price, u: &UsageView) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    let f = |n: u64| n as f64 / 1_000_000.0;
    let prompt = u.prompt.unwrap_or(0);
    let cached = u.cached.unwrap_or(0).min(prompt);
    let input = p.input.map(|r| f(prompt - cached) * r + f(cached) * p.cached_input.unwrap_or(r));
    let output = p.output.map(|r| f(u.completion.unwrap_or(0)) * r);
    match (input, output) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

/// The shortest generation time a tokens-per-second figure is given for: a non-streamed reply
/// arrives all at once, and a rate over a few milliseconds says nothing about the model.
pub const MIN_RATE_SPAN_MS: u64 = 200;

/// Completion tokens per second of generation (after the first token), `elapsed_ms` after the
/// request went out; `true` when estimated. One definition for the status bar while streaming,
/// the finished reply, the usage panel and compare: the provider's completion count when it
/// sent one, else an estimate from the text (about four bytes a token, at least one a delta),
/// so the figure does not jump from deltas to tokens when the reply ends.
#[must_use]
pub fn generation_rate(msg: &Message, elapsed_ms: Option<u64>) -> Option<(f64, bool)> {
    let ttft = msg.timing.ttft_ms?;
    let span = elapsed_ms?.checked_sub(ttft).filter(|s| *s >= MIN_RATE_SPAN_MS)?;
    let counted = msg.usage.as_ref().and_then(|u| UsageView::from_raw(u).completion);
    let (tokens, estimated) = match counted {
        Some(n) => (n, false),
        None => (estimated_tokens(msg), true),
    };
    if tokens == 0 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    Some((tokens as f64 * 1000.0 / span as f64, estimated))
}

/// Tokens of a reply guessed from its text: about four bytes a token, never fewer than deltas.
fn estimated_tokens(msg: &Message) -> u64 {
    let main = msg.main();
    let bytes = main.content.len()
        + main.reasoning.len()
        + main.refusal.len()
        + main.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
    u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX).max(msg.timing.deltas)
}

/// The numbers of one reply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplyMetrics {
    pub ttft_ms: Option<u64>,
    pub total_ms: Option<u64>,
    /// Completion tokens per second of generation (after the first token); from usage when
    /// sent, else from the count of deltas (marked `estimated`).
    pub tokens_per_s: Option<f64>,
    pub tps_estimated: bool,
    pub usage: UsageView,
    pub cost: Option<f64>,
    pub finish_reason: Option<String>,
    /// Any prompt or completion filter flagged something, or the reply was refused.
    pub safety_flag: bool,
}

impl ReplyMetrics {
    #[must_use]
    pub fn of(msg: &Message, cfg: &Config, model: &str) -> Self {
        let usage = msg.usage.as_ref().map(UsageView::from_raw).unwrap_or_default();
        let rate = generation_rate(msg, msg.timing.total_ms);
        let (tokens_per_s, tps_estimated) = (rate.map(|r| r.0), rate.is_some_and(|r| r.1));
        let price = cfg.model_facts(msg.model.as_deref().unwrap_or(model)).and_then(|f| f.price.as_ref());
        let main = msg.main();
        let prompt_flag = msg.prompt_filter.as_ref().and_then(|v| v.as_array()).is_some_and(|a| {
            a.iter().any(|p| p.get("content_filter_results").and_then(|r| r.as_object()).is_some_and(any_flagged))
        });
        Self {
            ttft_ms: msg.timing.ttft_ms,
            total_ms: msg.timing.total_ms,
            tokens_per_s,
            tps_estimated,
            cost: price.and_then(|p| cost(p, &usage)),
            usage,
            finish_reason: main.finish_reason.clone(),
            safety_flag: prompt_flag
                || main.content_filter.as_ref().is_some_and(any_flagged)
                || !main.refusal.is_empty()
                || main.finish_reason.as_deref() == Some("content_filter"),
        }
    }
}

/// Which column is best for a metric: lowest or highest of the values present.
#[must_use]
pub fn best(values: &[Option<f64>], lower_is_better: bool) -> Option<usize> {
    values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i, v)))
        .min_by(|a, b| {
            let o = a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal);
            if lower_is_better { o } else { o.reverse() }
        })
        .map(|(i, _)| i)
}

/// Every column that is best for a metric: all those tied for the lowest or highest value.
#[must_use]
pub fn best_all(values: &[Option<f64>], lower_is_better: bool) -> Vec<usize> {
    let Some(top) = best(values, lower_is_better).and_then(|i| values[i]) else { return Vec::new() };
    // Figures are shown rounded: equal to a thousandth is a tie a reader sees as one.
    let tied = |v: f64| (v - top).abs() <= top.abs() * 1e-3 + f64::EPSILON;
    values.iter().enumerate().filter(|(_, v)| v.is_some_and(tied)).map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_while_streaming_and_at_the_end_is_one_definition() {
        let mut m = Message::with_text(super::super::message::Role::Assistant, &"abcd".repeat(100));
        m.timing.ttft_ms = Some(100);
        m.timing.deltas = 10;
        // While streaming: no usage yet, ~100 tokens over one second, marked estimated.
        let (live, estimated) = generation_rate(&m, Some(1100)).unwrap_or_default();
        assert!(estimated && (live - 100.0).abs() < 1e-6, "{live}");
        // At the end the provider's count replaces the estimate, same formula.
        m.usage = Some(serde_json::json!({"completion_tokens": 110}));
        let (done, estimated) = generation_rate(&m, Some(1100)).unwrap_or_default();
        assert!(!estimated && (done - 110.0).abs() < 1e-6, "{done}");
        // Under 200 ms of generation there is no rate.
        assert_eq!(generation_rate(&m, Some(250)), None);
    }

    #[test]
    fn ties_mark_every_tied_column() {
        assert_eq!(best_all(&[Some(2.0), Some(1.0), None, Some(1.0)], true), [1, 3]);
        assert_eq!(best_all(&[Some(5.0), Some(5.0)], false), [0, 1]);
        assert_eq!(best_all(&[Some(5.0), Some(4.0)], false), [0]);
        assert!(best_all(&[None, None], true).is_empty());
    }

    #[test]
    fn cost_and_best() {
        let p = Price { input: Some(1.0), cached_input: Some(0.5), output: Some(2.0) };
        let u = UsageView {
            prompt: Some(1_000_000),
            cached: Some(500_000),
            completion: Some(1_000_000),
            ..UsageView::default()
        };
        assert_eq!(cost(&p, &u), Some(0.5 + 0.25 + 2.0));
        assert_eq!(cost(&Price::default(), &u), None);
        assert_eq!(best(&[Some(3.0), None, Some(1.0)], true), Some(2));
        assert_eq!(best(&[Some(3.0), None, Some(1.0)], false), Some(0));
        assert_eq!(best(&[None, None], false), None);
    }

    #[test]
    fn tokens_per_second_from_usage_after_first_token() {
        let mut m = Message::assistant_pending();
        m.timing.ttft_ms = Some(100);
        m.timing.total_ms = Some(1100);
        m.usage = Some(serde_json::json!({"completion_tokens": 50}));
        let r = ReplyMetrics::of(&m, &Config::default(), "x");
        assert_eq!(r.tokens_per_s, Some(50.0));
        assert!(!r.tps_estimated);
    }
}
