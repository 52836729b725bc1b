//! What a history looks like when it goes back to a model: tool-call arguments a strict server
//! accepts, and an answer for every call. Stored and live conversations may hold a call cut by
//! the token limit (invalid JSON), or a call that never ran and was never answered; llama.cpp
//! answers such a history with HTTP 500 and OpenAI with 400. The transcript, the inspector and
//! the store keep the original bytes; only the request is repaired, here and nowhere else.

use super::message::{Message, Role};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::HashSet;

/// What the model reads for a call that was never answered.
pub const NOT_RUN: &str = "The call did not run.";

/// A tool's output or a reply's text as it goes back to a model: every secret palaver knows,
/// and its encodings, replaced ([`crate::sys::secrets`]). Outputs are redacted when a tool
/// returns them; this also holds for a history stored before, or a secret a reply spelled
/// across two stream events.
#[must_use]
pub fn wire_text(text: &str) -> Cow<'_, str> {
    crate::sys::secrets::redact(text)
}

/// Function-call arguments as a strict server wants them back (and redacted, as
/// [`wire_text`]): the JSON text as sent when it parses, `{}` when empty, and otherwise an
/// object that carries the broken text as a string.
#[must_use]
pub fn wire_arguments(args: &str) -> Cow<'_, str> {
    if args.trim().is_empty() {
        return Cow::Borrowed("{}");
    }
    let args = wire_text(args);
    if serde_json::from_str::<serde::de::IgnoredAny>(&args).is_ok() {
        return args;
    }
    Cow::Owned(json!({ "invalid_json_arguments": args }).to_string())
}

/// A Responses output item sent back verbatim, with a `function_call`'s arguments repaired
/// and redacted.
#[must_use]
pub fn wire_item(item: &Value) -> Cow<'_, Value> {
    let changed = item.get("type").and_then(Value::as_str) == Some("function_call")
        && item.get("arguments").and_then(Value::as_str).is_some_and(|a| matches!(wire_arguments(a), Cow::Owned(_)));
    if !changed {
        return Cow::Borrowed(item);
    }
    let mut fixed = item.clone();
    if let Some(a) = item.get("arguments").and_then(Value::as_str) {
        fixed["arguments"] = Value::String(wire_arguments(a).into_owned());
    }
    Cow::Owned(fixed)
}

/// The answers the history lacks: one for every call that has none, carrying the call's own
/// outcome when it was settled (not run, refused, cut), else [`NOT_RUN`]. Each is given with
/// the index it goes before: right after the answers already there, so each assistant message
/// is followed by one answer per call. Usually none, so nothing of the history is copied.
#[must_use]
pub fn missing_answers(messages: &[&Message]) -> Vec<(usize, Message)> {
    let mut out = Vec::new();
    for (at, m) in messages.iter().enumerate().filter(|(_, m)| m.role() == Role::Assistant) {
        let calls = &m.main().tool_calls;
        if calls.is_empty() {
            continue;
        }
        let answers = messages[at + 1..].iter().take_while(|m| m.role() == Role::Tool);
        let answered: HashSet<&str> = answers.clone().filter_map(|m| m.tool_call_id.as_deref()).collect();
        let before = at + 1 + answers.count();
        for call in calls.iter().filter(|c| !answered.contains(c.id.as_str())) {
            let mut answer = Message::answer_to(call);
            if call.output.is_none() {
                answer.main_mut().content = NOT_RUN.to_owned();
            }
            out.push((before, answer));
        }
    }
    out
}

