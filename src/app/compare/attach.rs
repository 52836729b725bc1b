//! Attachments in a compare: the chips go to every column, each checked against its own
//! provider's policy. A chip no column can take is refused when it is attached; a column that
//! cannot take it gets the prompt without it and says so in its conversation, so nobody reads a
//! column's answer as if its model had seen the file.

use super::{Column, Compare};
use crate::app::state::State;
use crate::app::transcript::NoticeKind;
use crate::engine::attachment::{Attachment, check, history_bytes};
use crate::engine::message::Message;

/// Whether column `c` can take `new` on top of what its conversation already carries.
fn column_takes(c: &Column, new: &[Attachment]) -> Result<(), String> {
    let earlier = history_bytes(&c.transcript.request_refs());
    check(new, earlier, &c.target.attachments, c.target.api)
}

/// How a column is named to the user: its letter in an arena before the vote, else its model.
fn column_name(cmp: &Compare, i: usize, c: &Column) -> String {
    let hidden = cmp.arena.as_ref().is_some_and(|a| !a.revealed);
    if hidden { super::arena::letter(i) } else { c.target.model.clone() }
}

impl State {
    /// In a compare, checks chips (`new` added to those already on) against every column:
    /// `None` outside a compare, `Some(Err)` when no column can take them (why, per column),
    /// `Some(Ok(refusals))` with the columns that will get the prompt without them.
    pub(crate) fn compare_attach_check(&self, new: &[Attachment]) -> Option<Result<Vec<String>, String>> {
        let cmp = self.compare.active.as_ref()?;
        let all: Vec<Attachment> = self.attachments.iter().chain(new).cloned().collect();
        let mut refused = Vec::new();
        for (i, c) in cmp.columns.iter().enumerate() {
            if let Err(why) = column_takes(c, &all) {
                refused.push(format!("{} ({why})", column_name(cmp, i, c)));
            }
        }
        if refused.len() == cmp.columns.len() {
            return Some(Err(format!("no column can take it: {}", refused.join("; "))));
        }
        Some(Ok(refused))
    }

    /// The user message column `i` gets for `prompt`: with the chips when its provider takes
    /// them, else without, with a notice in the column saying what it did not get and why.
    pub(crate) fn column_prompt(&mut self, i: usize, prompt: &str, chips: &[Attachment]) {
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let Some(c) = cmp.columns.get_mut(i) else { return };
        let mut user = Message::user(prompt);
        let refused = if chips.is_empty() { None } else { column_takes(c, chips).err() };
        if refused.is_none() {
            user.attachments = chips.to_vec();
        }
        c.transcript.push_message(user);
        if let Some(why) = refused {
            let names: Vec<&str> = chips.iter().map(|a| a.name.as_str()).collect();
            c.transcript.push_notice(NoticeKind::Error, format!("{} not sent to this model: {why}", names.join(", ")));
        }
    }
}
