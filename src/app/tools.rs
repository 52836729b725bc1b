//! The tool loop's state and vocabulary: the session's registry, the replies whose calls are
//! being settled (one per owner — the chat, or a compare column), the approval modal's state,
//! and the `ToolMsg`/`ToolEffect` the runner speaks. The loop itself is `tool_turns.rs`; the
//! approval modal's keys are `approval.rs`.

use super::effect::Effect;
use super::msg::Msg;
use super::state::State;
use super::transcript::NoticeKind;
use crate::api::Api;
use crate::engine::message::{Message, ToolCall, ToolStatus};
use crate::engine::tool_loop::{DEFAULT_STEP_LIMIT, ToolMode};
use crate::engine::turn_engine::{TurnAccount, offered};
use crate::tools::mcp::live::{ListKind, McpProgress, Relisted};
use crate::tools::workspace::PathNeed;
use crate::tools::{Registry, ToolOutput};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::sync::Arc;

/// What a call that the user cancelled answers the model.
pub const CANCELLED: &str = "The user cancelled this tool call before it finished.";

/// Whose conversation a tool call belongs to: the chat, or column `column` (its position, which
/// never changes while the compare is open) of compare `generation`. Message ids are handed out
/// per transcript, so a call is only known by its owner, message id and call index together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Owner {
    #[default]
    Chat,
    Column {
        generation: u64,
        column: usize,
    },
}

/// The session's tools, shared with the runner's tasks. Two sets are equal when they are the
/// same registry (it holds running MCP clients, which cannot be compared).
#[derive(Clone, Default)]
pub struct ToolSet(pub Arc<Registry>);

