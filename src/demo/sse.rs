//! Server-sent-event framing and the paced streaming body that delivers the frames.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderName, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::Value;

/// One frame of the stream and how long to wait before sending it.
#[derive(Debug, Clone)]
pub struct Frame {
    pub delay: Duration,
    pub bytes: Bytes,
}

impl Frame {
    /// A Chat Completions frame: `data: {json}`.
    pub fn data(delay: Duration, json: &Value) -> Frame {
        Frame { delay, bytes: Bytes::from(format!("data: {json}\n\n")) }
    }

    pub fn done() -> Frame {
        Frame { delay: Duration::ZERO, bytes: Bytes::from_static(b"data: [DONE]\n\n") }
    }

    /// A Responses frame, which names its event type on an `event:` line as well.
    pub fn event(delay: Duration, kind: &str, json: &Value) -> Frame {
        Frame { delay, bytes: Bytes::from(format!("event: {kind}\ndata: {json}\n\n")) }
    }
}

/// Streams the frames with their delays. The stream is lazy: when the client goes away,
/// hyper drops the body and nothing further is slept on or produced.
pub fn response(frames: Vec<Frame>, request_id: u64) -> Response {
    let stream = futures_util::stream::unfold(frames.into_iter(), |mut frames| async move {
        let frame = frames.next()?;
        if !frame.delay.is_zero() {
            tokio::time::sleep(frame.delay).await;
        }
        Some((Ok::<Bytes, Infallible>(frame.bytes), frames))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream".to_string()),
            (header::CACHE_CONTROL, "no-cache".to_string()),
            (request_id_header(), format!("req_demo_{request_id}")),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// A plain JSON reply, with the same request-id header real providers send.
pub fn json(value: Value, request_id: u64) -> Response {
    ([(request_id_header(), format!("req_demo_{request_id}"))], axum::Json(value)).into_response()
}

fn request_id_header() -> HeaderName {
    HeaderName::from_static("x-request-id")
}
