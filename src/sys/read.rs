//! The one bounded reader (issue 39 §1): every read of a file, a pipe, a child's output or a
//! network body goes through here under a named [`Budget`], so no input can make palaver hold
//! more than the budget says. Reaching one is an error naming the budget, its value and how to
//! raise it ([`reached`], [`refused`]: the words every limit of palaver uses).
//!
//! Files are opened only when they are regular ([`open_regular`]): a FIFO blocks until a
//! writer comes (perhaps never) and a device never ends, and `metadata().len()` is 0 for both,
//! so a size check before reading proves nothing. A line reader ([`LineSplit`], [`Lines`],
//! [`BodyLines`]) refuses a line past its budget without holding it, and goes on with the next.
//!
//! `clippy.toml` forbids the unbounded forms (`std::fs::read`, `read_to_end`, `Response::text`…)
//! everywhere else; the few calls here are on readers already capped with `take`.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

const MIB: usize = 1024 * 1024;

/// The user's own small files read whole: config.toml, a theme, a user command, remembered
/// choices, a saved schema, stored OAuth tokens.
pub const CONFIG_FILE: Budget = Budget::fixed("config_file_bytes", 16 * MIB);
/// A file read whole at the user's (or a model's) word: a prompt set, its vars file, a judge's
/// prompt, `--schema FILE`, stdin, a recorded body to replay, a file a patch edits.
pub const INPUT_FILE: Budget = Budget::fixed("input_file_bytes", 64 * MIB);

/// Where a budget is raised, for the words of the error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raise {
    /// `limits = { NAME = … }` in the provider's profile (`api::limits::Limits`).
    Profile,
    /// Somewhere else in config.toml, as given (`[tools] output_bytes`).
    Config(&'static str),
    /// Not a setting: palaver's own bound.
    Fixed,
}

/// A named bound on what one read may hold, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The limit's name as the README's limits table spells it (`body_bytes`).
    pub name: &'static str,
    pub bytes: usize,
    pub raise: Raise,
}

impl Budget {
    /// A budget set in the provider's profile (`limits = { NAME = … }`).
    #[must_use]
    pub const fn profile(name: &'static str, bytes: usize) -> Self {
        Self { name, bytes, raise: Raise::Profile }
    }

    /// A budget that is palaver's own, not a setting.
    #[must_use]
    pub const fn fixed(name: &'static str, bytes: usize) -> Self {
        Self { name, bytes, raise: Raise::Fixed }
    }

    /// The words for `what` refused whole at this budget (nothing of it kept).
    #[must_use]
    pub fn refused(&self, what: &str) -> String {
        words(self, what, "palaver stopped reading it and kept none of it")
    }

    /// The words for `what` stopped at this budget, what came before kept.
    #[must_use]
    pub fn reached(&self, what: &str) -> String {
        words(self, what, "palaver stopped there and kept what came before")
    }
}

fn words(b: &Budget, what: &str, done: &str) -> String {
    let (name, value) = (b.name, b.bytes);
    match b.raise {
        Raise::Profile => format!(
            "{what}: past the limit {name} = {value}; {done} \
             (raise it in the provider's profile in config.toml: limits = {{ {name} = … }})"
        ),
        Raise::Config(place) => {
            format!("{what}: past the limit {name} = {value}; {done} (raise it in config.toml: {place})")
        }
        Raise::Fixed => format!("{what}: past the limit {name} = {value} bytes; {done} (a fixed bound of palaver)"),
    }
}

/// The words for a limit reached (see [`Budget::reached`]); `api::limits::Limits` says these.
#[must_use]
pub fn reached(name: &'static str, what: &str, value: usize) -> String {
    Budget::profile(name, value).reached(what)
}

/// The words for a body refused whole at a limit (see [`Budget::refused`]).
#[must_use]
pub fn refused(name: &'static str, what: &str, value: usize) -> String {
    Budget::profile(name, value).refused(what)
}

