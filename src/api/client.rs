//! The HTTP client: sends one request, retries only before the first byte (429/5xx, honouring
//! `Retry-After`), enforces connect, first-byte and idle timeouts, decodes the body as SSE or
//! JSON, and reports frames and mapped events to its receiver. It stops when the receiver is
//! dropped; it never re-sends a stream that has started (that would re-bill it).

use super::errors;
use super::event::ErrorInfo;
use super::event::StreamEvent;
use super::limits::{Limits, ReplyBudget, frame_fits, json_deeper_than};
use super::redact::SecretWatch;
use super::reply_cache::{CACHE_HEADER, CachedReply};
use super::retry::{RetryDecision, decide_retry};
use super::sse::SseDecoder;
use super::wire::{compressed_coding, compressed_message, error_from_response};
use super::{Api, Mapper};
use crate::sys::secrets;
use futures_util::StreamExt;
use serde_json::Value;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

pub use super::endpoint::{AuthStyle, Endpoint, Secret, Timeouts};

/// A raw frame as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub at_ms: u64,
    pub event: String,
    pub data: String,
}

/// What the client reports while a request runs.
#[derive(Debug, Clone, PartialEq)]
pub enum WireEvent {
    /// A retry is about to happen after `wait_ms`.
    Retrying { attempt: u32, wait_ms: u64, reason: String },
    /// Response headers arrived.
    Opened { status: u16, headers: Vec<(String, String)>, at_ms: u64 },
    /// The frames of one network read and the events they mapped to. Frames past the reply's
    /// raw-frame budget are not built, only counted (`frames_skipped`).
    Chunk { frames: Vec<Frame>, frames_skipped: u64, events: Vec<StreamEvent>, at_ms: u64 },
    /// The request failed before or during the body; `kind` names the fault.
    Failed(ErrorInfo),
    /// The body ended (normally or not: the events say which).
    Closed { at_ms: u64 },
}

/// The HTTP client for requests to `ep` (a client is never shared across endpoints). Redirects
/// are followed only within the origin the request went to: reqwest strips `Authorization`
/// across origins but not `api-key` nor a profile's secret headers, and a 307 would re-send the
/// whole conversation too. A plain-http endpoint (a local server) gets no TLS roots: loading the
/// system's certificates is most of a short run's start-up, and since a redirect never leaves
/// the origin, TLS cannot come up.
///
/// # Errors
/// When TLS initialisation fails.
pub fn endpoint_client(ep: &Endpoint) -> Result<reqwest::Client, reqwest::Error> {
    let plain = ep.base_url.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://")) && !tls_proxy();
    let b = reqwest::Client::builder().connect_timeout(ep.timeouts.connect).redirect(same_origin_redirects());
    if plain { b.tls_certs_only([]) } else { b }.build()
}

/// Whether plain-http requests may go through a proxy reached over TLS (reqwest reads these
/// variables): then even a plain-http endpoint needs the system's roots.
fn tls_proxy() -> bool {
    ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"].iter().any(|v| {
        std::env::var(v).is_ok_and(|p| p.trim_start().get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://")))
    })
}

/// Most redirects followed within one origin.
const MAX_REDIRECTS: usize = 10;

/// A redirect to another origin refused; its message names the target.
#[derive(Debug)]
struct CrossOriginRedirect(String);

impl fmt::Display for CrossOriginRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the server redirected to another origin ({}); palaver does not follow it, so the key and the \
             conversation stay with the configured server — set base_url to that address if it is right",
            self.0
        )
    }
}

impl std::error::Error for CrossOriginRedirect {}

/// Redirects followed within the origin of the first request only (also for remote MCP servers).
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(reqwest::Url::origin);
        if first.is_some_and(|o| o != attempt.url().origin()) {
            // A parsed URL is percent-encoded: no control character can be in it.
            let target = attempt.url().as_str().to_owned();
            return attempt.error(CrossOriginRedirect(target));
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        attempt.follow()
    })
}

fn failed(kind: &str, message: String) -> WireEvent {
    WireEvent::Failed(ErrorInfo { status: None, message, kind: kind.to_owned(), body: Value::Null })
}

/// The receiver of a request's events, through the one redactor: whatever a server echoes of
/// the key, a secret header or any other secret palaver knows is gone before anyone sees it.
struct Out<'a> {
    tx: &'a UnboundedSender<WireEvent>,
    /// What was reported so far, for the response cache: an answer is kept only when it
    /// ended and nothing went wrong on the way (no error, no limit, nothing malformed).
    ended: AtomicBool,
    faulted: AtomicBool,
}

