//! The approval modal's keys, driven by `Msg`s alone: nothing is decided by accident. The
//! guard sends typed-ahead text to the composer; a letter mid-sentence, or followed by more
//! text, is text; Enter confirms only right after an arrow or an option's letter; a path
//! outside the workspace and a grant for the session have no letter at all.

use crate::api::client::WireEvent;
use crate::api::event::{CallFragment, StreamEvent};
use crate::app::approval::{Choice, GUARD_MS, MID_SENTENCE_MS, Mode};
use crate::app::effect::Effect;
use crate::app::msg::Msg;
use crate::app::overlay::Overlay;
use crate::app::state::State;
use crate::app::test_state;
use crate::app::tools::{ToolEffect, ToolSet};
use crate::engine::message::ToolStatus;
use crate::tools::Registry;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::Arc;

/// The sentence a user types the moment the modal shows.
const SENTENCE: &str = "yes and also tell me more about everything";

fn state_with(registry: Registry) -> State {
    let mut s = test_state();
    s.tools.set = ToolSet(Arc::new(registry));
    s.tools.flags.mode = crate::engine::tool_loop::ToolMode::Auto;
    s
}

fn key(s: &mut State, code: KeyCode) -> Vec<Effect> {
    s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(s: &mut State, text: &str) -> Vec<Effect> {
    text.chars().flat_map(|c| key(s, KeyCode::Char(c))).collect()
}

fn tick(s: &mut State, ms: u64) {
    let now = s.now_ms + ms;
    s.apply(Msg::Tick { now_ms: now });
}

/// The first tick after the modal showed starts its guard; this one ends it (and leaves any
/// typing long enough ago not to count as mid-sentence).
fn past_guard(s: &mut State) {
    tick(s, 0);
    tick(s, GUARD_MS + MID_SENTENCE_MS);
}

/// Sends a prompt, and the reply asks for `name(args)`: the modal shows that call. Returns
/// the reply's id.
fn asked(s: &mut State, name: &str, args: &str) -> u64 {
    let id = replied(s, name, args);
    assert!(modal(s), "the call asks");
    id
}

/// Sends a prompt, and the reply asks for `name(args)`; returns the reply's id.
fn replied(s: &mut State, name: &str, args: &str) -> u64 {
    typed(s, "do it");
    key(s, KeyCode::Enter);
    let id = s.live.as_ref().map(|l| l.id).unwrap_or_default();
    let call = StreamEvent::ToolCall(Box::new(CallFragment {
        choice: 0,
        slot: 0,
        id: Some("call_0".into()),
        name: Some(name.into()),
        arguments: args.into(),
        extra: None,
        kind: None,
        index: None,
    }));
    let events = vec![call, StreamEvent::Finish { choice: 0, reason: "tool_calls".into() }, StreamEvent::End];
    s.apply(Msg::RequestStarted { id, now_ms: 100 });
    let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 };
    s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 110 });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 20 }), now_ms: 120 });
    id
}

