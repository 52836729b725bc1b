//! The tool loop as state: when a reply ends with tool calls, each call is gated (run, ask the
//! user, refuse); approved calls run concurrently in the runner and report back with
//! `ToolMsg::Done`; when every call of the reply is settled the answers are appended and the
//! next request goes out, until the model answers or the step limit is reached. It mirrors the
//! headless `run_turn`, one message at a time. The approval modal's keys live in `approval.rs`.

use super::effect::Effect;
use super::msg::Msg;
use super::overlay::Overlay;
use super::state::State;
use super::transcript::NoticeKind;
use crate::api::Api;
use crate::engine::message::{Message, MessageStatus, ToolCall, ToolStatus};
use crate::engine::tool_loop::{DEFAULT_STEP_LIMIT, Gate, MCP_APPROVE, ToolMode, gate, refusal_output, spec_for};
use crate::tools::{Registry, ToolOutput};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::sync::Arc;

/// What a call that the user cancelled answers the model.
pub const CANCELLED: &str = "The user cancelled this tool call before it finished.";

/// The session's tools, shared with the runner's tasks. Two sets are equal when they are the
/// same registry (it holds running MCP clients, which cannot be compared).
#[derive(Clone, Default)]
pub struct ToolSet(pub Arc<Registry>);

impl PartialEq for ToolSet {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// `--tools` and `--yes` as the app got them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolFlags {
    pub mode: ToolMode,
    pub yes: bool,
}

/// What the tool loop hears back from the outside world.
#[derive(Debug)]
pub enum ToolMsg {
    /// Call `index` of assistant message `id` finished running.
    Done { id: u64, index: usize, output: ToolOutput, duration_ms: u64 },
    /// The MCP servers finished starting: the complete registry, and what went wrong.
    Ready { set: ToolSet, notices: Vec<String> },
    /// Generated images of message `id` were saved: (item index, path), and failures.
    ImagesSaved { id: u64, saved: Vec<(u32, String)>, notices: Vec<String> },
    /// `$EDITOR` finished editing a call's arguments.
    ArgsEdited(Result<String, String>),
    /// The current content of the file call `index` of message `id` would write (`None`: no file).
    FileRead { id: u64, index: usize, content: Result<Option<String>, String> },
    /// The flow export was written (its path), or why not.
    Exported(Result<String, String>),
}

/// What the tool loop asks the runner to do.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolEffect {
    /// Run call `index` of message `id`; answer with `ToolMsg::Done`.
    Run { id: u64, index: usize, call: ToolCall, set: ToolSet },
    /// Stop the running calls of message `id` (their tasks are dropped).
    Cancel { id: u64 },
    /// Save the generated images among these output items; answer with `ToolMsg::ImagesSaved`.
    SaveImages { id: u64, items: Vec<Value> },
    /// Edit arguments in `$VISUAL`/`$EDITOR`; answer with `ToolMsg::ArgsEdited`.
    EditArgs(String),
    /// Read the file a `write_file` call would replace, for the approval diff.
    ReadFile { id: u64, index: usize, path: String },
    /// Copy this request as a `curl` command (the runner knows the endpoint).
    CopyCurl { api: Api, body: Value },
    /// Write the flow of a turn as JSON into the data directory; answer with `ToolMsg::Exported`.
    Export { json: Value },
}

/// The calls of one reply being settled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Turn {
    /// The assistant message whose calls these are.
    pub id: u64,
    /// Calls running, with the app clock when they started.
    pub running: BTreeMap<usize, u64>,
    /// Calls waiting for the user, the front one shown in the modal.
    pub queue: VecDeque<usize>,
}

/// The tool loop's state.
#[derive(Debug)]
pub struct Tools {
    pub set: ToolSet,
    pub flags: ToolFlags,
    /// Round trips answered with tool results before the loop stops.
    pub step_limit: usize,
    /// Tools the user approved for the session.
    pub session: BTreeSet<String>,
    /// The reply whose calls are being settled, if any.
    pub turn: Option<Turn>,
    /// Tool rounds so far in the current turn.
    pub rounds: usize,
    /// Messages whose tool outputs the user expanded.
    pub open: HashSet<u64>,
    /// The approval modal's own state (for the front of the queue).
    pub approval: Option<super::approval::Approval>,
}

impl Default for Tools {
    fn default() -> Self {
        Self {
            set: ToolSet::default(),
            flags: ToolFlags::default(),
            step_limit: DEFAULT_STEP_LIMIT,
            session: BTreeSet::new(),
            turn: None,
            rounds: 0,
            open: HashSet::new(),
            approval: None,
        }
    }
}

