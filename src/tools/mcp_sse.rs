//! The legacy HTTP+SSE transport (MCP 2024-11-05), for servers that do not speak streamable
//! HTTP: a `GET` opens an event stream whose first event, `endpoint`, names the URL to `POST`
//! messages to; the answers arrive on the stream. rmcp 3 has no client for it, so this is one on
//! palaver's reqwest and SSE decoder, handed to rmcp as a sink of outgoing messages and a stream
//! of incoming ones. Tried, as the specification's backwards-compatibility section says, when
//! streamable HTTP's first `POST` is refused with a 4xx. The same bounds as streamable HTTP: the
//! endpoint must be on the server's origin (the headers and token go there), one event is at
//! most the message limit, the connection has a timeout.

use crate::config::McpServer;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use std::pin::Pin;
use std::time::Duration;

/// Outgoing messages: each one a `POST` to the endpoint.
pub(super) type Outgoing =
    Pin<Box<dyn futures_util::Sink<TxJsonRpcMessage<RoleClient>, Error = std::io::Error> + Send>>;

/// Incoming messages, from the event stream.
pub(super) type Incoming = Pin<Box<dyn futures_util::Stream<Item = RxJsonRpcMessage<RoleClient>> + Send>>;

/// A reqwest error without the URL (which may hold credentials).
fn plain(e: reqwest::Error) -> String {
    e.without_url().to_string()
}

/// How long the server may take to open the stream and name its endpoint.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// The headers of every request: the table's, and the bearer token from its variable.
fn headers(cfg: &McpServer) -> Result<HeaderMap, String> {
    let mut out = HeaderMap::new();
    for (k, v) in &cfg.headers {
        let (Ok(name), Ok(value)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) else {
            return Err(format!("header `{k}` is not a valid HTTP header"));
        };
        out.insert(name, value);
    }
    if let Some(var) = &cfg.bearer_token_env {
        let token = std::env::var(var).map_err(|_| format!("bearer_token_env names {var}, which is not set"))?;
        let value = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
            .map_err(|_| format!("the token in {var} is not a valid header value"))?;
        out.insert(AUTHORIZATION, value);
    }
    Ok(out)
}

