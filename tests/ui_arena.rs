//! The blind arena and compare-from-here, driven through `State::apply` and drawn with
//! `ui::draw` over `TestBackend` (no network): names hidden until the vote, the vote effect,
//! a new battle after it; forking a chat at a turn, and keeping a column as a branch.
//! Regenerate snapshots with `INSTA_UPDATE=always cargo test --test ui_arena`, then read them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::compare::{CompareEffect, CompareMsg};
use palaver::app::{Effect, Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::Role;
use palaver::engine::target::TurnSettings;
use palaver::ui::{RenderCache, theme::Theme};

fn target(model: &str) -> TargetInfo {
    TargetInfo::new("demo", model, Api::Chat)
}

struct Sim {
    s: State,
    now: u64,
    live: Vec<(u64, usize, u64)>,
}

impl Sim {
    fn new() -> Self {
        let cfg = Config::parse("", std::path::Path::new("config.toml")).unwrap();
        let theme = Theme::load("dark", None, true).unwrap();
        let settings = TurnSettings { stream: true, ..TurnSettings::default() };
        Self { s: State::new(target("demo"), settings, cfg, theme, "dark"), now: 1000, live: Vec::new() }
    }

    fn key(&mut self, code: KeyCode, mods: KeyModifiers) -> Vec<Effect> {
        self.s.apply(Msg::Key(KeyEvent::new(code, mods)))
    }

    fn typed(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    /// Enter; remembers the column requests it started.
    fn enter(&mut self) -> Vec<Effect> {
        let fx = self.key(KeyCode::Enter, KeyModifiers::NONE);
        self.started(&fx);
        fx
    }

    fn started(&mut self, fx: &[Effect]) {
        for e in fx {
            if let Effect::Compare(CompareEffect::Start { generation, column, id, .. }) = e {
                self.live.retain(|l| l.1 != *column);
                self.live.push((*generation, *column, *id));
                self.s.apply(Msg::Compare(CompareMsg::Started {
                    generation: *generation,
                    column: *column,
                    id: *id,
                    now_ms: self.now,
                }));
            }
        }
    }

    fn column_answer(&mut self, column: usize, text: &str) -> Vec<Effect> {
        let &(generation, column, id) = self.live.iter().find(|l| l.1 == column).unwrap();
        self.now += 100;
        let chunk = WireEvent::Chunk {
            frames: vec![],
            frames_skipped: 0,
            events: vec![
                StreamEvent::Text { choice: 0, delta: text.into() },
                StreamEvent::Finish { choice: 0, reason: "stop".into() },
                StreamEvent::End,
            ],
            at_ms: 100,
        };
        let mut fx = Vec::new();
        for event in [chunk, WireEvent::Closed { at_ms: 120 }] {
            fx.extend(self.s.apply(Msg::Compare(CompareMsg::Wire {
                generation,
                column,
                id,
                event: Box::new(event),
                now_ms: self.now,
            })));
        }
        fx
    }

    /// A whole chat turn (not compare).
    fn chat_turn(&mut self, prompt: &str, answer: &str) {
        self.typed(prompt);
        self.key(KeyCode::Enter, KeyModifiers::NONE);
        let id = self.s.live.as_ref().map(|l| l.id).unwrap();
        self.s.apply(Msg::RequestStarted { id, now_ms: self.now });
        let events = vec![
            StreamEvent::Text { choice: 0, delta: answer.into() },
            StreamEvent::Finish { choice: 0, reason: "stop".into() },
            StreamEvent::End,
        ];
        self.now += 100;
        self.s.apply(Msg::Wire {
            id,
            event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 50 }),
            now_ms: self.now,
        });
        self.s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 60 }), now_ms: self.now });
    }

    fn render(&mut self, w: u16, h: u16) -> String {
        screen::text(&screen::settle(&mut self.s, w, h, &mut RenderCache::default()))
    }
}

