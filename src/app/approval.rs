//! The approval modal's state: approve once, approve the tool for the session, deny
//! (optionally with a reason the model reads), or edit the arguments and then approve. Calls
//! are asked one at a time; the others keep running meanwhile. Its keys are in
//! `approval_keys.rs`: a choice is always deliberate, never a letter typed as part of a sentence.

use super::composer::Composer;
use super::effect::Effect;
use super::state::State;
use super::tools::Owner;
use crate::engine::message::ToolStatus;
use crate::engine::tool_loop::{Gate, gate, refusal_output, spec_for};
use crate::tools::sandbox::Policy as SandboxPolicy;
use crate::tools::{Approval as Policy, ToolSource};

/// For this long after it shows a call the modal takes no key: what was typed ahead goes to
/// the composer, and Enter decides nothing.
pub const GUARD_MS: u64 = 500;
/// A letter typed within this long of text that went to the composer is more text, not a choice.
pub const MID_SENTENCE_MS: u64 = 1000;

/// What the modal is doing.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Choosing among the options (`State::approval_choices`).
    Choose,
    /// Typing the reason for a denial.
    Reason(Composer),
    /// Editing the arguments before approving.
    Edit(Composer),
}

/// One option of the modal, in the order it lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Once,
    Session,
    /// Approve once, the command run outside the sandbox (that call only).
    Outside,
    Deny,
    Reason,
    Edit,
}

impl Choice {
    /// The letter that highlights it (then Enter confirms). A grant for the session and a run
    /// outside the sandbox have none: only the arrows reach them.
    #[must_use]
    pub fn letter(self) -> Option<char> {
        match self {
            Self::Once => Some('y'),
            Self::Session | Self::Outside => None,
            Self::Deny => Some('n'),
            Self::Reason => Some('r'),
            Self::Edit => Some('e'),
        }
    }
}

/// The modal's state for one call.
#[derive(Debug, Clone)]
pub struct Approval {
    /// Whose call it is: the chat's, or a compare column's.
    pub owner: Owner,
    pub id: u64,
    pub index: usize,
    pub mode: Mode,
    /// Lines the details are scrolled by.
    pub scroll: u16,
    /// Why the edited arguments were not accepted.
    pub error: Option<String>,
    /// For `write_file`: the file as it is now (`None` inside: it does not exist), once read.
    pub before: Option<Result<Option<String>, String>>,
    /// App clock of the first tick after the modal showed this call; the guard (`GUARD_MS`)
    /// runs from there, so it lasts at least that long whatever the clock said before.
    pub opened_ms: Option<u64>,
    /// The guard is over and the modal was redrawn to say so.
    pub guard_over: bool,
    /// The highlighted option (an index into `State::approval_choices`). Only the modal's own
    /// choosing keys (arrows, Tab, an option's letter) set it; any other key clears it, so
    /// Enter confirms only right after one of them.
    pub highlight: Option<usize>,
    /// The highlight came from this letter: the next key says whether it was meant (Enter) or
    /// was the start of a word (any other text key: both go to the composer).
    pub pending: Option<char>,
}

impl Approval {
    #[must_use]
    pub fn new(owner: Owner, id: u64, index: usize) -> Self {
        Self {
            owner,
            id,
            index,
            mode: Mode::Choose,
            scroll: 0,
            error: None,
            before: None,
            opened_ms: None,
            guard_over: false,
            highlight: None,
            pending: None,
        }
    }
}

/// What the user decided about the call in the modal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Once,
    Session,
    /// Once, outside the sandbox.
    Outside,
    Deny(Option<String>),
    /// Approve with these arguments instead of the model's.
    Edited(String),
}

/// A one-line or multi-line input that looks like the composer.
pub(crate) fn input(text: &str) -> Composer {
    let mut c = Composer::new();
    c.set_text(text);
    c.area.set_placeholder_text("");
    c
}

impl State {
    /// Whether the modal may offer "approve for the session" for call `index` of message `id`
    /// of `owner`.
    #[must_use]
    pub fn session_approval_offered(&self, owner: Owner, id: u64, index: usize) -> bool {
        // A path outside the workspace is approved for one call, never for the session.
        !self.approval_names_paths(owner, id, index)
            && self
                .call_at(owner, id, index)
                .is_some_and(|c| spec_for(&self.tools.set.0, c).is_some_and(|s| s.approval != Policy::Always))
    }