impl PartialEq for ToolSet {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl ToolSet {
    /// The same tools with commands under `policy`: this set when it already is, else a copy.
    #[must_use]
    pub fn with_sandbox(&self, policy: crate::tools::sandbox::Policy) -> Self {
        if self.0.workspace().sandbox() == &policy {
            return self.clone();
        }
        let mut registry = (*self.0).clone();
        registry.set_sandbox(policy);
        Self(Arc::new(registry))
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
    /// Call `index` of assistant message `id` of `owner` finished running.
    Done { owner: Owner, id: u64, index: usize, output: ToolOutput, duration_ms: u64 },
    /// The MCP servers finished starting: the complete registry, and what went wrong.
    Ready { set: ToolSet, notices: Vec<String> },
    /// Generated images of message `id` of `owner` were saved: (item index, path), and failures.
    ImagesSaved { owner: Owner, id: u64, saved: Vec<(u32, String)>, notices: Vec<String> },
    /// `$EDITOR` finished editing a call's arguments.
    ArgsEdited(Result<String, String>),
    /// The current content of the file call `index` of message `id` of `owner` would write
    /// (`None`: no file).
    FileRead { owner: Owner, id: u64, index: usize, content: Result<Option<String>, String> },
    /// The flow export was written (its path), or why not.
    Exported(Result<String, String>),
    /// The conversation page was written (its path) or not (why).
    PageExported(Result<String, String>),
    /// An MCP prompt asked for with `ToolEffect::GetPrompt` arrived, or why not.
    Prompt(Result<crate::tools::mcp::prompts::PromptText, String>),
    /// An MCP request (reading a resource) failed: why, from the server (unsanitised).
    McpFailed(String),
    /// The MCP server running call `index` of message `id` of `owner` reported its progress.
    Progress { owner: Owner, id: u64, index: usize, progress: McpProgress },
    /// MCP server `server` asks the user to fill in `form`; the answer goes to `reply`.
    Elicit { server: String, form: crate::tools::mcp::elicit::Form, reply: crate::tools::mcp::elicit::Reply },
    /// An MCP server allowed to sample asks to use the model; the answer goes to `reply`.
    Sample { request: crate::tools::mcp::sample::SampleRequest, reply: crate::tools::mcp::sample::SampleReply },
    /// The sampling request of `server` the user approved ran (what it answered and cost), or
    /// why not.
    Sampled { server: String, result: Result<crate::engine::sampling::SampleRun, String> },
    /// MCP server `server` said its `kind` list changed.
    ListChanged { server: String, kind: ListKind },
    /// MCP server `server`'s `kind` list, listed again after it changed, or why not.
    Relisted { server: String, kind: ListKind, result: Result<Relisted, String> },
}

/// What the tool loop asks the runner to do.
#[derive(Debug, Clone, PartialEq)]
// One effect per tool run: their size does not matter, and boxing the call would touch every
// place that makes or reads one.
#[allow(clippy::large_enum_variant)]
pub enum ToolEffect {
    /// Run call `index` of message `id` of `owner`, reaching the `approved` paths outside the
    /// workspace and no other; answer with `ToolMsg::Done`.
    Run { owner: Owner, id: u64, index: usize, call: ToolCall, set: ToolSet, approved: Vec<std::path::PathBuf> },
    /// Get MCP prompt `prompt` of `server` in `set` with `args`; answer with `ToolMsg::Prompt`.
    GetPrompt { set: ToolSet, server: String, prompt: String, args: serde_json::Map<String, Value> },
    /// Send the user's answer to a form back to the server that asked for it.
    Answer { reply: crate::tools::mcp::elicit::Reply, answer: crate::tools::mcp::elicit::Answer },
    /// Run a sampling request the user approved: `body` to the current endpoint on `api`
    /// (`model` names it when the provider does not); the reply goes to `reply`, and
    /// `ToolMsg::Sampled` tells the state.
    Sample { server: String, api: Api, model: String, body: Value, reply: crate::tools::mcp::sample::SampleReply },
    /// Answer a sampling request without running it (the user declined).
    SampleAnswer {
        reply: crate::tools::mcp::sample::SampleReply,
        answer: Result<crate::tools::mcp::sample::Sampled, String>,
    },
    /// List `kind` of MCP server `server` in `set` again; answer with `ToolMsg::Relisted`.
    Relist { set: ToolSet, server: String, kind: ListKind },
    /// Read resource `uri` of `server` in `set`; each content arrives as `AttachMsg::Loaded`
    /// (a chip named `name`), a failure as `ToolMsg::McpFailed`.
    ReadResource { set: ToolSet, server: String, uri: String, name: String },
    /// Stop the running calls of message `id` of `owner` (their tasks are dropped).
    Cancel { owner: Owner, id: u64 },
    /// Save the generated images among these output items; answer with `ToolMsg::ImagesSaved`.
    SaveImages { owner: Owner, id: u64, items: Vec<Value> },
    /// Edit arguments in `$VISUAL`/`$EDITOR`; answer with `ToolMsg::ArgsEdited`.
    EditArgs(String),
    /// Read the file a `write_file` call would replace, for the approval diff.
    ReadFile { owner: Owner, id: u64, index: usize, path: String },
    /// Copy this request as a `curl` command (the runner knows the endpoint).
    CopyCurl { provider: String, api: Api, body: Value },
    /// Write the flow of a turn as JSON into the data directory; answer with `ToolMsg::Exported`.
    Export { json: Value },
    /// Write the conversation as an HTML page (into `<data dir>/exports/` unless a path is
    /// given); answer with `ToolMsg::PageExported`.
    ExportPage { export: Box<crate::store::export::Export>, path: Option<String> },
}

/// The calls of one reply being settled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Turn {
    /// Whose conversation the reply is in.
    pub owner: Owner,
    /// Tool output bytes this round has kept (against `round_tool_output_bytes`).
    pub spent: usize,
    /// The assistant message whose calls these are.
    pub id: u64,
    /// Calls running, with the app clock when they started.
    pub running: BTreeMap<usize, u64>,
    /// Calls waiting for the user, the front one shown in the modal.
    pub queue: VecDeque<usize>,
    /// Resolved paths outside the workspace (or holding secrets) a waiting call would touch,
    /// by call index: the modal names them, and approving grants exactly these.
    pub paths: BTreeMap<usize, Vec<PathNeed>>,
    /// Outputs that hold secrets, by call index, with how long the call took: the call waits
    /// in the queue, and approving it sends this output (the tool does not run again).
    pub held: BTreeMap<usize, (ToolOutput, u64)>,
    /// Calls the user chose to run outside the sandbox (that call only).
    pub outside: BTreeSet<usize>,
}

/// The tool loop's state.
#[derive(Debug)]
pub struct Tools {
    pub set: ToolSet,
    pub flags: ToolFlags,
    /// Round trips answered with tool results before an owner's loop stops.
    pub step_limit: usize,
    /// Tools the user approved for the session (for every owner).
    pub session: BTreeSet<String>,
    /// Replies whose calls are being settled, at most one per owner, oldest first: the modal
    /// asks for the calls of the oldest one first.
    pub turns: Vec<Turn>,
    /// Each owner's current turn as the turn engine counts it (rounds, requests, usage).
    pub accounts: BTreeMap<Owner, TurnAccount>,
    /// Chat messages whose tool outputs the user expanded.
    pub open: HashSet<u64>,
    /// The approval modal's own state (for the call `asking` names).
    pub approval: Option<super::approval::Approval>,
    /// What the command sandbox can do here, probed when the session's tools are set up
    /// (`None` in a bare state: the modal names the mode alone).
    pub sandbox_support: Option<crate::tools::sandbox::Support>,
    /// The last progress report of each running MCP call, by (owner, message id, call index).
    pub progress: BTreeMap<(Owner, u64, usize), McpProgress>,
    /// Counts progress reports: a card showing one is drawn anew when it moves.
    pub progress_rev: u64,
    /// Forms MCP servers asked for, the front one shown (`Overlay::Elicit`).
    pub forms: VecDeque<super::elicit::ElicitForm>,
    /// Sampling requests waiting for the user, the front one shown (`Overlay::Sample`).
    pub samples: VecDeque<super::sample::SampleAsk>,
    /// Tab cycling through resource URIs after `/resource `: what was typed, the candidate
    /// shown, and the draft that shows it (Tab goes on only while the draft is still that).
    pub resource_tab: Option<(String, usize, String)>,
    /// Where the server seemed to ignore the tools it was sent ([`State::tools_ignored_key`]):
    /// said once each, and the status bar says `ignored?` while the chat talks to one.
    pub ignored: BTreeSet<String>,
}

impl Default for Tools {
    fn default() -> Self {
        Self {
            set: ToolSet::default(),
            flags: ToolFlags::default(),
            step_limit: DEFAULT_STEP_LIMIT,
            session: BTreeSet::new(),
            turns: Vec::new(),
            accounts: BTreeMap::new(),
            open: HashSet::new(),
            approval: None,
            sandbox_support: None,
            progress: BTreeMap::new(),
            progress_rev: 0,
            forms: VecDeque::new(),
            samples: VecDeque::new(),
            resource_tab: None,
            ignored: BTreeSet::new(),
        }
    }
}

impl Tools {
    /// The last progress report of call `index` of message `id` of `owner`, while it runs.
    #[must_use]
    pub fn progress_of(&self, owner: Owner, id: u64, index: usize) -> Option<&McpProgress> {
        self.progress.get(&(owner, id, index)).filter(|_| self.started(owner, id, index).is_some())
    }