fn write_call(s: &mut State) -> u64 {
    asked(s, "write_file", r#"{"path":"notes.txt","content":"hi"}"#)
}

fn modal(s: &State) -> bool {
    s.overlays.iter().any(|o| matches!(o, Overlay::Approval))
}

fn status(s: &State, id: u64) -> ToolStatus {
    s.tool_call(id, 0).map(|c| c.status.clone()).unwrap_or_default()
}

/// Whether the effects run a tool or send a request (the two things a decision does).
fn decided(fx: &[Effect]) -> bool {
    fx.iter().any(|e| matches!(e, Effect::Tools(ToolEffect::Run { .. }) | Effect::StartRequest { .. }))
}

fn highlight(s: &State) -> Option<usize> {
    s.tools.approval.as_ref().and_then(|a| a.highlight)
}

#[test]
fn typed_ahead_during_the_guard_is_text_and_enter_decides_nothing() {
    let mut s = state_with(Registry::builtins());
    let id = write_call(&mut s);
    assert!(s.approval_guarded() && s.wants_tick(), "the guard keeps the clock ticking");
    // Before the first tick, and after it within the half second: all text, Enter swallowed.
    let mut fx = typed(&mut s, "yes and also ");
    tick(&mut s, 0);
    tick(&mut s, GUARD_MS - 100);
    fx.extend(typed(&mut s, "tell me more about everything"));
    fx.extend(key(&mut s, KeyCode::Enter));
    assert!(!decided(&fx), "{fx:?}");
    assert_eq!(s.composer.text(), SENTENCE);
    assert!(modal(&s) && status(&s, id) == ToolStatus::AwaitingApproval);
    assert_eq!(highlight(&s), None);
    // The arrows mean nothing yet either.
    key(&mut s, KeyCode::Down);
    assert_eq!(highlight(&s), None);
    // Esc still cancels the turn, guard or not.
    key(&mut s, KeyCode::Esc);
    assert!(!modal(&s) && status(&s, id) == ToolStatus::Denied);
    assert_eq!(s.composer.text(), SENTENCE, "the sentence stays for the user");
}

#[test]
fn a_sentence_typed_after_the_guard_is_text() {
    let mut s = state_with(Registry::builtins());
    let id = write_call(&mut s);
    past_guard(&mut s);
    // The first y highlights "approve once"; the e after it makes both text; every later
    // letter comes mid-sentence.
    let mut fx = key(&mut s, KeyCode::Char('y'));
    assert_eq!(highlight(&s), Some(0));
    for c in SENTENCE.chars().skip(1) {
        fx.extend(key(&mut s, KeyCode::Char(c)));
        tick(&mut s, 60);
        assert_eq!(highlight(&s), None, "after {c:?}");
    }
    fx.extend(key(&mut s, KeyCode::Enter));
    assert!(!decided(&fx), "{fx:?}");
    assert_eq!(s.composer.text(), SENTENCE);
    assert!(modal(&s) && status(&s, id) == ToolStatus::AwaitingApproval);
    assert!(s.flash.as_ref().is_some_and(|f| f.text.starts_with("Enter did nothing")));
}

#[test]
fn letters_mid_sentence_are_text() {
    let mut s = state_with(Registry::builtins());
    write_call(&mut s);
    past_guard(&mut s);
    typed(&mut s, "ok ");
    tick(&mut s, MID_SENTENCE_MS - 200);
    // Still mid-sentence: n is a letter of the sentence, not "deny".
    key(&mut s, KeyCode::Char('n'));
    assert_eq!(highlight(&s), None);
    assert_eq!(s.composer.text(), "ok n");
    // After a pause it picks its option again.
    tick(&mut s, MID_SENTENCE_MS);
    key(&mut s, KeyCode::Char('n'));
    assert_eq!(s.approval_choices().get(highlight(&s).unwrap_or(99)), Some(&Choice::Deny));
}

#[test]
fn a_letter_then_enter_decides() {
    let mut s = state_with(Registry::builtins());
    let id = write_call(&mut s);
    past_guard(&mut s);
    key(&mut s, KeyCode::Char('n'));
    assert_eq!(s.tools.approval.as_ref().and_then(|a| a.pending), Some('n'));
    let fx = key(&mut s, KeyCode::Enter);
    assert!(decided(&fx), "the denial goes back to the model: {fx:?}");
    assert_eq!(status(&s, id), ToolStatus::Denied);
    assert!(s.composer.is_empty());
}

#[test]
fn arrows_then_enter_decide_and_only_right_after() {
    let mut s = state_with(Registry::builtins());
    let id = write_call(&mut s);
    past_guard(&mut s);
    // ↓ from nothing is the first option; ↑ wraps to the last; Tab moves on.
    key(&mut s, KeyCode::Down);
    assert_eq!(highlight(&s), Some(0));
    key(&mut s, KeyCode::Up);
    assert_eq!(highlight(&s), Some(s.approval_choices().len() - 1));
    key(&mut s, KeyCode::Tab);
    assert_eq!(highlight(&s), Some(0));
    // Any other key between the choice and Enter takes the highlight away: Enter does nothing.
    key(&mut s, KeyCode::PageDown);
    assert_eq!(highlight(&s), None);
    assert!(!decided(&key(&mut s, KeyCode::Enter)));
    key(&mut s, KeyCode::Down);
    key(&mut s, KeyCode::Char('x'));
    assert_eq!(s.composer.text(), "x");
    assert!(!decided(&key(&mut s, KeyCode::Enter)));
    assert_eq!(status(&s, id), ToolStatus::AwaitingApproval);
    // Right after an arrow, Enter confirms.
    tick(&mut s, MID_SENTENCE_MS);
    key(&mut s, KeyCode::Down);
    let fx = key(&mut s, KeyCode::Enter);
    assert!(fx.iter().any(|e| matches!(e, Effect::Tools(ToolEffect::Run { .. }))), "{fx:?}");
    assert_eq!(status(&s, id), ToolStatus::Running);
    assert_eq!(s.composer.text(), "x", "what was typed stays");
}

#[test]
fn the_session_grant_has_no_letter() {
    // --tools ask: a read-only tool asks, and may be granted for the session.
    let mut s = state_with(Registry::builtins());
    s.tools.flags.mode = crate::engine::tool_loop::ToolMode::Ask;
    let id = asked(&mut s, "list_directory", r#"{"path":"."}"#);
    assert!(s.session_approval_offered(crate::app::tools::Owner::Chat, id, 0));
    assert_eq!(s.approval_choices()[1], Choice::Session);
    assert_eq!(s.approval_letter(Choice::Session), None);
    past_guard(&mut s);
    let mut fx = key(&mut s, KeyCode::Char('a'));
    fx.extend(key(&mut s, KeyCode::Enter));
    assert!(!decided(&fx) && s.tools.session.is_empty());
    assert_eq!(s.composer.text(), "a");
    // ↓↓ Enter grants it.
    key(&mut s, KeyCode::Down);
    key(&mut s, KeyCode::Down);
    let fx = key(&mut s, KeyCode::Enter);
    assert!(decided(&fx));
    assert!(s.tools.session.contains("list_directory"));
}

#[test]
fn a_path_outside_the_workspace_has_no_letter_at_all() {
    let mut registry = Registry::builtins();
    let ws = crate::tools::workspace::Workspace::new(std::path::Path::new("/usr"), vec![]);
    registry.set_workspace(ws.unwrap_or_else(|e| panic!("{e}")));
    let mut s = state_with(registry);
    let id = asked(&mut s, "read_file", r#"{"path":"../etc/hostname"}"#);
    assert!(s.approval_names_paths(crate::app::tools::Owner::Chat, id, 0));
    assert!(!s.approval_choices().contains(&Choice::Session), "never for the session");
    assert!(s.approval_choices().iter().all(|&c| s.approval_letter(c).is_none()));
    past_guard(&mut s);
    let mut fx = key(&mut s, KeyCode::Char('y'));
    fx.extend(key(&mut s, KeyCode::Enter));
    assert!(!decided(&fx), "y then Enter grants nothing here: {fx:?}");
    assert_eq!(s.composer.text(), "y");
    assert_eq!(status(&s, id), ToolStatus::AwaitingApproval);
    // The arrows and Enter do, and grant exactly that path.
    tick(&mut s, MID_SENTENCE_MS);
    key(&mut s, KeyCode::Down);
    let fx = key(&mut s, KeyCode::Enter);
    let approved = fx.iter().find_map(|e| match e {
        Effect::Tools(ToolEffect::Run { approved, .. }) => Some(approved.clone()),
        _ => None,
    });
    assert_eq!(approved, Some(vec![std::path::PathBuf::from("/etc/hostname")]));
}

#[test]
fn reason_and_edit_keep_their_inputs_once_chosen() {
    let mut s = state_with(Registry::builtins());
    let id = write_call(&mut s);
    past_guard(&mut s);
    key(&mut s, KeyCode::Char('r'));
    key(&mut s, KeyCode::Enter);
    assert!(matches!(s.tools.approval.as_ref().map(|a| &a.mode), Some(Mode::Reason(_))));
    assert!(!s.typing_reaches_composer(), "typing goes to the reason now");
    typed(&mut s, "yes, no");
    let fx = key(&mut s, KeyCode::Enter);
    assert!(decided(&fx));
    assert_eq!(status(&s, id), ToolStatus::Denied);
    assert!(s.tool_call(id, 0).and_then(|c| c.output.clone()).is_some_and(|o| o.contains("yes, no")));
    assert!(s.composer.is_empty());
}

#[test]
fn the_composer_says_keep_typing_only_when_it_is_true() {
    let mut s = state_with(Registry::builtins());
    write_call(&mut s);
    assert!(s.typing_reaches_composer(), "the modal lists its options: text goes on to the composer");
    // A paste is text too.
    s.apply(Msg::Paste("pasted".into()));
    assert_eq!(s.composer.text(), "pasted");
    s.apply(Msg::Key(KeyEvent::new(KeyCode::F(1), KeyModifiers::NONE)));
    assert!(matches!(s.overlays.last(), Some(Overlay::Help { .. })));
    assert!(!s.typing_reaches_composer(), "help is on top");
}

#[test]
fn the_guard_starts_again_for_the_next_call() {
    let mut s = state_with(Registry::builtins());
    typed(&mut s, "two");
    key(&mut s, KeyCode::Enter);
    let id = s.live.as_ref().map(|l| l.id).unwrap_or_default();
    let calls: Vec<StreamEvent> = (0..2u32)
        .map(|i| {
            StreamEvent::ToolCall(Box::new(CallFragment {
                choice: 0,
                slot: i,
                id: Some(format!("call_{i}")),
                name: Some("write_file".into()),
                arguments: format!(r#"{{"path":"{i}.txt","content":"x"}}"#),
                extra: None,
                kind: None,
                index: None,
            }))
        })
        .chain([StreamEvent::Finish { choice: 0, reason: "tool_calls".into() }, StreamEvent::End])
        .collect();
    let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events: calls, at_ms: 10 };
    s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 110 });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 20 }), now_ms: 120 });
    past_guard(&mut s);
    key(&mut s, KeyCode::Char('y'));
    key(&mut s, KeyCode::Enter);
    assert_eq!(s.tools.asking().map(|a| a.2), Some(1), "the second call asks");
    // A double Enter (or y Enter y Enter typed fast) does not approve the second one.
    let mut fx = key(&mut s, KeyCode::Char('y'));
    fx.extend(key(&mut s, KeyCode::Enter));
    assert!(!fx.iter().any(|e| matches!(e, Effect::Tools(ToolEffect::Run { index: 1, .. }))), "{fx:?}");
    assert_eq!(s.composer.text(), "y");
}