impl Tools {
    /// Whether a turn is between requests: calls running or waiting for the user.
    #[must_use]
    pub fn busy(&self) -> bool {
        self.turn.is_some()
    }

    /// Whether something moves by itself (a running tool's elapsed time); waiting for the user
    /// needs no ticks.
    #[must_use]
    pub fn ticking(&self) -> bool {
        self.turn.as_ref().is_some_and(|t| !t.running.is_empty())
    }

    /// Definitions sent with every request.
    #[must_use]
    pub fn definitions(&self) -> Vec<Value> {
        self.set.0.definitions()
    }

    /// When call `index` of message `id` started running, if it is running.
    #[must_use]
    pub fn started(&self, id: u64, index: usize) -> Option<u64> {
        self.turn.as_ref().filter(|t| t.id == id).and_then(|t| t.running.get(&index).copied())
    }

    /// The call waiting in the modal: (message id, call index).
    #[must_use]
    pub fn asking(&self) -> Option<(u64, usize)> {
        let t = self.turn.as_ref()?;
        t.queue.front().map(|&i| (t.id, i))
    }
}

/// Builds the session's registry (built-ins and user tools now, MCP servers in the background)
/// and hands it to the state; problems become notices. Called once by `app::run`.
pub fn setup(state: &mut State, tx: &tokio::sync::mpsc::UnboundedSender<Msg>) {
    let cfg = state.cfg.clone();
    let mut registry = Registry::builtins();
    for n in registry.add_user_tools(&cfg.tools) {
        state.transcript.push_notice(NoticeKind::Error, n);
    }
    state.tools.flags = ToolFlags { mode: state.settings.tools, yes: state.settings.yes };
    state.tools.set = ToolSet(Arc::new(registry.clone()));
    if cfg.mcp.servers.is_empty() {
        return;
    }
    let names: Vec<String> = cfg.mcp.servers.keys().cloned().collect();
    state.transcript.push_notice(NoticeKind::Info, format!("starting MCP servers: {}", names.join(", ")));
    let mcp = cfg.mcp.clone();
    let tx = tx.clone();
    tokio::spawn(async move {
        let notices = registry.add_mcp_servers(&mcp).await;
        let _ = tx.send(Msg::Tools(ToolMsg::Ready { set: ToolSet(Arc::new(registry)), notices }));
    });
}

impl State {
    /// Folds a wire event in, and when it ended the reply, takes the reply's tool calls on.
    pub(crate) fn on_wire_tools(
        &mut self,
        id: u64,
        event: crate::api::client::WireEvent,
        now_ms: u64,
        fx: &mut Vec<Effect>,
    ) {
        let was_live = self.live.as_ref().is_some_and(|l| l.id == id);
        self.on_wire(id, event, now_ms);
        if was_live && self.live.is_none() {
            self.after_reply(id, fx);
        }
    }

    /// A reply ended by itself: save its images, then gate its tool calls (or end the turn).
    pub(crate) fn after_reply(&mut self, id: u64, fx: &mut Vec<Effect>) {
        let Some(m) = self.transcript.message(id) else {
            self.tools.rounds = 0;
            return;
        };
        if has_unsaved_images(m) {
            fx.push(Effect::Tools(ToolEffect::SaveImages { id, items: m.items.clone() }));
        }
        let calls = m.main().tool_calls.clone();
        if m.status != MessageStatus::Complete || m.error.is_some() || calls.is_empty() {
            self.tools.rounds = 0;
            return;
        }
        let flags = self.tools.flags;
        if flags.mode == ToolMode::Off || self.tools.rounds >= self.tools.step_limit {
            let (why, notice) = if flags.mode == ToolMode::Off {
                (
                    "tools are turned off (--tools none)".to_owned(),
                    "tools are off (--tools none): no call ran".to_owned(),
                )
            } else {
                let n = self.tools.step_limit;
                (
                    format!("the tool loop stopped after {n} rounds"),
                    format!("stopped after {n} tool rounds; the model still asked for tools"),
                )
            };
            self.settle_unrun(id, ToolStatus::Skipped, &refusal_output(&why));
            self.answer_calls(id);
            self.tools.rounds = 0;
            self.transcript.push_notice(NoticeKind::Info, notice);
            self.dirty = true;
            return;
        }
        self.tools.rounds += 1;
        self.tools.turn = Some(Turn { id, ..Turn::default() });
        for (i, call) in calls.iter().enumerate() {
            let spec = spec_for(&self.tools.set.0, call);
            let approved = self.tools.session.contains(&call.name);
            match gate(flags.mode, spec.as_ref(), approved, flags.yes) {
                Gate::Run => self.start_call(id, i, fx),
                Gate::Ask => {
                    self.update_call(id, i, |c| c.status = ToolStatus::AwaitingApproval);
                    if let Some(t) = self.tools.turn.as_mut() {
                        t.queue.push_back(i);
                    }
                }
                Gate::Refuse(why) => self.update_call(id, i, |c| {
                    c.status = ToolStatus::Denied;
                    c.output = Some(refusal_output(&why));
                }),
            }
        }
        self.dirty = true;
        self.show_front(fx);
        self.settle(fx);
    }

