//! The turn engine: the rules of a turn that asks for tools, written once for every driver (the
//! headless runner as a plain loop, the chat screen and each compare column by feeding it
//! replies). It decides, after each reply, whether the turn is over or which of the reply's
//! calls run, need the user, or are refused; it counts rounds against the step limit and keeps
//! the usage of every request of the turn. It performs no I/O: running the approved calls and
//! sending the next request are the driver's.
//!
//! What is sent back to the model for calls that did not run (and arguments a strict server
//! would reject) is `request.rs`'s, which repairs any history, stored or live, the same way.

use super::message::{Message, MessageStatus, ToolCall, ToolStatus};
use super::tool_loop::{Gate, ToolMode, gate, refusal_output, spec_for};
use super::usage::UsageView;
use crate::tools::Registry;
use serde_json::{Value, json};

/// How a turn ended, as a script reads it from the result line's `turn.stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStop {
    /// The model answered without asking for tools.
    Answer,
    /// The answer was cut by the token limit (`finish_reason: length`), with no tool calls.
    Length,
    /// The provider's content filter stopped the answer (`finish_reason: content_filter`).
    ContentFilter,
    /// The model still asked for tools after the step limit.
    StepLimit,
    /// The reply was cut (token limit, content filter) with tool calls in it: none ran.
    CutCall,
    /// Tools are off and the model asked for one anyway: none ran.
    ToolsOff,
    /// The reply failed (HTTP error, error frame, dropped or stalled stream).
    Error,
    /// The user stopped it.
    Cancelled,
}

impl TurnStop {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Answer => "answer",
            Self::Length => "length",
            Self::ContentFilter => "content_filter",
            Self::StepLimit => "step_limit",
            Self::CutCall => "cut_call",
            Self::ToolsOff => "tools_off",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// The user's tool policy for a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnPolicy {
    pub mode: ToolMode,
    /// `--yes`: approve every call that may be approved at all.
    pub yes: bool,
    /// Round trips answered with tool results before the turn stops.
    pub step_limit: usize,
    /// Whether someone can be asked (the chat screen); headless refuses what needs asking.
    pub interactive: bool,
}

/// What happens to one call of a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run it now.
    Run,
    /// Ask the user first; `paths` are the resolved paths outside the workspace (or holding
    /// secrets) it would touch, which the modal must name.
    Ask { paths: Vec<crate::tools::workspace::PathNeed> },
    /// Settled without running: the call already carries its status and output.
    Settled,
}

/// What the driver does after a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// The turn is over; `notice` says why when it is not a plain answer.
    Stop { stop: TurnStop, notice: Option<String> },
    /// One decision per call of the reply, in order: run or ask, then answer every call and
    /// send the next request.
    Settle(Vec<Decision>),
}

/// One turn's running account: rounds answered and the usage of every request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnAccount {
    /// Requests sent in this turn so far (one per reply).
    pub requests: usize,
    /// Rounds of tool results sent back.
    pub rounds: usize,
    /// The usage each request's reply carried, in order (`None`: the provider sent none).
    pub usages: Vec<Option<Value>>,
    /// How the turn ended, once it has.
    pub stop: Option<TurnStop>,
    /// The server seemed to ignore the tools it was sent (the first request that showed it).
    pub tools_ignored: Option<super::tools_ignored::ToolsIgnored>,
}