/// Opens the event stream at `url` and waits for its endpoint: the transport, or why not.
pub(super) async fn connect(cfg: &McpServer, url: &str, max_event: usize) -> Result<(Outgoing, Incoming), String> {
    let headers = headers(cfg)?;
    let http = reqwest::Client::builder()
        .connect_timeout(ENDPOINT_TIMEOUT)
        .redirect(crate::api::client::same_origin_redirects())
        .build()
        .map_err(|e| format!("the HTTP client could not start: {e}"))?;
    let base = reqwest::Url::parse(url).map_err(|e| format!("the url does not parse: {e}"))?;
    let get = http.get(base.clone()).headers(headers.clone()).header(ACCEPT, "text/event-stream").send();
    let resp = tokio::time::timeout(ENDPOINT_TIMEOUT, get)
        .await
        .map_err(|_| "its event stream did not open in time".to_owned())?
        .map_err(|e| format!("its event stream did not open: {}", plain(e)))?;
    let kind = resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    if !resp.status().is_success() || !kind.starts_with("text/event-stream") {
        return Err(format!("GET answered {} ({kind}), not an event stream", resp.status().as_u16()));
    }
    let (endpoint_tx, endpoint_rx) = tokio::sync::oneshot::channel();
    let (in_tx, mut in_rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(read(resp, max_event, endpoint_tx, in_tx));
    let endpoint = tokio::time::timeout(ENDPOINT_TIMEOUT, endpoint_rx)
        .await
        .map_err(|_| "its event stream named no endpoint in time".to_owned())?
        .map_err(|_| "its event stream ended before naming an endpoint".to_owned())?;
    let endpoint = base.join(endpoint.trim()).map_err(|e| format!("its endpoint does not parse: {e}"))?;
    if endpoint.origin() != base.origin() {
        // The headers and the token must not go to another host.
        return Err("its endpoint is on another origin: refused".to_owned());
    }
    let sink = futures_util::sink::unfold((http, endpoint, headers), |(http, endpoint, headers), msg| async move {
        let post = http.post(endpoint.clone()).headers(headers.clone()).json(&msg).send().await;
        match post {
            Ok(r) if r.status().is_success() => Ok((http, endpoint, headers)),
            Ok(r) => Err(std::io::Error::other(format!("the server answered {} to a message", r.status().as_u16()))),
            Err(e) => Err(std::io::Error::other(plain(e))),
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| in_rx.poll_recv(cx));
    Ok((Box::pin(sink), Box::pin(stream)))
}

/// Reads the event stream: the first `endpoint` event's data to `endpoint`, every message
/// event that parses to `incoming`, until the stream or the client ends. An event past
/// `max_event` ends it (the client sees the transport close).
async fn read(
    resp: reqwest::Response,
    max_event: usize,
    endpoint: tokio::sync::oneshot::Sender<String>,
    incoming: tokio::sync::mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
) {
    use futures_util::StreamExt as _;
    let mut endpoint = Some(endpoint);
    let mut decoder = crate::api::sse::SseDecoder::with_limit(max_event);
    let mut body = resp.bytes_stream();
    while let Some(Ok(chunk)) = body.next().await {
        let mut events = Vec::new();
        decoder.push(&chunk, &mut |ev| events.push(ev.owned()));
        if decoder.overflowed() {
            return;
        }
        for ev in events {
            if ev.event == "endpoint" {
                if let Some(tx) = endpoint.take() {
                    let _ = tx.send(ev.data);
                }
            } else if ev.event.is_empty() || ev.event == "message" {
                let Ok(msg) = serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&ev.data) else { continue };
                if incoming.send(msg).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Whether streamable HTTP's handshake failed with a 4xx that means "not this transport"
/// (400, 404, 405), not with a refusal of the credentials.
pub(super) fn refused(cause: &str) -> bool {
    ["400", "404", "405"].iter().any(|code| cause.match_indices(code).any(|(at, _)| status_at(cause, at)))
}

/// Whether the three digits at `at` stand alone as a status (`404 Not Found`, `(405)`), not as
/// part of a port, a number or an address (`:18404/mcp`).
fn status_at(cause: &str, at: usize) -> bool {
    let before = cause[..at].chars().next_back();
    let after = cause[at + 3..].chars().next();
    !before.is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '.' | '/' | '-' | '_'))
        && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.')
}

/// Connects over the legacy transport, initialises the session and lists the tools (within
/// `limit` all together).
pub(super) async fn start(
    cfg: &McpServer,
    url: &str,
    limit: Duration,
) -> Result<
    (rmcp::service::RunningService<RoleClient, super::live::Handler>, Vec<rmcp::model::Tool>, super::Overflow),
    String,
> {
    use rmcp::ServiceExt as _;
    let max = cfg.max_message_bytes.unwrap_or(super::MCP_MESSAGE_BYTES);
    let over = super::Overflow::default();
    let handshake = async {
        let transport = connect(cfg, url, max).await?;
        let handler = super::client_info(cfg.allow_sampling);
        let transport = rmcp::transport::IntoTransport::<RoleClient, _, _>::into_transport(transport);
        let transport = super::flood::Gate::new(transport, handler.budget.clone(), over.clone());
        let service =
            handler.serve(transport).await.map_err(|e| format!("the MCP handshake failed: {}", super::plain(&e)))?;
        let tools = super::list_tools(service.peer(), &over, cfg.max_tools.unwrap_or(super::MCP_TOOLS)).await?;
        Ok::<_, String>((service, tools))
    };
    match tokio::time::timeout(limit, handshake).await {
        Ok(Ok((service, tools))) => Ok((service, tools, over)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("it did not finish starting within {} s", limit.as_secs_f32())),
    }
}

#[cfg(test)]
mod tests {
    use super::refused;

    #[test]
    fn a_status_means_not_this_transport_and_a_port_does_not() {
        assert!(refused("Unexpected server response: 404 Not Found"));
        assert!(refused("http status (405)"));
        assert!(!refused("could not connect to http://127.0.0.1:18404/mcp: Connection refused"));
        assert!(!refused("unauthorized: 401"));
        assert!(!refused("timed out after 14045 ms"));
    }
}
