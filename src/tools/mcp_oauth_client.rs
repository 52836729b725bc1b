//! A remote MCP server's HTTP client with OAuth: every request carries the stored access
//! token, refreshed (and stored again) when it is about to expire or when the server answers
//! 401 to it; a refresh that fails means the user must log in again. Without OAuth it is
//! palaver's reqwest client as it is.

use super::mcp_oauth as oauth;
use super::mcp_oauth_store::{self as store, Stored};
use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// Seconds before its expiry at which an access token is refreshed rather than sent.
const EXPIRY_MARGIN: i64 = 30;

/// What a server that needs the user to log in says, on its card, in `mcp list` and on stderr.
#[must_use]
pub fn needs_login(name: &str) -> String {
    format!("{name} needs login: run `palaver mcp login {name}`")
}

/// Whether OAuth is palaver's to do for this server: not when the config gives a bearer token
/// or an `Authorization` header of its own.
#[must_use]
pub fn may_use_oauth(cfg: &crate::config::McpServer) -> bool {
    cfg.bearer_token_env.is_none() && !cfg.headers.keys().any(|k| k.eq_ignore_ascii_case("authorization"))
}

/// One server's stored tokens, shared by the requests of its session.
pub struct OAuthSession {
    name: String,
    data_dir: PathBuf,
    http: reqwest::Client,
    stored: tokio::sync::Mutex<Stored>,
    /// The secrets as loaded, for the session's redactor.
    pub secrets: Vec<String>,
}

impl OAuthSession {
    /// The session of server `name` if there are tokens for `url` under `data_dir`.
    ///
    /// # Errors
    /// When the token file cannot be read or the HTTP client cannot start.
    pub fn open(name: &str, url: &str, data_dir: PathBuf) -> Result<Option<Arc<Self>>, String> {
        let Some(stored) = store::load(&data_dir, name, url)? else { return Ok(None) };
        let secrets = stored.secrets();
        crate::sys::secrets::register_all(&secrets);
        let http = oauth::http()?;
        Ok(Some(Arc::new(Self {
            name: name.to_owned(),
            data_dir,
            http,
            stored: tokio::sync::Mutex::new(stored),
            secrets,
        })))
    }

    /// The access token to send, refreshed first when it is (about to be) expired.
    ///
    /// # Errors
    /// [`needs_login`] with the reason, when the refresh fails.
    pub async fn token(&self) -> Result<String, String> {
        let mut s = self.stored.lock().await;
        if s.is_expiring(EXPIRY_MARGIN) {
            self.refresh(&mut s).await?;
        }
        Ok(s.access_token.clone())
    }

    /// The token to retry with after the server refused `used` with 401: refreshed, unless
    /// another request refreshed it meanwhile.
    ///
    /// # Errors
    /// [`needs_login`] with the reason, when the refresh fails.
    pub async fn after_refusal(&self, used: &str) -> Result<String, String> {
        let mut s = self.stored.lock().await;
        if s.access_token == used {
            self.refresh(&mut s).await?;
        }
        Ok(s.access_token.clone())
    }

    async fn refresh(&self, s: &mut Stored) -> Result<(), String> {
        // Another palaver (a second window, a headless run) may have refreshed meanwhile, and a
        // rotating server has then spent the refresh token held here: take the file's.
        let mut base = s.clone();
        if let Ok(Some(disk)) = store::load(&self.data_dir, &self.name, &s.server_url) {
            if disk.access_token != s.access_token {
                if !disk.is_expiring(EXPIRY_MARGIN) {
                    crate::sys::secrets::register_all(disk.secrets());
                    *s = disk;
                    return Ok(());
                }
                base = disk;
            }
        }
        let fresh =
            oauth::refresh(&self.http, &base).await.map_err(|e| format!("{} ({e})", needs_login(&self.name)))?;
        store::save(&self.data_dir, &self.name, &fresh)?;
        *s = fresh;
        Ok(())
    }
}

