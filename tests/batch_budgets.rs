//! `compare --batch` against a scripted batch API that answers too much (issue 39 §1): a batch
//! object past `batch_body_bytes` stops the polling naming it; a result line past
//! `batch_line_bytes` is refused (its cell stored failed naming the limit) while the lines
//! around it are stored; a result file past `batch_file_bytes` ends the reading there. The
//! input file is the only temporary file, gone afterwards, and one a killed run left is swept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use scripted::{Reply, Seen, Server};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn answer(id: &str, text: &str) -> String {
    json!({"custom_id": id, "response": {"status_code": 200, "body": {"object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}}}, "error": null})
    .to_string()
}

/// A batch API whose batch object is `batch_pad` bytes longer than it needs, and whose output
/// file is `output`.
fn api(batch_pad: usize, output: String) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |seen: &Seen| {
        let line = &seen.request_line;
        // Only the polls are padded: the batch is created.
        let pad = if line.starts_with("GET") { batch_pad } else { 0 };
        let batch = json!({"id": "batch_1", "object": "batch", "status": "completed", "output_file_id": "file-out",
            "request_counts": {"total": 3, "completed": 3, "failed": 0}, "pad": "x".repeat(pad)})
        .to_string();
        if line.starts_with("POST /v1/files") {
            Reply::json(200, r#"{"id":"file-in","object":"file","purpose":"batch"}"#)
        } else if line.starts_with("POST /v1/batches") || line.starts_with("GET /v1/batches/batch_1") {
            Reply::json(200, &batch)
        } else if line.starts_with("GET /v1/files/file-out/content") {
            Reply::json(200, &output)
        } else {
            Reply::json(404, r#"{"error":{"message":"no such route"}}"#)
        }
    }
}

/// Runs a three-prompt batch against `server` with `limits`, temporary files in `tmp`.
fn run(server: &Server, limits: &str, home: &Path, tmp: &Path) -> Output {
    let config = format!("[providers.b]\nbase_url = \"{}\"\nbatch = true\nlimits = {{ {limits} }}\n", server.base_url);
    std::fs::write(home.join("config.toml"), config).unwrap();
    std::fs::write(home.join("set.txt"), "one\ntwo\nthree\n").unwrap();
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--provider", "b", "compare", "--prompts", "set.txt", "-m", "m1", "--batch"])
        .env("PALAVER_HOME", home)
        .env("OPENAI_API_KEY", "sk-test-batch")
        .env_remove("OPENAI_BASE_URL")
        .env("TMPDIR", tmp)
        .current_dir(home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(30), "the run ends");
    out
}

/// Each stored cell: prompt index, ok, error message.
fn cells(home: &Path) -> Vec<(i64, bool, Option<String>)> {
    let db = rusqlite::Connection::open(home.join("palaver.sqlite3")).unwrap();
    let mut st =
        db.prepare("SELECT prompt_idx, ok, json_extract(error, '$.message') FROM compare_cells ORDER BY 1").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
}

#[test]
fn a_line_past_batch_line_bytes_is_refused_and_the_others_are_stored_and_no_temp_file_stays() {
    let long = answer("p1-m0", &"y".repeat(5000));
    let output = format!("{}\n{long}\n{}\n", answer("p0-m0", "first"), answer("p2-m0", "third"));
    let server = Server::start_fn(api(0, output));
    let (home, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // An input file a run killed with kill -9 left behind (no process has this id).
    let stale = tmp.path().join("palaver-batch-2147483632-run-m0.jsonl");
    std::fs::write(&stale, "{}\n").unwrap();
    let out = run(&server, "batch_line_bytes = 1000", home.path(), tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("unknown key"), "the batch limits are known keys: {err}");
    assert!(err.contains("batch_line_bytes = 1000") && err.contains("limits = { batch_line_bytes"), "{err}");
    let cells = cells(home.path());
    assert_eq!(cells.len(), 3, "{cells:?}");
    assert!(cells[0].1 && cells[2].1, "the lines around the long one are stored: {cells:?}");
    assert!(!cells[1].1 && cells[1].2.as_deref().unwrap_or("").contains("batch_line_bytes"), "{cells:?}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "no temporary file stays, the stale one swept: {left:?}");
}

#[test]
fn a_file_past_batch_file_bytes_ends_the_reading_there_naming_it() {
    let output = format!("{}\n{}\n{}\n", answer("p0-m0", "first"), answer("p1-m0", "second"), "z".repeat(4000));
    let server = Server::start_fn(api(0, output));
    let (home, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = run(&server, "batch_file_bytes = 2000", home.path(), tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("batch_file_bytes = 2000"), "{err}");
    let cells = cells(home.path());
    assert_eq!(cells.len(), 3, "{cells:?}");
    assert!(cells[0].1, "what came before the limit is stored: {cells:?}");
    assert!(cells.iter().any(|c| !c.1 && c.2.as_deref().unwrap_or("").contains("batch_file_bytes")), "{cells:?}");
}

#[test]
fn a_batch_object_past_batch_body_bytes_stops_the_polling_naming_it() {
    let server = Server::start_fn(api(10_000, String::new()));
    let (home, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = run(&server, "batch_body_bytes = 4000", home.path(), tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("batch_body_bytes = 4000") && err.contains("kept none of it"), "{err}");
    assert!(cells(home.path()).is_empty(), "nothing was stored from a refused answer");
    let polls = server.requests().iter().filter(|s| s.request_line.starts_with("GET /v1/batches")).count();
    assert!(polls <= 1, "a refused answer is not asked for again and again: {polls}");
}