    /// Changes call `index` of message `id` (and bumps the message's revision).
    pub(crate) fn update_call(&mut self, id: u64, index: usize, f: impl FnOnce(&mut ToolCall)) {
        if let Some(m) = self.transcript.message_mut(id) {
            if let Some(c) = m.main_mut().tool_calls.get_mut(index) {
                f(c);
                m.revision += 1;
                self.dirty = true;
            }
        }
    }

    /// The call `index` of message `id`.
    #[must_use]
    pub fn tool_call(&self, id: u64, index: usize) -> Option<&ToolCall> {
        self.transcript.message(id).and_then(|m| m.main().tool_calls.get(index))
    }

    /// Starts an approved call. Approving an MCP request needs no work: the provider runs it.
    pub(crate) fn start_call(&mut self, id: u64, index: usize, fx: &mut Vec<Effect>) {
        let Some(call) = self.tool_call(id, index).cloned() else { return };
        if call.kind == "mcp_approval" {
            self.update_call(id, index, |c| {
                c.status = ToolStatus::Done;
                c.output = Some(MCP_APPROVE.to_owned());
                c.duration_ms = Some(0);
            });
            return;
        }
        let now = self.now_ms;
        if let Some(t) = self.tools.turn.as_mut().filter(|t| t.id == id) {
            t.running.insert(index, now);
        }
        self.update_call(id, index, |c| c.status = ToolStatus::Running);
        fx.push(Effect::Tools(ToolEffect::Run { id, index, call, set: self.tools.set.clone() }));
    }

    /// When every call of the reply is settled: append the answers and ask the model again.
    pub(crate) fn settle(&mut self, fx: &mut Vec<Effect>) {
        let Some(t) = &self.tools.turn else { return };
        if !t.running.is_empty() || !t.queue.is_empty() {
            return;
        }
        let id = t.id;
        self.tools.turn = None;
        self.close_approval();
        if self.transcript.message(id).is_none() {
            // The transcript changed under the loop (cleared, another conversation): stop here.
            self.tools.rounds = 0;
            return;
        }
        self.answer_calls(id);
        self.start_reply(None, fx);
    }

    /// Appends a tool message answering each call of message `id`.
    fn answer_calls(&mut self, id: u64) {
        let calls = self.transcript.message(id).map(|m| m.main().tool_calls.clone()).unwrap_or_default();
        for call in &calls {
            self.transcript.push_message(Message::answer_to(call));
        }
        self.dirty = true;
    }

    /// Marks every call of message `id` that has no outcome yet with `status` and `output`.
    fn settle_unrun(&mut self, id: u64, status: ToolStatus, output: &str) {
        let now = self.now_ms;
        let started: BTreeMap<usize, u64> =
            self.tools.turn.as_ref().filter(|t| t.id == id).map(|t| t.running.clone()).unwrap_or_default();
        let n = self.tool_call_count(id);
        for i in 0..n {
            let since = started.get(&i).copied();
            self.update_call(id, i, |c| {
                if c.output.is_none() || matches!(c.status, ToolStatus::Running | ToolStatus::AwaitingApproval) {
                    c.status = status.clone();
                    c.output = Some(output.to_owned());
                    if let Some(s) = since {
                        c.duration_ms = Some(now.saturating_sub(s));
                    }
                }
            });
        }
    }

    fn tool_call_count(&self, id: u64) -> usize {
        self.transcript.message(id).map_or(0, |m| m.main().tool_calls.len())
    }

