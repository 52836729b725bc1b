//! End to end with the history store: the real binary in tmux (its own socket per run, a
//! temporary `PALAVER_HOME` per test shared by the runs of that test, no API key, so the
//! embedded demo provider answers). Chat, quit and `--continue`; find an earlier conversation
//! by searching a word and open it; `kill -9` mid-stream and find the partial reply marked
//! interrupted; SIGHUP and SIGTERM mid-stream restore the terminal and keep the partial reply;
//! an unknown `--resume` id. Skips (and says so) when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// palaver in tmux with `home` as its `PALAVER_HOME`, shared by the runs of one test; keys go
/// one at a time.
fn start(home: &Path, args: &str) -> Tmux {
    Tmux::launch(args).home(home).keys_one_at_a_time().start()
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
    let t = start(home.path(), "");
    t.wait_ready();
    t.chat("remember the word pelican");
    t.quit();
    drop(t);
    assert!(history_list(home.path()).contains("remember the word pelican"));

    let t = start(home.path(), "--continue");
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
    let t = start(home.path(), "");
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
    let t = start(home.path(), "--model demo-slow");
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

    let t = start(home.path(), "--continue");
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
    let t = start(home.path(), "--resume no-such-id");
    let s = t.wait_for("the exit", |s| s.contains("EXITED-"));
    assert!(s.contains("EXITED-2"), "{s}");
    assert!(s.contains("no conversation with ID no-such-id"), "{s}");
    assert!(!s.contains("Type a message"), "the screen never opened: {s}");
}

#[test]
fn a_headless_compare_is_one_entry_of_the_list_and_reopens_side_by_side() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let made = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--demo", "compare", "-m", "demo", "-m", "demo-reasoning", "-p", "hi pelican"])
        .env("PALAVER_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let t = start(home.path(), "");
    t.wait_ready();
    t.keys(&["C-l"]);
    let s = t.wait_for("the list with the compare", |s| s.contains("1 compare, newest first"));
    assert!(s.contains("+ hi pelican") && s.contains("compare · 2 models"), "one row for the compare: {s}");
    assert!(!s.contains("demo-reasoning"), "its columns are folded: {s}");
    t.keys(&["Right"]);
    let s = t.wait_for("its columns", |s| s.contains("└ column 2"));
    assert!(s.contains("├ column 1") && s.contains("demo-reasoning"), "{s}");
    t.keys(&["Left", "Enter"]);
    let s = t.wait_for("the compare screen", |s| s.contains("message to 2 models"));
    assert!(s.contains("reopened the compare “hi pelican” · 2 columns"), "{s}");
    assert!(s.contains("1 demo") && s.contains("2 demo-reasoning"), "{s}");
    // Both stored answers are back (the first, long one shows its end).
    assert!(s.contains("Ask another question") && s.contains("Turn 1 · you said: “hi pelican”"), "{s}");
    // The next turn goes on in the same two conversations.
    t.type_text("and now?");
    t.keys(&["Enter"]);
    let right = |s: &str| s.lines().map(|l| l.chars().skip(60).collect::<String>()).collect::<Vec<_>>().join("\n");
    t.wait_for("both second turns", |s| s.contains("✓ 2 done") && right(s).contains("Turn 2 · you said: “and now?”"));
    t.quit();
    let listed = history_list(home.path());
    assert_eq!(listed.lines().count(), 1, "still one compare: {listed}");
    assert!(listed.contains("compare · 2 models") && listed.contains("8 msgs"), "{listed}");
}

/// The terminal's modes after palaver, as the shell sees them, then palaver's exit status.
const STTY_AFTER: &str = "; s=$?; stty -a | grep -o -- '-*icanon'; stty -a | grep -o -- ' -*echo '; (exit $s)";

/// A hang-up (the terminal or SSH session went away) or a polite kill mid-stream: the terminal is
/// restored (cooked mode, echo, the main screen, a cursor) and the partial reply is in the store
/// up to the words on screen when the signal came.
fn a_signal_mid_stream_restores_the_terminal_and_keeps_the_partial_reply(signal: &str) {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let t = start(home.path(), &format!("--model demo-slow{STTY_AFTER}"));
    t.wait_ready();
    t.type_text("tell me a slow story");
    t.keys(&["Enter"]);
    let s = t.wait_for("streaming text", |s| s.contains("● streaming") && s.contains("one token at a time"));
    assert_eq!(t.display("#{alternate_on}"), "1", "the chat screen is on the alternate screen");
    // The last words on screen, read just before the signal (up to the streaming cursor ▌, in
    // the transcript's panel): the store must hold at least them.
    let reply: Vec<&str> = s.lines().skip_while(|l| !l.contains("A language model writes")).collect();
    let upto = reply.iter().position(|l| l.contains('▌')).expect("the streaming cursor");
    let last = reply[..=upto]
        .iter()
        .map(|l| l.split('│').nth(1).unwrap_or("").replace('▌', "").trim().to_owned())
        .rfind(|l| !l.is_empty())
        .unwrap();
    let killed = Command::new("kill").args([signal, &t.palaver_pid()]).status().unwrap();
    assert!(killed.success());
    let s = t.wait_for("the shell after the signal", |s| s.contains("EXITED-"));
    assert!(s.contains("EXITED-130"), "interrupted: {s}");
    assert!(s.lines().any(|l| l.trim() == "icanon") && s.lines().any(|l| l.trim() == "echo"), "terminal modes: {s}");
    assert_eq!(t.display("#{alternate_on}"), "0", "back on the main screen: {s}");
    assert_eq!(t.display("#{cursor_flag}"), "1", "the cursor is shown again");
    assert_eq!(t.display("#{mouse_any_flag}"), "0", "mouse reporting is off");
    drop(t);
    let listed = history_list(home.path());
    let id = listed.split_whitespace().next().unwrap().to_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "show", &id])
        .env("PALAVER_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let stored = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(stored.contains("A language model writes one token at a time"), "the partial reply is kept: {stored}");
    let last = last.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(stored.contains(&last), "the words on screen at the signal ({last:?}) are stored: {stored}");
    // Stored with the signal as its reason, not as a crash nor as the user's cancel.
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "export", &id, "--format", "json"])
        .env("PALAVER_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let export: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reply = &export["messages"][1];
    let name = if signal == "-HUP" { "SIGHUP" } else { "SIGTERM" };
    assert_eq!(reply["status"], "interrupted", "{reply}");
    let why = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(why.starts_with(&format!("interrupted by {name} (")), "{reply}");
}

