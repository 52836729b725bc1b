//! The tmux harness of the end-to-end TUI tests: the real binary in a tmux server of its own
//! (its own socket, its own `PALAVER_HOME`, no API key, so the embedded demo provider answers
//! unless `--base-url` says otherwise), driven with `send-keys` and read with `capture-pane`,
//! polling until the screen shows what a user would wait for.

#![allow(clippy::disallowed_methods)] // tests read what they wrote

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The test crate this module is compiled into (`e2e_tui_store`, …): names the skip note and
/// the tmux sockets.
const SUITE: &str = env!("CARGO_CRATE_NAME");

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Whether tmux is installed; says that the test is skipped when it is not.
pub fn tmux_available() -> bool {
    let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: tmux is not installed; skipping the end-to-end TUI test ({SUITE})");
    }
    ok
}

/// How long to wait for the screen; CI machines are slower.
pub fn patience() -> Duration {
    let base = Duration::from_secs(20);
    if std::env::var_os("CI").is_some() { base * 3 } else { base }
}

/// How [`Tmux::keys`] sends a list of key names.
#[derive(Clone, Copy, Debug)]
enum KeyPace {
    /// One `send-keys` with all of them, then 60 ms.
    Together,
    /// One `send-keys` each, 120 ms after each: an Escape followed too closely by another key
    /// reads as Alt+key.
    OneAtATime,
}

/// How to start palaver in tmux: [`Tmux::launch`], the options, then [`Launch::start`].
pub struct Launch {
    args: String,
    width: u16,
    height: u16,
    home: Option<PathBuf>,
    cwd: Option<PathBuf>,
    keep: Vec<tempfile::TempDir>,
    pace: KeyPace,
    capture_stderr: bool,
    poll: Duration,
    remove_socket: bool,
    /// Words run before palaver's path (`setpriv --reuid=… `): palaver as another user.
    wrap: String,
}

impl Launch {
    /// Runs palaver through `command` (its words, then palaver's path and arguments).
    pub fn wrapped_in(mut self, command: &str) -> Self {
        self.wrap = format!("{command} ");
        self
    }

    /// The window size (120×40 by default).
    pub fn size(mut self, width: u16, height: u16) -> Self {
        (self.width, self.height) = (width, height);
        self
    }

    /// `PALAVER_HOME` (a new temporary directory, removed with the [`Tmux`], by default); a
    /// directory passed here outlives the run, so several runs can share it.
    pub fn home(mut self, home: &Path) -> Self {
        self.home = Some(home.to_path_buf());
        self
    }

    /// The working directory (the test's own by default).
    pub fn cwd(mut self, cwd: &Path) -> Self {
        self.cwd = Some(cwd.to_path_buf());
        self
    }

    /// [`Launch::cwd`] in `dir`, which the [`Tmux`] keeps until it is dropped.
    pub fn keep_cwd(mut self, dir: tempfile::TempDir) -> Self {
        self.cwd = Some(dir.path().to_path_buf());
        self.keep.push(dir);
        self
    }

    /// [`Tmux::keys`] sends the keys one at a time with a pause after each.
    pub fn keys_one_at_a_time(mut self) -> Self {
        self.pace = KeyPace::OneAtATime;
        self
    }

    /// Sends palaver's stderr to `stderr.txt` in `PALAVER_HOME`, for [`Tmux::quit_cleanly`].
    pub fn capture_stderr(mut self) -> Self {
        self.capture_stderr = true;
        self
    }

