//! Every key F1 lists under "Everywhere", pressed in every mode of the screen: the chat
//! (streaming, a message selected), the approval modal (in its guard, choosing, typing a
//! reason), the other overlays (help, palette, conversations, inspector), compare (streaming,
//! keys on the columns) and the arena's vote bar. Each must do its action there, not vanish
//! into whatever has the keys. Where an action has a meaning of its own in a mode (Esc closes
//! an overlay, the page keys scroll what is on top) that meaning counts; nothing may be a no-op.

use crate::api::client::WireEvent;
use crate::api::event::{CallFragment, StreamEvent};
use crate::app::compare::{ColumnView, CompareEffect, CompareMsg};
use crate::app::effect::Effect;
use crate::app::keymap::{Action, Context};
use crate::app::msg::{Anchor, Msg};
use crate::app::overlay::Overlay;
use crate::app::state::{Focus, State, TargetInfo};
use crate::app::test_state;
use crate::app::tools::ToolSet;
use crate::tools::Registry;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::Arc;

fn key(s: &mut State, code: KeyCode, mods: KeyModifiers) -> Vec<Effect> {
    s.apply(Msg::Key(KeyEvent::new(code, mods)))
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        key(s, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

fn base() -> State {
    let mut s = test_state();
    s.tools.set = ToolSet(Arc::new(Registry::builtins()));
    s.tools.flags.mode = crate::engine::tool_loop::ToolMode::Auto;
    s
}

/// A chat reply to `prompt` streams; returns its id.
fn send(s: &mut State, prompt: &str) -> u64 {
    typed(s, prompt);
    key(s, KeyCode::Enter, KeyModifiers::NONE);
    let id = s.live.as_ref().map(|l| l.id).unwrap_or_default();
    s.apply(Msg::RequestStarted { id, now_ms: 100 });
    id
}

fn end(s: &mut State, id: u64, events: Vec<StreamEvent>) {
    let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 };
    s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 110 });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 20 }), now_ms: 120 });
}

fn answered(s: &mut State) {
    let id = send(s, "first");
    let events = vec![
        StreamEvent::Text { choice: 0, delta: "an answer".into() },
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
        StreamEvent::End,
    ];
    end(s, id, events);
}

/// The approval modal shows a `write_file` call.
fn approval(s: &mut State) {
    let id = send(s, "write");
    let call = StreamEvent::ToolCall(Box::new(CallFragment {
        choice: 0,
        slot: 0,
        id: Some("call_0".into()),
        name: Some("write_file".into()),
        arguments: r#"{"path":"a.txt","content":"x"}"#.into(),
        extra: None,
        kind: None,
        index: None,
    }));
    end(s, id, vec![call, StreamEvent::Finish { choice: 0, reason: "tool_calls".into() }, StreamEvent::End]);
    assert!(s.tools.approval.is_some());
}

fn past_guard(s: &mut State) {
    let t = s.now_ms;
    s.apply(Msg::Tick { now_ms: t });
    s.apply(Msg::Tick { now_ms: t + 2000 });
}

/// Two compare columns asked "q" (or an arena's two hidden models); `answer` lets them answer.
fn compare(s: &mut State, arena: bool, answer: bool) {
    let t = |m: &str| TargetInfo::new("demo", m, crate::api::Api::Chat);
    let opened = if arena {
        s.open_arena(vec![t("demo"), t("demo-reasoning")], 3)
    } else {
        s.open_compare(vec![t("a"), t("b")])
    };
    opened.unwrap_or_else(|e| panic!("{e}"));
    typed(s, "q");
    let fx = key(s, KeyCode::Enter, KeyModifiers::NONE);
    for e in &fx {
        let Effect::Compare(CompareEffect::Start { generation, column, id, .. }) = e else { continue };
        let (generation, column, id) = (*generation, *column, *id);
        s.apply(Msg::Compare(CompareMsg::Started { generation, column, id, now_ms: 100 }));
        if answer {
            let events = vec![
                StreamEvent::Text { choice: 0, delta: "an answer".into() },
                StreamEvent::Finish { choice: 0, reason: "stop".into() },
                StreamEvent::End,
            ];
            for event in [
                WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 },
                WireEvent::Closed { at_ms: 20 },
            ] {
                s.apply(Msg::Compare(CompareMsg::Wire { generation, column, id, event: Box::new(event), now_ms: 200 }));
            }
        }
    }
    // The columns as drawn, each scrolled to the middle of a long conversation.
    let view = |column| ColumnView {
        column,
        area: (0, 0, 40, 10),
        frame: (0, 0, 42, 12),
        lines: 100,
        top: 50,
        turns: vec![0],
    };
    s.view.compare.columns = vec![view(0), view(1)];
    if let Some(cmp) = s.compare.active.as_mut() {
        for c in &mut cmp.columns {
            c.scroll = Some(50);
        }
    }
}

