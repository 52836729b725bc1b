//! Usage summed over the conversation's replies. Recounted when a reply ends or the transcript
//! changes shape (clear, branch), never per frame, so a long transcript costs nothing to draw.

use super::transcript::Transcript;
use crate::config::Config;
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
    /// Dollars, for the replies whose model has a price (configured, or the catalogue's).
    pub cost: Option<f64>,
    /// Some of that cost is from the catalogue's prices: an estimate.
    pub cost_estimated: bool,
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
            if let Some((c, estimated)) = reply_cost(cfg, m, current_model, &u) {
                out.cost = Some(out.cost.unwrap_or(0.0) + c);
                out.cost_estimated |= estimated;
            }
        }
        (out.prompt, out.completion, out.total) = (sum.prompt, sum.completion, sum.total);
        out
    }
}

/// The cost of reply `m`'s usage `u` at the price of the model that wrote it (configured, else
/// the catalogue's), and whether it is an estimate.
#[must_use]
pub fn reply_cost(cfg: &Config, m: &Message, current_model: &str, u: &UsageView) -> Option<(f64, bool)> {
    let model = m.model.as_deref().unwrap_or(current_model);
    crate::engine::metrics::priced(cfg, model, m.meta.model.as_deref(), u)
}
