//! Per-reply numbers a user compares models by: time to first token, tokens per second, total
//! time, usage and cost. Only numbers the provider sent or palaver measured; never invented.

use super::message::Message;
use super::safety::any_flagged;
use super::usage::UsageView;
use crate::config::{Config, Price};

/// Cost in dollars from per-million prices. Prompt tokens read from the cache are priced as
/// cache reads, those written to it as cache writes, and reasoning tokens (part of the
/// completion count) at the reasoning price, each at the plain input or output price when the
/// price table has none.
#[must_use]
pub fn cost(p: &Price, u: &UsageView) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    let f = |n: u64| n as f64 / 1_000_000.0;
    let prompt = u.prompt.unwrap_or(0);
    let cached = u.cached.unwrap_or(0).min(prompt);
    let written = u.cache_write.unwrap_or(0).min(prompt - cached);
    let plain = prompt - cached - written;
    let input = p
        .input
        .map(|r| f(plain) * r + f(cached) * p.cached_input.unwrap_or(r) + f(written) * p.cache_write.unwrap_or(r));
    let completion = u.completion.unwrap_or(0);
    let reasoning = u.reasoning.unwrap_or(0).min(completion);
    let output = p.output.map(|r| f(completion - reasoning) * r + f(reasoning) * p.reasoning.unwrap_or(r));
    match (input, output) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

/// The cost of `usage` on `model` (else on `served`, the id the server answered with): in
/// dollars, and whether the price is the catalogue's (an estimate) rather than the user's.
#[must_use]
pub fn priced(cfg: &Config, model: &str, served: Option<&str>, usage: &UsageView) -> Option<(f64, bool)> {
    let facts = cfg.model_facts(model).filter(|f| f.price.is_some());
    let facts = facts.or_else(|| served.and_then(|s| cfg.model_facts(s)).filter(|f| f.price.is_some()))?;
    let c = cost(facts.price.as_ref()?, usage)?;
    Some((c, facts.price_estimated))
}

/// A cost as shown: `~` in front when it is an estimate from the catalogue's prices.
#[must_use]
pub fn money_label(usd: f64, estimated: bool) -> String {
    let m = crate::text::fmt::money(usd);
    if estimated { format!("~{m}") } else { m }
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
    /// The cost is from the catalogue's prices (the user set none): an estimate.
    pub cost_estimated: bool,
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
        let cost = priced(cfg, msg.model.as_deref().unwrap_or(model), msg.meta.model.as_deref(), &usage);
        let main = msg.main();
        let prompt_flag = msg.prompt_filter.as_ref().and_then(|v| v.as_array()).is_some_and(|a| {
            a.iter().any(|p| p.get("content_filter_results").and_then(|r| r.as_object()).is_some_and(any_flagged))
        });
        Self {
            ttft_ms: msg.timing.ttft_ms,
            total_ms: msg.timing.total_ms,
            tokens_per_s,
            tps_estimated,
            cost: cost.map(|c| c.0),
            cost_estimated: cost.is_some_and(|c| c.1),
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
        let p = Price { input: Some(1.0), cached_input: Some(0.5), output: Some(2.0), ..Price::default() };
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
    fn cache_writes_and_reasoning_are_priced_as_such() {
        let p = Price {
            input: Some(2.0),
            cached_input: Some(0.5),
            output: Some(8.0),
            cache_write: Some(2.5),
            reasoning: Some(10.0),
        };
        let u = UsageView {
            prompt: Some(1_000_000),
            cached: Some(200_000),
            cache_write: Some(300_000),
            completion: Some(400_000),
            reasoning: Some(100_000),
            ..UsageView::default()
        };
        let want = 0.5 * 2.0 + 0.2 * 0.5 + 0.3 * 2.5 + 0.3 * 8.0 + 0.1 * 10.0;
        assert!((cost(&p, &u).unwrap() - want).abs() < 1e-12);
        // Without the extra prices, cache writes and reasoning cost what plain tokens do.
        let plain = Price { input: Some(2.0), output: Some(8.0), ..Price::default() };
        assert!((cost(&plain, &u).unwrap() - (2.0 + 3.2)).abs() < 1e-12);
    }

    #[test]
    fn the_catalogue_prices_a_model_the_user_did_not_and_says_it_estimated() {
        let u = UsageView { prompt: Some(1_000_000), completion: Some(1_000_000), ..UsageView::default() };
        let (c, estimated) = priced(&Config::default(), "gpt-4o-mini", None, &u).unwrap();
        assert!((c - 0.75).abs() < 1e-9 && estimated, "{c}");
        // The served id answers when the requested one is unknown (a replay, a router alias).
        assert!(priced(&Config::default(), "replay", Some("gpt-4o-mini-2024-07-18"), &u).is_some());
        let cfg =
            Config::parse("[models.\"gpt-4o-mini\"]\nprice = { input = 1, output = 1 }\n", std::path::Path::new("c"))
                .unwrap();
        assert_eq!(priced(&cfg, "gpt-4o-mini", None, &u), Some((2.0, false)));
        assert_eq!(money_label(0.5, true), "~$0.5000");
        assert_eq!(priced(&Config::default(), "demo", None, &u), None);
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
