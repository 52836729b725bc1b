//! The transcript: conversation messages interleaved with notices, and the branches an edit or
//! a regenerate left behind. It hands out the ids the render cache keys on and decides which
//! messages a request carries.

pub use super::cells::Cells;
use crate::engine::message::Message;
use std::sync::Arc;

/// How loud a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    Info,
    Error,
}

/// A line from palaver itself (command results, errors that belong to no message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub id: u64,
    pub kind: NoticeKind,
    pub text: String,
}

/// One transcript entry. A message is shared (`Arc`): a request, a compare column and the
/// store take the transcript's own messages, never copies; a change goes through
/// [`Cells::message_mut`], which copies a message only while another holder still has it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Message(Arc<Message>),
    Notice(Notice),
}

impl Cell {
    #[must_use]
    pub fn id(&self) -> u64 {
        match self {
            Self::Message(m) => m.id,
            Self::Notice(n) => n.id,
        }
    }

    #[must_use]
    pub fn revision(&self) -> u64 {
        match self {
            Self::Message(m) => m.revision,
            Self::Notice(_) => 0,
        }
    }

    #[must_use]
    pub fn message(&self) -> Option<&Message> {
        self.shared().map(Arc::as_ref)
    }

    /// The message, to hold on to without a copy.
    #[must_use]
    pub fn shared(&self) -> Option<&Arc<Message>> {
        match self {
            Self::Message(m) => Some(m),
            Self::Notice(_) => None,
        }
    }
}

/// A tail of the transcript replaced by an edit or a regenerate, kept so the user can go back.
/// Branches that hung off the replaced tail travel with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// Cell index where the replaced tail started.
    pub at: usize,
    pub cells: Vec<Cell>,
    pub nested: Vec<Branch>,
}

/// All cells plus kept branches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    /// Read as a `Vec<Cell>`; see `cells.rs` for how changes are kept track of.
    pub cells: Cells,
    pub branches: Vec<Branch>,
    next_id: u64,
}

impl Transcript {
    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Appends a message with a fresh id; returns the id.
    pub fn push_message(&mut self, mut m: Message) -> u64 {
        m.id = self.fresh_id();
        let id = m.id;
        self.cells.push(Cell::Message(Arc::new(m)));
        id
    }

    /// Appends messages of another transcript, shared, with the ids they have there (a
    /// compare column takes the chat's history this way: a new id would be a copy). Ids handed
    /// out later come after all of them, so they stay unique as long as these were.
    pub fn push_shared(&mut self, msgs: impl IntoIterator<Item = Arc<Message>>) {
        let cells: &mut Vec<Cell> = &mut self.cells;
        for m in msgs {
            self.next_id = self.next_id.max(m.id);
            cells.push(Cell::Message(m));
        }
    }

    pub fn push_notice(&mut self, kind: NoticeKind, text: impl Into<String>) -> u64 {
        let id = self.fresh_id();
        self.cells.push(Cell::Notice(Notice { id, kind, text: text.into() }));
        id
    }

    /// Puts `head` (given fresh ids) before every cell; kept branches move along. Returns the
    /// ids, in order. The cells on screen are appended to `head`, not the other way round: a
    /// long head built off the UI task is not moved again on it.
    pub fn prepend(&mut self, mut head: Vec<Cell>) -> Vec<u64> {
        let n = head.len();
        let mut ids = Vec::with_capacity(n);
        for c in &mut head {
            let id = self.fresh_id();
            match c {
                Cell::Message(m) => Arc::make_mut(m).id = id,
                Cell::Notice(notice) => notice.id = id,
            }
            ids.push(id);
        }
        // Through the list's `DerefMut`: the shape changed (a fresh stamp, see `cells.rs`).
        let cells: &mut Vec<Cell> = &mut self.cells;
        head.append(cells);
        std::mem::swap(cells, &mut head);
        for b in &mut self.branches {
            b.at += n;
        }
        ids
    }

    /// Inserts a notice, then `msgs` (with fresh ids), before cell `index`; kept branches from
    /// there on move along. Returns the messages' ids, in order.
    pub fn insert_before(&mut self, index: usize, notice: Notice, msgs: Vec<Message>) -> Vec<u64> {
        let index = index.min(self.cells.len());
        let mut cells = vec![Cell::Notice(Notice { id: self.fresh_id(), ..notice })];
        let mut ids = Vec::with_capacity(msgs.len());
        for mut m in msgs {
            m.id = self.fresh_id();
            ids.push(m.id);
            cells.push(Cell::Message(Arc::new(m)));
        }
        let n = cells.len();
        self.cells.splice(index..index, cells);
        for b in self.branches.iter_mut().filter(|b| b.at >= index) {
            b.at += n;
        }
        ids
    }

    /// Index of the cell with `id`. Searches from the end: the live message is nearly always last.
    #[must_use]
    pub fn index_of(&self, id: u64) -> Option<usize> {
        self.cells.iter().rposition(|c| c.id() == id)
    }

