//! Usage summed over the conversation's replies. Recounted when a reply ends or the transcript
//! changes shape (clear, branch), never per frame, so a long transcript costs nothing to draw.

use super::transcript::Transcript;
use crate::config::{Config, Price};
use crate::engine::message::{Message, Role};
use crate::engine::usage::UsageView;

/// The conversation's usage, only from numbers providers sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Finished replies in the transcript.
    pub replies: usize,
    /// Of those, the ones that carried usage.
    pub with_usage: usize,
    pub prompt: Option<u64>,
    pub completion: Option<u64>,
    pub total: Option<u64>,
    /// Dollars, for the replies whose model has a configured price.
    pub cost: Option<f64>,
}

impl Totals {
    #[must_use]
    pub fn count(t: &Transcript, cfg: &Config, current_model: &str) -> Self {
        let mut out = Self::default();
        let add = |acc: &mut Option<u64>, v: Option<u64>| {
            if let Some(v) = v {
                *acc = Some(acc.unwrap_or(0) + v);
            }
        };
        for m in t.cells.iter().filter_map(|c| c.message()).filter(|m| m.role() == Role::Assistant && !m.is_live()) {
            out.replies += 1;
            let Some(raw) = &m.usage else { continue };
            let u = UsageView::from_raw(raw);
            out.with_usage += 1;
            add(&mut out.prompt, u.prompt);
            add(&mut out.completion, u.completion);
            add(&mut out.total, u.total);
            if let Some(c) = price(cfg, m, current_model).and_then(|p| cost(&p, &u)) {
                out.cost = Some(out.cost.unwrap_or(0.0) + c);
            }
        }
        out
    }
}

/// The configured price of the model that wrote `m`.
#[must_use]
pub fn price(cfg: &Config, m: &Message, current_model: &str) -> Option<Price> {
    let model = m.model.as_deref().unwrap_or(current_model);
    cfg.model_facts(model).and_then(|f| f.price.clone())
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_uses_cached_price() {
        let p = Price { input: Some(1.0), cached_input: Some(0.5), output: Some(2.0) };
        let u = UsageView {
            prompt: Some(1_000_000),
            cached: Some(500_000),
            completion: Some(1_000_000),
            ..UsageView::default()
        };
        assert_eq!(cost(&p, &u), Some(0.5 + 0.25 + 2.0));
        assert_eq!(cost(&Price::default(), &u), None);
    }
}