/// Usage the demo would send: token counts (with reasoning ones) that tell models apart.
fn column_answer_with_usage(sim: &mut Sim, column: usize, text: &str, completion: u64) {
    let &(generation, column, id) = sim.live.iter().find(|l| l.1 == column).unwrap();
    sim.now += 100;
    let usage = serde_json::json!({
        "prompt_tokens": 438, "completion_tokens": completion, "total_tokens": 438 + completion,
        "completion_tokens_details": {"reasoning_tokens": completion / 3}
    });
    let events = vec![
        StreamEvent::Text { choice: 0, delta: text.into() },
        StreamEvent::Usage(usage),
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
        StreamEvent::End,
    ];
    for event in
        [WireEvent::Chunk { frames: vec![], frames_skipped: 0, events, at_ms: 100 }, WireEvent::Closed { at_ms: 480 }]
    {
        sim.s.apply(Msg::Compare(CompareMsg::Wire { generation, column, id, event: Box::new(event), now_ms: sim.now }));
    }
}

fn priced() -> Sim {
    let toml = "[models.demo]\nprice = { input = 1.0, output = 2.0 }\n[models.demo-reasoning]\nprice = { input = 3.0, output = 9.0 }\n";
    let cfg = Config::parse(toml, std::path::Path::new("config.toml")).unwrap();
    let theme = Theme::load("dark", None, true).unwrap();
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    Sim { s: State::new(target("demo"), settings, cfg, theme, "dark"), now: 1000, live: Vec::new() }
}

#[test]
fn the_arena_hides_names_and_numbers_until_a_deliberate_vote() {
    let mut sim = priced();
    sim.s.open_arena(vec![target("demo"), target("demo-reasoning")], 7).unwrap();
    let order: Vec<String> =
        sim.s.compare.active.as_ref().unwrap().columns.iter().map(|c| c.target.model.clone()).collect();
    sim.typed("Which is better?");
    sim.enter();
    assert_eq!(sim.live.len(), 2);
    column_answer_with_usage(&mut sim, 0, "First answer, from whoever A is.", 195);
    column_answer_with_usage(&mut sim, 1, "Second answer, from whoever B is.", 124);
    for (w, h) in [(80, 24), (120, 40)] {
        let screen = sim.render(w, h);
        // Nor the time to the first token, the time taken or the finish reason: they tell
        // servers and models apart too.
        for name in [
            "demo-reasoning",
            " demo ",
            "tok/s",
            "reasoning)",
            "in 438",
            "out ",
            "$0",
            "no price",
            "ttft",
            "done in",
            "finish",
        ] {
            assert!(!screen.contains(name), "{name:?} shows before the vote:\n{screen}");
        }
        assert!(screen.contains(" A ") && screen.contains(" B "), "{screen}");
        assert!(screen.contains("Vote") && screen.contains("A better") && screen.contains("both bad"), "{screen}");
        insta::assert_snapshot!(format!("arena_before_vote_{w}x{h}"), screen);
    }
    // Typing after the answers goes to the composer: "tell" casts no tie.
    let fx = sim.key(KeyCode::Char('t'), KeyModifiers::NONE);
    assert!(!fx.iter().any(|e| matches!(e, Effect::Compare(CompareEffect::Vote(_)))));
    sim.key(KeyCode::Backspace, KeyModifiers::NONE);

    // Tab to the bar, → → to "B better": the bar shows the highlight; Enter votes.
    sim.key(KeyCode::Tab, KeyModifiers::NONE);
    sim.key(KeyCode::Right, KeyModifiers::NONE);
    sim.key(KeyCode::Right, KeyModifiers::NONE);
    for (w, h) in [(80, 24), (120, 40)] {
        insta::assert_snapshot!(format!("arena_vote_bar_{w}x{h}"), sim.render(w, h));
    }
    let fx = sim.key(KeyCode::Enter, KeyModifiers::NONE);
    let vote = fx
        .iter()
        .find_map(|e| match e {
            Effect::Compare(CompareEffect::Vote(v)) => Some(v.clone()),
            _ => None,
        })
        .expect("a vote effect");
    assert_eq!(vote.vote, "b");
    let models: Vec<String> = vote.models.iter().map(|m| m.model.clone()).collect();
    assert_eq!(models, order);
    assert_eq!(vote.prompt, "Which is better?");
    for (w, h) in [(80, 24), (120, 40)] {
        let screen = sim.render(w, h);
        assert!(screen.contains("demo-reasoning"), "names show after the vote:\n{screen}");
        assert!(
            screen.contains("tok/s") && screen.contains("out ") && screen.contains("$0") && screen.contains("ttft"),
            "numbers show after the vote:\n{screen}"
        );
        insta::assert_snapshot!(format!("arena_after_vote_{w}x{h}"), screen);
    }

    // The next prompt is a new battle: empty columns, names hidden again, and the screen shows
    // this battle's prompt, not the first one's.
    sim.typed("Another one");
    sim.enter();
    let cmp = sim.s.compare.active.as_ref().unwrap();
    assert!(cmp.hidden());
    assert!(cmp.columns.iter().all(|c| c.transcript.cells.len() == 2), "fresh conversations: the prompt and the reply");
    sim.column_answer(0, "Third answer.");
    sim.column_answer(1, "Fourth answer.");
    let screen = sim.render(100, 28);
    assert!(screen.contains("Another one"), "{screen}");
    assert!(!screen.contains("Which is better?"), "the first battle's prompt is gone:\n{screen}");
    assert!(!screen.contains("demo-reasoning"), "{screen}");
}

