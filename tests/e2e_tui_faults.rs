//! End to end in tmux: the fault matrix as a user meets it in the TUI, on the chat API and the
//! Responses API, and hostile text in every channel. The real binary runs in its own tmux
//! server (own socket, own `PALAVER_HOME`, own working directory, no API key) against the
//! scripted server of `tests/scripted/` on 127.0.0.1, started as
//! `palaver ... 2>ERR; echo EXITED-$?` so its stderr can be read after Ctrl+Q.
//!
//! Each fault test checks what the screen says about the fault, then sends one more prompt to
//! a second scripted reply and waits for its answer (the app keeps working), then quits and
//! checks that stderr holds no panic. Skips (and says so) when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;
mod scripted;

use common::tmux::{Tmux, patience, tmux_available};
use scripted::{Reply, Server};
use std::path::Path;
use std::time::{Duration, Instant};

/// Starts `palaver ARGS` at 120×40 in `cwd` (a new scratch directory when `None`), with its
/// stderr captured for [`Tmux::quit_cleanly`].
fn start_in(args: &str, cwd: Option<tempfile::TempDir>) -> Tmux {
    let cwd = cwd.unwrap_or_else(|| tempfile::tempdir().unwrap());
    Tmux::launch(args)
        .keep_cwd(cwd)
        .capture_stderr()
        .poll_every(Duration::from_millis(50))
        .remove_socket_on_drop()
        .start()
}

fn start_tmux(args: &str) -> Tmux {
    start_in(args, None)
}

