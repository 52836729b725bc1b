//! End to end: the real binary, headless, against the embedded demo server and against a
//! scripted server on 127.0.0.1 that drops, stalls and answers 429/500/401.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use scripted::{Reply, Server};
use serde_json::Value;
use std::process::{Command, Output};
use std::time::Duration;

const KEY: &str = "sk-test-SECRET-0123456789abcdef";

fn palaver(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home.path())
        .env("OPENAI_API_KEY", KEY)
        .env_remove("OPENAI_BASE_URL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn result_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let v: Value = serde_json::from_str(last).unwrap_or(Value::Null);
    assert_eq!(v["type"], "result", "no result line: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    v
}

fn no_key_anywhere(out: &Output) {
    let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
    assert!(!String::from_utf8_lossy(&all).contains(KEY), "the API key leaked into output");
}

fn headless(server: &Server, api: &str, extra: &[&str]) -> Output {
    let mut args = vec!["--base-url", &server.base_url, "--api", api, "-m", "m", "-p", "hello", "--json"];
    args.extend_from_slice(extra);
    palaver(&args)
}

const CHAT_OK: &str = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
const RESP_OK: &str = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1,\"total_tokens\":2}}}\n\n";

#[test]
fn demo_streams_markdown_with_usage_and_filters() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--demo", "-p", "hello", "--json"])
        .env("PALAVER_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(out.status.success());
    let r = result_of(&out);
    assert!(r["text"].as_str().unwrap_or("").contains("```"), "markdown with a code block");
    assert!(r["usage"]["cached_tokens"].as_u64().is_some());
    assert!(r["usage"]["reasoning_tokens"].as_u64().is_some());
    assert_eq!(r["finish_reason"], "stop");
    assert!(r["prompt_filter"].is_array());
    assert!(r["content_filter"]["hate"]["severity"].is_string());
    assert!(r["ttft_ms"].as_u64().is_some() && r["total_ms"].as_u64().is_some());
}

#[test]
fn no_key_and_no_config_defaults_to_the_demo_provider() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["-p", "hello", "--json", "--api", "responses", "-m", "demo-reasoning"])
        .env("PALAVER_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let r = result_of(&out);
    assert_eq!(r["provider"], "demo");
    assert!(!r["reasoning"].as_str().unwrap_or("").is_empty());
    assert!(r["items"].as_array().is_some_and(|i| i.len() >= 2));
}