/// Puts a fresh state into one mode.
type Setup = fn(&mut State);

/// The modes, each a fresh state with a draft in the composer and the chat scrolled up.
fn modes() -> Vec<(&'static str, State)> {
    let setups: Vec<(&'static str, Setup)> = vec![
        ("chat, streaming", |s| {
            send(s, "q");
        }),
        ("chat, a message selected", |s| {
            answered(s);
            key(s, KeyCode::Up, KeyModifiers::ALT);
            assert_eq!(s.focus, Focus::Transcript);
        }),
        ("approval modal, in its guard", approval),
        ("approval modal, choosing", |s| {
            approval(s);
            past_guard(s);
            key(s, KeyCode::Down, KeyModifiers::NONE);
        }),
        ("approval modal, typing a reason", |s| {
            approval(s);
            past_guard(s);
            key(s, KeyCode::Char('r'), KeyModifiers::NONE);
            key(s, KeyCode::Enter, KeyModifiers::NONE);
            assert!(matches!(s.tools.approval.as_ref().map(|a| &a.mode), Some(crate::app::approval::Mode::Reason(_))));
        }),
        ("help", |s| {
            key(s, KeyCode::F(1), KeyModifiers::NONE);
        }),
        ("palette", |s| {
            key(s, KeyCode::Char('p'), KeyModifiers::CONTROL);
        }),
        ("conversations", |s| {
            key(s, KeyCode::Char('l'), KeyModifiers::CONTROL);
            if let Some(Overlay::Conversations(list)) = s.overlays.last_mut() {
                let row = |i: usize| crate::app::conversations::Row {
                    id: format!("c{i}"),
                    title: format!("conversation {i}"),
                    model: "demo".into(),
                    date: "today".into(),
                    messages: 2,
                    columns: Vec::new(),
                };
                list.rows = (0..40).map(row).collect();
                list.loading = false;
                list.error = None;
                list.selected = 20;
            }
        }),
        ("inspector", |s| {
            answered(s);
            key(s, KeyCode::F(3), KeyModifiers::NONE);
        }),
        ("compare, streaming", |s| compare(s, false, false)),
        ("compare, keys on the columns", |s| {
            compare(s, false, true);
            key(s, KeyCode::Tab, KeyModifiers::NONE);
            assert_eq!(s.focus, Focus::Transcript);
        }),
        ("arena, keys on the vote bar", |s| {
            compare(s, true, true);
            key(s, KeyCode::Tab, KeyModifiers::NONE);
            assert!(s.vote_bar_focused());
        }),
    ];
    setups
        .into_iter()
        .map(|(name, setup)| {
            let mut s = base();
            setup(&mut s);
            if !s.typing_reaches_composer() || s.composer.is_empty() {
                s.composer.set_text("draft");
            }
            // Every scrollable thing away from both ends, so each scroll key has somewhere to go.
            s.scroll.follow = false;
            s.scroll.anchor = Anchor { cell: 0, line: 10 };
            s.flow.scroll = 20;
            s.flow.selected = 1;
            if let Some(a) = s.tools.approval.as_mut() {
                a.scroll = 20;
            }
            for o in &mut s.overlays {
                match o {
                    Overlay::Help { scroll } => *scroll = 20,
                    Overlay::Palette(p) => p.selected = 5,
                    _ => {}
                }
            }
            (name, s)
        })
        .collect()
}

/// What the checks compare before and after a key.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    quit: bool,
    quit_armed: bool,
    overlays: Vec<&'static str>,
    live: bool,
    /// The approval modal's mode (choosing, or one of its inputs).
    approval: Option<&'static str>,
    draft: String,
    focus: Focus,
    bar: bool,
    panels: bool,
    /// The compare's metrics strip (its panel) is hidden.
    strip_hidden: bool,
    tools: String,
    scroll: String,
    flash: String,
}