/// Why a bounded read failed.
#[derive(Debug)]
pub enum ReadError {
    /// The path is not a regular file: what it is instead (see [`not_regular`]).
    NotRegular(&'static str),
    /// The input passed the budget; what passed it was not kept.
    Over(Budget),
    /// A string was asked for and the bytes are not UTF-8.
    NotUtf8,
    /// The system's (or the connection's) error.
    Io(std::io::Error),
}

impl ReadError {
    /// The error with `what` (the thing read, for the user) in front.
    #[must_use]
    pub fn about(&self, what: &str) -> String {
        match self {
            Self::Over(b) => b.refused(what),
            other => format!("{what}: {other}"),
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotRegular(what) => write!(f, "it is {what}, not a regular file; only regular files are read"),
            Self::Over(b) => f.write_str(&b.refused("too large")),
            Self::NotUtf8 => f.write_str("it is not UTF-8 text"),
            Self::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// Why a path cannot be read as a file, when it is not a regular one: "a FIFO (named pipe)",
/// "a socket", "a device", "a directory".
#[must_use]
pub fn not_regular(kind: std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_block_device() || kind.is_char_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

/// Opens `path` for reading if it is a regular file, without ever waiting on it. The kind is
/// checked before opening (following links, as the open does), and the open itself is
/// non-blocking and checked again on the open descriptor, so a file swapped for a FIFO in
/// between is still caught without waiting.
///
/// # Errors
/// The path is not a regular file ([`ReadError::NotRegular`]), or cannot be examined or opened.
pub fn open_regular(path: &Path) -> Result<File, ReadError> {
    let meta = std::fs::metadata(path)?;
    if let Some(what) = not_regular(meta.file_type()) {
        return Err(ReadError::NotRegular(what));
    }
    // O_NONBLOCK: a FIFO swapped in after the check opens at once instead of waiting for a
    // writer; on a regular file the flag changes nothing.
    let nonblock = rustix::fs::OFlags::NONBLOCK.bits();
    let file = std::fs::OpenOptions::new().read(true).custom_flags(i32::try_from(nonblock).unwrap_or(0)).open(path)?;
    match not_regular(file.metadata()?.file_type()) {
        Some(what) => Err(ReadError::NotRegular(what)),
        None => Ok(file),
    }
}

/// The whole of a regular file, refused past `budget`.
///
/// # Errors
/// Not a regular file, past the budget, or the system's error.
pub fn file_bytes(path: &Path, budget: Budget) -> Result<Vec<u8>, ReadError> {
    capped(open_regular(path)?, budget)
}

/// The whole of a regular file as UTF-8 text, refused past `budget`.
///
/// # Errors
/// As [`file_bytes`], or the file is not UTF-8.
pub fn file_string(path: &Path, budget: Budget) -> Result<String, ReadError> {
    String::from_utf8(file_bytes(path, budget)?).map_err(|_| ReadError::NotUtf8)
}

/// Everything `reader` gives, refused past `budget` (one byte more is read to tell).
///
/// # Errors
/// Past the budget, or the reader's error.
pub fn capped(reader: impl Read, budget: Budget) -> Result<Vec<u8>, ReadError> {
    let bytes = head(reader, budget.bytes.saturating_add(1))?;
    if bytes.len() > budget.bytes { Err(ReadError::Over(budget)) } else { Ok(bytes) }
}

/// As [`capped`], as UTF-8 text.
///
/// # Errors
/// As [`capped`], or the bytes are not UTF-8.
pub fn capped_string(reader: impl Read, budget: Budget) -> Result<String, ReadError> {
    String::from_utf8(capped(reader, budget)?).map_err(|_| ReadError::NotUtf8)
}

/// At most the first `n` bytes `reader` gives (the rest is left unread, not an error): a
/// file's head, what a child said first.
///
/// # Errors
/// The reader's error.
pub fn head(reader: impl Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    // Capped by `take`: this is the one place a read_to_end is bounded by construction.
    #[allow(clippy::disallowed_methods)]
    reader.take(n as u64).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Everything an async `reader` gives, refused past `budget`.
///
/// # Errors
/// Past the budget, or the reader's error.
pub async fn capped_async(reader: impl tokio::io::AsyncRead + Unpin, budget: Budget) -> Result<Vec<u8>, ReadError> {
    let bytes = head_async(reader, budget.bytes.saturating_add(1)).await?;
    if bytes.len() > budget.bytes { Err(ReadError::Over(budget)) } else { Ok(bytes) }
}

/// At most the first `n` bytes an async `reader` gives.
///
/// # Errors
/// The reader's error.
pub async fn head_async(reader: impl tokio::io::AsyncRead + Unpin, n: usize) -> std::io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt as _;
    let mut bytes = Vec::new();
    #[allow(clippy::disallowed_methods)] // capped by `take`
    reader.take(n as u64).read_to_end(&mut bytes).await?;
    Ok(bytes)
}

/// A network body whole, refused past `budget`: a `Content-Length` over it is refused before
/// reading, and the chunks are counted as they come, so an endless body stops at the budget.
///
/// # Errors
/// Past the budget, or the connection broke ([`ReadError::Io`] with the cause).
pub async fn body(mut resp: reqwest::Response, budget: Budget) -> Result<Vec<u8>, ReadError> {
    if resp.content_length().is_some_and(|n| n > budget.bytes as u64) {
        return Err(ReadError::Over(budget));
    }
    let mut bytes = Vec::new();
    let mut acc = Capped::new(budget);
    while let Some(chunk) = resp.chunk().await.map_err(|e| ReadError::Io(std::io::Error::other(e)))? {
        acc.take(chunk.len())?;
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// At most the first `n` bytes of a body (an error's words: what is shown, not all there is),
/// each chunk awaited at most `idle`; whatever came before a stall or a broken connection.
pub async fn body_head(mut resp: reqwest::Response, n: usize, idle: std::time::Duration) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout(idle, resp.chunk()).await {
        let room = n.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= n {
            break;
        }
    }
    out
}

/// A count of bytes held against a budget, for readers that keep their own buffer (a body
/// decoded as it streams).
#[derive(Debug, Clone, Copy)]
pub struct Capped {
    budget: Budget,
    held: usize,
}

impl Capped {
    #[must_use]
    pub fn new(budget: Budget) -> Self {
        Self { budget, held: 0 }
    }

    /// Counts `n` more bytes.
    ///
    /// # Errors
    /// They pass the budget (they are not counted then).
    pub fn take(&mut self, n: usize) -> Result<(), ReadError> {
        let held = self.held.saturating_add(n);
        if held > self.budget.bytes {
            return Err(ReadError::Over(self.budget));
        }
        self.held = held;
        Ok(())
    }

    /// Bytes counted so far.
    #[must_use]
    pub fn held(&self) -> usize {
        self.held
    }

    /// Bytes that still fit.
    #[must_use]
    pub fn room(&self) -> usize {
        self.budget.bytes.saturating_sub(self.held)
    }
}

/// Splits bytes fed in pieces into lines (without their `\n`), each at most `budget`: a longer
/// line is reported once as [`ReadError::Over`] and skipped to its end without being held, and
/// the lines after it come as usual.
#[derive(Debug)]
pub struct LineSplit {
    budget: Budget,
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    at: usize,
    /// How much of the unread part is known to hold no `\n`: a long line arriving in many
    /// pieces is searched once, not again at every piece.
    scanned: usize,
    /// Inside a line already refused: bytes are dropped up to its `\n`.
    skipping: bool,
}

impl LineSplit {
    #[must_use]
    pub fn new(budget: Budget) -> Self {
        Self { budget, buf: Vec::new(), at: 0, scanned: 0, skipping: false }
    }

    /// Adds the next piece of input.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.at > 0 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        if !self.skipping {
            self.buf.extend_from_slice(bytes);
            return;
        }
        // Dropped as it comes: a refused line is never held, whatever its length.
        if let Some(nl) = memchr::memchr(b'\n', bytes) {
            self.skipping = false;
            self.buf.extend_from_slice(&bytes[nl + 1..]);
        }
    }

    /// The next whole line in what was fed, or its refusal; `None` when more input is needed.
    pub fn next_line(&mut self) -> Option<Result<Vec<u8>, ReadError>> {
        let rest = &self.buf[self.at..];
        if let Some(nl) = memchr::memchr(b'\n', &rest[self.scanned..]).map(|i| i + self.scanned) {
            let line = (nl <= self.budget.bytes).then(|| rest[..nl].to_vec());
            self.at += nl + 1;
            self.scanned = 0;
            return Some(line.ok_or(ReadError::Over(self.budget)));
        }
        self.scanned = rest.len();
        if rest.len() > self.budget.bytes {
            self.buf.clear();
            self.at = 0;
            self.scanned = 0;
            self.skipping = true;
            return Some(Err(ReadError::Over(self.budget)));
        }
        None
    }

    /// The last line, when the input ended without a `\n` after it.
    pub fn finish(&mut self) -> Option<Result<Vec<u8>, ReadError>> {
        let rest = &self.buf[self.at..];
        if self.skipping || rest.is_empty() {
            return None;
        }
        let line = rest.to_vec();
        self.buf.clear();
        self.at = 0;
        self.scanned = 0;
        Some(if line.len() > self.budget.bytes { Err(ReadError::Over(self.budget)) } else { Ok(line) })
    }
}

/// The lines of a blocking reader, each within a budget (see [`LineSplit`]). After an I/O
/// error it ends.
pub struct Lines<R> {
    reader: R,
    split: LineSplit,
    done: bool,
    /// What one read fills, allocated once.
    chunk: Vec<u8>,
}

/// Reads `reader` a line at a time, each at most `budget`.
pub fn lines<R: Read>(reader: R, budget: Budget) -> Lines<R> {
    Lines { reader, split: LineSplit::new(budget), done: false, chunk: vec![0; 64 * 1024] }
}

impl<R: Read> Iterator for Lines<R> {
    type Item = Result<Vec<u8>, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(line) = self.split.next_line() {
                return Some(line);
            }
            if self.done {
                return self.split.finish();
            }
            match self.reader.read(&mut self.chunk) {
                Ok(0) => self.done = true,
                Ok(n) => self.split.feed(&self.chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.done = true;
                    self.split = LineSplit::new(self.split.budget);
                    return Some(Err(e.into()));
                }
            }
        }
    }
}

/// The lines of a network body, each within `line` and all of them within `total` (bytes of
/// the body, refused lines included): an endless body stops at `total`.
#[derive(Debug)]
pub struct BodyLines {
    resp: reqwest::Response,
    split: LineSplit,
    total: Capped,
    done: bool,
    /// `total` was reached: said once the whole lines before it have been given.
    over: Option<ReadError>,
}

impl BodyLines {
    #[must_use]
    pub fn new(resp: reqwest::Response, line: Budget, total: Budget) -> Self {
        Self { resp, split: LineSplit::new(line), total: Capped::new(total), done: false, over: None }
    }

