//! Bringing the store up to date with a transcript, for the chat and for every compare column
//! alike (see `persist.rs` for what is saved and when). A [`Subject`] is one conversation as
//! the sync sees it — its record of what the store holds, its transcript, its model — so the
//! one algorithm serves both: a column streams into the store exactly as the chat does.

use super::effect::Effect;
use super::persist::{BranchKey, ConvKey, Numbers, Persist, PersistOp, STREAM_SAVE_MS, Slot};
use super::state::{State, TargetInfo};
use super::transcript::{Cell, Transcript};
use crate::engine::message::{Message, Role};
use crate::engine::reducer::{self, Ending};
use crate::store::ids::title_from_prompt;
use std::sync::Arc;

/// One conversation to keep saved.
struct Subject<'a> {
    persist: &'a mut Persist,
    transcript: &'a mut Transcript,
    target: &'a TargetInfo,
    /// When the reply in flight went out (a reply saved while quitting is settled with it).
    started: Option<u64>,
    /// The compare group and column position a compare column is saved under.
    compare: Option<(&'a str, u32)>,
}

/// What became of a message [`save_one`] looked at.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Save {
    /// Saved, or nothing to save.
    Done,
    /// Changed but held back by its pace: to look at again.
    Later,
}

/// The app clock, and whether the app is quitting (then live replies are saved at once, as
/// cancelled, or as interrupted by the signal that ended the session).
#[derive(Clone, Copy)]
struct Now {
    ms: u64,
    hurry: bool,
    signal: Option<&'static str>,
}

/// The message as the store gets it: shared when it holds no raw frames (a history of 10,000
/// messages a compare column saves as its own is not copied on the UI task); else a copy
/// without them (not stored by default, and most of the size of a long reply), counted as
/// dropped the way the store's own streaming save does.
fn store_copy(m: &mut Arc<Message>) -> Arc<Message> {
    if m.frames.is_empty() {
        return Arc::clone(m);
    }
    // Lent out and put back: the frames are not copied. A holder of the message (a request
    // in flight) keeps it: the transcript's gets a copy once, as any change would.
    let m = Arc::make_mut(m);
    let frames = std::mem::take(&mut m.frames);
    let mut copy = m.clone();
    m.frames = frames;
    copy.frames_bytes = 0;
    copy.frames_dropped += m.frames.len() as u64;
    Arc::new(copy)
}

impl State {
    /// Brings the store up to date with the chat's transcript and the open compare's columns.
    /// Runs at the end of every `apply`; its work does not grow with the history while the
    /// transcript keeps its shape (a delta, a tick): only the messages touched are looked at.
    pub(crate) fn persist_sync(&mut self, fx: &mut Vec<Effect>) {
        if !self.persist.enabled {
            return;
        }
        let now = Now { ms: self.now_ms, hurry: self.quit, signal: self.terminated_by };
        // Local numbers are handed out session-wide (the runner maps them to store ids), so the
        // chat's record lends its counter to every conversation synced here.
        let mut numbers = self.persist.numbers;
        let started = self.live.as_ref().and_then(|l| l.started_ms);
        Subject {
            persist: &mut self.persist,
            transcript: &mut self.transcript,
            target: &self.target,
            started,
            compare: None,
        }
        .sync(&mut numbers, now, fx);
        self.persist.numbers = numbers;
        self.persist_columns(fx);
    }

    /// Brings the store up to date with the open compare's columns: each column is a
    /// conversation of its own, saved while it streams, from its first prompt on.
    pub(crate) fn persist_columns(&mut self, fx: &mut Vec<Effect>) {
        if !self.persist.enabled {
            return;
        }
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let now = Now { ms: self.now_ms, hurry: self.quit, signal: self.terminated_by };
        let mut numbers = self.persist.numbers;
        for col in &mut cmp.columns {
            if col.persist.conv.is_none() && seeded_only(col) {
                // Only the chat's history so far: that is the chat's conversation, not this one.
                continue;
            }
            Subject {
                persist: &mut col.persist,
                transcript: &mut col.transcript,
                target: &col.target,
                started: col.live.as_ref().and_then(|l| l.started_ms),
                compare: Some((cmp.group.as_str(), u32::try_from(col.index).unwrap_or(0))),
            }
            .sync(&mut numbers, now, fx);
        }
        self.persist.numbers = numbers;
    }
}

