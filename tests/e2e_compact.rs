//! Issue 26, items 3 (context) and 4 (compaction), end to end with the real binary: `/compact`
//! on a 30-turn demo conversation sends one summary in place of the turns (what a scripted
//! server on 127.0.0.1 received), `--continue` goes on from the summary with the originals
//! still in `history export`, `--continue --compact` does the same headless, and the chat
//! screen's context meter fills as turns are added.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod scripted;

use common::tmux::{Tmux, tmux_available};
use scripted::{Reply, Server};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const SUMMARY: &str = "SUMMARY-OF-THIRTY: the user asked thirty numbered questions";

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

fn home(config: &str) -> tempfile::TempDir {
    let h = tempfile::tempdir().unwrap();
    std::fs::write(h.path().join("config.toml"), config).unwrap();
    h
}

/// A chat stream answering `text` with usage.
fn reply(text: &str, prompt: u64, completion: u64) -> Reply {
    Reply::sse(&format!(
        "data: {{\"id\":\"c\",\"model\":\"demo\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n\
         data: {{\"id\":\"c\",\"model\":\"demo\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n\
         data: {{\"id\":\"c\",\"model\":\"demo\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt},\"completion_tokens\":{completion},\"total_tokens\":{}}}}}\n\n\
         data: [DONE]\n\n",
        prompt + completion
    ))
}

/// A server that summarises when asked to and answers "fine" otherwise.
fn summarising_server() -> Server {
    Server::start_fn(|seen| {
        if seen.body.contains("Summarise the conversation so far") {
            reply(SUMMARY, 9_000, 12)
        } else {
            reply("fine", 300, 2)
        }
    })
}

/// The messages of every chat request the server received.
fn sent(s: &Server) -> Vec<Vec<Value>> {
    s.requests()
        .iter()
        .filter(|r| r.request_line.contains("/chat/completions"))
        .map(|r| {
            let v: Value = serde_json::from_str(&r.body).unwrap();
            v["messages"].as_array().cloned().unwrap_or_default()
        })
        .collect()
}

fn contents(msgs: &[Value]) -> Vec<String> {
    msgs.iter().map(|m| m["content"].as_str().unwrap_or("").to_owned()).collect()
}

