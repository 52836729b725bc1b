//! End to end: `palaver compare -m demo -m demo-reasoning` in tmux (its own socket, its own
//! `PALAVER_HOME`, no API key, so the embedded demo provider answers). Sends a prompt and a
//! follow-up to both columns, opens the diff, keeps one column and carries on with it as a
//! chat, then checks the history holds the compare columns and the kept chat. A second run
//! compares `demo-tools` with `demo`: the tool loop runs in its column. Skips (and says so)
//! when tmux is not installed.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static SEQ: AtomicU32 = AtomicU32::new(0);

fn tmux_available() -> bool {
    let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: tmux is not installed; skipping the end-to-end compare test");
    }
    ok
}

/// How long to wait for the screen; CI machines are slower.
fn patience() -> Duration {
    let base = Duration::from_secs(20);
    if std::env::var_os("CI").is_some() { base * 3 } else { base }
}

struct Tmux {
    socket: String,
    home: tempfile::TempDir,
}

impl Tmux {
    /// Starts `palaver ARGS` at `w`×`h` in a shell that prints `EXITED-<status>` after it.
    fn start(args: &str, w: u16, h: u16) -> Self {
        Self::start_in(args, w, h, None)
    }

    /// [`Tmux::start`] in working directory `cwd` (the test's own by default).
    fn start_in(args: &str, w: u16, h: u16, cwd: Option<&std::path::Path>) -> Self {
        let home = tempfile::tempdir().unwrap();
        let socket = format!("palaver-cmp-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::SeqCst));
        let bin = env!("CARGO_BIN_EXE_palaver");
        let script = format!("'{bin}' {args}; echo EXITED-$?; sleep 600");
        let (w, h) = (w.to_string(), h.to_string());
        let dir = cwd.map(|d| d.display().to_string());
        let at: Vec<&str> = dir.as_deref().map(|d| vec!["-c", d]).unwrap_or_default();
        let out = Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", &w, "-y", &h])
            .args(at)
            .arg(&script)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("TMUX")
            .env("PALAVER_HOME", home.path())
            .env("TERM", "xterm-256color")
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux new-session failed: {}", String::from_utf8_lossy(&out.stderr));
        Self { socket, home }
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().unwrap()
    }

    /// Sends tmux key names, one at a time with a pause (so Esc then a letter is not Alt+letter).
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
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}

/// The text of screen rows whose column-`x0..x1` slice is one compare column.
fn column(screen: &str, x0: usize, x1: usize) -> String {
    screen.lines().map(|l| l.chars().skip(x0).take(x1 - x0).collect::<String>()).collect::<Vec<_>>().join("\n")
}

#[test]
fn compare_two_demo_models_follow_up_diff_and_keep_one() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("compare -m demo -m demo-reasoning", 120, 40);
    let s = t.wait_for("the compare screen", |s| s.contains("message to 2 models"));
    assert!(s.contains("1 demo") && s.contains("2 demo-reasoning"), "{s}");
    assert!(s.contains("Metrics"), "the metrics strip: {s}");

    // One prompt, both columns answer, each with its numbers.
    t.type_text("What is Rust?");
    t.keys(&["Enter"]);
    let s = t.wait_for("both answers", |s| s.contains("✓ 2 done"));
    let (left, right) = (column(&s, 0, 60), column(&s, 60, 120));
    assert!(left.contains("✓ done in") && left.contains("ttft"), "{left}");
    assert!(right.contains("reasoning"), "the reasoning column shows its reasoning tokens: {right}");
    assert!(s.contains("★"), "the best of each metric is marked: {s}");

    // A follow-up goes to both, each with its own history (the demo counts the turns it saw).
    t.type_text("Tell me more");
    t.keys(&["Enter"]);
    t.wait_for("both replies to the follow-up", |s| s.contains("✓ 2 done") && column(s, 60, 120).contains("Turn 2"));
    // The first column's long answer pushed its turn marker up: scroll that column to it.
    t.keys(&["Tab", "PageUp"]);
    t.wait_for("the first column's second turn", |s| column(s, 0, 60).contains("Turn 2 · you said"));

    // The diff of the two answers, then back.
    t.keys(&["d"]);
    let s = t.wait_for("the diff view", |s| s.contains("diff of the last answers"));
    assert!(s.contains("− 1 demo") && s.contains("+ 2 demo-reasoning") && s.contains("% in common"), "{s}");
    t.keys(&["Escape"]);
    t.wait_for("the columns again", |s| !s.contains("diff of the last answers") && s.contains("2 demo-reasoning"));