/// palaver's reqwest client, with the OAuth session of the server when it has one.
#[derive(Clone)]
pub struct AuthedHttp {
    pub inner: reqwest::Client,
    pub oauth: Option<Arc<OAuthSession>>,
}

type HttpError = StreamableHttpError<reqwest::Error>;

fn refused(why: String) -> HttpError {
    StreamableHttpError::AuthRequired(AuthRequiredError::new(why))
}

impl AuthedHttp {
    /// Runs `send` with the current token, and once more with a refreshed one when the server
    /// answers 401; without OAuth, with the transport's own header.
    async fn with_token<T, F, Fut>(&self, given: Option<String>, send: F) -> Result<T, HttpError>
    where
        F: Fn(Option<String>) -> Fut + Send,
        Fut: Future<Output = Result<T, HttpError>> + Send,
    {
        let Some(oauth) = &self.oauth else { return send(given).await };
        let token = oauth.token().await.map_err(refused)?;
        match send(Some(token.clone())).await {
            Err(StreamableHttpError::AuthRequired(_)) => {
                let fresh = oauth.after_refusal(&token).await.map_err(refused)?;
                if fresh == token {
                    return Err(refused(needs_login(&oauth.name)));
                }
                send(Some(fresh)).await
            }
            other => other,
        }
    }
}

impl StreamableHttpClient for AuthedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.with_token(auth_header, |t| {
            self.inner.post_message(uri.clone(), message.clone(), session_id.clone(), t, custom_headers.clone())
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.with_token(auth_header, |t| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                t,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.with_token(auth_header, |t| {
            self.inner.delete_session(uri.clone(), session_id.clone(), t, custom_headers.clone())
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, HttpError> {
        self.with_token(auth_header, |t| {
            self.inner.get_stream(uri.clone(), session_id.clone(), last_event_id.clone(), t, custom_headers.clone())
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, HttpError> {
        self.with_token(auth_header, |t| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                t,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(token: &str, expires_at: u64) -> Stored {
        Stored {
            server_url: "http://127.0.0.1:9/mcp".into(),
            // Nothing listens there: a refresh that reached the network would fail.
            token_endpoint: "http://127.0.0.1:9/token".into(),
            access_token: token.into(),
            refresh_token: Some("rt".into()),
            expires_at: Some(expires_at),
            ..Stored::default()
        }
    }

    #[tokio::test]
    async fn tokens_another_process_refreshed_are_taken_from_the_file() {
        let home = tempfile::tempdir().unwrap();
        let now = store::now();
        store::save(home.path(), "s", &stored("old", now.saturating_sub(5))).unwrap();
        let session = OAuthSession::open("s", "http://127.0.0.1:9/mcp", home.path().to_owned()).unwrap().unwrap();
        store::save(home.path(), "s", &stored("new", now + 3600)).unwrap();
        assert_eq!(session.token().await.unwrap(), "new");
        assert_eq!(session.after_refusal("old").await.unwrap(), "new", "already refreshed: no second refresh");
    }

    #[tokio::test]
    async fn a_failed_refresh_means_needs_login() {
        let home = tempfile::tempdir().unwrap();
        store::save(home.path(), "s", &stored("old", 1)).unwrap();
        let session = OAuthSession::open("s", "http://127.0.0.1:9/mcp", home.path().to_owned()).unwrap().unwrap();
        let e = session.token().await.unwrap_err();
        assert!(e.starts_with("s needs login: run `palaver mcp login s` (the token request failed"), "{e}");
        assert!(OAuthSession::open("s", "http://other/mcp", home.path().to_owned()).unwrap().is_none());
        let cfg = crate::config::McpServer { url: Some("http://h/mcp".into()), ..Default::default() };
        assert!(may_use_oauth(&cfg));
        let own = crate::config::McpServer { headers: [("authorization".into(), "x".into())].into(), ..cfg };
        assert!(!may_use_oauth(&own));
    }
}