/// The text inside the composer box (the last box on screen), trimmed.
fn composer(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let Some(top) = lines.iter().rposition(|l| l.starts_with('┌')) else { return String::new() };
    lines[top + 1..]
        .iter()
        .take_while(|l| !l.starts_with('└'))
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Prints a screen when `FAULTS_DUMP` is set, to read what the user sees.
fn dump(what: &str, screen: &str) {
    if std::env::var_os("FAULTS_DUMP").is_some() {
        eprintln!("==== {what}\n{screen}");
    }
}

/// The status bar: the last non-empty row.
fn status(screen: &str) -> &str {
    screen.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("")
}

// ---- scripted bodies ----

fn chat_frame(delta: &serde_json::Value, finish: Option<&str>) -> String {
    let v = serde_json::json!({"id":"c","object":"chat.completion.chunk","model":"m",
        "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
    format!("data: {v}\n\n")
}

fn chat_text(text: &str) -> String {
    chat_frame(&serde_json::json!({ "content": text }), None)
}

fn chat_done() -> String {
    [chat_frame(&serde_json::json!({}), Some("stop")), "data: [DONE]\n\n".to_owned()].concat()
}

fn resp_text(text: &str) -> String {
    let v = serde_json::json!({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":text});
    format!("event: response.output_text.delta\ndata: {v}\n\n")
}

fn resp_done() -> String {
    let v = serde_json::json!({"type":"response.completed","response":{"id":"resp_1","status":"completed",
        "usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7}}});
    format!("event: response.completed\ndata: {v}\n\n")
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Api {
    Chat,
    Responses,
}

impl Api {
    fn name(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Responses => "responses",
        }
    }

    fn text(self, text: &str) -> String {
        match self {
            Self::Chat => chat_text(text),
            Self::Responses => resp_text(text),
        }
    }

    fn done(self) -> String {
        match self {
            Self::Chat => chat_done(),
            Self::Responses => resp_done(),
        }
    }

    /// A whole successful answer.
    fn ok(self, text: &str) -> Reply {
        Reply::sse(&[self.text(text), self.done()].concat())
    }

    /// A frame whose data is not JSON.
    fn malformed(self) -> String {
        match self {
            Self::Chat => "data: {not json at all\n\n".to_owned(),
            Self::Responses => "event: response.output_text.delta\ndata: {not json at all\n\n".to_owned(),
        }
    }
}

const SECOND: &str = "Second answer after the fault.";

/// After a fault: the draft (if it came back) is cleared, one more prompt goes out to the
/// second scripted reply and its answer arrives; then Ctrl+Q quits with no panic on stderr.
fn app_still_works(t: &Tmux) {
    let s = t.screen();
    if !composer(&s).contains("type a message") {
        t.keys(&["C-c"]);
        t.wait_for("the composer cleared", |s| composer(s).contains("type a message"));
    }
    t.send("second question");
    t.wait_for("the answer to the second prompt", |s| {
        let asked = s.find("second question");
        let answered = s.rfind(SECOND);
        asked.zip(answered).is_some_and(|(q, a)| a > q) && status(s).contains("✓ done")
    });
    t.quit_cleanly();
}

/// Starts the app against `server` and sends the first prompt.
fn start(server: &Server, api: Api, extra: &str) -> Tmux {
    let t = start_tmux(&format!("--base-url {} --api {} --model m {extra}", server.base_url, api.name()));
    t.wait_ready();
    t.send("first question");
    t
}

/// The failed prompt is back in the composer, ready to send again.
fn draft_is_back(t: &Tmux) {
    let s = t.wait_for("the draft back in the composer", |s| composer(s).contains("first question"));
    assert!(status(&s).contains("✗"), "the status bar shows the failure: {s}");
}

// ---- 429 with Retry-After, then success ----

fn rate_limited_then_answers(api: Api) {
    if !tmux_available() {
        return;
    }
    let server = Server::start(vec![
        Reply::json(
            429,
            r#"{"error":{"message":"Rate limit reached, slow down","type":"rate_limit","code":"rate_limit_exceeded"}}"#,
        )
        .header("Retry-After", "1"),
        api.ok("First answer after the retry."),
        api.ok(SECOND),
    ]);
    let t = start(&server, api, "");
    let s = t.wait_for("the retry notice", |s| s.contains("retry 1 in"));
    dump(&format!("{api:?} 429 retry"), &s);
    assert!(status(&s).contains("HTTP 429"), "the status bar names the status: {s}");
    assert!(status(&s).contains("slow down"), "and the provider's message: {s}");
    let started = Instant::now();
    let s = t.wait_for("the answer after the retry", |s| s.contains("First answer after the retry."));
    dump(&format!("{api:?} 429 answered"), &s);
    assert!(!s.contains("failed"), "{s}");
    t.wait_for("the reply settled", |s| status(s).contains("✓ done"));
    assert_eq!(server.requests().len(), 2, "one 429, one retry");
    assert!(started.elapsed() < patience());
    app_still_works(&t);
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn chat_429_retry_after_is_shown_then_answers() {
    rate_limited_then_answers(Api::Chat);
}

#[test]
fn responses_429_retry_after_is_shown_then_answers() {
    rate_limited_then_answers(Api::Responses);
}

// ---- 401: a clear message, no retry ----

fn unauthorized_is_clear_and_not_retried(api: Api) {
    if !tmux_available() {
        return;
    }
    let server = Server::start(vec![
        Reply::json(
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        ),
        api.ok(SECOND),
    ]);
    let t = start(&server, api, "");
    let s = t.wait_for("the 401 message", |s| s.contains("Incorrect API key provided") && s.contains("401"));
    dump(&format!("{api:?} 401"), &s);
    assert!(s.contains("m · failed"), "the reply is marked failed: {s}");
    draft_is_back(&t);
    // Long enough for a retry to have happened if there were one.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(server.requests().len(), 1, "a 401 must not be retried");
    app_still_works(&t);
}

#[test]
fn chat_401_is_clear_and_not_retried() {
    unauthorized_is_clear_and_not_retried(Api::Chat);
}

#[test]
fn responses_401_is_clear_and_not_retried() {
    unauthorized_is_clear_and_not_retried(Api::Responses);
}

// ---- disconnect mid-stream ----

fn disconnect_keeps_the_partial_text(api: Api) {
    if !tmux_available() {
        return;
    }
    let partial = [api.text("Half an answer, "), api.text("then the line went dead")].concat();
    let server = Server::start(vec![Reply::sse(&partial).then("", Duration::from_millis(300)).cut(), api.ok(SECOND)]);
    let t = start(&server, api, "");
    let s = t.wait_for("the interrupted reply", |s| s.contains("m · interrupted"));
    dump(&format!("{api:?} disconnect"), &s);
    assert!(s.contains("Half an answer, then the line went dead"), "the partial text is kept: {s}");
    assert!(s.contains("connection dropped mid-stream"), "the message names the fault: {s}");
    draft_is_back(&t);
    app_still_works(&t);
}

#[test]
fn chat_disconnect_mid_stream_keeps_the_partial_text() {
    disconnect_keeps_the_partial_text(Api::Chat);
}

#[test]
fn responses_disconnect_mid_stream_keeps_the_partial_text() {
    disconnect_keeps_the_partial_text(Api::Responses);
}

// ---- a malformed JSON frame ----

fn malformed_frame_marks_the_reply_damaged(api: Api) {
    if !tmux_available() {
        return;
    }
    let body =
        [api.text("Before the bad frame."), api.malformed(), api.text(" After the bad frame."), api.done()].concat();
    let server = Server::start(vec![Reply::sse(&body), api.ok(SECOND)]);
    let t = start(&server, api, "");
    let s = t.wait_for("the damaged reply", |s| s.contains("malformed"));
    dump(&format!("{api:?} malformed"), &s);
    assert!(s.contains("Before the bad frame. After the bad frame."), "the later text is kept: {s}");
    assert!(s.contains("m · failed"), "the reply is marked: {s}");
    draft_is_back(&t);
    app_still_works(&t);
}

#[test]
fn chat_malformed_frame_marks_the_reply_damaged() {
    malformed_frame_marks_the_reply_damaged(Api::Chat);
}

#[test]
fn responses_malformed_frame_marks_the_reply_damaged() {
    malformed_frame_marks_the_reply_damaged(Api::Responses);
}

// ---- a stall longer than the idle timeout ----

fn stall_names_the_idle_timeout(api: Api) {
    if !tmux_available() {
        return;
    }
    let first = api.text("Before the stall");
    let server = Server::start(vec![Reply::sse(&first).then("", Duration::from_secs(5)), api.ok(SECOND)]);
    let t = start(&server, api, "--idle-timeout 1");
    let s = t.wait_for("the idle timeout", |s| s.contains("idle timeout"));
    dump(&format!("{api:?} stall"), &s);
    assert!(s.contains("Before the stall"), "the partial text is kept: {s}");
    assert!(s.contains("m · stalled"), "the reply is marked with what ended it: {s}");
    draft_is_back(&t);
    app_still_works(&t);
}

#[test]
fn chat_stall_names_the_idle_timeout() {
    stall_names_the_idle_timeout(Api::Chat);
}

#[test]
fn responses_stall_names_the_idle_timeout() {
    stall_names_the_idle_timeout(Api::Responses);
}

// ---- connection refused ----

/// A port nothing listens on (bound, read, released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Serves one SSE body to every request on `listener`.
fn serve_on(listener: std::net::TcpListener, body: String) {
    use std::io::{BufRead, BufReader, Read, Write};
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut req = vec![0u8; len];
            let _ = reader.read_exact(&mut req);
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
        }
    });
}

fn refused_keeps_the_app_and_the_draft(api: Api) {
    if !tmux_available() {
        return;
    }
    let port = free_port();
    let t = start_tmux(&format!("--base-url http://127.0.0.1:{port}/v1 --api {} --model m", api.name()));
    t.wait_ready();
    t.send("first question");
    let s = t.wait_for("the connect error", |s| s.contains("could not connect"));
    dump(&format!("{api:?} refused"), &s);
    assert!(s.contains(&format!("127.0.0.1:{port}")), "the message names the address: {s}");
    assert!(s.contains("m · could not connect"), "the reply is marked with what ended it: {s}");
    draft_is_back(&t);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!t.screen().contains("EXITED-"), "the app keeps running");
    // The server comes up on that port; Enter sends the kept draft.
    let deadline = Instant::now() + patience();
    let listener = loop {
        match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => break l,
            Err(e) => {
                assert!(Instant::now() < deadline, "cannot bind port {port} again: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    };
    serve_on(listener, [api.text(SECOND), api.done()].concat());
    t.keys(&["Enter"]);
    let s = t.wait_for("the answer to the draft", |s| s.contains(SECOND) && status(s).contains("✓ done"));
    assert!(s.contains("first question"), "{s}");
    app_still_works(&t);
}

#[test]
fn chat_connection_refused_keeps_the_app_and_the_draft() {
    refused_keeps_the_app_and_the_draft(Api::Chat);
}

#[test]
fn responses_connection_refused_keeps_the_app_and_the_draft() {
    refused_keeps_the_app_and_the_draft(Api::Responses);
}

// ---- hostile text in every channel ----

/// One attack of `tests/hostile/`: its name and its raw text.
fn hostile_corpus() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    // The long line last, so the short attacks come first on screen.
    files.sort_by_key(|(name, _)| (name == "long-line", name.clone()));
    files
}

/// The longest run of ASCII digits in `line` (the long line of the corpus is numbers).
fn digit_run(line: &str) -> usize {
    line.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0)
}

/// Every attack between two plain words, one paragraph each.
fn hostile_document() -> String {
    hostile_corpus()
        .iter()
        .map(|(name, raw)| format!("before-{name} {raw} after-{name}"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Pane state an escape sequence could change; none of it may move.
const PANE_STATE: &str = "title=#{pane_title} alt=#{alternate_on} region=#{scroll_region_upper}-#{scroll_region_lower} \
     origin=#{origin_flag} insert=#{insert_flag} wrap=#{wrap_flag} window=#{window_name}";

#[test]
fn hostile_text_in_every_channel_never_reaches_the_terminal() {
    if !tmux_available() {
        return;
    }
    let doc = hostile_document();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("hostile.txt"), &doc).unwrap();
    // Reply 1: reasoning, text and a read_file call, each carrying the corpus (the call's
    // arguments carry it too, in a field the tool ignores). Reply 2, after the tool ran: the end.
    let call = serde_json::json!({"path": "hostile.txt", "note": doc}).to_string();
    let first = [
        chat_frame(&serde_json::json!({ "reasoning_content": doc }), None),
        chat_text(&doc),
        chat_frame(
            &serde_json::json!({"tool_calls":[{"index":0,"id":"call_h","type":"function",
                "function":{"name":"read_file","arguments":call}}]}),
            None,
        ),
        chat_frame(&serde_json::json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let last = [chat_text("All channels delivered: final-marker."), chat_done()].concat();
    let server = Server::start(vec![Reply::sse(&first), Reply::sse(&last)]);
    let t = start_in(&format!("--base-url {} --model hostile --tools auto", server.base_url), Some(cwd));
    // With `set-clipboard on`, an OSC 52 that got through would create a tmux buffer.
    t.tmux(&["set-option", "-g", "set-clipboard", "on"]);
    t.tmux(&["set-option", "-g", "allow-rename", "on"]);
    t.wait_ready();
    let before = t.display(PANE_STATE);
    let title = t.display("#{pane_title}");
    assert!(before.contains("alt=1"), "{before}");
    t.send("please read hostile.txt");
    let answered =
        t.wait_for("the answer after the tool", |s| s.contains("final-marker") && status(s).contains("✓ done"));
    assert_eq!(server.requests().len(), 2, "the tool ran and its output went back");
    // Open the reasoning and the tool card of the first reply, then read everything.
    t.keys(&["M-Up", "M-Up"]);
    t.keys(&["t"]);
    t.keys(&["Enter"]);
    t.keys(&["C-Home"]);
    let top = t.wait_for("the top of the transcript", |s| s.contains("please read hostile.txt"));
    assert!(top.contains("▾ reasoning"), "the reasoning is open: {top}");
    let mut screens = vec![answered, top];
    for _ in 0..400 {
        let previous = screens.last().cloned().unwrap_or_default();
        t.keys(&["PageDown"]);
        // Wait for the new page to be drawn (at the end the page does not change).
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut s = t.screen();
        while s == previous && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            s = t.screen();
        }
        let end = s.contains("final-marker");
        screens.push(s);
        if end {
            break;
        }
    }
    let all = screens.join("\n");
    dump("hostile screens", &all);
    assert!(all.contains("final-marker"), "paging never reached the end");
    let after = t.display(PANE_STATE);
    assert_eq!(before, after, "an escape sequence changed the pane");
    let buffers = t.tmux(&["list-buffers"]);
    assert!(buffers.stdout.is_empty(), "a clipboard write got through: {}", String::from_utf8_lossy(&buffers.stdout));
    for s in &screens {
        // Never cleared, never scrolled by a region: the frame stays whole on every screen.
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines.first().is_some_and(|l| l.starts_with("┌ palaver")), "the top border is gone:\n{s}");
        assert!(lines.iter().any(|l| l.starts_with("┌ message")), "the composer box is gone:\n{s}");
        assert!(status(s).contains("✓ done"), "the status bar is gone:\n{s}");
    }
    for (name, _) in hostile_corpus() {
        for word in [format!("before-{name}"), format!("after-{name}")] {
            // Once in the text, the reasoning and the tool output; the arguments add more.
            let seen = all.matches(word.as_str()).count();
            assert!(seen >= 3, "{word:?} seen {seen} times; {} screens", screens.len());
        }
        if name == "long-line" {
            let rows = all.lines().filter(|l| digit_run(l) >= 60).count();
            assert!(rows >= 100, "the long line is not shown whole ({rows} rows)");
        }
    }
    for word in ["click here", "forged line", "txet desrever", "c1 words"] {
        assert!(all.matches(word).count() >= 3, "{word:?} is not readable");
    }
    // Swallowed payloads show nowhere but in the pretty-printed JSON of the arguments (from
    // `"note"` to the output's `↳`), where they are inert escaped text (`\u001b]0;PWNED`).
    let mut in_arguments = false;
    for line in screens.iter().flat_map(|s| s.lines()) {
        if line.contains("\"note\": \"") {
            in_arguments = true;
        }
        if line.contains('↳') {
            in_arguments = false;
        }
        if !in_arguments {
            assert!(!line.contains("PWNED"), "a payload shows: {line}");
        }
    }
    t.quit_cleanly();
    assert_eq!(t.display("#{pane_title}"), title, "the title changed by the time palaver quit");
}