#[test]
fn keeping_in_an_unrevealed_arena_is_refused() {
    let mut sim = Sim::new();
    sim.s.open_arena(vec![target("demo"), target("demo-reasoning")], 1).unwrap();
    sim.typed("q");
    sim.enter();
    sim.column_answer(0, "a");
    sim.column_answer(1, "b");
    // Tab goes to the vote bar, Tab again to the columns, where k would keep a column.
    sim.key(KeyCode::Tab, KeyModifiers::NONE);
    sim.key(KeyCode::Tab, KeyModifiers::NONE);
    sim.key(KeyCode::Char('k'), KeyModifiers::NONE);
    assert!(sim.s.compare.is_active(), "k does not leave the arena before the vote");
    assert!(sim.s.composer.is_empty(), "k was a command on the columns, not text");
}

#[test]
fn compare_from_here_forks_the_chat_and_keeping_a_column_branches() {
    let mut sim = Sim::new();
    sim.chat_turn("first question", "first answer from demo");
    sim.chat_turn("second question", "second answer from demo");
    // Select the first prompt: Alt+Up from the composer, then up to it.
    sim.key(KeyCode::Up, KeyModifiers::ALT);
    for _ in 0..3 {
        sim.key(KeyCode::Up, KeyModifiers::NONE);
    }
    let selected = sim.s.selected.and_then(|id| sim.s.transcript.message(id)).map(|m| m.text().to_owned());
    assert_eq!(selected.as_deref(), Some("first question"));
    sim.key(KeyCode::Char('m'), KeyModifiers::NONE);
    assert_eq!(sim.s.composer.text(), "/here ");
    sim.typed("demo-reasoning");
    let fx = sim.enter();
    assert_eq!(fx.iter().filter(|e| matches!(e, Effect::Compare(CompareEffect::Start { .. }))).count(), 1);
    let cmp = sim.s.compare.active.as_ref().unwrap();
    assert_eq!(cmp.columns.len(), 2);
    let texts = |c: &palaver::app::compare::Column| -> Vec<String> {
        c.transcript.cells.iter().filter_map(|x| x.message()).map(|m| m.text().to_owned()).collect()
    };
    assert_eq!(texts(&cmp.columns[0]), ["first question", "first answer from demo"], "the chat's own answer");
    assert_eq!(texts(&cmp.columns[1])[0], "first question", "the shared history up to the fork");
    sim.column_answer(1, "first answer from demo-reasoning");
    insta::assert_snapshot!("here_columns_100x24", sim.render(100, 24));

    // Keep column 2: the chat continues on a branch with the other model's answer.
    sim.key(KeyCode::Tab, KeyModifiers::NONE);
    sim.key(KeyCode::Char('l'), KeyModifiers::NONE);
    sim.key(KeyCode::Char('k'), KeyModifiers::NONE);
    assert!(!sim.s.compare.is_active());
    assert_eq!(sim.s.target.model, "demo-reasoning");
    let msgs: Vec<(Role, String)> =
        sim.s.transcript.cells.iter().filter_map(|c| c.message()).map(|m| (m.role(), m.text().to_owned())).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(msgs[1].1, "first answer from demo-reasoning");
    let at =
        sim.s.transcript.cells.iter().position(|c| c.message().is_some_and(|m| m.role() == Role::Assistant)).unwrap();
    assert_eq!(sim.s.transcript.versions_at(at), 1, "the old answer (and the turn after it) is kept as a version");
}

