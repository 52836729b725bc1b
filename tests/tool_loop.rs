//! The tool loop end to end against a scripted server on 127.0.0.1: the follow-up request must
//! carry the right tool results, for both APIs and for parallel calls; side-effecting tools are
//! refused headless unless `--yes`; `--tools none` ends the turn at the first call.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use scripted::{Reply, Server};
use serde_json::Value;
use std::process::{Command, Output};

fn run(server: &Server, api: &str, extra: &[&str], cwd: &std::path::Path) -> (Output, Value) {
    let home = tempfile::tempdir().unwrap();
    let mut args = vec!["--base-url", &server.base_url, "--api", api, "-m", "m", "-p", "go", "--json"];
    // Tools are offered only when turned on: these tests are about the loop, so turn them on
    // unless the test says otherwise.
    if !extra.contains(&"--tools") {
        args.extend_from_slice(&["--tools", "auto"]);
    }
    args.extend_from_slice(extra);
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(&args)
        .current_dir(cwd)
        .env("PALAVER_HOME", home.path())
        .env("OPENAI_API_KEY", "sk-x")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("null");
    let v: Value = serde_json::from_str(last).unwrap();
    (out, v)
}

fn chat_calls(calls: &[(&str, &str, &str)]) -> String {
    let mut s = String::new();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let first = serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}}]});
        let rest = serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"function":{"arguments":args}}]}}]});
        s.push_str(&format!("data: {first}\n\ndata: {rest}\n\n"));
    }
    s.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    s
}

const CHAT_TEXT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

fn responses_calls(calls: &[(&str, &str, &str)]) -> String {
    let mut s = String::new();
    let mut output = Vec::new();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let item = serde_json::json!({"id": format!("fc_{i}"), "type":"function_call","call_id":id,"name":name,"arguments":"","status":"in_progress"});
        let done = serde_json::json!({"id": format!("fc_{i}"), "type":"function_call","call_id":id,"name":name,"arguments":args,"status":"completed"});
        let ev = [
            serde_json::json!({"type":"response.output_item.added","output_index":i,"item":item}),
            serde_json::json!({"type":"response.function_call_arguments.delta","item_id":format!("fc_{i}"),"output_index":i,"delta":args}),
            serde_json::json!({"type":"response.function_call_arguments.done","item_id":format!("fc_{i}"),"output_index":i,"arguments":args}),
            serde_json::json!({"type":"response.output_item.done","output_index":i,"item":done}),
        ];
        for e in ev {
            s.push_str(&format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()));
        }
        output.push(done);
    }
    let fin = serde_json::json!({"type":"response.completed","response":{"id":"resp_1","status":"completed","output":output}});
    s.push_str(&format!("event: response.completed\ndata: {fin}\n\n"));
    s
}

const RESP_TEXT: &str = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"done\"}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n";

#[test]
fn chat_parallel_calls_are_answered_with_tool_messages() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
    let calls =
        [("call_1", "read_file", "{\"path\":\"a.txt\"}"), ("call_2", "list_directory", "{}"), ("call_3", "nope", "{}")];
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
    let (out, r) = run(&s, "chat", &[], dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(r["text"], "done");
    assert_eq!(r["tool_calls"].as_array().unwrap().len(), 3);
    assert_eq!(r["tool_calls"][0]["output"], "alpha");
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    let first: Value = serde_json::from_str(&reqs[0].body).unwrap();
    assert!(first["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "read_file"));
    let follow: Value = serde_json::from_str(&reqs[1].body).unwrap();
    let msgs = follow["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["tool_calls"].as_array().unwrap().len(), 3);
    assert_eq!(msgs[2], serde_json::json!({"role":"tool","tool_call_id":"call_1","content":"alpha"}));
    assert_eq!(msgs[3]["tool_call_id"], "call_2");
    assert!(msgs[3]["content"].as_str().unwrap().contains("a.txt"));
    assert_eq!(msgs[4]["tool_call_id"], "call_3");
    assert!(msgs[4]["content"].as_str().unwrap().contains("unknown tool"));
}

#[test]
fn responses_calls_are_answered_with_function_call_outputs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta").unwrap();
    let calls = [("call_a", "read_file", "{\"path\":\"b.txt\"}"), ("call_b", "read_file", "{\"path\":")];
    let s = Server::start(vec![Reply::sse(&responses_calls(&calls)), Reply::sse(RESP_TEXT)]);
    let (out, r) = run(&s, "responses", &[], dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(r["text"], "done");
    let follow: Value = serde_json::from_str(&s.requests()[1].body).unwrap();
    let input = follow["input"].as_array().unwrap();
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[1]["call_id"], "call_a");
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[3], serde_json::json!({"type":"function_call_output","call_id":"call_a","output":"beta"}));
    assert_eq!(input[4]["call_id"], "call_b");
    assert!(input[4]["output"].as_str().unwrap().contains("not valid JSON"));
    assert!(follow.get("previous_response_id").is_none());
}

#[test]
fn side_effects_are_refused_headless_unless_yes() {
    let dir = tempfile::tempdir().unwrap();
    let calls = [("c1", "write_file", "{\"path\":\"out.txt\",\"content\":\"x\"}")];
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
    let (_, r) = run(&s, "chat", &[], dir.path());
    assert_eq!(r["tool_calls"][0]["status"], "denied");
    assert!(!dir.path().join("out.txt").exists());
    let follow: Value = serde_json::from_str(&s.requests()[1].body).unwrap();
    assert!(follow["messages"][2]["content"].as_str().unwrap().contains("did not run"));

    let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
    let (_, r) = run(&s, "chat", &["--yes"], dir.path());
    assert_eq!(r["tool_calls"][0]["status"], "done");
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "x");
}

