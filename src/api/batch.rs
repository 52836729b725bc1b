//! The providers' batch APIs (OpenAI's `/v1/files` and `/v1/batches`, and Azure's variant):
//! upload a JSON Lines file streamed from disk, create a batch, poll it with backoff, read its
//! output and error files a line at a time as they stream (never written to disk). Nothing here
//! is held whole: the JSON answers are within `batch_body_bytes`, a result line within
//! `batch_line_bytes` (a longer one is refused and the next ones read), a result file within
//! `batch_file_bytes`. What the lines mean is the caller's.

use super::Api;
use super::client::{AuthStyle, Endpoint};
use super::wire::error_from_response;
use crate::sys::read::{self, BodyLines, Budget};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// A batch request that failed: the HTTP status when there was one, and what was wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct BatchError {
    pub status: Option<u16>,
    pub message: String,
    /// A budget of palaver's was reached (`batch_body_bytes`…): asking again will not help.
    pub limit: bool,
}

impl BatchError {
    fn local(message: String) -> Self {
        Self { status: None, message, limit: false }
    }

    /// An error the provider (or the answer) gave, with its status.
    #[must_use]
    pub fn http(status: Option<u16>, message: String) -> Self {
        Self { status, message, limit: false }
    }
}

/// A batch's state as the provider reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchInfo {
    pub id: String,
    pub status: String,
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    /// The provider's `errors` (a batch that failed validation), as one line.
    pub errors: Option<String>,
}

impl BatchInfo {
    #[must_use]
    pub fn from_json(v: &Value) -> Self {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let count = |k: &str| v.pointer(&format!("/request_counts/{k}")).and_then(Value::as_u64).unwrap_or(0);
        let errors = v.pointer("/errors/data").and_then(Value::as_array).filter(|d| !d.is_empty()).map(|data| {
            data.iter()
                .map(|e| {
                    let message = e.get("message").and_then(Value::as_str).unwrap_or("no message");
                    match e.get("line").and_then(Value::as_u64) {
                        Some(line) => format!("line {line}: {message}"),
                        None => message.to_owned(),
                    }
                })
                .collect::<Vec<_>>()
                .join("; ")
        });
        Self {
            id: s("id").unwrap_or_default(),
            status: s("status").unwrap_or_default(),
            total: count("total"),
            completed: count("completed"),
            failed: count("failed"),
            output_file_id: s("output_file_id").filter(|f| !f.is_empty()),
            error_file_id: s("error_file_id").filter(|f| !f.is_empty()),
            errors,
        }
    }

    /// The batch will not change any more (its files, if any, can be fetched).
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "expired" | "cancelled")
    }

    /// `in_progress 1200/10000`, as `compare runs` shows it.
    #[must_use]
    pub fn progress(&self) -> String {
        format!("{} {}/{}", self.status, self.completed + self.failed, self.total)
    }
}

/// The URL a batch line and the batch itself name for `api`: OpenAI's `/v1/…`; Azure's
/// (an `api-key` endpoint) bare.
#[must_use]
pub fn endpoint_path(api: Api, ep: &Endpoint) -> &'static str {
    match (api, ep.auth == AuthStyle::ApiKeyHeader) {
        (Api::Chat, false) => "/v1/chat/completions",
        (Api::Responses, false) => "/v1/responses",
        (Api::Chat, true) => "/chat/completions",
        (Api::Responses, true) => "/responses",
    }
}

/// One line of a batch input file (without its newline).
#[must_use]
pub fn input_line(custom_id: &str, url: &str, body: &Value) -> String {
    json!({ "custom_id": custom_id, "method": "POST", "url": url, "body": body }).to_string()
}

/// One line of an output or error file, read: the request's id and how it went.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultLine {
    pub custom_id: String,
    pub outcome: Result<Value, BatchError>,
}

/// Reads an output or error line: a 2xx `response.body` is the answer; anything else an
/// error with the provider's message (`error.message`, or the response body's error).
#[must_use]
pub fn parse_result_line(line: &str) -> Option<ResultLine> {
    let v: Value = serde_json::from_str(line).ok()?;
    let custom_id = v.get("custom_id")?.as_str()?.to_owned();
    let status = v.pointer("/response/status_code").and_then(Value::as_u64).map(|s| s as u16);
    let body = v.pointer("/response/body").cloned().unwrap_or(Value::Null);
    let outcome = match v.get("error").filter(|e| !e.is_null()) {
        Some(err) => {
            let message = err.get("message").and_then(Value::as_str).unwrap_or("the batch line failed");
            let code = err.get("code").and_then(Value::as_str).map(|c| format!(" ({c})")).unwrap_or_default();
            Err(BatchError::http(status, format!("{message}{code}")))
        }
        None if status.is_some_and(|s| (200..300).contains(&s)) => Ok(body),
        None => Err(BatchError::http(status, super::wire::error_from_value(status, &body).message)),
    };
    Some(ResultLine { custom_id, outcome })
}

