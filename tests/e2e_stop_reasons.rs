//! End to end: what stopped a reply is always said. The real binary headless against the demo
//! and a scripted server on 127.0.0.1: a reply cut by the token limit exits 0 with a notice, one
//! stopped by the content filter exits 4 (DESIGN.md §2), `turn.stop` says which, `compare -p`
//! applies the same rule, `--json` writes a safety event only when the results change; and on a
//! real terminal (tmux) the rendered footer marks the stop and reasoning is labelled apart from
//! the answer, while piped output stays the raw text.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod scripted;

use common::tmux::{Tmux, tmux_available};
use scripted::{Reply, Server};
use serde_json::Value;
use std::process::{Command, Output};

fn palaver(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home.path())
        .env("OPENAI_API_KEY", "sk-test")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn at(server: &Server, api: &str, extra: &[&str]) -> Output {
    let mut args = vec!["--base-url", &server.base_url, "--api", api, "-m", "m", "-p", "hello", "--tools", "none"];
    args.extend_from_slice(extra);
    palaver(&args)
}

fn result_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let v: Value = serde_json::from_str(last).unwrap_or(Value::Null);
    assert_eq!(v["type"], "result", "no result line: {stdout}\nstderr: {}", err(out));
    v
}

fn err(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn chunk(content: &str, finish: Option<&str>, filter: Option<&str>) -> String {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    let filter = filter.map(|f| format!(",\"content_filter_results\":{f}")).unwrap_or_default();
    format!(
        "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{content}\"}},\"finish_reason\":{finish}{filter}}}]}}\n\n"
    )
}

fn cut_by_length() -> String {
    format!("{}{}data: [DONE]\n\n", chunk("The answer is", None, None), chunk("", Some("length"), None))
}

const CUT: &str = "cut by the token limit (finish_reason: length); raise --max-tokens";
const FILTERED: &str = "the provider's content filter stopped the reply";

#[test]
fn a_reply_cut_by_the_token_limit_exits_0_and_says_so() {
    // Raw (piped): the answer's bytes as sent, the notice on stderr.
    let s = Server::start(vec![Reply::sse(&cut_by_length())]);
    let out = at(&s, "chat", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "The answer is\n");
    assert!(err(&out).contains(&format!("palaver: the reply was {CUT}")), "{}", err(&out));
    // --json: the stop kind and the notice in the result line.
    let s = Server::start(vec![Reply::sse(&cut_by_length())]);
    let out = at(&s, "chat", &["--json"]);
    assert_eq!(out.status.code(), Some(0));
    let r = result_of(&out);
    assert_eq!((r["finish_reason"].as_str(), r["turn"]["stop"].as_str()), (Some("length"), Some("length")));
    assert!(r["notice"].as_str().unwrap_or_default().contains(CUT), "{r}");
    // Rendered (`--render always`): the footer marks it too.
    let s = Server::start(vec![Reply::sse(&cut_by_length())]);
    let out = at(&s, "chat", &["--render", "always"]);
    let e = err(&out);
    let footer = e.lines().find(|l| l.starts_with("─ m · ")).unwrap_or_default();
    assert!(footer.ends_with(" · ⚠ cut by the token limit"), "{e}");
    assert!(!e.contains('\x1b'), "stderr is not a terminal: no escapes: {e:?}");
}

#[test]
fn a_reply_stopped_by_the_content_filter_exits_4_and_says_so() {
    // The demo: a jailbreak prompt and a reply stopped for violence.
    let out = palaver(&["--demo", "-m", "demo-safety", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(4), "{}", err(&out));
    assert!(err(&out).contains(&format!("palaver: {FILTERED} (violence: high)")), "{}", err(&out));
    let out = palaver(&["--demo", "-m", "demo-safety", "-p", "hi", "--json"]);
    assert_eq!(out.status.code(), Some(4));
    let r = result_of(&out);
    assert_eq!(r["finish_reason"], "content_filter");
    assert_eq!(r["turn"]["stop"], "content_filter", "not \"answer\"");
    assert_eq!(r["notice"], format!("{FILTERED} (violence: high)"));
    assert_eq!(r["content_filter"]["violence"]["filtered"], true, "the merged results as before");
    // The Responses API: `incomplete` for the content filter is the same stop.
    let out = palaver(&["--demo", "-m", "demo-safety", "--api", "responses", "-p", "hi", "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", err(&out));
    assert_eq!(result_of(&out)["finish_reason"], "content_filter");
    // A scripted server; and a plain answer is still 0 with nothing said.
    let body = format!("{}{}data: [DONE]\n\n", chunk("Once", None, None), chunk("", Some("content_filter"), None));
    let s = Server::start(vec![Reply::sse(&body)]);
    let out = at(&s, "chat", &[]);
    assert_eq!(out.status.code(), Some(4));
    assert!(err(&out).contains(&format!("palaver: {FILTERED}\n")), "{}", err(&out));
    let ok = format!("{}{}data: [DONE]\n\n", chunk("Hi", None, None), chunk("", Some("stop"), None));
    let s = Server::start(vec![Reply::sse(&ok)]);
    let out = at(&s, "chat", &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(err(&out), "", "a plain answer says nothing on stderr");
}

#[test]
fn compare_says_it_per_column_and_exits_4_when_one_was_filtered() {
    let out = palaver(&["--demo", "compare", "-m", "demo", "-m", "demo-safety", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(4), "{}", err(&out));
    let e = err(&out);
    assert!(e.contains(&format!("palaver: demo-safety: {FILTERED}")), "{e}");
    assert!(!e.contains("palaver: demo: "), "the column that answered says nothing: {e}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("[stopped by the content filter]"));
    let out = palaver(&["--demo", "compare", "-m", "demo", "-m", "demo-safety", "-p", "hi", "--json"]);
    assert_eq!(out.status.code(), Some(4));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let safety = lines.iter().find(|l| l["model"] == "demo-safety" && l["type"] == "result").unwrap();
    assert!(safety["notice"].as_str().unwrap_or_default().starts_with(FILTERED), "{safety}");
    // Two plain answers: 0.
    let out = palaver(&["--demo", "compare", "-m", "demo", "-m", "demo-reasoning", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
}

#[test]
fn replay_of_a_filtered_reply_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("filtered.sse");
    let body = format!("{}{}data: [DONE]\n\n", chunk("Once", None, None), chunk("", Some("content_filter"), None));
    std::fs::write(&file, body).unwrap();
    let out = palaver(&["replay", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", err(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Once\n");
    assert!(err(&out).contains(FILTERED));
}

/// Providers repeat the same filter results on every chunk: `--json` writes one safety event
/// per change (back to an earlier value is a change), the result line merges them all.
#[test]
fn json_writes_a_safety_event_only_when_the_results_change() {
    let safe = r#"{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}"#;
    let low = r#"{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"low"}}"#;
    let mut body = String::new();
    for (i, f) in [safe, safe, safe, low, low, safe, safe].iter().enumerate() {
        body.push_str(&chunk(&format!("w{i} "), None, Some(f)));
    }
    body.push_str(&chunk("", Some("stop"), Some(safe)));
    body.push_str("data: [DONE]\n\n");
    let s = Server::start(vec![Reply::sse(&body)]);
    let out = at(&s, "chat", &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "content_filter")
        .collect();
    let severities: Vec<&str> = events.iter().map(|e| e["results"]["violence"]["severity"].as_str().unwrap()).collect();
    assert_eq!(severities, ["safe", "low", "safe"], "{stdout}");
    let r = result_of(&out);
    assert_eq!(r["content_filter"]["violence"]["severity"], "low", "the highest seen, merged");
    assert_eq!(stdout.lines().filter(|l| l.contains("\"type\":\"text\"")).count(), 7);
}

/// On a terminal: the footer marks what stopped the reply; reasoning is labelled and styled
/// apart from the answer. Piped, the same run writes the raw text with no label.
#[test]
fn on_a_terminal_the_footer_marks_the_stop_and_reasoning_is_labelled() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("--demo -m demo-safety -p hi");
    let screen = t.wait_for("the exit status", |s| s.contains("EXITED-"));
    assert!(screen.contains("EXITED-4"), "{screen}");
    let footer = screen.lines().find(|l| l.starts_with("─ demo-safety · ")).unwrap_or_default();
    assert!(footer.contains(" · ⚠ stopped by the content filter"), "{screen}");
    assert!(screen.contains(&format!("palaver: {FILTERED} (violence: high)")), "{screen}");

    let t = Tmux::start("--demo -m demo-reasoning -p hi");
    let screen = t.wait_for("the exit status", |s| s.contains("EXITED-"));
    assert!(screen.contains("EXITED-0"), "{screen}");
    let lines: Vec<&str> = screen.lines().collect();
    let label = lines.iter().position(|l| *l == "─ reasoning").expect("a reasoning label");
    assert!(lines[label + 1].starts_with("The user is on turn 1"), "{screen}");
    let answer = lines.iter().position(|l| l.starts_with("I thought it over first")).unwrap_or_default();
    assert!(answer > label + 2, "{screen}");
    // The label and the reasoning are dimmed (SGR 2), the answer is not.
    let styled = t.tmux(&["capture-pane", "-p", "-e", "-t", "main"]);
    let styled = String::from_utf8_lossy(&styled.stdout);
    let dim = |needle: &str| {
        let line = styled.lines().find(|l| l.contains(needle)).unwrap_or_default();
        let params = line.strip_prefix("\x1b[").and_then(|l| l.split_once('m')).map_or("", |(p, _)| p);
        params.split(';').any(|p| p == "2")
    };
    assert!(dim("─ reasoning") && dim("The user is on turn 1"), "{styled:?}");
    assert!(!dim("I thought it over first"), "{styled:?}");

    // Piped: the reasoning is the raw text on stderr, no label; stdout the raw answer.
    let out = palaver(&["--demo", "-m", "demo-reasoning", "-p", "hi"]);
    assert!(err(&out).starts_with("The user is on turn 1"), "{}", err(&out));
    assert!(!err(&out).contains("─ reasoning") && !err(&out).contains('\x1b'));
}
