//! The tool loop's decisions and execution, shared by the headless runner and the TUI: which
//! calls may run without asking, and running a batch of approved calls concurrently.

use super::message::{ToolCall, ToolStatus};
use crate::api::limits::ImageBudget;
pub use crate::engine::request::MCP_APPROVE;
use crate::tools::items;
use crate::tools::{Approval, Registry, ToolOutput, ToolSpec};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Default number of model round trips answered with tool results in one turn.
pub const DEFAULT_STEP_LIMIT: usize = 10;
/// Default time a single tool may run.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// `--tools`: whether tools are offered and how their calls are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolMode {
    /// Offer tools; run read-only ones, ask for the rest.
    Auto,
    /// Offer tools; ask for every call.
    Ask,
    /// Offer no tool; a call that arrives anyway ends the turn unrun.
    #[default]
    Off,
}

impl ToolMode {
    /// `/tools` and `tools =` words: `none` and `off` both turn tools off.
    #[must_use]
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "auto" | "on" => Some(Self::Auto),
            "ask" => Some(Self::Ask),
            "none" | "off" => Some(Self::Off),
            _ => None,
        }
    }

    /// The word the status bar and `/tools` use.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Ask => "ask",
            Self::Off => "off",
        }
    }
}

/// What to do with one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Run,
    Ask,
    Refuse(String),
}

/// Decides whether a call runs, needs the user, or is refused. `approved` is true when the user
/// approved this tool for the session; `yes` is `--yes`.
#[must_use]
pub fn gate(mode: ToolMode, spec: Option<&ToolSpec>, approved: bool, yes: bool) -> Gate {
    if mode == ToolMode::Off {
        return Gate::Refuse("tools are turned off".into());
    }
    // An unknown tool runs: the registry answers the model with an error naming the real tools.
    let Some(spec) = spec else { return Gate::Run };
    if yes {
        return Gate::Run;
    }
    match (mode, spec.approval) {
        (ToolMode::Auto, Approval::Never) => Gate::Run,
        (_, Approval::Always) => Gate::Ask,
        (_, _) if approved => Gate::Run,
        _ => Gate::Ask,
    }
}

/// The spec that gates a call: the registry's for function and custom calls, a pseudo-spec
/// that always asks for shell, patch and MCP-approval calls.
#[must_use]
pub fn spec_for(registry: &Registry, call: &ToolCall) -> Option<ToolSpec> {
    match call.kind.as_str() {
        "" | "custom" => registry.get(&call.name).cloned(),
        kind => items::spec_for_kind(kind, &call.name),
    }
}

/// Runs one approved call of any kind. `approved` are the resolved paths outside the workspace
/// (or holding secrets) the user approved for this very call; any other such path is refused.
/// An output that holds a credential comes back held ([`crate::tools::secret_hold`]): the
/// model gets a refusal unless the user approves sending the real output.
pub async fn execute(registry: &Registry, call: &ToolCall, timeout: Duration, approved: &[PathBuf]) -> ToolOutput {
    // Shell and patch calls do not go through the registry's own redaction: every kind is
    // redacted here, before the shape scan (a known key redacted is no longer held back).
    let out = execute_unscanned(registry, call, timeout, approved).await.redacted();
    if call.kind == "mcp_approval" {
        return out;
    }
    crate::tools::secret_hold::hold(registry.workspace(), &call.name, &call.arguments, out)
}

async fn execute_unscanned(
    registry: &Registry,
    call: &ToolCall,
    timeout: Duration,
    approved: &[PathBuf],
) -> ToolOutput {
    // A registry of recorded outputs answers every kind of call from them: nothing runs.
    if let Some(recorded) = registry.recordings() {
        return recorded.answer(&call.name, &call.arguments);
    }
    let ws = registry.workspace();
    match call.kind.as_str() {
        "shell" | "local_shell" => items::run_shell_in(ws, &call.kind, &call.arguments, timeout, approved).await,
        "apply_patch" => items::apply_patch_in(ws, &call.arguments, approved),
        // Approving an MCP call means answering "yes"; the provider runs it.
        "mcp_approval" => ToolOutput::ok(MCP_APPROVE),
        "custom" => {
            // A custom tool sends plain text; registry tools take a JSON object.
            let args = if serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&call.arguments).is_ok() {
                call.arguments.clone()
            } else {
                serde_json::json!({ "input": call.arguments }).to_string()
            };
            registry.execute_with(&call.name, &args, timeout, approved).await
        }
        _ => registry.execute_with(&call.name, &call.arguments, timeout, approved).await,
    }
}

/// Calls of one round running at once: enough to overlap slow tools, few enough that what
/// they hold at a time stays small (2,000 file reads in one reply no longer run together).
pub const CONCURRENT_CALLS: usize = 4;

/// Runs calls concurrently with no path outside the workspace approved (headless), filling in
/// output, status and duration.
pub async fn run_calls(registry: &Registry, calls: &mut [ToolCall], timeout: Duration) {
    let images = &mut ImageBudget::new(crate::api::limits::Limits::default());
    run_calls_until(registry, calls, timeout, usize::MAX, images, std::future::pending()).await;
}

