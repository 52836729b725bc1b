//! The headless runner's recorder: every `-p` run is a stored conversation (or the next turn
//! of one, with `--continue` or `--resume ID`), its prompt on disk before the request goes out
//! and its reply saved while it streams; a compare column is a conversation of its group; a
//! prompt-set cell is stored as a cell, not here.

use super::stop::Stop;
use crate::config::Paths;
use crate::engine::message::Message;
use crate::engine::target::Target;
use crate::store::ids::title_from_prompt;
use crate::store::lock::{BUSY_WAIT, ConversationLock, LockError};
use crate::store::{NewConversation, StoreHandle, StoreOptions, StoredConversation};
use std::time::{Duration, Instant};

/// Where the command line's notices go (it prints them on stderr).
pub type Say<'a> = &'a (dyn Fn(&str) + Sync);

/// Which earlier conversation a `-p` run continues: `--continue` (the latest) or `--resume ID`.
#[derive(Debug, Clone, Default)]
pub struct Reopen {
    pub continue_last: bool,
    pub resume: Option<String>,
}

impl Reopen {
    fn any(&self) -> bool {
        self.continue_last || self.resume.is_some()
    }
}

/// Why a run could not begin (the reason was said already).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// A usage problem: an unknown id, no usable store, a conversation busy past the wait.
    Usage,
    /// The user pressed Ctrl+C while waiting for a busy conversation.
    Interrupted,
}

fn unknown(id: &str, say: Say<'_>) -> Refused {
    say(&format!("no conversation with ID {id} (see `palaver history list`)"));
    Refused::Usage
}

/// A streaming reply is handed to the store at most this often: a checkpoint rewrites the whole
/// reply (its search index is written once, when it ends), so checkpoints go by a time budget, not by events. The first
/// delta is saved at once (a reply killed early still leaves its start), the finished reply at
/// once, and a timer in the stream loop saves a reply that stopped changing, so a pause never
/// leaves the newest text unsaved for longer than this. A quarter second matches the writer's
/// own pacing: a `kill -9` loses at most that much of what was printed.
const STREAM_SAVE_EVERY: Duration = Duration::from_millis(250);

/// A heavy reply is saved less often (see [`crate::engine::save_pace`]).
fn save_interval(msg: &Message) -> Duration {
    Duration::from_millis(crate::engine::save_pace::interval_ms(msg, STREAM_SAVE_EVERY.as_millis() as u64))
}

/// The headless runner's link to the store. Without a store (it could not be opened) every
/// method does nothing.
pub struct Recorder {
    store: Option<StoreHandle>,
    conv: String,
    last_save: Option<Instant>,
    dirty: bool,
    /// The current pacing of streaming saves (see [`save_interval`]).
    interval: Duration,
    /// Held while a continued conversation is appended to (see `store::lock`).
    lock: Option<crate::store::lock::ConversationLock>,
}

impl Recorder {
    /// A recorder without a store: saves nothing (a prompt-set cell is stored as a cell, not
    /// as a conversation).
    #[must_use]
    pub fn off() -> Self {
        Self {
            store: None,
            conv: String::new(),
            last_save: None,
            dirty: false,
            interval: STREAM_SAVE_EVERY,
            lock: None,
        }
    }

    fn on(store: StoreHandle, conv: String) -> Self {
        Self { store: Some(store), conv, ..Self::off() }
    }

    /// Opens the store and the conversation of a `-p` run (a new one, or the one `--continue`
    /// or `--resume` names), stores the prompt and waits until it is on disk. Returns the
    /// messages to send: earlier turns, then the prompt.
    ///
    /// A continued conversation is locked first (waiting while another palaver appends to it)
    /// and read afresh after, so concurrent runs append one after the other.
    ///
    /// # Errors
    /// An unknown `--resume` id, a reopen without a usable store, or a conversation busy past
    /// the wait (usage), or Ctrl+C while waiting for it.
    pub async fn begin(
        reopen: &Reopen,
        t: &Target,
        user: Message,
        stop: &Stop,
        say: Say<'_>,
    ) -> Result<(Self, Vec<Message>), Refused> {
        let prompt = user.text().to_owned();
        let prompt = prompt.as_str();
        let path = Paths::from_env().database();
        let store = match StoreHandle::open(&path, StoreOptions::default()) {
            Ok(s) => s,
            Err(e) if reopen.any() => {
                say(&format!("cannot reopen a conversation: the history at {} cannot be opened: {e}", path.display()));
                return Err(Refused::Usage);
            }
            Err(e) => {
                say(&format!("this conversation will not be saved: cannot open {}: {e}", path.display()));
                return Ok((Self::off(), vec![user]));
            }
        };
        let mut lock = None;
        let earlier = match earlier_id(&store, reopen, say)? {
            Some(id) => {
                lock = lock_conversation(&path, &id, stop, say).await?;
                Some(load_earlier(&store, &id, say)?)
            }
            None => None,
        };
        let (conv, mut history) = match earlier {
            Some(c) => (c.summary.id, c.messages),
            None => {
                let new = NewConversation {
                    title: title_from_prompt(prompt),
                    model: Some(t.model.clone()),
                    provider: Some(t.provider.clone()),
                    api: Some(t.api.name().to_owned()),
                    compare: None,
                };
                (store.create_conversation(new), Vec::new())
            }
        };
        // Earlier attachments go again with this request (from the store, never the disk):
        // the request limit counts them too, checked before anything is saved or sent.
        let earlier = crate::engine::attachment::history_bytes(&history);
        if let Err(e) = crate::engine::attachment::check(&user.attachments, earlier, &t.attachments, t.api) {
            say(&e.to_string());
            return Err(Refused::Usage);
        }
        history.push(user);
        let mut rec = Self::on(store, conv);
        rec.lock = lock;
        rec.save_all(history.len() - 1, &history[history.len() - 1..]);
        // The prompt is on disk before the request goes out; a failure was already a notice.
        rec.sync();
        Ok((rec, history))
    }

