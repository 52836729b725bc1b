//! The transcript's cells, with the bookkeeping that lets the store sync skip a walk of the
//! whole history on every message applied (issue 31: no delta's work may grow with the history).
//!
//! Two records, one rule each:
//! - a **stamp** that names one shape of one list of cells: any change that may add, remove or
//!   reorder cells — every mutable access to the list from outside this module, which is all a
//!   push, a branch or a version switch can be — takes a fresh stamp (from a process-wide
//!   counter, so a new, cloned or reopened transcript never carries a stamp already seen);
//! - the ids of the messages handed out for change by [`Cells::message_mut`] since the store
//!   sync last asked ([`Cells::take_touched`]): a streamed delta touches one message, and only
//!   that one can need saving.
//!
//! So a sync that finds the stamp it last saw knows the path is unchanged, and needs to look at
//! the touched messages only. The same two records let a compare column's layout re-measure
//! only its last turn each frame: the lowest index handed out for change under the current
//! stamp ([`Cells::low_touched`]) says where in-place changes may begin. Everything else takes the full walk, as before: being
//! conservative (a fresh stamp for every mutable access) costs a walk, never a lost save.

use super::transcript::Cell;
use crate::engine::message::Message;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// More touched messages than this between two syncs (the sync is off, or not for this list):
/// forget them and take a fresh stamp instead, so the list stays small and the next sync walks.
const TOUCHED_MAX: usize = 32;

/// Stamps are unique in the process: equal stamps mean the same list, unchanged in shape.
static STAMPS: AtomicU64 = AtomicU64::new(1);

fn fresh_stamp() -> u64 {
    STAMPS.fetch_add(1, Ordering::Relaxed)
}

/// The cells of a transcript: read as a `Vec<Cell>`; changed through it, or through
/// [`Cells::message_mut`] for one message's content.
#[derive(Debug)]
pub struct Cells {
    list: Vec<Cell>,
    stamp: u64,
    touched: Vec<u64>,
    /// The lowest index handed out by `message_mut` since `stamp` was taken (`usize::MAX`: none).
    low: usize,
    /// For each message handed out by `message_mut`, a process-unique mark of the last time:
    /// what a cache of something computed from a message (its token estimate) is checked by.
    changes: std::collections::HashMap<u64, u64>,
}

impl Cells {
    /// The stamp of the current shape.
    #[must_use]
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// The lowest index whose message may have changed in place since the shape took its stamp
    /// (`usize::MAX`: none has). With the stamp, it bounds what a layout must measure again.
    #[must_use]
    pub fn low_touched(&self) -> usize {
        self.low
    }

    /// The message with `id`, to change its content (not the list's shape): remembered as
    /// touched for the store sync. Searches from the end: the live message is nearly always last.
    /// A message still held elsewhere (a request in flight, a column, a store save) is copied
    /// first, once: the holder keeps what it took. The streaming reply is held by nobody but
    /// now and then a store save, so its deltas copy nothing.
    pub fn message_mut(&mut self, id: u64) -> Option<&mut Message> {
        let i = self.list.iter().rposition(|c| c.id() == id)?;
        let Cell::Message(m) = &mut self.list[i] else { return None };
        if !self.touched.contains(&id) {
            if self.touched.len() >= TOUCHED_MAX {
                self.touched.clear();
                self.stamp = fresh_stamp();
                self.low = usize::MAX;
            }
            self.touched.push(id);
        }
        self.low = self.low.min(i);
        self.changes.insert(id, fresh_stamp());
        Some(Arc::make_mut(m))
    }

    /// The mark of the last change of message `id` through [`Cells::message_mut`] (0: none since
    /// the list was made): equal marks mean the message was not handed out for change between.
    #[must_use]
    pub fn changed(&self, id: u64) -> u64 {
        self.changes.get(&id).copied().unwrap_or(0)
    }

    /// The messages touched since the last call, for the store sync, which asks at the end of
    /// every `apply`.
    pub(crate) fn take_touched(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.touched)
    }

    /// The message with `id`, for the store sync alone: it may lend the message's raw frames
    /// out while copying it and put them back, changing nothing the sync must see again.
    pub(crate) fn message_unmarked(&mut self, id: u64) -> Option<&mut Arc<Message>> {
        let i = self.list.iter().rposition(|c| c.id() == id)?;
        match &mut self.list[i] {
            Cell::Message(m) => Some(m),
            Cell::Notice(_) => None,
        }
    }

    /// Every message in order, for the store sync alone (see [`Cells::message_unmarked`]).
    pub(crate) fn messages_unmarked(&mut self) -> impl Iterator<Item = &mut Arc<Message>> {
        self.list.iter_mut().filter_map(|c| match c {
            Cell::Message(m) => Some(m),
            Cell::Notice(_) => None,
        })
    }
}