    // Full width and back, synchronised scrolling on.
    t.keys(&["f"]);
    t.wait_for("the focused column full width", |s| s.contains("full width") && !s.contains("2 demo-reasoning ─"));
    t.keys(&["f", "s"]);
    t.wait_for("sync on", |s| s.contains("⇅ sync"));

    // Keep the second column: it carries on as a normal chat with its model and history.
    t.keys(&["Tab", "k"]);
    let s = t.wait_for("the kept column as the chat", |s| s.contains("kept column 2 (demo-reasoning)"));
    assert!(s.contains("palaver ─ demo · demo-reasoning"), "{s}");
    t.type_text("and a third");
    t.keys(&["Enter"]);
    t.wait_for("the third turn, in the kept conversation", |s| s.contains("Turn 3") && s.contains("✓ done"));

    t.keys(&["C-q"]);
    t.wait_for("the shell after palaver", |s| s.contains("EXITED-0"));

    // The history holds both compare columns and the kept chat.
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "list", "--json"])
        .env("PALAVER_HOME", t.home.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<serde_json::Value> = list.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let models: Vec<&str> = rows.iter().filter_map(|r| r["model"].as_str()).collect();
    assert!(rows.len() >= 3, "two compare columns and the kept chat: {list}");
    assert!(models.contains(&"demo") && models.contains(&"demo-reasoning"), "{list}");
    assert!(rows.iter().any(|r| r["messages"].as_u64() == Some(6)), "the kept chat has three turns: {list}");
}

#[test]
fn compare_command_inside_a_chat_and_a_failing_column() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("", 120, 40);
    t.wait_for("the chat", |s| s.contains("Type a message and press Enter"));
    t.type_text("/compare demo demo-error");
    t.keys(&["Enter"]);
    t.wait_for("the compare screen", |s| s.contains("message to 2 models"));
    t.type_text("hello");
    t.keys(&["Enter"]);
    // demo-error fails in its own column; demo answers regardless.
    let s = t.wait_for("one done, one failed", |s| s.contains("✓ 1 done") && s.contains("✗ 1 failed"));
    assert!(column(&s, 0, 60).contains("Ask another question"), "{s}");
    assert!(column(&s, 60, 120).contains("✗"), "{s}");
    t.type_text("/compare off");
    t.keys(&["Enter"]);
    t.wait_for("the chat again", |s| s.contains("Type a message and press Enter") && s.contains("left compare"));
}

#[test]
fn compare_a_tool_model_runs_its_tool_loop_in_its_column() {
    if !tmux_available() {
        return;
    }
    // A scratch directory for the read-only tools demo-tools calls (list_directory `.`,
    // read_file `Cargo.toml`).
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("Cargo.toml"), "[package]\nname = \"scratch\"\n").unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "hello\n").unwrap();
    let t = Tmux::start_in("compare -m demo-tools -m demo", 120, 60, Some(cwd.path()));
    t.wait_for("the compare screen", |s| s.contains("message to 2 models"));
    t.type_text("What is in this directory?");
    t.keys(&["Enter"]);
    // The tool column is done only after its second request: calls, results, then the answer.
    let s = t.wait_for("both answers", |s| s.contains("✓ 2 done"));
    let (left, right) = (column(&s, 0, 60), column(&s, 60, 120));
    for tool in ["⚙ list_directory", "⚙ read_file", "⚙ current_time"] {
        assert!(left.contains(tool), "{tool} card: {left}");
    }
    assert_eq!(left.matches("✓ done ·").count(), 3, "three tool cards, each done: {left}");
    assert!(left.contains("I called 3 tools and got the results back"), "the answer built from them: {left}");
    assert!(left.contains("name = \"scratch\""), "read_file read the scratch Cargo.toml: {left}");
    assert!(right.contains("Ask another question") && !right.contains("⚙"), "demo just answers: {right}");

    t.keys(&["C-q"]);
    t.wait_for("the shell after palaver", |s| s.contains("EXITED-0"));
    // Each column is its own conversation in the history; the tool column's holds the prompt,
    // the reply with 3 calls, 3 tool results and the answer.
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "list", "--json"])
        .env("PALAVER_HOME", t.home.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<serde_json::Value> = list.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let tools = rows.iter().find(|r| r["model"] == "demo-tools").unwrap_or_else(|| panic!("{list}"));
    assert_eq!(tools["messages"].as_u64(), Some(6), "{list}");
    assert!(rows.iter().any(|r| r["model"] == "demo" && r["messages"].as_u64() == Some(2)), "{list}");
}