impl TurnAccount {
    /// A reply of this turn ended (any way). Records its usage, marks the calls that will not
    /// run (with why, for the model and the user) and says what comes next.
    pub fn after_reply(
        &mut self,
        policy: &TurnPolicy,
        reply: &mut Message,
        registry: &Registry,
        session_approved: &dyn Fn(&str) -> bool,
    ) -> Next {
        self.requests += 1;
        self.usages.push(reply.usage.clone());
        if self.tools_ignored.is_none() {
            self.tools_ignored = super::tools_ignored::check(&offered(policy.mode, registry), reply.usage.as_ref());
        }
        let has_calls = !reply.main().tool_calls.is_empty();
        let (stop, why) = match stop_reason(policy, reply, self.rounds) {
            Some(s) => s,
            None => {
                self.rounds += 1;
                let decisions = reply
                    .main_mut()
                    .tool_calls
                    .iter_mut()
                    .map(|c| decide(policy, c, registry, session_approved))
                    .collect();
                return Next::Settle(decisions);
            }
        };
        self.stop = Some(stop);
        if has_calls {
            settle_unrun(reply, ToolStatus::Skipped, &refusal_output(&why));
            reply.revision += 1;
        }
        // A cut or filtered answer says so on the message itself (its finish reason), which each
        // driver shows its own way: the chat screen on the message, headless on stderr.
        let notice = match stop {
            Stop::Answer | Stop::Length | Stop::ContentFilter | Stop::Error | Stop::Cancelled => None,
            Stop::StepLimit | Stop::CutCall | Stop::ToolsOff => Some(why),
        };
        Next::Stop { stop, notice }
    }

    /// The turn was stopped from outside (the user cancelled between requests).
    pub fn cancel(&mut self) {
        self.stop = Some(TurnStop::Cancelled);
    }

    /// The usage of the whole turn: every request's counts added up, and each request's own
    /// figures under `requests` when there was more than one. `None` when no request had usage.
    #[must_use]
    pub fn usage(&self) -> Option<Value> {
        let sent: Vec<&Value> = self.usages.iter().flatten().collect();
        match sent.as_slice() {
            [] => None,
            [one] if self.usages.len() == 1 => Some(UsageView::result_json(one)),
            _ => {
                let mut total = UsageView::default();
                for u in &sent {
                    total.add(&UsageView::from_raw(u));
                }
                let mut out = total.counts_json();
                let each: Vec<Value> =
                    self.usages.iter().map(|u| u.as_ref().map_or(Value::Null, UsageView::result_json)).collect();
                out.insert("requests".into(), Value::Array(each));
                Some(Value::Object(out))
            }
        }
    }

    /// Every request's usage added up, read from what the providers sent (not from the result
    /// line's shape, which moves details such as cached tokens to the top): what a cost is
    /// computed from. `None` when no request carried usage.
    #[must_use]
    pub fn usage_view(&self) -> Option<UsageView> {
        let mut sent = self.usages.iter().flatten().peekable();
        sent.peek()?;
        let mut total = UsageView::default();
        for u in sent {
            total.add(&UsageView::from_raw(u));
        }
        Some(total)
    }

    /// The result line's `turn` object.
    #[must_use]
    pub fn summary(&self) -> Value {
        let mut out = json!({"requests": self.requests, "tool_rounds": self.rounds,
            "stop": self.stop.map(TurnStop::as_str)});
        if let Some(found) = &self.tools_ignored {
            out["tools_ignored"] = found.json();
        }
        out
    }
}

type Stop = TurnStop;

/// Why the turn stops after `reply`, with the words for the user (and, for calls that do not
/// run, for the model); `None` when its calls go ahead.
fn stop_reason(policy: &TurnPolicy, reply: &Message, rounds: usize) -> Option<(TurnStop, String)> {
    let main = reply.main();
    let calls = &main.tool_calls;
    let names = || calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ");
    Some(match reply.status {
        MessageStatus::Cancelled => (Stop::Cancelled, "the user stopped the reply".into()),
        _ if reply.error.is_some() || reply.status != MessageStatus::Complete => {
            (Stop::Error, "the reply failed before the calls could be trusted".into())
        }
        _ if calls.is_empty() => match main.finish_reason.as_deref() {
            Some("length") => (Stop::Length, String::new()),
            Some("content_filter") => (Stop::ContentFilter, String::new()),
            _ => (Stop::Answer, String::new()),
        },
        _ => match main.finish_reason.as_deref() {
            Some("length") => (
                Stop::CutCall,
                format!(
                    "the reply was cut by the token limit with tool calls in it ({}); none ran — \
                     raise --max-tokens or continue",
                    names()
                ),
            ),
            Some("content_filter") => (
                Stop::CutCall,
                format!("the provider's content filter stopped the reply; its tool calls ({}) did not run", names()),
            ),
            _ if policy.mode == ToolMode::Off => (
                Stop::ToolsOff,
                format!(
                    "the model asked for tools ({}) but tools are off; none ran — turn them on with \
                     --tools auto, or /tools auto on the chat screen",
                    names()
                ),
            ),
            _ if rounds >= policy.step_limit => (
                Stop::StepLimit,
                format!(
                    "stopped after {} tool rounds; the model still asked for tools ({})",
                    policy.step_limit,
                    names()
                ),
            ),
            _ => return None,
        },
    })
}

