//! Screen snapshots of the tool loop and the Responses API items: tool cards in every state,
//! the approval modal (function tool, shell command, patch, MCP approval), the flow inspector,
//! and a card for every hosted item fixture. States are built by feeding `Msg`s to
//! `State::apply` (the hosted fixtures go through the real SSE decoder and mapper); no network.
//! Regenerate with `INSTA_UPDATE=always cargo test --test ui_tools_snapshots`, then read them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::client::{Frame, WireEvent};
use palaver::api::event::StreamEvent;
use palaver::api::{Api, Mapper, sse};
use palaver::app::tools::{Owner, ToolMsg, ToolSet};
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::target::TurnSettings;
use palaver::tools::{Registry, ToolOutput};
use palaver::ui::{RenderCache, theme::Theme};
use std::sync::Arc;

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

struct Sim {
    s: State,
    now: u64,
}

impl Sim {
    fn new(api: Api, model: &str) -> Self {
        let target = TargetInfo::new("demo", model, api);
        let theme = Theme::load("dark", None, true).unwrap();
        let settings = TurnSettings { stream: true, ..TurnSettings::default() };
        let mut s = State::new(target, settings, Config::default(), theme, "dark");
        s.tools.set = ToolSet(Arc::new(Registry::builtins()));
        s.tools.flags.mode = palaver::engine::tool_loop::ToolMode::Auto;
        Self { s, now: 1000 }
    }

    fn key(&mut self, code: KeyCode, mods: KeyModifiers) {
        self.s.apply(Msg::Key(KeyEvent::new(code, mods)));
    }

    /// Two seconds pass: the approval modal's guard is over, earlier typing long ago.
    fn wait(&mut self) {
        self.s.apply(Msg::Tick { now_ms: self.now });
        self.now += 2000;
        self.s.apply(Msg::Tick { now_ms: self.now });
    }

    /// After the guard, the option of letter `c` and Enter.
    fn choose(&mut self, c: char) -> Vec<palaver::app::Effect> {
        self.wait();
        self.key(KeyCode::Char(c), KeyModifiers::NONE);
        self.s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)))
    }

    /// After the guard, `choice` reached with ↓ and confirmed with Enter (works where no
    /// option has a letter: a path outside the workspace).
    fn pick(&mut self, choice: palaver::app::approval::Choice) {
        self.wait();
        let at = self.s.approval_choices().iter().position(|&c| c == choice).unwrap();
        for _ in 0..=at {
            self.key(KeyCode::Down, KeyModifiers::NONE);
        }
        self.key(KeyCode::Enter, KeyModifiers::NONE);
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
        self.started()
    }

    /// The reply in flight, marked as started.
    fn started(&mut self) -> u64 {
        let id = self.s.live.as_ref().map(|l| l.id).unwrap();
        self.s.apply(Msg::RequestStarted { id, now_ms: self.now });
        self.s.apply(Msg::Wire {
            id,
            event: Box::new(WireEvent::Opened {
                status: 200,
                headers: vec![
                    ("content-type".into(), "text/event-stream".into()),
                    ("x-request-id".into(), "req_demo_1".into()),
                ],
                at_ms: 12,
            }),
            now_ms: self.now,
        });
        id
    }

    fn chunk(&mut self, id: u64, frames: Vec<Frame>, events: Vec<StreamEvent>) {
        self.now += 50;
        let at_ms = self.now - 1000;
        self.s.apply(Msg::Wire {
            id,
            event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames, events, at_ms }),
            now_ms: self.now,
        });
    }

    fn close(&mut self, id: u64) {
        self.now += 10;
        self.s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: self.now - 1000 }), now_ms: self.now });
    }

    /// A tool-call fragment as the chat mapper would make it.
    fn call(&mut self, id: u64, slot: u32, name: &str, args: &str) {
        let frame = Frame {
            at_ms: self.now - 950,
            event: String::new(),
            data: format!("{{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{slot}}}]}}}}]}}"),
        };
        let ev = StreamEvent::ToolCall(Box::new(palaver::api::event::CallFragment {
            choice: 0,
            slot,
            id: Some(format!("call_{slot}")),
            name: Some(name.into()),
            arguments: args.into(),
            extra: None,
            kind: None,
            index: None,
        }));
        self.chunk(id, vec![frame], vec![ev]);
    }

    /// Ends a reply whose calls were streamed.
    fn end_calls(&mut self, id: u64) {
        let evs = vec![StreamEvent::Finish { choice: 0, reason: "tool_calls".into() }, StreamEvent::End];
        self.chunk(id, vec![], evs);
        self.close(id);
    }

    fn answer(&mut self, id: u64, text: &str) {
        let evs = vec![
            StreamEvent::Text { choice: 0, delta: text.into() },
            StreamEvent::Finish { choice: 0, reason: "stop".into() },
            StreamEvent::End,
        ];
        self.chunk(id, vec![], evs);
        self.close(id);
    }

    fn done(&mut self, id: u64, index: usize, output: ToolOutput, ms: u64) {
        self.s.apply(Msg::Tools(ToolMsg::Done { owner: Owner::Chat, id, index, output, duration_ms: ms }));
    }

    /// Feeds a recorded Responses body through the decoder and mapper into reply `id`.
    fn fixture(&mut self, id: u64, name: &str) {
        let path = format!("{}/tests/fixtures/sse/{name}.sse", env!("CARGO_MANIFEST_DIR"));
        let body = std::fs::read(path).unwrap();
        let mut mapper = Mapper::new(Api::Responses);
        let mut events = Vec::new();
        let mut frames = Vec::new();
        for (i, ev) in sse::decode_all(&body).into_iter().enumerate() {
            mapper.map(&ev.event, ev.data.as_bytes(), &mut events);
            frames.push(Frame { at_ms: 40 + 25 * u64::try_from(i).unwrap(), event: ev.event, data: ev.data });
        }
        self.chunk(id, frames, events);
        self.close(id);
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

    /// Snapshots from the top of the transcript (long cards start there).
    fn snap_top(&mut self, name: &str) {
        self.key(KeyCode::Home, KeyModifiers::CONTROL);
        self.snap_all(name);
    }
}

