//! The tool loop and persistence in compare columns, through `State::apply`: each column runs
//! the chat's tool loop as its own owner (read-only calls run at once, side effects ask in the
//! one modal, answers go back in that column's history only), and columns are saved while they
//! stream through the chat's persistence.

use super::{CompareEffect, CompareMsg};
use crate::api::client::WireEvent;
use crate::api::event::StreamEvent;
use crate::app::effect::Effect;
use crate::app::msg::Msg;
use crate::app::overlay::Overlay;
use crate::app::persist::{ConvKey, PersistOp, StoreMsg};
use crate::app::persist_ops as ops;
use crate::app::state::State;
use crate::app::test_state;
use crate::app::tools::{CANCELLED, Owner, ToolEffect, ToolMsg, ToolSet};
use crate::engine::message::{MessageStatus, ToolStatus};
use crate::engine::tool_loop::refusal_output;
use crate::tools::{Registry, ToolOutput};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;
use std::sync::Arc;

fn state() -> State {
    let mut s = test_state();
    s.tools.set = ToolSet(Arc::new(Registry::builtins()));
    s.tools.flags.mode = crate::engine::tool_loop::ToolMode::Auto;
    s
}

fn key(s: &mut State, code: KeyCode) -> Vec<Effect> {
    s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

/// Lets the approval modal's guard pass, then picks the option of letter `c` and confirms it.
fn choose(s: &mut State, c: char) -> Vec<Effect> {
    let t = s.now_ms;
    s.apply(Msg::Tick { now_ms: t });
    s.apply(Msg::Tick { now_ms: t + 2000 });
    key(s, KeyCode::Char(c));
    key(s, KeyCode::Enter)
}

fn enter(s: &mut State, text: &str) -> Vec<Effect> {
    for c in text.chars() {
        key(s, KeyCode::Char(c));
    }
    key(s, KeyCode::Enter)
}

/// (column, message id, body) of every column request started.
fn starts(fx: &[Effect]) -> Vec<(usize, u64, Value)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Compare(CompareEffect::Start { column, id, body, .. }) => Some((*column, *id, Value::clone(body))),
            _ => None,
        })
        .collect()
}

/// (owner, call index, tool name) of every call the effects ask to run.
fn runs(fx: &[Effect]) -> Vec<(Owner, usize, String)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Tools(ToolEffect::Run { owner, index, call, .. }) => Some((*owner, *index, call.name.clone())),
            _ => None,
        })
        .collect()
}

fn wire(s: &mut State, g: u64, column: usize, id: u64, event: WireEvent) -> Vec<Effect> {
    s.apply(Msg::Compare(CompareMsg::Wire { generation: g, column, id, event: Box::new(event), now_ms: 500 }))
}

/// Ends column `column`'s reply `id` with these events; returns the effects of the end.
fn end(s: &mut State, g: u64, column: usize, id: u64, mut events: Vec<StreamEvent>) -> Vec<Effect> {
    events.push(StreamEvent::End);
    let mut fx = wire(s, g, column, id, WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 });
    fx.extend(wire(s, g, column, id, WireEvent::Closed { at_ms: 20 }));
    fx
}

fn calls(s: &mut State, g: u64, column: usize, id: u64, list: &[(&str, &str)]) -> Vec<Effect> {
    let mut events: Vec<StreamEvent> = list
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            StreamEvent::ToolCall(Box::new(crate::api::event::CallFragment {
                choice: 0,
                slot: u32::try_from(i).unwrap_or(0),
                id: Some(format!("call_{column}_{i}")),
                name: Some((*name).to_owned()),
                arguments: (*args).to_owned(),
                extra: None,
                kind: None,
                index: None,
            }))
        })
        .collect();
    events.push(StreamEvent::Finish { choice: 0, reason: "tool_calls".into() });
    end(s, g, column, id, events)
}

fn answer(s: &mut State, g: u64, column: usize, id: u64, text: &str) -> Vec<Effect> {
    let events = vec![
        StreamEvent::Text { choice: 0, delta: text.into() },
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
    ];
    end(s, g, column, id, events)
}

