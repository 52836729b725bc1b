//! Persistence as seen by the state: after every `apply`, [`State::persist_sync`] compares the
//! transcript's messages with what it last handed to the store and emits `Effect::Persist`
//! operations for the difference (a new conversation on the first message, a save for every
//! new or changed message by position, a fork when an edit or regenerate replaced the tail, a
//! branch switch when the user picked a kept version). It performs no I/O: the effect runner
//! (`storage.rs`) talks to the store, and answers come back as `Msg::Store`.
//!
//! Saving by position whatever the transcript holds means every message is covered — user
//! prompts, streaming replies, tool results pushed by the tool loop — without the code that
//! pushes them knowing about the store. A reply still streaming is handed over at most every
//! [`STREAM_SAVE_MS`] of app clock (the loop ticks while it streams, so a pause is saved too);
//! the store's writer then keeps at most one disk write per 250 ms.
//!
//! The sync itself is `persist_sync.rs`; it keeps compare columns saved the same way, each
//! column a conversation of its own (with its compare group) holding its own [`Persist`].

use super::effect::Effect;
use super::state::State;
use super::transcript::NoticeKind;
use crate::engine::message::Message;
use crate::store::entries::ListEntry;
use crate::store::{Hit, StoredConversation};
use std::collections::HashMap;

/// A streaming reply is handed to the store at most this often (app clock).
pub const STREAM_SAVE_MS: u64 = 100;

/// Which conversation an operation is about: one created in this session (numbered by the
/// state; the runner learns its store id when it creates it) or one loaded from the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ConvKey {
    Local(u64),
    Stored(String),
}

/// A branch: a store branch id for branches that came from the store (0 is the root), a
/// negative number for a branch forked in this session (the runner maps it to the store's id).
pub type BranchKey = i64;

/// One thing for the store to do.
#[derive(Debug, Clone, PartialEq)]
pub enum PersistOp {
    /// Create conversation `local` (its first message is about to be saved); `compare` is the
    /// compare group and column position of a compare column's conversation.
    Create { local: u64, title: String, model: String, provider: String, api: String, compare: Option<(String, u32)> },
    /// Save the message at `position` of `branch` (insert or update).
    Save { conv: ConvKey, branch: BranchKey, position: usize, msg: std::sync::Arc<Message> },
    /// Fork `branch` off `parent` at `position` and make it the active branch.
    Fork { conv: ConvKey, parent: BranchKey, branch: BranchKey, position: usize },
    /// Make `branch` the active branch (the user switched versions).
    Activate { conv: ConvKey, branch: BranchKey },
    /// Retitle a stored conversation.
    Rename { id: String, title: String },
    /// Delete a stored conversation with everything in it.
    Delete { id: String },
    /// List conversations, newest first; answer with `StoreMsg::Listed`.
    List { seq: u64, offset: usize },
    /// Full-text search; answer with `StoreMsg::Found`.
    Search { seq: u64, query: String },
    /// Load a conversation with every branch; answer with `StoreMsg::Opened`.
    Open { id: String, branch: Option<i64>, focus: Option<usize> },
    /// Load every column of a stored compare; answer with `StoreMsg::OpenedCompare`.
    OpenCompare { group: String },
    /// Load positions `[0, upto)` of conversation `id`'s `branch`, left out when it was
    /// reopened on its tail.
    LoadHead { id: String, branch: i64, upto: usize },
    /// The messages of `branch` from `from` on were renumbered by `by`, past turns another
    /// palaver added (`StoreMsg::Interleaved`): the store stops moving them itself.
    Adopt { conv: ConvKey, branch: BranchKey, from: usize, by: usize },
}

/// What `--continue` / `--resume ID` asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reopen {
    /// `--continue`: the most recent conversation.
    pub last: bool,
    /// `--resume ID` (an id or a unique prefix).
    pub id: Option<String>,
    /// A model was given on the command line: keep it rather than the conversation's.
    pub keep_model: bool,
    /// What the CLI found different about where the conversation continues (a flag, a
    /// provider gone from the config): shown in the transcript once it is open.
    pub notice: Option<String>,
    /// `--compact`: summarise the reopened turns as soon as the screen is up.
    pub compact: bool,
}

