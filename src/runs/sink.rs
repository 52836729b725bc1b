//! Where a turn reports what happens while it runs: the command line prints it (text or
//! `--json` lines), a prompt-set cell keeps quiet and only counts retries.

use crate::api::event::StreamEvent;
use crate::engine::message::ToolCall;

/// Told about each retry (attempt, wait in ms): a prompt-set run pauses the provider's queue
/// with it instead of a line on stderr.
pub type RetryHook = std::sync::Arc<dyn Fn(u32, u64) + Send + Sync>;

/// What the turn loop reports, in the order it happens.
pub trait TurnSink {
    /// A domain event of the reply as it arrives.
    fn event(&mut self, ev: &StreamEvent);
    /// A tool call's outcome, once its round has run.
    fn tool_result(&mut self, call: &ToolCall);
    /// The client waits `wait_ms` before attempt `attempt`, for `reason`.
    fn retry(&mut self, attempt: u32, wait_ms: u64, reason: &str);
    /// A note for the user (not sanitised yet: the sink does it where it prints).
    fn notice(&mut self, text: &str);
    /// The end of a burst of events: whatever is buffered goes out.
    fn flush(&mut self);
    /// Where the MCP calls of the round about to run report their progress, if this sink
    /// shows it (the calls run on other tasks, so it is a shared callback, not `&mut self`).
    fn progress_hook(&mut self) -> Option<crate::tools::mcp::live::ProgressSink> {
        None
    }
}