/// A read that ran (read-only tools run in auto) and came back holding a private key.
fn read_a_secret(s: &mut State) -> (u64, String, Vec<Effect>) {
    let args = r#"{"path":"notes.txt"}"#;
    let id = replied(s, "read_file", args);
    assert!(!modal(s) && status(s, id) == ToolStatus::Running, "read_file runs without asking");
    let pem = format!("-----BEGIN {}-----\nMIIEsecret\n", "RSA PRIVATE KEY");
    let ws = s.tools.set.0.workspace().clone();
    let output = crate::tools::secret_hold::hold(&ws, "read_file", args, crate::tools::ToolOutput::ok(pem.clone()));
    let done = crate::app::tools::ToolMsg::Done {
        owner: crate::app::tools::Owner::Chat,
        id,
        index: 0,
        output,
        duration_ms: 7,
    };
    let fx = s.apply(Msg::Tools(done));
    (id, pem, fx)
}

#[test]
fn an_output_holding_a_secret_asks_naming_the_file_and_the_kind() {
    let mut s = state_with(Registry::builtins());
    let (id, pem, fx) = read_a_secret(&mut s);
    assert!(!decided(&fx), "nothing is sent before the user answers: {fx:?}");
    assert!(modal(&s) && status(&s, id) == ToolStatus::AwaitingApproval);
    assert!(s.approval_names_paths(crate::app::tools::Owner::Chat, id, 0));
    let turn = s.tools.turn(crate::app::tools::Owner::Chat).unwrap();
    let need = &turn.paths[&0][0];
    assert!(need.path.ends_with("notes.txt") && need.why == "holds a private key (PEM block)", "{need:?}");
    assert!(s.tool_call(id, 0).unwrap().output.as_deref().is_none_or(|o| !o.contains("MIIE")));
    // Approving sends what was read, without reading it again.
    past_guard(&mut s);
    tick(&mut s, MID_SENTENCE_MS);
    key(&mut s, KeyCode::Down);
    let fx = key(&mut s, KeyCode::Enter);
    assert!(!fx.iter().any(|e| matches!(e, Effect::Tools(ToolEffect::Run { .. }))), "{fx:?}");
    assert!(fx.iter().any(|e| matches!(e, Effect::StartRequest { .. })), "{fx:?}");
    let call = s.tool_call(id, 0).unwrap();
    assert_eq!((call.status.clone(), call.output.as_deref()), (ToolStatus::Done, Some(pem.as_str())));
}

