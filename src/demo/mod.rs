//! The embedded demo provider: an OpenAI-compatible HTTP server with scripted models, its routes and lifecycle.

mod batch_run;
mod batches;
mod chat;
mod errors;
mod files;
mod filters;
mod hosted;
mod logprobs;
mod multipart;
mod request;
mod responses;
mod script;
mod sse;
mod structured;
mod texts;
mod vision;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use request::Api;

/// The scripted models, as `(id, one-line description)`.
pub const MODELS: &[(&str, &str)] = &[
    ("demo", "Markdown answer with full usage and Azure-style safe filter results"),
    ("demo-tools", "Parallel read-only tool calls, then an answer built from their results"),
    ("demo-safety", "A jailbreak warning and a reply stopped by the content filter"),
    ("demo-reasoning", "Reasoning that streams before the answer"),
    ("demo-slow", "A long answer at a few words a second, to try cancelling"),
    ("demo-error", "Alternates 429 rate limits with a stream that fails midway"),
    ("demo-vision", "Describes each image and file it receives: type, pixel size, pages, bytes and SHA-256"),
    ("demo-hosted", "Responses API: web search with citations, code interpreter, MCP calls and an approval request"),
    ("demo-future", "Responses API: an output item and an event type no API defines yet (forward compatibility)"),
];

/// Fixed so `/v1/models` is deterministic.
const MODELS_CREATED: u64 = 1_735_689_600;

/// A running demo server. Dropping it stops accepting connections.
#[derive(Debug)]
pub struct DemoServer {
    /// Base URL including the `/v1` prefix, e.g. `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for DemoServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `127.0.0.1` on a free port and serves on the current tokio runtime.
pub async fn spawn_local() -> std::io::Result<DemoServer> {
    spawn_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await
}

pub async fn spawn_on(addr: SocketAddr) -> std::io::Result<DemoServer> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        // An accept loop only ends on a fatal listener error; the owner sees it as
        // connection failures, which is all a demo needs.
        let _ = serve(listener).await;
    });
    Ok(DemoServer { base_url: format!("http://{addr}/v1"), addr, task })
}

/// Serves the demo API on `listener` until the process ends.
pub async fn serve(listener: TcpListener) -> std::io::Result<()> {
    axum::serve(listener, router()).await
}

/// The demo API routes; each router has its own request counters.
pub fn router() -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/responses", post(create_response))
        .route("/v1/models", get(list_models))
        .route("/v1/models/{id}", get(retrieve_model))
        .route("/v1/files", post(files::upload))
        .route("/v1/files/{id}", get(files::retrieve))
        .route("/v1/files/{id}/content", get(files::content))
        .route("/v1/batches", post(batches::create).get(batches::list))
        .route("/v1/batches/{id}", get(batches::retrieve))
        .route("/v1/batches/{id}/cancel", post(batches::cancel))
        .fallback(unknown_route)
        // Long conversations with tool output easily pass axum's 2 MB default.
        .layer(DefaultBodyLimit::max(64 * 1024 * 1024))
        .with_state(Arc::new(DemoState::default()))
}

#[derive(Default)]
struct DemoState {
    requests: AtomicU64,
    /// demo-error alternates failure kinds per request, so it needs its own count.
    error_requests: AtomicU64,
    /// Uploaded files and batch outputs (on disk, in a folder of this server's).
    files: files::Files,
    batches: batches::Batches,
    /// Batch lines answered, for their ids.
    batch_lines: AtomicU64,
}

/// Seconds since the epoch (0 on a clock before it).
fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or(0)
}

/// What every rendering of one reply shares: its number, timestamp and model.
struct Ctx {
    n: u64,
    created: u64,
    model: String,
}

impl Ctx {
    fn chat_id(&self) -> String {
        format!("chatcmpl-demo-{}", self.n)
    }

    fn call_id(&self, index: usize) -> String {
        format!("call_demo_{}_{index}", self.n)
    }
}