#[test]
fn tools_none_ends_the_turn_at_the_first_call() {
    let dir = tempfile::tempdir().unwrap();
    let calls = [("c1", "read_file", "{\"path\":\"x\"}")];
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls))]);
    let (out, r) = run(&s, "chat", &["--tools", "none"], dir.path());
    assert!(out.status.success());
    assert_eq!(r["finish_reason"], "tool_calls");
    assert_eq!(r["tool_calls"][0]["name"], "read_file");
    // Reported, not run: the call says why, and the result line says how the turn ended.
    assert_eq!(r["tool_calls"][0]["status"], "skipped");
    assert!(r["tool_calls"][0]["output"].as_str().unwrap().contains("tools are off"));
    assert_eq!(r["turn"]["stop"], "tools_off");
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn the_step_limit_stops_a_model_that_keeps_calling() {
    let dir = tempfile::tempdir().unwrap();
    let calls = [("c1", "current_time", "{}")];
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls))]);
    let (out, r) = run(&s, "chat", &[], dir.path());
    assert!(out.status.success());
    assert!(r["notice"].as_str().unwrap().contains("stopped after 10"));
    assert_eq!(s.requests().len(), 11);
}

fn run_with_config(server: &Server, cfg: &str, cwd: &std::path::Path) -> Value {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), cfg.replace("URL", &server.base_url)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["-p", "go", "--json"])
        .current_dir(cwd)
        .env("PALAVER_HOME", home.path())
        .env("K", "sk-x")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    serde_json::from_str(stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("null")).unwrap()
}

#[test]
fn stateless_follow_up_resends_reasoning_with_encrypted_content() {
    let first = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sse/responses_reasoning_summary_tool_call.sse"
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = "default_provider = \"p\"\n[providers.p]\nbase_url = \"URL\"\napi_key_env = \"K\"\napi = \"responses\"\ntools = \"auto\"\nmodels = [\"m\"]\n";
    let s = Server::start(vec![Reply::sse(&first), Reply::sse(RESP_TEXT)]);
    let r = run_with_config(&s, cfg, dir.path());
    assert_eq!(r["text"], "done");
    let follow: Value = serde_json::from_str(&s.requests()[1].body).unwrap();
    assert!(follow.get("previous_response_id").is_none());
    let input = follow["input"].as_array().unwrap();
    let reasoning = input.iter().find(|i| i["type"] == "reasoning").expect("reasoning item re-sent");
    assert!(reasoning["encrypted_content"].as_str().is_some_and(|e| e.len() > 100));
    let call = input.iter().find(|i| i["type"] == "function_call").unwrap();
    assert_eq!(call["call_id"], "call_AB6AaRZ1FYZB2RwS6A5vbdqn");
    let out = input.iter().find(|i| i["type"] == "function_call_output").unwrap();
    assert_eq!(out["call_id"], "call_AB6AaRZ1FYZB2RwS6A5vbdqn");

    // A profile that turns chaining on sends previous_response_id and only the new items.
    let chained = cfg.replace("models =", "previous_response_id = true\nmodels =");
    let s = Server::start(vec![Reply::sse(&first), Reply::sse(RESP_TEXT)]);
    run_with_config(&s, &chained, dir.path());
    let follow: Value = serde_json::from_str(&s.requests()[1].body).unwrap();
    assert_eq!(follow["previous_response_id"], "resp_01830d662ab3856501693c321345c88190b0de00f3b9975691");
    assert_eq!(follow["input"].as_array().unwrap().len(), 1);
    assert_eq!(follow["input"][0]["type"], "function_call_output");
}

/// A private key block, built here so this file does not hold one.
fn private_key() -> String {
    format!("-----BEGIN {}-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END {0}-----\n", "OPENSSH PRIVATE KEY")
}

