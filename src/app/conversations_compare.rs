//! Reopening a stored compare from the conversation list: every column comes back side by side
//! on the compare screen with its whole conversation (branches kept, as a reopened chat keeps
//! them), each on its own provider and model when this configuration still has that provider.
//! New turns go on in the same column conversations, under the same compare group. A compare
//! with a single column left opens as a chat.

use super::ListAction;
use crate::api::Api;
use crate::app::compare::{Column, Compare, MAX_COLUMNS};
use crate::app::effect::Effect;
use crate::app::persist::{Loaded, PersistOp};
use crate::app::state::{Focus, State, TargetInfo};
use crate::app::transcript::NoticeKind;
use crate::store::ConversationSummary;

/// A stored compare loaded for the compare screen.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedCompare {
    /// The compare group's id.
    pub group: String,
    /// Each column's conversation with its branches, in column order.
    pub columns: Vec<Loaded>,
}

impl State {
    /// The list asked to reopen compare `group`: refused while anything is in flight (a reply
    /// would land in a screen that is gone), else loaded by the store.
    pub(crate) fn request_compare(&mut self, group: String, fx: &mut Vec<Effect>) -> ListAction {
        if self.live.is_some() || self.tools.busy() || self.compare_busy() {
            self.flash_error("a reply is still streaming or running tools: Esc cancels it, then reopen the compare");
            return ListAction::Consumed;
        }
        fx.push(Effect::Persist(PersistOp::OpenCompare { group }));
        self.flash("opening the compare…");
        ListAction::Close
    }

    /// The store loaded a compare: it replaces whatever compare is open (kept in memory, as
    /// `/compare` does).
    pub(crate) fn on_opened_compare(&mut self, loaded: LoadedCompare, fx: &mut Vec<Effect>) {
        if self.live.is_some() || self.tools.busy() || self.compare_busy() {
            self.flash_error("a reply started meanwhile: the compare was not reopened");
            return;
        }
        let LoadedCompare { group, mut columns } = loaded;
        if columns.len() < 2 {
            let Some(only) = columns.pop() else {
                self.flash_error("that compare has no columns left");
                return;
            };
            self.on_opened(only, fx);
            self.transcript.push_notice(
                NoticeKind::Info,
                "only one column of this compare is left, so it opened as a chat".to_owned(),
            );
            return;
        }
        let dropped = columns.len().saturating_sub(MAX_COLUMNS);
        columns.truncate(MAX_COLUMNS);
        // The compare on screen saves what it still owes before it steps aside.
        self.persist_columns(fx);
        if let Some(old) = self.compare.active.take() {
            self.compare.kept.push(old);
        }
        let mut notes = Vec::new();
        let title = crate::text::sanitize::sanitize(&columns[0].active.summary.title).into_owned();
        let columns: Vec<Column> =
            columns.into_iter().enumerate().map(|(i, l)| self.stored_column(i, l, &mut notes)).collect();
        let n = columns.len();
        self.compare.generations += 1;
        self.compare.active = Some(Compare::new(self.compare.generations, group, columns));
        if dropped > 0 {
            notes.push(format!("the compare has {} columns; the first {MAX_COLUMNS} are shown", n + dropped));
        }
        self.focus = Focus::Composer;
        self.selected = None;
        self.editing = None;
        self.dirty = true;
        let head = format!("reopened the compare “{title}” · {n} columns");
        if notes.is_empty() {
            self.flash(format!("{head} — type once, every model answers"));
        } else {
            self.flash(format!("{head}; {}", notes.join("; ")));
        }
    }

    /// One column as it was: its transcript rebuilt with every branch, its store record adopted
    /// so new turns append to it.
    fn stored_column(&self, i: usize, mut l: Loaded, notes: &mut Vec<String>) -> Column {
        let index = l.active.summary.compare_column.map_or(i, |c| c as usize);
        let mut col = Column::new(index, self.stored_target(index, &l.active.summary, notes));
        let (path, kept) = crate::app::reopen::build(&mut col.transcript, &mut l.active, &l.others);
        let s = &l.active.summary;
        col.persist.adopt(&s.id, &s.title, l.active.branch, &path, &kept);
        col
    }

    /// The provider, model and API a column was on; its provider must still be the chat's, the
    /// demo or a configured one, else the column asks the chat's provider (and says so).
    fn stored_target(&self, index: usize, s: &ConversationSummary, notes: &mut Vec<String>) -> TargetInfo {
        let model = s.model.clone().unwrap_or_else(|| self.target.model.clone());
        let api = s.api.as_deref().and_then(Api::parse);
        let mut t = match s.provider.as_deref() {
            Some(p) if p == self.target.provider => TargetInfo { model, ..self.target.clone() },
            Some(p) if p == "demo" || self.cfg.providers.contains_key(p) => self.column_target(&format!("{p}/{model}")),
            Some(p) => {
                let now = &self.target.provider;
                notes.push(
                    crate::text::sanitize::sanitize(&format!(
                        "column {}: provider {p} is not configured; {model} is asked on {now}",
                        index + 1
                    ))
                    .into_owned(),
                );
                TargetInfo { model, ..self.target.clone() }
            }
            None => TargetInfo { model, ..self.target.clone() },
        };
        if let Some(api) = api {
            t.api = api;
        }
        t
    }
}

/// The note for a compare column opened as a chat: which column of which compare, and how to
/// see them all.
#[must_use]
pub fn column_note(loaded: &Loaded) -> Option<String> {
    let s = &loaded.active.summary;
    let group = s.compare_group.as_ref()?;
    let number = s.compare_column.map_or_else(|| "?".to_owned(), |c| (c + 1).to_string());
    let model = s.model.as_deref().unwrap_or("-");
    Some(crate::text::sanitize::sanitize(&format!(
        "this is column {number} ({model}) of compare {group}; its entry in the list (Ctrl+L) reopens every column side by side"
    ))
    .into_owned())
}

#[cfg(test)]
#[path = "conversations_compare_tests.rs"]
mod tests;