    /// Whether the chat's turn is between requests: calls running or waiting for the user.
    #[must_use]
    pub fn busy(&self) -> bool {
        self.turn(Owner::Chat).is_some()
    }

    /// The reply of `owner` whose calls are being settled.
    #[must_use]
    pub fn turn(&self, owner: Owner) -> Option<&Turn> {
        self.turns.iter().find(|t| t.owner == owner)
    }

    pub fn turn_mut(&mut self, owner: Owner) -> Option<&mut Turn> {
        self.turns.iter_mut().find(|t| t.owner == owner)
    }

    /// Tool rounds so far in `owner`'s current turn.
    #[must_use]
    pub fn rounds(&self, owner: Owner) -> usize {
        self.accounts.get(&owner).map_or(0, |a| a.rounds)
    }

    /// Whether something moves by itself (a running tool's elapsed time); waiting for the user
    /// needs no ticks.
    #[must_use]
    pub fn ticking(&self) -> bool {
        self.turns.iter().any(|t| !t.running.is_empty())
    }

    /// Definitions sent with every request, the chat's and the columns': none when tools are off.
    #[must_use]
    pub fn definitions(&self) -> Vec<Value> {
        offered(self.flags.mode, &self.set.0)
    }

    /// When call `index` of message `id` of `owner` started running, if it is running.
    #[must_use]
    pub fn started(&self, owner: Owner, id: u64, index: usize) -> Option<u64> {
        self.turn(owner).filter(|t| t.id == id).and_then(|t| t.running.get(&index).copied())
    }

    /// The call the modal asks about: (owner, message id, call index).
    #[must_use]
    pub fn asking(&self) -> Option<(Owner, u64, usize)> {
        self.turns.iter().find_map(|t| t.queue.front().map(|&i| (t.owner, t.id, i)))
    }

    /// Calls waiting for the user, every owner's.
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.turns.iter().map(|t| t.queue.len()).sum()
    }
}

