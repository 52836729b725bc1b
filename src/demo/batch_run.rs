//! One demo batch's life: validating (every line read and checked) → in_progress (each line
//! answered as its endpoint would, the answers written to an output file and the failures to an
//! error file, both JSON Lines) → finalizing → completed; or failed (a bad input file),
//! cancelled (asked to), expired (metadata `{"demo": "expire"}`: half the lines, then the rest
//! expire). It takes `PALAVER_DEMO_BATCH_MS` (default 2000) from creation to completion, so a
//! client's polling and a restart in the middle can be tried (metadata `demo_ms` sets it per batch). Lines are streamed from disk and
//! to disk: memory does not grow with the batch.

use std::collections::HashSet;
use std::io::{BufWriter, Write};

/// One line of an uploaded input file (one request), as the demo reads it.
const LINE: crate::sys::read::Budget = crate::sys::read::Budget::fixed("batch_line_bytes", 64 * 1024 * 1024);

/// The lines of an input file, each within [`LINE`], as text.
fn input_lines(file: std::fs::File) -> impl Iterator<Item = std::io::Result<String>> {
    crate::sys::read::lines(file, LINE).map(|l| {
        let bytes = l.map_err(|e| std::io::Error::other(e.about("a line of the input file")))?;
        String::from_utf8(bytes).map_err(|_| std::io::Error::other("a line of the input file is not UTF-8"))
    })
}
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::files::FileMeta;
use super::request::Api;
use super::{DemoState, now};

/// A line whose request holds this text fails into the error file (tests ask for failures so).
pub const FAIL_MARKER: &str = "[batch-fail]";
/// Most lines a batch takes (OpenAI's limit).
const MAX_LINES: u64 = 50_000;

/// How long a batch takes from creation to completion: its metadata's `demo_ms`, else
/// `PALAVER_DEMO_BATCH_MS`, else two seconds.
fn duration(metadata: &Value) -> Duration {
    let from_metadata = metadata.get("demo_ms").and_then(Value::as_str).map(str::to_owned);
    let ms = from_metadata
        .or_else(|| std::env::var("PALAVER_DEMO_BATCH_MS").ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(2000);
    Duration::from_millis(ms)
}

/// Why the answering stopped before the last line.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    Done,
    Cancelled,
    Expired,
}

pub async fn run(state: Arc<DemoState>, id: String) {
    let Some(batch) = state.batches.get(&id) else { return };
    let whole = duration(&batch.metadata);
    tokio::time::sleep(whole / 5).await;
    let Some(input) = state.files.path(&batch.input_file_id) else { return };
    let endpoint = batch.endpoint.clone();
    let checked = tokio::task::spawn_blocking(move || validate(&input, &endpoint)).await;
    let total = match checked {
        Ok(Ok(total)) => total,
        Ok(Err(errors)) => {
            state.batches.update(&id, |b| b.errors = Some(errors));
            return state.batches.set_status(&id, "failed");
        }
        Err(_) => return state.batches.set_status(&id, "failed"),
    };
    if state.batches.get(&id).is_some_and(|b| b.cancel) {
        return state.batches.set_status(&id, "cancelled");
    }
    state.batches.update(&id, |b| b.total = total);
    state.batches.set_status(&id, "in_progress");
    let (st, bid) = (state.clone(), id.clone());
    let stop = tokio::task::spawn_blocking(move || answer_all(&st, &bid, whole * 3 / 5)).await;
    let stop = match stop {
        Ok(Ok(stop)) => stop,
        _ => return state.batches.set_status(&id, "failed"),
    };
    if stop == Stop::Cancelled {
        return state.batches.set_status(&id, "cancelled");
    }
    state.batches.set_status(&id, "finalizing");
    tokio::time::sleep(whole / 5).await;
    state.batches.set_status(&id, if stop == Stop::Expired { "expired" } else { "completed" });
}

/// Reads every line: JSON with a unique `custom_id`, `method` POST, the batch's `url`, a `body`
/// naming a model. Returns the count, or OpenAI's `errors` object.
fn validate(input: &std::path::Path, endpoint: &str) -> Result<u64, Value> {
    let fail = |line: u64, code: &str, message: String, param: Option<&str>| json!({ "object": "list", "data": [{ "code": code, "message": message, "param": param, "line": line }] });
    let file = std::fs::File::open(input).map_err(|e| fail(0, "file_not_found", e.to_string(), None))?;
    let mut ids = HashSet::new();
    let mut n = 0;
    for line in input_lines(file) {
        let line = line.map_err(|e| fail(n + 1, "invalid_json_line", e.to_string(), None))?;
        if line.trim().is_empty() {
            continue;
        }
        n += 1;
        let v: Value = serde_json::from_str(&line)
            .map_err(|_| fail(n, "invalid_json_line", "This line is not parseable as valid JSON.".into(), None))?;
        let Some(custom_id) = v.get("custom_id").and_then(Value::as_str) else {
            return Err(fail(n, "missing_required_parameter", "Missing custom_id".into(), Some("custom_id")));
        };
        if !ids.insert(custom_id.to_owned()) {
            return Err(fail(n, "duplicate_custom_id", format!("The custom_id {custom_id} is duplicated."), None));
        }
        if v.get("method").and_then(Value::as_str) != Some("POST") {
            return Err(fail(n, "invalid_method", "The method must be POST.".into(), Some("method")));
        }
        if v.get("url").and_then(Value::as_str) != Some(endpoint) {
            let message = format!("The url does not match the batch's endpoint {endpoint}.");
            return Err(fail(n, "invalid_url", message, Some("url")));
        }
        if v.pointer("/body/model").and_then(Value::as_str).is_none() {
            return Err(fail(n, "missing_required_parameter", "The body names no model.".into(), Some("body.model")));
        }
    }
    if n == 0 {
        return Err(fail(0, "empty_file", "The input file has no requests.".into(), None));
    }
    if n > MAX_LINES {
        return Err(fail(n, "too_many_requests", format!("A batch takes at most {MAX_LINES} requests."), None));
    }
    Ok(n)
}

