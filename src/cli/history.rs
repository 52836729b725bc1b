//! `palaver history list|show|export|rm` (DESIGN.md §2), and the headless runner's recorder:
//! every `-p` run is a stored conversation (or the next turn of one, with `--continue` or
//! `--resume ID`), its prompt on disk before the request goes out and its reply saved while
//! it streams.

use super::args::{ExportFormat, Global, HistoryAction};
use super::exit::{EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use super::target::Target;
use crate::config::Paths;
use crate::engine::message::{Message, MessageStatus, Role};
use crate::store::export;
use crate::store::ids::{rfc3339, short_date, title_from_prompt};
use crate::store::lock::{BUSY_WAIT, ConversationLock, LockError};
use crate::store::{NewConversation, StoreError, StoreHandle, StoreOptions, StoredConversation};
use crate::ui::sanitize::sanitize;
use std::io::Write;
use std::time::{Duration, Instant};

/// Runs a `history` subcommand; returns the exit status.
pub fn run(action: &HistoryAction, json: bool, paths: &Paths) -> u8 {
    let path = paths.database();
    if !path.exists() {
        // Nothing stored yet: an empty list, and no conversation to show.
        return match action {
            HistoryAction::List => EXIT_OK,
            HistoryAction::Show { id } | HistoryAction::Export { id, .. } | HistoryAction::Rm { id } => unknown(id),
        };
    }
    let store = match StoreHandle::open(&path, StoreOptions::default()) {
        Ok(s) => s,
        // A read-only directory or a full disk still lets the history be read.
        Err(e) => match (action, StoreHandle::open_read_only(&path, StoreOptions::default())) {
            (HistoryAction::Rm { .. }, _) | (_, Err(_)) => {
                eprintln!("palaver: cannot open the history at {}: {e}", path.display());
                return EXIT_PROVIDER;
            }
            (_, Ok(s)) => s,
        },
    };
    let result = match action {
        HistoryAction::List => list(&store, json),
        HistoryAction::Show { id } => with_id(&store, id, |id| show(&store, id)),
        HistoryAction::Export { id, format } => with_id(&store, id, |id| export_one(&store, id, *format)),
        HistoryAction::Rm { id } => with_id(&store, id, |id| rm(&store, id)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("palaver: {e}");
            EXIT_PROVIDER
        }
    }
}

fn unknown(id: &str) -> u8 {
    eprintln!("palaver: no conversation with ID {id} (see `palaver history list`)");
    EXIT_USAGE
}

/// Resolves an id or unique prefix, then runs `f` with the full id.
fn with_id(store: &StoreHandle, id: &str, f: impl FnOnce(&str) -> Result<u8, StoreError>) -> Result<u8, StoreError> {
    match store.resolve_id(id) {
        Ok(Some(full)) => f(&full),
        Ok(None) => Ok(unknown(id)),
        Err(e @ StoreError::Ambiguous { .. }) => {
            eprintln!("palaver: {e}");
            Ok(EXIT_USAGE)
        }
        Err(e) => Err(e),
    }
}

fn list(store: &StoreHandle, json: bool) -> Result<u8, StoreError> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for s in store.list(usize::MAX, 0)? {
        let line = if json {
            serde_json::json!({"id": s.id, "title": s.title, "model": s.model,
                "updated_at": rfc3339(s.updated_at), "messages": s.messages})
            .to_string()
        } else {
            let model = s.model.as_deref().unwrap_or("-");
            let n = s.messages;
            format!("{}  {}  {}  {n} msg{}  {}", s.id, short_date(s.updated_at), model, plural(n), sanitize(&s.title))
        };
        if writeln!(out, "{line}").is_err() {
            break; // stdout closed (`| head`): not an error
        }
    }
    let _ = out.flush();
    Ok(EXIT_OK)
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn load(store: &StoreHandle, id: &str) -> Result<StoredConversation, StoreError> {
    store.load(id)?.ok_or_else(|| StoreError::Format(format!("conversation {id} vanished while reading")))
}

fn show(store: &StoreHandle, id: &str) -> Result<u8, StoreError> {
    let c = load(store, id)?;
    let s = &c.summary;
    let mut out = format!(
        "{}\n{} · {} · {}\n",
        sanitize(&s.title),
        s.id,
        s.model.as_deref().unwrap_or("-"),
        short_date(s.updated_at)
    );
    for m in &c.messages {
        out.push('\n');
        transcript_message(&mut out, m);
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    Ok(EXIT_OK)
}

/// One message for a terminal: a header line, the text, tool calls; model and tool text is
/// sanitised since it goes straight to the terminal.
fn transcript_message(out: &mut String, m: &Message) {
    let main = m.main();
    let who = match m.role() {
        Role::User => "you".to_owned(),
        Role::System => "system".to_owned(),
        Role::Tool => format!("tool result {}", m.tool_call_id.as_deref().unwrap_or("?")),
        Role::Assistant => m.model.clone().unwrap_or_else(|| "assistant".into()),
    };
    let status = if m.status == MessageStatus::Complete {
        String::new()
    } else {
        format!(" [{}]", crate::store::ops::enum_str(&m.status))
    };
    out.push_str(&format!("── {} ──{status}\n", sanitize(&who)));
    if !main.reasoning.is_empty() {
        out.push_str(&format!("(reasoning) {}\n", sanitize(main.reasoning.trim_end())));
    }
    if !main.content.is_empty() {
        out.push_str(&format!("{}\n", sanitize(&fold(m, main.content.trim_end()))));
    }
    if !main.refusal.is_empty() {
        out.push_str(&format!("(refusal) {}\n", sanitize(main.refusal.trim_end())));
    }
    for a in &m.attachments {
        out.push_str(&format!("▣ {} · sha256 {}\n", sanitize(&a.describe()), a.short_hash()));
    }
    for t in &main.tool_calls {
        let size = t.output.as_ref().map(|o| format!(", {} bytes out", o.len())).unwrap_or_default();
        let status = crate::store::ops::enum_str(&t.status);
        out.push_str(&format!("⚙ {}({}) → {status}{size}\n", sanitize(&t.name), sanitize(&t.arguments)));
    }
    if let Some(e) = &m.error {
        out.push_str(&format!("error ({}): {}\n", e.kind, sanitize(&e.message)));
    }
}

/// Tool output can be whole files: `show` keeps the first lines, `export` has all of it.
fn fold(m: &Message, text: &str) -> String {
    const KEEP: usize = 12;
    let lines = text.lines().count();
    if m.role() != Role::Tool || lines <= KEEP + 2 {
        return text.to_owned();
    }
    let head: Vec<&str> = text.lines().take(KEEP).collect();
    format!("{}\n… {} more lines (`palaver history export` has them)", head.join("\n"), lines - KEEP)
}

fn export_one(store: &StoreHandle, id: &str, format: ExportFormat) -> Result<u8, StoreError> {
    let text = match format {
        // Markdown is for reading (often in a terminal): no escape sequence survives it. JSON is
        // the complete record and keeps every byte (escaped by JSON itself).
        ExportFormat::Md => {
            let conv = load(store, id)?;
            let dir = format!("{}-attachments", conv.summary.id);
            write_attachments(&conv, &dir);
            crate::text::sanitize::sanitize_keep_tabs(&export::to_markdown_linking(&conv, &dir)).into_owned()
        }
        ExportFormat::Json => {
            let e =
                export::export(store, id)?.ok_or_else(|| StoreError::Format(format!("conversation {id} vanished")))?;
            let mut s = serde_json::to_string_pretty(&e).map_err(|e| StoreError::Format(e.to_string()))?;
            s.push('\n');
            s
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
    Ok(EXIT_OK)
}

/// Writes the attachments of a Markdown export into `dir` (in the working directory, beside
/// where the Markdown is usually redirected), each file named by its hash; says so on stderr.
fn write_attachments(conv: &StoredConversation, dir: &str) {
    let atts: Vec<_> = conv.messages.iter().flat_map(|m| &m.attachments).filter(|a| a.data.is_some()).collect();
    if atts.is_empty() {
        return;
    }
    let mut written = 0;
    for a in atts {
        let Some(d) = &a.data else { continue };
        let path = std::path::Path::new(dir).join(export::attachment_file_name(a));
        match std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, d.bytes())) {
            Ok(()) => written += 1,
            Err(e) => eprintln!("palaver: cannot write {}: {e}", path.display()),
        }
    }
    eprintln!("palaver: {written} attachment file(s) written to {dir}/ (the Markdown links to them)");
}

fn rm(store: &StoreHandle, id: &str) -> Result<u8, StoreError> {
    let Some(s) = store.get(id)? else { return Ok(unknown(id)) };
    store.delete(id);
    store.flush()?;
    let n = s.messages;
    println!("deleted {} “{}” ({n} message{})", s.id, sanitize(&s.title), plural(n));
    Ok(EXIT_OK)
}

/// A streaming reply is handed to the store at most this often: a checkpoint rewrites the whole
/// reply (its search index is written once, when it ends), so checkpoints go by a time budget, not by events. The first
/// delta is saved at once (a reply killed early still leaves its start), the finished reply at
/// once, and a timer in the stream loop saves a reply that stopped changing, so a pause never
/// leaves the newest text unsaved for longer than this. A quarter second matches the writer's
/// own pacing: a `kill -9` loses at most that much of what was printed.
const STREAM_SAVE_EVERY: Duration = Duration::from_millis(250);

/// A long reply is saved less often, one millisecond per KiB of text: every save rewrites the
/// whole text, so saving a multi-megabyte reply ten times a second
/// costs memory and disk out of proportion to what a crash could lose.
fn save_interval(msg: &Message) -> Duration {
    let main = msg.main();
    let bytes = main.content.len() + main.reasoning.len() + main.refusal.len();
    STREAM_SAVE_EVERY.max(Duration::from_millis(bytes as u64 / 1024))
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
    /// The exit status for an unknown `--resume` id, a reopen without a usable store, or a
    /// conversation busy past the wait.
    pub async fn begin(g: &Global, t: &Target, user: Message) -> Result<(Self, Vec<Message>), u8> {
        let prompt = user.text().to_owned();
        let prompt = prompt.as_str();
        let reopen = g.continue_last || g.resume.is_some();
        let path = Paths::from_env().database();
        let store = match StoreHandle::open(&path, StoreOptions::default()) {
            Ok(s) => s,
            Err(e) if reopen => {
                eprintln!(
                    "palaver: cannot reopen a conversation: the history at {} cannot be opened: {e}",
                    path.display()
                );
                return Err(EXIT_USAGE);
            }
            Err(e) => {
                eprintln!("palaver: this conversation will not be saved: cannot open {}: {e}", path.display());
                return Ok((Self::off(), vec![user]));
            }
        };
        let mut lock = None;
        let earlier = match earlier_id(&store, g)? {
            Some(id) => {
                lock = lock_conversation(&path, &id).await?;
                Some(load_earlier(&store, &id)?)
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
            eprintln!("palaver: {e}");
            return Err(EXIT_USAGE);
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
    pub fn open_store() -> Option<StoreHandle> {
        let path = Paths::from_env().database();
        match StoreHandle::open(&path, StoreOptions::default()) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("palaver: these conversations will not be saved: cannot open {}: {e}", path.display());
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
fn earlier_id(store: &StoreHandle, g: &Global) -> Result<Option<String>, u8> {
    if let Some(id) = &g.resume {
        return match store.resolve_id(id) {
            Ok(Some(full)) => Ok(Some(full)),
            Ok(None) => Err(unknown(id)),
            Err(e) => {
                eprintln!("palaver: {e}");
                Err(EXIT_USAGE)
            }
        };
    }
    if !g.continue_last {
        return Ok(None);
    }
    match store.latest() {
        Ok(Some(s)) => Ok(Some(s.id)),
        Ok(None) => {
            eprintln!("palaver: no earlier conversation to continue; starting a new one");
            Ok(None)
        }
        Err(e) => {
            eprintln!("palaver: cannot read the history: {e}");
            Err(EXIT_USAGE)
        }
    }
}

/// Locks conversation `id` for this run, waiting (and saying so) while another palaver appends
/// to it. `None` when no lock file can be made (a read-only data directory: nothing will be
/// appended there anyway).
async fn lock_conversation(database: &std::path::Path, id: &str) -> Result<Option<ConversationLock>, u8> {
    let stop = super::interrupt::stop();
    let say = || eprintln!("palaver: conversation {id} is busy (another palaver is adding to it); waiting…");
    match crate::store::lock::lock(database, id, BUSY_WAIT, say, || stop.is_set()).await {
        Ok(l) => Ok(Some(l)),
        Err(LockError::Unavailable(_)) => Ok(None),
        Err(LockError::Cancelled) => Err(super::exit::EXIT_INTERRUPTED),
        Err(LockError::Busy) => {
            eprintln!(
                "palaver: conversation {id} is busy: another palaver kept adding to it for {} s; try again when it is done",
                BUSY_WAIT.as_secs()
            );
            Err(EXIT_USAGE)
        }
    }
}

/// Loads a conversation to continue (read after the lock is held, so it is the newest).
fn load_earlier(store: &StoreHandle, id: &str) -> Result<StoredConversation, u8> {
    match store.load(id) {
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(unknown(id)),
        Err(e) => {
            eprintln!("palaver: cannot load conversation {id}: {e}");
            Err(EXIT_USAGE)
        }
    }
}
