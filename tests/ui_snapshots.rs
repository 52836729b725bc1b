//! Screen snapshots over ratatui's `TestBackend`: states are built by feeding `Msg`s and
//! `StreamEvent`s to `State::apply` (no network), drawn with `ui::draw`, and compared as text.
//! Regenerate with `INSTA_UPDATE=always cargo test --test ui_snapshots`, then read the diffs.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::message::ErrorInfo;
use palaver::engine::target::TurnSettings;
use palaver::ui::{RenderCache, theme::Theme};
use serde_json::{Value, json};

const SIZES: [(u16, u16); 3] = [(60, 20), (80, 24), (120, 40)];

const CONFIG: &str = r#"
[models.demo]
context_window = 8000
price = { input = 0.15, cached_input = 0.075, output = 0.60 }
"#;

const MARKDOWN: &str = "## A quick tour\n\nThis answer is **scripted**, so it looks the same every time.\n\n- **Bold** and *italic* text\n- Inline `code` spans\n\n| Model | What it shows |\n|---|---|\n| `demo-tools` | Parallel tool calls |\n| `demo-slow` | A long reply |\n\n```rust\nfn main() {\n    println!(\"hello\");\n}\n```\n\nAsk another question.";

struct Sim {
    s: State,
    now: u64,
}

impl Sim {
    fn new() -> Self {
        let target = TargetInfo::new("demo", "demo", Api::Chat);
        let cfg = Config::parse(CONFIG, std::path::Path::new("config.toml")).unwrap();
        let theme = Theme::load("dark", None, true).unwrap();
        let settings = TurnSettings { stream: true, ..TurnSettings::default() };
        Self { s: State::new(target, settings, cfg, theme, "dark"), now: 1000 }
    }

    fn key(&mut self, code: KeyCode, mods: KeyModifiers) {
        self.s.apply(Msg::Key(KeyEvent::new(code, mods)));
    }

    fn typed(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    /// Sends a prompt; returns the id of the reply that starts streaming.
    fn send(&mut self, text: &str) -> u64 {
        self.typed(text);
        self.key(KeyCode::Enter, KeyModifiers::NONE);
        let id = self.s.live.as_ref().map(|l| l.id).unwrap();
        self.s.apply(Msg::RequestStarted { id, now_ms: self.now });
        id
    }

    fn wire(&mut self, id: u64, event: WireEvent) {
        self.now += 50;
        self.s.apply(Msg::Wire { id, event: Box::new(event), now_ms: self.now });
    }

    fn events(&mut self, id: u64, events: Vec<StreamEvent>) {
        let at_ms = self.now + 50 - self.s.live.as_ref().and_then(|l| l.started_ms).unwrap_or(self.now);
        self.wire(id, WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms });
    }

    fn text(&mut self, id: u64, delta: &str) {
        self.events(id, vec![StreamEvent::Text { choice: 0, delta: delta.into() }]);
    }

    fn finish(&mut self, id: u64, reason: &str, usage: Option<Value>) {
        let mut evs = vec![StreamEvent::Finish { choice: 0, reason: reason.into() }];
        evs.extend(usage.map(StreamEvent::Usage));
        evs.push(StreamEvent::End);
        self.events(id, evs);
        self.wire(id, WireEvent::Closed { at_ms: 1234 });
    }

    /// A complete turn.
    fn turn(&mut self, prompt: &str, answer: &str, usage: Option<Value>) -> u64 {
        let id = self.send(prompt);
        self.text(id, answer);
        self.finish(id, "stop", usage);
        id
    }

    fn render(&mut self, w: u16, h: u16) -> String {
        screen::text(&screen::settle(&mut self.s, w, h, &mut RenderCache::default()))
    }

    fn snap_all(&mut self, name: &str) {
        for (w, h) in SIZES {
            let screen = self.render(w, h);
            insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
        }
    }
}