async fn chat_completions(State(state): State<Arc<DemoState>>, body: Bytes) -> Response {
    handle(&state, Api::Chat, &body)
}

async fn create_response(State(state): State<Arc<DemoState>>, body: Bytes) -> Response {
    handle(&state, Api::Responses, &body)
}

fn handle(state: &DemoState, api: Api, body: &[u8]) -> Response {
    let req = match request::parse(api, body) {
        Ok(req) => req,
        Err(bad) => return errors::bad_request(&bad.message, bad.param),
    };
    if !MODELS.iter().any(|(id, _)| *id == req.model) {
        return errors::model_not_found(&req.model);
    }
    let n = state.requests.fetch_add(1, Ordering::Relaxed) + 1;
    if req.model == "demo-error" {
        let attempt = state.error_requests.fetch_add(1, Ordering::Relaxed) + 1;
        if attempt % 2 == 1 {
            return errors::rate_limited(&req.model);
        }
        if !req.stream {
            return errors::server_error();
        }
    }
    let mut script = script::build(&req);
    structured::apply(&req, &mut script);
    let created = SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or(0);
    let ctx = Ctx { n, created, model: req.model.clone() };
    match (api, req.stream) {
        (Api::Responses, true) if hosted::serves(&req.model) => sse::response(hosted::stream(&ctx, &req), n),
        (Api::Responses, false) if hosted::serves(&req.model) => sse::json(hosted::object(&ctx, &req), n),
        (Api::Chat, true) => sse::response(chat::stream(&ctx, &req, &script), n),
        (Api::Chat, false) => sse::json(chat::completion(&ctx, &req, &script), n),
        (Api::Responses, true) => sse::response(responses::stream(&ctx, &req, &script), n),
        (Api::Responses, false) => sse::json(responses::object(&ctx, &req, &script), n),
    }
}

/// One non-streaming reply, as a batch line gets it: the body, or the HTTP status and error
/// body the endpoint would have answered with.
fn answer(state: &DemoState, api: Api, body: &[u8]) -> Result<serde_json::Value, (u16, serde_json::Value)> {
    let mut req = request::parse(api, body)
        .map_err(|bad| (400, errors::body(&bad.message, "invalid_request_error", bad.param, None)))?;
    req.stream = false;
    if !MODELS.iter().any(|(id, _)| *id == req.model) {
        let message = format!("The model `{}` does not exist", req.model);
        return Err((404, errors::body(&message, "invalid_request_error", Some("model"), Some("model_not_found"))));
    }
    let n = state.requests.fetch_add(1, Ordering::Relaxed) + 1;
    if req.model == "demo-error" {
        // No stream to break in a batch: demo-error's lines fail as its non-streamed requests do.
        return Err((500, errors::server_error_body()));
    }
    let mut script = script::build(&req);
    structured::apply(&req, &mut script);
    let ctx = Ctx { n, created: now(), model: req.model.clone() };
    Ok(match api {
        Api::Responses if hosted::serves(&req.model) => hosted::object(&ctx, &req),
        Api::Chat => chat::completion(&ctx, &req, &script),
        Api::Responses => responses::object(&ctx, &req, &script),
    })
}

fn model_json(id: &str) -> serde_json::Value {
    json!({ "id": id, "object": "model", "created": MODELS_CREATED, "owned_by": "system" })
}

async fn list_models() -> axum::Json<serde_json::Value> {
    let data: Vec<_> = MODELS.iter().map(|(id, _)| model_json(id)).collect();
    axum::Json(json!({ "object": "list", "data": data }))
}

async fn retrieve_model(Path(id): Path<String>) -> Response {
    if MODELS.iter().any(|(known, _)| *known == id) {
        axum::Json(model_json(&id)).into_response()
    } else {
        errors::model_not_found(&id)
    }
}

async fn unknown_route(method: Method, uri: Uri) -> Response {
    errors::not_found(method.as_str(), uri.path())
}