/// Builds the session's registry (built-ins and user tools now, MCP servers in the background)
/// and hands it to the state; problems become notices. Called once by `app::run`.
pub fn setup(state: &mut State, tx: &tokio::sync::mpsc::UnboundedSender<Msg>) {
    let cfg = state.cfg.clone();
    let paths = crate::config::Paths::from_env();
    let (mut registry, notices) = crate::tools::setup::builtins(&cfg, &paths).unwrap_or_else(|e| {
        (Registry::builtins(), vec![format!("{e}; the built-in tools act in the working directory")])
    });
    for n in notices {
        state.transcript.push_notice(NoticeKind::Error, n);
    }
    // Commands run in the session provider's sandbox (each call in its owner's provider's, see
    // `owner_sandbox`); where it cannot be had, the user hears it before the first command.
    let profile = cfg.providers.get(&state.target.provider);
    let policy = crate::tools::sandbox::Policy::configured(
        profile.and_then(|p| p.sandbox),
        profile.and_then(|p| p.sandbox_network),
    );
    state.tools.sandbox_support = Some(crate::tools::sandbox::support());
    if let Some(n) = crate::tools::sandbox::notice(&policy) {
        state.transcript.push_notice(NoticeKind::Error, n);
    }
    registry.set_sandbox(policy);
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
        let set = ToolSet(Arc::new(registry));
        let _ = tx.send(Msg::Tools(ToolMsg::Ready { set: set.clone(), notices }));
        // From now on (after `Ready`, so the state has the servers) a server's list changes
        // reach the state, which has them listed again; changes heard earlier come at once.
        for client in set.0.mcp_clients() {
            let (sample_tx, tx, server) = (tx.clone(), tx.clone(), client.name().to_owned());
            let (ask_tx, asking) = (tx.clone(), server.clone());
            client.on_list_changed(Arc::new(move |kind| {
                let _ = tx.send(Msg::Tools(ToolMsg::ListChanged { server: server.clone(), kind }));
            }));
            // Its forms open in the chat screen.
            client.on_elicit(Arc::new(move |form, reply| {
                let _ = ask_tx.send(Msg::Tools(ToolMsg::Elicit { server: asking.clone(), form, reply }));
            }));
            // Its sampling requests (if its config allows them) open the sampling modal.
            client.on_sample(crate::tools::mcp::sample::asking(move |request, reply| {
                let _ = sample_tx.send(Msg::Tools(ToolMsg::Sample { request, reply }));
            }));
        }
    });
}

impl State {
    /// Puts a finished call's output on the call, within the round's byte budget.
    pub(crate) fn record_output(&mut self, owner: Owner, id: u64, index: usize, mut output: ToolOutput, ms: u64) {
        // Its images share the reply's image limits with what the reply generated and what
        // its other calls returned.
        let limits = self.owner_limits(owner);
        let reply = self.owner_transcript(owner).and_then(|t| t.message(id));
        let mut images = reply.map_or_else(
            || crate::api::limits::ImageBudget::new(limits),
            |m| crate::engine::images::reply_image_budget(limits, m, Some(index)),
        );
        output.keep_images_within(&mut images);
        let Some(t) = self.tools.turn_mut(owner).filter(|t| t.id == id) else { return };
        // One tool's output is capped by the registry; the round's total here.
        let text = within_round(output.text, &mut t.spent, limits.round_tool_output_bytes);
        let images = output.images;
        self.update_call(owner, id, index, |c| {
            c.status = if output.is_error { ToolStatus::Failed } else { ToolStatus::Done };
            c.output = Some(text);
            c.images = crate::engine::attachment::from_tool_images(&c.name, images);
            c.duration_ms = Some(ms);
        });
    }