/// The history with `answers` (from [`missing_answers`]) in their places.
#[must_use]
pub fn with_answers<'a>(messages: &[&'a Message], answers: &'a [(usize, Message)]) -> Vec<&'a Message> {
    let mut out = Vec::with_capacity(messages.len() + answers.len());
    let mut answers = answers.iter().peekable();
    for (at, m) in messages.iter().enumerate() {
        while let Some((_, a)) = answers.next_if(|(before, _)| *before == at) {
            out.push(a);
        }
        out.push(*m);
    }
    out.extend(answers.map(|(_, a)| a));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::message::ToolCall;

    fn call(id: &str, args: &str) -> ToolCall {
        ToolCall { id: id.into(), name: "read_file".into(), arguments: args.into(), ..ToolCall::default() }
    }

    #[test]
    fn what_goes_back_is_redacted() {
        crate::sys::secrets::register("sendback-key-0123456789");
        let hex: String = "sendback-key-0123456789".bytes().map(|b| format!("{b:02x}")).collect();
        assert_eq!(wire_text(&format!("out: {hex}")), "out: [redacted]");
        assert_eq!(wire_arguments(r#"{"c":"echo sendback-key-0123456789"}"#), r#"{"c":"echo [redacted]"}"#);
        let item = json!({"type": "function_call", "arguments": "{\"k\":\"sendback-key-0123456789\"}"});
        assert_eq!(wire_item(&item)["arguments"], "{\"k\":\"[redacted]\"}");
        let msgs = [Message::user("u"), Message::tool_result("c1", &format!("{hex}!"))];
        let body = crate::engine::request::build_body(
            crate::api::Api::Chat,
            &msgs,
            &crate::engine::request::RequestOptions::default(),
        );
        assert!(!body.to_string().contains(&hex), "{body}");
    }

    #[test]
    fn arguments_strict_servers_accept() {
        assert_eq!(wire_arguments(""), "{}");
        assert_eq!(wire_arguments("{\"a\":1}"), "{\"a\":1}");
        let cut = wire_arguments("{\"path\": \"no");
        let v: Value = serde_json::from_str(&cut).unwrap();
        assert_eq!(v["invalid_json_arguments"], "{\"path\": \"no");
        let item = json!({"type": "function_call", "call_id": "c", "arguments": "{\"x"});
        assert!(serde_json::from_str::<Value>(wire_item(&item)["arguments"].as_str().unwrap()).is_ok());
        let ok = json!({"type": "function_call", "arguments": "{}"});
        assert!(matches!(wire_item(&ok), Cow::Borrowed(_)));
    }

    #[test]
    fn every_call_gets_an_answer_in_place() {
        let mut a = Message::assistant_pending();
        a.main_mut().tool_calls = vec![call("c1", "{}"), call("c2", "{\"p"), call("c3", "{}")];
        a.main_mut().tool_calls[1].output = Some("cut".into());
        let msgs = [Message::user("u"), a, Message::tool_result("c1", "one"), Message::user("next")];
        let refs: Vec<&Message> = msgs.iter().collect();
        let answers = missing_answers(&refs);
        let fixed = with_answers(&refs, &answers);
        let ids: Vec<_> = fixed.iter().map(|m| (m.role(), m.tool_call_id.clone(), m.main().content.clone())).collect();
        assert_eq!(ids[2], (Role::Tool, Some("c1".into()), "one".into()));
        assert_eq!(ids[3], (Role::Tool, Some("c2".into()), "cut".into()));
        assert_eq!(ids[4], (Role::Tool, Some("c3".into()), NOT_RUN.into()));
        assert_eq!(ids[5].0, Role::User);
        let whole = [Message::user("u"), Message::user("v")];
        assert!(missing_answers(&whole.iter().collect::<Vec<_>>()).is_empty(), "nothing to add, nothing copied");
    }

    #[test]
    fn a_trailing_unanswered_call_is_answered() {
        let mut a = Message::assistant_pending();
        a.main_mut().tool_calls = vec![call("c1", "{")];
        let msgs = [Message::user("u"), a];
        let refs: Vec<&Message> = msgs.iter().collect();
        let answers = missing_answers(&refs);
        let fixed = with_answers(&refs, &answers);
        assert_eq!(fixed.len(), 3);
        assert_eq!(fixed[2].tool_call_id.as_deref(), Some("c1"));
    }

    #[test]
    fn answers_to_two_replies_in_a_row_each_follow_their_own() {
        let mut a = Message::assistant_pending();
        a.main_mut().tool_calls = vec![call("c1", "{}"), call("c2", "{}")];
        let mut b = Message::assistant_pending();
        b.main_mut().tool_calls = vec![call("c3", "{}")];
        let msgs = [Message::user("u"), a, Message::tool_result("c2", "two"), b, Message::user("v")];
        let refs: Vec<&Message> = msgs.iter().collect();
        let answers = missing_answers(&refs);
        let sent: Vec<(Role, Option<&str>)> =
            with_answers(&refs, &answers).iter().map(|m| (m.role(), m.tool_call_id.as_deref())).collect();
        assert_eq!(
            sent,
            [
                (Role::User, None),
                (Role::Assistant, None),
                (Role::Tool, Some("c2")),
                (Role::Tool, Some("c1")),
                (Role::Assistant, None),
                (Role::Tool, Some("c3")),
                (Role::User, None),
            ]
        );
    }
}
