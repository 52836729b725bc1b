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
    /// The profile's `api_key_cmd`, as configured.
    Command(String),
}

impl KeySource {
    /// The key as a shell expression a copied command reads it from: `$GROQ_API_KEY`, or the
    /// profile's command run as palaver runs it (`$(sh -c 'pass show groq')`). Never the key.
    #[must_use]
    pub fn shell(&self) -> String {
        match self {
            Self::Env(var) if is_shell_name(var) => format!("${var}"),
            // A name the shell cannot expand with `$`: read it through `printenv`.
            Self::Env(var) => format!("$(printenv {})", shell_quote(var)),
            Self::Command(cmd) => format!("$(sh -c {})", shell_quote(cmd)),
            Self::Unknown => "$OPENAI_API_KEY".to_owned(),
        }
    }
}

fn is_shell_name(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `s` as one single-quoted shell word.
#[must_use]
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
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
    /// Answers to identical requests are taken from here instead of the network (prompt
    /// sets); `None` for everything else.
    pub cache: Option<std::sync::Arc<dyn super::reply_cache::ReplyCache>>,
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

    /// A `curl` command reproducing a request, the key read where the profile reads it
    /// ([`KeySource::shell`]).
    #[must_use]
    pub fn curl(&self, api: Api, body: &Value) -> String {
        format!("{} -d {}", self.curl_head(api), shell_quote(&body.to_string()))
    }

    /// `curl` reading the body from `path` (`--data-binary @path`): for bodies too large for a
    /// command line (attachments).
    #[must_use]
    pub fn curl_file(&self, api: Api, path: &str) -> String {
        format!("{} --data-binary {}", self.curl_head(api), shell_quote(&format!("@{path}")))
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
        // In double quotes: the shell expands the variable (or runs the command) when the copy runs.
        let key = self.key_source.shell();
        match self.auth {
            AuthStyle::Bearer => s.push_str(&format!(" -H \"Authorization: Bearer {key}\"")),
            AuthStyle::ApiKeyHeader => s.push_str(&format!(" -H \"api-key: {key}\"")),
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

/// Whether `url` points at this machine or a private network (a server the user runs: llama.cpp,
/// Ollama, vLLM, LM Studio), rather than a hosted provider.
#[must_use]
pub fn is_local(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let host = rest.split(['/', '?']).next().unwrap_or(rest);
    let name = if host.starts_with('[') {
        host.split(']').next().map_or(host, |h| h.trim_start_matches('['))
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    if let Ok(ip) = name.parse::<std::net::IpAddr>() {
        return match ip {
            std::net::IpAddr::V4(v4) => {
                v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified()
            }
            std::net::IpAddr::V6(v6) => {
                v6.is_loopback() || v6.is_unspecified() || (v6.segments()[0] & 0xfe00) == 0xfc00
            }
        };
    }
    let name = name.to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost") || name.ends_with(".local") || name == "host.docker.internal"
}

#[cfg(test)]
mod tests {
    use super::is_local;

    #[test]
    fn local_means_this_machine_or_a_private_network() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8000/v1",
            "http://192.168.1.20:1234/v1",
            "http://10.0.0.5/v1",
            "http://gpu-box.local:8000/v1",
        ] {
            assert!(is_local(url), "{url}");
        }
        for url in ["https://api.openai.com/v1", "https://api.groq.com/openai/v1", "https://8.8.8.8/v1"] {
            assert!(!is_local(url), "{url}");
        }
    }
}
