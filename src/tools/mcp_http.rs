//! Remote MCP servers over streamable HTTP, through rmcp's client transport on palaver's own
//! reqwest client: JSON and SSE responses, the `Mcp-Session-Id` header, a new session when the
//! server answers 404 for an expired one, and `DELETE` of the session when the client closes.
//! rmcp 3 has no client for the legacy HTTP+SSE transport (it was removed upstream): palaver's
//! own is `mcp_sse.rs`, tried when streamable HTTP is refused with a 4xx.
//!
//! The same bounds as a model's server: a connect timeout, redirects only within the origin
//! (a static header or the token must not follow a redirect elsewhere), one SSE event or JSON
//! body at most [`MCP_MESSAGE_BYTES`], and every secret (the token, secret-named headers)
//! redacted from what the server sends back.

use super::mcp_cap::MCP_MESSAGE_BYTES;
use super::mcp_oauth_client::{AuthedHttp, OAuthSession};
use crate::api::redact::{is_secret_header, storable_url};
use crate::config::McpServer;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How long opening the TCP (and TLS) connection to a remote server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The transport to one remote server (its secrets are registered with the one redactor).
pub(super) struct Remote {
    pub transport: StreamableHttpClientTransport<AuthedHttp>,
    /// The URL without credentials, for messages.
    pub shown: String,
}

/// Builds the transport for `url`, with the table's headers and the token from its variable,
/// or the stored OAuth tokens of `oauth` (refreshed as they expire).
///
/// # Errors
/// When the token's variable is not set, a header is not valid HTTP, or TLS cannot start.
pub(super) fn remote(
    cfg: &McpServer,
    url: &str,
    token: Option<String>,
    oauth: Option<Arc<OAuthSession>>,
) -> Result<Remote, String> {
    let shown = storable_url(url);
    let mut secrets = Vec::new();
    let mut headers = HashMap::new();
    for (k, v) in &cfg.headers {
        let (Ok(name), Ok(value)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) else {
            return Err(format!("header `{k}` is not a valid HTTP header"));
        };
        if is_secret_header(k) {
            secrets.push(v.clone());
        }
        headers.insert(name, value);
    }
    let token = match (token, &cfg.bearer_token_env) {
        (Some(t), _) => Some(t),
        (None, Some(var)) => match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => Some(t.trim().to_owned()),
            _ => return Err(format!("bearer_token_env names {var}, which is not set")),
        },
        (None, None) => None,
    };
    secrets.extend(token.clone());
    secrets.extend(oauth.iter().flat_map(|o| o.secrets.clone()));
    secrets.extend(crate::api::redact::url_password(url));
    // What the server might echo joins the one registry: its answers are redacted through it.
    crate::sys::secrets::register_all(secrets);
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(crate::api::client::same_origin_redirects())
        .build()
        .map_err(|e| format!("the HTTP client could not start: {e}"))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(headers)
        .max_sse_event_size(cfg.max_message_bytes.unwrap_or(MCP_MESSAGE_BYTES));
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    Ok(Remote {
        transport: StreamableHttpClientTransport::with_client(AuthedHttp { inner: client, oauth }, config),
        shown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_token_comes_from_its_variable_only() {
        let cfg = McpServer { bearer_token_env: Some("PALAVER_TEST_NO_SUCH_TOKEN_VAR".into()), ..McpServer::default() };
        let err = remote(&cfg, "http://127.0.0.1:1/mcp", None, None).err().unwrap_or_default();
        assert_eq!(err, "bearer_token_env names PALAVER_TEST_NO_SUCH_TOKEN_VAR, which is not set");
        let r = remote(&cfg, "http://u:hunter2hunter2@127.0.0.1:1/mcp", Some("tok-secret-123".into()), None).ok();
        let r = r.map(|r| (crate::sys::secrets::redact("a tok-secret-123 hunter2hunter2").into_owned(), r.shown));
        assert_eq!(r, Some(("a [redacted] [redacted]".to_owned(), "http://127.0.0.1:1/mcp".to_owned())));
    }

    #[tokio::test]
    async fn secret_headers_are_redacted_and_bad_ones_refused() {
        let cfg = McpServer {
            headers: [("X-Api-Key".into(), "key-0123456789".into()), ("X-Team".into(), "platform-team".into())].into(),
            ..McpServer::default()
        };
        let r = remote(&cfg, "http://127.0.0.1:1/mcp", None, None)
            .ok()
            .map(|_| crate::sys::secrets::redact("key-0123456789 platform-team").into_owned());
        assert_eq!(r.as_deref(), Some("[redacted] platform-team"));
        let bad = McpServer { headers: [("a b".into(), "v".into())].into(), ..McpServer::default() };
        assert!(remote(&bad, "http://h/mcp", None, None).err().is_some_and(|e| e.contains("`a b`")));
    }
}
