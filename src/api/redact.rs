//! Redaction of palaver's secrets from what servers send back: a 401 that quotes the
//! `Authorization` header, a proxy that echoes `api-key` in a response header, a body that
//! repeats a configured secret header, a model that repeats a key a tool printed. Everything
//! the client reports passes through here, so what is printed, stored, exported or shown in
//! the inspector never holds a secret palaver knows.
//!
//! An endpoint's secrets are its key, the value of every configured header whose name says it
//! is one (`auth`, `key`, `token`, `secret`, `cookie`, `password`, `session`) and a password in
//! its URL; they join the one registry ([`crate::sys::secrets`]) that also redacts every
//! other secret palaver knows and their encodings.

use super::client::{Frame, WireEvent};
use super::event::{ErrorInfo, ItemUpdate, StreamEvent};
use crate::sys::secrets;
pub use crate::sys::secrets::{MIN_SECRET, REDACTED, Watch as SecretWatch};
use serde_json::Value;
use std::borrow::Cow;

/// The api's view on the one registry of secrets ([`crate::sys::secrets`]): making one
/// registers the secrets it is given; what it redacts is every secret palaver knows, in every
/// form, whichever endpoint or server it came from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Redactor;

/// Whether a header of this name carries a secret.
#[must_use]
pub fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["auth", "key", "token", "secret", "cookie", "password", "session"].iter().any(|w| n.contains(w))
}

/// `url` without what must never be stored or printed: the user name and password of
/// `https://user:pass@host/v1`, and query parameters whose name says they hold a secret
/// (`?key=…`, `?access_token=…`). Other query parameters (`api-version`) are kept.
#[must_use]
pub fn storable_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").map_or(("", url), |(s, r)| (s, r));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (path, query) = tail.split_once('?').map_or((tail, None), |(p, q)| (p, Some(q)));
    let query = query.map(|q| q.split_once('#').map_or(q, |(q, _)| q));
    let kept: Vec<&str> = query
        .unwrap_or_default()
        .split('&')
        .filter(|kv| !kv.is_empty())
        .filter(|kv| !is_secret_header(kv.split_once('=').map_or(*kv, |(k, _)| k)))
        .collect();
    let path = path.split_once('#').map_or(path, |(p, _)| p);
    let sep = if scheme.is_empty() { "" } else { "://" };
    let query = if kept.is_empty() { String::new() } else { format!("?{}", kept.join("&")) };
    format!("{scheme}{sep}{host}{path}{query}")
}

/// `url` without the user name and password of `scheme://user:password@host/…` (everything
/// else kept, query included): what may leave palaver for a server to fetch.
#[must_use]
pub fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://{host}{}", &rest[end..]),
        None => url.to_owned(),
    }
}

/// The password in `scheme://user:password@host/…`, if the URL carries one.
#[must_use]
pub fn url_password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let userinfo = authority.rsplit_once('@')?.0;
    userinfo.split_once(':').map(|(_, p)| p.to_owned()).filter(|p| !p.is_empty())
}

