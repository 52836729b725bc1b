//! A column's numbers as they stand, finished or still streaming: the engine's `ReplyMetrics`
//! for the latest reply, with elapsed time and an estimated rate while it streams. Only numbers
//! the provider sent or palaver measured; estimates are marked.

use crate::app::State;
use crate::app::compare::Column;
use crate::engine::message::MessageStatus;
use crate::engine::metrics::ReplyMetrics;

/// Where a column's latest reply is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// No reply yet.
    Ready,
    Waiting,
    Streaming,
    Done,
    Cancelled,
    /// Failed or interrupted, with a short reason.
    Failed(String),
}

/// The numbers shown for a column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMetrics {
    pub phase: Phase,
    pub reply: ReplyMetrics,
    /// Total time when finished, time so far while streaming.
    pub elapsed_ms: Option<u64>,
    /// Output tokens: from usage, else the count of deltas (estimated).
    pub output: Option<u64>,
    pub output_estimated: bool,
    pub tool_calls: usize,
}

impl ColumnMetrics {
    #[must_use]
    pub fn of(state: &State, col: &Column) -> Self {
        let Some(m) = col.last_reply() else {
            return Self {
                phase: Phase::Ready,
                reply: ReplyMetrics::default(),
                elapsed_ms: None,
                output: None,
                output_estimated: false,
                tool_calls: 0,
            };
        };
        let mut reply = ReplyMetrics::of(m, &state.cfg, &col.target.model);
        if !m.usage.as_ref().is_some_and(|u| crate::engine::usage::UsageView::from_raw(u).has_counts()) {
            // No usage, no cost: a price times nothing is not "$0".
            reply.cost = None;
        }
        let live_elapsed = col
            .live
            .as_ref()
            .filter(|l| l.id == m.id)
            .and_then(|l| l.started_ms)
            .map(|s| state.now_ms.saturating_sub(s));
        let elapsed_ms = if m.is_live() { live_elapsed } else { m.timing.total_ms };
        if m.is_live() && reply.tokens_per_s.is_none() {
            // Live rate after the first token, from the deltas so far (usage comes at the end).
            if let (Some(ttft), Some(e)) = (m.timing.ttft_ms, elapsed_ms) {
                let span = e.saturating_sub(ttft);
                if span >= 200 && m.timing.deltas > 1 {
                    #[allow(clippy::cast_precision_loss)]
                    let rate = m.timing.deltas as f64 * 1000.0 / span as f64;
                    reply.tokens_per_s = Some(rate);
                    reply.tps_estimated = true;
                }
            }
        }
        let (output, output_estimated) = match reply.usage.completion {
            Some(n) => (Some(n), false),
            None if m.timing.deltas > 0 => (Some(m.timing.deltas), true),
            None => (None, false),
        };
        let phase = match m.status {
            MessageStatus::Waiting => Phase::Waiting,
            MessageStatus::Streaming => Phase::Streaming,
            MessageStatus::Complete => Phase::Done,
            MessageStatus::Cancelled => Phase::Cancelled,
            MessageStatus::Failed | MessageStatus::Interrupted => Phase::Failed(match &m.error {
                Some(e) => match e.status {
                    Some(s) => format!("HTTP {s}"),
                    None => format!("{} error", e.kind),
                },
                None => "failed".to_owned(),
            }),
        };
        Self { phase, reply, elapsed_ms, output, output_estimated, tool_calls: m.main().tool_calls.len() }
    }
}