fn demo_usage() -> Value {
    json!({"prompt_tokens":30,"completion_tokens":192,"total_tokens":222,
        "prompt_tokens_details":{"cached_tokens":15,"audio_tokens":0},
        "completion_tokens_details":{"reasoning_tokens":24,"audio_tokens":0,"accepted_prediction_tokens":4,"rejected_prediction_tokens":2}})
}

fn rated(filtered: bool, severity: &str) -> Value {
    json!({"filtered": filtered, "severity": severity})
}

fn safe_prompt_filter(jailbreak: bool) -> Value {
    json!([{"prompt_index":0,"content_filter_results":{
        "hate":rated(false,"safe"),"jailbreak":{"filtered":false,"detected":jailbreak},
        "self_harm":rated(false,"safe"),"sexual":rated(false,"safe"),"violence":rated(false,"safe")}}])
}

fn content_filter(violence: &str, citation: bool) -> Value {
    let code = if citation {
        json!({"filtered":false,"detected":true,"citation":{"URL":"https://github.com/example/repo","license":"MIT"}})
    } else {
        json!({"filtered":false,"detected":false})
    };
    json!({"hate":rated(false,"safe"),"protected_material_code":code,
        "protected_material_text":{"filtered":false,"detected":false},
        "self_harm":rated(false,"safe"),"sexual":rated(false,"safe"),"violence":rated(violence=="high",violence)})
}

#[test]
fn empty_screen() {
    Sim::new().snap_all("empty");
}

#[test]
fn streaming_mid_line() {
    let mut sim = Sim::new();
    let id = sim.send("hello");
    sim.text(id, "## Streaming\n\nThe first line is **complete**.\nThe second line is still arr");
    sim.snap_all("streaming_mid_line");
}

#[test]
fn streaming_mid_code_fence() {
    let mut sim = Sim::new();
    let id = sim.send("code please");
    sim.text(id, "Here it is:\n\n```rust\nfn main() {\n    let x = 1;\n    println!(\"{x}\"");
    sim.snap_all("streaming_mid_fence");
}

#[test]
fn waiting_for_first_token() {
    let mut sim = Sim::new();
    sim.send("hello");
    sim.s.apply(Msg::Tick { now_ms: 1300 });
    let screen = sim.render(80, 24);
    insta::assert_snapshot!("waiting_80x24", screen);
}

#[test]
fn finished_markdown_with_usage() {
    let mut sim = Sim::new();
    let id = sim.send("show me markdown");
    sim.events(id, vec![StreamEvent::PromptFilter(safe_prompt_filter(false))]);
    sim.text(id, MARKDOWN);
    sim.events(id, vec![StreamEvent::ContentFilter { choice: 0, results: content_filter("safe", false) }]);
    sim.finish(id, "stop", Some(demo_usage()));
    sim.snap_all("finished_markdown");
}

#[test]
fn panels_without_data() {
    let mut sim = Sim::new();
    sim.turn("hello", "A reply from a provider that sends neither usage nor filter results.", None);
    let screen = sim.render(120, 40);
    insta::assert_snapshot!("panels_no_data_120x40", screen);
}

#[test]
fn safety_flagged() {
    let mut sim = Sim::new();
    let id = sim.send("describe a duel");
    sim.events(id, vec![StreamEvent::PromptFilter(safe_prompt_filter(true))]);
    for (phrase, sev) in
        [("I can describe the duel. ", "safe"), ("The knight lunges, ", "low"), ("the blade strikes hard ", "medium")]
    {
        sim.events(
            id,
            vec![
                StreamEvent::Text { choice: 0, delta: phrase.into() },
                StreamEvent::ContentFilter { choice: 0, results: content_filter(sev, false) },
            ],
        );
    }
    sim.events(id, vec![StreamEvent::ContentFilter { choice: 0, results: content_filter("high", true) }]);
    sim.finish(id, "content_filter", Some(json!({"prompt_tokens":31,"completion_tokens":33,"total_tokens":64})));
    sim.snap_all("safety_flagged");
}