/// Poll intervals: from `first`, growing by half each time, up to `max`.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    #[must_use]
    pub fn new(first: Duration, max: Duration) -> Self {
        Self { next: first, max }
    }

    /// The wait before the next poll.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 3 / 2).min(self.max);
        wait
    }
}

/// A client of one endpoint's batch API.
#[derive(Debug, Clone)]
pub struct BatchClient {
    http: reqwest::Client,
    ep: Endpoint,
}

impl BatchClient {
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(ep: &Endpoint) -> Result<Self, BatchError> {
        let http = super::client::endpoint_client(ep).map_err(|e| BatchError::local(e.to_string()))?;
        Ok(Self { http, ep: ep.clone() })
    }

    /// Uploads `path` (purpose `batch`) as a multipart body streamed from the file; returns
    /// the file id.
    ///
    /// # Errors
    /// The file cannot be read, or the provider refuses it.
    pub async fn upload(&self, path: &Path, filename: &str) -> Result<String, BatchError> {
        let file =
            tokio::fs::File::open(path).await.map_err(|e| BatchError::local(format!("{}: {e}", path.display())))?;
        let size = file.metadata().await.map(|m| m.len()).unwrap_or(0);
        let boundary = format!("palaver-batch-{:016x}", std::process::id() as u64 ^ size.rotate_left(17));
        let name = filename.replace(['"', '\r', '\n'], "_");
        let head = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--{boundary}\r\n\
             Content-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/jsonl\r\n\r\n"
        );
        let tail = format!("\r\n--{boundary}--\r\n");
        let length = head.len() as u64 + size + tail.len() as u64;
        let chunks = futures_util::stream::unfold(file, |mut file| async move {
            let mut buf = vec![0u8; 64 * 1024];
            match file.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok::<bytes::Bytes, std::io::Error>(bytes::Bytes::from(buf)), file))
                }
                Err(e) => Some((Err(e), file)),
            }
        });
        let body = futures_util::stream::once(async move { Ok(bytes::Bytes::from(head)) })
            .chain(chunks)
            .chain(futures_util::stream::once(async move { Ok(bytes::Bytes::from(tail)) }));
        let req = self
            .http
            .post(self.ep.url("files"))
            .header("content-type", format!("multipart/form-data; boundary={boundary}"))
            .header("content-length", length)
            .body(reqwest::Body::wrap_stream(body));
        let v = self.send(req).await?;
        v.get("id").and_then(Value::as_str).map(str::to_owned).ok_or_else(|| no_field("id", "file"))
    }

    /// Creates a batch over an uploaded file.
    ///
    /// # Errors
    /// The provider refuses it.
    pub async fn create(&self, input_file_id: &str, endpoint: &str, metadata: Value) -> Result<BatchInfo, BatchError> {
        let body = json!({
            "input_file_id": input_file_id, "endpoint": endpoint, "completion_window": "24h", "metadata": metadata,
        });
        let v = self.send(self.http.post(self.ep.url("batches")).json(&body)).await?;
        let info = BatchInfo::from_json(&v);
        if info.id.is_empty() { Err(no_field("id", "batch")) } else { Ok(info) }
    }

    /// The batch's state now.
    ///
    /// # Errors
    /// The request fails (a 404 for a batch the provider does not know).
    pub async fn retrieve(&self, id: &str) -> Result<BatchInfo, BatchError> {
        let v = self.send(self.http.get(self.ep.url(&format!("batches/{id}")))).await?;
        Ok(BatchInfo::from_json(&v))
    }

    /// Asks the provider to cancel the batch.
    ///
    /// # Errors
    /// The request fails.
    pub async fn cancel(&self, id: &str) -> Result<BatchInfo, BatchError> {
        let v = self.send(self.http.post(self.ep.url(&format!("batches/{id}/cancel")))).await?;
        Ok(BatchInfo::from_json(&v))
    }

    /// A result file's lines as they stream, each within `batch_line_bytes`, all within
    /// `batch_file_bytes`.
    ///
    /// # Errors
    /// The request fails, or the provider refuses it.
    pub async fn lines(&self, file_id: &str) -> Result<BodyLines, BatchError> {
        let req = self.ep.prepare(self.http.get(self.ep.url(&format!("files/{file_id}/content"))));
        let resp =
            req.send().await.map_err(|e| BatchError::local(super::errors::describe_reqwest(&e, &self.ep.base_url)))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let headers = resp.headers().clone();
            let body = read::body(resp, self.budget()).await.unwrap_or_default();
            return Err(refused(status, &headers, &body));
        }
        let l = self.ep.limits;
        let line = Budget::profile("batch_line_bytes", l.batch_line_bytes);
        Ok(BodyLines::new(resp, line, Budget::profile("batch_file_bytes", l.batch_file_bytes)))
    }

    /// What one JSON answer of the batch API may hold.
    fn budget(&self) -> Budget {
        Budget::profile("batch_body_bytes", self.ep.limits.batch_body_bytes)
    }

    /// Sends a request with the endpoint's key, headers and query; the JSON answer or the
    /// provider's error.
    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Value, BatchError> {
        let req = self.ep.prepare(req).timeout(self.ep.timeouts.first_byte);
        let resp =
            req.send().await.map_err(|e| BatchError::local(super::errors::describe_reqwest(&e, &self.ep.base_url)))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = read::body(resp, self.budget()).await.map_err(|e| BatchError {
            status: Some(status),
            limit: matches!(e, read::ReadError::Over(_)),
            message: e.about("the batch API's answer"),
        })?;
        if !(200..300).contains(&status) {
            return Err(refused(status, &headers, &body));
        }
        serde_json::from_slice(&body)
            .map_err(|e| BatchError::http(Some(status), format!("the answer is not JSON: {e}")))
    }
}