/// A conversation loaded for display: the active branch and every other branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub active: StoredConversation,
    pub others: Vec<StoredConversation>,
    /// A branch other than the stored active one was asked for (a search hit on it).
    pub switch: bool,
    /// Message position to scroll to (a search hit).
    pub focus: Option<usize>,
    /// Whether the conversation's model replaces the current one.
    pub adopt_model: bool,
    /// Said in the transcript once the conversation is open (see [`Reopen::notice`]).
    pub notice: Option<String>,
    /// Messages before `active.messages` not loaded yet: the screen opens on a long
    /// conversation's tail and [`PersistOp::LoadHead`] brings them (see `head.rs`).
    pub older: usize,
}

/// What the store side reports back.
#[derive(Debug)]
pub enum StoreMsg {
    /// The store is open; persistence is on.
    Ready,
    /// The store could not be opened; the app works in memory.
    Unavailable(String),
    /// A notice from the writer (failing or recovered writes).
    Notice { error: bool, text: String },
    /// Conversation `local` was created with store id `id`.
    Created { local: u64, id: String },
    /// Session branch `branch` has store id `id`.
    Forked { branch: BranchKey, id: i64 },
    /// A page of the conversation list (`offset` > 0: a further page); a compare is one entry.
    Listed { seq: u64, offset: usize, result: Result<Vec<ListEntry>, String> },
    /// Search hits for request `seq`.
    Found { seq: u64, result: Result<Vec<Hit>, String> },
    /// A conversation loaded with its branches, to replace the transcript.
    Opened(Result<Box<Loaded>, String>),
    /// The messages before a reopened conversation's tail (`LoadHead`'s answer).
    Head { id: String, branch: i64, result: Result<Vec<super::transcript::Cell>, String> },
    /// A stored compare's columns, to reopen on the compare screen.
    OpenedCompare(Result<Box<super::conversations::compare::LoadedCompare>, String>),
    /// Prompts of recent conversations, oldest first, for the composer's history.
    Prompts(Vec<String>),
    /// Another palaver added these turns to a conversation open here; the store saved this
    /// one's after them (`text` says so in words). See `interleave.rs`.
    Interleaved { added: Box<crate::store::others::Added>, text: String },
}

/// A message on the current path as last handed to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub id: u64,
    pub branch: BranchKey,
    /// The revision saved; `None` before the first save.
    pub revision: Option<u64>,
    /// App clock of the last save.
    pub at_ms: u64,
}

/// Session-local numbers for conversations created and branches forked this session. They are
/// unique across the chat and every compare column, because the runner maps them to store ids
/// in one table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Numbers {
    pub next_local: u64,
    /// Counts down: session branches are negative.
    pub next_branch: i64,
}

impl Numbers {
    pub fn fresh_branch(&mut self) -> BranchKey {
        self.next_branch -= 1;
        self.next_branch
    }
}

/// The state's record of what the store holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Persist {
    /// A store is open.
    pub enabled: bool,
    /// Why there is no store, when there is none.
    pub off_reason: Option<String>,
    pub conv: Option<ConvKey>,
    /// The store id of the current conversation, once known.
    pub id: Option<String>,
    pub title: Option<String>,
    /// The session's numbering (the chat's record holds it for every conversation synced).
    pub(crate) numbers: Numbers,
    pub(crate) active: BranchKey,
    /// The current path: `path[i]` is the message at store position `offset + i`.
    pub(crate) path: Vec<Slot>,
    /// Positions before the path not loaded yet (a long conversation reopened on its tail);
    /// 0 once they are, and for every conversation begun here.
    pub(crate) offset: usize,
    /// The positions before `offset` could not be loaded: requests go without them.
    pub(crate) head_failed: bool,
    /// Messages off the current path (kept versions): their branch and saved revision.
    pub(crate) kept: HashMap<u64, Slot>,
    /// The last save of a reply that was still live, to settle it as cancelled if it leaves the
    /// transcript while live (a `/new` mid-stream).
    pub(crate) live_copy: Option<(ConvKey, BranchKey, usize, std::sync::Arc<Message>)>,
    /// Store ids of the branches forked this session.
    pub(crate) forked: HashMap<BranchKey, i64>,
    /// The transcript's stamp (`cells.rs`) when `path` was last made to match it: while it is
    /// the same, the sync looks only at the messages touched since (see `persist_sync.rs`).
    pub(crate) synced: Option<u64>,
    /// Messages on the path touched since their last save and not saved yet (a live reply
    /// waiting for its pace): looked at again by every sync until saved.
    pub(crate) due: Vec<u64>,
    /// The transcript's stamp when it was last found holding only the history it was opened
    /// with (a compare column before its first prompt of its own): nothing to save while it
    /// keeps that shape, and no count of its messages on every `apply`.
    pub(crate) quiet: Option<u64>,
    /// Sequence number of the last list request.
    pub list_seq: u64,
}

