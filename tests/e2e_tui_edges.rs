//! End to end in tmux, issue 25's edges of the chat screen: Ctrl+C while palaver still waits
//! before the screen opens (an `api_key_cmd` that does not return), a conversation another
//! palaver adds turns to while the screen has it open, and a history on a read-only disk.
//! Skips (and says so) when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use common::tmux::{Tmux, tmux_available};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The terminal's modes after palaver, as the shell sees them, then palaver's exit status.
const STTY_AFTER: &str = "; s=$?; stty -a | grep -o -- '-*icanon'; stty -a | grep -o -- ' -*echo '; (exit $s)";

fn pid_alive(pid: &str) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !matches!(s.rsplit(')').next().and_then(|r| r.split_whitespace().next()), Some("Z")))
}

/// Issue 25 item 2: before the chat screen opens palaver waits on the profile's `api_key_cmd`;
/// Ctrl+C there ends palaver at once with 130, the key command with it, and the shell gets its
/// terminal back in cooked mode.
#[test]
fn ctrl_c_while_the_chat_screens_api_key_cmd_runs_exits_130_with_the_terminal_sane() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let pidfile = home.path().join("key.pid");
    let config = format!(
        "default_provider = \"k\"\n[providers.k]\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         api_key_cmd = \"echo $$ > {}; exec sleep 30\"\n",
        pidfile.display()
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let t = Tmux::launch(STTY_AFTER).home(home.path()).start();
    let deadline = Instant::now() + common::tmux::patience();
    while std::fs::read_to_string(&pidfile).map_or(true, |s| s.trim().is_empty()) {
        assert!(Instant::now() < deadline, "the key command never started: {}", t.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    let key_pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_owned();
    assert!(pid_alive(&key_pid), "the key command runs while palaver waits");
    let before = Instant::now();
    t.keys(&["C-c"]);
    let s = t.wait_for("the shell after Ctrl+C", |s| s.contains("EXITED-"));
    assert!(before.elapsed() < Duration::from_secs(5), "ended promptly: {:?}", before.elapsed());
    assert!(s.contains("EXITED-130"), "interrupted: {s}");
    assert!(s.lines().any(|l| l.trim() == "icanon") && s.lines().any(|l| l.trim() == "echo"), "terminal modes: {s}");
    assert_eq!(t.display("#{alternate_on}"), "0", "on the main screen: {s}");
    let gone = Instant::now() + Duration::from_secs(5);
    while pid_alive(&key_pid) {
        assert!(Instant::now() < gone, "the key command outlived palaver");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Once the chat screen is open, Ctrl+C is its key again (it arms quitting on an empty
/// composer) and not the early listener's exit.
#[test]
fn ctrl_c_on_the_open_chat_screen_is_still_a_key() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::launch("").keys_one_at_a_time().start();
    t.wait_ready();
    t.keys(&["C-c"]);
    std::thread::sleep(Duration::from_millis(500));
    let s = t.screen();
    assert!(!s.contains("EXITED-"), "one Ctrl+C on the screen does not end palaver: {s}");
    t.keys(&["C-q"]);
    let s = t.wait_for("palaver to exit", |s| s.contains("EXITED-"));
    assert!(s.contains("EXITED-0"), "{s}");
}

/// Whether this test runs as root (who writes anywhere: palaver then runs as nobody).
fn root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Issue 25 item 7: a history directory palaver may not write (no database can be made in it):
/// the chat screen works in memory, and on quitting it offers to save the conversation, as it
/// does when a full disk fails the writes; accepting writes the export where it says.
#[test]
fn a_read_only_history_offers_to_save_the_conversation_on_quit() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // As root palaver runs as nobody: the home is readable, not writable, the working
    // directory (where the export goes) writable by anyone.
    let root = root();
    set_mode(home.path(), if root { 0o755 } else { 0o555 });
    set_mode(work.path(), 0o777);
    let mut launch = Tmux::launch("").home(home.path()).cwd(work.path()).keys_one_at_a_time();
    if root {
        launch = launch.wrapped_in("setpriv --reuid=65534 --regid=65534 --clear-groups");
    }
    let t = launch.start();
    t.wait_for("the history-off notice", |s| s.contains("history is off"));
    t.chat("keep this thought safe");
    t.keys(&["C-q"]);
    let s = t.wait_for("the offer", |s| s.contains("What now?"));
    assert!(s.contains("the history could not be opened"), "{s}");
    assert!(s.contains("write it to palaver-unsaved-conversation.json"), "{s}");
    assert!(!s.contains("EXITED-"), "palaver waits for the answer: {s}");
    t.send("w");
    let s = t.wait_for("the shell", |s| s.contains("EXITED-"));
    set_mode(home.path(), 0o755);
    assert!(s.contains("wrote the conversation to palaver-unsaved-conversation.json"), "{s}");
    assert!(s.contains("EXITED-0"), "{s}");
    let written = std::fs::read_to_string(work.path().join("palaver-unsaved-conversation.json")).unwrap();
    let export: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(export["messages"][0]["choices"][0]["content"], "keep this thought safe", "{written}");
    assert!(export["messages"][1]["choices"][0]["content"].as_str().unwrap().contains("keep this thought safe"));
}

fn palaver(home: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "palaver {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Issue 25 item 3: the chat screen has a conversation open (`--resume ID`) when another
/// palaver adds a turn to it; the screen's next message brings that turn onto the screen,
/// before its own, says so, and the turn after goes out with it as context (the demo counts
/// turns). The store holds every turn once, in that order.
#[test]
fn turns_another_palaver_added_are_shown_before_the_chat_screens_next_one() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    palaver(home.path(), &["--demo", "-p", "first from headless"]);
    let id = palaver(home.path(), &["history", "list"]).split_whitespace().next().unwrap().to_owned();
    let t = Tmux::launch(&format!("--resume {id}")).home(home.path()).size(120, 160).keys_one_at_a_time().start();
    t.wait_for("the reopened conversation", |s| s.contains("you said: “first from headless”"));
    palaver(home.path(), &["--demo", "--resume", &id, "-p", "meanwhile from elsewhere"]);
    t.send("second from the screen");
    let s = t.wait_for("the other palaver's turn on screen", |s| {
        s.contains("another palaver added 2 messages") && s.contains("you said: “meanwhile from elsewhere”")
    });
    let at = |what: &str| s.find(what).unwrap_or_else(|| panic!("{what:?} is not on screen:\n{s}"));
    assert!(at("you said: “first from headless”") < at("another palaver added"), "{s}");
    assert!(at("another palaver added") < at("you said: “meanwhile from elsewhere”"), "{s}");
    assert!(at("you said: “meanwhile from elsewhere”") < at("second from the screen"), "{s}");
    t.wait_for("the screen's answer", |s| s.contains("you said: “second from the screen”") && s.contains("✓ done"));
    // The next turn carries theirs: the demo counts four user turns.
    t.send("third from the screen");
    t.wait_for("the fourth turn", |s| s.contains("Turn 4 · you said: “third from the screen”"));
    t.quit();
    let stored = palaver(home.path(), &["history", "show", &id]);
    let at = |what: &str| stored.find(what).unwrap_or_else(|| panic!("{what:?} was lost:\n{stored}"));
    assert!(at("first from headless") < at("meanwhile from elsewhere"), "{stored}");
    assert!(at("meanwhile from elsewhere") < at("second from the screen"), "{stored}");
    assert!(at("second from the screen") < at("third from the screen"), "{stored}");
    assert_eq!(stored.matches("── you ──").count(), 4, "four turns, each once:\n{stored}");
    assert_eq!(stored.matches("you said: “meanwhile from elsewhere”").count(), 1, "{stored}");
}

/// Issue 25 item 2: an MCP server that never answers `initialize` does not hold the chat screen
/// (it opens, and quits at once), nor does it outlive palaver.
#[test]
fn an_mcp_server_that_never_initialises_neither_holds_nor_outlives_the_chat_screen() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let pidfile = home.path().join("mcp.pid");
    let config = format!(
        "[mcp.servers.hang]\ncommand = [\"sh\", \"-c\", \"echo $$ > {}; exec sleep 100\"]\n",
        pidfile.display()
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let t = Tmux::launch("").home(home.path()).start();
    t.wait_for("the chat screen starting the server", |s| s.contains("starting MCP servers: hang"));
    let deadline = Instant::now() + common::tmux::patience();
    while std::fs::read_to_string(&pidfile).map_or(true, |s| s.trim().is_empty()) {
        assert!(Instant::now() < deadline, "the MCP server never started: {}", t.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_owned();
    t.keys(&["C-q"]);
    let s = t.wait_for("palaver to exit", |s| s.contains("EXITED-"));
    assert!(s.contains("EXITED-0"), "{s}");
    let gone = Instant::now() + Duration::from_secs(5);
    while pid_alive(&pid) {
        assert!(Instant::now() < gone, "the MCP server outlived palaver");
        std::thread::sleep(Duration::from_millis(50));
    }
}