impl Redactor {
    /// Registers `secrets` (the short ones are ignored).
    #[must_use]
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        secrets::register_all(secrets);
        Self
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        secrets::is_empty()
    }

    /// Whether `s` holds a secret.
    #[must_use]
    pub fn finds(&self, s: &str) -> bool {
        secrets::holds(s.as_bytes())
    }

    /// See [`secrets::seen_in`].
    pub fn seen_in(&self, watch: &mut SecretWatch, read: &[u8]) -> bool {
        secrets::seen_in(watch, read)
    }

    /// `s` with every secret replaced.
    #[must_use]
    pub fn text<'a>(&self, s: &'a str) -> Cow<'a, str> {
        secrets::redact(s)
    }

    /// Redacts a string in place.
    pub fn string(&self, s: &mut String) {
        secrets::redact_string(s);
    }

    /// Redacts every string (and key) of a JSON value.
    pub fn value(&self, v: &mut Value) {
        secrets::redact_json(v);
    }

    /// Redacts an error's message and body.
    pub fn error(&self, e: &mut ErrorInfo) {
        self.string(&mut e.message);
        self.value(&mut e.body);
    }

    /// Redacts one event the client is about to report.
    pub fn wire(&self, ev: &mut WireEvent) {
        if self.is_empty() {
            return;
        }
        match ev {
            WireEvent::Retrying { reason, .. } => self.string(reason),
            WireEvent::Opened { headers, .. } => {
                for (_, v) in headers.iter_mut() {
                    self.string(v);
                }
            }
            WireEvent::Chunk { frames, events, .. } => {
                // Events are mapped from the frames: when no frame holds a secret, none does.
                if frames.iter().any(|f: &Frame| self.finds(&f.data)) {
                    frames.iter_mut().for_each(|f| self.string(&mut f.data));
                    events.iter_mut().for_each(|e| self.event(e));
                }
            }
            WireEvent::Failed(e) => self.error(e),
            WireEvent::Closed { .. } => {}
        }
    }

    fn event(&self, ev: &mut StreamEvent) {
        match ev {
            StreamEvent::Text { delta, .. }
            | StreamEvent::Reasoning { delta, .. }
            | StreamEvent::Refusal { delta, .. } => {
                if let Cow::Owned(clean) = self.text(delta) {
                    *delta = clean.into();
                }
            }
            StreamEvent::ToolCall(c) => self.string(&mut c.arguments),
            StreamEvent::ToolCallArguments { arguments, .. } => self.string(arguments),
            StreamEvent::Error(e) => {
                self.string(&mut e.message);
                self.value(&mut e.body);
            }
            StreamEvent::Item { item, .. } => self.value(item),
            StreamEvent::ItemUpdate { update, .. } => match update {
                ItemUpdate::Append { delta, .. } => self.string(delta),
                ItemUpdate::Set { value, .. } | ItemUpdate::Note { value, .. } => self.value(value),
                ItemUpdate::Status(s) => self.string(s),
            },
            StreamEvent::Unknown { raw, .. } => self.value(raw),
            StreamEvent::Malformed { data, .. } => self.string(data),
            StreamEvent::Annotation { value, .. }
            | StreamEvent::Logprobs { value, .. }
            | StreamEvent::FilterOffsets { value, .. } => self.value(value),
            StreamEvent::Usage(v) | StreamEvent::PromptFilter(v) => self.value(v),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_userinfo_keeps_all_but_the_user_and_password() {
        assert_eq!(without_userinfo("https://u:p@h.example:8/a@b?x=1#f"), "https://h.example:8/a@b?x=1#f");
        assert_eq!(without_userinfo("https://h.example/a?k=1"), "https://h.example/a?k=1");
        assert_eq!(without_userinfo("no scheme@here"), "no scheme@here");
    }

    #[test]
    fn a_url_password_is_redacted_and_never_in_a_copied_command() {
        assert_eq!(url_password("https://me:hunter2-long@h.example/v1"), Some("hunter2-long".into()));
        assert_eq!(url_password("https://me@h.example/v1"), None);
        assert_eq!(url_password("https://h.example/v1/@x:y"), None);
        let ep = crate::api::endpoint::Endpoint {
            base_url: "https://me:hunter2-long@h.example/v1".into(),
            ..Default::default()
        };
        assert!(ep.redactor().finds("echo: hunter2-long"));
        let curl = ep.curl(crate::api::Api::Chat, &serde_json::json!({}));
        assert!(!curl.contains("hunter2") && !curl.contains("me:") && curl.contains("https://h.example/v1/"), "{curl}");
    }

    #[test]
    fn secrets_are_replaced_everywhere_short_values_are_not() {
        let r = Redactor::new(["sk-secret-123".to_owned(), "1".to_owned()]);
        assert_eq!(r.text("bad key: Bearer sk-secret-123!"), "bad key: Bearer [redacted]!");
        assert!(matches!(r.text("1 plain"), Cow::Borrowed(_)));
        let mut v = serde_json::json!({"error": {"message": "sk-secret-123", "sk-secret-123": ["sk-secret-123"]}});
        r.value(&mut v);
        assert!(!v.to_string().contains("sk-secret"), "{v}");
        let mut ev =
            WireEvent::Opened { status: 200, headers: vec![("x-echo".into(), "sk-secret-123".into())], at_ms: 0 };
        r.wire(&mut ev);
        assert!(!format!("{ev:?}").contains("sk-secret"));
    }
}
