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

use super::effect::Effect;
use super::state::State;
use super::transcript::{Cell, NoticeKind};
use crate::engine::message::{Message, Role};
use crate::engine::reducer::{self, Ending};
use crate::store::ids::title_from_prompt;
use crate::store::{ConversationSummary, Hit, StoredConversation};
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
    /// Create conversation `local` (its first message is about to be saved).
    Create { local: u64, title: String, model: String, provider: String, api: String },
    /// Save the message at `position` of `branch` (insert or update).
    Save { conv: ConvKey, branch: BranchKey, position: usize, msg: Box<Message> },
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
    /// A page of the conversation list (`offset` > 0: a further page).
    Listed { seq: u64, offset: usize, result: Result<Vec<ConversationSummary>, String> },
    /// Search hits for request `seq`.
    Found { seq: u64, result: Result<Vec<Hit>, String> },
    /// A conversation loaded with its branches, to replace the transcript.
    Opened(Result<Box<Loaded>, String>),
    /// Prompts of recent conversations, oldest first, for the composer's history.
    Prompts(Vec<String>),
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

/// The state's record of what the store holds.
#[derive(Debug, Default)]
pub struct Persist {
    /// A store is open.
    pub enabled: bool,
    /// Why there is no store, when there is none.
    pub off_reason: Option<String>,
    pub conv: Option<ConvKey>,
    /// The store id of the current conversation, once known.
    pub id: Option<String>,
    pub title: Option<String>,
    next_local: u64,
    /// Counts down: session branches are negative.
    next_branch: i64,
    active: BranchKey,
    /// The current path, by position.
    path: Vec<Slot>,
    /// Messages off the current path (kept versions): their branch and saved revision.
    kept: HashMap<u64, Slot>,
    /// The last save of a reply that was still live, to settle it as cancelled if it leaves the
    /// transcript while live (a `/new` mid-stream).
    live_copy: Option<(ConvKey, BranchKey, usize, Box<Message>)>,
    /// Store ids of the branches forked this session.
    forked: HashMap<BranchKey, i64>,
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
        self.kept.clear();
        self.live_copy = None;
    }

    /// Whether conversation `id` is the one on screen.
    #[must_use]
    pub fn is_current(&self, id: &str) -> bool {
        self.id.as_deref() == Some(id)
    }

    /// The store branch that holds the message at `position` of the path, when known.
    #[must_use]
    pub fn branch_at(&self, position: usize) -> Option<i64> {
        let b = self.path.get(position)?.branch;
        if b >= 0 { Some(b) } else { self.forked.get(&b).copied() }
    }

    fn fresh_branch(&mut self) -> BranchKey {
        self.next_branch -= 1;
        self.next_branch
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

/// A copy of a message for the store, without its raw frames (not stored by default, and most
/// of the size of a long reply), counted as dropped the way the store's own streaming save does.
fn store_copy(m: &mut Message) -> Box<Message> {
    let frames = std::mem::take(&mut m.frames);
    let mut copy = Box::new(m.clone());
    m.frames = frames;
    copy.frames_bytes = 0;
    copy.frames_dropped += m.frames.len() as u64;
    copy
}

impl State {
    /// Brings the store up to date with the transcript (see the module header). Runs at the end
    /// of every `apply`; cheap when nothing changed (one pass comparing ids and revisions).
    pub(crate) fn persist_sync(&mut self, fx: &mut Vec<Effect>) {
        if !self.persist.enabled {
            return;
        }
        // The common case (a delta, a tick, a draw report) allocates nothing: the path is unchanged.
        let path = &self.persist.path;
        let mut count = 0;
        let mut same = true;
        for m in self.transcript.cells.iter().filter_map(Cell::message) {
            same &= path.get(count).is_some_and(|s| s.id == m.id);
            count += 1;
        }
        if same && count == path.len() && count > 0 && self.persist.conv.is_some() {
            return self.save_changed(fx);
        }
        let mut ops = Vec::new();
        let ids: Vec<u64> = self.transcript.cells.iter().filter_map(Cell::message).map(|m| m.id).collect();
        if ids.is_empty() {
            if self.persist.conv.is_some() {
                self.settle_vanished(&ids, &mut ops);
                self.persist.detach();
            }
            return push_ops(fx, ops);
        }
        if self.persist.conv.is_none() {
            self.create_conversation(&mut ops);
        }
        let Some(conv) = self.persist.conv.clone() else { return };
        let common = ids.iter().zip(&self.persist.path).take_while(|(a, s)| **a == s.id).count();
        if common < self.persist.path.len() || ids.len() > self.persist.path.len() {
            self.settle_vanished(&ids, &mut ops);
            self.reshape(&conv, &ids, common, &mut ops);
        }
        push_ops(fx, ops);
        self.save_changed(fx);
    }

    /// Saves every message on the path whose revision moved since its last save (a live one at
    /// most every [`STREAM_SAVE_MS`], unless the app is quitting).
    fn save_changed(&mut self, fx: &mut Vec<Effect>) {
        let Some(conv) = self.persist.conv.clone() else { return };
        let mut ops = Vec::new();
        let now = self.now_ms;
        let hurry = self.quit;
        let started = self.live.as_ref().and_then(|l| l.started_ms);
        let mut cells = self.transcript.cells.iter_mut().filter_map(|c| match c {
            Cell::Message(m) => Some(m),
            Cell::Notice(_) => None,
        });
        for (position, slot) in self.persist.path.iter_mut().enumerate() {
            let Some(m) = cells.next() else { break };
            if slot.revision == Some(m.revision) {
                continue;
            }
            let live = m.is_live();
            if live && slot.revision.is_some() && !hurry && now.saturating_sub(slot.at_ms) < STREAM_SAVE_MS {
                continue;
            }
            let mut msg = store_copy(m);
            slot.revision = Some(m.revision);
            slot.at_ms = now;
            if live && hurry {
                // Quitting mid-stream stops the reply: it is kept as cancelled, not left "streaming".
                reducer::finish(&mut msg, Ending::Cancelled, now.saturating_sub(started.unwrap_or(now)));
                self.persist.live_copy = None;
            } else if live {
                self.persist.live_copy = Some((conv.clone(), slot.branch, position, msg.clone()));
            } else if self.persist.live_copy.as_ref().is_some_and(|c| c.3.id == m.id) {
                self.persist.live_copy = None;
            }
            ops.push(PersistOp::Save { conv: conv.clone(), branch: slot.branch, position, msg });
        }
        push_ops(fx, ops);
    }

    fn create_conversation(&mut self, ops: &mut Vec<PersistOp>) {
        let msgs = || self.transcript.cells.iter().filter_map(Cell::message);
        let first = msgs().find(|m| m.role() == Role::User).or_else(|| msgs().next());
        let mut title = title_from_prompt(first.map_or("", |m| m.text()));
        if title.is_empty() {
            title = "untitled".to_owned();
        }
        let p = &mut self.persist;
        p.detach();
        p.next_local += 1;
        p.conv = Some(ConvKey::Local(p.next_local));
        p.title = Some(title.clone());
        ops.push(PersistOp::Create {
            local: p.next_local,
            title,
            model: self.target.model.clone(),
            provider: self.target.provider.clone(),
            api: self.target.api.name().to_owned(),
        });
    }

    /// The path changed from `common` on: messages that left it are kept (they may come back
    /// with a version switch); the new tail is either kept messages coming back (activate their
    /// branch) or new ones (fork a branch for them, unless they simply extend the path).
    fn reshape(&mut self, conv: &ConvKey, ids: &[u64], common: usize, ops: &mut Vec<PersistOp>) {
        let p = &mut self.persist;
        let replaced = common < p.path.len();
        for s in p.path.drain(common..) {
            p.kept.insert(s.id, s);
        }
        let tail: Vec<Slot> = ids[common..].iter().filter_map(|id| p.kept.remove(id)).collect();
        if let Some(last) = tail.last() {
            // A kept version came back: the branch of its last message is the one to show.
            if last.branch != p.active {
                p.active = last.branch;
                ops.push(PersistOp::Activate { conv: conv.clone(), branch: p.active });
            }
        } else if replaced {
            let branch = p.fresh_branch();
            ops.push(PersistOp::Fork { conv: conv.clone(), parent: p.active, branch, position: common });
            p.active = branch;
        }
        let active = p.active;
        let mut tail = tail.into_iter().peekable();
        for &id in &ids[common..] {
            match tail.next_if(|s| s.id == id) {
                Some(s) => p.path.push(s),
                None => p.path.push(Slot { id, branch: active, revision: None, at_ms: 0 }),
            }
        }
    }

    /// A reply saved while live that is no longer in the transcript is saved once more as
    /// cancelled, so the list does not show it streaming forever.
    fn settle_vanished(&mut self, ids: &[u64], ops: &mut Vec<PersistOp>) {
        let gone = self.persist.live_copy.as_ref().is_some_and(|c| !ids.contains(&c.3.id));
        if !gone {
            return;
        }
        if let Some((conv, branch, position, mut msg)) = self.persist.live_copy.take() {
            let elapsed = msg.timing.ttft_ms.unwrap_or(0);
            reducer::finish(&mut msg, Ending::Cancelled, elapsed);
            ops.push(PersistOp::Save { conv, branch, position, msg });
        }
    }

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
                if self.persist.conv == Some(ConvKey::Local(local)) {
                    self.persist.id = Some(id.clone());
                }
                self.conversation_created(&id);
            }
            StoreMsg::Forked { branch, id } => {
                self.persist.forked.insert(branch, id);
            }
            StoreMsg::Listed { seq, offset, result } => self.on_listed(seq, offset, result),
            StoreMsg::Found { seq, result } => self.on_found(seq, result),
            StoreMsg::Opened(Ok(loaded)) => self.on_opened(*loaded, fx),
            StoreMsg::Opened(Err(e)) => self.flash_error(format!("cannot open the conversation: {e}")),
            StoreMsg::Prompts(prompts) => self.composer.seed_history(prompts),
        }
    }
}

/// Store operations go before any request in the same batch: the prompt is queued for the disk
/// before the request that carries it goes out.
fn push_ops(fx: &mut Vec<Effect>, ops: Vec<PersistOp>) {
    if ops.is_empty() {
        return;
    }
    let at = fx.iter().position(|e| matches!(e, Effect::StartRequest { .. })).unwrap_or(fx.len());
    fx.splice(at..at, ops.into_iter().map(Effect::Persist));
}

#[cfg(test)]
#[path = "persist_tests.rs"]
mod tests;
