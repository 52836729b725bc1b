//! Issue 40 §3 and §4 end to end: the context window read from the server that states it (each
//! server's own shape, scripted on 127.0.0.1), reaching the headless result and `palaver
//! config`; a provider found by the one preset key set, several refused with their names;
//! `palaver providers` marking the set ones; and copy as curl from the chat screen writing the
//! profile's own key, run as copied against a server that checks it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;
mod scripted;

use common::tmux::{Tmux, tmux_available};
use scripted::{Reply, Seen, Server};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const CHAT_OK: &str = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// Every preset key variable, so the machine's own never steer a test.
const PRESET_KEYS: [&str; 16] = [
    "AZURE_OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "DEEPSEEK_API_KEY",
    "MISTRAL_API_KEY",
    "XAI_API_KEY",
    "GEMINI_API_KEY",
    "ANTHROPIC_API_KEY",
    "DATABRICKS_TOKEN",
    "OLLAMA_API_KEY",
    "LM_STUDIO_API_KEY",
    "VLLM_API_KEY",
    "LLAMA_API_KEY",
    "OPENAI_API_KEY",
];

fn palaver(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_palaver"));
    c.args(args).env("PALAVER_HOME", home).env_remove("OPENAI_BASE_URL").stdin(Stdio::null());
    for k in PRESET_KEYS {
        c.env_remove(k);
    }
    // Nothing here may reach a real provider: a proxy on a closed port refuses every request.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let proxy = format!("http://127.0.0.1:{dead}");
    c.env("HTTPS_PROXY", &proxy).env("https_proxy", &proxy).env("NO_PROXY", "127.0.0.1");
    c.envs(env.iter().copied());
    c.output().unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn result(o: &Output) -> Value {
    let line = out(o).lines().last().map(str::to_owned).unwrap_or_default();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {}\n{}", out(o), err(o)))
}

/// How a scripted server answers a window lookup: (path, body) → its reply, or a 404.
type Lookup = dyn Fn(&str, &str) -> Option<Reply> + Send + Sync;

/// A server answering chats, and the window lookups as `lookup` says (path, body → reply).
fn server(lookup: impl Fn(&str, &str) -> Option<Reply> + Send + Sync + 'static) -> (Server, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    let s = Server::start_fn(move |seen: &Seen| {
        let path = seen.request_line.split_whitespace().nth(1).unwrap_or_default().to_owned();
        if scripted::is_lookup(&seen.request_line) {
            count.fetch_add(1, Ordering::SeqCst);
            return lookup(&path, &seen.body).unwrap_or_else(|| Reply::json(404, "{}"));
        }
        Reply::sse(CHAT_OK)
    });
    (s, asked)
}