#[test]
fn reasoning_collapsed_and_open() {
    let mut sim = Sim::new();
    let id = sim.send("think first");
    sim.events(
        id,
        vec![StreamEvent::Reasoning {
            choice: 0,
            delta:
                "The user wants me to think.\nFirst, acknowledge.\nSecond, explain where reasoning tokens are counted."
                    .into(),
        }],
    );
    let screen = sim.render(80, 24);
    insta::assert_snapshot!("reasoning_streaming_80x24", screen);
    sim.text(id, "**Short answer:** reasoning arrives before the reply.");
    sim.finish(id, "stop", Some(json!({"prompt_tokens":32,"completion_tokens":120,"total_tokens":152,"completion_tokens_details":{"reasoning_tokens":58}})));
    let screen = sim.render(80, 24);
    insta::assert_snapshot!("reasoning_collapsed_80x24", screen);
    sim.key(KeyCode::Up, KeyModifiers::ALT);
    sim.key(KeyCode::Char('t'), KeyModifiers::NONE);
    sim.snap_all("reasoning_open");
}

#[test]
fn error_notice_and_failed_reply() {
    let mut sim = Sim::new();
    let id = sim.send("hello");
    sim.text(id, "Let me start on that. Here is the first part of an answer that");
    let err = ErrorInfo {
        status: None,
        message: "The server had an error while processing your request. Sorry about that!".into(),
        kind: "stream".into(),
        body: Value::Null,
    };
    sim.events(
        id,
        vec![StreamEvent::Error(Box::new(palaver::api::event::ProviderError {
            status: None,
            message: err.message.clone(),
            kind: Some("server_error".into()),
            code: None,
            param: None,
            body: Value::Null,
        }))],
    );
    sim.wire(id, WireEvent::Closed { at_ms: 900 });
    // The failed prompt came back to the composer; clear it and type a bad command.
    sim.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    sim.typed("/api graphql");
    sim.key(KeyCode::Enter, KeyModifiers::NONE);
    sim.snap_all("error_notice");
}

#[test]
fn http_error_keeps_the_draft() {
    let mut sim = Sim::new();
    let id = sim.send("please answer");
    let err =
        ErrorInfo { status: Some(429), message: "Rate limit reached".into(), kind: "http".into(), body: Value::Null };
    sim.wire(id, WireEvent::Failed(err));
    let screen = sim.render(80, 24);
    insta::assert_snapshot!("http_error_80x24", screen);
}

#[test]
fn cancelled_reply() {
    let mut sim = Sim::new();
    sim.typed("/model demo-slow");
    sim.key(KeyCode::Enter, KeyModifiers::NONE);
    let id = sim.send("tell me about streaming");
    sim.text(id, "## Why answers stream\n\nA language model writes one token at a time. Streaming sends each token");
    sim.key(KeyCode::Esc, KeyModifiers::NONE);
    sim.snap_all("cancelled");
}

#[test]
fn tool_call_cards() {
    let mut sim = Sim::new();
    let id = sim.send("what is here?");
    let call = |slot: u32, id: &str, name: &str, args: &str| {
        StreamEvent::ToolCall(Box::new(palaver::api::event::CallFragment {
            choice: 0,
            slot,
            id: Some(id.into()),
            name: Some(name.into()),
            arguments: args.into(),
            extra: None,
            kind: None,
            index: None,
        }))
    };
    sim.events(
        id,
        vec![
            call(0, "call_1", "list_directory", "{\"path\": \".\"}"),
            call(1, "call_2", "read_file", "{\"path\": \"Cargo"),
        ],
    );
    let screen = sim.render(80, 24);
    insta::assert_snapshot!("tool_calls_streaming_80x24", screen);
    sim.events(
        id,
        vec![StreamEvent::ToolCall(Box::new(palaver::api::event::CallFragment {
            choice: 0,
            slot: 1,
            id: None,
            name: None,
            arguments: ".toml\"}".into(),
            extra: None,
            kind: None,
            index: None,
        }))],
    );
    sim.finish(id, "tool_calls", None);
    sim.snap_all("tool_calls");
}

