//! Compare from here: on a message of the chat, `m` (or `/here A B`) forks the conversation at
//! that turn. The first column is the chat's own model with the answer it gave; the others are
//! other models answering the same prompt with the same history before it. Keeping one of the
//! new columns continues the chat on a branch from that turn (the old answer stays a version
//! of the chat, `[`/`]` on it, and a branch in the store); keeping the first column changes
//! nothing.

use crate::app::effect::Effect;
use crate::app::state::{Focus, State};
use crate::app::transcript::{Cell, NoticeKind};
use crate::engine::message::Role;

impl State {
    /// `m` on a selected message: remembers it and puts `/here ` in the composer for the models.
    pub(crate) fn here_prompt(&mut self) {
        let Some(id) = self.selected else { return };
        if self.live.is_some() || self.tools.busy() {
            self.flash("a reply is streaming or running tools: Esc cancels it first");
            return;
        }
        self.here_from = Some(id);
        self.composer.set_text("/here ");
        self.focus = Focus::Composer;
        self.flash("compare from here: name 1–3 other models (provider/model too), Enter");
    }

    /// The chat's cell index of the prompt a fork at message `id` re-runs: that message if it
    /// is the user's, else the user's message before it.
    fn here_prompt_index(&self, id: Option<u64>) -> Option<usize> {
        let cells = &self.transcript.cells;
        let from = match id.and_then(|id| self.transcript.index_of(id)) {
            Some(i) => i,
            None => cells.len().checked_sub(1)?,
        };
        (0..=from).rev().find(|&i| cells[i].message().is_some_and(|m| m.role() == Role::User))
    }

    /// `/here A [B C]`: opens the compare of the fork (see the module header).
    pub(crate) fn compare_here(&mut self, models: &[String], fx: &mut Vec<Effect>) {
        self.dirty = true;
        let anchor = self.here_from.take().or(self.selected);
        if models.is_empty() || models.len() > super::MAX_COLUMNS - 1 {
            self.flash_error(format!(
                "/here takes 1 to {} other models, e.g. /here demo-reasoning",
                super::MAX_COLUMNS - 1
            ));
            return;
        }
        let Some(u) = self.here_prompt_index(anchor) else {
            self.flash_error("nothing to compare from: ask something first, or select a message (Alt+↑)");
            return;
        };
        // The shared history ends with the prompt; the chat's answer to it is column 1's.
        let end = (u + 1..self.transcript.cells.len())
            .find(|&i| self.transcript.cells[i].message().is_some_and(|m| m.role() == Role::User))
            .unwrap_or(self.transcript.cells.len());
        let answer: Vec<_> = self.transcript.cells[u + 1..end].iter().filter_map(Cell::shared).cloned().collect();
        let mut targets = vec![self.target.clone()];
        targets.extend(models.iter().map(|m| self.column_target(m)));
        if let Err(e) = self.open_compare_from(targets, u + 1) {
            self.flash_error(e);
            return;
        }
        let Some(cmp) = self.compare.active.as_mut() else { return };
        cmp.from_here = Some(u + 1);
        if let Some(col) = cmp.columns.first_mut() {
            col.transcript.push_shared(answer);
            col.seeded = col.transcript.cells.len();
        }
        let n = cmp.columns.len();
        for i in 1..n {
            self.start_column_reply(i, fx);
        }
        let who = if n == 2 { "1 other model answers".to_owned() } else { format!("{} other models answer", n - 1) };
        self.flash(format!("compare from here: {who} this turn; Tab, then k keeps a column"));
    }

    /// Keeps column `i` of a compare opened from here (already taken off the screen).
    pub(crate) fn keep_here(&mut self, at: usize, col: super::Column, fx: &mut Vec<Effect>) {
        let model = col.target.model.clone();
        if col.index == 0 {
            self.flash(format!("kept the chat's own answer ({model}); the other columns stay in memory"));
            return;
        }
        let new: Vec<_> = col.transcript.cells.iter().skip(col.seeded).filter_map(Cell::message).cloned().collect();
        self.transcript.branch_off(at);
        for m in new {
            let mut m = m;
            if m.is_live() {
                m.status = crate::engine::message::MessageStatus::Cancelled;
            }
            self.transcript.push_message(m);
        }
        let provider = col.target.provider.clone();
        self.target = col.target;
        self.live = None;
        fx.push(Effect::Compare(super::CompareEffect::UseEndpoint { provider }));
        self.transcript.push_notice(
            NoticeKind::Info,
            format!("continuing with {model} from here; the earlier answer is kept as another version ([ and ] on the message)"),
        );
        self.flash(format!("kept {model}: the chat continues on a new branch"));
    }
}