#[test]
fn each_servers_window_reaches_the_result_and_palaver_config_says_where() {
    let llama =
        r#"{"object":"list","data":[{"id":"smollm2","owned_by":"llamacpp","meta":{"n_ctx":4096,"n_ctx_train":8192}}]}"#;
    let llama_old = r#"{"object":"list","data":[{"id":"smollm2","owned_by":"llamacpp"}]}"#;
    let cases: Vec<(&str, u64, &str, Box<Lookup>)> = vec![
        (
            "smollm2",
            4096,
            "server (llama.cpp /v1/models)",
            Box::new(move |p, _| p.ends_with("/v1/models").then(|| Reply::json(200, llama))),
        ),
        (
            "smollm2",
            2048,
            "server (llama.cpp /props)",
            Box::new(move |p, _| match p {
                "/v1/models" => Some(Reply::json(200, llama_old)),
                "/props" => Some(Reply::json(200, r#"{"default_generation_settings":{"n_ctx":2048},"total_slots":2}"#)),
                _ => None,
            }),
        ),
        (
            "org/model",
            8192,
            "server (vLLM /v1/models)",
            Box::new(|p, _| {
                (p == "/v1/models").then(|| {
                    Reply::json(
                        200,
                        r#"{"data":[{"id":"org/model","owned_by":"vllm","root":"org/model","max_model_len":8192}]}"#,
                    )
                })
            }),
        ),
        (
            "llama3.2",
            16384,
            "server (Ollama /api/show)",
            Box::new(|p, body| match p {
                "/v1/models" => Some(Reply::json(
                    200,
                    r#"{"data":[{"id":"llama3.2:latest","object":"model","created":1,"owned_by":"library"}]}"#,
                )),
                // The model's name, as the list wrote it.
                "/api/show" if body.contains("llama3.2:latest") => Some(Reply::json(
                    200,
                    r#"{"parameters":"num_ctx                        16384","model_info":{"general.architecture":"llama","llama.context_length":131072}}"#,
                )),
                _ => None,
            }),
        ),
        (
            "qwen",
            6000,
            "server (LM Studio /api/v0/models)",
            Box::new(|p, _| match p {
                "/v1/models" => Some(Reply::json(
                    200,
                    r#"{"data":[{"id":"qwen","object":"model","owned_by":"organization_owner"}]}"#,
                )),
                "/api/v0/models" => Some(Reply::json(
                    200,
                    r#"{"data":[{"id":"qwen","state":"loaded","max_context_length":32768,"loaded_context_length":6000}]}"#,
                )),
                _ => None,
            }),
        ),
    ];
    for (model, window, from, lookup) in cases {
        let (s, asked) = server(lookup);
        let home = tempfile::tempdir().unwrap();
        let o = palaver(home.path(), &["--base-url", &s.base_url, "-m", model, "-p", "hi", "--json"], &[]);
        assert_eq!(o.status.code(), Some(0), "{model}: {}", err(&o));
        assert_eq!(result(&o)["context"]["window"], window, "{from}");
        assert!(asked.load(Ordering::SeqCst) <= 2, "one list and at most one more ask: {from}");
        let o = palaver(home.path(), &["--base-url", &s.base_url, "-m", model, "config"], &[]);
        let row = out(&o).lines().find(|l| l.trim_start().starts_with("window")).unwrap_or_default().to_owned();
        assert!(row.contains(&format!("{} tokens", thousands(window))) && row.ends_with(from), "{row}");
        // Only the chat was recorded: the lookups stay out of the way of what tests count.
        assert_eq!(s.requests().len(), 1);
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_config_wins_over_the_server_and_the_catalogue_answers_a_silent_one() {
    let llama = r#"{"data":[{"id":"gpt-4o-mini","owned_by":"llamacpp","meta":{"n_ctx":4096}}]}"#;
    let (s, asked) = server(move |p, _| (p == "/v1/models").then(|| Reply::json(200, llama)));
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "[models.\"gpt-4o-mini\"]\ncontext_window = 1000\n").unwrap();
    let o = palaver(home.path(), &["--base-url", &s.base_url, "-m", "gpt-4o-mini", "-p", "hi", "--json"], &[]);
    assert_eq!(result(&o)["context"]["window"], 1000, "{}", err(&o));
    assert_eq!(asked.load(Ordering::SeqCst), 0, "a configured window asks no server");
    let o = palaver(home.path(), &["--base-url", &s.base_url, "-m", "gpt-4o-mini", "config"], &[]);
    assert!(out(&o).lines().any(|l| l.contains("1,000 tokens") && l.trim_end().ends_with("config")), "{}", out(&o));
    // The server's word over the catalogue's (128,000).
    std::fs::remove_file(home.path().join("config.toml")).unwrap();
    let o = palaver(home.path(), &["--base-url", &s.base_url, "-m", "gpt-4o-mini", "-p", "hi", "--json"], &[]);
    assert_eq!(result(&o)["context"]["window"], 4096);
    // A server that states nothing (404s): the catalogue, silently.
    let (quiet, _) = server(|_, _| None);
    let o = palaver(home.path(), &["--base-url", &quiet.base_url, "-m", "gpt-4o-mini", "-p", "hi", "--json"], &[]);
    assert_eq!(result(&o)["context"]["window"], 128_000);
    assert!(!err(&o).contains("404"), "{}", err(&o));
    let o = palaver(home.path(), &["--base-url", &quiet.base_url, "-m", "gpt-4o-mini", "config"], &[]);
    assert!(out(&o).lines().any(|l| l.contains("128,000 tokens") && l.trim_end().ends_with("catalogue")));
}

#[test]
fn one_preset_key_picks_its_preset_and_several_are_named() {
    let home = tempfile::tempdir().unwrap();
    let secret = "gsk-e2e-found-0123456789";
    let o = palaver(home.path(), &["-p", "hi", "--json"], &[("GROQ_API_KEY", secret)]);
    let e = err(&o);
    let note: Vec<&str> = e.lines().filter(|l| l.contains("GROQ_API_KEY is set")).collect();
    assert_eq!(note.len(), 1, "one line says so: {e}");
    assert!(note[0].contains("built-in `groq` preset"), "{e}");
    assert!(!e.contains("demo provider"), "{e}");
    let r = result(&o);
    assert_eq!((r["provider"].as_str(), r["model"].as_str()), (Some("groq"), Some("openai/gpt-oss-120b")), "{r}");
    assert!(!out(&o).contains(secret) && !e.contains(secret));
    // `palaver config` says why.
    let o = palaver(home.path(), &["config"], &[("GROQ_API_KEY", secret)]);
    let s = out(&o);
    assert!(s.contains("groq (built-in preset)") && s.contains("GROQ_API_KEY is set"), "{s}");
    // OPENAI_API_KEY set too: OpenAI, as before.
    let o = palaver(home.path(), &["config"], &[("GROQ_API_KEY", secret), ("OPENAI_API_KEY", "sk-x")]);
    assert!(out(&o).contains("OPENAI_API_KEY is set") && !out(&o).contains("groq (built-in"), "{}", out(&o));
    // Several: named, exit 2, nothing sent.
    let o = palaver(home.path(), &["-p", "hi"], &[("GROQ_API_KEY", secret), ("MISTRAL_API_KEY", "m-key")]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains("GROQ_API_KEY (groq)") && e.contains("MISTRAL_API_KEY (mistral)") && e.contains("--provider"),
        "{e}"
    );
    // --provider chooses.
    let o = palaver(
        home.path(),
        &["--provider", "mistral", "-p", "hi", "--json"],
        &[("GROQ_API_KEY", secret), ("MISTRAL_API_KEY", "m-key")],
    );
    assert_eq!(result(&o)["provider"], "mistral", "{}", err(&o));
    // `providers` marks the set variables, never their values.
    let o = palaver(home.path(), &["providers"], &[("GROQ_API_KEY", secret)]);
    let s = out(&o);
    let line = |name: &str| s.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_owned();
    assert!(line("groq ").contains("GROQ_API_KEY (set)"), "{s}");
    assert!(!line("mistral ").contains("(set)"), "{s}");
    assert!(!s.contains(secret));
    let o = palaver(home.path(), &["providers", "--json"], &[("GROQ_API_KEY", secret)]);
    let rows: Vec<Value> = out(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let set: Vec<&str> =
        rows.iter().filter(|r| r["key_set"] == true).map(|r| r["name"].as_str().unwrap_or_default()).collect();
    assert_eq!(set, ["groq"]);
}

/// A `wl-copy` of our own first in PATH: what palaver copies lands in `clip.txt`.
fn fake_clipboard(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join("wl-copy");
    std::fs::write(&tool, format!("#!/bin/sh\ncat > '{}'\n", dir.join("clip.txt").display())).unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&tool).status().unwrap();
    format!("env WAYLAND_DISPLAY=palaver-test PATH={}:$PATH", bin.display())
}

/// Sends a prompt, copies its request as curl from the inspector, runs the copy with `sh -c`
/// and `env`, and returns the headers the server saw from curl.
fn copied_curl_headers(args: &str, home: &Path, env: &str, run_env: &[(&str, &str)], flash: &str) -> String {
    let (s, _) = server(|_, _| None);
    let clip = tempfile::tempdir().unwrap();
    let wrap = format!("{} {env}", fake_clipboard(clip.path()));
    let t = Tmux::launch(&format!("--base-url {} -m m {args}", s.base_url)).home(home).wrapped_in(&wrap).start();
    t.wait_ready();
    t.chat("hi");
    t.keys(&["F3"]);
    t.wait_for("the inspector", |s| s.contains("Flow inspector"));
    t.keys(&["c"]);
    t.wait_for("the copy's flash", |s| s.contains(flash));
    let copied = std::fs::read_to_string(clip.path().join("clip.txt")).unwrap();
    t.quit();
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(&copied).stdout(Stdio::null());
    for k in PRESET_KEYS {
        sh.env_remove(k);
    }
    let ran = sh.envs(run_env.iter().copied()).output().unwrap();
    assert!(ran.status.success(), "{copied}: {}", String::from_utf8_lossy(&ran.stderr));
    let seen = s.requests();
    assert_eq!(seen.len(), 2, "the chat, then curl: {copied}");
    seen[1].headers.to_ascii_lowercase()
}

#[test]
fn copy_as_curl_reads_the_profiles_own_key_and_runs_as_copied() {
    if !tmux_available() || Command::new("curl").arg("--version").output().is_err() {
        return;
    }
    // A preset's variable.
    let home = tempfile::tempdir().unwrap();
    let h = copied_curl_headers(
        "--provider groq",
        home.path(),
        "GROQ_API_KEY=gsk-e2e-curl",
        &[("GROQ_API_KEY", "gsk-e2e-curl")],
        "(the key is $GROQ_API_KEY)",
    );
    assert!(h.contains("authorization: bearer gsk-e2e-curl"), "{h}");
    // Azure's header, and a key command run as palaver runs it (quotes and all).
    let home = tempfile::tempdir().unwrap();
    let profile = "[providers.az]\nauth = \"api-key\"\napi_key_cmd = \"printf '%s' 'cmd-key-q'\"\n";
    std::fs::write(home.path().join("config.toml"), profile).unwrap();
    let h = copied_curl_headers("--provider az", home.path(), "", &[], "(the key is $(sh -c");
    assert!(h.contains("api-key: cmd-key-q"), "{h}");
    assert!(!h.contains("authorization:"), "{h}");
}

#[test]
fn the_chat_screen_says_which_key_it_found_and_offers_several_in_a_picker() {
    if !tmux_available() {
        return;
    }
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let unset: String = PRESET_KEYS.iter().map(|k| format!("-u {k} ")).collect();
    let env = |keys: &str| format!("env {unset}HTTPS_PROXY=http://127.0.0.1:{dead} {keys}");
    let t = Tmux::launch("").wrapped_in(&env("GROQ_API_KEY=gsk-one")).start();
    t.wait_for("the notice", |s| s.contains("using the built-in `groq` preset: GROQ_API_KEY is set"));
    t.wait_for("groq on the status bar", |s| s.contains("groq · openai/gpt-oss-120b"));
    t.quit();
    let t = Tmux::launch("").wrapped_in(&env("GROQ_API_KEY=gsk-one MISTRAL_API_KEY=m-two")).start();
    t.wait_for("the picker", |s| s.contains("Providers: several keys are set") && s.contains("MISTRAL_API_KEY is set"));
    t.keys(&["Down", "Enter"]);
    let s = t.wait_for("mistral chosen", |s| s.contains("mistral · mistral-small-latest") && !s.contains("Providers:"));
    assert!(s.contains("provider: mistral"), "{s}");
    t.quit();
}

#[test]
fn each_compare_column_has_its_servers_window() {
    let llama = r#"{"data":[{"id":"smollm2","owned_by":"llamacpp","meta":{"n_ctx":4096}}]}"#;
    let vllm = r#"{"data":[{"id":"org/m","owned_by":"vllm","max_model_len":8192}]}"#;
    let (a, _) = server(move |p, _| (p == "/v1/models").then(|| Reply::json(200, llama)));
    let (b, _) = server(move |p, _| (p == "/v1/models").then(|| Reply::json(200, vllm)));
    let home = tempfile::tempdir().unwrap();
    let cfg = format!("[providers.a]\nbase_url = \"{}\"\n[providers.b]\nbase_url = \"{}\"\n", a.base_url, b.base_url);
    std::fs::write(home.path().join("config.toml"), cfg).unwrap();
    let o = palaver(home.path(), &["compare", "-m", "a/smollm2", "-m", "b/org/m", "-p", "hi", "--json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let windows: Vec<(String, Value)> = out(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "result")
        .map(|r| (r["model"].as_str().unwrap_or_default().to_owned(), r["context"]["window"].clone()))
        .collect();
    assert_eq!(windows, [("smollm2".to_owned(), Value::from(4096)), ("org/m".to_owned(), Value::from(8192))]);
}
