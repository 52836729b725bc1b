//! Fixture tests over recorded SSE transcripts (`tests/fixtures/sse/`, provenance in its
//! SOURCES.md): each is reconstructed and compared with its `.expect.json`, and must come out
//! identical whatever the read boundaries and line terminators.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use common::{chunks, reconstruct};
use palaver::api::Api;
use palaver::api::sse::SseDecoder;
use palaver::engine::message::Message;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sse");
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(&dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "sse"));
    v.sort();
    assert!(v.len() >= 20, "fixtures missing in {}", dir.display());
    v
}

fn api_of(p: &Path) -> Api {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if name.starts_with("responses") { Api::Responses } else { Api::Chat }
}

fn expected(p: &Path) -> Value {
    let text = std::fs::read_to_string(p.with_extension("expect.json")).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn opt_str(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn same_json_text(a: &str, b: &str) -> bool {
    match (serde_json::from_str::<Value>(a), serde_json::from_str::<Value>(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Compares a reconstruction with its expectation; returns the differences.
fn diff(msg: &Message, exp: &Value, api: Api) -> Vec<String> {
    let mut bad = Vec::new();
    let main = msg.main();
    if main.content != opt_str(&exp["text"]) {
        bad.push(format!("text {:?} != {:?}", main.content, exp["text"]));
    }
    if main.reasoning != opt_str(&exp["reasoning"]) {
        bad.push(format!("reasoning {:?} != {:?}", main.reasoning, exp["reasoning"]));
    }
    if main.refusal != opt_str(&exp["refusal"]) {
        bad.push(format!("refusal {:?} != {:?}", main.refusal, exp["refusal"]));
    }
    let calls = exp["tool_calls"].as_array().cloned().unwrap_or_default();
    if calls.len() != main.tool_calls.len() {
        bad.push(format!("{} tool calls, expected {}", main.tool_calls.len(), calls.len()));
    }
    for (got, want) in main.tool_calls.iter().zip(&calls) {
        if got.id != opt_str(&want["id"])
            || got.name != opt_str(&want["name"])
            || !same_json_text(&got.arguments, want["arguments"].as_str().unwrap_or(""))
        {
            bad.push(format!("tool call {got:?} != {want}"));
        }
    }
    let want_finish = if !exp["error"].is_null() {
        "error".to_owned()
    } else if api == Api::Responses {
        match exp["finish_reason"].as_str() {
            Some("completed") if !calls.is_empty() => "tool_calls".into(),
            Some("completed") => "stop".into(),
            Some("incomplete") => "length".into(),
            Some(other) => other.into(),
            None => "error".into(),
        }
    } else {
        opt_str(&exp["finish_reason"])
    };
    if main.finish_reason.as_deref() != Some(want_finish.as_str()) {
        bad.push(format!("finish {:?} != {want_finish}", main.finish_reason));
    }
    if msg.usage.clone().unwrap_or(Value::Null) != exp["usage"] {
        bad.push(format!("usage {:?} != {}", msg.usage, exp["usage"]));
    }
    if msg.prompt_filter.clone().unwrap_or(Value::Null) != exp["prompt_filter"] {
        bad.push(format!("prompt_filter {:?} != {}", msg.prompt_filter, exp["prompt_filter"]));
    }
    if let Some(want) = exp["content_filter"].as_object() {
        if main.content_filter.as_ref() != Some(want) {
            bad.push(format!("content_filter {:?} != {want:?}", main.content_filter));
        }
    }
    if exp["error"].is_null() == msg.error.is_some() {
        bad.push(format!("error {:?}, expected {}", msg.error, exp["error"]));
    }
    for c in exp["choices"].as_array().into_iter().flatten() {
        let idx = c["index"].as_u64().unwrap_or(0) as u32;
        let got = msg.choices.iter().find(|x| x.index == idx);
        if got.map(|g| g.content.as_str()) != c["text"].as_str() {
            bad.push(format!("choice {idx} text differs"));
        }
        if got.and_then(|g| g.finish_reason.as_deref()) != c["finish_reason"].as_str() {
            bad.push(format!("choice {idx} finish differs"));
        }
    }
    bad
}

#[test]
fn every_fixture_reconstructs_as_expected() {
    let mut failures = Vec::new();
    for p in fixtures() {
        let body = std::fs::read(&p).unwrap_or_default();
        let api = api_of(&p);
        let exp = expected(&p);
        for n in [body.len().max(1), 1, 3, 7, 64] {
            let msg = reconstruct(api, &chunks(&body, n));
            for d in diff(&msg, &exp, api) {
                failures.push(format!("{} [{n}-byte reads]: {d}", p.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn line_terminators_do_not_change_the_result() {
    for p in fixtures() {
        let body = std::fs::read(&p).unwrap_or_default();
        let api = api_of(&p);
        let lf = String::from_utf8_lossy(&body).replace("\r\n", "\n");
        let base = reconstruct(api, &[lf.as_bytes()]);
        for variant in [lf.replace('\n', "\r\n"), lf.replace('\n', "\r"), lf.replace("data: ", "data:")] {
            for n in [1, 2, 5] {
                let m = reconstruct(api, &chunks(variant.as_bytes(), n));
                assert_eq!(m.choices, base.choices, "{} variant at {n}-byte reads", p.display());
                assert_eq!(m.usage, base.usage);
            }
        }
    }
}

fn decode_split(body: &[u8], cut: usize) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dec = SseDecoder::new();
    dec.push(&body[..cut], &mut |e| out.push((e.event.to_owned(), e.text().into_owned())));
    dec.push(&body[cut..], &mut |e| out.push((e.event.to_owned(), e.text().into_owned())));
    dec.finish(&mut |e| out.push((e.event.to_owned(), e.text().into_owned())));
    out
}

/// Every byte boundary for small bodies; for large ones every boundary next to a line
/// terminator, a field colon or a non-ASCII byte (where splits can go wrong) and every 13th.
#[test]
fn split_at_every_byte_boundary_changes_nothing() {
    for p in fixtures() {
        let body = std::fs::read(&p).unwrap_or_default();
        let whole = decode_split(&body, body.len());
        let crlf = String::from_utf8_lossy(&body).replace("\r\n", "\n").replace('\n', "\r\n").into_bytes();
        let crlf_whole = decode_split(&crlf, crlf.len());
        for (b, w) in [(&body, &whole), (&crlf, &crlf_whole)] {
            let interesting = |i: usize| {
                b.len() <= 16 * 1024
                    || i % 13 == 0
                    || [i.wrapping_sub(1), i]
                        .iter()
                        .any(|&j| b.get(j).is_some_and(|c| matches!(c, b'\r' | b'\n' | b':') || *c >= 0x80))
            };
            for cut in (0..=b.len()).filter(|&i| interesting(i)) {
                assert_eq!(&decode_split(b, cut), w, "{} split at {cut}", p.display());
            }
        }
        // And the whole pipeline at a spread of cuts.
        let api = api_of(&p);
        let base = reconstruct(api, &[&body]);
        for cut in (0..=body.len()).step_by((body.len() / 97).max(1)) {
            let m = reconstruct(api, &[&body[..cut], &body[cut..]]);
            assert_eq!(m.choices, base.choices, "{} pipeline split at {cut}", p.display());
        }
    }
}