const LISTING: &str = "Cargo.toml\nREADME.md\nbenches/\nsrc/\ntests/\nthemes/\nrustfmt.toml\nclippy.toml";

#[test]
fn card_arguments_streaming() {
    let mut sim = Sim::new(Api::Chat, "demo-tools");
    let id = sim.send("what is in src?");
    sim.call(id, 0, "list_directory", "{\"path\": \"src\", \"recur");
    sim.snap_all("card_streaming");
}

#[test]
fn cards_running_with_elapsed_time() {
    let mut sim = Sim::new(Api::Chat, "demo-tools");
    let id = sim.send("what is here?");
    sim.call(id, 0, "list_directory", r#"{"path":"."}"#);
    sim.call(id, 1, "search_files", r#"{"path":"src","content":"fn main","max_results":20}"#);
    sim.end_calls(id);
    sim.done(id, 0, ToolOutput::ok(LISTING), 3);
    sim.s.apply(Msg::Tick { now_ms: sim.now + 2340 });
    sim.snap_all("cards_running");
}

#[test]
fn card_running_with_mcp_progress() {
    use palaver::tools::mcp::live::McpProgress;
    let mut sim = Sim::new(Api::Chat, "demo-tools");
    let id = sim.send("index the repository");
    sim.call(id, 0, "search_files", r#"{"path":"src","content":"fn main"}"#);
    sim.end_calls(id);
    // A server's message is sanitised and kept to one line.
    let message = Some("indexing \x1b[31msrc/\x1b[0m\nfiles".to_owned());
    let progress = McpProgress { call: String::new(), progress: 3.0, total: Some(5.0), message };
    sim.s.apply(Msg::Tools(ToolMsg::Progress { owner: Owner::Chat, id, index: 0, progress }));
    sim.s.apply(Msg::Tick { now_ms: sim.now + 1200 });
    sim.snap_all("card_running_progress");
    // The next report moves it.
    let progress = McpProgress { call: String::new(), progress: 5.0, total: Some(5.0), message: None };
    sim.s.apply(Msg::Tools(ToolMsg::Progress { owner: Owner::Chat, id, index: 0, progress }));
    assert!(sim.render(80, 24).contains("▰▰▰▰▰▰▰▰ 5/5"), "{}", sim.render(80, 24));
    // Once it is done, the report is gone with the running state.
    sim.done(id, 0, ToolOutput::ok("3 matches"), 1500);
    assert!(!sim.render(80, 24).contains("5/5"));
}

/// A finished loop: one call done with a long output, one failed; the model answered.
fn finished_loop() -> (Sim, u64) {
    let mut sim = Sim::new(Api::Chat, "demo-tools");
    let id = sim.send("what is here?");
    sim.call(id, 0, "list_directory", r#"{"path":"."}"#);
    sim.call(id, 1, "read_file", r#"{"path":"Cargo.lock"}"#);
    sim.end_calls(id);
    sim.done(id, 0, ToolOutput::ok(LISTING), 3);
    sim.done(id, 1, ToolOutput::error("cannot open Cargo.lock: No such file or directory (os error 2)"), 1);
    let next = sim.started();
    sim.answer(next, "A Rust crate: `Cargo.toml`, `src/`, `tests/` and more. There is no `Cargo.lock`.");
    (sim, id)
}

#[test]
fn cards_done_folded_and_failed() {
    let (mut sim, _) = finished_loop();
    sim.snap_all("cards_done_folded");
}

#[test]
fn cards_done_expanded() {
    let (mut sim, id) = finished_loop();
    sim.key(KeyCode::Up, KeyModifiers::ALT);
    sim.key(KeyCode::Up, KeyModifiers::ALT);
    assert_eq!(sim.s.selected, Some(id));
    sim.key(KeyCode::Enter, KeyModifiers::NONE);
    assert!(sim.s.tools.open.contains(&id));
    sim.snap_top("cards_done_expanded");
}

#[test]
fn cards_denied_and_cancelled() {
    let mut sim = Sim::new(Api::Chat, "m");
    let id = sim.send("tidy up");
    sim.call(id, 0, "run_command", r#"{"command":"rm -rf build"}"#);
    sim.call(id, 1, "write_file", r#"{"path":"notes.txt","content":"done"}"#);
    sim.end_calls(id);
    sim.choose('r');
    sim.typed("not without a backup");
    sim.key(KeyCode::Enter, KeyModifiers::NONE);
    // The second call waits in the modal; Esc cancels the whole turn.
    sim.key(KeyCode::Esc, KeyModifiers::NONE);
    sim.snap_all("cards_denied_cancelled");
}

#[test]
fn approval_modal_function_tool_with_diff() {
    let mut sim = Sim::new(Api::Chat, "m");
    let id = sim.send("fix the greeting");
    sim.call(id, 0, "write_file", r#"{"path":"greet.txt","content":"Hello, world!\nSee you soon.\nBye.\n"}"#);
    sim.end_calls(id);
    let before = "Hello world\nSee you soon.\nBye.\n".to_owned();
    sim.s.apply(Msg::Tools(ToolMsg::FileRead { owner: Owner::Chat, id, index: 0, content: Ok(Some(before)) }));
    sim.snap_all("approval_write_file");
}

/// The modal as it opens: nothing highlighted, and for its first half second a note that keys
/// go to the message; a sentence typed then is in the composer, and nothing was decided.
#[test]
fn approval_modal_guard_with_a_sentence_typed_ahead() {
    let mut sim = Sim::new(Api::Chat, "m");
    let id = sim.send("fix the greeting");
    sim.call(id, 0, "write_file", r#"{"path":"greet.txt","content":"Hello, world!\n"}"#);
    sim.end_calls(id);
    sim.s.apply(Msg::Tools(ToolMsg::FileRead { owner: Owner::Chat, id, index: 0, content: Ok(None) }));
    sim.typed("yes and also tell me more about everything");
    sim.key(KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(sim.s.composer.text(), "yes and also tell me more about everything");
    assert!(sim.s.tools.approval.is_some());
    sim.snap_all("approval_guard_typed_ahead");
}

/// After the guard: `n` highlights "deny" and waits for Enter (any other key makes it text).
#[test]
fn approval_modal_a_letter_waiting_for_enter() {
    let mut sim = Sim::new(Api::Chat, "m");
    let id = sim.send("run it");
    sim.call(id, 0, "run_command", r#"{"command":"cargo test"}"#);
    sim.end_calls(id);
    sim.wait();
    sim.key(KeyCode::Char('n'), KeyModifiers::NONE);
    sim.snap_all("approval_letter_pending");
}

/// --tools ask on a read-only tool: the grant for the session is listed without a letter,
/// reached with the arrows.
#[test]
fn approval_modal_session_grant_highlighted() {
    let mut sim = Sim::new(Api::Chat, "demo-tools");
    sim.s.tools.flags.mode = palaver::engine::tool_loop::ToolMode::Ask;
    let id = sim.send("what is here?");
    sim.call(id, 0, "list_directory", r#"{"path":"."}"#);
    sim.end_calls(id);
    sim.wait();
    sim.key(KeyCode::Down, KeyModifiers::NONE);
    sim.key(KeyCode::Down, KeyModifiers::NONE);
    sim.snap_all("approval_session_highlighted");
}

/// A read-only tool asked to read outside the workspace: the modal names the resolved path and
/// why; "approve for the session" is not offered; approving grants exactly that path.
#[test]
fn approval_modal_path_outside_the_workspace() {
    let mut sim = Sim::new(Api::Chat, "m");
    let mut registry = Registry::builtins();
    registry.set_workspace(palaver::tools::workspace::Workspace::new(std::path::Path::new("/usr"), vec![]).unwrap());
    sim.s.tools.set = ToolSet(Arc::new(registry));
    let id = sim.send("read the key");
    sim.call(id, 0, "read_file", r#"{"path":"../etc/palaver-snapshot/key.txt"}"#);
    sim.end_calls(id);
    assert!(!sim.s.session_approval_offered(Owner::Chat, id, 0));
    // No option has a letter here: ↓ then Enter approves it.
    sim.wait();
    sim.key(KeyCode::Down, KeyModifiers::NONE);
    sim.snap_all("approval_outside_workspace");
    let fx = sim.s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    let approved = fx.iter().find_map(|e| match e {
        palaver::app::Effect::Tools(palaver::app::tools::ToolEffect::Run { approved, .. }) => Some(approved.clone()),
        _ => None,
    });
    assert_eq!(approved, Some(vec![std::path::PathBuf::from("/etc/palaver-snapshot/key.txt")]));
}

/// A read ran and came back holding a private key: the modal says it would send that file's
/// content to the provider, naming the file and the kind of secret.
#[test]
fn approval_modal_output_holding_a_secret() {
    let mut sim = Sim::new(Api::Chat, "m");
    let mut registry = Registry::builtins();
    registry.set_workspace(palaver::tools::workspace::Workspace::new(std::path::Path::new("/usr"), vec![]).unwrap());
    sim.s.tools.set = ToolSet(Arc::new(registry));
    let id = sim.send("read my notes");
    let args = r#"{"path":"share/notes.txt"}"#;
    sim.call(id, 0, "read_file", args);
    sim.end_calls(id);
    let ws = sim.s.tools.set.0.workspace().clone();
    let key = format!("-----BEGIN {}-----\nMIIEsecret\n", "OPENSSH PRIVATE KEY");
    sim.done(id, 0, palaver::tools::secret_hold::hold(&ws, "read_file", args, ToolOutput::ok(key)), 3);
    sim.wait();
    let screen = sim.render(100, 30);
    assert!(screen.contains("sends to the provider /usr/share/notes.txt"), "{screen}");
    assert!(screen.contains("holds a private key (PEM block)") && !screen.contains("MIIEsecret"), "{screen}");
    sim.snap_all("approval_output_holding_a_secret");
}

#[test]
fn approval_modal_run_command_with_reason_typed() {
    let mut sim = Sim::new(Api::Chat, "m");
    let id = sim.send("clean");
    sim.call(id, 0, "run_command", r#"{"command":"cargo clean && rm -rf ~/.cache/palaver"}"#);
    sim.call(id, 1, "write_file", r#"{"path":"a","content":"b"}"#);
    sim.end_calls(id);
    sim.choose('r');
    sim.typed("keep the cache");
    sim.snap_all("approval_reason");
}

#[test]
fn approval_modal_editing_arguments() {
    let mut sim = Sim::new(Api::Chat, "m");
    let id = sim.send("write");
    sim.call(id, 0, "write_file", r#"{"path":"notes.txt","content":"hi"}"#);
    sim.end_calls(id);
    sim.s.apply(Msg::Tools(ToolMsg::FileRead { owner: Owner::Chat, id, index: 0, content: Ok(None) }));
    sim.choose('e');
    sim.key(KeyCode::End, KeyModifiers::NONE);
    sim.key(KeyCode::Char('x'), KeyModifiers::NONE);
    sim.key(KeyCode::Char('s'), KeyModifiers::CONTROL);
    sim.snap_all("approval_edit");
}

#[test]
fn approval_modal_shell_call() {
    let mut sim = Sim::new(Api::Responses, "demo-hosted");
    let id = sim.send("what changed?");
    sim.fixture(id, "responses_hosted_shell_call");
    sim.snap_all("approval_shell");
}

#[test]
fn approval_modal_apply_patch() {
    let mut sim = Sim::new(Api::Responses, "demo-hosted");
    let id = sim.send("fix greet");
    sim.fixture(id, "responses_hosted_apply_patch_call");
    sim.snap_all("approval_apply_patch");
}

#[test]
fn approval_modal_mcp() {
    let mut sim = Sim::new(Api::Responses, "demo-hosted");
    let id = sim.send("ask the wiki");
    sim.fixture(id, "responses_hosted_mcp_approval");
    sim.snap_all("approval_mcp");
}

#[test]
fn user_side_item_cards_after_the_decisions() {
    let mut sim = Sim::new(Api::Responses, "demo-hosted");
    let id = sim.send("what changed?");
    sim.fixture(id, "responses_hosted_shell_call");
    sim.pick(palaver::app::approval::Choice::Deny);
    sim.pick(palaver::app::approval::Choice::Deny);
    let next = sim.started();
    sim.fixture(next, "responses_hosted_custom_tool_call");
    sim.s.apply(Msg::Tick { now_ms: sim.now + 1500 });
    sim.snap_top("cards_user_side_items");
}

#[test]
fn inspector_of_a_tool_loop() {
    let (mut sim, _) = finished_loop();
    sim.key(KeyCode::F(3), KeyModifiers::NONE);
    sim.snap_all("inspector_prompt");
    for _ in 0..3 {
        sim.key(KeyCode::Down, KeyModifiers::NONE);
    }
    sim.snap_all("inspector_frames");
    for _ in 0..3 {
        sim.key(KeyCode::Down, KeyModifiers::NONE);
    }
    sim.snap_all("inspector_tool");
    sim.key(KeyCode::Down, KeyModifiers::NONE);
    sim.snap_all("inspector_next_request");
}

/// Hosted items the provider ran: one snapshot per fixture.
fn hosted(fixture: &str, prompt: &str) -> Sim {
    let mut sim = Sim::new(Api::Responses, "demo-hosted");
    let id = sim.send(prompt);
    sim.fixture(id, fixture);
    sim
}

#[test]
fn item_card_web_search_with_references() {
    hosted("responses_hosted_web_search", "weather in Lisbon?").snap_top("item_web_search");
}

#[test]
fn item_card_file_search() {
    hosted("responses_hosted_file_search", "refund policy?").snap_top("item_file_search");
}

#[test]
fn item_card_code_interpreter() {
    hosted("responses_hosted_code_interpreter", "plot a sine").snap_top("item_code_interpreter");
}

#[test]
fn item_card_image_generation_saved() {
    let mut sim = hosted("responses_hosted_image_generation", "a cat");
    let id = sim.s.transcript.cells.last().map(palaver::app::transcript::Cell::id).unwrap();
    let saved = vec![(0, "/home/me/.local/share/palaver/images/ig_68c42d31.png".to_owned())];
    sim.s.apply(Msg::Tools(ToolMsg::ImagesSaved { owner: Owner::Chat, id, saved, notices: vec![] }));
    sim.snap_top("item_image_generation");
}

#[test]
fn item_card_mcp_call() {
    hosted("responses_hosted_mcp_call", "MCP transports?").snap_top("item_mcp_call");
}

#[test]
fn item_card_computer_call() {
    hosted("responses_hosted_computer_call", "submit the form").snap_top("item_computer_call");
}

#[test]
fn item_card_compaction_and_reasoning() {
    let mut sim = hosted("responses_hosted_compaction", "go on");
    let id = sim.send("and?");
    sim.fixture(id, "responses_hosted_reasoning_encrypted");
    sim.snap_top("item_compaction_reasoning");
}

#[test]
fn item_card_unknown_type() {
    hosted("responses_hosted_unknown_item", "revenue?").snap_top("item_unknown");
}

#[test]
fn item_card_image_generation_dropped_at_the_reply_limit() {
    use palaver::api::limits::{Limits, ReplyBudget};
    let mut sim = Sim::new(Api::Responses, "demo-hosted");
    let id = sim.send("a cat");
    let path = format!("{}/tests/fixtures/sse/responses_hosted_image_generation.sse", env!("CARGO_MANIFEST_DIR"));
    let mut mapper = Mapper::new(Api::Responses);
    let mut events = Vec::new();
    for ev in sse::decode_all(&std::fs::read(path).unwrap()) {
        mapper.map(&ev.event, ev.data.as_bytes(), &mut events);
    }
    // The client's budget, with no room for images: the image is dropped, the reply goes on.
    let mut budget = ReplyBudget::new(Limits { images_per_reply: 0, ..Limits::default() });
    assert_eq!(budget.admit(&mut events, 0), None);
    sim.chunk(id, Vec::new(), events);
    sim.close(id);
    let m = sim.s.transcript.message(id).unwrap();
    assert_eq!(m.items[0]["result"], "", "no image kept");
    assert!(m.item_notes[&0]["dropped"].as_str().unwrap().contains("images_per_reply = 0"));
    sim.snap_top("item_image_generation_dropped");
}

#[test]
fn elicitation_form_modal() {
    use palaver::tools::mcp::elicit::{Form, Reply, fields};
    let mut sim = Sim::new(Api::Chat, "demo-tools");
    sim.s.apply(Msg::Tick { now_ms: sim.now });
    // server-everything's form, cut down; the server's words are sanitised.
    let schema = serde_json::json!({"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "title": "Full name", "description": "Your full, legal \u{1b}[31mname\u{1b}[0m"},
        "check": {"type": "boolean", "title": "Agree to the terms"},
        "color": {"type": "string", "title": "Colour", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
        "age": {"type": "integer", "title": "Age"}
    }});
    let form = Form { message: "Please provide inputs for the following fields:".into(), fields: fields(&schema) };
    let ask = |server: &str, form| ToolMsg::Elicit { server: server.into(), form, reply: Reply::default() };
    sim.s.apply(Msg::Tools(ask("everything", form)));
    sim.now += 2000;
    sim.s.apply(Msg::Tick { now_ms: sim.now });
    sim.typed("42");
    sim.key(KeyCode::Tab, KeyModifiers::NONE);
    sim.key(KeyCode::Char(' '), KeyModifiers::NONE);
    sim.key(KeyCode::Tab, KeyModifiers::NONE);
    sim.key(KeyCode::Right, KeyModifiers::NONE);
    sim.key(KeyCode::Tab, KeyModifiers::NONE);
    sim.typed("Ada");
    sim.snap_all("elicitation_form");
    // Accept with a required field emptied says why; a second form waits behind.
    for _ in 0..3 {
        sim.key(KeyCode::Backspace, KeyModifiers::NONE);
    }
    sim.key(KeyCode::Tab, KeyModifiers::NONE);
    sim.key(KeyCode::Enter, KeyModifiers::NONE);
    sim.s.apply(Msg::Tools(ask("docs", Form { message: "Which page?".into(), fields: Vec::new() })));
    sim.snap_all("elicitation_form_required");
}

#[test]
fn elicitation_form_taller_than_the_screen_keeps_the_focus_and_the_buttons_in_view() {
    use palaver::tools::mcp::elicit::{Form, Reply, fields};
    let mut sim = Sim::new(Api::Chat, "demo-tools");
    sim.s.apply(Msg::Tick { now_ms: sim.now });
    let props: serde_json::Map<String, serde_json::Value> = (10..30)
        .map(|i| (format!("f{i}"), serde_json::json!({"type": "string", "title": format!("Field {i}")})))
        .collect();
    let form = Form { message: "Twenty questions.".into(), fields: fields(&serde_json::json!({"properties": props})) };
    sim.s.apply(Msg::Tools(ToolMsg::Elicit { server: "quiz".into(), form, reply: Reply::default() }));
    sim.now += 2000;
    sim.s.apply(Msg::Tick { now_ms: sim.now });
    for _ in 0..15 {
        sim.key(KeyCode::Tab, KeyModifiers::NONE);
    }
    sim.typed("fifteen");
    let screen = sim.render(80, 24);
    assert!(screen.contains("▸ Field 25  fifteen▌"), "{screen}");
    assert!(screen.contains("[ Accept ]"), "{screen}");
    insta::assert_snapshot!("elicitation_form_scrolled_80x24", screen);
}

#[test]
fn sampling_modal_names_the_server_what_it_asks_and_what_it_would_run_on() {
    use palaver::tools::mcp::sample::{SampleReply, SampleRequest, SampleRole};
    let mut sim = Sim::new(Api::Chat, "demo-tools");
    sim.s.apply(Msg::Tick { now_ms: sim.now });
    // server-everything's sampling tool, with a hostile escape in its words (sanitised).
    let request = SampleRequest {
        server: "every\u{1b}[31mthing".into(),
        messages: vec![
            (SampleRole::User, "Resource sampleLLM context: \u{1b}[2Jwhat is 2+2?".into()),
            (SampleRole::Assistant, "Let me think.\n[an image part, not sent]".into()),
        ],
        system: Some("You are a helpful test server.".into()),
        max_tokens: 100,
        temperature: None,
        hints: vec!["claude-3-sonnet".into(), "gpt-4o".into()],
    };
    sim.s.apply(Msg::Tools(ToolMsg::Sample { request, reply: SampleReply::detached() }));
    sim.now += 2000;
    sim.s.apply(Msg::Tick { now_ms: sim.now });
    sim.key(KeyCode::Tab, KeyModifiers::NONE);
    sim.snap_all("sampling_modal");
}

/// The policy the call's `Run` effect carries, from the effects of a decision.
fn run_policy(fx: &[palaver::app::Effect]) -> Option<palaver::tools::sandbox::Policy> {
    fx.iter().find_map(|e| match e {
        palaver::app::Effect::Tools(palaver::app::tools::ToolEffect::Run { set, .. }) => {
            Some(set.0.workspace().sandbox().clone())
        }
        _ => None,
    })
}

/// On a 50×15 terminal the command comes first: the tool's description, after it, is what
/// scrolls out of sight.
#[test]
fn approval_modal_at_50x15_shows_the_command_before_the_description() {
    let mut sim = Sim::new(Api::Chat, "m");
    let id = sim.send("clean");
    sim.call(id, 0, "run_command", r#"{"command":"cargo clean --release"}"#);
    sim.end_calls(id);
    sim.wait();
    let screen = sim.render(50, 15);
    assert!(screen.contains("$ cargo clean --release"), "{screen}");
    insta::assert_snapshot!("approval_run_command_50x15", screen);
    // A tool with arguments (and a long description): the arguments come before it too.
    let mut sim = Sim::new(Api::Chat, "m");
    sim.s.tools.flags.mode = palaver::engine::tool_loop::ToolMode::Ask;
    let id = sim.send("find main");
    sim.call(id, 0, "search_files", r#"{"path":"src","content":"fn main"}"#);
    sim.end_calls(id);
    sim.wait();
    sim.key(KeyCode::Down, KeyModifiers::NONE);
    let screen = sim.render(50, 15);
    assert!(screen.contains("\"content\": \"fn main\""), "{screen}");
    insta::assert_snapshot!("approval_search_files_50x15", screen);
}

/// A command the sandbox would hold in: a deliberate second choice runs that one command
/// outside it, reached only with the arrows (no letter, and typing never reaches it), and
/// saying what opens.
#[test]
fn approval_modal_running_one_command_outside_the_sandbox() {
    use palaver::app::approval::Choice;
    let mut sim = Sim::new(Api::Chat, "m");
    let id = sim.send("fetch it");
    sim.call(id, 0, "run_command", r#"{"command":"curl -sO https://example.com/data.csv"}"#);
    sim.call(id, 1, "run_command", r#"{"command":"curl -sO https://example.com/more.csv"}"#);
    sim.end_calls(id);
    assert!(sim.s.approval_choices().contains(&Choice::Outside));
    assert_eq!(Choice::Outside.letter(), None);
    sim.wait();
    let at = sim.s.approval_choices().iter().position(|&c| c == Choice::Outside).unwrap();
    for _ in 0..=at {
        sim.key(KeyCode::Down, KeyModifiers::NONE);
    }
    sim.snap_all("approval_outside_the_sandbox");
    let fx = sim.s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    assert_eq!(run_policy(&fx), Some(palaver::tools::sandbox::Policy::default()), "{fx:?}");
    // The next command runs in the sandbox again: the choice was for that one call.
    let fx = sim.choose('y');
    let policy = run_policy(&fx).unwrap();
    assert_eq!(policy.mode, palaver::config::provider::SandboxMode::WorkspaceWrite);
    assert!(!policy.network);
}

/// A file tool starts no command: nothing to run outside of.
#[test]
fn no_outside_choice_for_a_call_that_starts_no_command() {
    let mut sim = Sim::new(Api::Chat, "m");
    let id = sim.send("write");
    sim.call(id, 0, "write_file", r#"{"path":"a","content":"b"}"#);
    sim.end_calls(id);
    assert!(!sim.s.approval_choices().contains(&palaver::app::approval::Choice::Outside));
}

/// A command that exited 0 after the sandbox refused a write and a connection: the card says
/// so, not just "done".
#[test]
fn card_of_a_command_whose_write_the_sandbox_refused() {
    use palaver::sys::spawn::refusal::Refusal;
    let mut sim = Sim::new(Api::Chat, "m");
    let id = sim.send("save it");
    sim.call(id, 0, "run_command", r#"{"command":"echo x > ~/notes.txt; curl -s http://127.0.0.1:9/; echo ok"}"#);
    sim.call(id, 1, "read_file", r#"{"path":"quoted.md"}"#);
    sim.end_calls(id);
    sim.choose('y');
    // A file that quotes a label is no refusal: only a command palaver sandboxed is labelled.
    sim.done(id, 1, ToolOutput::ok(Refusal::Write.marker()), 1);
    let output = format!(
        "exit status: 0\nstdout:\nok\n\nstderr:\nsh: 1: cannot create /home/u/notes.txt: Permission denied\n\n{}\n{}\n\
         [palaver ran this command in the workspace-write sandbox: …]",
        Refusal::Network.marker(),
        Refusal::Write.marker()
    );
    sim.done(id, 0, ToolOutput::ok(output), 12);
    let screen = sim.render(120, 40);
    assert!(screen.contains("✓ done · blocked by the sandbox (network closed) · write refused"), "{screen}");
    let read = screen.lines().find(|l| l.contains("⚙ read_file")).unwrap();
    assert!(!read.contains("refused"), "{screen}");
    insta::assert_snapshot!("card_refused_write_120x40", screen);
}