#[test]
fn a_declined_secret_output_is_never_sent() {
    let mut s = state_with(Registry::builtins());
    let (id, _, _) = read_a_secret(&mut s);
    let fx = key(&mut s, KeyCode::Esc);
    assert!(!modal(&s) && status(&s, id) == ToolStatus::Denied);
    assert!(!s.tool_call(id, 0).unwrap().output.as_deref().unwrap_or_default().contains("MIIE"));
    assert!(!fx.iter().any(|e| matches!(e, Effect::Tools(ToolEffect::Run { .. }))), "{fx:?}");
    assert!(s.tools.turns.iter().all(|t| t.held.is_empty()));
}

#[test]
fn denying_a_held_output_tells_the_model_it_was_kept_back() {
    let mut s = state_with(Registry::builtins());
    let (id, _, _) = read_a_secret(&mut s);
    past_guard(&mut s);
    tick(&mut s, MID_SENTENCE_MS);
    key(&mut s, KeyCode::Down);
    key(&mut s, KeyCode::Down);
    let fx = key(&mut s, KeyCode::Enter);
    assert!(fx.iter().any(|e| matches!(e, Effect::StartRequest { .. })), "{fx:?}");
    let out = s.tool_call(id, 0).and_then(|c| c.output.clone()).unwrap_or_default();
    assert_eq!(status(&s, id), ToolStatus::Denied);
    assert!(out.starts_with("The tool ran, but the user did not send its output") && !out.contains("MIIE"), "{out}");
}