    /// The sandbox a command `call` of `owner` starts would run in (none for calls that start
    /// none: file tools, MCP tools, patches, MCP approvals).
    #[must_use]
    pub fn call_sandbox(&self, owner: Owner, call: &crate::engine::message::ToolCall) -> Option<SandboxPolicy> {
        let policy = self.owner_sandbox(owner);
        match (call.kind.as_str(), spec_for(&self.tools.set.0, call).map(|s| s.source)) {
            ("shell" | "local_shell", _) => Some(policy),
            ("" | "custom", Some(ToolSource::Builtin)) if call.name == "run_command" => Some(policy),
            ("" | "custom", Some(ToolSource::User)) => {
                Some(policy.with_mode(self.cfg.tools.iter().find(|t| t.name == call.name).and_then(|t| t.sandbox)))
            }
            _ => None,
        }
    }

    /// Whether approving the call grants paths outside the workspace (or files holding
    /// secrets): then no option has a letter, and only the arrows and Enter choose.
    #[must_use]
    pub fn approval_names_paths(&self, owner: Owner, id: u64, index: usize) -> bool {
        self.tools.turn(owner).is_some_and(|t| t.id == id && t.paths.contains_key(&index))
    }

    /// The options the modal lists for the call it shows, in order.
    #[must_use]
    pub fn approval_choices(&self) -> Vec<Choice> {
        let Some(a) = &self.tools.approval else { return Vec::new() };
        let mut out = vec![Choice::Once];
        if self.session_approval_offered(a.owner, a.id, a.index) {
            out.push(Choice::Session);
        }
        if self.call_at(a.owner, a.id, a.index).and_then(|c| self.call_sandbox(a.owner, c)).is_some_and(|p| {
            p.mode != crate::tools::sandbox::SandboxMode::Off
                && !matches!(self.tools.sandbox_support, Some(crate::tools::sandbox::Support::Unavailable(_)))
        }) {
            out.push(Choice::Outside);
        }
        out.extend([Choice::Deny, Choice::Reason]);
        // An MCP approval has no arguments of ours to edit.
        if self.call_at(a.owner, a.id, a.index).is_some_and(|c| c.kind != "mcp_approval") {
            out.push(Choice::Edit);
        }
        out
    }

    /// The letter that highlights `choice` in the modal now, if it has one.
    #[must_use]
    pub fn approval_letter(&self, choice: Choice) -> Option<char> {
        let a = self.tools.approval.as_ref()?;
        if self.approval_names_paths(a.owner, a.id, a.index) {
            return None;
        }
        choice.letter()
    }

    /// Whether the modal is still in its first moments, when it takes no key.
    #[must_use]
    pub fn approval_guarded(&self) -> bool {
        self.tools.approval.as_ref().is_some_and(|a| match a.opened_ms {
            None => true,
            Some(t) => self.now_ms < t.saturating_add(GUARD_MS),
        })
    }

    /// Whether the last key that put text into the composer was a moment ago: the user is in
    /// the middle of a sentence, and a letter is part of it.
    #[must_use]
    pub fn mid_sentence(&self) -> bool {
        self.typed_ms.is_some_and(|t| self.now_ms.saturating_sub(t) < MID_SENTENCE_MS)
    }

    /// Whether the loop must keep ticking for the modal: its guard and the "mid-sentence"
    /// window are measured on the app clock, which only ticks move while nothing streams.
    #[must_use]
    pub fn approval_wants_clock(&self) -> bool {
        self.tools.approval.as_ref().is_some_and(|a| matches!(a.mode, Mode::Choose))
    }

    /// A tick: the guard starts with the first one after the call showed, and the modal is
    /// redrawn when it ends (its hint changes).
    pub(crate) fn approval_tick(&mut self) {
        let now = self.now_ms;
        let Some(a) = self.tools.approval.as_mut() else { return };
        match a.opened_ms {
            None => a.opened_ms = Some(now),
            Some(t) if !a.guard_over && now >= t.saturating_add(GUARD_MS) => {
                a.guard_over = true;
                self.dirty = true;
            }
            Some(_) => {}
        }
    }

    /// Pasted text goes into the modal's input when it has one; true when it took it. While
    /// the modal is choosing, a paste is text like any other and goes to the composer.
    pub(crate) fn approval_paste(&mut self, text: &str) -> bool {
        if !self.overlays.last().is_some_and(|o| matches!(o, super::overlay::Overlay::Approval)) {
            return false;
        }
        let Some(a) = self.tools.approval.as_mut() else { return false };
        a.highlight = None;
        a.pending = None;
        match &mut a.mode {
            Mode::Edit(c) => c.paste(text),
            Mode::Reason(c) => c.paste(text.lines().next().unwrap_or("")),
            Mode::Choose => return false,
        }
        true
    }

    pub(crate) fn on_args_edited(&mut self, r: Result<String, String>) {
        match r {
            Ok(text) => {
                if let Some(a) = self.tools.approval.as_mut() {
                    a.mode = Mode::Edit(input(text.trim_end_matches('\n')));
                    a.error = None;
                }
            }
            Err(e) => self.flash_error(format!("editor: {e}")),
        }
    }

