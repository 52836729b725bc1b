//! The demo provider's files and batches endpoints through palaver's batch client: upload,
//! the status lifecycle, request counts, output and error files matched by `custom_id`,
//! failing lines, cancel, expiry and validation failures.

#![allow(clippy::disallowed_methods)] // tests read what they wrote

use std::error::Error;
use std::path::Path;
use std::time::{Duration, Instant};

use palaver::api::Api;
use palaver::api::batch::{BatchClient, BatchInfo, endpoint_path, input_line, parse_result_line};
use palaver::api::client::Endpoint;
use palaver::demo::{self, DemoServer};
use serde_json::{Value, json};

type TestResult<T = ()> = Result<T, Box<dyn Error>>;

fn client(server: &DemoServer) -> TestResult<BatchClient> {
    let ep = Endpoint { base_url: server.base_url.clone(), ..Endpoint::default() };
    Ok(BatchClient::new(&ep)?)
}

/// Writes `n` chat lines for `model`; line `i` asks to fail when `fail(i)`.
fn write_input(path: &Path, api: Api, model: &str, n: usize, fail: impl Fn(usize) -> bool) -> TestResult {
    let url = endpoint_path(api, &Endpoint::default());
    let mut text = String::new();
    for i in 0..n {
        let prompt = if fail(i) { format!("prompt {i} [batch-fail]") } else { format!("prompt {i}") };
        let body = match api {
            Api::Chat => json!({"model": model, "messages": [{"role": "user", "content": prompt}]}),
            Api::Responses => json!({"model": model, "input": prompt}),
        };
        text.push_str(&input_line(&format!("cell-{i}"), url, &body));
        text.push('\n');
    }
    std::fs::write(path, text)?;
    Ok(())
}

