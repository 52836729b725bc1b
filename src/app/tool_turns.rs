//! The tool loop, one implementation for every conversation that asks for tools: the chat and
//! each compare column (an [`Owner`]). When a reply ends with tool calls, each call is gated
//! (run, ask the user, refuse); approved calls run concurrently in the runner and report back
//! with `ToolMsg::Done`; when every call of the reply is settled the answers are appended to
//! that owner's conversation and its next request goes out, until the model answers or the step
//! limit is reached. It mirrors the headless `run_turn`, one message at a time.
//!
//! Each owner has its own turn and round count, so one column's tools never hold up another;
//! the approval modal asks one call at a time, the oldest turn's first.

use super::effect::Effect;
use super::overlay::Overlay;
use super::state::State;
use super::tools::{CANCELLED, Owner, ToolEffect, Turn, has_unsaved_images};
use super::transcript::{NoticeKind, Transcript};
use crate::engine::message::{Message, ToolCall, ToolStatus};
use crate::engine::tool_loop::MCP_APPROVE;
use crate::engine::turn_engine::{Decision, Next, TurnPolicy};
use crate::tools::sandbox::Policy;
use serde_json::Value;
use std::collections::BTreeMap;

impl State {
    /// The transcript `owner`'s messages live in (`None`: a compare that is no longer open).
    #[must_use]
    pub fn owner_transcript(&self, owner: Owner) -> Option<&Transcript> {
        match owner {
            Owner::Chat => Some(&self.transcript),
            Owner::Column { generation, column } => {
                let cmp = self.compare.active.as_ref().filter(|c| c.generation == generation)?;
                cmp.columns.get(column).map(|c| &c.transcript)
            }
        }
    }

    pub(crate) fn owner_transcript_mut(&mut self, owner: Owner) -> Option<&mut Transcript> {
        match owner {
            Owner::Chat => Some(&mut self.transcript),
            Owner::Column { generation, column } => {
                let cmp = self.compare.active.as_mut().filter(|c| c.generation == generation)?;
                cmp.columns.get_mut(column).map(|c| &mut c.transcript)
            }
        }
    }

    /// Whose call the modal shows, when it is not the chat's: "column 2 · model" (in an arena
    /// before its vote, "column A": the model stays hidden).
    #[must_use]
    pub fn owner_label(&self, owner: Owner) -> Option<String> {
        let Owner::Column { generation, column } = owner else { return None };
        let cmp = self.compare.active.as_ref().filter(|c| c.generation == generation)?;
        if cmp.hidden() {
            return Some(format!("column {}", cmp.label(column)));
        }
        cmp.columns.get(column).map(|c| format!("column {} · {}", c.index + 1, c.target.model))
    }

    /// The sandbox `owner`'s commands run in: its provider's profile (`sandbox`,
    /// `sandbox_network`) with the session's helper (a bare state has none: nothing is wrapped).
    #[must_use]
    pub fn owner_sandbox(&self, owner: Owner) -> Policy {
        let profile = self.owner_profile(owner);
        Policy {
            helper: self.tools.set.0.workspace().sandbox().helper.clone(),
            ..Policy::configured(profile.and_then(|p| p.sandbox), profile.and_then(|p| p.sandbox_network))
        }
    }

    /// The limits of `owner`'s provider profile (the defaults where it sets none).
    #[must_use]
    pub fn owner_limits(&self, owner: Owner) -> crate::api::limits::Limits {
        self.owner_profile(owner).and_then(|p| p.limits).unwrap_or_default()
    }

    /// `owner`'s provider profile in the configuration, when it has one.
    fn owner_profile(&self, owner: Owner) -> Option<&crate::config::ProviderProfile> {
        let provider = match owner {
            Owner::Chat => Some(&self.target.provider),
            Owner::Column { generation, column } => {
                let cmp = self.compare.active.as_ref().filter(|c| c.generation == generation);
                cmp.and_then(|c| c.columns.get(column)).map(|c| &c.target.provider)
            }
        };
        provider.and_then(|p| self.cfg.providers.get(p))
    }

    pub(crate) fn owner_notice(&mut self, owner: Owner, kind: NoticeKind, text: impl Into<String>) {
        if let Some(t) = self.owner_transcript_mut(owner) {
            t.push_notice(kind, text);
        }
    }

    /// Sends `owner`'s next request, its conversation as it stands.
    fn owner_continue(&mut self, owner: Owner, fx: &mut Vec<Effect>) {
        match owner {
            Owner::Chat => self.start_reply(None, fx),
            Owner::Column { generation, column } => {
                if self.compare.active.as_ref().is_some_and(|c| c.generation == generation) {
                    self.start_column_reply(column, fx);
                }
            }
        }
    }