    /// How often [`Tmux::wait_for`] looks at the screen (every 100 ms by default).
    pub fn poll_every(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// Also removes the socket file tmux leaves behind when the [`Tmux`] is dropped.
    pub fn remove_socket_on_drop(mut self) -> Self {
        self.remove_socket = true;
        self
    }

    /// Starts `palaver ARGS` in a shell that prints `EXITED-<status>` after it and stays open.
    pub fn start(mut self) -> Tmux {
        let home = match self.home {
            Some(home) => home,
            None => {
                let dir = tempfile::tempdir().unwrap();
                let home = dir.path().to_path_buf();
                self.keep.push(dir);
                home
            }
        };
        let socket = format!("palaver-{SUITE}-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::SeqCst));
        let bin = env!("CARGO_BIN_EXE_palaver");
        let stderr = self.capture_stderr.then(|| home.join("stderr.txt"));
        let redirect = stderr.as_ref().map(|p| format!(" 2>'{}'", p.display())).unwrap_or_default();
        let script = format!("{}'{bin}' {}{redirect}; echo EXITED-$?; sleep 600", self.wrap, self.args);
        let (w, h) = (self.width.to_string(), self.height.to_string());
        let dir = self.cwd.as_ref().map(|d| d.display().to_string());
        let at: Vec<&str> = dir.as_deref().map(|d| vec!["-c", d]).unwrap_or_default();
        // A window named with -n keeps its name: tmux's automatic renaming after the foreground
        // process would otherwise race with checks that only an escape sequence may rename it.
        let out = Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d", "-s", "main", "-n", "palaver"])
            .args(["-x", &w, "-y", &h])
            .args(at)
            .arg(&script)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("TMUX")
            .env("PALAVER_HOME", &home)
            .env("TERM", "xterm-256color")
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux new-session failed: {}", String::from_utf8_lossy(&out.stderr));
        Tmux {
            socket,
            home,
            cwd: self.cwd,
            pace: self.pace,
            stderr,
            poll: self.poll,
            remove_socket: self.remove_socket,
            _keep: self.keep,
        }
    }
}

/// A tmux server of our own running palaver in window `main`; killed on drop.
pub struct Tmux {
    socket: String,
    home: PathBuf,
    cwd: Option<PathBuf>,
    pace: KeyPace,
    /// Where palaver's stderr goes, when captured.
    stderr: Option<PathBuf>,
    poll: Duration,
    remove_socket: bool,
    /// Temporary directories removed after the server is killed.
    _keep: Vec<tempfile::TempDir>,
}

impl Tmux {
    /// Starts `palaver ARGS` at 120×40 with a `PALAVER_HOME` of its own; see [`Launch`].
    pub fn start(args: &str) -> Self {
        Self::launch(args).start()
    }

    /// The options for starting `palaver ARGS`, with the defaults of [`Tmux::start`].
    pub fn launch(args: &str) -> Launch {
        Launch {
            args: args.to_owned(),
            width: 120,
            height: 40,
            home: None,
            cwd: None,
            keep: Vec::new(),
            pace: KeyPace::Together,
            capture_stderr: false,
            poll: Duration::from_millis(100),
            remove_socket: false,
            wrap: String::new(),
        }
    }

    /// The `PALAVER_HOME` palaver runs with.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The working directory given at launch.
    pub fn cwd(&self) -> &Path {
        self.cwd.as_deref().expect("launched with a working directory")
    }

    /// Runs `tmux ARGS` against this server.
    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().unwrap()
    }

    /// Sends tmux key names (`Enter`, `Escape`, `C-q`), paced as launched.
    pub fn keys(&self, keys: &[&str]) {
        match self.pace {
            KeyPace::Together => {
                let mut args = vec!["send-keys", "-t", "main"];
                args.extend_from_slice(keys);
                self.tmux(&args);
                std::thread::sleep(Duration::from_millis(60));
            }
            KeyPace::OneAtATime => {
                for k in keys {
                    self.tmux(&["send-keys", "-t", "main", k]);
                    std::thread::sleep(Duration::from_millis(120));
                }
            }
        }
    }

    /// Types text literally.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "main", "-l", text]);
        std::thread::sleep(Duration::from_millis(60));
    }

    /// Types `text` and presses Enter.
    pub fn send(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "main"]).stdout).into_owned()
    }

    /// A tmux format (`#{pane_title}`) expanded for the pane.
    pub fn display(&self, format: &str) -> String {
        String::from_utf8_lossy(&self.tmux(&["display-message", "-p", "-t", "main", format]).stdout).trim().to_owned()
    }

    /// Polls the screen until `pred` holds; panics with the last screen otherwise.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + patience();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; the screen was:\n{s}");
            std::thread::sleep(self.poll);
        }
    }

    pub fn wait_ready(&self) {
        self.wait_for("the empty chat screen", |s| s.contains("Type a message and press Enter"));
    }

    /// Sends a prompt and waits for the demo's finished answer.
    pub fn chat(&self, prompt: &str) {
        self.send(prompt);
        self.wait_for("the finished answer", |s| s.contains(prompt) && s.contains("✓ done"));
    }

    /// Quits with Ctrl+Q and checks the exit status.
    pub fn quit(&self) {
        self.keys(&["C-q"]);
        let s = self.wait_for("palaver to exit", |s| s.contains("EXITED-"));
        assert!(s.contains("EXITED-0"), "exit status: {s}");
    }

    /// Quits with Ctrl+Q; checks the exit status and that the captured stderr holds no panic.
    pub fn quit_cleanly(&self) {
        let path = self.stderr.as_ref().expect("launched with capture_stderr");
        self.keys(&["C-q"]);
        let s = self.wait_for("the shell after palaver", |s| s.contains("EXITED-"));
        assert!(s.contains("EXITED-0"), "exit status: {s}");
        let err = std::fs::read_to_string(path).unwrap_or_default();
        assert!(!err.contains("panicked"), "palaver panicked:\n{err}");
    }

    /// The pid of palaver itself (the pane runs a shell around it).
    pub fn palaver_pid(&self) -> String {
        let shell = self.display("#{pane_pid}");
        let out = Command::new("pgrep").args(["-P", &shell]).output().unwrap();
        let pids = String::from_utf8_lossy(&out.stdout).into_owned();
        pids.lines().next().expect("palaver runs under the pane's shell").trim().to_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let path = if self.remove_socket { self.display("#{socket_path}") } else { String::new() };
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
        // tmux leaves the socket file behind.
        if self.remove_socket && path.contains(&self.socket) {
            let _ = std::fs::remove_file(path);
        }
    }
}
