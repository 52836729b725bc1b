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

/// The window the small-window server enforces, by its own count.
const WINDOW: u64 = 1_000;
/// The longest reply it writes: a request that asks for more (or for no limit) is cut there.
const LONGEST: u64 = 120;

/// The small-window server's own token count of a chat request: a token for every three bytes
/// of text and four per message, as a small model's tokenizer might (palaver's estimate must
/// not fall below it on the texts the tests send).
fn server_count(body: &Value) -> u64 {
    body["messages"]
        .as_array()
        .map(|ms| ms.iter().map(|m| m["content"].as_str().unwrap_or("").len() as u64 / 3 + 4).sum())
        .unwrap_or(0)
}

/// A chat stream answering `text`, ending with `reason`.
fn reply_as(text: &str, reason: &str, prompt: u64, completion: u64) -> Reply {
    Reply::sse(&format!(
        "data: {{\"id\":\"c\",\"model\":\"small\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n\
         data: {{\"id\":\"c\",\"model\":\"small\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{reason}\"}}]}}\n\n\
         data: {{\"id\":\"c\",\"model\":\"small\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt},\"completion_tokens\":{completion},\"total_tokens\":{}}}}}\n\n\
         data: [DONE]\n\n",
        prompt + completion
    ))
}

/// A server with a small window, as llama.cpp enforces one: HTTP 400 when the prompt and the
/// reply it may write are over [`WINDOW`] by its own count, a reply cut (`length`) when asked
/// for more than [`LONGEST`] tokens; it summarises when asked to and answers "fine" otherwise.
fn small_window_server() -> Server {
    Server::start_fn(|seen| {
        let body: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
        let prompt = server_count(&body);
        let asked = body["max_tokens"].as_u64();
        if prompt + asked.unwrap_or(0).min(LONGEST) > WINDOW {
            return Reply::json(
                400,
                &format!(
                    r#"{{"error":{{"code":400,"message":"request ({prompt} tokens) exceeds the available context size ({WINDOW} tokens), try increasing it","type":"exceed_context_size_error"}}}}"#
                ),
            );
        }
        let cut = asked.is_none_or(|n| n > LONGEST);
        let (reason, completion) = if cut { ("length", LONGEST) } else { ("stop", asked.unwrap_or(LONGEST).min(5)) };
        if seen.body.contains("Summarise the conversation so far") {
            reply_as(SUMMARY, reason, prompt, completion)
        } else {
            reply_as("fine", "stop", prompt, 2)
        }
    })
}

/// Every chat request's body, and whether it fit the window by the server's count.
fn bodies(s: &Server) -> Vec<(Value, bool)> {
    s.requests()
        .iter()
        .filter(|r| r.request_line.contains("/chat/completions"))
        .map(|r| {
            let v: Value = serde_json::from_str(&r.body).unwrap();
            let fits = server_count(&v) + v["max_tokens"].as_u64().unwrap_or(0).min(LONGEST) <= WINDOW;
            (v, fits)
        })
        .collect()
}

/// A paragraph of `lines` numbered lines, numbers and words as a paste has them.
fn paste(tag: &str, lines: usize) -> String {
    (0..lines).map(|i| format!("{tag} line {i}: value={}, status=ok\n", i * 7919 % 100_000)).collect()
}

fn small_home(extra: &str, url: &str) -> tempfile::TempDir {
    home(&format!(
        "{extra}default_provider = \"small\"\n[providers.small]\nbase_url = \"{url}\"\ndefault_model = \"small\"\n\
         [models.\"small\"]\ncontext_window = {WINDOW}\n"
    ))
}