/// Whether a column holds no more messages than it was opened with. Counted again only when
/// its transcript changed shape (the count cannot move otherwise): a column opened on a long
/// history costs no walk of it per `apply`.
fn seeded_only(col: &mut super::compare::Column) -> bool {
    let stamp = col.transcript.cells.stamp();
    if col.persist.quiet == Some(stamp) {
        return true;
    }
    let quiet = col.transcript.cells.iter().filter_map(Cell::message).count() <= col.seeded;
    col.persist.quiet = quiet.then_some(stamp);
    quiet
}

impl Subject<'_> {
    fn sync(&mut self, numbers: &mut Numbers, now: Now, fx: &mut Vec<Effect>) {
        let stamp = self.transcript.cells.stamp();
        let touched = self.transcript.cells.take_touched();
        // The common case (a delta, a tick, a draw report): the transcript has the shape the path
        // was made to match, so only the messages touched since can need a save; no walk of the
        // history. Quitting walks: a live reply is settled whether or not it changed.
        if self.persist.synced == Some(stamp) && !now.hurry {
            for id in touched {
                if !self.persist.due.contains(&id) {
                    self.persist.due.push(id);
                }
            }
            return self.save_due(now, fx);
        }
        self.walk(numbers, now, fx);
        self.persist.synced = self.persist.conv.is_some().then_some(stamp);
    }

    /// The whole sync: the path compared with the transcript's messages, then every message
    /// on it saved whose revision moved.
    fn walk(&mut self, numbers: &mut Numbers, now: Now, fx: &mut Vec<Effect>) {
        // The walk looks at every message: what was due is seen again below.
        self.persist.due.clear();
        let path = &self.persist.path;
        let mut count = 0;
        let mut same = true;
        for m in self.transcript.cells.iter().filter_map(Cell::message) {
            same &= path.get(count).is_some_and(|s| s.id == m.id);
            count += 1;
        }
        if same && count == path.len() && count > 0 && self.persist.conv.is_some() {
            return self.save_changed(now, fx);
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
            self.create_conversation(numbers, &mut ops);
        }
        let Some(conv) = self.persist.conv.clone() else { return };
        let common = ids.iter().zip(&self.persist.path).take_while(|(a, s)| **a == s.id).count();
        if common < self.persist.path.len() || ids.len() > self.persist.path.len() {
            self.settle_vanished(&ids, &mut ops);
            self.reshape(numbers, &conv, &ids, common, &mut ops);
        }
        push_ops(fx, ops);
        self.save_changed(now, fx);
    }

    /// Saves every message on the path whose revision moved since its last save (see
    /// [`save_one`]); the ones left for later are due.
    fn save_changed(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let Some(conv) = self.persist.conv.clone() else { return };
        let mut ops = Vec::new();
        let mut cells = self.transcript.cells.messages_unmarked();
        for position in 0..self.persist.path.len() {
            let Some(m) = cells.next() else { break };
            if save_one(self.persist, self.started, (&conv, position), m, now, &mut ops) == Save::Later {
                self.persist.due.push(m.id);
            }
        }
        push_ops(fx, ops);
    }

    /// Saves the due messages (the path is unchanged since the last walk): the touched ones,
    /// and the ones a pace held back.
    fn save_due(&mut self, now: Now, fx: &mut Vec<Effect>) {
        if self.persist.due.is_empty() {
            return;
        }
        let Some(conv) = self.persist.conv.clone() else { return };
        let mut ops = Vec::new();
        let mut due = std::mem::take(&mut self.persist.due);
        due.retain(|&id| {
            // From the end: what is touched is nearly always the last message.
            let position = self.persist.path.iter().rposition(|s| s.id == id);
            let message = self.transcript.cells.message_unmarked(id);
            let (Some(position), Some(m)) = (position, message) else { return false };
            save_one(self.persist, self.started, (&conv, position), m, now, &mut ops) == Save::Later
        });
        self.persist.due = due;
        push_ops(fx, ops);
    }

    fn create_conversation(&mut self, numbers: &mut Numbers, ops: &mut Vec<PersistOp>) {
        let msgs = || self.transcript.cells.iter().filter_map(Cell::message);
        let first = msgs().find(|m| m.role() == Role::User).or_else(|| msgs().next());
        let mut title = title_from_prompt(first.map_or("", |m| m.text()));
        if title.is_empty() {
            title = "untitled".to_owned();
        }
        let p = &mut self.persist;
        p.detach();
        numbers.next_local += 1;
        p.conv = Some(ConvKey::Local(numbers.next_local));
        p.title = Some(title.clone());
        ops.push(PersistOp::Create {
            local: numbers.next_local,
            title,
            model: self.target.model.clone(),
            provider: self.target.provider.clone(),
            api: self.target.api.name().to_owned(),
            compare: self.compare.map(|(group, column)| (group.to_owned(), column)),
        });
    }

    /// The path changed from `common` on: messages that left it are kept (they may come back
    /// with a version switch); the new tail is either kept messages coming back (activate their
    /// branch) or new ones (fork a branch for them, unless they simply extend the path).
    fn reshape(&mut self, numbers: &mut Numbers, conv: &ConvKey, ids: &[u64], common: usize, ops: &mut Vec<PersistOp>) {
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
            let branch: BranchKey = numbers.fresh_branch();
            ops.push(PersistOp::Fork { conv: conv.clone(), parent: p.active, branch, position: p.offset + common });
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
            reducer::finish(Arc::make_mut(&mut msg), Ending::Cancelled, elapsed);
            ops.push(PersistOp::Save { conv, branch, position, msg });
        }
    }
}