impl Out<'_> {
    fn send(&self, mut ev: WireEvent) -> Result<(), ()> {
        match &ev {
            WireEvent::Failed(_) => self.faulted.store(true, Ordering::Relaxed),
            WireEvent::Chunk { events, .. } => {
                for e in events {
                    match e {
                        StreamEvent::End => self.ended.store(true, Ordering::Relaxed),
                        StreamEvent::Error(_) | StreamEvent::Malformed { .. } => {
                            self.faulted.store(true, Ordering::Relaxed);
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        super::redact::wire(&mut ev);
        self.tx.send(ev).map_err(|_| ())
    }

    /// Whether the answer reported is whole and sound: one worth keeping.
    fn complete(&self) -> bool {
        self.ended.load(Ordering::Relaxed) && !self.faulted.load(Ordering::Relaxed)
    }

    async fn closed(&self) {
        self.tx.closed().await;
    }
}

/// Runs one request to completion, reporting to `tx`. Returns early when `tx` is closed.
pub async fn run(http: &reqwest::Client, ep: &Endpoint, api: Api, body: &Value, tx: &UnboundedSender<WireEvent>) {
    run_serialized(
        http,
        ep,
        api,
        body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        serde_json::to_vec(body),
        tx,
    )
    .await;
}

/// [`run`] with the body already serialised (attachments make it megabytes: the caller may do
/// that on a blocking thread).
pub async fn run_serialized(
    http: &reqwest::Client,
    ep: &Endpoint,
    api: Api,
    stream: bool,
    bytes: serde_json::Result<Vec<u8>>,
    tx: &UnboundedSender<WireEvent>,
) {
    ep.register_secrets();
    let tx = &Out { tx, ended: AtomicBool::new(false), faulted: AtomicBool::new(false) };
    let start = Instant::now();
    let ms = move || start.elapsed().as_millis() as u64;
    // Serialised once, measured, and never sent past the limit.
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => {
            let _ = tx.send(failed("request", format!("the request could not be built: {e}")));
            return;
        }
    };
    if bytes.len() > ep.limits.request_bytes {
        let what = format!("the request palaver built is {} bytes; it was not sent", bytes.len());
        let _ = tx.send(failed("limit", Limits::reached("request_bytes", &what, ep.limits.request_bytes)));
        return;
    }
    let body_bytes = bytes::Bytes::from(bytes);
    let cache_key = match cached(ep, api, &body_bytes).await {
        Lookup::Hit(reply) => return replay(reply, api, stream, ep, tx, &ms).await,
        Lookup::Miss(key) => key,
    };
    let mut attempt = 0;
    let mut reconnected = false;
    let resp = loop {
        let req = ep
            .prepare(http.post(ep.url(api.path())).header("content-type", "application/json").body(body_bytes.clone()));
        // A receiver that went away (the user cancelled) stops the request at once.
        let sent = tokio::select! {
            sent = tokio::time::timeout(ep.timeouts.first_byte, req.send()) => sent,
            () = tx.closed() => return,
        };
        let resp = match sent {
            Err(_) => {
                let _ = tx.send(failed(
                    "first_byte_timeout",
                    format!("no response within the first-byte timeout ({} s)", ep.timeouts.first_byte.as_secs_f32()),
                ));
                return;
            }
            Ok(Err(e)) if !reconnected && errors::is_stale_connection(&e) => {
                // A kept-alive connection the server had already closed (llama.cpp closes after
                // every streamed reply though it says keep-alive): nothing was answered, so the
                // request goes out once more on a fresh connection.
                reconnected = true;
                continue;
            }
            Ok(Err(e)) => {
                let kind = if e.is_redirect() {
                    "redirect"
                } else if e.is_connect() {
                    "connect"
                } else if e.is_timeout() {
                    "connect_timeout"
                } else {
                    "request"
                };
                let _ = tx.send(failed(kind, errors::describe_reqwest(&e, &ep.base_url)));
                return;
            }
            Ok(Ok(r)) => r,
        };
        let status = resp.status().as_u16();
        if resp.status().is_success() {
            break resp;
        }
        let headers = resp.headers().clone();
        let body_bytes = crate::sys::read::body_head(resp, 1 << 20, Duration::from_secs(30)).await;
        let err = error_from_response(status, &headers, &body_bytes);
        match decide_retry(status, &headers, &err, attempt, ep.max_retries, ep.max_retry_wait) {
            RetryDecision::RetryAfter(wait) => {
                attempt += 1;
                let reason = format!("HTTP {status}: {}", err.message);
                if tx.send(WireEvent::Retrying { attempt, wait_ms: wait.as_millis() as u64, reason }).is_err() {
                    return;
                }
                // Cancelling during the wait must not send the request once more.
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = tx.closed() => return,
                }
            }
            RetryDecision::GiveUp(note) => {
                let mut info = ErrorInfo::from_provider(&err, "http");
                info.message = errors::describe_http(
                    status,
                    &ep.url(api.path()),
                    api,
                    &err,
                    &ep.key_source,
                    !ep.key.is_empty(),
                    ep.face,
                );
                if let Some(note) = note {
                    info.message = format!("{} ({note})", info.message);
                }
                let _ = tx.send(WireEvent::Failed(info));
                return;
            }
        }
    };
    let headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .filter(|(k, _)| !is_sensitive_header(k.as_str()))
        .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let content_type = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let status = resp.status().as_u16();
    if tx.send(WireEvent::Opened { status, headers: headers.clone(), at_ms: ms() }).is_err() {
        return;
    }
    if let Some(coding) = compressed_coding(resp.headers()) {
        let _ = tx.send(failed("request", compressed_message(&coding)));
        return;
    }
    let Some((cache, key)) = ep.cache.as_ref().zip(cache_key) else {
        return read_body(resp.bytes_stream(), api, stream, &content_type, ep, tx, &ms).await;
    };
    let opened =
        CachedReply { url: super::redact::storable_url(&ep.url(api.path())), status, headers, body: Vec::new() };
    read_and_keep(resp, api, stream, &content_type, ep, tx, &ms, (cache.as_ref(), key, opened)).await;
}

/// Reads a live answer as `read_body` does, keeping its bytes as they arrive (within the body
/// limit); the answer goes to the cache only once it proved whole: a cut, refused or malformed
/// one is never replayed.
#[allow(clippy::too_many_arguments)]
async fn read_and_keep(
    resp: reqwest::Response,
    api: Api,
    stream: bool,
    content_type: &str,
    ep: &Endpoint,
    tx: &Out<'_>,
    ms: &impl Fn() -> u64,
    (cache, key, mut reply): (&dyn super::reply_cache::ReplyCache, String, CachedReply),
) {
    let (mut kept, mut over) = (Vec::new(), false);
    let body = resp.bytes_stream().inspect(|read| {
        if let Ok(b) = read {
            over |= kept.len() + b.len() > ep.limits.body_bytes;
            if !over {
                kept.extend_from_slice(b);
            }
        }
    });
    read_body(body, api, stream, content_type, ep, tx, ms).await;
    if !over && tx.complete() {
        reply.headers.iter_mut().for_each(|(_, v)| secrets::redact_string(v));
        reply.body = secrets::redact(&String::from_utf8_lossy(&kept)).into_owned().into_bytes();
        cache.put(key, reply);
    }
}

/// What the response cache holds for a request: its answer, or the key to keep one under
/// (`None`: no cache on this endpoint).
enum Lookup {
    Hit(CachedReply),
    Miss(Option<String>),
}

/// Looks the request up in the endpoint's cache, off the runtime thread (the body may be
/// megabytes to hash, and the cache is a file).
async fn cached(ep: &Endpoint, api: Api, body: &bytes::Bytes) -> Lookup {
    let Some(cache) = ep.cache.clone() else { return Lookup::Miss(None) };
    let (ep, body) = (ep.clone(), body.clone());
    let found = tokio::task::spawn_blocking(move || {
        let key = super::reply_cache::key(&ep, api.path(), &body);
        let hit = cache.get(&key);
        (key, hit)
    })
    .await;
    match found {
        Ok((_, Some(hit))) => Lookup::Hit(hit),
        Ok((key, None)) => Lookup::Miss(Some(key)),
        Err(_) => Lookup::Miss(None),
    }
}

/// Answers from the cache: the kept status, headers (marked with [`CACHE_HEADER`]) and body,
/// read by the same `read_body` a live answer goes through.
async fn replay(reply: CachedReply, api: Api, stream: bool, ep: &Endpoint, tx: &Out<'_>, ms: &impl Fn() -> u64) {
    let CachedReply { status, mut headers, body, .. } = reply;
    let content_type = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    headers.push((CACHE_HEADER.to_owned(), "hit".to_owned()));
    if tx.send(WireEvent::Opened { status, headers, at_ms: ms() }).is_err() {
        return;
    }
    let body = futures_util::stream::iter([Ok::<_, reqwest::Error>(bytes::Bytes::from(body))]);
    read_body(body, api, stream, &content_type, ep, tx, ms).await;
}

/// Reads the body: SSE when it looks like SSE, else one JSON document.
async fn read_body(
    body: impl futures_util::Stream<Item = reqwest::Result<bytes::Bytes>>,
    api: Api,
    stream: bool,
    content_type: &str,
    ep: &Endpoint,
    tx: &Out<'_>,
    ms: &impl Fn() -> u64,
) {
    let (t, limits) = (ep.timeouts, ep.limits);
    let mut body = std::pin::pin!(body);
    let mut decoder = SseDecoder::with_limit(limits.sse_event_bytes);
    let mut mapper = Mapper::new(api);
    let mut budget = ReplyBudget::new(limits);
    // Decided from the first bytes, not only the header: gateways send empty or wrong types.
    let mut mode: Option<bool> = if content_type.contains("event-stream") { Some(true) } else { None };
    let mut json_buf: Vec<u8> = Vec::new();
    // Bytes of raw frames kept so far (see `frame_fits`).
    let mut frame_bytes = 0;
    let mut watch = SecretWatch::default();
    let mut first = true;
    // One timer for the whole body, moved only when it fires early (or once, at the first
    // byte): arming a timeout around every read cost more than some of the read's parsing.
    let mut stall = std::pin::pin!(tokio::time::sleep(t.first_byte));
    let mut last_read = tokio::time::Instant::now();
    // Events per read, from the previous read: the list is built without regrowing.
    let mut events_per_read = 0;
    loop {
        let next = tokio::select! {
            biased;
            next = body.next() => next,
            () = &mut stall => {
                let limit = if first { t.first_byte } else { t.idle };
                if last_read.elapsed() < limit {
                    stall.as_mut().reset(last_read + limit);
                    continue;
                }
                let (kind, what) = if first { ("first_byte_timeout", "first-byte") } else { ("idle_timeout", "idle") };
                let _ = tx.send(failed(
                    kind,
                    format!(
                        "the stream stalled: nothing arrived within the {what} timeout ({} s)",
                        limit.as_secs_f32()
                    ),
                ));
                return;
            }
        };
        last_read = tokio::time::Instant::now();
        if first {
            stall.as_mut().reset(last_read + t.idle);
        }
        let bytes = match next {
            None => break,
            Some(Err(e)) => {
                if !flush(&mut decoder, &mut mapper, &mut budget, &mut frame_bytes, tx, ms) {
                    return;
                }
                let _ = tx.send(failed(
                    "disconnected",
                    format!("the connection dropped mid-stream: {}", errors::root_cause(&e)),
                ));
                return;
            }
            Some(Ok(b)) => b,
        };
        first = false;
        if mode.is_none() {
            if let Some(lead) = bytes.iter().find(|b| !b.is_ascii_whitespace()) {
                mode = Some(!(*lead == b'{' || *lead == b'['));
            }
        }
        if json_buf.len() + bytes.len() > limits.body_bytes {
            let what = "the response body is too large";
            let _ = tx.send(failed("limit", Limits::reached("body_bytes", what, limits.body_bytes)));
            return;
        }
        if mode == Some(false) || (mode.is_none() && !stream) {
            json_buf.extend_from_slice(&bytes);
            continue;
        }
        // A stream is decoded from the read itself; only bytes held back while the mode was
        // undecided are joined to it first.
        let pending;
        let bytes: &[u8] = if json_buf.is_empty() {
            &bytes
        } else {
            json_buf.extend_from_slice(&bytes);
            pending = std::mem::take(&mut json_buf);
            &pending
        };
        let mut frames = ReadFrames::default();
        let mut events = Vec::with_capacity(events_per_read);
        let now = ms();
        let secret_seen = secrets::seen_in(&mut watch, bytes);
        let mut ended = false;
        let mut over: Option<String> = None;
        decoder.push(bytes, &mut |ev| {
            if over.is_some() {
                return;
            }
            // Redacted before anything reads it: a frame not kept is still mapped.
            let redacted;
            let data = if secret_seen {
                redacted = secrets::redact(&ev.text()).into_owned().into_bytes();
                &redacted[..]
            } else {
                ev.data
            };
            if json_deeper_than(data, limits.json_depth) {
                over = Some(Limits::reached("json_depth", "an event is nested too deeply", limits.json_depth));
                return;
            }
            let before = events.len();
            mapper.map(ev.event, data, &mut events);
            over = budget.admit(&mut events, before);
            ended |= events[before..].iter().any(|e| matches!(e, StreamEvent::End));
            frames.keep(&mut frame_bytes, now, ev.event, data);
        });
        if decoder.overflowed() && over.is_none() {
            over =
                Some(Limits::reached("sse_event_bytes", "one SSE line or event is too large", limits.sse_event_bytes));
        }
        events_per_read = events.len();
        if tx.send(frames.chunk(events, now)).is_err() {
            return;
        }
        if let Some(message) = over {
            let _ = tx.send(failed("limit", message));
            return;
        }
        if ended && api == Api::Chat {
            // `[DONE]`: anything after it is not part of this reply.
            let _ = tx.send(WireEvent::Closed { at_ms: ms() });
            return;
        }
    }
    if mode == Some(false) || (mode.is_none() && !stream) {
        if !whole_json(&json_buf, api, limits, &mut budget, tx, ms) {
            return;
        }
    } else if !flush(&mut decoder, &mut mapper, &mut budget, &mut frame_bytes, tx, ms) {
        return;
    }
    let _ = tx.send(WireEvent::Closed { at_ms: ms() });
}

/// A non-streamed body, read whole within `body_bytes` by `read_body`: checked for depth,
/// mapped to events and sent as one chunk. Returns false when it passed a limit or the
/// receiver is gone (nothing more is to be sent).
fn whole_json(
    json_buf: &[u8],
    api: Api,
    limits: Limits,
    budget: &mut ReplyBudget,
    tx: &Out<'_>,
    ms: &impl Fn() -> u64,
) -> bool {
    let now = ms();
    let frames = vec![Frame { at_ms: now, event: "json".into(), data: String::from_utf8_lossy(json_buf).into_owned() }];
    if json_deeper_than(json_buf, limits.json_depth) {
        let what = "the response body is nested too deeply";
        let _ = tx.send(failed("limit", Limits::reached("json_depth", what, limits.json_depth)));
        return false;
    }
    let events = match super::json_bounded::from_slice(json_buf) {
        Ok(v)
            if v.get("error").is_some_and(|e| !e.is_null())
                && v.get("choices").is_none()
                && v.get("output").is_none() =>
        {
            let err = super::wire::error_from_value(None, &v);
            vec![StreamEvent::Error(Box::new(err)), StreamEvent::End]
        }
        Ok(v) => {
            let mut events = super::map_full_response(api, &v);
            if let Some(message) = budget.admit(&mut events, 0) {
                let _ = tx.send(WireEvent::Chunk { frames, frames_skipped: 0, events, at_ms: now });
                let _ = tx.send(failed("limit", message));
                return false;
            }
            events
        }
        Err(e) => vec![StreamEvent::Malformed {
            data: String::from_utf8_lossy(json_buf).chars().take(200).collect(),
            reason: e.to_string(),
        }],
    };
    tx.send(WireEvent::Chunk { frames, frames_skipped: 0, events, at_ms: now }).is_ok()
}

/// The raw frames of one read: those within the reply's frame budget are built, the rest only
/// counted (a long stream would otherwise copy every frame to have the reducer drop it).
#[derive(Default)]
struct ReadFrames {
    list: Vec<Frame>,
    skipped: u64,
}

impl ReadFrames {
    /// Keeps one frame if it fits after the `kept` bytes already kept from this reply.
    fn keep(&mut self, kept: &mut usize, at_ms: u64, event: &str, data: &[u8]) {
        if frame_fits(*kept, event.len() + data.len()) {
            let data = String::from_utf8_lossy(data).into_owned();
            *kept += event.len() + data.len();
            self.list.push(Frame { at_ms, event: event.to_owned(), data });
        } else {
            self.skipped += 1;
        }
    }

    fn chunk(self, events: Vec<StreamEvent>, at_ms: u64) -> WireEvent {
        WireEvent::Chunk { frames: self.list, frames_skipped: self.skipped, events, at_ms }
    }
}

/// The end of an SSE body: an event left without its blank line is dispatched (and counted).
/// Returns false when it passed a limit (the failure was reported).
fn flush(
    decoder: &mut SseDecoder,
    mapper: &mut Mapper,
    budget: &mut ReplyBudget,
    frame_bytes: &mut usize,
    tx: &Out<'_>,
    ms: &impl Fn() -> u64,
) -> bool {
    let now = ms();
    let mut frames = ReadFrames::default();
    let mut events = Vec::new();
    decoder.finish(&mut |ev| {
        let data = secrets::redact(&ev.text()).into_owned().into_bytes();
        mapper.map(ev.event, &data, &mut events);
        frames.keep(frame_bytes, now, ev.event, &data);
    });
    let over = budget.admit(&mut events, 0);
    if !frames.list.is_empty() || frames.skipped > 0 {
        let _ = tx.send(frames.chunk(events, now));
    }
    if let Some(message) = over {
        let _ = tx.send(failed("limit", message));
        return false;
    }
    true
}

fn is_sensitive_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "authorization" || n == "set-cookie" || super::redact::is_secret_header(&n)
}
