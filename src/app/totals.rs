//! Usage summed over the conversation's replies. Recounted when a reply ends or the transcript
//! changes shape (clear, branch), never per frame, so a long transcript costs nothing to draw.

use super::transcript::Transcript;
use crate::config::{Config, Price};
use crate::engine::message::{Message, Role};
pub use crate::engine::metrics::cost;
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
        let mut sum = UsageView::default();
        for m in t.cells.iter().filter_map(|c| c.message()).filter(|m| m.role() == Role::Assistant && !m.is_live()) {
            out.replies += 1;
            let Some(raw) = &m.usage else { continue };
            let u = UsageView::from_raw(raw);
            if !u.has_counts() {
                continue; // a server's timings alone are not usage
            }
            out.with_usage += 1;
            sum.add(&u);
            if let Some(c) = price(cfg, m, current_model).and_then(|p| cost(&p, &u)) {
                out.cost = Some(out.cost.unwrap_or(0.0) + c);
            }
        }
        (out.prompt, out.completion, out.total) = (sum.prompt, sum.completion, sum.total);
        out
    }
}

/// The configured price of the model that wrote `m`.
#[must_use]
pub fn price(cfg: &Config, m: &Message, current_model: &str) -> Option<Price> {
    let model = m.model.as_deref().unwrap_or(current_model);
    cfg.model_facts(model).and_then(|f| f.price.clone())
}