#[test]
fn help_overlay() {
    let mut sim = Sim::new();
    sim.turn("hello", "Hi!", Some(demo_usage()));
    sim.key(KeyCode::F(1), KeyModifiers::NONE);
    sim.snap_all("help");
}

#[test]
fn palette_overlay() {
    let mut sim = Sim::new();
    sim.turn("hello", "Hi!", Some(demo_usage()));
    sim.key(KeyCode::Char('p'), KeyModifiers::CONTROL);
    sim.snap_all("palette");
    sim.typed("theme");
    let screen = sim.render(80, 24);
    insta::assert_snapshot!("palette_filtered_80x24", screen);
}

#[test]
fn selection_and_scrolling() {
    let mut sim = Sim::new();
    for i in 0..6 {
        sim.turn(&format!("question {i}"), &format!("Answer number {i}.\n\nIt has two paragraphs."), None);
    }
    sim.key(KeyCode::Up, KeyModifiers::ALT);
    sim.key(KeyCode::Up, KeyModifiers::NONE);
    let screen = sim.render(80, 24);
    insta::assert_snapshot!("selected_80x24", screen);
    sim.key(KeyCode::Esc, KeyModifiers::NONE);
    sim.key(KeyCode::PageUp, KeyModifiers::NONE);
    let id = sim.send("one more");
    sim.render(80, 24);
    sim.key(KeyCode::PageUp, KeyModifiers::NONE);
    sim.text(id, "new text arrives while scrolled up");
    let screen = sim.render(80, 24);
    insta::assert_snapshot!("scrolled_up_new_output_80x24", screen);
}

#[test]
fn a_reply_served_by_another_model_names_both() {
    // Azure and routers answer with a dated id: both names, and no error.
    let mut sim = Sim::new();
    let id = sim.send("hello");
    let meta = palaver::api::event::ResponseMeta { model: Some("demo-2024-07-18".into()), ..Default::default() };
    sim.events(id, vec![StreamEvent::Meta(Box::new(meta))]);
    sim.text(id, "Hello from a dated deployment.");
    sim.finish(id, "stop", None);
    let screen = sim.render(80, 24);
    assert!(screen.contains("asked demo · served demo-2024-07-18"), "{screen}");
    insta::assert_snapshot!("served_model_80x24", screen);
}

#[test]
fn queued_messages_under_the_transcript() {
    let mut sim = Sim::new();
    let id = sim.send("tell me a long story");
    sim.text(id, "Once upon a time, in a terminal far away, ");
    sim.typed("and then summarise it in one line");
    sim.key(KeyCode::Enter, KeyModifiers::NONE);
    sim.typed("a second question, queued behind the first");
    sim.key(KeyCode::Enter, KeyModifiers::NONE);
    sim.typed("still typing");
    let screen = sim.render(80, 24);
    assert!(screen.contains("queued (2)"), "{screen}");
    assert!(screen.contains("Enter queues"), "{screen}");
    sim.snap_all("queued");
}

#[test]
fn vim_mode_indicator_in_the_status_bar() {
    let mut sim = Sim::new();
    sim.typed("/vim");
    sim.key(KeyCode::Enter, KeyModifiers::NONE);
    sim.typed("a draft edited with vim keys");
    assert!(sim.render(80, 24).lines().last().unwrap().starts_with(" INSERT"));
    sim.key(KeyCode::Esc, KeyModifiers::NONE);
    sim.typed("bb2d");
    let screen = sim.render(80, 24);
    assert!(screen.lines().last().unwrap().starts_with(" NORMAL 2d"), "{screen}");
    insta::assert_snapshot!("vim_normal_pending_80x24", screen);
}