    /// Folds a wire event of the chat's reply in, and when it ended the reply, takes the reply's
    /// tool calls on.
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
            self.after_reply(Owner::Chat, id, fx);
            self.after_compaction(id, fx);
        }
    }

    /// A reply of `owner` ended by itself: save its images, then let the turn engine decide its
    /// tool calls (run, ask, settle) or end the turn.
    pub(crate) fn after_reply(&mut self, owner: Owner, id: u64, fx: &mut Vec<Effect>) {
        let Some(m) = self.owner_transcript(owner).and_then(|t| t.message(id)) else {
            self.tools.accounts.remove(&owner);
            return;
        };
        if has_unsaved_images(m) {
            fx.push(Effect::Tools(ToolEffect::SaveImages { owner, id, items: m.items.clone() }));
        }
        let flags = self.tools.flags;
        let policy =
            TurnPolicy { mode: flags.mode, yes: flags.yes, step_limit: self.tools.step_limit, interactive: true };
        let registry = self.tools.set.0.clone();
        let session = self.tools.session.clone();
        let mut account = self.tools.accounts.remove(&owner).unwrap_or_default();
        let Some(m) = self.owner_transcript_mut(owner).and_then(|t| t.message_mut(id)) else { return };
        let next = account.after_reply(&policy, m, &registry, &|name| session.contains(name));
        if let Some(found) = account.tools_ignored {
            self.on_tools_ignored(owner, found);
        }
        self.dirty = true;
        let decisions = match next {
            Next::Stop { notice, .. } => {
                // Calls that did not run keep why; the request builder answers them next time.
                if let Some(n) = notice {
                    self.owner_notice(owner, NoticeKind::Info, n);
                }
                return;
            }
            Next::Settle(d) => d,
        };
        self.tools.accounts.insert(owner, account);
        // A stale turn of this owner (it cannot normally be there) must not shadow the new one.
        self.tools.turns.retain(|t| t.owner != owner);
        self.tools.turns.push(Turn { owner, id, ..Turn::default() });
        for (i, decision) in decisions.into_iter().enumerate() {
            match decision {
                Decision::Run => self.start_call(owner, id, i, fx),
                Decision::Ask { paths } => {
                    self.update_call(owner, id, i, |c| c.status = ToolStatus::AwaitingApproval);
                    if let Some(t) = self.tools.turn_mut(owner) {
                        t.queue.push_back(i);
                        if !paths.is_empty() {
                            t.paths.insert(i, paths);
                        }
                    }
                }
                Decision::Settled => {}
            }
        }
        self.show_front(fx);
        self.settle(owner, fx);
    }

    /// Changes call `index` of message `id` of `owner` (and bumps the message's revision, so
    /// the card is drawn again).
    pub(crate) fn update_call(&mut self, owner: Owner, id: u64, index: usize, f: impl FnOnce(&mut ToolCall)) {
        let Some(m) = self.owner_transcript_mut(owner).and_then(|t| t.message_mut(id)) else { return };
        if let Some(c) = m.main_mut().tool_calls.get_mut(index) {
            f(c);
            m.revision += 1;
            self.dirty = true;
        }
    }

    /// Call `index` of message `id` of `owner`.
    #[must_use]
    pub fn call_at(&self, owner: Owner, id: u64, index: usize) -> Option<&ToolCall> {
        self.owner_transcript(owner)?.message(id).and_then(|m| m.main().tool_calls.get(index))
    }

    /// Call `index` of the chat's message `id`.
    #[must_use]
    pub fn tool_call(&self, id: u64, index: usize) -> Option<&ToolCall> {
        self.call_at(Owner::Chat, id, index)
    }

    /// Starts an approved call. Approving an MCP request needs no work: the provider runs it.
    pub(crate) fn start_call(&mut self, owner: Owner, id: u64, index: usize, fx: &mut Vec<Effect>) {
        let Some(call) = self.call_at(owner, id, index).cloned() else { return };
        if call.kind == "mcp_approval" {
            self.update_call(owner, id, index, |c| {
                c.status = ToolStatus::Done;
                c.output = Some(MCP_APPROVE.to_owned());
                c.duration_ms = Some(0);
            });
            return;
        }
        let now = self.now_ms;
        // Only the paths the modal named are approved, and only for this call.
        let mut approved = Vec::new();
        let mut held = None;
        let mut outside = false;
        if let Some(t) = self.tools.turn_mut(owner).filter(|t| t.id == id) {
            approved = t.paths.remove(&index).unwrap_or_default().into_iter().map(|p| p.path).collect();
            outside = t.outside.remove(&index);
            held = t.held.remove(&index);
            if held.is_none() {
                t.running.insert(index, now);
            }
        }
        // An output held for its secrets was approved: it is sent as it was, not run again.
        if let Some((output, ms)) = held {
            self.record_output(owner, id, index, output, ms);
            return;
        }
        self.update_call(owner, id, index, |c| c.status = ToolStatus::Running);
        // Outside the sandbox (the user chose it for this call): a policy with no helper wraps
        // nothing, whatever mode a user tool names; the config is not touched.
        let policy = if outside { Policy::default() } else { self.owner_sandbox(owner) };
        let set = self.tools.set.with_sandbox(policy);
        fx.push(Effect::Tools(ToolEffect::Run { owner, id, index, call, set, approved }));
    }

    /// When every call of `owner`'s reply is settled: append the answers and ask its model again.
    pub(crate) fn settle(&mut self, owner: Owner, fx: &mut Vec<Effect>) {
        let Some(t) = self.tools.turn(owner) else { return };
        if !t.running.is_empty() || !t.queue.is_empty() {
            return;
        }
        let id = t.id;
        self.tools.turns.retain(|t| t.owner != owner);
        self.show_front(fx);
        if self.owner_transcript(owner).and_then(|t| t.message(id)).is_none() {
            // The transcript changed under the loop (cleared, another conversation): stop here.
            self.tools.accounts.remove(&owner);
            return;
        }
        self.answer_calls(owner, id);
        self.owner_continue(owner, fx);
    }

    /// Appends a tool message answering each call of message `id` of `owner`.
    fn answer_calls(&mut self, owner: Owner, id: u64) {
        let Some(t) = self.owner_transcript_mut(owner) else { return };
        let calls = t.message(id).map(|m| m.main().tool_calls.clone()).unwrap_or_default();
        for call in &calls {
            t.push_message(Message::answer_to(call));
        }
        self.dirty = true;
    }

    /// Marks every call of message `id` of `owner` that has no outcome yet with `status` and
    /// `output`; `started` holds the start times of calls that were running.
    fn settle_unrun(
        &mut self,
        owner: Owner,
        id: u64,
        status: ToolStatus,
        output: &str,
        started: &BTreeMap<usize, u64>,
    ) {
        let now = self.now_ms;
        let n = self.owner_transcript(owner).and_then(|t| t.message(id)).map_or(0, |m| m.main().tool_calls.len());
        for i in 0..n {
            let since = started.get(&i).copied();
            self.update_call(owner, id, i, |c| {
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

    /// Stops the tool phase of the chat's turn (see [`State::cancel_owner_tools`]).
    pub(crate) fn cancel_tools(&mut self, fx: &mut Vec<Effect>) {
        if self.cancel_owner_tools(Owner::Chat, fx) {
            self.flash("turn cancelled; running tools were stopped");
        }
    }

    /// Stops the tool phase of `owner`'s turn: running calls are dropped, waiting ones denied,
    /// and every call is answered (so the conversation stays well formed for the next prompt).
    /// True when there was a tool phase to stop.
    pub(crate) fn cancel_owner_tools(&mut self, owner: Owner, fx: &mut Vec<Effect>) -> bool {
        self.tools.accounts.remove(&owner);
        let Some(at) = self.tools.turns.iter().position(|t| t.owner == owner) else { return false };
        let t = self.tools.turns.remove(at);
        if !t.running.is_empty() {
            fx.push(Effect::Tools(ToolEffect::Cancel { owner, id: t.id }));
        }
        self.settle_unrun(owner, t.id, ToolStatus::Denied, CANCELLED, &t.running);
        // The modal moves on to another owner's call, or closes.
        self.show_front(fx);
        if self.owner_transcript(owner).and_then(|tr| tr.message(t.id)).is_some() {
            self.answer_calls(owner, t.id);
        }
        true
    }

    /// Opens the modal for the call `asking` names (or closes it when nothing waits).
    pub(crate) fn show_front(&mut self, fx: &mut Vec<Effect>) {
        let Some((owner, id, index)) = self.tools.asking() else {
            self.close_approval();
            return;
        };
        if self.tools.approval.as_ref().is_some_and(|a| a.owner == owner && a.id == id && a.index == index) {
            return;
        }
        self.tools.approval = Some(super::approval::Approval::new(owner, id, index));
        if !self.overlays.iter().any(|o| matches!(o, Overlay::Approval)) {
            self.overlays.push(Overlay::Approval);
        }
        self.dirty = true;
        // A write_file diff needs the file as it is now: the runner reads it.
        if let Some(call) = self.call_at(owner, id, index) {
            if call.kind.is_empty() && call.name == "write_file" {
                let path = crate::tools::parse_arguments(&call.arguments)
                    .ok()
                    .and_then(|a| a.get("path").and_then(Value::as_str).map(str::to_owned));
                if let Some(path) = path {
                    fx.push(Effect::Tools(ToolEffect::ReadFile { owner, id, index, path }));
                }
            }
        }
    }

    pub(crate) fn close_approval(&mut self) {
        self.tools.approval = None;
        self.overlays.retain(|o| !matches!(o, Overlay::Approval));
    }
}