    /// Stops the tool phase of the turn: running calls are dropped, waiting ones denied, and
    /// every call is answered (so the conversation stays well formed for the next prompt).
    pub(crate) fn cancel_tools(&mut self, fx: &mut Vec<Effect>) {
        self.tools.rounds = 0;
        let Some(t) = self.tools.turn.clone() else { return };
        if !t.running.is_empty() {
            fx.push(Effect::Tools(ToolEffect::Cancel { id: t.id }));
        }
        self.settle_unrun(t.id, ToolStatus::Denied, CANCELLED);
        self.tools.turn = None;
        self.close_approval();
        if self.transcript.message(t.id).is_some() {
            self.answer_calls(t.id);
        }
        self.flash("turn cancelled; running tools were stopped");
    }

    /// Opens the modal for the front of the approval queue (or closes it when the queue is empty).
    pub(crate) fn show_front(&mut self, fx: &mut Vec<Effect>) {
        let Some((id, index)) = self.tools.asking() else {
            self.close_approval();
            return;
        };
        if self.tools.approval.as_ref().is_some_and(|a| a.id == id && a.index == index) {
            return;
        }
        self.tools.approval = Some(super::approval::Approval::new(id, index));
        if !self.overlays.iter().any(|o| matches!(o, Overlay::Approval)) {
            self.overlays.push(Overlay::Approval);
        }
        self.dirty = true;
        // A write_file diff needs the file as it is now: the runner reads it.
        if let Some(call) = self.tool_call(id, index) {
            if call.kind.is_empty() && call.name == "write_file" {
                let path = crate::tools::parse_arguments(&call.arguments)
                    .ok()
                    .and_then(|a| a.get("path").and_then(Value::as_str).map(str::to_owned));
                if let Some(path) = path {
                    fx.push(Effect::Tools(ToolEffect::ReadFile { id, index, path }));
                }
            }
        }
    }

    pub(crate) fn close_approval(&mut self) {
        self.tools.approval = None;
        self.overlays.retain(|o| !matches!(o, Overlay::Approval));
    }

    /// Handles what the runner reports for the tool loop.
    pub(crate) fn on_tools_msg(&mut self, msg: ToolMsg, fx: &mut Vec<Effect>) {
        self.dirty = true;
        match msg {
            ToolMsg::Done { id, index, output, duration_ms } => {
                let Some(t) = self.tools.turn.as_mut().filter(|t| t.id == id) else { return };
                if t.running.remove(&index).is_none() {
                    return;
                }
                self.update_call(id, index, |c| {
                    c.status = if output.is_error { ToolStatus::Failed } else { ToolStatus::Done };
                    c.output = Some(output.text);
                    c.duration_ms = Some(duration_ms);
                });
                self.settle(fx);
            }
            ToolMsg::Ready { set, notices } => {
                let n = set.0.specs().len();
                self.tools.set = set;
                for note in notices {
                    self.transcript.push_notice(NoticeKind::Error, note);
                }
                self.transcript.push_notice(NoticeKind::Info, format!("tools ready: {n} available"));
            }
            ToolMsg::ImagesSaved { id, saved, notices } => {
                if let Some(m) = self.transcript.message_mut(id) {
                    for (i, path) in saved {
                        m.item_notes.entry(i).or_default().insert("saved_path".into(), Value::String(path));
                    }
                    m.revision += 1;
                }
                for note in notices {
                    self.transcript.push_notice(NoticeKind::Error, note);
                }
            }
            ToolMsg::ArgsEdited(r) => self.on_args_edited(r),
            ToolMsg::FileRead { id, index, content } => {
                if let Some(a) = self.tools.approval.as_mut().filter(|a| a.id == id && a.index == index) {
                    a.before = Some(content);
                }
            }
            ToolMsg::Exported(r) => match r {
                Ok(path) => self.flash(format!("flow exported to {path}")),
                Err(e) => self.flash_error(format!("cannot export the flow: {e}")),
            },
        }
    }

    /// Expands or folds the tool outputs and item cards of the selected message.
    pub(crate) fn toggle_tool_output(&mut self) {
        let Some(id) = self.selected else { return };
        if !self.tools.open.remove(&id) {
            self.tools.open.insert(id);
        }
    }
}

/// Whether `m` holds a generated image not saved yet.
fn has_unsaved_images(m: &Message) -> bool {
    m.items.iter().enumerate().any(|(i, item)| {
        item.get("type").and_then(Value::as_str) == Some("image_generation_call")
            && item.get("result").and_then(Value::as_str).is_some_and(|r| !r.is_empty())
            && !u32::try_from(i).ok().and_then(|i| m.item_notes.get(&i)).is_some_and(|n| n.contains_key("saved_path"))
    })
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