impl Persist {
    /// Forgets the conversation: the next message starts a new one.
    pub fn detach(&mut self) {
        self.conv = None;
        self.id = None;
        self.title = None;
        self.active = 0;
        self.path.clear();
        self.offset = 0;
        self.head_failed = false;
        self.kept.clear();
        self.live_copy = None;
        self.synced = None;
        self.due.clear();
        self.quiet = None;
    }

    /// Whether conversation `id` is the one on screen.
    #[must_use]
    pub fn is_current(&self, id: &str) -> bool {
        self.id.as_deref() == Some(id)
    }

    /// The store branch that holds the message at `position` of the path, when known.
    #[must_use]
    pub fn branch_at(&self, position: usize) -> Option<i64> {
        let b = self.path.get(position.checked_sub(self.offset)?)?.branch;
        if b >= 0 { Some(b) } else { self.forked.get(&b).copied() }
    }

    /// Takes over a loaded conversation: `path` and `kept` as (message id, owning branch, revision).
    pub(crate) fn adopt(
        &mut self,
        id: &str,
        title: &str,
        active: i64,
        path: &[(u64, i64, u64)],
        kept: &[(u64, i64, u64)],
    ) {
        self.detach();
        self.conv = Some(ConvKey::Stored(id.to_owned()));
        self.id = Some(id.to_owned());
        self.title = Some(title.to_owned());
        self.active = active;
        let slot = |&(id, branch, rev): &(u64, i64, u64)| Slot { id, branch, revision: Some(rev), at_ms: 0 };
        self.path = path.iter().map(slot).collect();
        self.kept = kept.iter().map(|k| (k.0, slot(k))).collect();
    }
}

impl State {
    /// Handles a report from the store side.
    pub(crate) fn on_store(&mut self, msg: StoreMsg, fx: &mut Vec<Effect>) {
        self.dirty = true;
        match msg {
            StoreMsg::Ready => {
                self.persist.enabled = true;
                self.persist.off_reason = None;
            }
            StoreMsg::Unavailable(reason) => {
                self.persist.enabled = false;
                self.transcript.push_notice(
                    NoticeKind::Error,
                    format!("history is off: {reason}; this conversation stays in memory only"),
                );
                self.persist.off_reason = Some(reason);
            }
            StoreMsg::Notice { error, text } => {
                let kind = if error { NoticeKind::Error } else { NoticeKind::Info };
                self.transcript.push_notice(kind, text);
                if self.scroll.follow {
                    self.scroll_bottom();
                }
            }
            StoreMsg::Created { local, id } => {
                let columns = self.compare.active.iter_mut().flat_map(|c| c.columns.iter_mut());
                for p in std::iter::once(&mut self.persist).chain(columns.map(|c| &mut c.persist)) {
                    if p.conv == Some(ConvKey::Local(local)) {
                        p.id = Some(id.clone());
                    }
                }
                self.conversation_created(&id);
            }
            StoreMsg::Forked { branch, id } => {
                // Branch numbers are session-wide, so every record may hold the mapping: only the
                // conversation that forked the branch ever looks it up.
                let columns = self.compare.active.iter_mut().flat_map(|c| c.columns.iter_mut());
                for p in std::iter::once(&mut self.persist).chain(columns.map(|c| &mut c.persist)) {
                    p.forked.insert(branch, id);
                }
            }
            StoreMsg::Listed { seq, offset, result } => self.on_listed(seq, offset, result),
            StoreMsg::Found { seq, result } => self.on_found(seq, result),
            StoreMsg::Opened(Ok(loaded)) => {
                let note = super::conversations::compare::column_note(&loaded);
                self.on_opened(*loaded, fx);
                if let Some(note) = note {
                    self.transcript.push_notice(NoticeKind::Info, note);
                }
            }
            StoreMsg::Head { id, branch, result } => self.on_head(&id, branch, result),
            StoreMsg::OpenedCompare(Ok(loaded)) => self.on_opened_compare(*loaded, fx),
            StoreMsg::OpenedCompare(Err(e)) => self.flash_error(format!("cannot open the compare: {e}")),
            StoreMsg::Opened(Err(e)) => self.flash_error(format!("cannot open the conversation: {e}")),
            StoreMsg::Prompts(prompts) => self.composer.seed_history(prompts),
            StoreMsg::Interleaved { added, text } => self.on_interleaved(*added, text, fx),
        }
    }
}

#[cfg(test)]
#[path = "persist_tests.rs"]
mod tests;