impl Default for Cells {
    fn default() -> Self {
        Self {
            list: Vec::new(),
            stamp: fresh_stamp(),
            touched: Vec::new(),
            low: usize::MAX,
            changes: Default::default(),
        }
    }
}

/// A copy is another list: it gets a stamp of its own.
impl Clone for Cells {
    fn clone(&self) -> Self {
        let changes = self.changes.clone();
        Self { list: self.list.clone(), stamp: fresh_stamp(), touched: Vec::new(), low: usize::MAX, changes }
    }
}

/// The cells alone: the bookkeeping is not part of what a transcript holds.
impl PartialEq for Cells {
    fn eq(&self, other: &Self) -> bool {
        self.list == other.list
    }
}

impl Deref for Cells {
    type Target = Vec<Cell>;

    fn deref(&self) -> &Vec<Cell> {
        &self.list
    }
}

/// Any change from outside may reshape the list: a fresh stamp.
impl DerefMut for Cells {
    fn deref_mut(&mut self) -> &mut Vec<Cell> {
        self.stamp = fresh_stamp();
        self.low = usize::MAX;
        &mut self.list
    }
}

impl<'a> IntoIterator for &'a Cells {
    type Item = &'a Cell;
    type IntoIter = std::slice::Iter<'a, Cell>;

    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

impl<'a> IntoIterator for &'a mut Cells {
    type Item = &'a mut Cell;
    type IntoIter = std::slice::IterMut<'a, Cell>;

    fn into_iter(self) -> Self::IntoIter {
        self.deref_mut().iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use crate::app::transcript::{NoticeKind, Transcript};
    use crate::engine::message::Message;

    #[test]
    fn a_change_of_shape_takes_a_fresh_stamp_and_a_change_of_content_does_not() {
        let mut t = Transcript::default();
        let a = t.push_message(Message::user("a"));
        let stamp = t.cells.stamp();
        if let Some(m) = t.message_mut(a) {
            m.revision += 1;
        }
        assert_eq!(t.cells.stamp(), stamp, "a message changed in place keeps the shape");
        let _ = t.cells.iter().count();
        assert_eq!(t.cells.stamp(), stamp, "reading keeps it");
        t.push_notice(NoticeKind::Info, "n");
        let after_push = t.cells.stamp();
        assert_ne!(after_push, stamp);
        t.cells.truncate(1);
        assert_ne!(t.cells.stamp(), after_push, "any change through the list is a new shape");
        let copy = t.clone();
        assert_ne!(copy.cells.stamp(), t.cells.stamp(), "a copy is another list");
        assert_eq!(copy, t, "the bookkeeping is not part of the transcript's value");
        assert_ne!(Transcript::default().cells.stamp(), Transcript::default().cells.stamp());
    }

    #[test]
    fn touched_messages_are_told_once_each_and_too_many_take_a_fresh_stamp() {
        let mut t = Transcript::default();
        let ids: Vec<u64> = (0..40).map(|i| t.push_message(Message::user(&i.to_string()))).collect();
        let n = t.push_notice(NoticeKind::Info, "n");
        assert!(t.message_mut(n).is_none(), "a notice is no message");
        t.message_mut(ids[3]);
        t.message_mut(ids[3]);
        t.message_mut(ids[39]);
        assert_eq!(t.cells.take_touched(), [ids[3], ids[39]]);
        assert!(t.cells.take_touched().is_empty(), "taken");
        let stamp = t.cells.stamp();
        for &id in &ids[..super::TOUCHED_MAX] {
            t.message_mut(id);
        }
        assert_eq!(t.cells.stamp(), stamp);
        t.message_mut(ids[super::TOUCHED_MAX]);
        assert_ne!(t.cells.stamp(), stamp, "past the cap: a walk instead of a list");
        assert_eq!(t.cells.take_touched(), [ids[super::TOUCHED_MAX]]);
    }

    #[test]
    fn the_lowest_index_changed_in_place_is_kept_until_the_shape_changes() {
        let mut t = Transcript::default();
        let ids: Vec<u64> = (0..5).map(|i| t.push_message(Message::user(&i.to_string()))).collect();
        assert_eq!(t.cells.low_touched(), usize::MAX);
        t.message_mut(ids[4]);
        assert_eq!(t.cells.low_touched(), 4);
        t.message_mut(ids[1]);
        let _ = t.cells.take_touched();
        t.message_mut(ids[3]);
        assert_eq!(t.cells.low_touched(), 1, "taken by the store sync or not, it stays for the layout");
        t.push_message(Message::user("more"));
        assert_eq!(t.cells.low_touched(), usize::MAX, "a new shape is measured whole anyway");
    }
}