    /// The next line, or why it was refused (a line past its budget: the next call goes on
    /// after it), or why the body ended early (past `total`, after the whole lines before it;
    /// the connection broke: the calls after return `None`).
    pub async fn next(&mut self) -> Option<Result<Vec<u8>, ReadError>> {
        loop {
            if let Some(line) = self.split.next_line() {
                return Some(line);
            }
            if let Some(over) = self.over.take() {
                self.stop();
                return Some(Err(over));
            }
            if self.done {
                return self.split.finish();
            }
            match self.resp.chunk().await {
                Ok(Some(chunk)) => {
                    let room = self.total.room();
                    if let Err(e) = self.total.take(chunk.len()) {
                        // The part that fits is read: its whole lines are given first.
                        self.split.feed(&chunk[..room]);
                        self.over = Some(e);
                        continue;
                    }
                    self.split.feed(&chunk);
                }
                Ok(None) => self.done = true,
                Err(e) => {
                    self.stop();
                    return Some(Err(ReadError::Io(std::io::Error::other(e))));
                }
            }
        }
    }

    /// Bytes of the body read so far.
    #[must_use]
    pub fn read(&self) -> usize {
        self.total.held()
    }

    fn stop(&mut self) {
        self.done = true;
        self.split = LineSplit::new(self.split.budget);
        self.split.skipping = true;
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
    }

