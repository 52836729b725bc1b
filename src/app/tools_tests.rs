//! The tool loop as a state machine, driven by `Msg`s alone: gate outcomes, concurrent calls,
//! the step limit, cancelling, denying with a reason, editing then approving, session
//! approvals, MCP approvals, and the inspector's requests.

use crate::api::client::WireEvent;
use crate::api::event::StreamEvent;
use crate::app::approval::Choice;
use crate::app::effect::Effect;
use crate::app::msg::Msg;
use crate::app::overlay::Overlay;
use crate::app::state::State;
use crate::app::test_state;
use crate::app::tools::{CANCELLED, Owner, ToolEffect, ToolMsg, ToolSet};
use crate::engine::message::{Role, ToolStatus};
use crate::engine::tool_loop::{MCP_APPROVE, ToolMode, refusal_output};
use crate::tools::{Registry, ToolOutput};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
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

fn ctrl(s: &mut State, c: char) -> Vec<Effect> {
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)))
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        key(s, KeyCode::Char(c));
    }
}

/// Sends a prompt; returns the id of the reply.
fn send(s: &mut State, text: &str) -> u64 {
    typed(s, text);
    let fx = key(s, KeyCode::Enter);
    request_id(&fx).unwrap_or_else(|| panic!("no request in {fx:?}"))
}

fn request_id(fx: &[Effect]) -> Option<u64> {
    fx.iter().find_map(|e| match e {
        Effect::StartRequest { id, .. } => Some(*id),
        _ => None,
    })
}

fn request_body(fx: &[Effect]) -> Option<Value> {
    fx.iter().find_map(|e| match e {
        Effect::StartRequest { body, .. } => Some(Value::clone(body)),
        _ => None,
    })
}

/// The calls the effects ask to run, as (call index, arguments).
fn runs(fx: &[Effect]) -> Vec<(usize, String)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Tools(ToolEffect::Run { index, call, .. }) => Some((*index, call.arguments.clone())),
            _ => None,
        })
        .collect()
}

/// Streams a reply made of these calls (name, arguments, kind) and ends it; returns the effects
/// of the end.
fn reply_with_calls(s: &mut State, id: u64, calls: &[(&str, &str, Option<&str>)]) -> Vec<Effect> {
    let mut events: Vec<StreamEvent> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args, kind))| {
            StreamEvent::ToolCall(Box::new(crate::api::event::CallFragment {
                choice: 0,
                slot: u32::try_from(i).unwrap_or(0),
                id: Some(format!("call_{i}")),
                name: Some((*name).to_owned()),
                arguments: (*args).to_owned(),
                extra: None,
                kind: kind.map(str::to_owned),
                index: None,
            }))
        })
        .collect();
    events.push(StreamEvent::Finish { choice: 0, reason: "tool_calls".into() });
    events.push(StreamEvent::End);
    end(s, id, events)
}

fn reply_text(s: &mut State, id: u64, text: &str) -> Vec<Effect> {
    let events = vec![
        StreamEvent::Text { choice: 0, delta: text.into() },
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
        StreamEvent::End,
    ];
    end(s, id, events)
}

fn end(s: &mut State, id: u64, events: Vec<StreamEvent>) -> Vec<Effect> {
    s.apply(Msg::RequestStarted { id, now_ms: 100 });
    s.apply(Msg::Wire {
        id,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 }),
        now_ms: 110,
    });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 20 }), now_ms: 120 })
}

fn done(s: &mut State, id: u64, index: usize, text: &str) -> Vec<Effect> {
    let output = ToolOutput::ok(text);
    s.apply(Msg::Tools(ToolMsg::Done { owner: Owner::Chat, id, index, output, duration_ms: 7 }))
}

fn status(s: &State, id: u64, index: usize) -> ToolStatus {
    s.tool_call(id, index).map(|c| c.status.clone()).unwrap_or_default()
}

fn output(s: &State, id: u64, index: usize) -> String {
    s.tool_call(id, index).and_then(|c| c.output.clone()).unwrap_or_default()
}

