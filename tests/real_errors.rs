//! What real servers send that mocks rarely do, end to end through the binary against a
//! scripted server on 127.0.0.1: a 404 from a server that lacks the API (the message names the
//! URL and suggests the other one), FastAPI `{"detail": …}` bodies (a string, or a list of
//! validation errors shown with their location), a complete reply with no choices, and
//! llama.cpp's `timings` (kept under the result line's `usage.details`). Also the non-streamed
//! llama.cpp captures in `tests/fixtures/sse/` (provenance in its SOURCES.md).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use palaver::api::{Api, map_full_response};
use palaver::engine::message::Message;
use palaver::engine::reducer::{self, Ending};
use scripted::{Reply, Server};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};

fn palaver(server: &Server, api: &str, extra: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut args =
        vec!["--base-url", &server.base_url, "--api", api, "-m", "m", "-p", "hi", "--json", "--tools", "none"];
    args.extend_from_slice(extra);
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(&args)
        .env("PALAVER_HOME", home.path())
        .env("OPENAI_API_KEY", "sk-test")
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

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn html(status: u16, body: &str) -> Reply {
    let mut r = Reply::json(status, body);
    r.headers = vec![("Content-Type".into(), "text/html".into())];
    r
}

#[test]
fn a_404_names_the_url_and_suggests_the_other_api() {
    let llama = r#"{"error":{"message":"File Not Found","type":"not_found_error","code":404}}"#;
    let s = Server::start(vec![Reply::json(404, llama)]);
    let out = palaver(&s, "responses", &[]);
    assert_eq!(out.status.code(), Some(1));
    let r = result_of(&out);
    let url = format!("{}/responses", s.base_url);
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.starts_with(&format!("{url}: File Not Found.")), "{msg}");
    assert!(msg.contains("may not offer the Responses API: try --api chat"), "{msg}");
    assert_eq!(r["error"]["status"], 404);
    assert_eq!(r["error"]["body"]["error"]["message"], "File Not Found", "the body is kept as sent");
    assert!(stderr(&out).contains(&url), "{}", stderr(&out));
    assert_eq!(s.requests().len(), 1, "a 404 is not retried");

    let s = Server::start(vec![html(
        404,
        "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>",
    )]);
    let out = palaver(&s, "chat", &[]);
    let msg = result_of(&out)["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(msg.starts_with(&format!("{}/chat/completions: 404 Not Found Not Found.", s.base_url)), "{msg}");
    assert!(msg.contains("Chat Completions API: try --api responses"), "{msg}");
}

#[test]
fn a_404_for_an_unknown_model_blames_the_model() {
    let body = r#"{"error":{"message":"The model `m` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#;
    let s = Server::start(vec![Reply::json(404, body)]);
    let out = palaver(&s, "chat", &[]);
    let msg = result_of(&out)["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        msg,
        format!(
            "The model `m` does not exist ({}/chat/completions); `palaver models` lists the models it offers",
            s.base_url
        )
    );
}

#[test]
fn fastapi_detail_bodies_are_shown() {
    let list = json!({"detail":[
        {"type":"missing","loc":["body","messages",0,"content"],"msg":"Field required","input":{"role":"user"}},
        {"type":"string_type","loc":["body","model"],"msg":"Input should be a valid string","input":1}]});
    let s = Server::start(vec![Reply::json(422, &list.to_string())]);
    let out = palaver(&s, "chat", &[]);
    let r = result_of(&out);
    // The server's words first, then why sending it again will not help.
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("body.messages.0.content: Field required; body.model: Input should be a valid string — "),
        "{message}"
    );
    assert!(message.contains("sending it again will not help"), "{message}");
    assert_eq!(r["error"]["body"], list);
    assert!(stderr(&out).contains("HTTP 422: body.messages.0.content: Field required"), "{}", stderr(&out));

    let s = Server::start(vec![Reply::json(400, r#"{"detail":"temperature must be at most 2"}"#)]);
    let out = palaver(&s, "responses", &[]);
    let message = result_of(&out)["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.starts_with("temperature must be at most 2 — the server refused the request"), "{message}");
}

#[test]
fn a_complete_reply_with_no_choices_is_described_as_such() {
    let empty = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}"#;
    for extra in [&["--no-stream"][..], &[][..]] {
        // Streamed or not, a JSON body is a complete answer.
        let s = Server::start(vec![Reply::json(200, empty)]);
        let out = palaver(&s, "chat", extra);
        let r = result_of(&out);
        assert_eq!(r["finish_reason"], "error", "{extra:?}");
        let msg = r["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.starts_with("the server answered with no choices"), "{extra:?}: {msg}");
        assert!(!msg.contains("stream"), "not a stream that ended early: {msg}");
        assert_eq!(r["usage"]["prompt_tokens"], 3, "what it did send is kept");
    }
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sse").join(name)).unwrap()
}

#[test]
fn llamacpp_timings_reach_the_result_line() {
    // Streamed without usage: the timings alone, and no invented counts.
    let s = Server::start(vec![Reply::sse(&fixture("llamacpp_chat_timings.sse"))]);
    let r = result_of(&palaver(&s, "chat", &[]));
    let want: Value = serde_json::from_str(&fixture("llamacpp_chat_timings.expect.json")).unwrap();
    assert_eq!(r["usage"], json!({"details": {"timings": want["usage"]["timings"]}}));
    assert_eq!(r["finish_reason"], "length");

    // Streamed with usage: counts at the top, timings under details.
    let s = Server::start(vec![Reply::sse(&fixture("llamacpp_chat_usage_timings.sse"))]);
    let r = result_of(&palaver(&s, "chat", &[]));
    assert_eq!(r["usage"]["completion_tokens"], 6);
    assert_eq!(r["usage"]["details"]["timings"]["predicted_n"], 6);

    // Responses: on the terminal event.
    let s = Server::start(vec![Reply::sse(&fixture("responses_llamacpp_timings.sse"))]);
    let r = result_of(&palaver(&s, "responses", &[]));
    assert_eq!(r["usage"]["prompt_tokens"], 13);
    assert!(r["usage"]["details"]["timings"]["predicted_per_second"].is_f64());

    // Not streamed.
    let s = Server::start(vec![Reply::json(200, &fixture("llamacpp_chat_nonstream.json"))]);
    let r = result_of(&palaver(&s, "chat", &["--no-stream"]));
    assert_eq!(r["usage"]["total_tokens"], 19);
    assert_eq!(r["usage"]["details"]["timings"]["cache_n"], 8);
}

fn rebuild(api: Api, body: &Value) -> Message {
    let mut msg = Message::assistant_pending();
    for e in map_full_response(api, body) {
        reducer::apply(&mut msg, e, 1);
    }
    reducer::finish(&mut msg, Ending::Eof, 2);
    msg
}

#[test]
fn non_streamed_llamacpp_captures_reconstruct_as_expected() {
    for (name, api, finish) in
        [("llamacpp_chat_nonstream", Api::Chat, "length"), ("llamacpp_responses_nonstream", Api::Responses, "stop")]
    {
        let body: Value = serde_json::from_str(&fixture(&format!("{name}.json"))).unwrap();
        let exp: Value = serde_json::from_str(&fixture(&format!("{name}.expect.json"))).unwrap();
        let msg = rebuild(api, &body);
        assert_eq!(msg.main().content, exp["text"].as_str().unwrap_or_default(), "{name}");
        assert_eq!(msg.main().finish_reason.as_deref(), Some(finish), "{name}");
        assert_eq!(msg.usage.clone().unwrap_or(Value::Null), exp["usage"], "{name}");
        assert!(msg.error.is_none(), "{name}: {:?}", msg.error);
    }
}

/// What llama.cpp really answers (captured from its server, see SOURCES.md) for an image sent to
/// a model without vision (HTTP 500) and for a conversation past the context (HTTP 400): shown at
/// once with what to do, never retried, exit 1.
#[test]
fn errors_that_cannot_get_better_are_shown_at_once_with_what_to_do() {
    for (status, name, hint) in [
        (500, "llamacpp_error_no_vision.json", "cannot read images: remove the image"),
        (400, "llamacpp_error_context.json", "does not fit the model's context window"),
    ] {
        // A second answer is there in case palaver retried: it must never be asked for.
        let s = Server::start(vec![Reply::json(status, fixture(name).trim()), Reply::sse("data: [DONE]\n\n")]);
        let started = std::time::Instant::now();
        let out = palaver(&s, "chat", &[]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        assert_eq!(s.requests().len(), 1, "{name} was retried");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{name}: waited {:?}", started.elapsed());
        let err = stderr(&out);
        assert!(!err.contains("retry"), "{name}: {err}");
        assert!(err.contains(&format!("HTTP {status}: ")) && err.contains(hint), "{name}: {err}");
        let r = result_of(&out);
        assert_eq!(r["error"]["status"], status);
        assert!(r["error"]["message"].as_str().unwrap_or_default().contains(hint), "{r}");
        assert_eq!(r["error"]["body"], serde_json::from_str::<Value>(&fixture(name)).unwrap(), "the body as sent");
    }
    // An overloaded server is still retried.
    let busy = r#"{"error":{"message":"The server is overloaded","type":"server_error"}}"#;
    let s = Server::start(vec![Reply::json(503, busy).header("Retry-After", "0"), Reply::sse(TEXT_SSE)]);
    let out = palaver(&s, "chat", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(s.requests().len(), 2);
}

/// A refused key names where the key came from.
#[test]
fn a_refused_key_names_its_variable() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    let s = Server::start(vec![Reply::json(401, body)]);
    let out = palaver(&s, "chat", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(s.requests().len(), 1);
    let err = stderr(&out);
    assert!(err.contains("the key in OPENAI_API_KEY was refused: check it"), "{err}");
    assert!(err.contains("HTTP 401: Incorrect API key provided"), "{err}");
}

const TEXT_SSE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