/// The output and error files being written.
struct Outputs {
    ok: (String, std::path::PathBuf, BufWriter<std::fs::File>),
    err: (String, std::path::PathBuf, BufWriter<std::fs::File>),
    ok_bytes: u64,
    err_bytes: u64,
}

impl Outputs {
    fn open(state: &DemoState) -> std::io::Result<Outputs> {
        let open = || -> std::io::Result<(String, std::path::PathBuf, BufWriter<std::fs::File>)> {
            let (id, path) = state.files.reserve().map_err(std::io::Error::other)?;
            let file = BufWriter::new(std::fs::File::create(&path)?);
            Ok((id, path, file))
        };
        Ok(Outputs { ok: open()?, err: open()?, ok_bytes: 0, err_bytes: 0 })
    }

    fn write(&mut self, ok: bool, line: &Value) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        let (out, count) =
            if ok { (&mut self.ok.2, &mut self.ok_bytes) } else { (&mut self.err.2, &mut self.err_bytes) };
        out.write_all(&bytes)?;
        *count += bytes.len() as u64;
        Ok(())
    }

    /// Registers the files that got lines, as OpenAI names only files it wrote.
    fn close(mut self, state: &DemoState, batch: &str) -> std::io::Result<()> {
        self.ok.2.flush()?;
        self.err.2.flush()?;
        let register = |(id, path, _): (String, std::path::PathBuf, _), bytes: u64, suffix: &str| {
            if bytes == 0 {
                let _ = std::fs::remove_file(path);
                return None;
            }
            let filename = format!("{batch}_{suffix}.jsonl");
            let purpose = "batch_output".to_owned();
            state.files.add(FileMeta { id: id.clone(), filename, purpose, bytes, created_at: now() });
            Some(id)
        };
        let ok = register(self.ok, self.ok_bytes, "output");
        let err = register(self.err, self.err_bytes, "error");
        state.batches.update(batch, |b| {
            b.output_file_id = ok;
            b.error_file_id = err;
        });
        Ok(())
    }
}

/// Answers every line, spreading the work over `window` so progress can be watched.
fn answer_all(state: &DemoState, id: &str, window: Duration) -> std::io::Result<Stop> {
    let batch = state.batches.get(id).ok_or_else(|| std::io::Error::other("the batch vanished"))?;
    let input = state.files.path(&batch.input_file_id).ok_or_else(|| std::io::Error::other("no input"))?;
    let expire = batch.metadata.get("demo").and_then(Value::as_str) == Some("expire");
    let mut out = Outputs::open(state)?;
    let start = Instant::now();
    let total = batch.total.max(1);
    let mut stop = Stop::Done;
    let mut done = 0u64;
    for line in input_lines(std::fs::File::open(input)?) {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        if state.batches.get(id).is_some_and(|b| b.cancel) {
            stop = Stop::Cancelled;
            break;
        }
        let expired = expire && done * 2 >= total;
        let (ok, reply) = answer_line(state, &line, expired);
        out.write(ok, &reply)?;
        done += 1;
        state.batches.update(id, |b| if ok { b.completed += 1 } else { b.failed += 1 });
        if expired {
            stop = Stop::Expired;
            continue;
        }
        // Paced so the batch takes about `window`: a client sees it in progress.
        let due = window.mul_f64(done as f64 / total as f64);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    out.close(state, id)?;
    Ok(stop)
}

/// One line's output-file line (true) or error-file line (false).
fn answer_line(state: &DemoState, line: &str, expired: bool) -> (bool, Value) {
    let Ok(v) = serde_json::from_str::<Value>(line) else { return (false, json!({})) };
    let custom_id = v.get("custom_id").cloned().unwrap_or(Value::Null);
    let n = state.batch_lines.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    let line_id = format!("batch_req_demo{n:08}");
    if expired {
        let error = json!({ "code": "batch_expired", "message": "This request could not be executed before the completion window expired." });
        return (false, json!({ "id": line_id, "custom_id": custom_id, "response": null, "error": error }));
    }
    let api = if v.get("url").and_then(Value::as_str).is_some_and(|u| u.ends_with("/responses")) {
        Api::Responses
    } else {
        Api::Chat
    };
    let body = v.get("body").cloned().unwrap_or(Value::Null);
    let result = if line.contains(FAIL_MARKER) {
        let message = format!("The demo fails every batch line holding {FAIL_MARKER}, as asked.");
        Err((400, super::errors::body(&message, "invalid_request_error", None, Some("demo_batch_fail"))))
    } else {
        serde_json::to_vec(&body)
            .map_err(|e| (400, json!({ "error": { "message": e.to_string() } })))
            .and_then(|bytes| super::answer(state, api, &bytes))
    };
    let (ok, status, body) = match result {
        Ok(body) => (true, 200, body),
        Err((status, body)) => (false, status, body),
    };
    let response = json!({ "status_code": status, "request_id": format!("req_demo_b{n}"), "body": body });
    (ok, json!({ "id": line_id, "custom_id": custom_id, "response": response, "error": null }))
}
