//! The conversation list as the state drives it: opening the overlay, turning its actions into
//! store effects, and taking the store's answers.

use super::{ConversationList, ListAction};
use crate::app::effect::Effect;
use crate::app::overlay::Overlay;
use crate::app::persist::PersistOp;
use crate::app::state::State;
use crate::store::Hit;
use crate::store::entries::ListEntry;
use crossterm::event::KeyEvent;

impl State {
    /// Opens the conversation list (or closes it when it is on top).
    pub(crate) fn open_conversations(&mut self, fx: &mut Vec<Effect>) {
        if self.overlays.last().is_some_and(|o| matches!(o, Overlay::Conversations(_))) {
            self.overlays.pop();
            return;
        }
        self.overlays.retain(|o| !matches!(o, Overlay::Conversations(_)));
        self.persist.list_seq += 1;
        let mut list = ConversationList::new(self.persist.list_seq, self.persist.id.clone());
        let open = self.compare.active.as_ref();
        list.current_group = open.map(|c| c.group.clone());
        // An arena before its vote: the list must not name its models either.
        list.hidden_group = open.filter(|c| c.hidden()).map(|c| c.group.clone());
        if self.persist.enabled {
            fx.push(Effect::Persist(PersistOp::List { seq: self.persist.list_seq, offset: 0 }));
        } else {
            list.loading = false;
            let why = self.persist.off_reason.clone().unwrap_or_else(|| "no history store".into());
            list.error = Some(format!("history is off: {why}"));
        }
        self.overlays.push(Overlay::Conversations(Box::new(list)));
    }

    fn list_mut(&mut self) -> Option<&mut ConversationList> {
        self.overlays.iter_mut().rev().find_map(|o| match o {
            Overlay::Conversations(l) => Some(&mut **l),
            _ => None,
        })
    }

    /// A key for the list on top; true when it used it.
    pub(crate) fn conversations_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        let Some(list) = self.list_mut() else { return false };
        let action = list.key(key);
        match action {
            ListAction::Consumed => {}
            ListAction::Ignored => return false,
            ListAction::Close => self.close_conversations(),
            ListAction::Search { seq, query } => fx.push(Effect::Persist(PersistOp::Search { seq, query })),
            ListAction::More { offset } => {
                let seq = self.persist.list_seq;
                fx.push(Effect::Persist(PersistOp::List { seq, offset }));
            }
            ListAction::Open { id, branch, position } if self.persist.is_current(&id) => {
                // A hit in the conversation on screen: show it rather than reload it.
                self.close_conversations();
                let shown = |p: usize| branch.is_none_or(|b| self.persist.branch_at(p) == Some(b));
                let on_screen = position.filter(|&p| shown(p)).and_then(|p| {
                    self.transcript.cells.iter().filter_map(crate::app::transcript::Cell::message).nth(p).map(|m| m.id)
                });
                match on_screen {
                    Some(m) => self.select(m),
                    None => self.flash("that message is in another version of this conversation ([ ] switch)"),
                }
            }
            ListAction::Open { id, branch, position } => {
                self.close_conversations();
                if self.live.is_some() {
                    // Settle the reply in flight while it is still this conversation's.
                    self.cancel_live(fx);
                }
                fx.push(Effect::Persist(PersistOp::Open { id, branch, focus: position }));
                self.flash("opening…");
            }
            ListAction::OpenCompare { group } => {
                if self.request_compare(group, fx) == ListAction::Close {
                    self.close_conversations();
                }
            }
            ListAction::Rename { ids, title } => {
                for id in ids {
                    if self.persist.is_current(&id) {
                        self.persist.title = Some(title.clone());
                    }
                    fx.push(Effect::Persist(PersistOp::Rename { id, title: title.clone() }));
                }
                let shown = crate::text::sanitize::sanitize(&title).into_owned();
                self.flash(format!("renamed to “{shown}”"));
            }
            ListAction::Delete { ids } => {
                let n = ids.len();
                for id in ids {
                    if self.persist.is_current(&id) {
                        // Its messages must not be saved again under a new conversation.
                        self.persist.detach();
                        self.run_command(crate::app::commands::Command::Clear, fx);
                    }
                    fx.push(Effect::Persist(PersistOp::Delete { id }));
                }
                self.flash(if n > 1 {
                    format!("compare deleted ({n} columns)")
                } else {
                    "conversation deleted".into()
                });
            }
            ListAction::New => {
                self.close_conversations();
                self.run_command(crate::app::commands::Command::New, fx);
            }
        }
        true
    }

    fn close_conversations(&mut self) {
        self.overlays.retain(|o| !matches!(o, Overlay::Conversations(_)));
    }

    pub(crate) fn on_listed(&mut self, seq: u64, offset: usize, result: Result<Vec<ListEntry>, String>) {
        if let Some(list) = self.list_mut().filter(|l| l.list_seq == seq) {
            list.listed(offset, result);
        }
    }

    pub(crate) fn on_found(&mut self, seq: u64, result: Result<Vec<Hit>, String>) {
        if let Some(list) = self.list_mut().filter(|l| l.search_seq == seq) {
            list.found(result);
        }
    }

    /// The store named the conversation created this session: mark it in an open list.
    pub(crate) fn conversation_created(&mut self, id: &str) {
        let current = self.persist.id.clone();
        if let Some(list) = self.list_mut() {
            if current.as_deref() == Some(id) {
                list.current = Some(id.to_owned());
            }
        }
    }
}