    /// A compare column's conversation in `group`: created fresh, with the prompt stored first.
    /// Without a store (it could not be opened) the column runs unsaved.
    #[must_use]
    pub fn column(
        store: Option<StoreHandle>,
        t: &Target,
        prompt: &str,
        group: &str,
        column: u32,
    ) -> (Self, Vec<Message>) {
        let history = vec![Message::user(prompt)];
        let Some(store) = store else {
            return (Self::off(), history);
        };
        let conv = store.create_conversation(NewConversation {
            title: title_from_prompt(prompt),
            model: Some(t.model.clone()),
            provider: Some(t.provider.clone()),
            api: Some(t.api.name().to_owned()),
            compare: Some((group.to_owned(), column)),
        });
        let rec = Self::on(store, conv);
        rec.save_all(0, &history);
        (rec, history)
    }

    /// Opens the store for a run that saves several conversations; a failure is a notice.
    #[must_use]
    pub fn open_store(say: Say<'_>) -> Option<StoreHandle> {
        let path = Paths::from_env().database();
        match StoreHandle::open(&path, StoreOptions::default()) {
            Ok(s) => Some(s),
            Err(e) => {
                say(&format!("these conversations will not be saved: cannot open {}: {e}", path.display()));
                None
            }
        }
    }

    /// The id of the conversation this run is stored as (`None` without a store).
    #[must_use]
    pub fn conversation_id(&self) -> Option<&str> {
        self.store.as_ref().map(|_| self.conv.as_str())
    }

    /// Saves messages from `first` on, at once.
    pub fn save_all(&self, first: usize, msgs: &[Message]) {
        if let Some(s) = &self.store {
            for (i, m) in msgs.iter().enumerate() {
                s.save_message(&self.conv, first + i, m);
            }
        }
    }

    /// Saves a reply as it streams, paced to [`STREAM_SAVE_EVERY`]; a skipped save leaves the
    /// recorder dirty until [`Recorder::due_in`] has passed.
    pub fn streaming(&mut self, position: usize, msg: &mut Message) {
        let Some(s) = &self.store else { return };
        self.interval = save_interval(msg);
        if self.last_save.is_some_and(|t| t.elapsed() < self.interval) {
            self.dirty = true;
            return;
        }
        if !s.save_streaming(&self.conv, position, msg) {
            // The writer is still busy with the last one: try again after the interval.
            self.dirty = true;
            self.last_save = Some(Instant::now());
            return;
        }
        self.last_save = Some(Instant::now());
        self.dirty = false;
    }

    /// Whether the streaming reply has changes not yet handed to the store.
    #[must_use]
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// When a dirty reply should be saved (now, if it was never saved).
    #[must_use]
    pub fn save_due(&self) -> Instant {
        self.last_save.map_or_else(Instant::now, |t| t + self.interval)
    }

    /// Saves a finished reply at once.
    pub fn done(&mut self, position: usize, msg: &Message) {
        self.dirty = false;
        self.save_all(position, std::slice::from_ref(msg));
    }

    /// Waits until everything is on disk (end of the run); false when it could not be saved
    /// (no store, a full disk, a locked or read-only database: the writer said why on stderr).
    pub fn sync(&self) -> bool {
        self.store.as_ref().is_some_and(|s| s.flush().is_ok())
    }
}

/// The id of the conversation `--resume ID` or `--continue` names, if any.
fn earlier_id(store: &StoreHandle, reopen: &Reopen, say: Say<'_>) -> Result<Option<String>, Refused> {
    if let Some(id) = &reopen.resume {
        return match store.resolve_id(id) {
            Ok(Some(full)) => Ok(Some(full)),
            Ok(None) => Err(unknown(id, say)),
            Err(e) => {
                say(&e.to_string());
                Err(Refused::Usage)
            }
        };
    }
    if !reopen.continue_last {
        return Ok(None);
    }
    match store.latest() {
        Ok(Some(s)) => Ok(Some(s.id)),
        Ok(None) => {
            say("no earlier conversation to continue; starting a new one");
            Ok(None)
        }
        Err(e) => {
            say(&format!("cannot read the history: {e}"));
            Err(Refused::Usage)
        }
    }
}

/// Locks conversation `id` for this run, waiting (and saying so) while another palaver appends
/// to it. `None` when no lock file can be made (a read-only data directory: nothing will be
/// appended there anyway).
async fn lock_conversation(
    database: &std::path::Path,
    id: &str,
    stop: &Stop,
    say: Say<'_>,
) -> Result<Option<ConversationLock>, Refused> {
    let waiting = || say(&format!("conversation {id} is busy (another palaver is adding to it); waiting…"));
    match crate::store::lock::lock(database, id, BUSY_WAIT, waiting, || stop.is_set()).await {
        Ok(l) => Ok(Some(l)),
        Err(LockError::Unavailable(_)) => Ok(None),
        Err(LockError::Cancelled) => Err(Refused::Interrupted),
        Err(LockError::Busy) => {
            say(&format!(
                "conversation {id} is busy: another palaver kept adding to it for {} s; try again when it is done",
                BUSY_WAIT.as_secs()
            ));
            Err(Refused::Usage)
        }
    }
}

/// Loads a conversation to continue (read after the lock is held, so it is the newest).
fn load_earlier(store: &StoreHandle, id: &str, say: Say<'_>) -> Result<StoredConversation, Refused> {
    match store.load(id) {
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(unknown(id, say)),
        Err(e) => {
            say(&format!("cannot load conversation {id}: {e}"));
            Err(Refused::Usage)
        }
    }
}
