//! Drives one request through the client and folds what arrives into the assistant message.
//! Both the headless runner and the TUI consume these same wire events.

use super::body::Body;
use super::message::{ErrorInfo, Message, MessageStatus};
use super::reducer::{self, Ending};
use crate::api::Api;
use crate::api::client::{self, Endpoint, WireEvent};
use crate::api::event::StreamEvent;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Starts a request on its own task. The task stops when the returned receiver is dropped.
/// A panic inside it (a bug, or a value nobody foresaw) ends the request with an error on its
/// own turn rather than a silent close that reads as "no content". The body is shared (`Arc`):
/// the chat screen keeps it for the inspector without a copy; its JSON is built (when it was
/// not already) and written here, off the caller's task.
#[must_use]
pub fn spawn_request(
    http: reqwest::Client,
    ep: Endpoint,
    api: Api,
    body: Arc<Body>,
) -> mpsc::UnboundedReceiver<WireEvent> {
    use futures_util::FutureExt;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        // A body is megabytes of JSON to build and write with a long history or attachments: on
        // a blocking thread, not the runtime thread the chat screen shares.
        let built = tokio::task::spawn_blocking(move || {
            let json = body.json();
            (json.get("stream").and_then(Value::as_bool).unwrap_or(false), serde_json::to_vec(json))
        })
        .await;
        let (stream, bytes) = match built {
            Ok(b) => b,
            Err(e) => (false, Err(serde_json::Error::io(std::io::Error::other(e.to_string())))),
        };
        let run =
            std::panic::AssertUnwindSafe(client::run_serialized(&http, &ep, api, stream, bytes, &tx)).catch_unwind();
        if let Err(panic) = run.await {
            let _ = tx.send(WireEvent::Failed(ErrorInfo {
                status: None,
                message: format!("palaver's request task failed: {}", panic_text(panic.as_ref())),
                kind: "internal".into(),
                body: Value::Null,
            }));
        }
    });
    rx
}

/// The message a panic carried.
#[must_use]
pub fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// Folds one wire event into the message, calling `on_event` for each domain event applied.
/// Returns true when the request is over.
pub fn apply_wire(msg: &mut Message, ev: WireEvent, now_ms: u64, on_event: &mut impl FnMut(&StreamEvent)) -> bool {
    match ev {
        WireEvent::Retrying { .. } => false,
        WireEvent::Opened { status, headers, .. } => {
            msg.http_status = Some(status);
            msg.response_headers = headers;
            false
        }
        WireEvent::Chunk { frames, frames_skipped, events, at_ms } => {
            for f in frames {
                reducer::record_frame(msg, f.at_ms, f.event, f.data);
            }
            msg.frames_dropped += frames_skipped;
            for e in events {
                on_event(&e);
                reducer::apply(msg, e, at_ms);
            }
            false
        }
        WireEvent::Failed(err) => {
            fail(msg, err, now_ms);
            true
        }
        WireEvent::Closed { at_ms } => {
            reducer::finish(msg, Ending::Eof, at_ms);
            true
        }
    }
}

/// Ends the message with a transport or HTTP error, keeping what arrived.
pub fn fail(msg: &mut Message, err: ErrorInfo, at_ms: u64) {
    let http = err.kind == "http";
    reducer::finish(msg, Ending::Transport(err), at_ms);
    if http {
        msg.status = MessageStatus::Failed;
    }
}

/// Rebuilds the reply a recorded body carries, fed as consecutive reads `parts` (replay,
/// fixtures, fuzzing): decoder, mapper and reducer exactly as the client runs them.
#[must_use]
pub fn reconstruct(api: Api, parts: &[&[u8]]) -> Message {
    let mut dec = crate::api::sse::SseDecoder::new();
    let mut mapper = crate::api::Mapper::new(api);
    let mut msg = Message::assistant_pending();
    let mut events = Vec::new();
    for p in parts {
        dec.push(p, &mut |e| mapper.map(e.event, e.data, &mut events));
    }
    dec.finish(&mut |e| mapper.map(e.event, e.data, &mut events));
    for e in events {
        reducer::apply(&mut msg, e, 1);
    }
    reducer::finish(&mut msg, Ending::Eof, 2);
    msg
}