fn done(s: &mut State, owner: Owner, id: u64, index: usize, text: &str) -> Vec<Effect> {
    let output = ToolOutput::ok(text);
    s.apply(Msg::Tools(ToolMsg::Done { owner, id, index, output, duration_ms: 5 }))
}

/// The tool messages of a request body as (tool_call_id, content).
fn tool_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| (m["tool_call_id"].as_str().unwrap_or("").to_owned(), m["content"].as_str().unwrap_or("").to_owned()))
        .collect()
}

fn column(g: u64, column: usize) -> Owner {
    Owner::Column { generation: g, column }
}

#[test]
fn two_columns_run_read_only_tools_and_each_follow_up_carries_its_own_results() {
    let mut s = state();
    enter(&mut s, "/compare a b");
    let g = s.compare.active.as_ref().map(|c| c.generation).unwrap_or_default();
    let first = starts(&enter(&mut s, "what is here?"));
    assert_eq!(first.len(), 2);
    for (_, _, body) in &first {
        let names: Vec<&str> =
            body["tools"].as_array().into_iter().flatten().filter_map(|t| t["function"]["name"].as_str()).collect();
        assert!(names.contains(&"read_file") && names.contains(&"list_directory"), "{names:?}");
    }
    let (a, b) = (first[0].1, first[1].1);

    let fx = calls(&mut s, g, 0, a, &[("list_directory", r#"{"path":"."}"#)]);
    assert_eq!(runs(&fx), [(column(g, 0), 0, "list_directory".to_owned())]);
    let fx = calls(&mut s, g, 1, b, &[("current_time", "{}"), ("read_file", r#"{"path":"x.txt"}"#)]);
    assert_eq!(runs(&fx), [(column(g, 1), 0, "current_time".into()), (column(g, 1), 1, "read_file".into())]);
    assert!(!s.overlays.iter().any(|o| matches!(o, Overlay::Approval)), "read-only calls never ask");
    assert!(s.compare_busy());

    // Column 1's calls finish first: its follow-up goes out while column 0's tool still runs.
    assert!(starts(&done(&mut s, column(g, 1), b, 1, "file text")).is_empty(), "one call still running");
    let fx = done(&mut s, column(g, 1), b, 0, "12:00");
    let next = starts(&fx);
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].0, 1);
    assert_eq!(
        tool_results(&next[0].2),
        [("call_1_0".to_owned(), "12:00".to_owned()), ("call_1_1".to_owned(), "file text".to_owned())]
    );
    assert!(s.tools.turn(column(g, 0)).is_some(), "column 0 is still running its tool");
    assert_eq!(s.tools.rounds(column(g, 1)), 1);

    let fx = done(&mut s, column(g, 0), a, 0, "Cargo.toml\nsrc/");
    let next0 = starts(&fx);
    assert_eq!(next0.len(), 1);
    assert_eq!(next0[0].0, 0);
    assert_eq!(tool_results(&next0[0].2), [("call_0_0".to_owned(), "Cargo.toml\nsrc/".to_owned())]);

    // Both answer; the loop ends in each column on its own.
    answer(&mut s, g, 0, next0[0].1, "a directory");
    answer(&mut s, g, 1, next[0].1, "noon");
    assert!(!s.compare_busy());
    assert_eq!(s.tools.rounds(column(g, 0)), 0);
    let cmp = s.compare.active.as_ref().unwrap();
    assert_eq!(cmp.columns[0].last_reply().map(crate::engine::Message::text), Some("a directory"));
    assert_eq!(cmp.columns[1].last_reply().map(crate::engine::Message::text), Some("noon"));
    let card = cmp.columns[0].transcript.message(a).unwrap().main().tool_calls[0].clone();
    assert_eq!((card.status, card.duration_ms), (ToolStatus::Done, Some(5)));
}

#[test]
fn a_side_effect_asks_in_the_modal_and_a_denial_reaches_only_its_column() {
    let mut s = state();
    enter(&mut s, "/compare a b");
    let g = s.compare.active.as_ref().map(|c| c.generation).unwrap_or_default();
    let first = starts(&enter(&mut s, "write it"));
    let (a, b) = (first[0].1, first[1].1);
    let fx = calls(&mut s, g, 0, a, &[("write_file", r#"{"path":"out.txt","content":"hi"}"#)]);
    assert!(runs(&fx).is_empty());
    assert!(s.overlays.iter().any(|o| matches!(o, Overlay::Approval)), "the modal opens");
    assert_eq!(s.tools.asking(), Some((column(g, 0), a, 0)));
    assert_eq!(s.owner_label(column(g, 0)).as_deref(), Some("column 1 · a"));
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Tools(ToolEffect::ReadFile { owner, path, .. })
            if *owner == column(g, 0) && path == "out.txt")),
        "the diff reads the file for that column's call: {fx:?}"
    );

    // The other column finishes on its own while the modal waits.
    let fx = answer(&mut s, g, 1, b, "done B");
    assert!(starts(&fx).is_empty());
    assert_eq!(s.compare.active.as_ref().unwrap().columns[1].last_reply().unwrap().status, MessageStatus::Complete);

    // Deny: column 0's follow-up carries the refusal; nothing new for column 1.
    let fx = choose(&mut s, 'n');
    assert!(!s.overlays.iter().any(|o| matches!(o, Overlay::Approval)));
    let next = starts(&fx);
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].0, 0);
    let refusal = refusal_output("declined in the approval dialog");
    assert_eq!(tool_results(&next[0].2), [("call_0_0".to_owned(), refusal)]);
    let col1 = &s.compare.active.as_ref().unwrap().columns[1];
    assert_eq!(col1.last_reply().map(crate::engine::Message::text), Some("done B"));
}

#[test]
fn approvals_are_asked_one_at_a_time_and_esc_cancels_every_column() {
    let mut s = state();
    enter(&mut s, "/compare a b c");
    let g = s.compare.active.as_ref().map(|c| c.generation).unwrap_or_default();
    let st = starts(&enter(&mut s, "go"));
    calls(&mut s, g, 0, st[0].1, &[("write_file", r#"{"path":"a.txt","content":"a"}"#)]);
    calls(&mut s, g, 1, st[1].1, &[("run_command", r#"{"command":"true"}"#), ("current_time", "{}")]);
    assert_eq!(s.tools.asking(), Some((column(g, 0), st[0].1, 0)), "the oldest turn asks first");
    assert_eq!(s.tools.waiting(), 2);
    // Approving column 0's call once moves the modal to column 1's.
    let fx = choose(&mut s, 'y');
    assert_eq!(runs(&fx), [(column(g, 0), 0, "write_file".to_owned())]);
    assert_eq!(s.tools.asking(), Some((column(g, 1), st[1].1, 0)));
    // Esc in the modal stops everything: column 2's stream, both columns' tools.
    let fx = key(&mut s, KeyCode::Esc);
    assert!(!s.compare_busy());
    assert!(s.tools.turns.is_empty() && s.tools.approval.is_none());
    assert!(fx.contains(&Effect::Tools(ToolEffect::Cancel { owner: column(g, 0), id: st[0].1 })));
    assert!(fx.contains(&Effect::Tools(ToolEffect::Cancel { owner: column(g, 1), id: st[1].1 })));
    assert!(fx.contains(&Effect::Compare(CompareEffect::Cancel { generation: g, column: 2, id: st[2].1 })));
    assert!(starts(&fx).is_empty(), "nothing is sent after a cancel");
    let col1 = &s.compare.active.as_ref().unwrap().columns[1];
    let call = col1.transcript.message(st[1].1).unwrap().main().tool_calls[0].clone();
    assert_eq!((call.status, call.output.as_deref()), (ToolStatus::Denied, Some(CANCELLED)));
    // A late report of a cancelled call changes nothing.
    assert!(done(&mut s, column(g, 1), st[1].1, 1, "late").is_empty());
}

#[test]
fn the_step_limit_counts_per_column() {
    let mut s = state();
    s.tools.step_limit = 1;
    enter(&mut s, "/compare a b");
    let g = s.compare.active.as_ref().map(|c| c.generation).unwrap_or_default();
    let st = starts(&enter(&mut s, "loop"));
    calls(&mut s, g, 0, st[0].1, &[("current_time", "{}")]);
    let next = starts(&done(&mut s, column(g, 0), st[0].1, 0, "now"));
    // Column 0 asks again: over its limit, the call is answered unrun and the loop stops there.
    let fx = calls(&mut s, g, 0, next[0].1, &[("current_time", "{}")]);
    assert!(runs(&fx).is_empty() && starts(&fx).is_empty());
    let col0 = &s.compare.active.as_ref().unwrap().columns[0];
    assert_eq!(col0.transcript.message(next[0].1).unwrap().main().tool_calls[0].status, ToolStatus::Skipped);
    // Column 1 has its own count: its first round still runs.
    let fx = calls(&mut s, g, 1, st[1].1, &[("current_time", "{}")]);
    assert_eq!(runs(&fx), [(column(g, 1), 0, "current_time".to_owned())]);
}

#[test]
fn columns_are_saved_while_they_stream_each_its_own_conversation() {
    let mut s = state();
    s.apply(Msg::Store(StoreMsg::Ready));
    // The chat's own turn first: the chat is conversation 1.
    let fx = enter(&mut s, "first");
    assert!(ops(&fx).iter().any(|op| matches!(op, PersistOp::Create { local: 1, compare: None, .. })));
    let id = s.live.as_ref().map(|l| l.id).unwrap_or_default();
    let events = vec![
        StreamEvent::Text { choice: 0, delta: "one".into() },
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
        StreamEvent::End,
    ];
    s.apply(Msg::Wire {
        id,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 1 }),
        now_ms: 50,
    });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 2 }), now_ms: 50 });

    // Opening a compare saves nothing: the columns hold only the chat's history so far.
    let fx = enter(&mut s, "/compare a b");
    assert!(ops(&fx).is_empty(), "{fx:?}");
    let (g, group) = s.compare.active.as_ref().map(|c| (c.generation, c.group.clone())).unwrap_or_default();
    let fx = enter(&mut s, "second");
    let creates: Vec<(u64, Option<(String, u32)>)> = ops(&fx)
        .into_iter()
        .filter_map(|op| match op {
            PersistOp::Create { local, compare, .. } => Some((*local, compare.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(creates, [(2, Some((group.clone(), 0))), (3, Some((group, 1)))]);
    let last_op = fx.iter().rposition(|e| matches!(e, Effect::Persist(_))).unwrap_or(0);
    let first_start = fx.iter().position(|e| matches!(e, Effect::Compare(CompareEffect::Start { .. }))).unwrap_or(0);
    assert!(last_op < first_start, "the prompts are queued for the disk before the requests: {fx:?}");
    let st = starts(&fx);

    // A delta in column 1 is saved while it streams, in that column's conversation.
    let events = vec![StreamEvent::Text { choice: 0, delta: "partial".into() }];
    s.apply(Msg::Compare(CompareMsg::Wire {
        generation: g,
        column: 1,
        id: st[1].1,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 5 }),
        now_ms: 400,
    }));
    let events = vec![StreamEvent::Text { choice: 0, delta: " more".into() }];
    let fx = s.apply(Msg::Compare(CompareMsg::Wire {
        generation: g,
        column: 1,
        id: st[1].1,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 9 }),
        now_ms: 900,
    }));
    let saved: Vec<(ConvKey, usize, MessageStatus, String)> = ops(&fx)
        .into_iter()
        .filter_map(|op| match op {
            PersistOp::Save { conv, position, msg, .. } => {
                Some((conv.clone(), *position, msg.status, msg.text().to_owned()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(saved, [(ConvKey::Local(3), 3, MessageStatus::Streaming, "partial more".to_owned())]);

    // The store's ids come back to the right column.
    s.apply(Msg::Store(StoreMsg::Created { local: 3, id: "c3".into() }));
    let cmp = s.compare.active.as_ref().unwrap();
    assert_eq!(cmp.columns[1].persist.id.as_deref(), Some("c3"));
    assert_eq!(cmp.columns[0].persist.id, None);
}
