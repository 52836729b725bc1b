//! `compare --prompts … --batch` end to end through the binary against `palaver serve-demo`'s
//! files and batches endpoints (a profile with `batch = true` points at it): every cell stored
//! once with the batch discount in its cost; lines that fail stored as failed cells with the
//! provider's message; a kill -9 during polling and a `--resume` that polls the same batches
//! (the server sees no second batch) and finishes; Ctrl+C leaves the batches running; a
//! provider without a batch API is exit 2 before anything is sent; Azure's variant (api-key,
//! api-version, bare endpoint paths, deployment names) against a scripted server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use scripted::{Reply, Seen, Server};
use serde_json::{Value, json};
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `palaver serve-demo` with batches taking `batch_ms`, killed when dropped.
struct Demo {
    child: Child,
    url: String,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_demo(batch_ms: u64) -> Demo {
    let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["serve-demo", "--addr", "127.0.0.1:0"])
        .env("PALAVER_DEMO_BATCH_MS", batch_ms.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    Demo { child, url: line.trim().to_owned() }
}

/// A home whose config has `local` (batch API, priced demo models) and `plain` (none), both
/// at the demo server, and a prompt set of `n` lines where every 10th asks to fail.
fn home(demo: &Demo, n: usize) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        "[providers.local]\nbase_url = \"{0}\"\nbatch = true\n\n[providers.plain]\nbase_url = \"{0}\"\n\n\
         [models.demo]\nprice = {{ input = 1.0, output = 2.0 }}\n",
        demo.url
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let set: String = (0..n)
        .map(|i| if i % 10 == 9 { format!("question {i} [batch-fail]\n") } else { format!("question {i}\n") })
        .collect();
    std::fs::write(home.path().join("set.txt"), set).unwrap();
    home
}

fn palaver(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_palaver"));
    c.args(args)
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .current_dir(home)
        .stdin(Stdio::null());
    c
}