fn refused(status: u16, headers: &reqwest::header::HeaderMap, body: &[u8]) -> BatchError {
    BatchError::http(Some(status), format!("HTTP {status}: {}", error_from_response(status, headers, body).message))
}

fn no_field(field: &str, what: &str) -> BatchError {
    BatchError::local(format!("the provider's {what} object has no `{field}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_match_by_custom_id_and_carry_the_providers_message() {
        let ok = r#"{"id":"r1","custom_id":"c-1","response":{"status_code":200,"body":{"choices":[]}},"error":null}"#;
        let line = parse_result_line(ok).unwrap();
        assert_eq!(line.custom_id, "c-1");
        assert_eq!(line.outcome, Ok(json!({"choices": []})));
        let http = r#"{"custom_id":"c-2","response":{"status_code":400,"body":{"error":{"message":"bad prompt"}}},"error":null}"#;
        let e = parse_result_line(http).unwrap().outcome.unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (Some(400), "bad prompt"));
        let expired = r#"{"custom_id":"c-3","response":null,"error":{"code":"batch_expired","message":"too late"}}"#;
        assert_eq!(parse_result_line(expired).unwrap().outcome.unwrap_err().message, "too late (batch_expired)");
        assert!(parse_result_line("not json").is_none());
        assert!(parse_result_line(r#"{"response":{}}"#).is_none());
    }

    #[test]
    fn batch_objects_read_tolerantly_and_say_when_they_are_done() {
        let v = json!({"id":"b1","status":"in_progress","request_counts":{"total":10,"completed":3,"failed":1},
            "output_file_id":null,"errors":{"data":[{"line":2,"message":"bad url"}]}});
        let b = BatchInfo::from_json(&v);
        assert_eq!(b.progress(), "in_progress 4/10");
        assert!(!b.is_terminal());
        assert_eq!(b.errors.as_deref(), Some("line 2: bad url"));
        assert!(BatchInfo::from_json(&json!({"status":"expired"})).is_terminal());
        assert_eq!(BatchInfo::from_json(&json!({})).status, "");
    }

    #[test]
    fn paths_follow_the_provider_and_backoff_grows_to_its_cap() {
        let mut ep = Endpoint::default();
        assert_eq!(endpoint_path(Api::Chat, &ep), "/v1/chat/completions");
        ep.auth = AuthStyle::ApiKeyHeader;
        assert_eq!(endpoint_path(Api::Responses, &ep), "/responses");
        let line: Value = serde_json::from_str(&input_line("p1-m0", "/v1/responses", &json!({"model":"m"}))).unwrap();
        assert_eq!(line, json!({"custom_id":"p1-m0","method":"POST","url":"/v1/responses","body":{"model":"m"}}));
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(200));
        let waits: Vec<u128> = (0..4).map(|_| b.next_wait().as_millis()).collect();
        assert_eq!(waits, [100, 150, 200, 200]);
    }
}