#[test]
fn sighup_mid_stream_restores_the_terminal_and_keeps_the_partial_reply() {
    a_signal_mid_stream_restores_the_terminal_and_keeps_the_partial_reply("-HUP");
}

#[test]
fn sigterm_mid_stream_restores_the_terminal_and_keeps_the_partial_reply() {
    a_signal_mid_stream_restores_the_terminal_and_keeps_the_partial_reply("-TERM");
}

/// Issue 25 item 3: another palaver (a headless `--continue`) adds a turn to the conversation
/// the chat screen has open; the chat screen's next turn is saved after it, not over it, and
/// the screen says so.
#[test]
fn a_turn_added_by_another_palaver_is_not_overwritten_by_the_chat_screen() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let t = start(home.path(), "");
    t.wait_ready();
    t.chat("first from the screen");
    let other = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--demo", "--continue", "-p", "meanwhile from elsewhere"])
        .env("PALAVER_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(other.status.success(), "{}", String::from_utf8_lossy(&other.stderr));
    t.send("second from the screen");
    let s = t.wait_for("the notice", |s| s.contains("another palaver added"));
    assert!(s.contains("nothing was overwritten"), "{s}");
    t.wait_for("the finished answer", |s| s.matches("✓ done").count() >= 2 || s.contains("second from the screen"));
    t.quit();
    let listed = history_list(home.path());
    assert_eq!(listed.lines().count(), 1, "one conversation: {listed}");
    let id = listed.split_whitespace().next().unwrap().to_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "show", &id])
        .env("PALAVER_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let stored = String::from_utf8_lossy(&out.stdout).into_owned();
    let at = |what: &str| stored.find(what).unwrap_or_else(|| panic!("{what:?} was lost:\n{stored}"));
    assert!(at("first from the screen") < at("meanwhile from elsewhere"), "{stored}");
    assert!(at("meanwhile from elsewhere") < at("second from the screen"), "{stored}");
    assert_eq!(stored.matches("── you ──").count(), 3, "three turns, each once:\n{stored}");
}

/// A conversation of `turns` prompts and answers written straight into `home`'s store.
fn long_conversation(home: &Path, turns: usize) -> String {
    use palaver::engine::message::{Message, Role};
    use palaver::store::{NewConversation, StoreHandle, StoreOptions};
    let store = StoreHandle::open(&home.join("palaver.sqlite3"), StoreOptions::default()).unwrap();
    let id = store.create_conversation(NewConversation {
        title: "a very long talk".into(),
        model: Some("demo".into()),
        provider: Some("demo".into()),
        api: Some("chat".into()),
        compare: None,
    });
    for i in 0..turns {
        store.save_message(&id, 2 * i, &Message::user(&format!("prompt number {i}")));
        store.save_message(&id, 2 * i + 1, &Message::with_text(Role::Assistant, &format!("answer number {i}")));
    }
    store.flush().unwrap();
    id
}

#[test]
fn a_long_conversation_resumes_on_its_end_and_the_next_turn_carries_all_of_it() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let id = long_conversation(home.path(), 750);
    let t = start(home.path(), &format!("--resume {id}"));
    // Sent as soon as the screen is up: if the earlier messages are still loading, the prompt
    // waits for them; either way the request carries every turn (the demo counts them).
    t.wait_for("the last answer", |s| s.contains("answer number 749"));
    next_turn_carries_all_750(t, home.path());
}

/// On the end of the 750-turn conversation: a prompt goes with every earlier turn (the demo
/// counts them), the first message is at the top, and the store holds the whole with the turn.
fn next_turn_carries_all_750(t: Tmux, home: &Path) {
    t.type_text("and what came first?");
    t.keys(&["Enter"]);
    let s = t.wait_for("the reply", |s| s.contains("you said: “and what came first?”"));
    assert!(s.contains("Turn 751 · you said"), "all 750 earlier turns went with the prompt: {s}");
    t.keys(&["C-Home"]);
    t.wait_for("the first message", |s| s.contains("prompt number 0") && !s.contains("prompt number 749"));
    t.quit();
    let listed = history_list(home);
    assert!(listed.contains("1502 msgs"), "saved after the 1,500, nothing overwritten: {listed}");
}

#[test]
fn a_long_conversation_opened_from_the_list_opens_on_its_end_and_the_next_turn_carries_all_of_it() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    long_conversation(home.path(), 750);
    let t = start(home.path(), "");
    t.wait_ready();
    t.keys(&["C-l"]);
    t.wait_for("the list", |s| s.contains("1 conversation"));
    t.keys(&["Enter"]);
    let s = t.wait_for("the opened conversation", |s| s.contains("answer number 749"));
    assert!(s.contains("1500 messages"), "the notice counts the whole conversation: {s}");
    next_turn_carries_all_750(t, home.path());
}