    #[must_use]
    pub fn message(&self, id: u64) -> Option<&Message> {
        self.index_of(id).and_then(|i| self.cells[i].message())
    }

    /// The message with `id`, to change its content (see [`Cells::message_mut`]).
    pub fn message_mut(&mut self, id: u64) -> Option<&mut Message> {
        self.cells.message_mut(id)
    }

    /// Empties the transcript (ids keep counting so stale cache entries never match).
    pub fn clear(&mut self) {
        self.cells.clear();
        self.branches.clear();
    }

    /// The messages a new request carries, borrowed: every user, assistant and tool message,
    /// except the reply in flight, notices, and turns that failed (the user resends those from
    /// the draft).
    #[must_use]
    pub fn request_refs(&self) -> Vec<&Message> {
        self.request_shared().into_iter().map(AsRef::as_ref).collect()
    }

    /// [`Transcript::request_refs`], shared: what a request task or a compare column holds on
    /// to. Pointers alone are copied, never a message.
    #[must_use]
    pub fn request_shared(&self) -> Vec<&Arc<Message>> {
        self.request_shared_before(self.cells.len())
    }

    /// What a request would carry of the cells before `end` (a compare opened from there).
    #[must_use]
    pub fn request_shared_before(&self, end: usize) -> Vec<&Arc<Message>> {
        let cells = self.cells[..end.min(self.cells.len())].iter().filter_map(Cell::shared);
        crate::engine::compact::sendable(cells).0
    }

    /// Moves the cells from `at` on into a kept branch, with the branches that hung off them.
    pub fn branch_off(&mut self, at: usize) {
        let at = at.min(self.cells.len());
        let cells = self.cells.split_off(at);
        let (nested, keep): (Vec<Branch>, Vec<Branch>) =
            std::mem::take(&mut self.branches).into_iter().partition(|b| b.at > at);
        self.branches = keep;
        self.branches.push(Branch { at, cells, nested });
    }

    /// How many other versions exist of the tail starting at cell `at`.
    #[must_use]
    pub fn versions_at(&self, at: usize) -> usize {
        self.branches.iter().filter(|b| b.at == at).count()
    }

    /// Swaps the tail from `at` with a kept version. `forward` takes the oldest kept version and
    /// keeps the current one as the newest; backward does the opposite, so the two undo each other.
    /// Returns false when there is no other version.
    pub fn switch_version(&mut self, at: usize, forward: bool) -> bool {
        let positions: Vec<usize> =
            self.branches.iter().enumerate().filter(|(_, b)| b.at == at).map(|(i, _)| i).collect();
        let pick = if forward { positions.first() } else { positions.last() };
        let Some(&pick) = pick else { return false };
        let chosen = self.branches.remove(pick);
        let current_cells = self.cells.split_off(at);
        let (nested, keep): (Vec<Branch>, Vec<Branch>) =
            std::mem::take(&mut self.branches).into_iter().partition(|b| b.at > at);
        self.branches = keep;
        let current = Branch { at, cells: current_cells, nested };
        if forward {
            self.branches.push(current);
        } else {
            let first = self.branches.iter().position(|b| b.at == at).unwrap_or(self.branches.len());
            self.branches.insert(first, current);
        }
        self.cells.extend(chosen.cells);
        self.branches.extend(chosen.nested);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::message::{MessageStatus, Role};

    fn reply(text: &str, status: MessageStatus) -> Message {
        let mut m = Message::with_text(Role::Assistant, text);
        m.status = status;
        m
    }

    #[test]
    fn request_skips_live_failed_and_notices() {
        let mut t = Transcript::default();
        t.push_message(Message::user("a"));
        t.push_message(reply("A", MessageStatus::Complete));
        t.push_notice(NoticeKind::Info, "note");
        t.push_message(Message::user("b"));
        t.push_message(reply("partial", MessageStatus::Failed));
        t.push_message(Message::user("c"));
        t.push_message(reply("half", MessageStatus::Cancelled));
        t.push_message(Message::user("d"));
        t.push_message(Message::assistant_pending());
        let texts: Vec<String> = t.request_refs().iter().map(|m| m.text().to_owned()).collect();
        assert_eq!(texts, ["a", "A", "c", "half", "d"]);
    }

    #[test]
    fn branches_switch_back_and_forth() {
        let mut t = Transcript::default();
        t.push_message(Message::user("q1"));
        t.push_message(reply("r1", MessageStatus::Complete));
        t.branch_off(1);
        t.push_message(reply("r2", MessageStatus::Complete));
        assert_eq!(t.versions_at(1), 1);
        assert!(t.switch_version(1, true));
        assert_eq!(t.cells[1].message().map(Message::text), Some("r1"));
        assert!(t.switch_version(1, false));
        assert_eq!(t.cells[1].message().map(Message::text), Some("r2"));
        assert_eq!(t.versions_at(1), 1);
    }
}