    /// Applies the user's decision to the call in the modal and moves on to the next one.
    pub(crate) fn decide(&mut self, d: Decision, fx: &mut Vec<Effect>) {
        let Some((owner, id, index)) = self.tools.asking() else { return };
        if let Some(t) = self.tools.turn_mut(owner) {
            t.queue.pop_front();
        }
        self.tools.approval = None;
        match d {
            Decision::Once => self.start_call(owner, id, index, fx),
            Decision::Outside => {
                let name = self.call_at(owner, id, index).map(|c| c.name.clone()).unwrap_or_default();
                if let Some(t) = self.tools.turn_mut(owner) {
                    t.outside.insert(index);
                }
                self.flash(format!("{name} runs outside the sandbox (this call only)"));
                self.start_call(owner, id, index, fx);
            }
            Decision::Session => {
                let name = self.call_at(owner, id, index).map(|c| c.name.clone()).unwrap_or_default();
                self.tools.session.insert(name.clone());
                self.flash(format!("{name} approved for this session"));
                self.start_call(owner, id, index, fx);
                self.regate_queues(fx);
            }
            Decision::Deny(reason) => {
                let why = reason.unwrap_or_else(|| "declined in the approval dialog".to_owned());
                let held = self.tools.turn_mut(owner).and_then(|t| t.held.remove(&index)).is_some();
                // A held output ran: what the model hears is that its output was kept back.
                let output = if held {
                    format!("The tool ran, but the user did not send its output (it holds secrets): {why}")
                } else {
                    refusal_output(&why)
                };
                self.update_call(owner, id, index, |c| {
                    c.status = ToolStatus::Denied;
                    c.output = Some(output);
                });
            }
            Decision::Edited(args) => {
                self.set_arguments(owner, id, index, &args);
                // The user wrote these arguments: the paths they resolve to are the approved ones.
                let needs = self
                    .call_at(owner, id, index)
                    .map(|c| self.tools.set.0.paths_needing_approval(&c.kind, &c.name, &args))
                    .unwrap_or_default();
                if let Some(t) = self.tools.turn_mut(owner) {
                    t.paths.remove(&index);
                    // New arguments run anew (a held output was for the old ones).
                    t.held.remove(&index);
                    if !needs.is_empty() {
                        t.paths.insert(index, needs);
                    }
                }
                self.start_call(owner, id, index, fx);
            }
        }
        self.show_front(fx);
        // A session approval may have emptied other owners' queues too: settle every turn that
        // has nothing left to wait for.
        let owners: Vec<Owner> = self.tools.turns.iter().map(|t| t.owner).collect();
        for o in owners {
            self.settle(o, fx);
        }
    }

    /// After a session approval, calls waiting for the same tool (in any owner's turn) no
    /// longer need asking.
    fn regate_queues(&mut self, fx: &mut Vec<Effect>) {
        let flags = self.tools.flags;
        for t in self.tools.turns.clone() {
            for &i in &t.queue {
                if t.paths.contains_key(&i) {
                    continue; // a path outside the workspace is asked for every time
                }
                let Some(call) = self.call_at(t.owner, t.id, i) else { continue };
                let spec = spec_for(&self.tools.set.0, call);
                let approved = self.tools.session.contains(&call.name);
                if gate(flags.mode, spec.as_ref(), approved, flags.yes) == Gate::Run {
                    if let Some(turn) = self.tools.turn_mut(t.owner) {
                        turn.queue.retain(|&q| q != i);
                    }
                    self.start_call(t.owner, t.id, i, fx);
                }
            }
        }
    }

    /// Replaces a call's arguments (and the output item that carried them, so the next request
    /// says what really ran).
    fn set_arguments(&mut self, owner: Owner, id: u64, index: usize, args: &str) {
        self.update_call(owner, id, index, |c| c.arguments = args.to_owned());
        let Some(m) = self.owner_transcript_mut(owner).and_then(|t| t.message_mut(id)) else { return };
        let Some(call_id) = m.main().tool_calls.get(index).map(|c| c.id.clone()) else { return };
        for item in &mut m.items {
            let is_call = item.get("type").and_then(|t| t.as_str()) == Some("function_call")
                && item.get("call_id").and_then(|c| c.as_str()) == Some(call_id.as_str());
            if is_call {
                item["arguments"] = serde_json::Value::String(args.to_owned());
            }
        }
    }
}

/// Checks edited arguments: JSON for everything but custom tools (plain text). Returns them
/// compact, as a model would send them.
///
/// # Errors
/// A message saying what is wrong with the JSON.
pub fn check_arguments(kind: &str, text: &str) -> Result<String, String> {
    if kind == "custom" {
        return Ok(text.to_owned());
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v.to_string()),
        Ok(_) => Err("the arguments must be a JSON object".to_owned()),
        Err(e) => Err(format!("not valid JSON: {e}")),
    }
}
