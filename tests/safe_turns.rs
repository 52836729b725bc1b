//! Issue 12 end to end, headless against scripted servers on 127.0.0.1: tools are offered only
//! when turned on; a file outside the workspace never reaches the server; a call cut by the
//! token limit never runs and never poisons the conversation (`--continue` works); calls are
//! ordered by index; the turn's usage adds up; the step limit is testable from the result line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scripted;

use scripted::{Reply, Server};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

struct Run {
    out: Output,
    result: Value,
}

fn palaver(server: &Server, home: &Path, cwd: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--base-url", &server.base_url, "-m", "m", "--json"];
    all.extend_from_slice(args);
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(&all)
        .current_dir(cwd)
        .env("PALAVER_HOME", home)
        .env("OPENAI_API_KEY", "sk-x")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("null");
    let result = serde_json::from_str(last).unwrap_or(Value::Null);
    Run { out, result }
}

fn body(seen: &scripted::Seen) -> Value {
    serde_json::from_str(&seen.body).unwrap()
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    let c = serde_json::json!({"choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
    format!("data: {c}\n\n")
}

fn call_stream(calls: &[(u32, &str, &str, &str)], finish: &str) -> String {
    let mut s = String::new();
    for (index, id, name, args) in calls {
        s += &chunk(
            &serde_json::json!({"tool_calls":[{"index":index,"id":id,"type":"function","function":{"name":name,"arguments":args}}]}),
            None,
        );
    }
    s += &chunk(&serde_json::json!({}), Some(finish));
    s + "data: [DONE]\n\n"
}

fn text_stream(text: &str, usage: Option<Value>) -> String {
    let mut s = chunk(&serde_json::json!({"content": text}), Some("stop"));
    if let Some(u) = usage {
        s += &format!("data: {}\n\n", serde_json::json!({"choices": [], "usage": u}));
    }
    s + "data: [DONE]\n\n"
}

#[test]
fn a_plain_prompt_offers_no_tools_unless_turned_on() {
    let (home, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let s = Server::start(vec![Reply::sse(&text_stream("Paris.", None))]);
    let r = palaver(&s, home.path(), dir.path(), &["-p", "The capital of France is"]);
    assert!(r.out.status.success());
    assert!(body(&s.requests()[0]).get("tools").is_none(), "a plain prompt must carry no tool definitions");
    // --tools auto offers them; so does a profile with tools = "auto"; --tools none wins over it.
    let _ = palaver(&s, home.path(), dir.path(), &["-p", "x", "--tools", "auto"]);
    assert_eq!(body(&s.requests()[1])["tools"].as_array().map(Vec::len), Some(6));
    std::fs::write(
        home.path().join("config.toml"),
        format!("[providers.local]\nbase_url = \"{}\"\ntools = \"auto\"\n", s.base_url),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["--provider", "local", "-m", "m", "--json", "-p", "x"];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(&args)
            .current_dir(dir.path())
            .env("PALAVER_HOME", home.path())
            .env("OPENAI_API_KEY", "sk-x")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    assert!(run(&[]).status.success());
    assert!(body(&s.requests()[2]).get("tools").is_some());
    assert!(run(&["--tools", "none"]).status.success());
    assert!(body(&s.requests()[3]).get("tools").is_none());
}

/// Every way out of the workspace a model might try; none may send what it found.
#[test]
fn files_outside_the_workspace_never_reach_the_server() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = "TOP-SECRET-7f3a";
    std::fs::write(outside.path().join("key.txt"), secret).unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("inner")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("key.txt"), ws.path().join("link.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
    std::fs::write(ws.path().join(".env"), format!("KEY={secret}")).unwrap();
    let abs = outside.path().join("key.txt").display().to_string();
    let rel = format!("../{}/key.txt", outside.path().file_name().unwrap().to_string_lossy());
    let outside_dir = outside.path().display().to_string();
    let attempts: Vec<(&str, String)> = vec![
        ("read_file", serde_json::json!({ "path": abs }).to_string()),
        ("read_file", serde_json::json!({ "path": rel }).to_string()),
        ("read_file", serde_json::json!({ "path": "inner/../../x/../link.txt" }).to_string()),
        ("read_file", serde_json::json!({ "path": "link.txt" }).to_string()),
        ("read_file", serde_json::json!({ "path": "out/key.txt" }).to_string()),
        ("read_file", serde_json::json!({ "path": ".env" }).to_string()),
        ("list_directory", serde_json::json!({ "path": outside_dir }).to_string()),
        ("search_files", serde_json::json!({ "path": ".", "content": "TOP-SECRET" }).to_string()),
        ("search_files", serde_json::json!({ "path": outside_dir, "content": "TOP" }).to_string()),
    ];
    for (i, (name, args)) in attempts.iter().enumerate() {
        for flags in [&["--tools", "auto"][..], &["--tools", "auto", "--yes"][..]] {
            let s = Server::start(vec![
                Reply::sse(&call_stream(&[(0, "call_1", name, args)], "tool_calls")),
                Reply::sse(&text_stream("ok", None)),
            ]);
            let mut a = vec!["-p", "go"];
            a.extend_from_slice(flags);
            let r = palaver(&s, home.path(), ws.path(), &a);
            assert!(r.out.status.success(), "attempt {i}: {}", String::from_utf8_lossy(&r.out.stderr));
            let reqs = s.requests();
            assert_eq!(reqs.len(), 2, "attempt {i}");
            assert!(!reqs[1].body.contains(secret), "attempt {i} ({name} {args} {flags:?}) leaked: {}", reqs[1].body);
            let key_name = reqs[1].body.contains("key.txt") && *name == "list_directory";
            assert!(!key_name, "attempt {i}: the outside listing reached the server");
        }
    }
}

#[test]
fn a_call_cut_by_the_token_limit_never_runs_and_continue_works() {
    let (home, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let cut = format!(
        "{}{}data: [DONE]\n\n",
        chunk(
            &serde_json::json!({"tool_calls":[{"index":0,"id":"Vq3nT0aZkP8rW2xY","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"no"}}]}),
            None
        ),
        chunk(&serde_json::json!({}), Some("length")),
    );
    // A strict server (as llama.cpp is): a history whose call arguments are not JSON is a 500.
    let s = Server::start_fn(move |seen| {
        let b: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
        let msgs = b["messages"].as_array().cloned().unwrap_or_default();
        for m in &msgs {
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                let args = c["function"]["arguments"].as_str().unwrap_or("");
                if serde_json::from_str::<Value>(args).is_err() {
                    return Reply::json(500, r#"{"error":{"message":"Failed to parse tool call arguments as JSON"}}"#);
                }
            }
        }
        let answered = msgs.iter().filter(|m| m["role"] == "tool").count();
        let calls: usize = msgs.iter().map(|m| m["tool_calls"].as_array().map_or(0, Vec::len)).sum();
        if answered != calls {
            return Reply::json(400, r#"{"error":{"message":"every tool call needs a tool message"}}"#);
        }
        if msgs.len() == 1 { Reply::sse(&cut) } else { Reply::sse(&text_stream("continued", None)) }
    });
    let r = palaver(&s, home.path(), dir.path(), &["-p", "read notes", "--tools", "auto", "--max-tokens", "24"]);
    assert!(r.out.status.success(), "{}", String::from_utf8_lossy(&r.out.stderr));
    assert_eq!(s.requests().len(), 1, "a cut call must not be run and sent back");
    assert_eq!(r.result["finish_reason"], "length");
    assert_eq!(r.result["turn"]["stop"], "cut_call");
    assert!(r.result["notice"].as_str().unwrap_or_default().contains("token limit"));
    assert_eq!(r.result["tool_calls"][0]["arguments"], "{\"path\": \"no");
    assert_eq!(r.result["tool_calls"][0]["status"], "skipped");
    let stderr = String::from_utf8_lossy(&r.out.stderr);
    assert!(stderr.contains("--max-tokens"), "{stderr}");
    // The stored conversation continues: the server sees JSON arguments and an answer.
    let r2 = palaver(&s, home.path(), dir.path(), &["--continue", "-p", "go on", "--tools", "auto"]);
    assert!(r2.out.status.success(), "{}", String::from_utf8_lossy(&r2.out.stderr));
    assert_eq!(r2.result["text"], "continued");
    let follow = body(&s.requests()[1]);
    assert_eq!(
        follow["messages"][1]["tool_calls"][0]["function"]["arguments"],
        "{\"invalid_json_arguments\":\"{\\\"path\\\": \\\"no\"}"
    );
    assert_eq!(follow["messages"][2]["role"], "tool");
    assert_eq!(follow["messages"][3]["content"], "go on");
    // The store kept the original bytes.
    let history = |args: &[&str]| {
        let o =
            Command::new(env!("CARGO_BIN_EXE_palaver")).args(args).env("PALAVER_HOME", home.path()).output().unwrap();
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let list = history(&["history", "list", "--json"]);
    let id: Value = serde_json::from_str(list.lines().next().unwrap()).unwrap();
    let export = history(&["history", "export", id["id"].as_str().unwrap(), "--format", "json"]);
    assert!(export.contains(r#"{\"path\": \"no"#), "{export}");
}

#[test]
fn invalid_arguments_are_answered_with_the_error_and_never_run() {
    let (home, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let s = Server::start(vec![
        Reply::sse(&call_stream(&[(0, "c1", "write_file", "{\"path\": \"x.txt\", \"content\": ")], "tool_calls")),
        Reply::sse(&text_stream("sorry", None)),
    ]);
    let r = palaver(&s, home.path(), dir.path(), &["-p", "write", "--tools", "auto", "--yes"]);
    assert!(r.out.status.success());
    assert!(!dir.path().join("x.txt").exists());
    let follow = body(&s.requests()[1]);
    let args = follow["messages"][1]["tool_calls"][0]["function"]["arguments"].as_str().unwrap();
    assert!(serde_json::from_str::<Value>(args).is_ok(), "strict servers must get JSON back: {args}");
    assert!(follow["messages"][2]["content"].as_str().unwrap().contains("not valid JSON"));
    assert_eq!(r.result["tool_calls"][0]["status"], "failed");
}

#[test]
fn calls_are_ordered_by_index_everywhere() {
    let (home, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
    let s = Server::start(vec![
        Reply::sse(&call_stream(
            &[(1, "call_b", "current_time", "{}"), (0, "call_a", "read_file", "{\"path\":\"a.txt\"}")],
            "tool_calls",
        )),
        Reply::sse(&text_stream("done", None)),
    ]);
    let r = palaver(&s, home.path(), dir.path(), &["-p", "go", "--tools", "auto"]);
    assert!(r.out.status.success());
    let ids: Vec<&str> = r.result["tool_calls"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_a", "call_b"]);
    let follow = body(&s.requests()[1]);
    assert_eq!(follow["messages"][1]["tool_calls"][0]["id"], "call_a");
    assert_eq!(follow["messages"][2]["tool_call_id"], "call_a");
    assert_eq!(follow["messages"][3]["tool_call_id"], "call_b");
}

#[test]
fn the_turn_usage_adds_up_and_the_step_limit_is_testable() {
    let (home, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let with_usage = |n: u64| {
        let mut s = call_stream(&[(0, "c", "current_time", "{}")], "tool_calls");
        s = s.replace(
            "data: [DONE]",
            &format!(
                "data: {}\n\ndata: [DONE]",
                serde_json::json!({"choices": [], "usage": {"prompt_tokens": n, "completion_tokens": 1, "total_tokens": n + 1}})
            ),
        );
        s
    };
    // Prompts that hold the six tool definitions (about 358 tokens): fewer would read as a
    // server that ignored them (`turn.tools_ignored`).
    let s = Server::start(vec![
        Reply::sse(&with_usage(400)),
        Reply::sse(&text_stream(
            "t",
            Some(serde_json::json!({"prompt_tokens": 420, "completion_tokens": 2, "total_tokens": 422})),
        )),
    ]);
    let r = palaver(&s, home.path(), dir.path(), &["-p", "go", "--tools", "auto"]);
    assert_eq!(r.result["usage"]["prompt_tokens"], 820);
    assert_eq!(r.result["usage"]["completion_tokens"], 3);
    assert_eq!(r.result["usage"]["requests"].as_array().map(Vec::len), Some(2));
    assert_eq!(r.result["turn"], serde_json::json!({"requests": 2, "tool_rounds": 1, "stop": "answer"}));
    // A model that never stops asking: the turn ends at the step limit, and says so.
    let s = Server::start(vec![Reply::sse(&with_usage(1))]);
    let r = palaver(&s, home.path(), dir.path(), &["-p", "go", "--tools", "auto"]);
    assert!(r.out.status.success());
    assert_eq!(r.result["turn"]["stop"], "step_limit");
    assert_eq!(r.result["turn"]["requests"], 11);
    assert_eq!(r.result["usage"]["prompt_tokens"], 11);
    assert!(r.result["notice"].as_str().unwrap().contains("stopped after 10 tool rounds"));
}

/// llama.cpp says keep-alive but closes the connection after each reply: the next request of
/// the turn goes out on a pooled connection the server is about to close. palaver sends it once
/// more on a fresh connection instead of failing the turn.
#[test]
fn a_kept_alive_connection_the_server_closed_is_not_a_failed_turn() {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let n = counter.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let first = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
                let reply = if first {
                    r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"current_time","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#
                } else {
                    r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"it is late"},"finish_reason":"stop"}]}"#
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n",
                    reply.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(reply.as_bytes());
                let _ = stream.flush();
                // Keep the socket open a moment (the client pools it), then close it unread.
                std::thread::sleep(std::time::Duration::from_millis(300));
            });
        }
    });
    let (home, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--base-url", &format!("http://127.0.0.1:{port}/v1"), "-m", "m", "--json", "--no-stream"])
        .args(["--tools", "auto", "-p", "what time is it"])
        .current_dir(dir.path())
        .env("PALAVER_HOME", home.path())
        .env("OPENAI_API_KEY", "sk-x")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["text"], "it is late");
}