#[test]
fn a_file_holding_a_private_key_is_refused_headless_even_with_yes() {
    let dir = tempfile::tempdir().unwrap();
    // An ordinary name: only its content says it is a secret.
    std::fs::write(dir.path().join("notes.txt"), private_key()).unwrap();
    std::fs::write(dir.path().join("plain.txt"), "nothing to see").unwrap();
    let calls = [
        ("c1", "read_file", "{\"path\":\"notes.txt\"}"),
        ("c2", "search_files", "{\"content\":\"BEGIN\"}"),
        ("c3", "read_file", "{\"path\":\"plain.txt\"}"),
    ];
    for extra in [&[][..], &["--yes"][..]] {
        let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
        let (out, r) = run(&s, "chat", extra, dir.path());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(r["tool_calls"][0]["status"], "denied", "{extra:?}: {r}");
        assert_eq!(r["tool_calls"][1]["status"], "denied", "{extra:?}: {r}");
        assert_eq!(r["tool_calls"][2]["output"], "nothing to see");
        let follow = &s.requests()[1].body;
        // Nothing of the key reached the provider, and the model was told why.
        assert!(!follow.contains("b3BlbnNzaC1rZXktdjEAAAAA") && !follow.contains("PRIVATE KEY-----"), "{follow}");
        let v: Value = serde_json::from_str(follow).unwrap();
        let said = v["messages"][2]["content"].as_str().unwrap();
        assert!(said.contains("notes.txt holds a private key (PEM block); it was withheld"), "{said}");
        let said = v["messages"][3]["content"].as_str().unwrap();
        assert!(said.contains("holds a private key (PEM block) (in notes.txt)"), "{said}");
        assert_eq!(v["messages"][4]["content"], "nothing to see");
        // Nor was it printed or stored in the result line.
        assert!(!String::from_utf8_lossy(&out.stdout).contains("b3BlbnNzaC1rZXktdjEAAAAA"));
    }
}

#[test]
fn attaching_a_secret_needs_yes() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".npmrc"), "//registry.npmjs.org/:_authToken=abc").unwrap();
    std::fs::write(dir.path().join("notes.txt"), format!("token = ghp_{}\n", "a1".repeat(18))).unwrap();
    let go = |file: &str, yes: bool| {
        let mut args = vec!["--demo", "-p", "hi", "-a", file];
        if yes {
            args.push("--yes");
        }
        Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(&args)
            .current_dir(dir.path())
            .env("PALAVER_HOME", home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    for (file, why) in
        [(".npmrc", "usually holds secrets (package registry tokens"), ("notes.txt", "holds a GitHub token")]
    {
        let out = go(file, false);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("cannot attach {file}: it {why}")) && err.contains("--yes"), "{err}");
        assert!(out.stdout.is_empty());
        let out = go(file, true);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn git_hooks_and_config_are_not_written_headless_even_with_yes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    let calls = [
        ("c1", "write_file", "{\"path\":\".git/hooks/pre-commit\",\"content\":\"#!/bin/sh\\nrm -rf ~\"}"),
        ("c2", "write_file", "{\"path\":\".git/config\",\"content\":\"[core]\\nfsmonitor = evil\"}"),
    ];
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
    let (out, r) = run(&s, "chat", &["--yes"], dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(r["tool_calls"][0]["status"], "denied", "{r}");
    assert_eq!(r["tool_calls"][1]["status"], "denied", "{r}");
    let said = |i: usize| r["tool_calls"][i]["output"].as_str().unwrap_or_default().to_owned();
    assert!(said(0).contains(".git/hooks/pre-commit") && said(0).contains("git hooks, which run as commands"), "{r}");
    assert!(said(1).contains(".git/config") && said(1).contains("git config"), "{r}");
    assert!(!dir.path().join(".git/hooks/pre-commit").exists() && !dir.path().join(".git/config").exists());
}

/// A reply whose usage counts a prompt far smaller than the six tool definitions alone: the
/// server dropped them (llama.cpp with a template without tool support does).
const TINY_PROMPT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"},\"finish_reason\":\"stop\"}]}\n\n\
    data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":1,\"total_tokens\":13}}\n\ndata: [DONE]\n\n";

#[test]
fn tools_the_server_ignored_are_said_once_on_stderr_and_in_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::sse(TINY_PROMPT)]);
    let (out, r) = run(&server, "chat", &[], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("seems to have ignored the 6 tools").count(), 1, "{stderr}");
    assert!(
        stderr.contains("the prompt counted 12 tokens") && stderr.contains("chat template without tool"),
        "{stderr}"
    );
    assert_eq!(r["turn"]["tools_ignored"]["tools"], 6, "{r}");
    assert_eq!(r["turn"]["tools_ignored"]["prompt_tokens"], 12, "{r}");
    assert!(r["turn"]["tools_ignored"]["tool_tokens"].as_u64().unwrap() > 150, "{r}");
    assert_eq!(r["text"], "hello");
    // Without tools offered there is nothing to have ignored.
    let server = Server::start(vec![Reply::sse(TINY_PROMPT)]);
    let (out, r) = run(&server, "chat", &["--tools", "none"], dir.path());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("ignored"));
    assert!(r["turn"].get("tools_ignored").is_none(), "{r}");
}