    /// Handles what the runner reports for the tool loop.
    pub(crate) fn on_tools_msg(&mut self, msg: ToolMsg, fx: &mut Vec<Effect>) {
        self.dirty = true;
        match msg {
            ToolMsg::Done { owner, id, index, output, duration_ms } => {
                // A report for a turn that was cancelled (or a compare that closed) is stale.
                let Some(t) = self.tools.turn_mut(owner).filter(|t| t.id == id) else { return };
                if t.running.remove(&index).is_none() {
                    return;
                }
                if let Some(held) = output.held {
                    // It holds secrets: nothing goes anywhere until the user says so.
                    let need = PathNeed { path: held.source, why: held.why, write: false };
                    t.paths.insert(index, vec![need]);
                    t.held.insert(index, (held.output, duration_ms));
                    t.queue.push_back(index);
                    self.update_call(owner, id, index, |c| c.status = ToolStatus::AwaitingApproval);
                    self.show_front(fx);
                    return;
                }
                self.tools.progress.remove(&(owner, id, index));
                self.record_output(owner, id, index, output, duration_ms);
                self.settle(owner, fx);
            }
            ToolMsg::Ready { set, notices } => {
                let n = set.0.specs().len();
                self.tools.set = set;
                for note in notices {
                    self.transcript.push_notice(NoticeKind::Error, note);
                }
                self.transcript.push_notice(NoticeKind::Info, format!("tools ready: {n} available"));
            }
            ToolMsg::ImagesSaved { owner, id, saved, notices } => {
                if let Some(m) = self.owner_transcript_mut(owner).and_then(|t| t.message_mut(id)) {
                    for (i, path) in saved {
                        m.item_notes.entry(i).or_default().insert("saved_path".into(), Value::String(path));
                    }
                    m.revision += 1;
                }
                for note in notices {
                    self.owner_notice(owner, NoticeKind::Error, note);
                }
            }
            ToolMsg::ArgsEdited(r) => self.on_args_edited(r),
            ToolMsg::FileRead { owner, id, index, content } => {
                let this = |a: &&mut super::approval::Approval| a.owner == owner && a.id == id && a.index == index;
                if let Some(a) = self.tools.approval.as_mut().filter(this) {
                    a.before = Some(content);
                }
            }
            ToolMsg::Exported(r) => match r {
                Ok(path) => self.flash(format!("flow exported to {path}")),
                Err(e) => self.flash_error(format!("cannot export the flow: {e}")),
            },
            ToolMsg::PageExported(r) => match r {
                Ok(path) => self.flash(format!("exported to {path}")),
                Err(e) => self.flash_error(format!("cannot export the page: {e}")),
            },
            ToolMsg::Prompt(got) => self.on_prompt_got(got, fx),
            ToolMsg::McpFailed(why) => self.flash_error(crate::text::sanitize::sanitize(&why).into_owned()),
            ToolMsg::ListChanged { server, kind } => {
                fx.push(Effect::Tools(ToolEffect::Relist { set: self.tools.set.clone(), server, kind }));
            }
            ToolMsg::Relisted { server, kind, result } => self.on_relisted(&server, kind, result),
            ToolMsg::Elicit { server, form, reply } => self.on_elicit(server, form, reply),
            ToolMsg::Sample { request, reply } => self.on_sample(request, reply),
            ToolMsg::Sampled { server, result } => self.on_sampled(&server, result),
            ToolMsg::Progress { owner, id, index, progress } => {
                if self.tools.started(owner, id, index).is_none() {
                    // The call ended (or was cancelled) before its report arrived.
                    return;
                }
                // Reports of calls that ended without a `Done` (a cancelled turn) go with this one.
                let tools = &mut self.tools;
                let running: Vec<_> = tools.progress.keys().copied().collect();
                for k in running {
                    if tools.turn(k.0).is_none_or(|t| t.id != k.1 || !t.running.contains_key(&k.2)) {
                        tools.progress.remove(&k);
                    }
                }
                tools.progress.insert((owner, id, index), progress);
                tools.progress_rev += 1;
            }
        }
    }

    /// Offers what a server listed again from the next request on, and says so in one line.
    fn on_relisted(&mut self, server: &str, kind: ListKind, result: Result<Relisted, String>) {
        let shown = crate::text::sanitize::sanitize(server).into_owned();
        let what = kind.word();
        match result {
            Ok(listed) => {
                if let Some(specs) = listed.tools {
                    // A new registry, so a call already running keeps the one it started with.
                    let mut registry = (*self.tools.set.0).clone();
                    registry.replace_mcp_tools(server, specs);
                    self.tools.set = ToolSet(Arc::new(registry));
                }
                let note = format!(
                    "MCP server `{shown}` changed its {what}: {} now, offered from the next request",
                    listed.count
                );
                self.transcript.push_notice(NoticeKind::Info, note);
            }
            Err(e) => {
                let why = crate::text::sanitize::sanitize(&e).into_owned();
                let note = format!("MCP server `{shown}` changed its {what}, but listing them again failed: {why}");
                self.transcript.push_notice(NoticeKind::Error, note);
            }
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
/// An output within what is left of the round's budget, cut and marked past it.
fn within_round(mut text: String, spent: &mut usize, round: usize) -> String {
    let room = round.saturating_sub(*spent);
    if text.len() > room {
        let mut end = room;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(&format!(
            "\n[palaver cut this output: the tool output of this round reached round_tool_output_bytes = {round} \
             (raise it in the provider's profile: limits = {{ round_tool_output_bytes = … }})]"
        ));
    }
    *spent = spent.saturating_add(text.len());
    text
}

pub(crate) fn has_unsaved_images(m: &Message) -> bool {
    m.items.iter().enumerate().any(|(i, item)| {
        crate::engine::images::payload(item).is_some()
            && !u32::try_from(i).ok().and_then(|i| m.item_notes.get(&i)).is_some_and(|n| n.contains_key("saved_path"))
    })
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