/// A column's answer with a reasoning block before it.
fn column_answer_with_reasoning(sim: &mut Sim, column: usize, reasoning: &str, text: &str) {
    let &(generation, column, id) = sim.live.iter().find(|l| l.1 == column).unwrap();
    sim.now += 100;
    let events = vec![
        StreamEvent::Reasoning { choice: 0, delta: reasoning.into() },
        StreamEvent::Text { choice: 0, delta: text.into() },
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
        StreamEvent::End,
    ];
    for event in
        [WireEvent::Chunk { frames: vec![], frames_skipped: 0, events, at_ms: 100 }, WireEvent::Closed { at_ms: 300 }]
    {
        sim.s.apply(Msg::Compare(CompareMsg::Wire { generation, column, id, event: Box::new(event), now_ms: sim.now }));
    }
}

#[test]
fn a_three_model_arena_hides_reasoning_until_the_vote_and_stores_one_battle() {
    let mut sim = Sim::new();
    sim.s.open_arena(vec![target("demo"), target("demo-reasoning"), target("demo-tools")], 7).unwrap();
    let order: Vec<String> =
        sim.s.compare.active.as_ref().unwrap().columns.iter().map(|c| c.target.model.clone()).collect();
    let thinker = order.iter().position(|m| m == "demo-reasoning").unwrap();
    sim.typed("Which is best?");
    sim.enter();
    assert_eq!(sim.live.len(), 3, "all three are asked");
    for c in 0..3 {
        if c == thinker {
            column_answer_with_reasoning(&mut sim, c, "Let me weigh PRIVATE-THOUGHTS first.", "An answer.");
        } else {
            sim.column_answer(c, "An answer.");
        }
    }
    let screen = sim.render(120, 30);
    for hidden in ["PRIVATE-THOUGHTS", "reasoning", "demo-reasoning", "demo-tools"] {
        assert!(!screen.contains(hidden), "{hidden:?} shows before the vote:\n{screen}");
    }
    assert!(screen.contains("C better") && screen.contains("all bad"), "one option a column:\n{screen}");
    insta::assert_snapshot!("arena_three_before_vote_120x30", screen);

    // C is best: one battle, its three models in column order, C ranked first.
    sim.key(KeyCode::Tab, KeyModifiers::NONE);
    sim.key(KeyCode::Char('c'), KeyModifiers::NONE);
    let fx = sim.key(KeyCode::Enter, KeyModifiers::NONE);
    let battles: Vec<_> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Compare(CompareEffect::Vote(v)) => Some(v.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(battles.len(), 1, "one battle, not its pairs");
    let models: Vec<String> = battles[0].models.iter().map(|m| m.model.clone()).collect();
    assert_eq!((models, battles[0].ranking()), (order.clone(), vec![2, 2, 1]));
    assert!(battles[0].models.iter().all(|m| m.style.is_some()), "each model carries its answers' style");
    let screen = sim.render(120, 30);
    assert!(screen.contains("▸ reasoning"), "the reasoning block shows after the vote:\n{screen}");
    assert!(screen.contains("demo-reasoning") && screen.contains("demo-tools"), "{screen}");
    insta::assert_snapshot!("arena_three_after_vote_120x30", screen);
}
