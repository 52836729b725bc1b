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
    dec.push(&data[..cut], &mut |e| out.push(e));
    for piece in data[cut..].chunks(7) {
        dec.push(piece, &mut |e| out.push(e));
    }
    dec.finish(&mut |e| out.push(e));
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