/// Issue 29 item 4: a call waiting for approval while the terminal is not focused notifies once.
#[test]
fn an_approval_waiting_in_an_unfocused_terminal_notifies() {
    let mut s = state_with(Registry::builtins());
    s.apply(Msg::Focus(false));
    typed(&mut s, "do it");
    key(&mut s, KeyCode::Enter);
    let id = s.live.as_ref().map(|l| l.id).unwrap_or_default();
    let call = StreamEvent::ToolCall(Box::new(CallFragment {
        choice: 0,
        slot: 0,
        id: Some("call_0".into()),
        name: Some("write_file".into()),
        arguments: r#"{"path":"notes.txt","content":"hi"}"#.into(),
        extra: None,
        kind: None,
        index: None,
    }));
    let events = vec![call, StreamEvent::Finish { choice: 0, reason: "tool_calls".into() }, StreamEvent::End];
    let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 };
    let mut fx = s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 110 });
    fx.extend(s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 20 }), now_ms: 120 }));
    assert!(modal(&s), "the call asks");
    let notes: Vec<&Effect> = fx.iter().filter(|e| matches!(e, Effect::Notify(_))).collect();
    assert_eq!(notes, [&Effect::Notify("a tool call waits for your approval".into())]);
    // A tick while it still waits says nothing more.
    let fx = s.apply(Msg::Tick { now_ms: 200 });
    assert!(!fx.iter().any(|e| matches!(e, Effect::Notify(_))));
}