fn run(home: &Path, args: &[&str]) -> Output {
    palaver(home, args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A stored cell: prompt index, model index, ok, cost, error message.
type Cell = (i64, i64, bool, Option<f64>, Option<String>);

/// The run's stored cells, one row each.
fn cells(home: &Path) -> Vec<Cell> {
    let db = rusqlite::Connection::open(home.join("palaver.sqlite3")).unwrap();
    let mut st = db
        .prepare(
            "SELECT prompt_idx, model_idx, ok, cost, json_extract(error, '$.message') FROM compare_cells ORDER BY 1, 2",
        )
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// `GET url` as JSON.
fn get(url: &str) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async { reqwest::get(url).await.unwrap().json().await.unwrap() })
}

fn batches_created(demo: &Demo) -> usize {
    get(&format!("{}/batches?limit=100", demo.url))["data"].as_array().unwrap().len()
}

const SET_ARGS: [&str; 8] = ["--provider", "local", "compare", "--prompts", "set.txt", "-m", "demo", "-m"];

#[test]
fn a_batch_run_stores_every_cell_once_at_the_discount_and_failed_lines_as_failed_cells() {
    let demo = serve_demo(1500);
    let home = home(&demo, 30);
    let mut args = SET_ARGS.to_vec();
    args.extend(["demo-reasoning", "--batch"]);
    let out = run(home.path(), &args);
    assert_eq!(out.status.code(), Some(1), "failed lines make exit 1\n{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("costs at the batch price (batch −50%)"), "{stdout}");
    assert!(text(&out.stderr).contains("in_progress"), "{}", text(&out.stderr));
    let cells = cells(home.path());
    assert_eq!(cells.len(), 60, "30 prompts × 2 models, each stored once");
    for (p, m, ok, cost, error) in &cells {
        let fails = p % 10 == 9;
        assert_eq!(*ok, !fails, "cell {p}/{m}");
        if fails {
            assert!(error.as_deref().is_some_and(|e| e.contains("[batch-fail]")), "{error:?}");
        } else if *m == 0 {
            // The demo model is priced: every answered cell has a cost.
            assert!(cost.is_some_and(|c| c > 0.0), "cell {p}/{m}: {cost:?}");
        }
    }
    // The cost is half the listed price: the summary's total equals half of what the stored
    // usage costs at the configured price.
    let db = rusqlite::Connection::open(home.path().join("palaver.sqlite3")).unwrap();
    let (cost, listed): (f64, f64) = db
        .query_row(
            "SELECT sum(cost), sum(prompt_tokens * 1.0 + completion_tokens * 2.0) / 1e6 FROM compare_cells
             WHERE model_idx = 0 AND ok = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!((cost - listed / 2.0).abs() < 1e-9, "{cost} vs {listed}");
    assert_eq!(batches_created(&demo), 2, "one batch per model");
    let runs = text(&run(home.path(), &["compare", "runs"]).stdout);
    assert!(runs.contains("batch: completed 30/30, 3 failed, completed 30/30, 3 failed"), "{runs}");
}

#[test]
fn a_run_killed_during_polling_resumes_its_batches_and_stores_every_cell_once() {
    let demo = serve_demo(6000);
    let home = home(&demo, 40);
    let mut args = SET_ARGS.to_vec();
    args.extend(["demo-reasoning", "--batch"]);
    let mut child = palaver(home.path(), &args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // Wait until both batches exist at the server (and so, stored: ids are stored on creation).
    let start = Instant::now();
    while batches_created(&demo) < 2 {
        assert!(start.elapsed() < Duration::from_secs(30), "the batches never came");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL, while polling
    child.wait().unwrap();
    assert!(cells(home.path()).is_empty(), "nothing was gathered before the kill");
    let runs = text(&run(home.path(), &["compare", "runs"]).stdout);
    assert!(runs.contains("batch: "), "{runs}");
    let id = runs.split_whitespace().next().unwrap().to_owned();

    let out = run(home.path(), &["--provider", "local", "compare", "--resume", &id]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(batches_created(&demo), 2, "the resumed run polled the same batches, sending none again");
    let cells = cells(home.path());
    assert_eq!(cells.len(), 80, "every cell stored exactly once");
    assert_eq!(cells.iter().filter(|c| !c.2).count(), 8);
}

#[test]
fn ctrl_c_during_polling_leaves_the_batches_running_and_says_how_to_resume() {
    let demo = serve_demo(20_000);
    let home = home(&demo, 5);
    let mut args = SET_ARGS.to_vec();
    args.extend(["demo-reasoning", "--batch"]);
    let child = palaver(home.path(), &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while batches_created(&demo) < 2 {
        assert!(start.elapsed() < Duration::from_secs(30), "the batches never came");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("the batches keep running at the provider") && stderr.contains("compare --resume run-"),
        "{stderr}"
    );
    let list = get(&format!("{}/batches", demo.url));
    for b in list["data"].as_array().unwrap() {
        assert!(["validating", "in_progress"].contains(&b["status"].as_str().unwrap()), "{b}");
    }
}

#[test]
fn a_provider_without_a_batch_api_is_exit_2_naming_it_before_anything_is_sent() {
    let demo = serve_demo(500);
    let home = home(&demo, 3);
    let out = run(home.path(), &["compare", "--prompts", "set.txt", "-m", "local/demo", "-m", "plain/demo", "--batch"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no batch API for demo (plain)"), "{stderr}");
    assert!(!stderr.contains("(local)"), "{stderr}");
    assert_eq!(batches_created(&demo), 0);
    assert!(text(&run(home.path(), &["compare", "runs"]).stdout).trim().is_empty(), "no run was stored");
}

#[test]
fn a_batch_run_checks_cost_and_judges_and_refuses_a_latency_bound() {
    let demo = serve_demo(300);
    let home = home(&demo, 1);
    let set = |expect: &str| {
        std::fs::write(home.path().join("c.jsonl"), format!("{{\"prompt\":\"hi\",\"expect\":{expect}}}\n")).unwrap();
    };
    let args = ["compare", "--prompts", "c.jsonl", "-m", "local/demo", "--batch", "--json"];
    // A batch line has no duration: a latency bound is refused before anything is sent.
    set(r#"{"max_latency_ms":5000}"#);
    let out = run(home.path(), &args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("line 1: a `max_latency_ms` check is not run on --batch runs"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(batches_created(&demo), 0);
    // `max_cost` is checked on the batch price, and the judge grades the gathered answer.
    set(r#"[{"max_cost":1.0},{"judge":"polite","model":"local/demo","threshold":0.0}]"#);
    let out = run(home.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id =
        text(&out.stdout).lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).next_back().unwrap()["run"]
            .as_str()
            .unwrap()
            .to_owned();
    let shown = text(&run(home.path(), &["compare", "show", &id, "--json"]).stdout);
    let cell: Value =
        shown.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|l| l["type"] == "cell").unwrap();
    let kinds: Vec<(&str, bool)> = cell["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["kind"].as_str().unwrap(), c["pass"].as_bool().unwrap()))
        .collect();
    assert_eq!(kinds, [("max_cost", true), ("judge", true)], "{cell}");
    let judge = cell["checks"][1].clone();
    assert!(judge["detail"].as_str().unwrap().starts_with("score "), "{judge}");
}

#[test]
fn the_embedded_demo_provider_has_a_batch_api_too() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("set.txt"), "one\ntwo\n").unwrap();
    let out = palaver(home.path(), &["--demo", "compare", "--prompts", "set.txt", "-m", "demo", "--batch", "--json"])
        .env("PALAVER_DEMO_BATCH_MS", "300")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(lines.iter().filter(|l| l["type"] == "cell" && l["ok"] == true).count(), 2, "{lines:?}");
}

/// An Azure-like batch API: files and batches under the v1 base URL, every request answered
/// only with the key in `api-key` and the `api-version` query.
fn azure(seen: &Seen) -> Reply {
    let line = &seen.request_line;
    if !seen.headers.to_ascii_lowercase().contains("api-key: az-secret") || !line.contains("api-version=2024-10-21") {
        return Reply::json(401, r#"{"error":{"message":"no key or no api-version"}}"#);
    }
    let batch = |status: &str| {
        json!({"id": "batch_az", "object": "batch", "status": status, "output_file_id": "file-out",
            "request_counts": {"total": 2, "completed": 2, "failed": 0}})
        .to_string()
    };
    let answer = |id: &str, text: &str| {
        json!({"custom_id": id, "response": {"status_code": 200, "body": {"object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}}}, "error": null})
        .to_string()
    };
    if line.starts_with("POST /v1/files") {
        Reply::json(200, r#"{"id":"file-in","object":"file","purpose":"batch"}"#)
    } else if line.starts_with("POST /v1/batches") {
        Reply::json(200, &batch("validating"))
    } else if line.starts_with("GET /v1/batches/batch_az") {
        Reply::json(200, &batch("completed"))
    } else if line.starts_with("GET /v1/files/file-out/content") {
        Reply::json(200, &format!("{}\n{}\n", answer("p1-m0", "second"), answer("p0-m0", "first")))
    } else {
        Reply::json(404, r#"{"error":{"message":"no such route"}}"#)
    }
}

#[test]
fn azures_batch_api_gets_its_key_header_api_version_bare_paths_and_deployment_names() {
    let server = Server::start_fn(azure);
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        "[providers.az]\nbase_url = \"{}\"\nauth = \"api-key\"\napi_key_env = \"AZ_KEY\"\n\
         query = {{ \"api-version\" = \"2024-10-21\" }}\nbatch = true\n",
        server.base_url
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    std::fs::write(home.path().join("set.txt"), "one\ntwo\n").unwrap();
    let out =
        palaver(home.path(), &["--provider", "az", "compare", "--prompts", "set.txt", "-m", "prod-chat", "--batch"])
            .env("AZ_KEY", "az-secret")
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let seen = server.requests();
    let upload = seen.iter().find(|s| s.request_line.starts_with("POST /v1/files")).unwrap();
    assert!(upload.headers.to_ascii_lowercase().contains("multipart/form-data; boundary="), "{}", upload.headers);
    let lines: Vec<Value> = upload.body.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(lines.len(), 2, "{}", upload.body);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["custom_id"], format!("p{i}-m0"));
        assert_eq!(l["url"], "/chat/completions", "Azure's lines name the bare path");
        assert_eq!(l["body"]["model"], "prod-chat", "the deployment is the model");
    }
    let create = seen.iter().find(|s| s.request_line.starts_with("POST /v1/batches")).unwrap();
    let create: Value = serde_json::from_str(&create.body).unwrap();
    assert_eq!(
        (create["endpoint"].as_str(), create["completion_window"].as_str()),
        (Some("/chat/completions"), Some("24h"))
    );
    let db = rusqlite::Connection::open(home.path().join("palaver.sqlite3")).unwrap();
    let texts: Vec<String> = db
        .prepare("SELECT text FROM compare_cells ORDER BY prompt_idx")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(texts, ["first", "second"], "lines are matched by custom_id, not by order");
}
