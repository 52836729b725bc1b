//! The elicitation form driven by `Msg`s alone: the guard, Enter in a field, a button armed only
//! by a moving key, Accept checking the fields, Esc cancelling, forms waiting their turn.

use crate::app::effect::Effect;
use crate::app::msg::Msg;
use crate::app::overlay::Overlay;
use crate::app::state::State;
use crate::app::test_state;
use crate::app::tools::{ToolEffect, ToolMsg};
use crate::tools::mcp::elicit::{Answer, Form, Reply, fields};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

fn key(s: &mut State, code: KeyCode) -> Vec<Effect> {
    s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        key(s, KeyCode::Char(c));
    }
}

fn answers(fx: &[Effect]) -> Vec<Answer> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Tools(ToolEffect::Answer { answer, .. }) => Some(answer.clone()),
            _ => None,
        })
        .collect()
}

/// A state showing a form with a required name and a switch, past its guard.
fn asked() -> State {
    let mut s = test_state();
    s.apply(Msg::Tick { now_ms: 1000 });
    let schema = json!({"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "title": "Name"},
        "agree": {"type": "boolean"}
    }});
    let form = Form { message: "Who are you?".into(), fields: fields(&schema) };
    s.apply(Msg::Tools(ToolMsg::Elicit { server: "everything".into(), form, reply: Reply::default() }));
    assert!(matches!(s.overlays.last(), Some(Overlay::Elicit)));
    s.apply(Msg::Tick { now_ms: 3000 });
    s
}

#[test]
fn keys_during_the_guard_are_not_the_form_s() {
    let mut s = test_state();
    s.apply(Msg::Tick { now_ms: 1000 });
    let form = Form { message: "?".into(), fields: fields(&json!({"properties": {"a": {"type": "string"}}})) };
    s.apply(Msg::Tools(ToolMsg::Elicit { server: "x".into(), form, reply: Reply::default() }));
    typed(&mut s, "hi");
    assert_eq!(s.tools.forms[0].fields[0].value, "", "not the form's");
    assert_eq!(s.composer.text(), "hi", "typing went on into the composer");
}

#[test]
fn a_sentence_typed_before_the_form_goes_on_into_the_composer_as_under_the_approval_modal() {
    let mut s = test_state();
    s.apply(Msg::Tick { now_ms: 1000 });
    typed(&mut s, "so the ");
    let form = Form { message: "?".into(), fields: fields(&json!({"properties": {"a": {"type": "string"}}})) };
    s.apply(Msg::Tools(ToolMsg::Elicit { server: "x".into(), form, reply: Reply::default() }));
    assert!(s.typing_reaches_composer(), "the composer's title says typing lands there");
    // Past the guard, but the user never paused: still their sentence.
    for (i, c) in "answer".chars().enumerate() {
        s.apply(Msg::Tick { now_ms: 1000 + 300 * (i as u64 + 1) });
        key(&mut s, KeyCode::Char(c));
    }
    assert_eq!(s.composer.text(), "so the answer");
    assert_eq!(s.tools.forms[0].fields[0].value, "");
    // After a pause the keys are the form's.
    s.apply(Msg::Tick { now_ms: 60_000 });
    assert!(!s.typing_reaches_composer());
    typed(&mut s, "Ada");
    assert_eq!(s.tools.forms[0].fields[0].value, "Ada");
    assert_eq!(s.composer.text(), "so the answer");
}

#[test]
fn enter_in_a_field_moves_on_and_never_answers() {
    let mut s = asked();
    // The fields come in key order: the switch, then the name.
    key(&mut s, KeyCode::Char(' '));
    assert!(answers(&key(&mut s, KeyCode::Enter)).is_empty());
    typed(&mut s, "Ada");
    // From the last field Enter reaches Accept, unarmed: the next Enter does nothing.
    assert!(answers(&key(&mut s, KeyCode::Enter)).is_empty());
    assert_eq!(s.tools.forms[0].button(), Some(0));
    assert!(answers(&key(&mut s, KeyCode::Enter)).is_empty());
    // Tab away and back arms it; then Enter accepts with the typed values.
    key(&mut s, KeyCode::Tab);
    key(&mut s, KeyCode::BackTab);
    let fx = key(&mut s, KeyCode::Enter);
    let want = json!({"agree": true, "name": "Ada"});
    assert_eq!(answers(&fx), [Answer::Accept(want.as_object().unwrap().clone())]);
    assert!(s.tools.forms.is_empty() && !s.overlays.iter().any(|o| matches!(o, Overlay::Elicit)));
}

#[test]
fn accept_names_a_missing_required_field_and_decline_and_esc_answer() {
    let mut s = asked();
    key(&mut s, KeyCode::Up);
    key(&mut s, KeyCode::Up);
    key(&mut s, KeyCode::Up);
    assert_eq!(s.tools.forms[0].button(), Some(0));
    assert!(answers(&key(&mut s, KeyCode::Enter)).is_empty());
    assert_eq!(s.tools.forms[0].error.as_deref(), Some("Name is required"));
    key(&mut s, KeyCode::Tab);
    assert_eq!(answers(&key(&mut s, KeyCode::Enter)), [Answer::Decline]);
    let mut s = asked();
    assert_eq!(answers(&key(&mut s, KeyCode::Esc)), [Answer::Cancel]);
}

#[test]
fn a_second_form_waits_for_the_first() {
    let mut s = asked();
    let form = Form { message: "And then?".into(), fields: Vec::new() };
    s.apply(Msg::Tools(ToolMsg::Elicit { server: "other".into(), form, reply: Reply::default() }));
    assert_eq!(s.tools.forms.len(), 2);
    assert_eq!(answers(&key(&mut s, KeyCode::Esc)), [Answer::Cancel]);
    assert_eq!(s.tools.forms[0].server, "other");
    assert!(matches!(s.overlays.last(), Some(Overlay::Elicit)));
    // The next form has its own guard.
    assert!(answers(&key(&mut s, KeyCode::Tab)).is_empty());
    assert_eq!(s.tools.forms[0].focus, 0);
}
