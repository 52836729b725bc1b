//! `compare --promptfoo` end to end through the binary: a promptfoo config (inline and
//! `file://` prompts, CSV and YAML tests, `defaultTest`, nested vars and Nunjucks filters, an
//! `apiBaseUrl` provider) run against a scripted server that echoes the prompt, checking each
//! cell's verdict and what was sent; an assert palaver cannot run, and a `file://` outside the
//! config's folder, refused before any request (the server counts none); `--resume` finds the
//! config's providers again.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

mod scripted;

use common::cli::{err, lines, run};
use scripted::{Reply, Seen, Server};
use serde_json::Value;
use std::path::Path;

fn echo(seen: &Seen) -> Reply {
    let v: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
    let prompt = v["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
    let usage = serde_json::json!({"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8});
    if v["stream"] == false {
        let whole = serde_json::json!({"id": "c1", "object": "chat.completion", "model": v["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("echo: {prompt}")}, "finish_reason": "stop"}],
            "usage": usage});
        return Reply::json(200, &whole.to_string());
    }
    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": format!("echo: {prompt}")}}]});
    let stop = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}});
    Reply::sse(&format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n"))
}

/// The chat requests the server answered (not model lookups).
fn sent(server: &Server) -> Vec<Value> {
    let seen = server.requests();
    seen.iter()
        .filter(|s| s.request_line.starts_with("POST") && s.request_line.contains("/chat/completions"))
        .map(|s| serde_json::from_str(&s.body).unwrap())
        .collect()
}

/// The fixture folder copied into `dir`, its configs pointed at `base_url`.
fn fixture(dir: &Path, base_url: &str) -> std::path::PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/promptfoo");
    let to = dir.join("evals");
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap().replace("@BASE_URL@", base_url);
        std::fs::write(to.join(path.file_name().unwrap()), text).unwrap();
    }
    to
}

#[test]
fn a_promptfoo_config_runs_as_a_prompt_set() {
    let server = Server::start_fn(echo);
    let home = tempfile::tempdir().unwrap();
    let dir = fixture(home.path(), &server.base_url);
    let config = dir.join("promptfooconfig.yaml");
    let out = run(home.path(), &["compare", "--promptfoo", config.to_str().unwrap(), "--json"]);
    // Two cells fail a check: exit 3, as with --prompts.
    assert_eq!(out.status.code(), Some(3), "{}", err(&out));
    let ls = lines(&out);
    let cells: Vec<&Value> = ls.iter().filter(|l| l["type"] == "cell").collect();
    let mut verdicts: Vec<(String, String, bool)> = cells
        .iter()
        .map(|c| {
            let pass = c["checks"].as_array().unwrap().iter().all(|k| k["pass"] == true);
            (c["prompt_id"].as_str().unwrap().to_owned(), c["text"].as_str().unwrap().to_owned(), pass)
        })
        .collect();
    verdicts.sort();
    let p1 = "prompt 1";
    let want = [
        (format!("{p1} · csv bye"), "echo: Say BYE to Ada", true),
        (format!("{p1} · hello"), "echo: Say HELLO to Ada", true),
        (format!("{p1} · yaml rain"), "echo: Say RAIN to Bob", true),
        ("file://prompt.txt · csv bye".to_owned(), "echo: Greet ada with bye", false),
        ("file://prompt.txt · hello".to_owned(), "echo: Greet ada with hello", false),
        ("file://prompt.txt · yaml rain".to_owned(), "echo: Greet bob with rain", true),
    ];
    let mut want: Vec<(String, String, bool)> = want.into_iter().map(|(a, b, c)| (a, b.to_owned(), c)).collect();
    want.sort();
    assert_eq!(verdicts, want);
    // The checks: defaultTest's first, each named by palaver's kind; the weight carried.
    let hello = cells.iter().find(|c| c["prompt_id"] == format!("{p1} · hello")).unwrap();
    let kinds: Vec<&str> = hello["checks"].as_array().unwrap().iter().map(|k| k["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert!(kinds[0] == "icontains" && kinds[1] == "contains", "{kinds:?}");
    assert!(hello["checks"][2]["weight"] == 2.0, "{}", hello["checks"]);
    assert_eq!(cells[0]["model"], "echo-1");
    // What was sent: the provider's config, promptfoo's default max_tokens, no stream.
    let bodies = sent(&server);
    assert_eq!(bodies.len(), 6);
    assert!(bodies.iter().all(|b| b["temperature"] == 0.3 && b["seed"] == 7 && b["max_tokens"] == 1024), "{bodies:?}");
    assert!(bodies.iter().all(|b| b["stream"] == false), "whole answers, as promptfoo asks: {bodies:?}");
    // The run resumes with the config's providers found again (nothing left to send).
    let id = ls.last().unwrap()["run"].as_str().unwrap().to_owned();
    let again = run(home.path(), &["compare", "--resume", &id, "--min-pass", "0.6", "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", err(&again));
    assert_eq!(sent(&server).len(), 6, "a finished run sends nothing again");
}

#[test]
fn what_palaver_cannot_run_is_named_before_anything_is_sent() {
    let server = Server::start_fn(echo);
    let home = tempfile::tempdir().unwrap();
    let dir = fixture(home.path(), &server.base_url);
    let config = dir.join("unsupported.yaml");
    let out = run(home.path(), &["compare", "--promptfoo", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    let e = err(&out);
    assert!(e.contains("test 1 (\"counted\"): assert 2 `javascript`") && e.contains("nothing was sent"), "{e}");
    assert!(e.contains("--skip-unsupported"), "{e}");
    assert_eq!(server.requests().len(), 0, "nothing reached the server");
    // Without it, the rest runs.
    let out = run(home.path(), &["compare", "--promptfoo", config.to_str().unwrap(), "--skip-unsupported", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    assert!(err(&out).contains("left out (--skip-unsupported)"), "{}", err(&out));
    assert_eq!(sent(&server).len(), 1);
    // A var read from outside the config's folder would be sent to a model: refused.
    let outside = dir.join("outside.yaml");
    let leak = format!(
        "prompts: ['{{{{ secret }}}}']\nproviders:\n  - id: openai:chat:m\n    config: {{apiBaseUrl: '{}'}}\ntests:\n  - vars: {{secret: 'file://../outside.txt'}}\n",
        server.base_url
    );
    std::fs::write(home.path().join("outside.txt"), "private").unwrap();
    std::fs::write(&outside, leak).unwrap();
    let out = run(home.path(), &["compare", "--promptfoo", outside.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    assert!(err(&out).contains("--allow-outside"), "{}", err(&out));
    assert_eq!(sent(&server).len(), 1, "the refused config sent nothing");
    // -m is the config's to give.
    let out = run(home.path(), &["compare", "--promptfoo", config.to_str().unwrap(), "--skip-unsupported", "-m", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(err(&out).contains("leave out -m"), "{}", err(&out));
}