fn seen(s: &State) -> Seen {
    let scroll = {
        let overlays: Vec<String> = s
            .overlays
            .iter()
            .map(|o| match o {
                Overlay::Help { scroll } => format!("help {scroll}"),
                Overlay::Palette(p)
                | Overlay::Models { picker: p, .. }
                | Overlay::CodeBlocks { picker: p, .. }
                | Overlay::Providers(p) => format!("picker {}", p.selected),
                Overlay::Inspector => format!("inspector {} {}", s.flow.selected, s.flow.scroll),
                Overlay::Approval => format!("approval {}", s.tools.approval.as_ref().map_or(0, |a| a.scroll)),
                Overlay::Conversations(l) => format!("list {}", l.selected),
                Overlay::Probs { cursor, .. } => format!("probs {cursor}"),
                Overlay::Elicit => "form".to_owned(),
                Overlay::Sample => "sample".to_owned(),
            })
            .collect();
        let cols = s.compare.active.as_ref().map(|c| c.columns.iter().map(|c| c.scroll).collect::<Vec<_>>());
        format!("{} {:?} {overlays:?} {cols:?}", s.scroll.follow, s.scroll.anchor)
    };
    Seen {
        quit: s.quit,
        quit_armed: s.quit_armed,
        overlays: s.overlays.iter().map(Overlay::title).collect(),
        live: s.live.is_some() || s.compare_busy() || s.tools.busy(),
        approval: s.tools.approval.as_ref().map(|a| match a.mode {
            crate::app::approval::Mode::Choose => "choose",
            crate::app::approval::Mode::Reason(_) => "reason",
            crate::app::approval::Mode::Edit(_) => "edit",
        }),
        draft: s.composer.text(),
        focus: s.focus,
        bar: s.vote_bar_focused(),
        panels: s.panels_shown(),
        strip_hidden: s.compare.strip_hidden,
        tools: format!("{:?}", s.tools.flags.mode),
        scroll,
        flash: s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default(),
    }
}

/// Whether `action` did its work, seen from `b` (before) and `a` (after) with its effects.
fn did(action: Action, b: &Seen, a: &Seen, fx: &[Effect]) -> bool {
    let top = |s: &Seen| s.overlays.last().copied();
    let toggled = |title: &str| (top(b) == Some(title)) != (top(a) == Some(title));
    let closed = a.overlays.len() < b.overlays.len();
    let to_composer = b.focus == Focus::Transcript && a.focus == Focus::Composer;
    match action {
        Action::Quit => a.quit,
        // Cancel what runs, else clear the draft, else ask to quit; an overlay closes.
        Action::Interrupt => {
            (b.live && !a.live) || (!b.draft.is_empty() && a.draft.is_empty()) || a.quit_armed || closed
        }
        // Cancel what runs; else close what is on top (the modal's input: back to its options),
        // or take the keys back to the composer.
        Action::Cancel => (b.live && !a.live) || closed || to_composer || a.approval != b.approval,
        Action::Palette => toggled("Commands"),
        Action::Help => toggled("Help"),
        // Before an arena's vote the picker would mark a model as current: it says so instead.
        Action::Models => {
            (toggled("Models") && fx.contains(&Effect::FetchModels)) || a.flash.contains("waits for the vote")
        }
        Action::History => toggled("Conversations"),
        // In a compare the panel is the metrics strip under the columns.
        Action::Panels => a.panels != b.panels || a.strip_hidden != b.strip_hidden,
        Action::ToolsMode => a.tools != b.tools,
        Action::PageUp | Action::PageDown | Action::ScrollUp | Action::ScrollDown | Action::Top | Action::Bottom => {
            a.scroll != b.scroll
        }
        // Before an arena's vote the inspector would name the models: it says so instead.
        Action::Inspector => toggled("Flow inspector") || a.flash.contains("opens after the vote"),
        _ => false,
    }
}

#[test]
fn every_everywhere_key_works_in_every_mode() {
    let keymap = crate::app::keymap::KeyMap::default();
    let everywhere: Vec<(Action, crate::app::keymap::Combo)> = keymap
        .bindings
        .iter()
        .filter(|b| b.context == Context::Global)
        .flat_map(|b| b.keys.iter().map(move |k| (b.action, *k)))
        .collect();
    // The list F1 shows is this one.
    let help = keymap.help();
    let listed: usize = help.iter().find(|(t, _)| *t == "Everywhere").map_or(0, |(_, rows)| rows.len());
    assert_eq!(listed, keymap.bindings.iter().filter(|b| b.context == Context::Global).count());
    assert!(everywhere.len() >= 17, "{everywhere:?}");
    let mut failures = Vec::new();
    for (action, combo) in &everywhere {
        for (mode, mut s) in modes() {
            let before = seen(&s);
            let fx = key(&mut s, combo.code, combo.mods);
            let after = seen(&s);
            if !did(*action, &before, &after, &fx) {
                failures.push(format!(
                    "{} ({action:?}) in {mode}:\n  before {before:?}\n  after  {after:?}",
                    combo.label()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} keys did nothing:\n{}", failures.len(), failures.join("\n"));
}
