//! End to end with the history store: the real binary in tmux (its own socket per run, a
//! temporary `PALAVER_HOME` per test shared by the runs of that test, no API key, so the
//! embedded demo provider answers). Chat, quit and `--continue`; find an earlier conversation
//! by searching a word and open it; `kill -9` mid-stream and find the partial reply marked
//! interrupted; an unknown `--resume` id. Skips (and says so) when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static SEQ: AtomicU32 = AtomicU32::new(0);

fn tmux_available() -> bool {
    let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: tmux is not installed; skipping the end-to-end history test");
    }
    ok
}

/// How long to wait for the screen; CI machines are slower.
fn patience() -> Duration {
    let base = Duration::from_secs(20);
    if std::env::var_os("CI").is_some() { base * 3 } else { base }
}

/// A tmux server of our own running `palaver ARGS` in a 120×40 window with `home` as its
/// `PALAVER_HOME`; the shell prints `EXITED-<status>` after it and stays open.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(home: &Path, args: &str) -> Self {
        let socket = format!("palaver-e2e-store-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::SeqCst));
        let bin = env!("CARGO_BIN_EXE_palaver");
        let script = format!("'{bin}' {args}; echo EXITED-$?; sleep 600");
        let out = Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "120", "-y", "40"])
            .arg(&script)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("TMUX")
            .env("PALAVER_HOME", home)
            .env("TERM", "xterm-256color")
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux new-session failed: {}", String::from_utf8_lossy(&out.stderr));
        Self { socket }
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().unwrap()
    }

    /// Sends tmux key names (`Enter`, `Escape`, `C-l`), one at a time: an Escape followed too
    /// closely by another key reads as Alt+key.
    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", "main", k]);
            std::thread::sleep(Duration::from_millis(120));
        }
    }

    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "main", "-l", text]);
        std::thread::sleep(Duration::from_millis(60));
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "main"]).stdout).into_owned()
    }

    /// Polls the screen until `pred` holds; panics with the last screen otherwise.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + patience();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; the screen was:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_ready(&self) {
        self.wait_for("the empty chat screen", |s| s.contains("Type a message and press Enter"));
    }

    /// Sends a prompt and waits for the demo's finished answer.
    fn chat(&self, prompt: &str) {
        self.type_text(prompt);
        self.keys(&["Enter"]);
        self.wait_for("the finished answer", |s| s.contains(prompt) && s.contains("✓ done"));
    }

    fn quit(&self) {
        self.keys(&["C-q"]);
        let s = self.wait_for("palaver to exit", |s| s.contains("EXITED-"));
        assert!(s.contains("EXITED-0"), "exit status: {s}");
    }

    /// The pid of palaver itself (the pane runs a shell around it).
    fn palaver_pid(&self) -> String {
        let shell = String::from_utf8_lossy(&self.tmux(&["display-message", "-p", "-t", "main", "#{pane_pid}"]).stdout)
            .trim()
            .to_owned();
        let out = Command::new("pgrep").args(["-P", &shell]).output().unwrap();
        let pids = String::from_utf8_lossy(&out.stdout).into_owned();
        pids.lines().next().expect("palaver runs under the pane's shell").trim().to_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}

fn history_list(home: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "list"])
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn chat_quit_and_continue_brings_the_transcript_back() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let t = Tmux::start(home.path(), "");
    t.wait_ready();
    t.chat("remember the word pelican");
    t.quit();
    drop(t);
    assert!(history_list(home.path()).contains("remember the word pelican"));

    let t = Tmux::start(home.path(), "--continue");
    let s = t.wait_for("the reopened conversation", |s| s.contains("reopened “remember the word pelican”"));
    assert!(s.contains("Turn 1 · you said: “remember the word pelican”"), "{s}");
    assert!(s.contains("Ask another question"), "the whole reply is back: {s}");
    // The next turn carries the reopened one as context (the demo counts turns)…
    t.type_text("and now?");
    t.keys(&["Enter"]);
    t.wait_for("the second turn", |s| s.contains("Turn 2"));
    // …and Up in the empty composer walks the prompts, the earlier session's included.
    t.keys(&["Up", "Up"]);
    t.wait_for("the earlier prompt from history", |s| {
        s.lines().rev().take(4).any(|l| l.contains("remember the word pelican"))
    });
    t.keys(&["C-c"]);
    t.quit();
    let listed = history_list(home.path());
    assert_eq!(listed.lines().count(), 1, "one conversation, continued: {listed}");
    assert!(listed.contains("4 msgs"), "{listed}");
}