/// Whether a call's arguments can be run: function calls take a JSON object (or nothing);
/// custom and item calls carry their own text. The error is what the model is told.
fn check_arguments(call: &ToolCall) -> Result<(), String> {
    if !call.kind.is_empty() || call.arguments.trim().is_empty() {
        return Ok(());
    }
    crate::tools::parse_arguments(&call.arguments)
        .map(|_| ())
        .map_err(|e| format!("The call did not run: {e}. Send the call again with valid JSON arguments."))
}

/// Decides one call of a reply whose calls go ahead, settling it when it will not run.
fn decide(policy: &TurnPolicy, call: &mut ToolCall, registry: &Registry, approved: &dyn Fn(&str) -> bool) -> Decision {
    if let Err(e) = check_arguments(call) {
        call.status = ToolStatus::Failed;
        call.output = Some(e);
        return Decision::Settled;
    }
    let paths = registry.paths_needing_approval(&call.kind, &call.name, &call.arguments);
    if !paths.is_empty() {
        if policy.interactive {
            return Decision::Ask { paths };
        }
        let named: Vec<String> = paths.iter().map(|p| format!("{} ({})", p.path.display(), p.why)).collect();
        call.status = ToolStatus::Denied;
        call.output = Some(refusal_output(&format!(
            "it would touch {}, and headless runs never reach outside the workspace or into secrets",
            named.join(", ")
        )));
        return Decision::Settled;
    }
    match gate(policy.mode, spec_for(registry, call).as_ref(), approved(&call.name), policy.yes) {
        Gate::Run => Decision::Run,
        Gate::Ask if policy.interactive => Decision::Ask { paths: Vec::new() },
        Gate::Ask => {
            call.status = ToolStatus::Denied;
            call.output = Some(refusal_output(
                "it needs an approval and no one could give it (palaver ran headless); \
                 run with --yes to approve calls, or --tools auto for read-only tools",
            ));
            Decision::Settled
        }
        Gate::Refuse(why) => {
            call.status = ToolStatus::Denied;
            call.output = Some(refusal_output(&why));
            Decision::Settled
        }
    }
}

/// Marks every call of `reply` without an outcome (or still waiting) as not run.
pub fn settle_unrun(reply: &mut Message, status: ToolStatus, output: &str) {
    for c in &mut reply.main_mut().tool_calls {
        if c.output.is_none() || matches!(c.status, ToolStatus::Running | ToolStatus::AwaitingApproval) {
            c.status = status.clone();
            c.output = Some(output.to_owned());
        }
    }
}

/// The tool messages that answer every call of `reply`, in order.
#[must_use]
pub fn answers(reply: &Message) -> Vec<Message> {
    reply.main().tool_calls.iter().map(Message::answer_to).collect()
}

/// The tool definitions the next request offers: none when tools are off.
#[must_use]
pub fn offered(mode: ToolMode, registry: &Registry) -> Vec<Value> {
    if mode == ToolMode::Off { Vec::new() } else { registry.definitions() }
}

#[cfg(test)]
#[path = "turn_engine_tests.rs"]
mod tests;