    const B: Budget = Budget::profile("body_bytes", 8);

    #[test]
    fn refuses_fifo_socket_device_and_directory_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        mkfifo(&fifo);
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let cases = [
            (fifo.as_path(), "FIFO"),
            (sock.as_path(), "socket"),
            (Path::new("/dev/zero"), "device"),
            (dir.path(), "directory"),
        ];
        for (path, word) in cases {
            let e = file_bytes(path, B).unwrap_err();
            assert!(matches!(e, ReadError::NotRegular(_)) && e.to_string().contains(word), "{path:?}: {e}");
        }
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(matches!(open_regular(&link), Err(ReadError::NotRegular("a FIFO (named pipe)"))));
    }

    #[test]
    fn a_file_is_read_whole_within_its_budget_and_refused_past_it_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "12345678").unwrap();
        assert_eq!(file_string(&p, B).unwrap(), "12345678");
        std::fs::write(&p, "123456789").unwrap();
        let e = file_bytes(&p, B).unwrap_err().about("the file a.txt");
        assert!(e.contains("body_bytes = 8") && e.contains("limits = { body_bytes"), "{e}");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(matches!(file_string(&p, B), Err(ReadError::NotUtf8)));
        assert!(matches!(file_bytes(&dir.path().join("none"), B), Err(ReadError::Io(_))));
        let fixed = Budget::fixed("catalogue_bytes", 3).refused("x");
        assert!(fixed.contains("catalogue_bytes = 3 bytes") && fixed.contains("fixed"), "{fixed}");
    }

    #[test]
    fn readers_are_capped_and_heads_are_not_errors() {
        let zero = std::fs::File::open("/dev/zero").unwrap();
        assert!(matches!(capped(zero, B), Err(ReadError::Over(_))));
        assert_eq!(capped(&b"abc"[..], B).unwrap(), b"abc");
        assert_eq!(head(std::fs::File::open("/dev/zero").unwrap(), 5).unwrap().len(), 5);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let zero = tokio::fs::File::open("/dev/zero").await.unwrap();
            assert!(matches!(capped_async(zero, B).await, Err(ReadError::Over(_))));
            assert_eq!(capped_async(&b"abc"[..], B).await.unwrap(), b"abc");
        });
    }

    #[test]
    fn a_line_past_its_budget_is_refused_without_being_held_and_the_next_ones_come() {
        let budget = Budget::profile("batch_line_bytes", 4);
        let mut s = LineSplit::new(budget);
        let mut got = Vec::new();
        // A long line fed in pieces: it is refused once, as soon as it passes the budget, and
        // dropped as it comes.
        for piece in [&b"ab\ncdefg"[..], b"hijklmnop", b"qrs", b"tu\nxy", b"z\n", b"last"] {
            s.feed(piece);
            assert!(s.buf.len() <= 16, "{}", s.buf.len());
            while let Some(l) = s.next_line() {
                got.push(l.map_err(|e| e.to_string()));
            }
        }
        got.extend(s.finish().map(|l| l.map_err(|e| e.to_string())));
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0].as_deref().unwrap(), b"ab");
        assert!(got[1].as_ref().unwrap_err().contains("batch_line_bytes = 4"));
        assert_eq!(got[2].as_deref().unwrap(), b"xyz");
        assert_eq!(got[3].as_deref().unwrap(), b"last");
        let read: Vec<_> = lines(&b"one\ntoolong\nok"[..], budget).map(|l| l.ok()).collect();
        assert_eq!(read, [Some(b"one".to_vec()), None, Some(b"ok".to_vec())]);
        // A line in many pieces under the budget comes whole (each piece searched once).
        let mut s = LineSplit::new(Budget::fixed("x", 100));
        for _ in 0..40 {
            s.feed(b"ab");
            assert!(s.next_line().is_none());
        }
        s.feed(b"\nc");
        assert_eq!(s.next_line().unwrap().unwrap(), b"ab".repeat(40));
        assert!(s.next_line().is_none());
        assert_eq!(s.finish().unwrap().unwrap(), b"c");
        // A line exactly at the budget passes; one byte more does not.
        let read: Vec<_> = lines(&b"four\nfive5\n"[..], budget).map(|l| l.is_ok()).collect();
        assert_eq!(read, [true, false]);
    }
}
