//! What a response cache is to the client: a key for a request (its endpoint and its body, the
//! body's secrets redacted first) and the answer kept for it as the server sent it (status,
//! the headers that matter, the raw body bytes), so a replay goes through the same decoding
//! and mapping as a live answer. The client knows nothing of where entries live: a caller
//! that wants one (prompt sets) hangs a [`ReplyCache`] on the endpoint.

use super::endpoint::Endpoint;
use sha2::{Digest, Sha256};

/// The header a replayed answer carries, so those who read the reply can tell (a prompt-set
/// cell is marked cached when each of its answers has it).
pub const CACHE_HEADER: &str = "x-palaver-cache";

/// An answer as kept: what the client needs to replay it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedReply {
    /// Where the request went (user and password left out): for `compare cache` to list.
    pub url: String,
    pub status: u16,
    /// The response headers as the client reports them (secret ones already left out).
    pub headers: Vec<(String, String)>,
    /// The body as it arrived: SSE or one JSON document, secrets redacted.
    pub body: Vec<u8>,
}

/// A store of answers. `get` is called off the runtime threads; `put` must not block (a run's
/// cells keep going while it writes).
pub trait ReplyCache: std::fmt::Debug + Send + Sync {
    /// The fresh answer kept for `key`, if any.
    fn get(&self, key: &str) -> Option<CachedReply>;
    /// Keeps `reply` for `key` (complete 2xx answers only: the client decides).
    fn put(&self, key: String, reply: CachedReply);
}

/// The key of a request: a SHA-256 of the URL it goes to (with its non-secret query) and its
/// body with every secret palaver knows redacted, so neither the key nor anything derived
/// from it holds one, and two runs with different keys share answers.
#[must_use]
pub fn key(ep: &Endpoint, path: &str, body: &[u8]) -> String {
    let url = super::redact::storable_url(&ep.url(path));
    let mut h = Sha256::new();
    h.update(url.as_bytes());
    for (k, v) in ep.query.iter().filter(|(k, _)| !super::redact::is_secret_header(k)) {
        h.update(b"\n");
        h.update(k.as_bytes());
        h.update(b"=");
        h.update(v.as_bytes());
    }
    h.update(b"\n\n");
    h.update(crate::sys::secrets::redact(&String::from_utf8_lossy(body)).as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(url: &str) -> Endpoint {
        Endpoint { base_url: url.into(), ..Endpoint::default() }
    }

    #[test]
    fn the_same_request_has_the_same_key_and_another_endpoint_another() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
        let a = key(&ep("http://127.0.0.1:1/v1"), "chat/completions", body);
        assert_eq!(a, key(&ep("http://127.0.0.1:1/v1/"), "chat/completions", body));
        assert_eq!(a.len(), 64);
        assert_ne!(a, key(&ep("http://127.0.0.1:2/v1"), "chat/completions", body));
        assert_ne!(a, key(&ep("http://127.0.0.1:1/v1"), "responses", body));
        assert_ne!(a, key(&ep("http://127.0.0.1:1/v1"), "chat/completions", br#"{"model":"n"}"#));
        let mut q = ep("http://127.0.0.1:1/v1");
        q.query = vec![("api-version".into(), "2024".into())];
        assert_ne!(a, key(&q, "chat/completions", body));
    }

    #[test]
    fn a_secret_in_the_body_does_not_change_the_key() {
        let secret = "sk-reply-cache-key-test-1234567890";
        crate::sys::secrets::register(secret);
        let e = ep("http://127.0.0.1:1/v1");
        let with = format!(r#"{{"model":"m","messages":[{{"role":"user","content":"my key is {secret}"}}]}}"#);
        let redacted = with.replace(secret, crate::sys::secrets::REDACTED);
        assert_eq!(key(&e, "chat/completions", with.as_bytes()), key(&e, "chat/completions", redacted.as_bytes()));
        // A user name and password in the URL are not part of it either.
        assert_eq!(
            key(&ep("http://u:pw-secret@127.0.0.1:1/v1"), "chat/completions", b"{}"),
            key(&e, "chat/completions", b"{}")
        );
    }
}
