//! Multi-turn prompt-set lines with recorded tool outputs, end to end through the binary: a
//! two-turn case whose tool checks pass on the demo model that calls tools and fail, naming the
//! turn, on the demo model that answers without them; a call with no recording fails its turn,
//! naming the call, and ends the conversation; a scripted server shows turn 2's request
//! carrying turn 1's history (the call and its recorded output) and that nothing ran for real.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

mod scripted;

use common::cli::{err, lines, run};
use scripted::{Reply, Server};
use serde_json::{Value, json};

/// A cell's JSON line by prompt id and model.
fn cell<'a>(ls: &'a [Value], id: &str, model: &str) -> &'a Value {
    ls.iter().find(|l| l["type"] == "cell" && l["prompt_id"] == id && l["model"] == model).unwrap()
}

fn failed_details(c: &Value) -> Vec<String> {
    c["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["pass"] != true)
        .map(|r| r["detail"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// demo-tools calls `list_directory {"path":"."}` and `read_file {"path":"Cargo.toml"}` when
/// they are offered, then answers with each output's first line; `demo` never calls a tool.
#[test]
fn a_recorded_two_turn_case_passes_on_the_tool_caller_and_fails_on_the_one_that_skips() {
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("turns.jsonl");
    let outputs = json!([
        {"name": "read_file", "arguments": {"path": "Cargo.toml"}, "output": "name = \"recorded-crate\"\nversion = \"9.9.9\""},
        {"name": "list_directory", "arguments": {"path": "."}, "output": "RECORDED-LISTING\nsrc/"}
    ]);
    let project = json!({
        "id": "project",
        "tools": ["read_file", "list_directory"],
        "tool_outputs": outputs,
        "turns": [
            {"prompt": "What is this project called?", "expect": [
                {"trajectory": {"tools": ["list_directory", "read_file"], "order": "any_order"}},
                {"contains": "recorded-crate"}]},
            {"prompt": "And what is in its folder?", "expect": [{"tool_called": "list_directory"}, {"contains": "RECORDED-LISTING"}]}
        ]
    });
    // Only `read_file` is recorded: demo-tools' `list_directory` call has no answer.
    let gap = json!({
        "id": "gap",
        "tools": ["read_file", "list_directory"],
        "tool_outputs": [outputs[0].clone()],
        "turns": [{"prompt": "Look around"}, {"prompt": "Never sent", "expect": "zq-never-said"}]
    });
    std::fs::write(&set, format!("{project}\n{gap}\n")).unwrap();
    let html = home.path().join("r.html");
    let md = home.path().join("r.md");
    let args = [
        "compare",
        "--demo",
        "-m",
        "demo-tools",
        "-m",
        "demo",
        "--prompts",
        set.to_str().unwrap(),
        "--json",
        "--report",
        html.to_str().unwrap(),
        "--report",
        md.to_str().unwrap(),
    ];
    let out = run(home.path(), &args);
    assert_eq!(out.status.code(), Some(3), "checks failed: exit 3\n{}", err(&out));
    let ls = lines(&out);

    let good = cell(&ls, "project", "demo-tools");
    assert!(good["checks"].as_array().unwrap().iter().all(|r| r["pass"] == true), "{good}");
    let turns = good["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    assert!(turns[0]["text"].as_str().unwrap().contains("name = \"recorded-crate\""), "{}", turns[0]);
    assert!(turns[1]["text"].as_str().unwrap().contains("RECORDED-LISTING"), "{}", turns[1]);
    assert_eq!(good["text"], turns[1]["text"], "the cell's text is the last answer");
    // The recorded outputs answered the calls: the real Cargo.toml was never read.
    let calls = good["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 4, "two calls a turn: {calls:?}");
    assert!(calls.iter().all(|c| !c["output"].as_str().unwrap().contains("[package]")));
    assert_eq!((calls[0]["turn"].as_u64(), calls[3]["turn"].as_u64()), (Some(1), Some(2)));
    assert!(good["checks"].as_array().unwrap().iter().any(|r| r["turn"] == 2));

    let skipped = cell(&ls, "project", "demo");
    assert_eq!(skipped["ok"], true);
    let failed = failed_details(skipped);
    assert!(failed.iter().any(|d| d.starts_with("turn 1")), "{failed:?}");
    assert!(failed.iter().any(|d| d.starts_with("turn 2")), "{failed:?}");
    assert!(skipped["tool_calls"].as_array().unwrap().is_empty());

    let gap_cell = cell(&ls, "gap", "demo-tools");
    let failed = failed_details(gap_cell);
    assert_eq!(failed, [r#"turn 1: no recorded output for list_directory {"path":"."}"#], "{gap_cell}");
    assert_eq!(gap_cell["turns"].as_array().unwrap().len(), 1, "the conversation ended at turn 1");
    // The model was told, and nothing ran.
    let listing = gap_cell["tool_calls"].as_array().unwrap().iter().find(|c| c["name"] == "list_directory").unwrap();
    assert!(listing["output"].as_str().unwrap().contains("nothing ran"), "{listing}");

    let summary = ls.last().unwrap();
    let models = summary["models"].as_array().unwrap();
    let passed = |m: &str| models.iter().find(|x| x["model"] == m).unwrap()["passed"].as_u64();
    assert_eq!((passed("demo-tools"), passed("demo")), (Some(1), Some(0)));
    let report = std::fs::read_to_string(&html).unwrap();
    assert!(report.contains("turn 1: no recorded output for list_directory"), "{report}");
    let report = std::fs::read_to_string(&md).unwrap();
    assert!(report.contains("> ✗ tool_outputs: turn 1: no recorded output for list_directory"), "{report}");

    // `compare show` reads the turns back from the store.
    let run_id = summary["run"].as_str().unwrap();
    let shown = run(home.path(), &["compare", "show", run_id, "--json"]);
    let again = lines(&shown);
    assert_eq!(cell(&again, "project", "demo-tools")["turns"], good["turns"]);
}

fn sse_text(text: &str) -> String {
    let delta = json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let stop = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}});
    format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n")
}

fn sse_call(name: &str, args: &str) -> String {
    let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": args}}]}}]});
    let stop = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    format!("data: {call}\n\ndata: {stop}\n\ndata: [DONE]\n\n")
}

/// `walker` calls `get_weather` for the city in the user's first message and then answers
/// with what came back; `skipper` answers without calling.
fn weather_server() -> Server {
    Server::start_fn(|seen| {
        let body: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        let users = messages.iter().filter(|m| m["role"] == "user").count();
        let text = |s: &str| Reply::sse(&sse_text(s));
        match (body["model"].as_str(), last["role"].as_str(), users) {
            (Some("walker"), Some("tool"), _) => text(&format!("It says: {}", last["content"].as_str().unwrap_or(""))),
            (Some("walker"), _, 1) => Reply::sse(&sse_call("get_weather", r#"{"city": "Paris"}"#)),
            (Some("walker"), _, _) => Reply::sse(&sse_call("get_weather", r#"{"city": "Rome"}"#)),
            _ => text("Probably sunny."),
        }
    })
}

#[test]
fn turn_two_carries_turn_one_s_call_and_recorded_output() {
    let server = weather_server();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), format!("[providers.s]\nbase_url = \"{}\"\n", server.base_url))
        .unwrap();
    let line = json!({
        "id": "trip",
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
        "turns": [
            {"prompt": "Weather in Paris?", "expect": {"tool_called": {"name": "get_weather", "arguments": {"city": "Paris"}}},
             "tool_outputs": [{"name": "get_weather", "arguments": {"city": "Paris"}, "output": "sunny, 24 C (recorded)"}]},
            {"prompt": "And in Rome?", "expect": {"tool_called": "get_weather"}}
        ]
    });
    let set = home.path().join("trip.jsonl");
    std::fs::write(&set, format!("{line}\n")).unwrap();
    let out = run(
        home.path(),
        &["compare", "-m", "s/walker", "-m", "s/skipper", "--prompts", set.to_str().unwrap(), "--json"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", err(&out));
    let ls = lines(&out);

    let walker = cell(&ls, "trip", "walker");
    assert_eq!(walker["ok"], true, "{walker}");
    assert!(walker["turns"][0]["text"].as_str().unwrap().contains("sunny, 24 C (recorded)"), "{walker}");
    // Turn 2's Rome call has no recording (turn 1's own recordings are not turn 2's).
    assert_eq!(failed_details(walker), [r#"turn 2: no recorded output for get_weather {"city":"Rome"}"#]);
    let skipper = cell(&ls, "trip", "skipper");
    let failed = failed_details(skipper);
    assert!(failed.len() == 2 && failed[0].starts_with("turn 1") && failed[1].starts_with("turn 2"), "{failed:?}");

    let walker_bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(|s| serde_json::from_str::<Value>(&s.body).unwrap())
        .filter(|b| b["model"] == "walker")
        .collect();
    // Turn 1: the call, then its answer; turn 2: the call (no recording), then its answer.
    assert_eq!(walker_bodies.len(), 4, "{walker_bodies:?}");
    assert_eq!(walker_bodies[0]["tools"][0]["function"]["name"], "get_weather");
    let turn2 = walker_bodies[2]["messages"].as_array().unwrap();
    let roles: Vec<&str> = turn2.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user"], "{turn2:?}");
    assert_eq!(turn2[1]["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(turn2[2]["content"], "sunny, 24 C (recorded)");
    assert_eq!(turn2[4]["content"], "And in Rome?");
}

#[test]
fn malformed_turns_are_usage_errors_naming_the_line() {
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("bad.jsonl");
    for (text, says) in [
        (r#"{"prompt":"a","turns":[{"prompt":"b"}]}"#, "line 1: give either `prompt` or `turns`, not both"),
        (r#"{"turns":[]}"#, "line 1: `turns` is empty"),
        (r#"{"turns":[{"prompt":"a"},{"expect":"b"}]}"#, "line 1: turn 2: no `prompt`"),
        (r#"{"prompt":"a","tool_outputs":[{"name":"get_weather","output":"x"}]}"#, "define it in `tools`"),
    ] {
        std::fs::write(&set, format!("{text}\n")).unwrap();
        let out = run(home.path(), &["compare", "--demo", "-m", "demo", "--prompts", set.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(err(&out).contains(says), "{text}: {}", err(&out));
    }
    // A batch line is one request: a conversation cannot be one.
    std::fs::write(&set, "{\"turns\":[{\"prompt\":\"a\"},{\"prompt\":\"b\"}]}\n").unwrap();
    let out = run(home.path(), &["compare", "--demo", "-m", "demo", "--batch", "--prompts", set.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err(&out).contains("line 1: a multi-turn line (`turns`, `tool_outputs`) is not run on --batch runs"),
        "{}",
        err(&out)
    );
}