/// Polls until the batch is terminal; returns every status seen, in order.
async fn until_done(c: &BatchClient, id: &str) -> TestResult<(BatchInfo, Vec<String>)> {
    let start = Instant::now();
    let mut seen: Vec<String> = Vec::new();
    loop {
        let b = c.retrieve(id).await?;
        if seen.last() != Some(&b.status) {
            seen.push(b.status.clone());
        }
        if b.is_terminal() {
            return Ok((b, seen));
        }
        assert!(start.elapsed() < Duration::from_secs(30), "batch {id} stuck: {seen:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every line of a downloaded file, parsed.
async fn lines(c: &BatchClient, file: &str, dir: &Path) -> TestResult<Vec<(String, Result<Value, String>)>> {
    let _ = dir;
    let mut body = c.lines(file).await?;
    let mut text = Vec::new();
    while let Some(line) = body.next().await {
        text.push(String::from_utf8(line?)?);
    }
    Ok(text
        .iter()
        .map(|l| {
            let r = parse_result_line(l).unwrap_or_else(|| panic!("unreadable line {l}"));
            (r.custom_id, r.outcome.map_err(|e| e.message))
        })
        .collect())
}

#[tokio::test]
async fn a_batch_runs_through_its_lifecycle_and_failing_lines_go_to_the_error_file() -> TestResult {
    let server = demo::spawn_local().await?;
    let c = client(&server)?;
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("in.jsonl");
    write_input(&input, Api::Chat, "demo", 40, |i| i % 10 == 3)?;
    let file = c.upload(&input, "in.jsonl").await?;
    let created = c.create(&file, "/v1/chat/completions", json!({"demo_ms": "600"})).await?;
    assert_eq!(created.status, "validating");
    let (done, seen) = until_done(&c, &created.id).await?;
    assert_eq!(seen.first().map(String::as_str), Some("validating"));
    assert!(seen.contains(&"in_progress".to_owned()), "{seen:?}");
    assert_eq!(seen.last().map(String::as_str), Some("completed"));
    assert_eq!((done.total, done.completed, done.failed), (40, 36, 4));
    let out = lines(&c, done.output_file_id.as_deref().ok_or("no output file")?, dir.path()).await?;
    assert_eq!(out.len(), 36);
    for (id, outcome) in &out {
        let body = outcome.as_ref().map_err(|e| format!("{id}: {e}"))?;
        assert_eq!(body["object"], "chat.completion", "{id}");
        assert!(body.pointer("/choices/0/message/content").and_then(Value::as_str).is_some_and(|t| !t.is_empty()));
    }
    let errs = lines(&c, done.error_file_id.as_deref().ok_or("no error file")?, dir.path()).await?;
    let failed: Vec<&str> = errs.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(failed, ["cell-3", "cell-13", "cell-23", "cell-33"]);
    assert!(errs.iter().all(|(_, o)| o.as_ref().is_err_and(|m| m.contains("[batch-fail]"))));
    Ok(())
}

#[tokio::test]
async fn responses_lines_are_answered_as_the_responses_endpoint_would() -> TestResult {
    let server = demo::spawn_local().await?;
    let c = client(&server)?;
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("r.jsonl");
    write_input(&input, Api::Responses, "demo-reasoning", 3, |_| false)?;
    let file = c.upload(&input, "r.jsonl").await?;
    let b = c.create(&file, "/v1/responses", json!({"demo_ms": "100"})).await?;
    let (done, _) = until_done(&c, &b.id).await?;
    assert_eq!(done.status, "completed");
    assert!(done.error_file_id.is_none(), "no line failed, so there is no error file");
    let out = lines(&c, done.output_file_id.as_deref().ok_or("no output")?, dir.path()).await?;
    assert_eq!(out.len(), 3);
    let body = out[0].1.as_ref().map_err(Clone::clone)?;
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    Ok(())
}

#[tokio::test]
async fn a_cancelled_batch_stops_and_an_expiring_one_fails_its_rest() -> TestResult {
    let server = demo::spawn_local().await?;
    let c = client(&server)?;
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("in.jsonl");
    write_input(&input, Api::Chat, "demo", 20, |_| false)?;
    let file = c.upload(&input, "in.jsonl").await?;
    let slow = c.create(&file, "/v1/chat/completions", json!({"demo_ms": "20000"})).await?;
    let cancelling = c.cancel(&slow.id).await?;
    assert_eq!(cancelling.status, "cancelling");
    let (cancelled, _) = until_done(&c, &slow.id).await?;
    assert_eq!(cancelled.status, "cancelled");

    let expiring = c.create(&file, "/v1/chat/completions", json!({"demo_ms": "200", "demo": "expire"})).await?;
    let (expired, _) = until_done(&c, &expiring.id).await?;
    assert_eq!(expired.status, "expired");
    assert_eq!((expired.completed, expired.failed), (10, 10));
    let errs = lines(&c, expired.error_file_id.as_deref().ok_or("no error file")?, dir.path()).await?;
    assert!(errs.iter().all(|(_, o)| o.as_ref().is_err_and(|m| m.contains("batch_expired"))), "{errs:?}");
    Ok(())
}

#[tokio::test]
async fn a_bad_input_file_fails_validation_naming_the_line_and_bad_requests_are_refused() -> TestResult {
    let server = demo::spawn_local().await?;
    let c = client(&server)?;
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("bad.jsonl");
    let good = input_line("a", "/v1/chat/completions", &json!({"model": "demo", "messages": []}));
    std::fs::write(&input, format!("{good}\n{good}\n"))?;
    let file = c.upload(&input, "bad.jsonl").await?;
    let b = c.create(&file, "/v1/chat/completions", json!({"demo_ms": "50"})).await?;
    let (failed, _) = until_done(&c, &b.id).await?;
    assert_eq!(failed.status, "failed");
    assert!(
        failed.errors.as_deref().is_some_and(|e| e.starts_with("line 2:") && e.contains("duplicated")),
        "{failed:?}"
    );

    let wrong = c.create(&file, "/v1/embeddings", json!({})).await.unwrap_err();
    assert_eq!(wrong.status, Some(400));
    assert!(wrong.message.contains("endpoint"), "{}", wrong.message);
    let missing = c.retrieve("batch_nope").await.unwrap_err();
    assert_eq!(missing.status, Some(404));
    assert_eq!(c.lines("file-nope").await.unwrap_err().status, Some(404));
    Ok(())
}

#[tokio::test]
async fn batches_list_newest_first_and_files_are_retrievable() -> TestResult {
    let server = demo::spawn_local().await?;
    let c = client(&server)?;
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("in.jsonl");
    write_input(&input, Api::Chat, "demo", 2, |_| false)?;
    let file = c.upload(&input, "in.jsonl").await?;
    let first = c.create(&file, "/v1/chat/completions", json!({"demo_ms": "50"})).await?;
    let second = c.create(&file, "/v1/chat/completions", json!({"demo_ms": "50"})).await?;
    let http = reqwest::Client::new();
    let list: Value = http.get(format!("{}/batches?limit=1", server.base_url)).send().await?.json().await?;
    assert_eq!(list["data"][0]["id"], json!(second.id));
    assert_eq!(list["has_more"], true);
    let next: Value = http.get(format!("{}/batches?after={}", server.base_url, second.id)).send().await?.json().await?;
    assert_eq!(next["data"][0]["id"], json!(first.id));
    let meta: Value = http.get(format!("{}/files/{file}", server.base_url)).send().await?.json().await?;
    assert_eq!(meta["purpose"], "batch");
    assert_eq!(meta["filename"], "in.jsonl");
    assert_eq!(meta["bytes"], json!(std::fs::metadata(&input)?.len()));
    Ok(())
}