/// A conversation of 30 turns with the embedded demo (not streamed: it answers at once).
fn thirty_demo_turns(home: &Path) {
    for i in 1..=30 {
        let prompt = format!("question {i}");
        let mut args = vec!["--demo", "--no-stream", "-p", &prompt];
        if i > 1 {
            args.insert(0, "--continue");
        }
        let o = palaver(home, &args);
        assert!(o.status.success(), "turn {i}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

fn result_of(o: &Output) -> Value {
    let s = String::from_utf8_lossy(&o.stdout);
    let last = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let v: Value = serde_json::from_str(last).unwrap_or(Value::Null);
    assert_eq!(v["type"], "result", "no result line: {s}\nstderr: {}", String::from_utf8_lossy(&o.stderr));
    v
}

#[test]
fn compact_on_the_chat_screen_sends_one_summary_and_keeps_the_originals() {
    if !tmux_available() {
        eprintln!("tmux not available; skipping");
        return;
    }
    let h = home("[models.\"demo\"]\ncontext_window = 100000\n");
    thirty_demo_turns(h.path());
    let s = summarising_server();
    let t = Tmux::launch(&format!("--continue --base-url {} -m demo", s.base_url))
        .home(h.path())
        .keys_one_at_a_time()
        .start();
    // The last demo answer fills the screen; the meter counts its request (6,421 tokens).
    t.wait_for("the reopened conversation", |s| s.contains("60 messages") && s.contains("ctx 6%"));
    t.send("/compact keep the question numbers");
    let screen = t.wait_for("the compaction card", |s| s.contains("30 turns summarised"));
    assert!(!screen.contains("A quick tour"), "the originals are folded behind the card:\n{screen}");
    assert!(screen.contains("ctx 0%"), "the summary stands for them in the meter:\n{screen}");
    // The summary request: the 30 turns, then the prompt with the user's words.
    let first = &sent(&s)[0];
    assert_eq!(first.len(), 61, "{:?}", contents(first));
    let asked = &contents(first)[60];
    assert!(asked.contains("Summarise the conversation so far") && asked.contains("keep the question numbers"));

    t.send("what now?");
    t.wait_for("the answer after the summary", |s| s.contains("fine"));
    let next = &sent(&s)[1];
    let texts = contents(next);
    assert_eq!(texts.len(), 2, "one summary, then the prompt: {texts:?}");
    assert!(texts[0].contains(SUMMARY) && next[0]["role"] == "user", "{texts:?}");
    assert_eq!(texts[1], "what now?");
    assert!(!serde_json::to_string(next).unwrap().contains("question 7"), "no original turn is sent");
    t.quit();

    // --continue goes on from the summary; every original is still in the history.
    let o = palaver(h.path(), &["--continue", "--base-url", &s.base_url, "-p", "and then?", "--json"]);
    let r = result_of(&o);
    assert_eq!(r["text"], "fine");
    assert_eq!(r["context"]["window"], 100_000);
    assert!(r["context"]["used"].as_u64().is_some_and(|u| u > 300), "{}", r["context"]);
    let texts = contents(&sent(&s)[2]);
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert!(texts[0].contains(SUMMARY));
    let id = r["conversation_id"].as_str().unwrap();
    let export = palaver(h.path(), &["history", "export", id, "--format", "json"]);
    let export = String::from_utf8_lossy(&export.stdout);
    for i in [1, 7, 30] {
        assert!(export.contains(&format!("\"question {i}\"")), "question {i} is kept");
    }
    assert!(export.contains(SUMMARY) && export.contains("\"compaction\""), "the summary is kept, marked");
}

#[test]
fn continue_compact_summarises_first_then_runs_the_prompt() {
    let h = home("[models.\"demo\"]\ncontext_window = 100000\n");
    thirty_demo_turns(h.path());
    let s = summarising_server();
    let args = ["--continue", "--compact", "--base-url", &s.base_url, "-p", "go on", "--json"];
    let o = palaver(h.path(), &args);
    let r = result_of(&o);
    assert_eq!(r["text"], "fine");
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out.lines().find(|l| l.contains("\"type\":\"compaction\"")).expect("a compaction line");
    let c: Value = serde_json::from_str(line).unwrap();
    assert_eq!(c["turns"], 30);
    assert_eq!(c["tokens_after"], 12);
    let all = sent(&s);
    assert_eq!(all.len(), 2, "the summary, then the prompt");
    assert_eq!(all[0].len(), 61);
    assert_eq!(contents(&all[1]).len(), 2);
    assert_eq!(contents(&all[1])[1], "go on");
    // Each compare column's result line has its own: the window known for one model only.
    let o = palaver(
        h.path(),
        &["--demo", "compare", "-m", "demo", "-m", "demo-reasoning", "-p", "hi", "--json", "--no-stream"],
    );
    let lines: Vec<Value> =
        String::from_utf8_lossy(&o.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let columns: Vec<&Value> = lines.iter().filter(|l| l["type"] == "result").collect();
    assert_eq!(columns.len(), 2);
    assert_eq!(columns[0]["context"]["window"], 100_000);
    assert!(columns[0]["context"]["used"].as_u64().is_some_and(|u| u > 0));
    assert_eq!(columns[1]["context"], Value::Null);
    // A request over the window: a warning on stderr, and it still goes.
    let tiny = home("[models.\"demo\"]\ncontext_window = 10\n");
    let o = palaver(tiny.path(), &["--demo", "--no-stream", "-p", &"many words ".repeat(20), "--json"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("over the model's 10 token window: sending it anyway"), "{stderr}");
    let r = result_of(&o);
    assert_eq!(r["finish_reason"], "stop");
    assert!(r["context"]["used"].as_u64().is_some_and(|u| u > 10));
    // Without a window the result line says so with null.
    let h2 = home("");
    let o = palaver(h2.path(), &["--demo", "--no-stream", "-p", "hi", "--json"]);
    assert_eq!(result_of(&o)["context"], Value::Null);
}

#[test]
fn the_context_meter_fills_turn_by_turn() {
    if !tmux_available() {
        eprintln!("tmux not available; skipping");
        return;
    }
    let h = home("auto_compact = false\n[models.\"demo\"]\ncontext_window = 3000\n");
    let t = Tmux::launch("--demo").home(h.path()).keys_one_at_a_time().start();
    t.wait_ready();
    let pct = |screen: &str| -> u64 {
        let at = screen.find("ctx ").expect("the meter is on screen");
        screen[at + 4..].split('%').next().unwrap().trim().parse().unwrap()
    };
    let empty = pct(&t.screen());
    let mut last = empty;
    for turn in 1..=3 {
        t.send(&format!("turn {turn}"));
        let screen = t.wait_for("the reply", |s| s.contains(&format!("Turn {turn} ·")) && s.contains("✓ done"));
        let now = pct(&screen);
        assert!(now > last, "turn {turn}: {now}% after {last}%\n{screen}");
        last = now;
    }
    t.quit();
}

#[test]
fn continue_compact_on_the_chat_screen_compacts_once_it_is_open() {
    if !tmux_available() {
        eprintln!("tmux not available; skipping");
        return;
    }
    let h = home("");
    for (i, p) in ["one", "two", "three"].iter().enumerate() {
        let mut args = vec!["--demo", "--no-stream", "-p", p];
        if i > 0 {
            args.insert(0, "--continue");
        }
        assert!(palaver(h.path(), &args).status.success());
    }
    let t = Tmux::launch("--continue --compact --demo").home(h.path()).keys_one_at_a_time().start();
    // The demo's summary is its long scripted answer: the card's title scrolls above it.
    let screen = t.wait_for("the card", |s| s.contains("the originals are kept, folded above") && s.contains("✓ done"));
    assert!(!screen.contains("reopened “one”"), "what came before is folded:\n{screen}");
    t.quit();
    let list = palaver(h.path(), &["history", "list"]);
    let id = String::from_utf8_lossy(&list.stdout).split_whitespace().next().unwrap().to_owned();
    let export = palaver(h.path(), &["history", "export", &id]);
    assert!(String::from_utf8_lossy(&export.stdout).contains("summary of the 3 turns above (compacted)"));
}

#[test]
fn a_signal_during_continue_compact_exits_130_saying_so() {
    let h = home("");
    for i in 1..=2 {
        let prompt = format!("question {i}");
        let mut args = vec!["--demo", "--no-stream", "-p", &prompt];
        if i > 1 {
            args.insert(0, "--continue");
        }
        assert!(palaver(h.path(), &args).status.success());
    }
    // The summary never comes: the signal arrives while palaver waits for it.
    let s = Server::start_fn(|_| reply(SUMMARY, 10, 2).pause_first(std::time::Duration::from_secs(60)));
    for (signal, name) in [
        (rustix::process::Signal::TERM, "SIGTERM"),
        (rustix::process::Signal::HUP, "SIGHUP"),
        (rustix::process::Signal::INT, "Ctrl+C"),
    ] {
        let before = s.requests().len();
        let child = Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(["--continue", "--compact", "--base-url", &s.base_url, "-p", "go on"])
            .env("PALAVER_HOME", h.path())
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while s.requests().len() == before {
            assert!(start.elapsed() < std::time::Duration::from_secs(20), "no summary request");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
        let out = child.wait_with_output().unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{name}: {e}");
        assert!(e.contains(&format!("interrupted by {name} while summarising the earlier turns")), "{name}: {e}");
        assert!(!e.contains("the summary of the earlier turns failed"), "{e}");
    }
    assert!(s.requests().iter().all(|r| r.body.contains("Summarise the conversation so far")), "the prompt never went");
}