#[test]
fn search_finds_an_earlier_conversation_and_opens_it() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let t = Tmux::start(home.path(), "");
    t.wait_ready();
    t.chat("tell me about flamingos");
    t.type_text("/new");
    t.keys(&["Enter"]);
    t.wait_for("a fresh screen", |s| s.contains("new conversation") && !s.contains("flamingos"));
    t.chat("something else entirely");

    t.keys(&["C-l"]);
    t.wait_for("the list", |s| s.contains("2 conversations, newest first"));
    t.type_text("flamingo");
    let s = t.wait_for("the search results", |s| s.contains("matches") || s.contains("1 match"));
    assert!(s.contains("tell me about flamingos · "), "{s}");
    assert!(!s.contains("something else entirely ·"), "{s}");
    t.keys(&["Enter"]);
    let s = t.wait_for("the opened conversation", |s| s.contains("reopened “tell me about flamingos”"));
    assert!(s.contains("Turn 1 · you said: “tell me about flamingos”"), "{s}");
    assert!(!s.contains("something else entirely"), "the transcript was replaced: {s}");

    // Rename it from the list, and the list says so.
    t.keys(&["C-l"]);
    t.wait_for("the list again", |s| s.contains("2 conversations"));
    t.keys(&["Tab"]);
    t.wait_for("the row commands", |s| s.contains("r rename"));
    t.keys(&["Down", "r", "C-u"]);
    t.type_text("Birds");
    t.keys(&["Enter"]);
    t.wait_for("the new title", |s| s.contains("renamed to “Birds”"));
    t.keys(&["Escape"]);
    t.quit();
    let listed = history_list(home.path());
    assert!(listed.contains("Birds") && listed.contains("something else entirely"), "{listed}");
}

#[test]
fn kill_9_mid_stream_leaves_the_partial_reply_marked_interrupted() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let t = Tmux::start(home.path(), "--model demo-slow");
    t.wait_ready();
    t.type_text("tell me a slow story");
    t.keys(&["Enter"]);
    t.wait_for("streaming text", |s| s.contains("● streaming") && s.contains("A language model writes"));
    // Long enough for a save after the text on screen (the writer saves at least every 250 ms).
    std::thread::sleep(Duration::from_millis(600));
    let pid = t.palaver_pid();
    let killed = Command::new("kill").args(["-9", &pid]).status().unwrap();
    assert!(killed.success());
    t.wait_for("the shell after the kill", |s| s.contains("EXITED-137"));
    drop(t);

    let t = Tmux::start(home.path(), "--continue");
    let s = t.wait_for("the reopened conversation", |s| s.contains("reopened “tell me a slow story”"));
    assert!(s.contains("tell me a slow story"), "{s}");
    assert!(s.contains("A language model writes one token at a time"), "the partial reply is back: {s}");
    assert!(s.contains("demo-slow · interrupted"), "marked interrupted: {s}");
    assert!(s.contains("palaver stopped before this reply finished"), "{s}");
    assert!(!s.contains("● streaming"), "{s}");
    t.quit();
}

#[test]
fn resume_with_an_unknown_id_exits_2_before_the_screen_opens() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let t = Tmux::start(home.path(), "--resume no-such-id");
    let s = t.wait_for("the exit", |s| s.contains("EXITED-"));
    assert!(s.contains("EXITED-2"), "{s}");
    assert!(s.contains("no conversation with ID no-such-id"), "{s}");
    assert!(!s.contains("Type a message"), "the screen never opened: {s}");
}