#[test]
fn headless_continue_leaves_a_failed_turn_out_and_compacts_into_a_small_window() {
    let s = small_window_server();
    let h = small_home("", &s.base_url);
    let run = |args: &[&str]| palaver(h.path(), args);
    let first = paste("first", 20);
    assert!(run(&["-p", &first]).status.success());
    // A prompt over the window: refused, with the flags that help headless.
    let huge = paste("huge", 120);
    let o = run(&["--continue", "-p", &huge]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("(--continue --compact)") && !e.contains("(/compact)"), "{e}");
    assert!(e.contains("the prompt alone is over it"), "compacting would not help: {e}");
    // The next run leaves it out, and says so in one line.
    let o = run(&["--continue", "-p", "hi"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    assert_eq!(e.matches("1 earlier turn that failed is left out of this request").count(), 1, "{e}");
    assert!(!bodies(&s).last().unwrap().0.to_string().contains("huge line"), "the failed prompt is not re-sent");
    for tag in ["second", "third"] {
        let o = run(&["--continue", "-p", &paste(tag, 12)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // The whole conversation and a summary's budget are over the window: the summary request is
    // fitted, asks for its own budget (not the turn's 40), comes back cut and is kept.
    let before = bodies(&s).len();
    let o = run(&["--continue", "--compact", "--max-tokens", "40", "-p", "go on", "--json"]);
    let e = String::from_utf8_lossy(&o.stderr);
    let r = result_of(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert_eq!(r["text"], "fine");
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out.lines().find(|l| l.contains("\"type\":\"compaction\"")).expect("a compaction line");
    let c: Value = serde_json::from_str(line).unwrap();
    assert_eq!(c["cut"], true, "{c}");
    assert!(e.contains("to fit the summary request into the model's window"), "{e}");
    let new = &bodies(&s)[before..];
    assert_eq!(new.len(), 2, "the summary, then the prompt");
    let (summary_req, fits) = &new[0];
    assert!(*fits, "the summary request fits: {} tokens", server_count(summary_req));
    assert_eq!(summary_req["max_tokens"], WINDOW / 4, "the summary's own budget");
    assert_eq!(new[1].0["max_tokens"], 40, "the prompt keeps the turn's");
    assert!(new[1].0["messages"][0]["content"].as_str().is_some_and(|t| t.contains(SUMMARY)));
    // And the conversation goes on from the summary.
    let o = run(&["--continue", "-p", "and then?", "--json"]);
    assert_eq!(result_of(&o)["text"], "fine");
    assert!(bodies(&s).last().unwrap().1, "it fits");
}

#[test]
fn the_chat_screen_compacts_into_a_small_window_by_itself_and_by_slash_compact() {
    if !tmux_available() {
        eprintln!("tmux not available; skipping");
        return;
    }
    let s = small_window_server();
    let h = small_home("", &s.base_url);
    // Five turns, the last request at about 90 % of the window.
    for (i, tag) in ["one", "two", "three", "four", "five"].iter().enumerate() {
        let p = paste(tag, 15);
        let mut args = vec!["--max-tokens", "40", "-p", &p];
        if i > 0 {
            args.insert(0, "--continue");
        }
        let o = palaver(h.path(), &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let t = Tmux::launch("--continue --max-tokens 40").home(h.path()).keys_one_at_a_time().start();
    t.wait_for("the reopened conversation", |s| s.contains("ctx "));
    // Past auto_compact's share: the summary goes first, fitted and cut, then the prompt.
    let before = bodies(&s).len();
    t.send("what now?");
    let screen = t.wait_for("the answer after the summary", |s| s.contains("fine") && s.contains("✓ done"));
    assert!(screen.contains("cut at its token budget"), "{screen}");
    let new = &bodies(&s)[before..];
    assert_eq!(new.len(), 2, "the summary, then the prompt");
    assert!(new.iter().all(|(_, fits)| *fits), "every request fits the window");
    assert!(new[0].0.to_string().contains("Summarise the conversation so far"));
    assert_eq!(new[0].0["max_tokens"], WINDOW / 4);
    // `/compact` by hand, on what came since: it fits too, and the conversation goes on.
    let before = bodies(&s).len();
    t.send("/compact");
    t.wait_for("the second summary", |s| s.contains("◆ compact: 1 turn summarised") && s.contains("… cut off"));
    t.send("and then?");
    t.wait_for("the answer", |s| s.contains("✓ done"));
    let new = &bodies(&s)[before..];
    assert_eq!(new.len(), 2, "{:?}", new.iter().map(|(b, _)| b.to_string()).collect::<Vec<_>>());
    assert!(new.iter().all(|(_, fits)| *fits), "every request fits the window");
    t.quit();
}