#[test]
fn serve_demo_prints_its_base_url_and_serves_both_apis() {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["serve-demo"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    std::io::BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/v1"), "{url}");
    for api in ["chat", "responses"] {
        for stream in [&[][..], &["--no-stream"][..]] {
            let mut args = vec!["--base-url", &url, "--api", api, "-m", "demo", "-p", "hi", "--json"];
            args.extend_from_slice(stream);
            let out = palaver(&args);
            let r = result_of(&out);
            assert_eq!(r["finish_reason"], "stop", "{api} {stream:?}: {r}");
            assert!(r["usage"]["prompt_tokens"].as_u64().is_some());
            no_key_anywhere(&out);
        }
    }
    let out = palaver(&["--base-url", &url, "models"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("demo-tools"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn request_carries_settings_and_the_key_only_in_the_auth_header() {
    let s = Server::start(vec![Reply::sse(CHAT_OK)]);
    let out = headless(
        &s,
        "chat",
        &["--system", "be brief", "--temperature", "0.5", "--max-tokens", "9", "--reasoning-effort", "low"],
    );
    assert!(out.status.success());
    no_key_anywhere(&out);
    let req = &s.requests()[0];
    assert!(req.request_line.starts_with("POST /v1/chat/completions"));
    assert!(
        req.headers.contains(&format!("authorization: Bearer {KEY}"))
            || req.headers.contains(&format!("Authorization: Bearer {KEY}"))
    );
    let body: Value = serde_json::from_str(&req.body).unwrap();
    assert_eq!(body["messages"][0], serde_json::json!({"role": "system", "content": "be brief"}));
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(body["max_tokens"], 9);
    assert_eq!(body["reasoning_effort"], "low");
    assert_eq!(body["stream_options"]["include_usage"], true);
}

#[test]
fn retries_429_honouring_retry_after_then_succeeds() {
    for (api, ok) in [("chat", CHAT_OK), ("responses", RESP_OK)] {
        let s = Server::start(vec![
            Reply::json(429, r#"{"error":{"message":"slow down","type":"rate_limit","code":"rate_limit_exceeded"}}"#)
                .header("Retry-After", "1"),
            Reply::sse(ok),
        ]);
        let started = std::time::Instant::now();
        let out = headless(&s, api, &[]);
        assert!(out.status.success(), "{api}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(started.elapsed() >= Duration::from_millis(900), "Retry-After was not honoured");
        assert_eq!(result_of(&out)["text"], "Hi");
        assert_eq!(s.requests().len(), 2);
        assert!(String::from_utf8_lossy(&out.stderr).contains("retry 1"));
    }
}

#[test]
fn a_day_long_retry_after_is_reported_not_slept() {
    let s = Server::start(vec![
        Reply::json(429, r#"{"error":{"code":"429","message":"Please retry after 86400 seconds."}}"#)
            .header("Retry-After", "86400"),
    ]);
    let out = headless(&s, "chat", &[]);
    assert_eq!(out.status.code(), Some(1));
    let r = result_of(&out);
    assert_eq!(r["finish_reason"], "error");
    assert_eq!(r["error"]["status"], 429);
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("86400"));
    assert_eq!(s.requests().len(), 1);
}

#[test]
fn server_errors_are_retried_at_most_three_times() {
    let s = Server::start(vec![
        Reply::json(500, r#"{"error":{"message":"boom","type":"server_error"}}"#).header("Retry-After", "0"),
    ]);
    let out = headless(&s, "responses", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(s.requests().len(), 4);
    let r = result_of(&out);
    assert_eq!(r["error"]["status"], 500);
    assert_eq!(r["error"]["body"]["error"]["message"], "boom");
}

#[test]
fn unauthorized_is_not_retried_and_shows_the_providers_message() {
    let s = Server::start(vec![Reply::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    )]);
    let out = headless(&s, "chat", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(s.requests().len(), 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Incorrect API key provided"));
    no_key_anywhere(&out);
}

#[test]
fn a_dropped_stream_keeps_the_partial_text() {
    let partial = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half an \"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer\"}}]}\n\n";
    for reply in [Reply::sse(partial).cut(), Reply::sse(partial)] {
        let s = Server::start(vec![reply]);
        let out = headless(&s, "chat", &[]);
        assert_eq!(out.status.code(), Some(1));
        let r = result_of(&out);
        assert_eq!(r["text"], "Half an answer");
        assert_eq!(r["finish_reason"], "error");
        assert!(r["error"]["message"].is_string());
    }
}

#[test]
fn a_stalled_stream_is_reported_by_name() {
    let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Before the stall\"}}]}\n\n";
    let s = Server::start(vec![Reply::sse(first).then("", Duration::from_secs(4))]);
    let out = headless(&s, "chat", &["--idle-timeout", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let r = result_of(&out);
    assert_eq!(r["text"], "Before the stall");
    assert_eq!(r["error"]["kind"], "idle_timeout");
}

#[test]
fn a_slow_steady_stream_is_not_a_stall() {
    // Every pause is shorter than the idle timeout, all of them together far longer, and the
    // first one longer than the idle timeout but within the first-byte one: the timer follows
    // the reads instead of running from the request.
    let piece = |t: &str| format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{t}\"}}}}]}}\n\n");
    // (A piece is written, then its pause is waited.)
    let mut reply = Reply::sse("").then("", Duration::from_millis(1500));
    for w in ["one ", "two ", "three ", "four "] {
        reply = reply.then(&piece(w), Duration::from_millis(700));
    }
    let end = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let s = Server::start(vec![reply.then(end, Duration::ZERO)]);
    let out = headless(&s, "chat", &["--idle-timeout", "1", "--first-byte-timeout", "3"]);
    let r = result_of(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(r["text"], "one two three four ");
}

#[test]
fn a_slow_first_byte_is_reported_by_name() {
    let s = Server::start(vec![Reply::sse(CHAT_OK).pause_first(Duration::from_secs(4))]);
    let out = headless(&s, "chat", &["--first-byte-timeout", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(result_of(&out)["error"]["kind"], "first_byte_timeout");
}

#[test]
fn connection_refused_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = palaver(&["--base-url", &url, "-m", "m", "-p", "hi", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let r = result_of(&out);
    assert_eq!(r["error"]["kind"], "connect");
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not connect"));
}

#[test]
fn a_malformed_frame_marks_the_reply_damaged_but_keeps_reading() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\"}}]}\n\ndata: {not json\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"B\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let s = Server::start(vec![Reply::sse(body)]);
    let out = headless(&s, "chat", &[]);
    assert_eq!(out.status.code(), Some(1));
    let r = result_of(&out);
    assert_eq!(r["text"], "AB");
    assert_eq!(r["error"]["kind"], "malformed");
}

#[test]
fn plain_output_streams_text_and_reports_errors_on_stderr() {
    let s = Server::start(vec![Reply::sse(CHAT_OK)]);
    let out = palaver(&["--base-url", &s.base_url, "-m", "m", "-p", "x"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Hi\n");
}

#[test]
fn a_bad_config_is_a_usage_error_naming_the_line() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "default_provider = \"x\"\n[providers.x\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["-p", "hi"])
        .env("PALAVER_HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
}

#[test]
fn azure_profile_sends_api_key_header_and_api_version() {
    let s = Server::start(vec![Reply::sse(CHAT_OK)]);
    let home = tempfile::tempdir().unwrap();
    let cfg = format!(
        "default_provider = \"az\"\n[providers.az]\nbase_url = \"{}\"\nauth = \"api-key\"\napi_key_env = \"AZ_KEY\"\nquery = {{ \"api-version\" = \"2024-10-21\" }}\ninclude_usage = false\nmodels = [\"gpt-4o\"]\n",
        s.base_url
    );
    std::fs::write(home.path().join("config.toml"), cfg).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["-p", "hi", "--json"])
        .env("PALAVER_HOME", home.path())
        .env("AZ_KEY", KEY)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    no_key_anywhere(&out);
    let req = &s.requests()[0];
    assert!(req.request_line.contains("api-version=2024-10-21"), "{}", req.request_line);
    assert!(req.headers.to_ascii_lowercase().contains(&format!("api-key: {}", KEY.to_ascii_lowercase())));
    let body: Value = serde_json::from_str(&req.body).unwrap();
    assert!(body.get("stream_options").is_none());
    assert_eq!(body["model"], "gpt-4o");
}

#[test]
fn replay_prints_like_prompt_mode() {
    let f = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sse/responses_function_call.sse");
    let out = palaver(&["replay", f, "--json"]);
    let r = result_of(&out);
    assert_eq!(r["api"], "responses");
    assert_eq!(r["finish_reason"], "tool_calls");
}

/// Issue 25: a headless reply cut by SIGTERM or SIGHUP stops like Ctrl+C (what arrived is kept,
/// exit 130) and is stored naming the signal, not as "killed or crashed".
#[test]
fn a_reply_cut_by_sigterm_or_sighup_is_stored_naming_the_signal() {
    use std::io::Read as _;
    for (flag, name) in [("-TERM", "SIGTERM"), ("-HUP", "SIGHUP")] {
        let home = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(["--demo", "-m", "demo-slow", "-p", "tell me a slow story"])
            .env("PALAVER_HOME", home.path())
            .env_remove("OPENAI_API_KEY")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the first words, so the signal cuts a reply that has started.
        let mut stdout = child.stdout.take().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("one token") {
            let n = stdout.read(&mut buf).unwrap();
            assert!(n > 0, "the reply ended before it was cut: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        let killed = Command::new("kill").args([flag, &child.id().to_string()]).status().unwrap();
        assert!(killed.success());
        let _ = stdout.read_to_end(&mut seen);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{name}: {stderr}");
        assert!(stderr.contains(&format!("stopped by {name}; what arrived is kept")), "{stderr}");
        let run = |args: &[&str]| {
            let o = Command::new(env!("CARGO_BIN_EXE_palaver"))
                .args(args)
                .env("PALAVER_HOME", home.path())
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stdout).into_owned()
        };
        let id = run(&["history", "list"]).split_whitespace().next().unwrap().to_owned();
        let export: Value = serde_json::from_str(&run(&["history", "export", &id, "--format", "json"])).unwrap();
        let reply = &export["messages"][1];
        assert!(reply["choices"][0]["content"].as_str().unwrap().contains("one token"), "{reply}");
        let why = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(why.starts_with(&format!("interrupted by {name} (")), "{name}: {reply}");
    }
}