/// Saves the message at `index` of the path if its revision moved since its last save
/// (a live one at most every [`STREAM_SAVE_MS`], longer for a heavy one, unless the app is
/// quitting). The one rule for what is saved when.
fn save_one(
    p: &mut Persist,
    started: Option<u64>,
    (conv, index): (&ConvKey, usize),
    m: &mut Arc<Message>,
    now: Now,
    ops: &mut Vec<PersistOp>,
) -> Save {
    // `index` is into the path; the store counts from the conversation's start (`offset`).
    let position = p.offset + index;
    let Some(slot) = p.path.get_mut(index) else { return Save::Done };
    let live = m.is_live();
    // Quitting settles a live reply whose latest text is already stored as streaming
    // (once: the settled save clears `live_copy`), or the next start calls it a crash.
    let unsettled = now.hurry && live && p.live_copy.as_ref().is_some_and(|c| c.3.id == m.id);
    if slot.revision == Some(m.revision) && !unsettled {
        return Save::Done;
    }
    let pace = crate::engine::save_pace::interval_ms(m, STREAM_SAVE_MS);
    if live && slot.revision.is_some() && !now.hurry && now.ms.saturating_sub(slot.at_ms) < pace {
        return Save::Later;
    }
    let mut msg = store_copy(m);
    slot.revision = Some(m.revision);
    slot.at_ms = now.ms;
    let branch = slot.branch;
    if live && now.hurry {
        // Quitting mid-stream stops the reply: it is kept as cancelled, not left "streaming".
        let msg = Arc::make_mut(&mut msg);
        reducer::finish(msg, Ending::Cancelled, now.ms.saturating_sub(started.unwrap_or(now.ms)));
        if let Some(signal) = now.signal {
            interrupted_by(msg, signal);
        }
        p.live_copy = None;
    } else if live {
        p.live_copy = Some((conv.clone(), branch, position, msg.clone()));
    } else if p.live_copy.as_ref().is_some_and(|c| c.3.id == m.id) {
        p.live_copy = None;
    }
    ops.push(PersistOp::Save { conv: conv.clone(), branch, position, msg });
    Save::Done
}

/// A reply cut because the process was told to end: stored as interrupted, naming the signal,
/// not as cancelled by the user nor as "killed or crashed" (what a reply left streaming by a
/// process that vanished is marked on the next start).
fn interrupted_by(msg: &mut Message, signal: &str) {
    msg.status = crate::engine::message::MessageStatus::Interrupted;
    msg.error = Some(reducer::signal_reason(signal));
}

/// Store operations go before any request in the same batch (the chat's or a column's): the
/// prompt is queued for the disk before the request that carries it goes out.
fn push_ops(fx: &mut Vec<Effect>, ops: Vec<PersistOp>) {
    if ops.is_empty() {
        return;
    }
    let request = |e: &Effect| {
        matches!(e, Effect::StartRequest { .. } | Effect::Compare(super::compare::CompareEffect::Start { .. }))
    };
    let at = fx.iter().position(request).unwrap_or(fx.len());
    fx.splice(at..at, ops.into_iter().map(Effect::Persist));
}

#[cfg(test)]
#[path = "persist_history_tests.rs"]
mod history_tests;
