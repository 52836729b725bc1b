use super::*;
use crate::engine::message::ToolCall;
use crate::tools::Registry;
use serde_json::json;

fn policy(mode: ToolMode) -> TurnPolicy {
    TurnPolicy { mode, yes: false, step_limit: 2, interactive: false }
}

fn reply(finish: &str, calls: &[(&str, &str)]) -> Message {
    let mut m = Message::assistant_pending();
    m.status = MessageStatus::Complete;
    m.main_mut().finish_reason = Some(finish.into());
    m.main_mut().tool_calls = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall {
            id: format!("c{i}"),
            name: (*name).into(),
            arguments: (*args).into(),
            ..ToolCall::default()
        })
        .collect();
    m
}

fn no_session(_: &str) -> bool {
    false
}

#[test]
fn a_cut_call_never_runs() {
    let r = Registry::builtins();
    let mut acc = TurnAccount::default();
    let mut m = reply("length", &[("read_file", "{\"path\": \"Carg")]);
    let next = acc.after_reply(&policy(ToolMode::Auto), &mut m, &r, &no_session);
    let Next::Stop { stop, notice } = next else { panic!("a cut call must stop the turn") };
    assert_eq!(stop, TurnStop::CutCall);
    assert!(notice.unwrap_or_default().contains("token limit"));
    let call = &m.main().tool_calls[0];
    assert_eq!(call.status, ToolStatus::Skipped);
    assert!(call.output.as_deref().unwrap_or_default().contains("token limit"));
    // The original bytes stay on the message.
    assert_eq!(call.arguments, "{\"path\": \"Carg");
    let mut filtered = reply("content_filter", &[("read_file", "{}")]);
    assert!(matches!(
        acc.after_reply(&policy(ToolMode::Auto), &mut filtered, &r, &no_session),
        Next::Stop { stop: TurnStop::CutCall, .. }
    ));
}

#[test]
fn invalid_arguments_are_answered_not_run() {
    let r = Registry::builtins();
    let mut acc = TurnAccount::default();
    let mut m = reply("tool_calls", &[("read_file", "{\"path\": "), ("current_time", "{}")]);
    let Next::Settle(d) = acc.after_reply(&policy(ToolMode::Auto), &mut m, &r, &no_session) else {
        panic!("valid calls go ahead")
    };
    assert_eq!(d, vec![Decision::Settled, Decision::Run]);
    let bad = &m.main().tool_calls[0];
    assert_eq!(bad.status, ToolStatus::Failed);
    assert!(bad.output.as_deref().unwrap_or_default().contains("not valid JSON"));
}

#[test]
fn tools_off_and_step_limit_stop_with_a_reason() {
    let r = Registry::builtins();
    let mut acc = TurnAccount::default();
    let mut m = reply("tool_calls", &[("current_time", "{}")]);
    let next = acc.after_reply(&policy(ToolMode::Off), &mut m, &r, &no_session);
    assert!(matches!(next, Next::Stop { stop: TurnStop::ToolsOff, .. }));
    let mut acc = TurnAccount::default();
    for _ in 0..2 {
        let mut m = reply("tool_calls", &[("current_time", "{}")]);
        assert!(matches!(acc.after_reply(&policy(ToolMode::Auto), &mut m, &r, &no_session), Next::Settle(_)));
    }
    let mut m = reply("tool_calls", &[("current_time", "{}")]);
    let next = acc.after_reply(&policy(ToolMode::Auto), &mut m, &r, &no_session);
    assert!(matches!(next, Next::Stop { stop: TurnStop::StepLimit, .. }));
    assert_eq!(acc.summary()["stop"], "step_limit");
    assert_eq!(acc.summary()["requests"], 3);
    assert_eq!(acc.summary()["tool_rounds"], 2);
}

