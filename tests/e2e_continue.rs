//! Issue 24, items 2 and 3, end to end with the real binary and scripted servers on 127.0.0.1:
//! `--continue`/`--resume` go back to the conversation's own server and model (and say so when
//! a flag or a gone provider changes that), the provider is the one the user configured, every
//! provider's models are listed, and a server that answers with another model shows both.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod scripted;

use common::tmux::{Tmux, tmux_available};
use scripted::{Reply, Server};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn palaver(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn home(config: &str) -> tempfile::TempDir {
    let h = tempfile::tempdir().unwrap();
    if !config.is_empty() {
        std::fs::write(h.path().join("config.toml"), config).unwrap();
    }
    h
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn result_of(o: &Output) -> Value {
    let s = out(o);
    let last = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let v: Value = serde_json::from_str(last).unwrap_or(Value::Null);
    assert_eq!(v["type"], "result", "no result line: {s}\nstderr: {}", err(o));
    v
}

/// A chat stream whose chunks name `model` as the one that answered.
fn chat(text: &str, model: &str) -> Reply {
    Reply::sse(&format!(
        "data: {{\"id\":\"c\",\"model\":\"{model}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n\
         data: {{\"id\":\"c\",\"model\":\"{model}\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
    ))
}

/// A server answering every chat request with `text`, echoing the model asked for.
fn echo_server(text: &'static str) -> Server {
    Server::start_fn(move |seen| {
        let model = body(seen)["model"].as_str().unwrap_or("?").to_owned();
        chat(text, &model)
    })
}

fn body(seen: &scripted::Seen) -> Value {
    serde_json::from_str(&seen.body).unwrap_or(Value::Null)
}

fn chats(s: &Server) -> Vec<Value> {
    s.requests().iter().filter(|r| r.request_line.contains("/chat/completions")).map(body).collect()
}

#[test]
fn continue_and_resume_go_back_to_the_base_url_and_model_and_a_gone_server_is_named() {
    let h = home("");
    let s = Server::start_then_close(vec![chat("one", "SmolLM2"), chat("two", "SmolLM2"), chat("three", "SmolLM2")]);
    let first = palaver(h.path(), &["--base-url", &s.base_url, "-m", "SmolLM2", "-p", "remember pelican", "--json"]);
    assert_eq!(first.status.code(), Some(0), "{}", err(&first));
    let r = result_of(&first);
    let id = r["conversation_id"].as_str().expect("the result line carries the conversation's id").to_owned();
    assert_eq!(r["stored"], true);
    // --continue: the same server and model, with the earlier turn; not the demo.
    let second = palaver(h.path(), &["--continue", "-p", "what word?", "--json"]);
    assert_eq!(second.status.code(), Some(0), "{}", err(&second));
    assert!(!err(&second).contains("demo"), "{}", err(&second));
    let r = result_of(&second);
    assert_eq!(r["conversation_id"], id.as_str());
    assert_eq!(r["text"], "two");
    assert_eq!(r["continued"]["changed"], serde_json::json!([]));
    let sent = chats(&s);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["model"], "SmolLM2");
    assert!(sent[1]["messages"].to_string().contains("remember pelican"), "{}", sent[1]);
    // --resume ID (a prefix will do) from the result line.
    let third = palaver(h.path(), &["--resume", &id, "-p", "again", "--json"]);
    assert_eq!(third.status.code(), Some(0), "{}", err(&third));
    assert_eq!(result_of(&third)["conversation_id"], id.as_str());
    assert_eq!(chats(&s).len(), 3);
    // The server is gone: the error is about that server, not a scripted demo answer.
    let gone = palaver(h.path(), &["--continue", "-p", "still there?", "--json"]);
    assert_eq!(gone.status.code(), Some(1), "{}", err(&gone));
    let r = result_of(&gone);
    assert_eq!(r["finish_reason"], "error");
    assert_eq!(r["provider"], "127.0.0.1");
    let port = s.base_url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/v1");
    let e = err(&gone);
    assert!(e.contains(port) && !e.contains("demo"), "{e}");
    assert_eq!(r["text"], "");
}

const TWO: &str = r#"
default_provider = "b"
[providers.a]
base_url = "URL_A"
models = ["model-a"]
[providers.b]
base_url = "URL_B"
models = ["model-b"]
"#;

#[test]
fn a_conversation_on_a_provider_continues_there_and_a_flag_that_moves_it_is_said() {
    let (a, b) = (echo_server("from a"), echo_server("from b"));
    let h = home(&TWO.replace("URL_A", &a.base_url).replace("URL_B", &b.base_url));
    let o = palaver(h.path(), &["--provider", "a", "-p", "hi", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // --continue: provider a, though b is the default.
    let o = palaver(h.path(), &["--continue", "-p", "more", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let r = result_of(&o);
    assert_eq!((r["provider"].as_str(), r["text"].as_str()), (Some("a"), Some("from a")));
    assert_eq!(err(&o), "", "nothing changed, nothing said");
    assert_eq!(chats(&a).len(), 2);
    assert!(chats(&b).is_empty());
    // A flag moves it: said on stderr in one line and in the result line.
    let o = palaver(h.path(), &["--continue", "--provider", "b", "-p", "and now?", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("provider a → b (--provider)") && e.contains("model model-a → model-b"), "{e}");
    let r = result_of(&o);
    assert_eq!(r["provider"], "b");
    assert_eq!(r["continued"]["provider"], "a");
    let changed = r["continued"]["changed"].as_array().unwrap();
    assert!(changed.iter().any(|c| c["what"] == "provider" && c["before"] == "a" && c["after"] == "b"), "{r}");
    let sent = chats(&b);
    assert_eq!(sent.len(), 1);
    assert!(sent[0]["messages"].to_string().contains("more"), "the history goes along");
    // A try that failed (a dead address) does not move the conversation: the next --continue
    // goes back to where the last answer came from.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{dead}/v1");
    let o = palaver(h.path(), &["--continue", "--base-url", &url, "-p", "typo", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let o = palaver(h.path(), &["--continue", "-p", "back?", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!((result_of(&o)["provider"].as_str(), chats(&b).len()), (Some("b"), 2));
    // The provider gone from the config: continues at its recorded base URL and says so.
    let o = palaver(h.path(), &["--provider", "a", "-p", "fresh", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    std::fs::write(h.path().join("config.toml"), format!("[providers.b]\nbase_url = \"{}\"\n", b.base_url)).unwrap();
    let o = palaver(h.path(), &["--continue", "-p", "where?", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("`a` is no longer a provider in config.toml"), "{}", err(&o));
    assert_eq!(result_of(&o)["text"], "from a");
    assert_eq!(chats(&a).len(), 4);
    assert_eq!(chats(&a)[3]["model"], "model-a");
}

#[test]
fn the_provider_is_the_one_configured_one_or_the_user_says_which() {
    let (a, b) = (echo_server("from a"), echo_server("from b"));
    let two = TWO.replace("default_provider = \"b\"\n", "").replace("URL_A", &a.base_url).replace("URL_B", &b.base_url);
    let h = home(&two);
    let o = palaver(h.path(), &["-p", "hi"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("2 providers (a, b)") && err(&o).contains("--provider"), "{}", err(&o));
    assert!(chats(&a).is_empty() && chats(&b).is_empty(), "nothing was sent");
    let o = palaver(h.path(), &["config", "check"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("no default_provider") && err(&o).contains("a, b"), "{}", err(&o));
    let o = palaver(h.path(), &["config"]);
    assert!(!out(&o).contains("is set"), "no reason that is false:\n{}", out(&o));
    assert!(out(&o).contains("none of a, b") && out(&o).contains("exit 2"), "{}", out(&o));
    // Misspelt: config check names the closest.
    std::fs::write(h.path().join("config.toml"), format!("default_provider = \"bb\"\n{two}")).unwrap();
    let o = palaver(h.path(), &["config", "check"]);
    assert!(err(&o).contains("did you mean `b`?"), "{}", err(&o));
    // One provider and no default_provider: that provider.
    std::fs::write(h.path().join("config.toml"), format!("[providers.b]\nbase_url = \"{}\"\n", b.base_url)).unwrap();
    let o = palaver(h.path(), &["-p", "hi", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(result_of(&o)["provider"], "b");
    assert_eq!(chats(&b).len(), 1);
    let o = palaver(h.path(), &["config"]);
    assert!(out(&o).contains("the only provider in config.toml"), "{}", out(&o));
}

fn models_server(ids: &[&str]) -> Server {
    let data: Vec<Value> = ids.iter().map(|i| serde_json::json!({"id": i, "object": "model"})).collect();
    let body = serde_json::json!({"object": "list", "data": data}).to_string();
    Server::start(vec![Reply::json(200, &body).on_get()])
}

#[test]
fn models_lists_every_provider_and_a_failing_one_says_why() {
    let (a, b) = (models_server(&["smollm2-135m"]), models_server(&["gemma-3-270m"]));
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = format!(
        "[providers.a]\nbase_url = \"{}\"\nmodels = [\"extra-a\"]\n[providers.b]\nbase_url = \"{}\"\n\
         [providers.c]\nbase_url = \"http://127.0.0.1:{dead}/v1\"\n",
        a.base_url, b.base_url
    );
    let h = home(&cfg);
    let o = palaver(h.path(), &["models"]);
    assert_eq!(o.status.code(), Some(0), "two answered: {}", err(&o));
    let s = out(&o);
    let at = |needle: &str| s.find(needle).unwrap_or_else(|| panic!("{needle} missing:\n{s}"));
    assert!(at("a · ") < at("  smollm2-135m") && at("  smollm2-135m") < at("  extra-a\t(configured)"), "{s}");
    assert!(at("b · ") < at("  gemma-3-270m"), "{s}");
    assert!(at("c · ") < at("  ! GET /models failed"), "{s}");
    // --json: one object a line.
    let o = palaver(h.path(), &["models", "--json"]);
    let lines: Vec<Value> = out(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().any(|l| l["provider"] == "b" && l["model"] == "gemma-3-270m" && l["source"] == "listed"));
    assert!(lines.iter().any(|l| l["provider"] == "c" && l["error"].is_string()));
}

#[test]
fn a_server_that_answers_with_another_model_shows_both_and_is_no_error() {
    let s = Server::start(vec![chat("hi", "gpt-4o-mini-2024-07-18")]);
    let h = home("");
    let o = palaver(h.path(), &["--base-url", &s.base_url, "-m", "gpt-4o-mini", "-p", "hi", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let r = result_of(&o);
    assert_eq!(r["requested_model"], "gpt-4o-mini");
    assert_eq!(r["served_model"], "gpt-4o-mini-2024-07-18");
    assert_eq!(r["finish_reason"], "stop");
}

#[test]
fn bare_compare_models_go_to_the_provider_that_lists_them_and_headers_show_the_served_model() {
    let a = echo_server("from a");
    let b = Server::start_fn(|_| chat("from b", "model-b-0324"));
    let h = home(&TWO.replace("URL_A", &a.base_url).replace("URL_B", &b.base_url));
    let o = palaver(h.path(), &["compare", "-m", "model-a", "-m", "model-b", "-p", "hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(chats(&a).len(), 1);
    assert_eq!(chats(&a)[0]["model"], "model-a");
    assert_eq!(chats(&b)[0]["model"], "model-b");
    let s = out(&o);
    assert!(s.contains("── model-a (a) ──"), "{s}");
    assert!(s.contains("── asked model-b · served model-b-0324 (b) ──"), "{s}");
}

#[test]
fn the_chat_screen_continues_on_the_conversations_server_and_says_when_a_flag_moves_it() {
    if !tmux_available() {
        return;
    }
    // Each reply names the turn it answers, counted from the history the server was sent.
    let s = Server::start_fn(|seen| {
        let turns = body(seen)["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "user").count());
        chat(&format!("scripted reply to turn {turns}"), "SmolLM2")
    });
    let h = home("");
    let o = palaver(h.path(), &["--base-url", &s.base_url, "-m", "SmolLM2", "-p", "remember pelican"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let t = Tmux::launch("--continue").home(h.path()).keys_one_at_a_time().start();
    t.wait_for("the reopened conversation", |s| s.contains("reopened “remember pelican”"));
    t.send("and now?");
    let screen = t.wait_for("the second reply", |s| s.contains("scripted reply to turn 2"));
    assert!(!screen.contains("demo"), "{screen}");
    let sent = chats(&s);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["model"], "SmolLM2");
    t.quit();
    drop(t);
    // --demo moves it: the transcript says so, naming before and after.
    let t = Tmux::launch("--continue --demo").home(h.path()).keys_one_at_a_time().start();
    // (The notice wraps at the transcript's width.)
    t.wait_for("the notice", |s| s.contains("with a change: provider 127.0.0.1") && s.contains("→ demo (--demo)"));
    t.quit();
}

/// A server whose `GET /models` lists `models` and which echoes the model of every chat request.
fn listing_server(models: &'static [&'static str]) -> Server {
    Server::start_fn(move |seen| {
        if seen.request_line.contains("/models") {
            let data: Vec<Value> = models.iter().map(|m| serde_json::json!({"id": m, "object": "model"})).collect();
            return Reply::json(200, &serde_json::json!({"object": "list", "data": data}).to_string());
        }
        let model = body(seen)["model"].as_str().unwrap_or("?").to_owned();
        chat("listed", &model)
    })
}

#[test]
fn a_bare_compare_model_no_profile_names_goes_to_the_provider_whose_server_lists_it() {
    let a = listing_server(&["model-a"]);
    let b = listing_server(&["model-b", "model-d"]);
    let cfg = TWO.replace("default_provider = \"b\"", "default_provider = \"a\"");
    let h = home(&cfg.replace("URL_A", &a.base_url).replace("URL_B", &b.base_url));
    let o = palaver(h.path(), &["compare", "-m", "model-a", "-m", "model-d", "-p", "hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(chats(&a).iter().map(|c| c["model"].clone()).collect::<Vec<_>>(), ["model-a"]);
    assert_eq!(chats(&b).iter().map(|c| c["model"].clone()).collect::<Vec<_>>(), ["model-d"], "b's /models lists it");
    assert!(out(&o).contains("── model-d (b) ──"), "{}", out(&o));
}
