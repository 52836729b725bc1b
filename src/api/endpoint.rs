//! Where and how requests go: the base URL, the key (a [`Secret`] that never prints), how it is
//! sent, the profile's headers and query, timeouts, retries and limits; and the secrets a
//! server might echo back, for redaction.

use super::Api;
use super::limits::Limits;
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// An API key. Its `Debug` never shows it, so it cannot leak through logs or error text.
#[derive(Clone, Default)]
pub struct Secret(String);

impl Secret {
    #[must_use]
    /// Every key made joins the one redactor: nothing stored, shown or sent back holds it.
    pub fn new(s: String) -> Self {
        crate::sys::secrets::register(&s);
        Self(s)
    }
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "<none>" } else { "<redacted>" })
    }
}

/// How the key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthStyle {
    #[default]
    Bearer,
    /// Azure: `api-key: KEY`.
    ApiKeyHeader,
}

/// Where the key came from, so a refused key can be named in the hint (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum KeySource {
    /// Not known (the demo, or an endpoint built by hand).
    #[default]
    Unknown,
    /// The environment variable of this name.
    Env(String),
    /// The profile's `api_key_cmd`.
    Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub first_byte: Duration,
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self { connect: Duration::from_secs(10), first_byte: Duration::from_secs(120), idle: Duration::from_secs(60) }
    }
}

/// Where and how to send requests.
#[derive(Debug, Clone, Default)]
pub struct Endpoint {
    pub base_url: String,
    pub key: Secret,
    /// Where `key` came from (for the hint a 401 gets).
    pub key_source: KeySource,
    pub auth: AuthStyle,
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
    pub timeouts: Timeouts,
    pub max_retries: u32,
    /// Longest `Retry-After` palaver will sleep; longer ones are reported instead.
    pub max_retry_wait: Duration,
    /// What a reply, a body or a request may grow to.
    pub limits: Limits,
    /// Where its errors are shown: their hints name that face's knobs.
    pub face: super::errors::Face,
}

impl Endpoint {
    #[must_use]
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base_url.trim_end_matches('/'), path.trim_start_matches('/'))
    }

    /// Adds the query, the key (as the profile says) and the profile's headers to a request.
    pub fn prepare(&self, mut req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if !self.query.is_empty() {
            req = req.query(&self.query);
        }
        if !self.key.is_empty() {
            req = match self.auth {
                AuthStyle::Bearer => req.bearer_auth(self.key.expose()),
                AuthStyle::ApiKeyHeader => req.header("api-key", self.key.expose()),
            };
        }
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        req
    }

    /// Registers the secrets a server might echo with the one registry: the key, the configured
    /// secret headers' values and a password in the base URL.
    pub fn register_secrets(&self) {
        let headers = self.headers.iter().filter(|(k, _)| super::redact::is_secret_header(k)).map(|(_, v)| v.clone());
        let key = Some(self.key.expose().to_owned()).filter(|k| !k.is_empty());
        // A password in the base URL is a secret too, wherever a server echoes it.
        let password = super::redact::url_password(&self.base_url);
        crate::sys::secrets::register_all(key.into_iter().chain(headers).chain(password));
    }

    /// A `curl` command reproducing a request, with the key shown as an environment variable.
    #[must_use]
    pub fn curl(&self, api: Api, body: &Value) -> String {
        let body = body.to_string().replace('\'', "'\\''");
        format!("{} -d '{body}'", self.curl_head(api))
    }

    /// `curl` reading the body from `path` (`--data-binary @path`): for bodies too large for a
    /// command line (attachments).
    #[must_use]
    pub fn curl_file(&self, api: Api, path: &str) -> String {
        format!("{} --data-binary '@{}'", self.curl_head(api), path.replace('\'', "'\\''"))
    }

    /// The command up to the body: URL, auth, headers.
    fn curl_head(&self, api: Api) -> String {
        // A user and password in the base URL are never printed: a copied command is shared.
        let url = super::redact::storable_url(&self.url(api.path()));
        let mut s = format!("curl -sN '{url}'");
        if !self.query.is_empty() {
            let q: Vec<String> = self.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s = format!("curl -sN '{url}?{}'", q.join("&"));
        }
        match self.auth {
            AuthStyle::Bearer => s.push_str(" -H \"Authorization: Bearer $OPENAI_API_KEY\""),
            AuthStyle::ApiKeyHeader => s.push_str(" -H \"api-key: $OPENAI_API_KEY\""),
        }
        for (k, v) in &self.headers {
            // A secret header is shown as redacted, like the key: a copied command is shared.
            let v = if super::redact::is_secret_header(k) { super::redact::REDACTED } else { v.as_str() };
            s.push_str(&format!(" -H '{k}: {v}'"));
        }
        s.push_str(" -H 'Content-Type: application/json'");
        s
    }
}
