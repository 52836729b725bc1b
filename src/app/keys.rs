//! Key, mouse and paste handling: overlays first, then global bindings, then whatever has
//! focus (the composer, or the selected message).

use super::effect::Effect;
use super::keymap::{Action, Context};
use super::overlay::{Overlay, PickItem, PickOutcome, Picker};
use super::state::{Focus, State};
use crate::engine::message::Role;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

/// Lines one wheel notch or scroll key moves.
const SCROLL_STEP: i64 = 3;

impl State {
    pub(crate) fn on_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        // A quit asked for once is confirmed only by the very next key.
        let armed = std::mem::take(&mut self.quit_armed);
        let modal = !self.overlays.is_empty();
        if modal && self.overlay_key(&key, fx) {
            return;
        }
        if !modal && self.keymap.is(Action::Interrupt, &key) && !(self.compare.is_active() && self.compare_busy()) {
            self.interrupt(armed, fx);
            return;
        }
        if !modal
            && self.focus == Focus::Composer
            && self.composer.is_empty()
            && self.keymap.action(Context::Composer, &key) == Some(Action::Eof)
        {
            self.ask_quit(armed);
            return;
        }
        if !modal && self.focus == Focus::Composer && self.slash_menu_key(&key, fx) {
            return;
        }
        if !modal && self.focus == Focus::Composer && !self.compare.is_active() && self.vim_key(key) {
            return;
        }
        if !modal && self.compare_key(&key, fx) {
            return;
        }
        if let Some(action) = self.keymap.action(Context::Global, &key) {
            if self.global_action(action, fx) {
                return;
            }
        }
        // Under an overlay only global bindings reach past it; typing never lands in the draft.
        if modal {
            return;
        }
        match self.focus {
            Focus::Composer => self.composer_key(key, fx),
            Focus::Transcript => self.transcript_key(key, fx),
        }
    }

    /// Gives the key to the top overlay; true when it used it.
    fn overlay_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        if matches!(self.overlays.last(), Some(Overlay::Elicit)) {
            return self.elicit_key(key, fx);
        }
        if matches!(self.overlays.last(), Some(Overlay::Sample)) {
            return self.sample_key(key, fx);
        }
        if let Some(used) = self.tools_overlay_key(key, fx) {
            return used;
        }
        let is_ctrl_c = key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        let Some(top) = self.overlays.last_mut() else { return false };
        if is_ctrl_c {
            self.overlays.pop();
            return true;
        }
        let outcome = match top {
            Overlay::Help { scroll } => {
                if key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) {
                    return false;
                }
                match key.code {
                    KeyCode::Esc | KeyCode::Char('q' | '?') => return self.pop_overlay(),
                    KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
                    KeyCode::Down | KeyCode::Char('j') => *scroll = scroll.saturating_add(1),
                    KeyCode::PageUp => *scroll = scroll.saturating_sub(10),
                    KeyCode::PageDown | KeyCode::Char(' ') => *scroll = scroll.saturating_add(10),
                    KeyCode::Home => *scroll = 0,
                    _ => return false,
                }
                return true;
            }
            Overlay::Palette(p) | Overlay::Models { picker: p, .. } | Overlay::CodeBlocks { picker: p, .. } => {
                p.key(key)
            }
            Overlay::Conversations(_) => {
                // The keys of "Everywhere" the list has no use of its own for pass on to the
                // global bindings (it pages with PgUp/PgDn and ↑↓, closes with Esc).
                let own = matches!(
                    self.keymap.action(Context::Global, key),
                    None | Some(
                        Action::Cancel | Action::PageUp | Action::PageDown | Action::ScrollUp | Action::ScrollDown
                    )
                );
                return own && self.conversations_key(key, fx);
            }
            Overlay::Approval | Overlay::Inspector | Overlay::Elicit | Overlay::Sample => return false,
            Overlay::Probs { .. } => return self.probs_key(key),
        };
        match outcome {
            PickOutcome::Consumed => true,
            PickOutcome::Ignored => false,
            PickOutcome::Close => self.pop_overlay(),
            PickOutcome::Chosen(value) => {
                let Some(layer) = self.overlays.pop() else { return true };
                match layer {
                    Overlay::Palette(_) => self.run_palette(&value, fx),
                    Overlay::Models { .. } => self.run_command(super::commands::Command::Model(Some(value)), fx),
                    Overlay::CodeBlocks { id, .. } => {
                        let idx: usize = value.parse().unwrap_or(0);
                        self.copy_code(id, Some(idx), fx);
                    }
                    Overlay::Help { .. }
                    | Overlay::Conversations(_)
                    | Overlay::Approval
                    | Overlay::Inspector
                    | Overlay::Elicit
                    | Overlay::Sample
                    | Overlay::Probs { .. } => {}
                }
                true
            }
        }
    }

    fn pop_overlay(&mut self) -> bool {
        self.overlays.pop();
        true
    }

    /// Ctrl+C: cancels what is running, else clears the draft (kept in the prompt history, so
    /// ↑ brings it back), else asks to quit; a second Ctrl+C right after quits. Two quick
    /// Ctrl+Cs to stop a stream cancel it and only ask.
    fn interrupt(&mut self, armed: bool, fx: &mut Vec<Effect>) {
        if self.live.is_some() || self.tools.busy() {
            self.cancel_live(fx);
        } else if !self.composer.is_empty() || self.editing.is_some() {
            let draft = self.composer.text();
            self.composer.clear();
            self.editing = None;
            if !draft.trim().is_empty() {
                self.composer.remember(&draft);
                let up = self.keymap.hint(Action::HistoryPrev);
                self.flash(format!("draft cleared · {up} brings it back"));
            }
        } else {
            self.ask_quit(armed);
        }
    }

    /// Quits when the previous key already asked; else asks.
    fn ask_quit(&mut self, armed: bool) {
        if armed {
            self.quit = true;
            return;
        }
        self.quit_armed = true;
        let again = self.keymap.hint(Action::Interrupt);
        let eof = self.keymap.hint(Action::Eof);
        // Queued messages live only in this session: quitting drops them, so the question says so.
        let unsent = match self.queue.items.len() {
            0 => String::new(),
            1 => "1 queued message is not sent · ".to_owned(),
            n => format!("{n} queued messages are not sent · "),
        };
        self.flash(format!("quit? {unsent}{again} again or {eof} quits · any other key stays"));
    }

    /// Runs a global action; false when it does not apply now and the key should fall through.
    fn global_action(&mut self, action: Action, fx: &mut Vec<Effect>) -> bool {
        match action {
            Action::Quit => self.quit = true,
            Action::Interrupt => self.interrupt(false, fx),
            Action::Cancel => {
                if self.live.is_some() || self.tools.busy() {
                    self.cancel_live(fx);
                } else if self.editing.is_some() {
                    self.editing = None;
                    self.composer.clear();
                    self.flash("edit cancelled");
                } else {
                    return false;
                }
            }
            Action::Palette => self.toggle_overlay(
                |o| matches!(o, Overlay::Palette(_)),
                |s| Overlay::Palette(Picker::new(s.palette_items())),
            ),
            Action::Help => self.toggle_overlay(|o| matches!(o, Overlay::Help { .. }), |_| Overlay::Help { scroll: 0 }),
            Action::Models => self.open_models(fx),
            Action::History => self.open_conversations(fx),
            // In an arena before the vote the requests would name the models.
            Action::Inspector
                if self.compare.active.as_ref().is_some_and(super::compare::Compare::hidden)
                    && !self.overlays.iter().any(|o| matches!(o, Overlay::Inspector)) =>
            {
                self.flash("the inspector opens after the vote: its requests name the models");
            }
            Action::Inspector => self.toggle_inspector(),
            Action::Panels => self.toggle_panels(),
            Action::ToolsMode => self.cycle_tool_mode(),
            Action::ScrollUp => self.scroll_by(-SCROLL_STEP),
            Action::ScrollDown => self.scroll_by(SCROLL_STEP),
            Action::PageUp => self.scroll_by(-self.page()),
            Action::PageDown => self.scroll_by(self.page()),
            Action::Top => self.scroll_top(),
            Action::Bottom => self.scroll_bottom(),
            _ => return false,
        }
        true
    }

    fn toggle_overlay(&mut self, is: impl Fn(&Overlay) -> bool, make: impl FnOnce(&Self) -> Overlay) {
        if self.overlays.last().is_some_and(&is) {
            self.overlays.pop();
        } else {
            self.overlays.retain(|o| !is(o));
            let o = make(self);
            self.overlays.push(o);
        }
    }

    pub(crate) fn open_models(&mut self, fx: &mut Vec<Effect>) {
        // The picker marks the current model: in an arena before the vote that could name one.
        if self.compare.active.as_ref().is_some_and(super::compare::Compare::hidden) {
            self.flash("the model picker waits for the vote (it would name a model)");
            return;
        }
        if self.overlays.last().is_some_and(|o| matches!(o, Overlay::Models { .. })) {
            self.overlays.pop();
            return;
        }
        self.overlays.retain(|o| !matches!(o, Overlay::Models { .. }));
        let mut picker = Picker::new(self.model_items());
        picker.selected = picker.items.iter().position(|i| i.value == self.target.model).unwrap_or(0);
        self.overlays.push(Overlay::Models { picker, loading: true, error: None });
        fx.push(Effect::FetchModels);
    }

    pub(crate) fn toggle_panels(&mut self) {
        self.panels = Some(!self.panels_shown());
    }

    fn composer_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        match self.keymap.action(Context::Composer, &key) {
            Some(Action::Send) => {
                let text = self.composer.text();
                if !text.trim().is_empty() || !self.attachments.is_empty() {
                    self.submit(text, fx);
                } else if !self.queue.is_empty() && !self.turn_running() {
                    // Enter on an empty draft lets a held queue go.
                    self.queue.held = false;
                }
            }
            Some(Action::SendNow) if self.send_now(fx) => {}
            Some(Action::Unqueue) if self.drop_queued() => {}
            Some(Action::HistoryPrev) if self.unqueue_to_composer() => {}
            Some(Action::Newline) => self.composer.newline(),
            Some(Action::Editor) => fx.push(Effect::OpenEditor(self.composer.text())),
            Some(Action::LineStart) => self.composer.line_start(),
            Some(Action::LineEnd) => self.composer.line_end(),
            Some(Action::KillLine) => self.composer.kill_line(),
            Some(Action::KillWord) => self.composer.kill_word(),
            Some(Action::OpenPaste) => {
                if !self.composer.expand_pastes() {
                    self.flash("no big paste in the draft");
                }
            }
            Some(Action::HistoryPrev) if self.composer.walking() => {
                self.composer.history_prev();
            }
            Some(Action::HistoryNext) if self.composer.walking() => {
                self.composer.history_next();
            }
            Some(Action::Select) => self.select_step(-1),
            Some(Action::Detach) => self.remove_attachment(),
            Some(Action::CompletePath) if self.complete_attach_path(fx) => {}
            Some(Action::CompletePath) if self.complete_resource_uri() => {}
            Some(Action::CompletePath) if self.complete_command_name() => {}
            Some(Action::PasteImage) => self.paste_image(fx),
            _ => {
                self.composer.input(key);
                if matches!(key.code, KeyCode::Char(_) | KeyCode::Backspace | KeyCode::Delete) {
                    self.typed_ms = Some(self.now_ms);
                }
            }
        }
    }

    fn transcript_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        match self.keymap.action(Context::Transcript, &key) {
            Some(Action::SelectPrev) => self.select_step(-1),
            Some(Action::SelectNext) => self.select_step(1),
            Some(Action::Copy) => self.copy_selected(fx),
            Some(Action::CopyCode) => {
                if let Some(id) = self.selected {
                    self.copy_code(id, None, fx);
                }
            }
            Some(Action::Edit) => self.edit_selected(),
            Some(Action::Regenerate) => self.regenerate(fx),
            Some(Action::CompareHere) => self.here_prompt(),
            Some(Action::ToggleReasoning) => {
                if let Some(id) = self.selected {
                    if !self.reasoning_open.remove(&id) {
                        self.reasoning_open.insert(id);
                    }
                }
            }
            Some(Action::BranchPrev) => self.switch_branch(false),
            Some(Action::BranchNext) => self.switch_branch(true),
            Some(Action::Leave) => self.leave_selection(),
            Some(Action::ToggleOutput) => {
                // On an answer shown as JSON, the same key folds its nested levels.
                if !self.toggle_json_fold() {
                    self.toggle_tool_output();
                }
            }
            Some(Action::OpenImage) => self.open_image(fx),
            Some(Action::Probabilities) => self.open_probs(),
            _ => {
                // Typing a character goes back to the composer with it.
                let plain = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
                if matches!(key.code, KeyCode::Char(_)) && plain {
                    self.leave_selection();
                    self.composer.input(key);
                    self.typed_ms = Some(self.now_ms);
                }
            }
        }
    }

    pub(crate) fn leave_selection(&mut self) {
        self.focus = Focus::Composer;
        self.selected = None;
    }

    /// Moves the selection among messages (notices are skipped); -1 from nothing selects the last.
    pub(crate) fn select_step(&mut self, step: i64) {
        let ids: Vec<(usize, u64)> = self
            .transcript
            .cells
            .iter()
            .enumerate()
            .filter(|(i, c)| c.message().is_some_and(|m| m.role() != Role::Tool) && !self.folded(*i))
            .map(|(i, c)| (i, c.id()))
            .collect();
        if ids.is_empty() {
            self.flash("no messages yet");
            return;
        }
        let cur = self.selected.and_then(|s| ids.iter().position(|(_, id)| *id == s));
        let next = match cur {
            None => ids.len() - 1,
            Some(p) if step < 0 => p.saturating_sub(1),
            Some(p) => {
                if p + 1 >= ids.len() {
                    // Past the last message: back to the composer.
                    self.leave_selection();
                    self.scroll_bottom();
                    return;
                }
                p + 1
            }
        };
        self.select(ids[next].1);
    }

    /// Selects a cell and scrolls it into view.
    pub(crate) fn select(&mut self, id: u64) {
        self.selected = Some(id);
        self.focus = Focus::Transcript;
        let Some(index) = self.transcript.index_of(id) else { return };
        let fully_visible = self.view.cells.iter().any(|c| c.id == id && c.whole);
        if !fully_visible {
            self.scroll_to_cell(index);
        }
    }

    pub(crate) fn copy_selected(&mut self, fx: &mut Vec<Effect>) {
        let Some(m) = self.selected.and_then(|id| self.transcript.message(id)) else { return };
        let text = copy_text(m);
        if text.is_empty() {
            self.flash("nothing to copy");
            return;
        }
        self.copying(format!("{} characters", text.chars().count()));
        fx.push(Effect::Copy(text));
    }

    /// Copies code block `index` of message `id`, or asks which one when there are several.
    pub(crate) fn copy_code(&mut self, id: u64, index: Option<usize>, fx: &mut Vec<Effect>) {
        let Some(m) = self.transcript.message(id) else { return };
        let blocks = crate::text::code::code_blocks(m.text());
        match (blocks.len(), index) {
            (0, _) => self.flash("this message has no code block"),
            (1, _) | (_, Some(_)) => {
                let i = index.unwrap_or(0).min(blocks.len() - 1);
                let code = blocks[i].code.clone();
                self.copying(format!("code block {} ({} lines)", i + 1, code.lines().count()));
                fx.push(Effect::Copy(code));
            }
            (_, None) => {
                let items = blocks
                    .iter()
                    .enumerate()
                    .map(|(i, b)| {
                        let first = b.code.lines().next().unwrap_or("").trim();
                        let label = format!("{}. {}", i + 1, if b.lang.is_empty() { "text" } else { &b.lang });
                        PickItem {
                            label,
                            detail: crate::text::sanitize::sanitize(first).into_owned(),
                            value: i.to_string(),
                        }
                    })
                    .collect();
                self.overlays.push(Overlay::CodeBlocks { id, picker: Picker::new(items) });
            }
        }
    }

    fn edit_selected(&mut self) {
        let Some(m) = self.selected.and_then(|id| self.transcript.message(id)) else { return };
        if m.role() != Role::User {
            self.flash("only your own messages can be edited; r regenerates a reply");
            return;
        }
        if self.live.is_some() {
            self.flash("a reply is streaming: Esc cancels it first");
            return;
        }
        let (id, text, attached) = (m.id, m.text().to_owned(), m.attachments.clone());
        self.composer.set_text(&text);
        // The message's attachments come back as chips, so the resent message keeps them.
        if self.attachments.is_empty() {
            self.attachments = attached;
        }
        self.editing = Some(id);
        self.focus = Focus::Composer;
        self.flash("editing: Enter resends from here (the old branch is kept), Esc cancels");
    }

    fn switch_branch(&mut self, forward: bool) {
        if self.live.is_some() {
            self.flash("a reply is streaming: Esc cancels it first");
            return;
        }
        let Some(index) = self.selected.and_then(|id| self.transcript.index_of(id)) else { return };
        if self.transcript.switch_version(index, forward) {
            self.recount();
            let id = self.transcript.cells[index].id();
            self.select(id);
            self.flash(format!("switched version ({} other)", self.transcript.versions_at(index)));
        } else {
            self.flash("this message has no other version");
        }
    }

    pub(crate) fn on_mouse(&mut self, m: MouseEvent) {
        if self.compare_mouse(&m) {
            return;
        }
        match m.kind {
            MouseEventKind::ScrollUp => {
                self.dirty = true;
                self.scroll_by(-SCROLL_STEP);
            }
            MouseEventKind::ScrollDown => {
                self.dirty = true;
                self.scroll_by(SCROLL_STEP);
            }
            MouseEventKind::Down(MouseButton::Left) if self.overlays.is_empty() => {
                self.dirty = true;
                if let Some(id) = self.view.cell_at(m.column, m.row) {
                    if self.transcript.message(id).is_some() {
                        self.select(id);
                    }
                } else if self.view.in_composer(m.column, m.row) {
                    self.leave_selection();
                }
            }
            _ => {}
        }
    }

    pub(crate) fn on_paste(&mut self, text: &str, fx: &mut Vec<Effect>) {
        if self.approval_paste(text) {
            return;
        }
        if let Some(Overlay::Palette(p) | Overlay::Models { picker: p, .. } | Overlay::CodeBlocks { picker: p, .. }) =
            self.overlays.last_mut()
        {
            p.query.push_str(text.lines().next().unwrap_or(""));
            p.selected = 0;
            return;
        }
        self.focus_composer();
        if self.paste_as_attachment(text, fx) {
            return;
        }
        self.composer.paste(text);
        self.typed_ms = Some(self.now_ms);
    }
}

/// What "copy message" puts on the clipboard: the answer, or the refusal when there is no answer.
fn copy_text(m: &crate::engine::Message) -> String {
    let main = m.main();
    if main.content.is_empty() { main.refusal.clone() } else { main.content.clone() }
}

#[cfg(test)]
#[path = "everywhere_tests.rs"]
mod everywhere_tests;
