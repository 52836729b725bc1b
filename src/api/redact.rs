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
use std::borrow::Cow;

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

/// Redacts an error's message and body.
pub fn error(e: &mut ErrorInfo) {
    secrets::redact_string(&mut e.message);
    secrets::redact_json(&mut e.body);
}

/// Redacts one event the client is about to report.
pub fn wire(ev: &mut WireEvent) {
    if secrets::is_empty() {
        return;
    }
    match ev {
        WireEvent::Retrying { reason, .. } => secrets::redact_string(reason),
        WireEvent::Opened { headers, .. } => {
            for (_, v) in headers.iter_mut() {
                secrets::redact_string(v);
            }
        }
        WireEvent::Chunk { frames, events, .. } => {
            // Events are mapped from the frames: when no frame holds a secret, none does.
            if frames.iter().any(|f: &Frame| secrets::holds(f.data.as_bytes())) {
                frames.iter_mut().for_each(|f| secrets::redact_string(&mut f.data));
                events.iter_mut().for_each(event);
            }
        }
        WireEvent::Failed(e) => error(e),
        WireEvent::Closed { .. } => {}
    }
}

fn event(ev: &mut StreamEvent) {
    use secrets::{redact_json as value, redact_string as string};
    match ev {
        StreamEvent::Text { delta, .. } | StreamEvent::Reasoning { delta, .. } | StreamEvent::Refusal { delta, .. } => {
            if let Cow::Owned(clean) = secrets::redact(delta) {
                *delta = clean.into();
            }
        }
        StreamEvent::ToolCall(c) => string(&mut c.arguments),
        StreamEvent::ToolCallArguments { arguments, .. } => string(arguments),
        StreamEvent::Error(e) => {
            string(&mut e.message);
            value(&mut e.body);
        }
        StreamEvent::Item { item, .. } => value(item),
        StreamEvent::ItemUpdate { update, .. } => match update {
            ItemUpdate::Append { delta, .. } => string(delta),
            ItemUpdate::Set { value: v, .. } | ItemUpdate::Note { value: v, .. } => value(v),
            ItemUpdate::Status(s) => string(s),
        },
        StreamEvent::Unknown { raw, .. } => value(raw),
        StreamEvent::Malformed { data, .. } => string(data),
        StreamEvent::Annotation { value: v, .. }
        | StreamEvent::Logprobs { value: v, .. }
        | StreamEvent::FilterOffsets { value: v, .. } => value(v),
        StreamEvent::Usage(v) | StreamEvent::PromptFilter(v) => value(v),
        _ => {}
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
        ep.register_secrets();
        assert!(secrets::holds(b"echo: hunter2-long"));
        let curl = ep.curl(crate::api::Api::Chat, &serde_json::json!({}));
        assert!(!curl.contains("hunter2") && !curl.contains("me:") && curl.contains("https://h.example/v1/"), "{curl}");
    }

    #[test]
    fn secrets_are_replaced_everywhere_short_values_are_not() {
        secrets::register_all(["sk-secret-123", "1"]);
        assert_eq!(secrets::redact("bad key: Bearer sk-secret-123!"), "bad key: Bearer [redacted]!");
        assert!(matches!(secrets::redact("1 plain"), Cow::Borrowed(_)));
        let mut v = serde_json::json!({"error": {"message": "sk-secret-123", "sk-secret-123": ["sk-secret-123"]}});
        secrets::redact_json(&mut v);
        assert!(!v.to_string().contains("sk-secret"), "{v}");
        let mut ev =
            WireEvent::Opened { status: 200, headers: vec![("x-echo".into(), "sk-secret-123".into())], at_ms: 0 };
        wire(&mut ev);
        assert!(!format!("{ev:?}").contains("sk-secret"));
    }
}
