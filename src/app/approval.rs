//! The approval modal's state and keys: approve once, approve the tool for the session, deny
//! (optionally with a reason the model reads), or edit the arguments and then approve. Calls
//! are asked one at a time; the others keep running meanwhile.

use super::composer::Composer;
use super::effect::Effect;
use super::state::State;
use super::tools::{Owner, ToolEffect};
use crate::engine::message::ToolStatus;
use crate::engine::tool_loop::{Gate, gate, refusal_output, spec_for};
use crate::tools::Approval as Policy;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What the modal is doing.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Waiting for y / a / n / r / e.
    Choose,
    /// Typing the reason for a denial.
    Reason(Composer),
    /// Editing the arguments before approving.
    Edit(Composer),
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
}

impl Approval {
    #[must_use]
    pub fn new(owner: Owner, id: u64, index: usize) -> Self {
        Self { owner, id, index, mode: Mode::Choose, scroll: 0, error: None, before: None }
    }
}

/// What the user decided about the call in the modal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Once,
    Session,
    Deny(Option<String>),
    /// Approve with these arguments instead of the model's.
    Edited(String),
}

fn plain(key: &KeyEvent) -> bool {
    !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
}

fn ctrl(key: &KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char(c)
}

/// A one-line or multi-line input that looks like the composer.
fn input(text: &str) -> Composer {
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
        let paths = self.tools.turn(owner).is_some_and(|t| t.id == id && t.paths.contains_key(&index));
        !paths
            && self
                .call_at(owner, id, index)
                .is_some_and(|c| spec_for(&self.tools.set.0, c).is_some_and(|s| s.approval != Policy::Always))
    }

    /// Keys for the approval modal; true when used. Keys it ignores reach the global bindings
    /// (scrolling, the inspector, quit).
    pub(crate) fn approval_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        let Some(a) = self.tools.approval.as_mut() else { return false };
        let (owner, id, index) = (a.owner, a.id, a.index);
        if matches!(key.code, KeyCode::Esc) && matches!(a.mode, Mode::Choose) || ctrl(key, 'c') {
            // Esc or Ctrl+C in the modal cancels the whole turn: the chat's, or every column's
            // (as Esc does on the compare screen).
            match owner {
                Owner::Chat => self.cancel_live(fx),
                Owner::Column { .. } => self.compare_cancel_all(fx),
            }
            return true;
        }
        match &mut a.mode {
            Mode::Choose => {
                match key.code {
                    KeyCode::Up if plain(key) => a.scroll = a.scroll.saturating_sub(1),
                    KeyCode::Down if plain(key) => a.scroll = a.scroll.saturating_add(1),
                    KeyCode::Char('k') => a.scroll = a.scroll.saturating_sub(1),
                    KeyCode::Char('j') => a.scroll = a.scroll.saturating_add(1),
                    KeyCode::Char('y') if plain(key) => self.decide(Decision::Once, fx),
                    KeyCode::Char('a') if plain(key) => {
                        if self.session_approval_offered(owner, id, index) {
                            self.decide(Decision::Session, fx);
                        } else {
                            self.flash("this tool asks every time; y approves this call");
                        }
                    }
                    KeyCode::Char('n') if plain(key) => self.decide(Decision::Deny(None), fx),
                    KeyCode::Char('r') if plain(key) => {
                        let mut c = input("");
                        c.area.set_placeholder_text("why not? (sent to the model)");
                        a.mode = Mode::Reason(c);
                    }
                    KeyCode::Char('e') if plain(key) => {
                        let Some(call) = self.call_at(owner, id, index) else { return true };
                        if call.kind == "mcp_approval" {
                            self.flash("an MCP approval has nothing to edit: y approves, n denies");
                            return true;
                        }
                        let text = crate::text::fmt::pretty_json(&call.arguments);
                        if let Some(a) = self.tools.approval.as_mut() {
                            a.mode = Mode::Edit(input(&text));
                            a.error = None;
                        }
                    }
                    _ => return false,
                }
                true
            }
            Mode::Reason(c) => {
                match key.code {
                    KeyCode::Esc => a.mode = Mode::Choose,
                    KeyCode::Enter => {
                        let reason = c.text().trim().to_owned();
                        self.decide(Decision::Deny(Some(reason).filter(|r| !r.is_empty())), fx);
                    }
                    _ => c.input(*key),
                }
                true
            }
            Mode::Edit(c) => {
                if key.code == KeyCode::Esc {
                    a.mode = Mode::Choose;
                    a.error = None;
                } else if ctrl(key, 's') || key.code == KeyCode::Enter && key.modifiers.contains(KeyModifiers::ALT) {
                    let text = c.text();
                    let kind = self.call_at(owner, id, index).map(|c| c.kind.clone()).unwrap_or_default();
                    match check_arguments(&kind, &text) {
                        Ok(args) => self.decide(Decision::Edited(args), fx),
                        Err(e) => {
                            if let Some(a) = self.tools.approval.as_mut() {
                                a.error = Some(e);
                            }
                        }
                    }
                } else if self.keymap.is(super::keymap::Action::Editor, key) {
                    fx.push(Effect::Tools(ToolEffect::EditArgs(c.text())));
                } else {
                    c.input(*key);
                }
                true
            }
        }
    }

    /// Pasted text goes into the modal's input when it has one; true when it took it.
    pub(crate) fn approval_paste(&mut self, text: &str) -> bool {
        if !self.overlays.last().is_some_and(|o| matches!(o, super::overlay::Overlay::Approval)) {
            return false;
        }
        match self.tools.approval.as_mut().map(|a| &mut a.mode) {
            Some(Mode::Edit(c)) => c.paste(text),
            Some(Mode::Reason(c)) => c.paste(text.lines().next().unwrap_or("")),
            _ => {}
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
            Decision::Session => {
                let name = self.call_at(owner, id, index).map(|c| c.name.clone()).unwrap_or_default();
                self.tools.session.insert(name.clone());
                self.flash(format!("{name} approved for this session"));
                self.start_call(owner, id, index, fx);
                self.regate_queues(fx);
            }
            Decision::Deny(reason) => {
                let why = reason.unwrap_or_else(|| "declined in the approval dialog".to_owned());
                self.update_call(owner, id, index, |c| {
                    c.status = ToolStatus::Denied;
                    c.output = Some(refusal_output(&why));
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
