//! Entry points shared by the cargo-fuzz targets (`fuzz/`) and the corpus replay test, so the
//! corpus kept in the repository is replayed by `cargo test` on stable Rust. Each checks the
//! invariants its component promises and panics if one breaks.

use crate::api::Api;
use crate::api::sse::{SseDecoder, decode_all};
use crate::engine::turn::reconstruct;

/// The SSE decoder gives the same events whatever the read boundaries.
pub fn sse_decoder(data: &[u8]) {
    let whole = decode_all(data);
    let cut = data.first().map_or(0, |b| usize::from(*b) % (data.len() + 1));
    let mut out = Vec::new();
    let mut dec = SseDecoder::new();
    dec.push(&data[..cut], &mut |e| out.push(e.owned()));
    for piece in data[cut..].chunks(7) {
        dec.push(piece, &mut |e| out.push(e.owned()));
    }
    dec.finish(&mut |e| out.push(e.owned()));
    assert_eq!(out, whole, "SSE events differ when the body is split at {cut}");
}

/// Both mappers and the reducer accept any body without panicking, and the reply does not
/// depend on read boundaries.
pub fn mappers_and_reducer(data: &[u8]) {
    for api in [Api::Chat, Api::Responses] {
        let whole = reconstruct(api, &[data]);
        let cut = data.len() / 2;
        let split = reconstruct(api, &[&data[..cut], &data[cut..]]);
        assert_eq!(whole.choices, split.choices, "reply differs when split ({api:?})");
        assert_eq!(whole.items, split.items);
        assert!(whole.main().finish_reason.is_some(), "a finished reply always has a finish reason");
    }
}

/// Any response header value and any error body can be read without a panic: the retry
/// decision (`Retry-After`, `retry-after-ms`, a delay in the message), the provider error and
/// its description, and the redaction of an echoed key. The first line of the input is the
/// header value, the second the status, the rest the body.
pub fn headers_and_errors(data: &[u8]) {
    use reqwest::header::{HeaderMap, HeaderValue};
    let mut parts = data.splitn(3, |b| *b == b'\n');
    let value = parts.next().unwrap_or_default();
    let status = parts.next().and_then(|s| std::str::from_utf8(s).ok()?.trim().parse::<u16>().ok()).unwrap_or(429);
    let body = parts.next().unwrap_or_default();
    let err = crate::api::wire::error_from_body(status, body);
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_bytes(value) {
        for name in ["retry-after", "retry-after-ms", "x-should-retry"] {
            headers.insert(name, v.clone());
        }
    }
    let cap = std::time::Duration::from_secs(60);
    for attempt in [0, 3] {
        let _ = crate::api::retry::decide_retry(status, &headers, &err, attempt, 3, cap);
    }
    let described = crate::api::errors::describe_http(
        status,
        "http://127.0.0.1/v1/x",
        Api::Chat,
        &err,
        &crate::api::endpoint::KeySource::Unknown,
        true,
        crate::api::errors::Face::Headless,
    );
    let key = String::from_utf8_lossy(value).into_owned();
    crate::sys::secrets::register(&key);
    let clean = crate::sys::secrets::redact(&described);
    if key.len() >= crate::api::redact::MIN_SECRET {
        assert!(!clean.contains(&key), "the key survived redaction");
    }
}

/// Markdown renders any text at any width without a line wider than the width.
pub fn markdown(data: &[u8]) {
    let Some((&w, rest)) = data.split_first() else { return };
    let width = u16::from(w % 200) + 1;
    let text = String::from_utf8_lossy(rest);
    let theme = crate::ui::theme::Theme::default();
    for line in crate::ui::markdown::render(&text, width, &theme) {
        let cols: usize = line.spans.iter().map(|s| unicode_width::UnicodeWidthStr::width(s.content.as_ref())).sum();
        assert!(cols <= usize::from(width), "a line of {cols} columns at width {width}");
        for s in &line.spans {
            assert_no_controls(&s.content);
        }
    }
}

/// The sanitizer leaves no control sequence and is idempotent.
pub fn sanitizer(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let once = crate::ui::sanitize::sanitize(&text);
    assert_no_controls(&once);
    assert_eq!(crate::ui::sanitize::sanitize(&once), once, "sanitize is not idempotent");
}

fn assert_no_controls(s: &str) {
    for c in s.chars() {
        let bad = (c < ' ' && c != '\n')
            || ('\u{7f}'..='\u{9f}').contains(&c)
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}');
        assert!(!bad, "control character U+{:04X} survived", c as u32);
    }
}