/// [`run_calls`], at most [`CONCURRENT_CALLS`] at a time, with `round_bytes` of output for the
/// whole round (`limits.round_tool_output_bytes`): an output that would pass it is cut there,
/// and calls not yet started once it is spent do not run; both say so, naming the limit.
/// The images the calls return are kept, as they finish, within `images` (the reply's image
/// budget, see [`crate::engine::images::reply_image_budget`]); those past it are dropped and said.
/// When `cancel` resolves, running calls are dropped (their process groups ended) and the
/// calls that finished keep their outputs; returns false then, with the others left unsettled.
pub async fn run_calls_until(
    registry: &Registry,
    calls: &mut [ToolCall],
    timeout: Duration,
    round_bytes: usize,
    images: &mut ImageBudget,
    cancel: impl std::future::Future<Output = ()>,
) -> bool {
    use futures_util::StreamExt;
    // Atomic rather than a `Cell` so the turn's future is `Send` (prompt-set cells run as tasks).
    let spent = std::sync::atomic::AtomicUsize::new(0);
    let spent = &spent;
    let get = |s: &std::sync::atomic::AtomicUsize| s.load(std::sync::atomic::Ordering::Relaxed);
    let jobs = calls.iter().enumerate().map(|(i, c)| async move {
        if get(spent) >= round_bytes {
            return (i, None);
        }
        let started = Instant::now();
        // Progress reports of an MCP call name the call (headless prints them as events).
        let mut out = crate::tools::mcp::live::for_call(c.id.clone(), execute(registry, c, timeout, &[])).await;
        let room = round_bytes.saturating_sub(get(spent));
        if out.text.len() > room {
            let mut end = room;
            while !out.text.is_char_boundary(end) {
                end -= 1;
            }
            out.text.truncate(end);
            out.text.push_str(&format!("\n[{}]", round_note(round_bytes)));
        }
        spent.store(get(spent).saturating_add(out.text.len()), std::sync::atomic::Ordering::Relaxed);
        (i, Some((out, started.elapsed().as_millis() as u64)))
    });
    // Collected so the stream's type holds the futures, not the closure (a closure over
    // borrowed calls inside the stream keeps the turn's future from being `Send`).
    let jobs: Vec<_> = jobs.collect();
    let mut done = futures_util::stream::iter(jobs).buffer_unordered(CONCURRENT_CALLS);
    let mut results = Vec::new();
    let mut finished = true;
    tokio::pin!(cancel);
    loop {
        tokio::select! {
            biased;
            () = &mut cancel => {
                finished = false;
                break;
            }
            r = done.next() => match r {
                Some(mut r) => {
                    if let (_, Some((out, _))) = &mut r {
                        out.keep_images_within(images);
                    }
                    results.push(r);
                }
                None => break,
            },
        }
    }
    drop(done);
    for (i, result) in results {
        let call = &mut calls[i];
        match result {
            Some((out, ms)) => {
                // A held output (it holds secrets) is never sent from here: no one can approve it.
                call.status = match (&out.held, out.is_error) {
                    (Some(_), _) => ToolStatus::Denied,
                    (None, true) => ToolStatus::Failed,
                    (None, false) => ToolStatus::Done,
                };
                call.output = Some(out.text);
                call.images = super::attachment::from_tool_images(&call.name, out.images);
                call.duration_ms = Some(ms);
            }
            None => {
                call.status = ToolStatus::Failed;
                call.output = Some(format!("The call did not run: {}.", round_note(round_bytes)));
            }
        }
    }
    finished
}

/// Why a round's output stops: the limit, and how to raise it.
fn round_note(round_bytes: usize) -> String {
    format!(
        "the tool output of this round reached the limit round_tool_output_bytes = {round_bytes} \
         (raise it in the provider's profile: limits = {{ round_tool_output_bytes = … }})"
    )
}

/// The text sent back to the model for a call that did not run.
#[must_use]
pub fn refusal_output(reason: &str) -> String {
    format!("The user did not run this tool: {reason}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::Builtin;

    #[test]
    fn gates() {
        let read = Builtin::ReadFile.spec();
        let write = Builtin::WriteFile.spec();
        assert_eq!(gate(ToolMode::Auto, Some(&read), false, false), Gate::Run);
        assert_eq!(gate(ToolMode::Auto, Some(&write), false, false), Gate::Ask);
        assert_eq!(gate(ToolMode::Auto, Some(&write), true, false), Gate::Ask);
        assert_eq!(gate(ToolMode::Auto, Some(&write), false, true), Gate::Run);
        assert_eq!(gate(ToolMode::Ask, Some(&read), false, false), Gate::Ask);
        assert_eq!(gate(ToolMode::Ask, Some(&read), true, false), Gate::Run);
        assert!(matches!(gate(ToolMode::Off, Some(&read), true, true), Gate::Refuse(_)));
    }
}