#[test]
fn headless_refuses_what_needs_asking_and_says_why() {
    let r = Registry::builtins();
    let mut acc = TurnAccount::default();
    let mut m = reply("tool_calls", &[("run_command", "{\"command\":\"ls\"}")]);
    let Next::Settle(d) = acc.after_reply(&policy(ToolMode::Auto), &mut m, &r, &no_session) else { panic!() };
    assert_eq!(d, vec![Decision::Settled]);
    let out = m.main().tool_calls[0].output.clone().unwrap_or_default();
    assert!(out.contains("no one could give it"), "{out}");
    let mut interactive = policy(ToolMode::Auto);
    interactive.interactive = true;
    let mut m = reply("tool_calls", &[("run_command", "{\"command\":\"ls\"}")]);
    let Next::Settle(d) = acc.after_reply(&interactive, &mut m, &r, &no_session) else { panic!() };
    assert_eq!(d, vec![Decision::Ask { paths: Vec::new() }]);
}

#[test]
fn usage_adds_up_over_the_turn() {
    let r = Registry::builtins();
    let mut acc = TurnAccount::default();
    let mut first = reply("tool_calls", &[("current_time", "{}")]);
    first.usage = Some(json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}));
    let _ = acc.after_reply(&policy(ToolMode::Auto), &mut first, &r, &no_session);
    let mut second = reply("stop", &[]);
    second.usage = Some(json!({"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37,
        "prompt_tokens_details": {"cached_tokens": 8}}));
    assert!(matches!(
        acc.after_reply(&policy(ToolMode::Auto), &mut second, &r, &no_session),
        Next::Stop { stop: TurnStop::Answer, notice: None }
    ));
    let u = acc.usage().unwrap_or_default();
    assert_eq!((u["prompt_tokens"].as_u64(), u["completion_tokens"].as_u64()), (Some(40), Some(12)));
    assert_eq!(u["total_tokens"], 52);
    assert_eq!(u["cached_tokens"], 8);
    assert_eq!(u["requests"].as_array().map(Vec::len), Some(2));
    assert_eq!(u["requests"][0]["prompt_tokens"], 10);
    // One request: the usage exactly as before (details kept), no `requests`.
    let mut one = TurnAccount::default();
    let mut m = reply("stop", &[]);
    m.usage = Some(json!({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3, "x": 1}));
    let _ = one.after_reply(&policy(ToolMode::Off), &mut m, &r, &no_session);
    let u = one.usage().unwrap_or_default();
    assert_eq!(u["details"]["x"], 1);
    assert!(u.get("requests").is_none());
}

/// `turn.stop` says what stopped an answer: a cut or filtered one is not a plain "answer".
#[test]
fn a_cut_or_filtered_answer_says_so_in_its_stop() {
    let r = Registry::builtins();
    for (finish, stop, word) in [
        ("stop", TurnStop::Answer, "answer"),
        ("length", TurnStop::Length, "length"),
        ("content_filter", TurnStop::ContentFilter, "content_filter"),
        ("something_new", TurnStop::Answer, "answer"),
    ] {
        let mut acc = TurnAccount::default();
        let next = acc.after_reply(&policy(ToolMode::Auto), &mut reply(finish, &[]), &r, &no_session);
        assert_eq!(next, Next::Stop { stop, notice: None }, "{finish}");
        assert_eq!(acc.summary()["stop"], word, "{finish}");
    }
    // With calls in it, a filtered reply is still a cut call (none ran).
    let mut acc = TurnAccount::default();
    let next = acc.after_reply(&policy(ToolMode::Auto), &mut reply("content_filter", &[("x", "{}")]), &r, &no_session);
    assert!(matches!(next, Next::Stop { stop: TurnStop::CutCall, notice: Some(_) }));
}

#[test]
fn no_tool_is_offered_when_tools_are_off() {
    let r = Registry::builtins();
    assert!(offered(ToolMode::Off, &r).is_empty());
    assert_eq!(offered(ToolMode::Auto, &r).len(), r.specs().len());
}