/// Lets the approval modal's guard pass (and any typing be long ago), then picks the option of
/// letter `c` and confirms it with Enter.
fn choose(s: &mut State, c: char) -> Vec<Effect> {
    wait(s);
    key(s, KeyCode::Char(c));
    key(s, KeyCode::Enter)
}

/// Two seconds pass on the app clock: the modal's guard is over and earlier typing is not
/// "mid-sentence" any more.
fn wait(s: &mut State) {
    let t = s.now_ms;
    s.apply(Msg::Tick { now_ms: t });
    s.apply(Msg::Tick { now_ms: t + 2000 });
}

fn modal_open(s: &State) -> bool {
    s.overlays.iter().any(|o| matches!(o, Overlay::Approval))
}

#[test]
fn requests_carry_the_tool_definitions() {
    let mut s = state();
    typed(&mut s, "hi");
    let fx = key(&mut s, KeyCode::Enter);
    let body = request_body(&fx).unwrap_or_default();
    let names: Vec<&str> =
        body["tools"].as_array().into_iter().flatten().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(names.contains(&"read_file") && names.contains(&"write_file"), "{names:?}");
}

#[test]
fn read_only_calls_run_concurrently_then_the_answers_go_back() {
    let mut s = state();
    let id = send(&mut s, "what is here?");
    let fx = reply_with_calls(
        &mut s,
        id,
        &[("list_directory", r#"{"path":"."}"#, None), ("current_time", "{}", None), ("nope", "{}", None)],
    );
    // All three start at once (an unknown tool runs too: the registry answers with an error).
    assert_eq!(runs(&fx).iter().map(|r| r.0).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(s.tools.busy() && !modal_open(&s));
    assert_eq!(status(&s, id, 1), ToolStatus::Running);
    // Out of order, and nothing goes out until every call is settled.
    assert!(request_id(&done(&mut s, id, 2, "unknown tool")).is_none());
    assert!(request_id(&done(&mut s, id, 0, "a.txt")).is_none());
    let fx = done(&mut s, id, 1, "noon");
    let body = request_body(&fx).unwrap_or_default();
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let tools: Vec<(&str, &str)> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| (m["tool_call_id"].as_str().unwrap_or(""), m["content"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(tools, [("call_0", "a.txt"), ("call_1", "noon"), ("call_2", "unknown tool")]);
    assert!(!s.tools.busy());
    assert_eq!(s.tool_call(id, 0).and_then(|c| c.duration_ms), Some(7));
    // A late report for a settled call changes nothing.
    let next = s.live.as_ref().map(|l| l.id).unwrap_or_default();
    assert!(request_id(&done(&mut s, id, 0, "again")).is_none());
    assert_eq!(output(&s, id, 0), "a.txt");
    // The model answers: the turn is over.
    reply_text(&mut s, next, "There is a.txt.");
    assert!(!s.tools.busy() && s.live.is_none());
    assert_eq!(s.tools.rounds(Owner::Chat), 0);
}

#[test]
fn side_effects_ask_and_deny_with_a_reason_reaches_the_model() {
    let mut s = state();
    let id = send(&mut s, "write it");
    let fx = reply_with_calls(
        &mut s,
        id,
        &[("write_file", r#"{"path":"x.txt","content":"hi"}"#, None), ("current_time", "{}", None)],
    );
    // The read-only call runs meanwhile; the writer waits in the modal, and its file is read for the diff.
    assert_eq!(runs(&fx).iter().map(|r| r.0).collect::<Vec<_>>(), [1]);
    assert!(fx.iter().any(|e| matches!(e, Effect::Tools(ToolEffect::ReadFile { path, .. }) if path == "x.txt")));
    assert!(modal_open(&s));
    assert_eq!(status(&s, id, 0), ToolStatus::AwaitingApproval);
    assert!(request_id(&done(&mut s, id, 1, "noon")).is_none(), "the approval is still open");
    // r then Enter opens the reason; typing goes into it, not the composer; Enter denies.
    choose(&mut s, 'r');
    typed(&mut s, "not in my home");
    let fx = key(&mut s, KeyCode::Enter);
    assert!(s.composer.is_empty());
    assert!(!modal_open(&s));
    assert_eq!(status(&s, id, 0), ToolStatus::Denied);
    let body = request_body(&fx).unwrap_or_default();
    let tool_msgs: Vec<&Value> =
        body["messages"].as_array().into_iter().flatten().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_msgs[0]["content"], refusal_output("not in my home"));
    assert_eq!(tool_msgs[1]["content"], "noon");
}

#[test]
fn plain_deny_and_approve_once() {
    let mut s = state();
    let id = send(&mut s, "two writes");
    reply_with_calls(
        &mut s,
        id,
        &[("write_file", r#"{"path":"a","content":"1"}"#, None), ("run_command", r#"{"command":"true"}"#, None)],
    );
    // One modal at a time, the first call first.
    assert_eq!(s.tools.asking(), Some((Owner::Chat, id, 0)));
    let fx = choose(&mut s, 'y');
    assert_eq!(runs(&fx).iter().map(|r| r.0).collect::<Vec<_>>(), [0]);
    assert_eq!(s.tools.asking(), Some((Owner::Chat, id, 1)));
    assert!(modal_open(&s));
    // The next call's modal has its own guard: an Enter right away decides nothing.
    key(&mut s, KeyCode::Enter);
    assert_eq!(s.tools.asking(), Some((Owner::Chat, id, 1)));
    let fx = choose(&mut s, 'n');
    assert!(runs(&fx).is_empty() && !modal_open(&s));
    assert_eq!(output(&s, id, 1), refusal_output("declined in the approval dialog"));
    assert!(request_id(&done(&mut s, id, 0, "wrote")).is_some());
}

#[test]
fn edit_then_approve_runs_the_edited_arguments() {
    let mut s = state();
    let id = send(&mut s, "write");
    reply_with_calls(&mut s, id, &[("write_file", r#"{"path":"a.txt","content":"1"}"#, None)]);
    choose(&mut s, 'e');
    // Bad JSON is refused in the modal, which stays open.
    for _ in 0..3 {
        key(&mut s, KeyCode::Backspace);
    }
    let fx = ctrl(&mut s, 's');
    assert!(runs(&fx).is_empty() && modal_open(&s));
    assert!(s.tools.approval.as_ref().and_then(|a| a.error.clone()).is_some_and(|e| e.contains("JSON")));
    // Replace everything with good arguments and approve.
    key(&mut s, KeyCode::Esc);
    choose(&mut s, 'e');
    if let Some(crate::app::approval::Approval { mode: crate::app::approval::Mode::Edit(c), .. }) =
        s.tools.approval.as_mut()
    {
        c.set_text(r#"{"path": "b.txt", "content": "2"}"#);
    }
    let fx = ctrl(&mut s, 's');
    assert_eq!(runs(&fx), [(0, r#"{"content":"2","path":"b.txt"}"#.to_owned())]);
    assert_eq!(
        s.tool_call(id, 0).map(|c| c.arguments.clone()).unwrap_or_default(),
        r#"{"content":"2","path":"b.txt"}"#
    );
    let body = request_body(&done(&mut s, id, 0, "wrote 1 bytes")).unwrap_or_default();
    assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["arguments"], r#"{"content":"2","path":"b.txt"}"#);
}

#[test]
fn approve_for_the_session_runs_the_waiting_twin_and_later_calls() {
    let mut s = test_state();
    let mut r = Registry::builtins();
    let tool = crate::config::UserTool {
        name: "deploy".into(),
        description: "ship it".into(),
        command: vec!["true".into()],
        parameters: None,
        approval: Some("ask".into()),
        timeout_secs: None,
        sandbox: None,
        env: None,
    };
    assert!(r.add_user_tools(&[tool]).is_empty());
    s.tools.set = ToolSet(Arc::new(r));
    s.tools.flags.mode = ToolMode::Auto;
    let id = send(&mut s, "deploy twice");
    reply_with_calls(&mut s, id, &[("deploy", r#"{"n":1}"#, None), ("deploy", r#"{"n":2}"#, None)]);
    assert!(s.session_approval_offered(Owner::Chat, id, 0));
    // The grant for the session has no letter: the arrows reach it (once, then the session).
    wait(&mut s);
    key(&mut s, KeyCode::Down);
    key(&mut s, KeyCode::Down);
    let fx = key(&mut s, KeyCode::Enter);
    assert_eq!(runs(&fx).iter().map(|r| r.0).collect::<Vec<_>>(), [0, 1]);
    assert!(!modal_open(&s));
    done(&mut s, id, 0, "ok");
    let next = request_id(&done(&mut s, id, 1, "ok")).unwrap_or_default();
    // The next round does not ask again.
    let fx = reply_with_calls(&mut s, next, &[("deploy", r#"{"n":3}"#, None)]);
    assert_eq!(runs(&fx).len(), 1);
    assert!(!modal_open(&s));
}

#[test]
fn always_tools_are_not_offered_for_the_session() {
    let mut s = state();
    let id = send(&mut s, "run");
    reply_with_calls(&mut s, id, &[("run_command", r#"{"command":"ls"}"#, None)]);
    assert!(!s.session_approval_offered(Owner::Chat, id, 0));
    assert_eq!(
        s.approval_choices(),
        [Choice::Once, Choice::Outside, Choice::Deny, Choice::Reason, Choice::Edit],
        "no grant for the session is listed (a command may run outside the sandbox, once)"
    );
    wait(&mut s);
    let fx = key(&mut s, KeyCode::Char('a'));
    assert!(runs(&fx).is_empty());
    assert!(modal_open(&s) && s.tools.session.is_empty());
    assert_eq!(s.composer.text(), "a", "a letter that is no option's is text");
}

#[test]
fn esc_cancels_the_turn_and_drops_running_tools() {
    let mut s = state();
    let id = send(&mut s, "go");
    reply_with_calls(
        &mut s,
        id,
        &[("current_time", "{}", None), ("write_file", r#"{"path":"a","content":"1"}"#, None)],
    );
    assert!(modal_open(&s));
    let fx = key(&mut s, KeyCode::Esc);
    assert!(fx.contains(&Effect::Tools(ToolEffect::Cancel { owner: Owner::Chat, id })));
    assert!(request_id(&fx).is_none());
    assert!(!s.tools.busy() && !modal_open(&s));
    assert_eq!(output(&s, id, 0), CANCELLED);
    assert_eq!(status(&s, id, 1), ToolStatus::Denied);
    // Every call is answered, so the next prompt's request is well formed.
    let answers = s.transcript.cells.iter().filter_map(|c| c.message()).filter(|m| m.role() == Role::Tool).count();
    assert_eq!(answers, 2);
    // The dropped tool's late report changes nothing.
    assert!(request_id(&done(&mut s, id, 0, "noon")).is_none());
    assert_eq!(output(&s, id, 0), CANCELLED);
    // Ctrl+C works the same while tools run without a modal.
    let id = send(&mut s, "again");
    reply_with_calls(&mut s, id, &[("current_time", "{}", None)]);
    assert!(s.tools.busy());
    let fx = ctrl(&mut s, 'c');
    assert!(fx.contains(&Effect::Tools(ToolEffect::Cancel { owner: Owner::Chat, id })));
    assert!(!s.tools.busy() && !s.quit);
}

#[test]
fn the_step_limit_stops_the_loop_with_a_notice() {
    let mut s = state();
    s.tools.step_limit = 2;
    let mut id = send(&mut s, "loop forever");
    for round in 0..2 {
        reply_with_calls(&mut s, id, &[("current_time", "{}", None)]);
        assert_eq!(s.tools.rounds(Owner::Chat), round + 1);
        id = request_id(&done(&mut s, id, 0, "noon")).unwrap_or_default();
    }
    let fx = reply_with_calls(&mut s, id, &[("current_time", "{}", None)]);
    assert!(runs(&fx).is_empty() && request_id(&fx).is_none());
    assert_eq!(status(&s, id, 0), ToolStatus::Skipped);
    assert!(!s.tools.busy());
    let last = s.transcript.cells.iter().rev().find_map(|c| match c {
        crate::app::transcript::Cell::Notice(n) => Some(n.text.clone()),
        crate::app::transcript::Cell::Message(_) => None,
    });
    assert!(last.unwrap_or_default().contains("stopped after 2 tool rounds"));
    // A new prompt starts counting again.
    let id = send(&mut s, "once more");
    reply_with_calls(&mut s, id, &[("current_time", "{}", None)]);
    assert_eq!(s.tools.rounds(Owner::Chat), 1);
}

#[test]
fn tools_off_runs_nothing_and_answers_every_call() {
    let mut s = state();
    s.tools.flags.mode = ToolMode::Off;
    let id = send(&mut s, "list");
    let fx = reply_with_calls(&mut s, id, &[("list_directory", "{}", None)]);
    assert!(runs(&fx).is_empty() && request_id(&fx).is_none() && !s.tools.busy());
    assert_eq!(status(&s, id, 0), ToolStatus::Skipped);
    // The next request offers no tool, and answers the call that did not run.
    let body = request_body(&{
        typed(&mut s, "then what");
        key(&mut s, KeyCode::Enter)
    })
    .unwrap_or_default();
    assert!(body.get("tools").is_none());
    assert_eq!(body["messages"][2]["role"], "tool");
    assert!(body["messages"][2]["content"].as_str().unwrap_or_default().contains("tools are off"));
    assert_eq!(body["messages"][3]["content"], "then what");
}

#[test]
fn yes_runs_side_effects_without_asking() {
    let mut s = state();
    s.tools.flags.yes = true;
    let id = send(&mut s, "write");
    let fx = reply_with_calls(&mut s, id, &[("write_file", r#"{"path":"a","content":"1"}"#, None)]);
    assert_eq!(runs(&fx).len(), 1);
    assert!(!modal_open(&s));
}

fn responses_state() -> State {
    let mut s = state();
    s.target.api = crate::api::Api::Responses;
    s
}

#[test]
fn mcp_approval_goes_back_as_an_approval_response() {
    let mut s = responses_state();
    let id = send(&mut s, "note it");
    let args = r#"{"title":"t"}"#;
    let fx = reply_with_calls(&mut s, id, &[("wiki.create_note", args, Some("mcp_approval"))]);
    assert!(runs(&fx).is_empty() && modal_open(&s));
    assert!(!s.session_approval_offered(Owner::Chat, id, 0));
    // Nothing to edit in an MCP approval: e is no option, so it is text.
    assert!(!s.approval_choices().contains(&Choice::Edit));
    choose(&mut s, 'e');
    assert!(matches!(s.tools.approval.as_ref().map(|a| &a.mode), Some(crate::app::approval::Mode::Choose)));
    assert_eq!(s.composer.text(), "e");
    let fx = choose(&mut s, 'y');
    assert!(runs(&fx).is_empty(), "the provider runs approved MCP calls");
    assert_eq!(output(&s, id, 0), MCP_APPROVE);
    let body = request_body(&fx).unwrap_or_default();
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let answer = input.iter().find(|i| i["type"] == "mcp_approval_response").cloned().unwrap_or_default();
    assert_eq!(answer["approve"], true);
    assert_eq!(answer["approval_request_id"], "call_0");
}

#[test]
fn mcp_denial_carries_the_reason() {
    let mut s = responses_state();
    let id = send(&mut s, "note it");
    reply_with_calls(&mut s, id, &[("wiki.create_note", "{}", Some("mcp_approval"))]);
    choose(&mut s, 'r');
    typed(&mut s, "no notes today");
    let fx = key(&mut s, KeyCode::Enter);
    let body = request_body(&fx).unwrap_or_default();
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let answer = input.iter().find(|i| i["type"] == "mcp_approval_response").cloned().unwrap_or_default();
    assert_eq!(answer["approve"], false);
    assert!(answer["reason"].as_str().unwrap_or_default().contains("no notes today"));
}

#[test]
fn generated_images_are_saved_by_the_runner() {
    let mut s = responses_state();
    let id = send(&mut s, "draw");
    let item = json!({"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBORw0KGgo="});
    let events = vec![
        StreamEvent::Item { index: 0, item: item.clone(), done: true },
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
        StreamEvent::End,
    ];
    let fx = end(&mut s, id, events);
    assert!(fx.contains(&Effect::Tools(ToolEffect::SaveImages { owner: Owner::Chat, id, items: vec![item] })));
    s.apply(Msg::Tools(ToolMsg::ImagesSaved {
        owner: Owner::Chat,
        id,
        saved: vec![(0, "/d/images/ig_1.png".into())],
        notices: vec![],
    }));
    let m = s.transcript.message(id).map(|m| m.item_notes.clone()).unwrap_or_default();
    assert_eq!(m[&0]["saved_path"], "/d/images/ig_1.png");
}

#[test]
fn the_inspector_keeps_requests_and_copies_them_as_curl() {
    let mut s = state();
    let id = send(&mut s, "what is here?");
    assert!(s.flow.requests.contains_key(&(None, id)));
    reply_with_calls(&mut s, id, &[("current_time", "{}", None)]);
    let next = request_id(&done(&mut s, id, 0, "noon")).unwrap_or_default();
    reply_text(&mut s, next, "It is noon.");
    s.apply(Msg::Key(KeyEvent::new(KeyCode::F(3), KeyModifiers::NONE)));
    assert!(matches!(s.overlays.last(), Some(Overlay::Inspector)));
    let steps = crate::app::inspector::steps(&s);
    let kinds: Vec<_> = steps.iter().map(|st| st.kind).collect();
    use crate::app::inspector::StepKind as K;
    assert_eq!(
        kinds,
        [
            K::Prompt,
            K::Request,
            K::Response,
            K::Frames,
            K::Reply,
            K::Tool,
            K::Request,
            K::Response,
            K::Frames,
            K::Reply
        ]
    );
    // The second request: select it and copy it as curl.
    for _ in 0..6 {
        key(&mut s, KeyCode::Down);
    }
    let fx = key(&mut s, KeyCode::Char('c'));
    let body = fx.iter().find_map(|e| match e {
        Effect::Tools(ToolEffect::CopyCurl { body, .. }) => Some(body.clone()),
        _ => None,
    });
    assert_eq!(body.as_ref().map(|b| b["messages"].as_array().map_or(0, Vec::len)), Some(3));
    let fx = key(&mut s, KeyCode::Char('x'));
    let export = fx.iter().find_map(|e| match e {
        Effect::Tools(ToolEffect::Export { json }) => Some(json.clone()),
        _ => None,
    });
    assert_eq!(export.map(|j| j["steps"].as_array().map_or(0, Vec::len)), Some(10));
    // Esc closes it.
    key(&mut s, KeyCode::Esc);
    assert!(s.overlays.is_empty());
}

#[test]
fn tool_results_are_not_selectable_cells() {
    let mut s = state();
    let id = send(&mut s, "time");
    reply_with_calls(&mut s, id, &[("current_time", "{}", None)]);
    let next = request_id(&done(&mut s, id, 0, "noon")).unwrap_or_default();
    reply_text(&mut s, next, "noon");
    for _ in 0..3 {
        s.select_step(-1);
        let sel = s.selected.and_then(|id| s.transcript.message(id)).map(crate::engine::Message::role);
        assert_ne!(sel, Some(Role::Tool));
    }
}

#[test]
fn each_call_runs_in_its_providers_sandbox_with_the_sessions_helper() {
    use crate::config::provider::{ProviderProfile, SandboxMode};
    use crate::tools::sandbox::Policy;
    let mut s = test_state();
    // A bare state has no helper: the policy names the mode, but nothing is wrapped.
    let bare = s.owner_sandbox(Owner::Chat);
    assert_eq!((bare.mode, bare.network, bare.active()), (SandboxMode::WorkspaceWrite, false, false));
    let profile =
        ProviderProfile { sandbox: Some(SandboxMode::ReadOnly), sandbox_network: Some(true), ..Default::default() };
    s.cfg.providers.insert(s.target.provider.clone(), profile);
    let mut r = Registry::builtins();
    r.set_sandbox(Policy::configured(None, None));
    s.tools.set = ToolSet(Arc::new(r));
    let p = s.owner_sandbox(Owner::Chat);
    assert_eq!((p.mode, p.network), (SandboxMode::ReadOnly, true));
    assert_eq!(p.helper, std::path::PathBuf::from("/proc/self/exe"));
    // The set handed to a run carries it; an unchanged policy shares the session's set.
    let set = s.tools.set.with_sandbox(p.clone());
    assert_eq!(set.0.workspace().sandbox(), &p);
    assert!(set.with_sandbox(p) == set);
}

#[test]
fn images_tools_return_count_toward_the_reply_s_image_limit() {
    use base64::Engine as _;
    let mut s = state();
    // The profile's own limits apply: two images in one reply.
    let limits = crate::api::limits::Limits { images_per_reply: 2, ..Default::default() };
    let profile = crate::config::ProviderProfile { limits: Some(limits), ..Default::default() };
    s.cfg.providers.insert("demo".into(), profile);
    let id = send(&mut s, "show me");
    reply_with_calls(&mut s, id, &[("current_time", "{}", None), ("current_time", "{}", None)]);
    let png = base64::engine::general_purpose::STANDARD
        .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
        .unwrap_or_default();
    let with_images = |n: usize| {
        let mut out = ToolOutput::ok("pictures");
        out.images = vec![crate::tools::ToolImage { media_type: "image/png".into(), bytes: png.clone() }; n];
        out
    };
    let done = |s: &mut State, index: usize, output: ToolOutput| {
        s.apply(Msg::Tools(ToolMsg::Done { owner: Owner::Chat, id, index, output, duration_ms: 7 }))
    };
    done(&mut s, 1, with_images(1));
    let fx = done(&mut s, 0, with_images(2));
    let kept = |i: usize| s.tool_call(id, i).map_or(0, |c| c.images.len());
    assert_eq!((kept(0), kept(1)), (1, 1), "two in all: the second call's first, then the first call's first");
    assert!(
        output(&s, id, 0)
            .contains("[image 2 (image/png): image dropped: this reply passed the limit images_per_reply = 2")
    );
    assert_eq!(output(&s, id, 1), "pictures");
    // What goes to the model says so too.
    let body = request_body(&fx).unwrap_or_default();
    assert!(body.to_string().contains("images_per_reply = 2"), "{body}");
}

/// The notices of the transcript, oldest first.
fn notices(s: &State) -> Vec<String> {
    s.transcript
        .cells
        .iter()
        .filter_map(|c| match c {
            crate::app::transcript::Cell::Notice(n) => Some(n.text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_list_change_is_listed_again_and_said_in_one_line_naming_the_server() {
    use crate::tools::mcp::live::{ListKind, Relisted};
    let mut s = state();
    let fx = s.apply(Msg::Tools(ToolMsg::ListChanged { server: "everything".into(), kind: ListKind::Tools }));
    assert!(
        matches!(&fx[..], [Effect::Tools(ToolEffect::Relist { server, kind: ListKind::Tools, .. })] if server == "everything"),
        "{fx:?}"
    );
    let result = Ok(Relisted { count: 7, tools: Some(Vec::new()) });
    let before = s.tools.set.clone();
    s.apply(Msg::Tools(ToolMsg::Relisted { server: "everything".into(), kind: ListKind::Tools, result }));
    assert!(s.tools.set != before, "a new registry is offered from the next request");
    let result = Err("the server \x1b[31mhung up\x1b[0m".to_owned());
    s.apply(Msg::Tools(ToolMsg::Relisted { server: "docs".into(), kind: ListKind::Prompts, result }));
    let n = notices(&s);
    assert_eq!(
        n[n.len() - 2..],
        [
            "MCP server `everything` changed its tools: 7 now, offered from the next request",
            "MCP server `docs` changed its prompts, but listing them again failed: the server hung up",
        ]
    );
}
