//! The effect runner for `Effect::Persist`: the store handle, and the map from the state's
//! session-local conversation and branch numbers to the store's ids. Writes only queue on the
//! store's writer thread; reads (list, search, load) run on blocking tasks and answer with
//! `Msg::Store`. Nothing here runs on the draw path, and nothing here waits on the disk except
//! the reopen before the screen opens (`--continue`, `--resume`).

use super::msg::Msg;
use super::persist::{BranchKey, ConvKey, Loaded, PersistOp, Reopen, StoreMsg};
use super::state::State;
use crate::config::Paths;
use crate::store::{NewConversation, NoticeKind, StoreError, StoreHandle, StoreNotice, StoreOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::mpsc::UnboundedSender;

/// Rows per page of the conversation list.
pub const PAGE: usize = 200;
/// Search hits shown.
pub const HITS: usize = 100;
/// Recent prompts offered by Up in an empty composer.
const PROMPTS: usize = 200;
/// A conversation reopened at start with more messages than [`TAIL_OVER`] opens on its last
/// [`TAIL`]; the rest is loaded while the screen is already up (`app/head.rs`).
const TAIL: usize = 200;
const TAIL_OVER: usize = 1_000;

/// Where writer notices go: the app channel once the loop runs, a buffer before.
#[derive(Default)]
struct Sink {
    tx: Option<UnboundedSender<Msg>>,
    early: Vec<StoreNotice>,
    /// Reads answered before the loop took the channel (a head asked for at start).
    early_reads: Vec<StoreMsg>,
}

/// The store side of the app.
pub struct Storage {
    store: Option<StoreHandle>,
    sink: Arc<Mutex<Sink>>,
    convs: HashMap<u64, String>,
    branches: HashMap<BranchKey, i64>,
}

fn notice_msg(n: StoreNotice) -> Msg {
    if let Some(added) = n.added {
        return Msg::Store(StoreMsg::Interleaved { added, text: n.message });
    }
    let error = !matches!(n.kind, NoticeKind::Recovered | NoticeKind::Interleaved);
    Msg::Store(StoreMsg::Notice { error, text: n.message })
}

impl Storage {
    /// A storage with no store: every operation is dropped, reads answer "history is off".
    #[must_use]
    pub fn off() -> Self {
        Self { store: None, sink: Arc::default(), convs: HashMap::new(), branches: HashMap::new() }
    }

    /// Opens the store at `path` with notices routed to the app.
    ///
    /// # Errors
    /// Why the store cannot be opened.
    pub fn open(path: &std::path::Path) -> Result<Self, StoreError> {
        let sink: Arc<Mutex<Sink>> = Arc::default();
        let to = sink.clone();
        let on_notice = Arc::new(move |n: StoreNotice| {
            let mut s = to.lock().unwrap_or_else(PoisonError::into_inner);
            match &s.tx {
                Some(tx) => {
                    let _ = tx.send(notice_msg(n));
                }
                None => s.early.push(n),
            }
        });
        let opts = StoreOptions { on_notice: Some(on_notice), ..StoreOptions::default() };
        let store = StoreHandle::open(path, opts)?;
        Ok(Self { store: Some(store), sink, convs: HashMap::new(), branches: HashMap::new() })
    }

    /// Opens the store for the chat screen, tells the state, and reopens what `--continue` or
    /// `--resume` asked for. Runs before the screen opens: an unknown id is an exit status 2
    /// with a message on stderr. A store that cannot be opened is a notice (the app works in
    /// memory) unless a reopen was asked for.
    ///
    /// # Errors
    /// The exit status to leave with.
    pub fn start(paths: &Paths, reopen: &Reopen, state: &mut State) -> Result<Self, u8> {
        let path = paths.database();
        let wants = reopen.last || reopen.id.is_some();
        // On this thread, not a blocking task: the screen is not up yet, nothing else runs, and
        // this waits for the answer anyway; a pool thread for it (its start, its own heap, the
        // hand-back) is work headless, opening in place, never does.
        let storage = match Self::open(&path) {
            Ok(s) => s,
            Err(e) if wants => {
                eprintln!(
                    "palaver: cannot reopen a conversation: the history at {} cannot be opened: {e}",
                    path.display()
                );
                return Err(2);
            }
            Err(e) => {
                state.apply(Msg::Store(StoreMsg::Unavailable(format!("cannot open {}: {e}", path.display()))));
                return Ok(Self::off());
            }
        };
        state.apply(Msg::Store(StoreMsg::Ready));
        let Some(store) = storage.store.clone() else { return Ok(storage) };
        // In place too, for the same reason.
        let mut prompts = recent_prompts(&store).unwrap_or_default();
        let target = reopen_target(&store, reopen);
        let mut storage = storage;
        match target {
            Ok(Some(loaded)) => {
                // The reopened conversation's prompts are the newest in the walk.
                prompts.extend(user_prompts(&loaded.active.messages));
                let fx = state.apply(Msg::Store(StoreMsg::Opened(Ok(Box::new(loaded)))));
                for e in fx {
                    if let super::Effect::Persist(op) = e {
                        storage.run(op);
                    }
                }
            }
            Ok(None) if wants => {
                state.apply(Msg::Store(StoreMsg::Notice {
                    error: false,
                    text: "no earlier conversation to continue; this is a new one".into(),
                }));
            }
            Ok(None) => {}
            Err(msg) => {
                eprintln!("palaver: {msg}");
                return Err(2);
            }
        }
        state.apply(Msg::Store(StoreMsg::Prompts(prompts)));
        Ok(storage)
    }

    /// Routes writer notices to the app channel (and delivers those that came before).
    /// The store handle, when a store is open.
    #[must_use]
    pub fn handle(&self) -> Option<StoreHandle> {
        self.store.clone()
    }

    pub fn attach(&self, tx: UnboundedSender<Msg>) {
        let mut s = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        for n in s.early.drain(..) {
            let _ = tx.send(notice_msg(n));
        }
        for m in s.early_reads.drain(..) {
            let _ = tx.send(Msg::Store(m));
        }
        s.tx = Some(tx);
    }

    fn send(&self, msg: StoreMsg) {
        let s = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = &s.tx {
            let _ = tx.send(Msg::Store(msg));
        }
    }

    fn conv(&self, key: &ConvKey) -> Option<String> {
        match key {
            ConvKey::Local(n) => self.convs.get(n).cloned(),
            ConvKey::Stored(id) => Some(id.clone()),
        }
    }

    fn branch(&self, key: BranchKey) -> i64 {
        self.branches.get(&key).copied().unwrap_or(key)
    }

    /// Carries out one operation: writes queue on the writer thread, reads go to a blocking task.
    pub fn run(&mut self, op: PersistOp) {
        let Some(store) = self.store.clone() else {
            match op {
                PersistOp::List { seq, offset } => {
                    self.send(StoreMsg::Listed { seq, offset, result: Err("history is off".into()) });
                }
                PersistOp::Search { seq, .. } => {
                    self.send(StoreMsg::Found { seq, result: Err("history is off".into()) })
                }
                _ => {}
            }
            return;
        };
        match op {
            PersistOp::Create { local, title, model, provider, api, compare } => {
                let new =
                    NewConversation { title, model: Some(model), provider: Some(provider), api: Some(api), compare };
                let id = store.create_conversation(new);
                self.convs.insert(local, id.clone());
                self.send(StoreMsg::Created { local, id });
            }
            PersistOp::Save { conv, branch, position, msg } => {
                if let Some(id) = self.conv(&conv) {
                    store.save_owned(&id, Some(self.branch(branch)), position, msg);
                }
            }
            PersistOp::Fork { conv, parent, branch, position } => {
                if let Some(id) = self.conv(&conv) {
                    let b = store.fork(&id, self.branch(parent), position);
                    self.branches.insert(branch, b);
                    self.send(StoreMsg::Forked { branch, id: b });
                }
            }
            PersistOp::Activate { conv, branch } => {
                if let Some(id) = self.conv(&conv) {
                    store.set_active_branch(&id, self.branch(branch));
                }
            }
            PersistOp::Adopt { conv, branch, from, by } => {
                if let Some(id) = self.conv(&conv) {
                    store.adopt_moved(&id, Some(self.branch(branch)), from, by);
                }
            }
            PersistOp::Rename { id, title } => store.rename(&id, &title),
            PersistOp::Delete { id } => store.delete(&id),
            PersistOp::List { seq, offset } => self.read(store, move |s| {
                let result = s.list_entries(PAGE, offset).map_err(|e| e.to_string());
                StoreMsg::Listed { seq, offset, result }
            }),
            PersistOp::Search { seq, query } => self.read(store, move |s| {
                let result = s.search(&query, HITS).map_err(|e| e.to_string());
                StoreMsg::Found { seq, result }
            }),
            PersistOp::Open { id, branch, focus } => self.read(store, move |s| {
                let result = open(s, &id, branch, focus)
                    .and_then(|l| l.ok_or_else(|| format!("conversation {id} no longer exists")))
                    .map(|mut l| {
                        l.focus = focus;
                        l.adopt_model = true;
                        Box::new(l)
                    });
                StoreMsg::Opened(result)
            }),
            PersistOp::LoadHead { id, branch, upto } => self.read(store, move |s| {
                // Made cells here, off the UI task, so the screen only numbers them.
                let result = s
                    .load_head(&id, branch, upto)
                    .map(|msgs| msgs.into_iter().map(|m| super::transcript::Cell::Message(m.into())).collect())
                    .map_err(|e| e.to_string());
                StoreMsg::Head { id, branch, result }
            }),
            PersistOp::OpenCompare { group } => {
                self.read(store, move |s| StoreMsg::OpenedCompare(load_compare(s, &group).map(Box::new)));
            }
        }
    }

    /// Runs a read on a blocking task and sends its answer.
    fn read(&self, store: StoreHandle, f: impl FnOnce(&StoreHandle) -> StoreMsg + Send + 'static) {
        let sink = self.sink.clone();
        tokio::task::spawn_blocking(move || {
            // Reads see what this session queued (a reply saved a moment ago, its final save).
            // A failing writer's error is already a notice; the read goes ahead regardless.
            let _ = store.flush();
            let msg = f(&store);
            let mut s = sink.lock().unwrap_or_else(PoisonError::into_inner);
            match &s.tx {
                Some(tx) => {
                    let _ = tx.send(Msg::Store(msg));
                }
                None => s.early_reads.push(msg),
            }
        });
    }
}

/// A conversation opened from the history list or a search hit (`focus`: the position of the
/// hit): a long one opens on its tail as `--resume` does, when the hit is in the tail; a
/// branch asked for, or a hit further up, loads it whole.
fn open(store: &StoreHandle, id: &str, branch: Option<i64>, focus: Option<usize>) -> Result<Option<Loaded>, String> {
    if branch.is_none() {
        if let Some((active, older)) = store.load_tail(id, TAIL, TAIL_OVER).map_err(|e| e.to_string())? {
            if focus.is_none_or(|f| f >= older) {
                let (others, switch, adopt_model, notice) = (Vec::new(), false, false, None);
                return Ok(Some(Loaded { active, others, switch, focus, adopt_model, notice, older }));
            }
        }
    }
    load(store, id, branch)
}

/// A conversation with all its branches: `branch` (or the stored active one) as the path.
///
/// # Errors
/// A database error, in words.
pub fn load(store: &StoreHandle, id: &str, branch: Option<i64>) -> Result<Option<Loaded>, String> {
    let active = match branch {
        Some(b) => store.load_branch(id, b),
        None => store.load(id),
    }
    .map_err(|e| e.to_string())?;
    let Some(active) = active else { return Ok(None) };
    let mut others = Vec::new();
    for b in active.branches.iter().filter(|b| b.branch != active.branch) {
        if let Some(c) = store.load_branch(id, b.branch).map_err(|e| e.to_string())? {
            others.push(c);
        }
    }
    let switch = active.branch != active.summary.active_branch;
    Ok(Some(Loaded { active, others, switch, focus: None, adopt_model: false, notice: None, older: 0 }))
}

/// Every column of compare `group`, each with its branches.
///
/// # Errors
/// A database error, or a compare that no longer exists, in words.
fn load_compare(store: &StoreHandle, group: &str) -> Result<super::conversations::compare::LoadedCompare, String> {
    let entry = store.compare_entry(group).map_err(|e| e.to_string())?;
    let entry = entry.ok_or_else(|| format!("compare {group} no longer exists"))?;
    let mut columns = Vec::with_capacity(entry.columns.len());
    for c in &entry.columns {
        columns.extend(load(store, &c.id, None)?);
    }
    Ok(super::conversations::compare::LoadedCompare { group: group.to_owned(), columns })
}

/// What `--continue` or `--resume` names, loaded; `Err` is the message for an exit status 2.
fn reopen_target(store: &StoreHandle, reopen: &Reopen) -> Result<Option<Loaded>, String> {
    let id = if let Some(id) = &reopen.id {
        match store.resolve_id(id) {
            Ok(Some(full)) => full,
            Ok(None) => return Err(format!("no conversation with ID {id} (see `palaver history list`)")),
            Err(e) => return Err(e.to_string()),
        }
    } else if reopen.last {
        match store.latest() {
            Ok(Some(s)) => s.id,
            Ok(None) => return Ok(None),
            Err(e) => return Err(format!("cannot read the history: {e}")),
        }
    } else {
        return Ok(None);
    };
    // A long conversation opens on its tail; the rest follows once the screen is up.
    let tail = store.load_tail(&id, TAIL, TAIL_OVER).map_err(|e| e.to_string())?;
    let mut loaded = match tail {
        Some((active, older)) => {
            Loaded { active, others: Vec::new(), switch: false, focus: None, adopt_model: false, notice: None, older }
        }
        None => load(store, &id, None)?.ok_or_else(|| format!("no conversation with ID {id}"))?,
    };
    loaded.adopt_model = !reopen.keep_model;
    loaded.notice.clone_from(&reopen.notice);
    Ok(Some(loaded))
}

/// The user prompts of the most recent conversations, oldest first: one indexed query.
fn recent_prompts(store: &StoreHandle) -> Result<Vec<String>, StoreError> {
    store.with_reader(|c| {
        let mut stmt =
            c.prepare("SELECT content FROM messages WHERE role = 'user' AND content <> '' ORDER BY id DESC LIMIT ?1")?;
        let rows = stmt.query_map([PROMPTS as i64], |r| r.get::<_, String>(0))?;
        let mut out: Vec<String> = rows.collect::<Result<_, _>>()?;
        out.reverse();
        Ok(out)
    })
}

/// The conversation's last [`PROMPTS`] user prompts, oldest first (no more are offered).
fn user_prompts(msgs: &[crate::engine::message::Message]) -> Vec<String> {
    let mut out: Vec<String> = msgs
        .iter()
        .rev()
        .filter(|m| m.role() == crate::engine::message::Role::User && !m.text().is_empty())
        .take(PROMPTS)
        .map(|m| m.text().to_owned())
        .collect();
    out.reverse();
    out
}

#[cfg(test)]
#[path = "storage_tests.rs"]
mod tests;
