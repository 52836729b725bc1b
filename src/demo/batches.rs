//! The demo's `/v1/batches`: create, retrieve, list and cancel, with batch objects as OpenAI
//! returns them. The lifecycle itself (validating → in_progress → finalizing → completed, or
//! failed / cancelled / expired) runs in `batch_run.rs`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::errors;
use super::{DemoState, now};

/// The endpoints a batch may run, with and without the `/v1` prefix (Azure writes them bare).
pub const ENDPOINTS: &[&str] = &["/v1/chat/completions", "/v1/responses", "/chat/completions", "/responses"];

/// One batch as the demo keeps it.
#[derive(Debug, Clone)]
pub struct Batch {
    pub id: String,
    pub input_file_id: String,
    pub endpoint: String,
    pub completion_window: String,
    pub created_at: u64,
    pub metadata: Value,
    pub status: &'static str,
    /// `in_progress_at`, `finalizing_at`, `completed_at`, … as they happen.
    pub times: BTreeMap<&'static str, u64>,
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub errors: Option<Value>,
    /// A cancel was asked for; the runner stops at the next line.
    pub cancel: bool,
}

impl Batch {
    pub fn json(&self) -> Value {
        let mut v = json!({
            "id": self.id, "object": "batch", "endpoint": self.endpoint, "errors": self.errors,
            "input_file_id": self.input_file_id, "completion_window": self.completion_window,
            "status": self.status, "output_file_id": self.output_file_id, "error_file_id": self.error_file_id,
            "created_at": self.created_at, "expires_at": self.created_at + 24 * 3600,
            "request_counts": { "total": self.total, "completed": self.completed, "failed": self.failed },
            "metadata": self.metadata,
        });
        for key in [
            "in_progress_at",
            "finalizing_at",
            "completed_at",
            "failed_at",
            "expired_at",
            "cancelling_at",
            "cancelled_at",
        ] {
            v[key] = self.times.get(key).map_or(Value::Null, |t| json!(t));
        }
        v
    }
}

/// Every batch of one server.
#[derive(Default)]
pub struct Batches {
    map: Mutex<BTreeMap<String, Batch>>,
    next: AtomicU64,
}

impl Batches {
    fn map(&self) -> MutexGuard<'_, BTreeMap<String, Batch>> {
        self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn get(&self, id: &str) -> Option<Batch> {
        self.map().get(id).cloned()
    }

    /// Changes batch `id` under the lock; returns what `f` returned (None: no such batch).
    pub fn update<T>(&self, id: &str, f: impl FnOnce(&mut Batch) -> T) -> Option<T> {
        self.map().get_mut(id).map(f)
    }

    /// Moves batch `id` to `status`, stamping `{status}_at`.
    pub fn set_status(&self, id: &str, status: &'static str) {
        self.update(id, |b| {
            b.status = status;
            if let Some(key) = stamp_key(status) {
                b.times.insert(key, now());
            }
        });
    }
}

fn stamp_key(status: &str) -> Option<&'static str> {
    Some(match status {
        "in_progress" => "in_progress_at",
        "finalizing" => "finalizing_at",
        "completed" => "completed_at",
        "failed" => "failed_at",
        "expired" => "expired_at",
        "cancelling" => "cancelling_at",
        "cancelled" => "cancelled_at",
        _ => return None,
    })
}

fn bad(message: &str, param: &str) -> Response {
    let body = errors::body(message, "invalid_request_error", Some(param), None);
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

fn no_such_batch(id: &str) -> Response {
    let body = errors::body(&format!("No batch found with id '{id}'."), "invalid_request_error", Some("id"), None);
    (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
}

/// `POST /v1/batches`.
pub async fn create(State(state): State<Arc<DemoState>>, body: axum::body::Bytes) -> Response {
    let Ok(req) = serde_json::from_slice::<Value>(&body) else { return bad("The body is not JSON", "body") };
    let field = |k: &str| req.get(k).and_then(Value::as_str).map(str::to_owned);
    let Some(input_file_id) = field("input_file_id") else {
        return bad("Missing required parameter: 'input_file_id'.", "input_file_id");
    };
    let endpoint = field("endpoint").unwrap_or_default();
    if !ENDPOINTS.contains(&endpoint.as_str()) {
        return bad(&format!("Invalid value for 'endpoint': '{endpoint}'."), "endpoint");
    }
    let completion_window = field("completion_window").unwrap_or_default();
    if completion_window != "24h" {
        return bad("Invalid value for 'completion_window': only '24h' is supported.", "completion_window");
    }
    match state.files.get(&input_file_id) {
        Some(f) if f.purpose == "batch" => {}
        Some(_) => return bad("The input file must have purpose 'batch'.", "input_file_id"),
        None => return super::files::no_such_file(&input_file_id),
    }
    let id = format!("batch_demo{:06}", state.batches.next.fetch_add(1, Ordering::Relaxed) + 1);
    let batch = Batch {
        id: id.clone(),
        input_file_id,
        endpoint,
        completion_window,
        created_at: now(),
        metadata: req.get("metadata").cloned().unwrap_or(Value::Null),
        status: "validating",
        times: BTreeMap::new(),
        total: 0,
        completed: 0,
        failed: 0,
        output_file_id: None,
        error_file_id: None,
        errors: None,
        cancel: false,
    };
    let body = batch.json();
    state.batches.map().insert(id.clone(), batch);
    tokio::spawn(super::batch_run::run(state.clone(), id));
    axum::Json(body).into_response()
}

/// `GET /v1/batches/{id}`.
pub async fn retrieve(State(state): State<Arc<DemoState>>, Path(id): Path<String>) -> Response {
    match state.batches.get(&id) {
        Some(b) => axum::Json(b.json()).into_response(),
        None => no_such_batch(&id),
    }
}

/// `GET /v1/batches?limit=&after=`: newest first, a page at a time.
pub async fn list(State(state): State<Arc<DemoState>>, Query(q): Query<BTreeMap<String, String>>) -> Response {
    let limit = q.get("limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(20).clamp(1, 100);
    let map = state.batches.map();
    let newest_first = map.values().rev();
    let page: Vec<Value> = match q.get("after") {
        Some(after) => newest_first.skip_while(|b| &b.id != after).skip(1).take(limit + 1).map(Batch::json).collect(),
        None => newest_first.take(limit + 1).map(Batch::json).collect(),
    };
    let has_more = page.len() > limit;
    let data: Vec<Value> = page.into_iter().take(limit).collect();
    let first = data.first().and_then(|b| b.get("id")).cloned();
    let last = data.last().and_then(|b| b.get("id")).cloned();
    axum::Json(json!({ "object": "list", "data": data, "first_id": first, "last_id": last, "has_more": has_more }))
        .into_response()
}

/// `POST /v1/batches/{id}/cancel`: `cancelling` now, `cancelled` once the runner stops.
pub async fn cancel(State(state): State<Arc<DemoState>>, Path(id): Path<String>) -> Response {
    let done = state.batches.update(&id, |b| {
        if matches!(b.status, "validating" | "in_progress") {
            b.cancel = true;
            b.status = "cancelling";
            b.times.insert("cancelling_at", now());
        }
        b.json()
    });
    match done {
        Some(body) => axum::Json(body).into_response(),
        None => no_such_batch(&id),
    }
}
