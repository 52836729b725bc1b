//! Redaction of palaver's own secrets from what servers send back: a 401 that quotes the
//! `Authorization` header, a proxy that echoes `api-key` in a response header, a body that
//! repeats a configured secret header. Everything the client reports passes through here, so
//! what is printed, stored, exported or shown in the inspector never holds the key.
//!
//! A secret is the key, and the value of every configured header whose name says it is one
//! (`auth`, `key`, `token`, `secret`, `cookie`, `password`, `session`). Values shorter than
//! [`MIN_SECRET`] bytes are not redacted: replacing every "1" of a reply is worse than useless.

use super::client::{Frame, WireEvent};
use super::event::{ErrorInfo, ItemUpdate, StreamEvent};
use serde_json::Value;
use std::borrow::Cow;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";
/// Shorter values are not treated as secrets.
pub const MIN_SECRET: usize = 8;

/// The secrets of one endpoint.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
    /// One searcher per secret, built once: every event of a stream is searched.
    finders: Vec<memchr::memmem::Finder<'static>>,
}

/// What [`Redactor::seen_in`] keeps between reads.
#[derive(Debug, Default)]
pub struct SecretWatch {
    /// The last bytes of the body so far, shorter than the longest secret.
    tail: Vec<u8>,
    seen: bool,
}

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
    /// Redacts `secrets` (the short ones are ignored).
    #[must_use]
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = secrets.into_iter().filter(|s| s.len() >= MIN_SECRET).collect();
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        let finders = secrets.iter().map(|s| memchr::memmem::Finder::new(s.as_bytes()).into_owned()).collect();
        Self { secrets, finders }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Whether `s` holds a secret.
    #[must_use]
    pub fn finds(&self, s: &str) -> bool {
        self.finds_bytes(s.as_bytes())
    }

    fn finds_bytes(&self, b: &[u8]) -> bool {
        self.finders.iter().any(|f| f.find(b).is_some())
    }

    /// Watches a body read by read: true from the read in which a secret shows (whole, or split
    /// across the end of the read before) on. Until then nothing decoded from the body can hold
    /// one, so its events need no search of their own.
    pub fn seen_in(&self, watch: &mut SecretWatch, read: &[u8]) -> bool {
        // Secrets are sorted longest first; a split one has at most this many bytes on each side.
        let Some(k) = self.secrets.first().map(|s| s.len() - 1) else { return false };
        if !watch.seen {
            let mut seam = std::mem::take(&mut watch.tail);
            seam.extend_from_slice(&read[..read.len().min(k)]);
            watch.seen = self.finds_bytes(&seam) || self.finds_bytes(read);
            // The new tail: the body's last `k` bytes.
            if read.len() >= k {
                seam.clear();
                seam.extend_from_slice(&read[read.len() - k..]);
            } else {
                seam.drain(..seam.len().saturating_sub(k));
            }
            watch.tail = seam;
        }
        watch.seen
    }

    /// `s` with every secret replaced.
    #[must_use]
    pub fn text<'a>(&self, s: &'a str) -> Cow<'a, str> {
        if !self.finds(s) {
            return Cow::Borrowed(s);
        }
        let mut out = s.to_owned();
        for k in &self.secrets {
            out = out.replace(k.as_str(), REDACTED);
        }
        Cow::Owned(out)
    }

    /// Redacts a string in place.
    pub fn string(&self, s: &mut String) {
        if let Cow::Owned(clean) = self.text(s) {
            *s = clean;
        }
    }

    /// Redacts every string (and key) of a JSON value.
    pub fn value(&self, v: &mut Value) {
        if self.is_empty() {
            return;
        }
        match v {
            Value::String(s) => self.string(s),
            Value::Array(a) => a.iter_mut().for_each(|v| self.value(v)),
            Value::Object(o) => {
                if o.keys().any(|k| self.finds(k)) {
                    let taken = std::mem::take(o);
                    *o = taken.into_iter().map(|(k, v)| (self.text(&k).into_owned(), v)).collect();
                }
                o.values_mut().for_each(|v| self.value(v));
            }
            _ => {}
        }
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

    #[test]
    fn a_secret_is_seen_whole_or_split_across_reads_and_stays_seen() {
        let r = Redactor::new(["sk-secret-123".to_owned()]);
        let body = b"data: one\n\ndata: sk-secret-123\n\ndata: two\n\n";
        let at = body.windows(13).position(|w| w == b"sk-secret-123").unwrap_or(0);
        for size in [1, 2, 5, 13, 14, body.len()] {
            let mut watch = SecretWatch::default();
            let seen: Vec<bool> = body.chunks(size).map(|read| r.seen_in(&mut watch, read)).collect();
            // Seen from the read holding the secret's last byte, and from then on.
            let first = (at + 12) / size;
            assert_eq!(seen.iter().position(|&s| s), Some(first), "reads of {size}");
            assert!(seen[first..].iter().all(|&s| s), "reads of {size}");
        }
        let mut watch = SecretWatch::default();
        assert!(!b"sk-secret-12 sk-secret-1 3".chunks(3).any(|read| r.seen_in(&mut watch, read)));
        assert!(!Redactor::default().seen_in(&mut SecretWatch::default(), b"sk-secret-123"));
    }
}
