//! Structured outputs and token probabilities cost nothing noticeable: checking a 100 KB JSON
//! answer against its schema (target < 5 ms), and drawing the heatmap of a 4,000-token answer
//! at 120×40 (target: well inside the 16 ms frame budget).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::structured::Structured;
use palaver::engine::target::TurnSettings;
use palaver::ui::{self, RenderCache, theme::Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use std::hint::black_box;

/// A list of people, about 100 KB of JSON, and the schema it follows.
fn answer() -> (Structured, String) {
    let schema = json!({"type": "object", "additionalProperties": false, "required": ["people"],
        "properties": {"people": {"type": "array", "items": {"type": "object", "additionalProperties": false,
            "required": ["name", "age", "email", "tags", "score"],
            "properties": {"name": {"type": "string", "minLength": 1}, "age": {"type": "integer", "minimum": 0},
                "email": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
                "score": {"type": "number", "minimum": 0, "maximum": 1}}}}}});
    let people: Vec<Value> = (0..1_000)
        .map(|i| {
            json!({"name": format!("Person number {i}"), "age": i % 90, "email": format!("p{i}@example.com"),
            "tags": ["alpha", "beta", format!("t{i}")], "score": (i % 100) as f64 / 100.0})
        })
        .collect();
    let text = json!({"people": people}).to_string();
    (Structured::new(schema, Some("people")).unwrap(), text)
}

/// A chat whose reply has `n` tokens with logprobs and five alternatives each, its heatmap open.
fn heatmap_state(n: usize) -> State {
    let target = TargetInfo::new("bench", "bench", Api::Chat);
    let theme = Theme::load("dark", None, false).unwrap();
    let settings = TurnSettings { stream: true, logprobs: Some(5), ..TurnSettings::default() };
    let mut s = State::new(target, settings, Config::default(), theme, "dark");
    let key = |s: &mut State, code: KeyCode, m: KeyModifiers| s.apply(Msg::Key(KeyEvent::new(code, m)));
    key(&mut s, KeyCode::Char('q'), KeyModifiers::NONE);
    key(&mut s, KeyCode::Enter, KeyModifiers::NONE);
    let id = s.live.as_ref().map(|l| l.id).unwrap();
    let words = [" the", " model", " wrote", " this", " answer", ",", " token", " by", " token", ".\n"];
    let mut events = Vec::new();
    for i in 0..n {
        let t = words[i % words.len()];
        let lp = -((i * 37 % 100) as f64) / 30.0;
        let top: Vec<Value> =
            (0..5).map(|k| json!({"token": words[(i + k) % words.len()], "logprob": lp - k as f64})).collect();
        events.push(StreamEvent::Text { choice: 0, delta: t.into() });
        events.push(StreamEvent::Logprobs {
            choice: 0,
            value: json!({"content": [{"token": t, "logprob": lp, "top_logprobs": top}]}),
        });
    }
    events.extend([StreamEvent::Finish { choice: 0, reason: "stop".into() }, StreamEvent::End]);
    let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 };
    s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 110 });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 20 }), now_ms: 120 });
    key(&mut s, KeyCode::Up, KeyModifiers::ALT);
    key(&mut s, KeyCode::Char('p'), KeyModifiers::NONE);
    key(&mut s, KeyCode::End, KeyModifiers::NONE);
    s.apply(Msg::Resize { width: 120, height: 40 });
    s
}

fn bench(c: &mut Criterion) {
    let (schema, text) = answer();
    assert!(text.len() > 100_000, "{} bytes", text.len());
    assert!(schema.check(&text).valid);
    c.bench_function("structured/check 100 KB answer", |b| b.iter(|| black_box(schema.check(black_box(&text)))));
    let s = heatmap_state(4_000);
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let mut cache = RenderCache::default();
    c.bench_function("probs/draw heatmap of 4,000 tokens 120x40", |b| {
        b.iter(|| term.draw(|f| drop(black_box(ui::draw(f, &s, &mut cache)))).map(drop))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
