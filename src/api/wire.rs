//! Small tolerant accessors over open JSON maps, and the provider error shape in all the
//! variants seen in the wild (PROTOCOL.md §3).

use super::event::ProviderError;
use serde_json::{Map, Value};

/// A string field, or `None` when missing, null or not a string.
#[must_use]
pub fn str_field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// A value rendered as text whether it was sent as a string or a number (`code` is both).
fn loose_string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Builds a `ProviderError` from an error body: `{"error":{...}}`, a flat `{message, code}`,
/// vLLM's `{"object":"error", ...}`, FastAPI's `{"detail": ...}`, a bare string, or anything
/// else (kept as the body).
#[must_use]
pub fn error_from_value(status: Option<u16>, body: &Value) -> ProviderError {
    let inner = match body.get("error") {
        Some(Value::Object(e)) => Some(e),
        _ => body.as_object(),
    };
    let message = inner
        .and_then(|e| e.get("message"))
        .and_then(|m| loose_string(Some(m)))
        .or_else(|| body.get("error").and_then(Value::as_str).map(str::to_owned))
        .or_else(|| body.as_str().map(str::to_owned))
        // FastAPI servers (and many Python proxies) send `{"detail": …}`.
        .or_else(|| body.get("detail").and_then(super::errors::detail_text))
        .unwrap_or_else(|| match status {
            Some(s) => format!("HTTP {s} with no error message"),
            None => "the provider reported an error without a message".to_owned(),
        });
    ProviderError {
        status,
        message,
        kind: loose_string(inner.and_then(|e| e.get("type"))),
        code: loose_string(inner.and_then(|e| e.get("code"))),
        param: loose_string(inner.and_then(|e| e.get("param"))),
        body: body.clone(),
    }
}

/// Parses an HTTP error body: JSON when it is JSON, else the text itself (HTML from gateways).
#[must_use]
pub fn error_from_body(status: u16, body: &[u8]) -> ProviderError {
    let value = serde_json::from_slice::<Value>(body).unwrap_or_else(|_| {
        let text = String::from_utf8_lossy(body);
        let clipped: String = text.trim().chars().take(2000).collect();
        Value::String(clipped)
    });
    let mut err = error_from_value(Some(status), &value);
    if let Value::String(text) = &value {
        if text.is_empty() {
            err.message = format!("HTTP {status} with an empty body");
        } else if text.starts_with('<') {
            // A gateway's HTML page: its text, not its markup (the body keeps the page).
            let plain = strip_tags(text);
            err.message = if plain.is_empty() { format!("HTTP {status} with an HTML page") } else { plain };
        }
    }
    err
}

/// The content coding of a body palaver cannot read, if the server used one: palaver asks for
/// none (it sends no `Accept-Encoding`), so a `gzip` or `br` body comes from a proxy or
/// gateway compressing anyway, and parsing its bytes would only report nonsense.
#[must_use]
pub fn compressed_coding(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let v = headers.get(reqwest::header::CONTENT_ENCODING)?;
    let coding = String::from_utf8_lossy(v.as_bytes()).trim().to_ascii_lowercase();
    (!coding.is_empty() && coding != "identity").then_some(coding)
}

/// What to say about a body sent with `coding` (see [`compressed_coding`]).
#[must_use]
pub fn compressed_message(coding: &str) -> String {
    format!(
        "the body is {coding}-compressed (Content-Encoding: {coding}), which palaver did not ask for \
         and cannot read; a proxy or gateway in between is probably compressing responses"
    )
}

/// The error a failed response's body stands for, told that it is compressed when it is.
#[must_use]
pub fn error_from_response(status: u16, headers: &reqwest::header::HeaderMap, body: &[u8]) -> ProviderError {
    let mut err = error_from_body(status, body);
    if let Some(coding) = compressed_coding(headers) {
        err.message = compressed_message(&coding);
        err.body = Value::String(format!("({} bytes, Content-Encoding: {coding})", body.len()));
    }
    err
}

/// The visible text of an HTML page, whitespace collapsed, at most 300 characters.
fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    words.join(" ").chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn coded(v: &str) -> reqwest::header::HeaderMap {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert(reqwest::header::CONTENT_ENCODING, reqwest::header::HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn a_compressed_error_body_says_so_instead_of_showing_its_bytes() {
        let gz = [0x1f_u8, 0x8b, 0x08, 0x00, 0xff, 0x1b, 0x5b];
        for coding in ["gzip", "br", " GZIP "] {
            let e = error_from_response(502, &coded(coding), &gz);
            let want = coding.trim().to_ascii_lowercase();
            assert!(e.message.contains(&format!("{want}-compressed")), "{coding}: {}", e.message);
            assert!(!e.message.contains('\u{1b}'));
        }
        // identity and no header at all are plain bodies, parsed as before.
        let body = br#"{"error":{"message":"bad"}}"#;
        assert_eq!(error_from_response(400, &coded("identity"), body).message, "bad");
        assert_eq!(error_from_response(400, &reqwest::header::HeaderMap::new(), body).message, "bad");
    }

    #[test]
    fn error_shapes() {
        let e =
            error_from_value(Some(429), &json!({"error":{"code":"429","message":"Please retry after 86400 seconds."}}));
        assert_eq!(e.code.as_deref(), Some("429"));
        assert!(e.message.contains("86400"));
        let e = error_from_value(None, &json!({"object":"error","message":"bad","type":"BadRequestError","code":400}));
        assert_eq!(e.message, "bad");
        assert_eq!(e.code.as_deref(), Some("400"));
        let e = error_from_body(502, b"<html><head><title>502</title></head><body><h1>Bad gateway</h1></body></html>");
        assert_eq!(e.message, "502 Bad gateway");
        assert_eq!(
            e.body,
            serde_json::json!("<html><head><title>502</title></head><body><h1>Bad gateway</h1></body></html>")
        );
        let e = error_from_body(500, b"");
        assert!(e.message.contains("500"));
    }
}
