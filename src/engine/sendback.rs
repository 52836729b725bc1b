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

/// Function-call arguments as a strict server wants them back: the JSON text as sent when it
/// parses, `{}` when empty, and otherwise an object that carries the broken text as a string.
#[must_use]
pub fn wire_arguments(args: &str) -> Cow<'_, str> {
    if args.trim().is_empty() {
        return Cow::Borrowed("{}");
    }
    if serde_json::from_str::<serde::de::IgnoredAny>(args).is_ok() {
        return Cow::Borrowed(args);
    }
    Cow::Owned(json!({ "invalid_json_arguments": args }).to_string())
}

/// A Responses output item sent back verbatim, with a `function_call`'s arguments repaired.
#[must_use]
pub fn wire_item(item: &Value) -> Cow<'_, Value> {
    let broken = item.get("type").and_then(Value::as_str) == Some("function_call")
        && item.get("arguments").and_then(Value::as_str).is_some_and(|a| matches!(wire_arguments(a), Cow::Owned(_)));
    if !broken {
        return Cow::Borrowed(item);
    }
    let mut fixed = item.clone();
    if let Some(a) = item.get("arguments").and_then(Value::as_str) {
        fixed["arguments"] = Value::String(wire_arguments(a).into_owned());
    }
    Cow::Owned(fixed)
}

/// The history with an answer after every call that has none: the call's own outcome when it
/// was settled (not run, refused, cut), else [`NOT_RUN`]. Answers go right after the answers
/// already there, so each assistant message is followed by one answer per call.
#[must_use]
pub fn with_answers(messages: &[Message]) -> Cow<'_, [Message]> {
    let unanswered = |at: usize| -> Vec<usize> {
        let calls = &messages[at].main().tool_calls;
        let answered: HashSet<&str> = messages[at + 1..]
            .iter()
            .take_while(|m| m.role() == Role::Tool)
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        (0..calls.len()).filter(|&i| !answered.contains(calls[i].id.as_str())).collect()
    };
    let needs = |at: usize| messages[at].role() == Role::Assistant && !unanswered(at).is_empty();
    if !(0..messages.len()).any(needs) {
        return Cow::Borrowed(messages);
    }
    let mut out = Vec::with_capacity(messages.len() + 4);
    let mut pending: Vec<Message> = Vec::new();
    for (at, m) in messages.iter().enumerate() {
        if m.role() != Role::Tool {
            out.append(&mut pending);
        }
        out.push(m.clone());
        if m.role() == Role::Assistant {
            pending = unanswered(at)
                .into_iter()
                .map(|i| {
                    let call = &m.main().tool_calls[i];
                    let mut answer = Message::answer_to(call);
                    if call.output.is_none() {
                        answer.main_mut().content = NOT_RUN.to_owned();
                    }
                    answer
                })
                .collect();
        }
    }
    out.append(&mut pending);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::message::ToolCall;

    fn call(id: &str, args: &str) -> ToolCall {
        ToolCall { id: id.into(), name: "read_file".into(), arguments: args.into(), ..ToolCall::default() }
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
        let msgs = vec![Message::user("u"), a, Message::tool_result("c1", "one"), Message::user("next")];
        let fixed = with_answers(&msgs);
        let ids: Vec<_> = fixed.iter().map(|m| (m.role(), m.tool_call_id.clone(), m.main().content.clone())).collect();
        assert_eq!(ids[2], (Role::Tool, Some("c1".into()), "one".into()));
        assert_eq!(ids[3], (Role::Tool, Some("c2".into()), "cut".into()));
        assert_eq!(ids[4], (Role::Tool, Some("c3".into()), NOT_RUN.into()));
        assert_eq!(ids[5].0, Role::User);
        let whole = vec![Message::user("u"), Message::user("v")];
        assert!(matches!(with_answers(&whole), Cow::Borrowed(_)));
    }

    #[test]
    fn a_trailing_unanswered_call_is_answered() {
        let mut a = Message::assistant_pending();
        a.main_mut().tool_calls = vec![call("c1", "{")];
        let msgs = [Message::user("u"), a];
        let fixed = with_answers(&msgs);
        assert_eq!(fixed.len(), 3);
        assert_eq!(fixed[2].tool_call_id.as_deref(), Some("c1"));
    }
}
