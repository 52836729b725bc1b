//! Nothing lost: `kill -9` in the middle of a headless stream leaves the prompt and the partial
//! reply (marked interrupted) in the history; `--continue` makes the next prompt its next turn;
//! `--resume` and `history` handle unknown ids; a store that cannot be opened does not stop a
//! run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn palaver(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn list_json(home: &Path) -> Vec<Value> {
    let out = palaver(home, &["history", "list", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn export_json(home: &Path, id: &str) -> Value {
    let out = palaver(home, &["history", "export", id, "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Starts a slow stream, waits until its text has been on screen for a while, kills it hard,
/// and returns what it printed.
fn killed_mid_stream(home: &Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--demo", "-m", "demo-slow", "-p", "tell me a story"])
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let printed = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let (printed, mut out) = (printed.clone(), child.stdout.take().unwrap());
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                printed.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let start = Instant::now();
    let mut first_text = None;
    loop {
        assert!(start.elapsed() < Duration::from_secs(30), "no text from demo-slow");
        let has_text = !printed.lock().unwrap().is_empty();
        if has_text && first_text.is_none() {
            first_text = Some(Instant::now());
        }
        // Text on screen for 0.6 s: the first delta was saved at once (later checkpoints come
        // once a second).
        if first_text.is_some_and(|t| t.elapsed() >= Duration::from_millis(600)) {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "demo-slow finished before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    let bytes = printed.lock().unwrap().clone();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn kill_9_mid_stream_keeps_the_partial_reply_and_continue_adds_a_turn() {
    let home = tempfile::tempdir().unwrap();
    let printed = killed_mid_stream(home.path());

    let list = list_json(home.path());
    assert_eq!(list.len(), 1, "{list:?}");
    let id = list[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(list[0]["title"], "tell me a story");
    assert_eq!(list[0]["model"], "demo-slow");
    assert_eq!(list[0]["messages"], 2);
    assert!(list[0]["updated_at"].as_str().unwrap().ends_with('Z'));

    let conv = export_json(home.path(), &id);
    let msgs = conv["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["role"], "user");
    assert_eq!(msgs[0]["choices"][0]["content"], "tell me a story");
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["status"], "interrupted");
    let partial = msgs[1]["choices"][0]["content"].as_str().unwrap();
    assert!(!partial.is_empty(), "nothing of the reply was saved; printed {printed:?}");
    assert!(printed.starts_with(partial), "saved {partial:?} is not a prefix of printed {printed:?}");

    // The next prompt continues that conversation. The interrupted turn stays in the store but
    // is left out of the request, as the chat screen leaves it out (issue 40: one rule for
    // failed turns), and stderr says so.
    let out = palaver(home.path(), &["--demo", "-m", "demo", "--continue", "-p", "again"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(stdout(&out).contains("Turn 1"), "the interrupted turn was re-sent: {}", stdout(&out));
    assert!(err.contains("1 earlier turn that failed is left out"), "{err}");
    let list = list_json(home.path());
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["messages"], 4);
    let conv = export_json(home.path(), &id);
    let msgs = conv["messages"].as_array().unwrap();
    let users: Vec<&str> =
        msgs.iter().filter(|m| m["role"] == "user").map(|m| m["choices"][0]["content"].as_str().unwrap()).collect();
    assert_eq!(users, ["tell me a story", "again"]);
    assert_eq!(msgs[1]["status"], "interrupted", "the old partial reply stays as it was");
    assert_eq!(msgs[3]["status"], "complete");
    assert_eq!(msgs[3]["model"], "demo");

    // --resume by a unique prefix works too.
    let prefix = &id[..id.len() - 2];
    let out = palaver(home.path(), &["--demo", "-m", "demo", "--resume", prefix, "-p", "third"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout(&out).contains("Turn 2"), "two complete turns, the interrupted one left out: {}", stdout(&out));
}

#[test]
fn history_commands_show_export_and_remove() {
    let home = tempfile::tempdir().unwrap();
    assert!(list_json(home.path()).is_empty(), "no store yet: an empty list");
    let out = palaver(home.path(), &["--demo", "-m", "demo-tools", "-p", "What files are here?\nsecond line"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = palaver(home.path(), &["--demo", "-p", "hello"]);
    assert!(out.status.success());

    let plain = stdout(&palaver(home.path(), &["history", "list"]));
    let lines: Vec<&str> = plain.lines().collect();
    assert_eq!(lines.len(), 2, "{plain}");
    assert!(lines[0].ends_with("hello"), "newest first: {plain}");
    assert!(lines[1].contains("demo-tools") && lines[1].ends_with("What files are here?"), "{plain}");
    let tools_id = lines[1].split_whitespace().next().unwrap().to_owned();

    let show = stdout(&palaver(home.path(), &["history", "show", &tools_id]));
    assert!(show.contains("What files are here?") && show.contains("list_directory"), "{show}");

    let md = stdout(&palaver(home.path(), &["history", "export", &tools_id]));
    assert!(md.starts_with("# What files are here?"), "{md}");
    assert!(md.contains("**Tool call** `list_directory`") && md.contains("```json"), "{md}");
    assert!(md.contains("Output:") && md.contains("prompt "), "usage per message: {md}");

    let conv = export_json(home.path(), &tools_id);
    assert_eq!(conv["format"], "palaver.conversation");
    let msgs = conv["messages"].as_array().unwrap();
    assert!(msgs.iter().any(|m| m["role"] == "tool"), "tool results are stored");
    let calls = msgs[1]["choices"][0]["tool_calls"].as_array().unwrap();
    assert!(calls.iter().all(|c| c["output"].is_string() && c["status"] == "done"), "{calls:?}");

    let out = palaver(home.path(), &["history", "rm", &tools_id]);
    assert!(out.status.success());
    assert!(stdout(&out).contains(&tools_id) && stdout(&out).contains("messages"), "{}", stdout(&out));
    assert_eq!(list_json(home.path()).len(), 1);
    for args in [&["history", "rm", &tools_id][..], &["history", "show", "nope"], &["history", "export", "nope"]] {
        let out = palaver(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("no conversation"), "{args:?}");
    }
}

#[test]
fn resume_of_an_unknown_id_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    let out = palaver(home.path(), &["--demo", "--resume", "20000101-000000-dead", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no conversation with ID 20000101-000000-dead"));
    assert!(out.stdout.is_empty(), "nothing was sent");
}

#[test]
fn a_store_that_cannot_open_is_one_notice_and_the_answer_still_comes() {
    let home = tempfile::tempdir().unwrap();
    // A directory where the database file should be: SQLite cannot open it.
    std::fs::create_dir(home.path().join("palaver.sqlite3")).unwrap();
    let out = palaver(home.path(), &["--demo", "-p", "hi"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("will not be saved").count(), 1, "{err}");
    let out = palaver(home.path(), &["--demo", "--continue", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(2), "a reopen needs the store");
}
