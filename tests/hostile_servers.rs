//! Issue 13: hostile servers and bad days, end to end against servers scripted on 127.0.0.1.
//! Each case states what palaver must do — the exit status, the message, what is kept — and
//! runs in well under two seconds (limits are set low through the profile, so an endless
//! server is cut early). Peak memory is measured by `benches/hostile/rss.py`, not here.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const KEY: &str = "sk-hostile-SECRET-0123456789";

/// A request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    line: String,
    headers: String,
    body: String,
}

/// A server whose every connection is handled by `handler` (which writes raw HTTP).
struct Hostile {
    base_url: String,
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Hostile {
    fn start(handler: impl Fn(&Seen, &mut TcpStream) + Send + Sync + 'static) -> Self {
        Self::start_on("127.0.0.1", handler)
    }

    /// A server whose handler also answers model lists and window lookups (`palaver models`).
    fn start_listing(handler: impl Fn(&Seen, &mut TcpStream) + Send + Sync + 'static) -> Self {
        Self::serve("127.0.0.1", true, handler)
    }

    fn start_on(ip: &str, handler: impl Fn(&Seen, &mut TcpStream) + Send + Sync + 'static) -> Self {
        Self::serve(ip, false, handler)
    }

    /// Without `listing`, the window lookup palaver makes before a request (`GET /models`,
    /// `/props`, `POST /api/show`) gets a 404 and is not recorded: the handler sees the chat.
    fn serve(ip: &str, listing: bool, handler: impl Fn(&Seen, &mut TcpStream) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (seen2, handler) = (seen.clone(), Arc::new(handler));
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let (seen, handler) = (seen2.clone(), handler.clone());
                thread::spawn(move || {
                    let Some(req) = read_request(&mut stream) else { return };
                    if !listing && scripted::is_lookup(&req.line) {
                        return json_reply(&mut stream, "404 Not Found", &json!({"error": "not scripted"}), &[]);
                    }
                    seen.lock().unwrap().push(req.clone());
                    handler(&req, &mut stream);
                });
            }
        });
        Self { base_url: format!("http://{ip}:{port}/v1"), port, seen }
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let (mut headers, mut len) = (String::new(), 0usize);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        headers.push_str(&h);
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Seen { line, headers, body: String::from_utf8_lossy(&body).into_owned() })
}

fn head(s: &mut TcpStream, status: &str, headers: &[(&str, &str)]) {
    let mut h = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (k, v) in headers {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    let _ = s.write_all(format!("{h}\r\n").as_bytes());
}

fn sse_head(s: &mut TcpStream) {
    head(s, "200 OK", &[("Content-Type", "text/event-stream")]);
}

fn json_reply(s: &mut TcpStream, status: &str, body: &Value, headers: &[(&str, &str)]) {
    let body = body.to_string();
    let len = body.len().to_string();
    let mut all = vec![("Content-Type", "application/json"), ("Content-Length", len.as_str())];
    all.extend_from_slice(headers);
    head(s, status, &all);
    let _ = s.write_all(body.as_bytes());
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    let c = json!({"choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
    format!("data: {c}\n\n")
}

fn answer(s: &mut TcpStream, text: &str) {
    sse_head(s);
    let body = chunk(&json!({"content": text}), Some("stop")) + "data: [DONE]\n\n";
    let _ = s.write_all(body.as_bytes());
}

/// Writes `piece` until the client goes away (an endless server).
fn forever(s: &mut TcpStream, piece: &[u8]) {
    while s.write_all(piece).is_ok() {}
}

fn calls(n: usize, name: &str, args: &Value) -> String {
    let mut out = String::new();
    for i in 0..n {
        let call = json!({"index": i, "id": format!("call_{i}"), "type": "function",
            "function": {"name": name, "arguments": args.to_string()}});
        out += &chunk(&json!({"tool_calls": [call]}), None);
    }
    out + &chunk(&json!({}), Some("tool_calls")) + "data: [DONE]\n\n"
}

fn has_tool_result(req: &Seen) -> bool {
    req.body.contains("\"role\":\"tool\"")
}

struct Dirs {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Self {
        Self { home: tempfile::tempdir().unwrap(), work: tempfile::tempdir().unwrap() }
    }

    /// A profile `h` for `server` with extra TOML lines (limits, auth, headers…).
    fn profile(&self, server: &Hostile, extra: &str) {
        let text = format!("default_provider = \"h\"\n[providers.h]\nbase_url = \"{}\"\n{extra}\n", server.base_url);
        std::fs::write(self.home.path().join("config.toml"), text).unwrap();
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_palaver"));
        c.args(args)
            .current_dir(self.work.path())
            .env("PALAVER_HOME", self.home.path())
            .env("OPENAI_API_KEY", KEY)
            .stdin(Stdio::null());
        c
    }

    /// Starts palaver with its output read as it comes (a full pipe would block it).
    fn spawn(&self, args: &[&str]) -> Running {
        let mut child = self.command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let drain = |mut r: Box<dyn Read + Send>| {
            thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = r.read_to_end(&mut buf);
                buf
            })
        };
        let out = drain(Box::new(child.stdout.take().unwrap()));
        let err = drain(Box::new(child.stderr.take().unwrap()));
        Running { child, out, err }
    }

    fn run(&self, args: &[&str]) -> Done {
        finish(self.spawn(args), Duration::from_secs(10))
    }

    fn db(&self) -> Vec<u8> {
        let mut all = Vec::new();
        for entry in std::fs::read_dir(self.home.path()).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with("palaver.sqlite3") {
                all.extend(std::fs::read(entry.path()).unwrap_or_default());
            }
        }
        all
    }
}

struct Running {
    child: Child,
    out: thread::JoinHandle<Vec<u8>>,
    err: thread::JoinHandle<Vec<u8>>,
}

struct Done {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    result: Value,
    took: Duration,
}

fn wait_exit(child: &mut Child, deadline: Duration) -> (Option<i32>, Duration) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), started.elapsed());
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            panic!("palaver still running after {deadline:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

fn finish(mut run: Running, deadline: Duration) -> Done {
    let (code, took) = wait_exit(&mut run.child, deadline);
    let stdout = String::from_utf8_lossy(&run.out.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&run.err.join().unwrap()).into_owned();
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("null");
    let result = serde_json::from_str(last).unwrap_or(Value::Null);
    Done { code, stdout, stderr, result, took }
}

fn sigint(child: &Child) {
    let ok = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
}

fn pid_alive(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty() && !stat.contains(") Z")
}

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < Duration::from_secs(5), "waited too long for {what}");
        thread::sleep(Duration::from_millis(10));
    }
}

// --- Ctrl+C -----------------------------------------------------------------------------------

#[test]
fn ctrl_c_stops_a_fast_stream_keeps_the_partial_reply_and_continue_works() {
    let d = Dirs::new();
    let s = Hostile::start(|req, s| {
        if req.body.contains("again") {
            return answer(s, "second answer");
        }
        sse_head(s);
        forever(s, chunk(&json!({"content": "a"}), None).repeat(200).as_bytes());
    });
    d.profile(&s, "");
    let child = d.spawn(&["-p", "first", "--json"]);
    wait_for("the stream", || !s.requests().is_empty());
    thread::sleep(Duration::from_millis(300));
    sigint(&child.child);
    let r = finish(child, Duration::from_secs(3));
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert_eq!(r.result["finish_reason"], "cancelled");
    assert_eq!(r.result["stored"], true);
    let partial = r.result["text"].as_str().unwrap().len();
    assert!(partial > 0);
    let again = d.run(&["-p", "again", "--continue", "--json"]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    let sent: Value = serde_json::from_str(&s.requests()[1].body).unwrap();
    let msgs = sent["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3, "prompt, partial reply, new prompt");
    assert_eq!(msgs[1]["content"].as_str().unwrap().len(), partial, "the partial reply was stored whole");
}

#[test]
fn a_second_ctrl_c_exits_at_once_even_with_stdout_blocked() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| {
        sse_head(s);
        forever(s, chunk(&json!({"content": "a"}), None).repeat(200).as_bytes());
    });
    d.profile(&s, "");
    // stdout is a pipe nobody reads: palaver ends up blocked writing to it.
    let mut child = d.command(&["-p", "hi", "--json"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    wait_for("the stream", || !s.requests().is_empty());
    thread::sleep(Duration::from_millis(500));
    sigint(&child);
    thread::sleep(Duration::from_millis(100));
    sigint(&child);
    let (code, _) = wait_exit(&mut child, Duration::from_secs(3));
    assert_eq!(code, Some(130));
}

#[test]
fn ctrl_c_during_a_tool_ends_its_whole_process_group() {
    let d = Dirs::new();
    let pidfile = d.work.path().join("pid");
    let cmd = format!("sh -c 'sleep 30 & echo $! > {}; wait'; echo late", pidfile.display());
    let s = Hostile::start(move |req, s| {
        if has_tool_result(req) {
            return answer(s, "after the tool");
        }
        sse_head(s);
        let _ = s.write_all(calls(1, "run_command", &json!({"command": cmd})).as_bytes());
    });
    d.profile(&s, "");
    let child = d.spawn(&["-p", "run it", "--json", "--tools", "auto", "--yes"]);
    wait_for("the tool to start", || std::fs::read_to_string(&pidfile).is_ok_and(|p| p.ends_with('\n')));
    let grandchild = std::fs::read_to_string(&pidfile).unwrap().trim().to_owned();
    assert!(pid_alive(&grandchild));
    sigint(&child.child);
    let r = finish(child, Duration::from_secs(3));
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert_eq!(s.requests().len(), 1, "nothing is sent after Ctrl+C");
    assert_eq!(r.result["turn"]["stop"], "cancelled");
    assert_eq!(r.result["tool_calls"][0]["status"], "failed");
    wait_for("the grandchild to end", || !pid_alive(&grandchild));
    // The cancelled call is answered in the store, so the conversation continues.
    let again = d.run(&["-p", "go on", "--continue", "--json"]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
}

#[test]
fn a_tool_timeout_leaves_no_orphan() {
    // The engine's tool timeout drops the call; the registry test uses a short one.
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let ws = palaver::tools::Workspace::new(dir.path(), Vec::new()).unwrap();
    let mut reg = palaver::tools::Registry::builtins();
    reg.set_workspace(ws);
    let cmd = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
    let args = json!({"command": cmd}).to_string();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(reg.execute("run_command", &args, Duration::from_millis(300)));
    assert!(out.is_error && out.text.contains("timed out"), "{}", out.text);
    let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_owned();
    wait_for("the sleep to end", || !pid_alive(&pid));
}

#[test]
fn ctrl_c_during_a_retry_wait_sends_nothing_more() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| {
        json_reply(s, "503 Busy", &json!({"error": {"message": "busy"}}), &[("Retry-After", "30")])
    });
    d.profile(&s, "");
    let child = d.spawn(&["-p", "hi", "--json"]);
    wait_for("the first request", || !s.requests().is_empty());
    thread::sleep(Duration::from_millis(200));
    sigint(&child.child);
    let r = finish(child, Duration::from_secs(3));
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    thread::sleep(Duration::from_millis(100));
    assert_eq!(s.requests().len(), 1, "the retry was not sent");
}

// --- limits -----------------------------------------------------------------------------------

#[test]
fn a_line_without_end_stops_at_sse_event_bytes() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| {
        sse_head(s);
        let _ = s.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");
        forever(s, &[b'x'; 65536]);
    });
    d.profile(&s, "limits = { sse_event_bytes = 1048576 }");
    let r = d.run(&["-p", "hi", "--json"]);
    assert_eq!(r.code, Some(1));
    let msg = r.result["error"]["message"].as_str().unwrap();
    assert!(msg.contains("sse_event_bytes = 1048576") && msg.contains("limits = {"), "{msg}");
    assert!(r.stderr.contains("sse_event_bytes"), "{}", r.stderr);
    assert!(r.took < Duration::from_secs(5));
}

#[test]
fn endless_tiny_deltas_stop_at_reply_bytes_and_what_came_is_kept() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| {
        sse_head(s);
        forever(s, chunk(&json!({"content": "ab"}), None).repeat(100).as_bytes());
    });
    d.profile(&s, "limits = { reply_bytes = 65536 }");
    let r = d.run(&["-p", "hi", "--json"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.result["finish_reason"], "error");
    assert_eq!(r.result["text"].as_str().unwrap().len(), 65536, "everything before the limit is kept");
    assert!(r.result["error"]["message"].as_str().unwrap().contains("reply_bytes"));
    let list = String::from_utf8(d.command(&["history", "list", "--json"]).output().unwrap().stdout).unwrap();
    assert!(list.contains("\"messages\":2"), "{list}");
}

#[test]
fn too_many_tool_calls_end_the_reply_and_none_runs() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| {
        sse_head(s);
        let _ = s.write_all(calls(500, "current_time", &json!({})).as_bytes());
    });
    d.profile(&s, "limits = { tool_calls = 100 }");
    let r = d.run(&["-p", "hi", "--json", "--tools", "auto"]);
    assert_eq!(r.code, Some(1));
    assert!(r.result["error"]["message"].as_str().unwrap().contains("tool_calls = 100"));
    assert_eq!(s.requests().len(), 1, "no call ran, nothing was sent back");
}

#[test]
fn thousands_of_file_reads_stay_within_the_round_budget() {
    let d = Dirs::new();
    std::fs::write(d.work.path().join("big.txt"), "0123456789abcdef\n".repeat(120_000)).unwrap();
    let s = Hostile::start(|req, s| {
        if has_tool_result(req) {
            return answer(s, "read them");
        }
        sse_head(s);
        let _ = s.write_all(calls(2000, "read_file", &json!({"path": "big.txt", "max_bytes": 2_097_152})).as_bytes());
    });
    d.profile(&s, "limits = { tool_output_bytes = 65536, round_tool_output_bytes = 262144 }");
    let r = d.run(&["-p", "hi", "--json", "--tools", "auto"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let sent = &s.requests()[1];
    assert!(sent.body.len() < 262_144 + 2000 * 400, "the second request is {} bytes", sent.body.len());
    let outputs: Vec<&str> =
        r.result["tool_calls"].as_array().unwrap().iter().filter_map(|c| c["output"].as_str()).collect();
    assert_eq!(outputs.len(), 2000);
    assert!(outputs[0].contains("tool_output_bytes"), "one output is cut at its limit");
    assert!(outputs.iter().any(|o| o.contains("did not run") && o.contains("round_tool_output_bytes")));
}

#[test]
fn a_request_past_request_bytes_is_never_sent() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| answer(s, "no"));
    d.profile(&s, "limits = { request_bytes = 1000 }");
    let prompt = "x".repeat(5000);
    let r = d.run(&["-p", &prompt, "--json"]);
    assert_eq!(r.code, Some(1));
    assert!(r.result["error"]["message"].as_str().unwrap().contains("request_bytes = 1000"));
    assert!(s.requests().is_empty(), "nothing reached the server");
}

#[test]
fn a_body_past_body_bytes_and_deep_json_are_refused_with_their_names() {
    let d = Dirs::new();
    let s = Hostile::start(|req, s| {
        if req.body.contains("deep") {
            sse_head(s);
            let deep = format!("data: {}{}\n\n", "[".repeat(100_000), "]".repeat(100_000));
            let _ = s.write_all(deep.as_bytes());
            return;
        }
        let text = "y".repeat(100_000);
        json_reply(s, "200 OK", &json!({"choices": [{"index": 0, "message": {"content": text}}]}), &[]);
    });
    d.profile(&s, "limits = { body_bytes = 10000 }");
    let r = d.run(&["-p", "hi", "--json", "--no-stream"]);
    assert_eq!(r.code, Some(1));
    assert!(r.result["error"]["message"].as_str().unwrap().contains("body_bytes = 10000"));
    let r = d.run(&["-p", "deep", "--json"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.result["error"]["message"].as_str().unwrap().contains("json_depth"), "{}", r.result);
}

// --- credentials ----------------------------------------------------------------------------

#[test]
fn a_redirect_to_another_origin_is_not_followed_and_names_the_target() {
    let d = Dirs::new();
    let other = Hostile::start_on("127.0.0.2", |_, s| answer(s, "stolen"));
    let target = format!("{}/chat/completions", other.base_url);
    let s = Hostile::start(move |req, s| {
        if req.line.contains("/v1/same") {
            return answer(s, "same origin is fine");
        }
        if req.line.contains("/v1/chat/completions") && !req.body.contains("same") {
            return head(s, "307 Temporary Redirect", &[("Location", &target), ("Content-Length", "0")]);
        }
        head(s, "307 Temporary Redirect", &[("Location", "/v1/same"), ("Content-Length", "0")]);
    });
    d.profile(&s, "auth = \"api-key\"\nheaders = { \"x-api-token\" = \"tok-SECRET-HEADER-42\" }");
    let r = d.run(&["-p", "hi", "--json"]);
    assert_eq!(r.code, Some(1));
    assert!(other.requests().is_empty(), "the other origin got the key: {:?}", other.requests());
    let msg = r.result["error"]["message"].as_str().unwrap();
    assert!(msg.contains(&format!("127.0.0.2:{}", other.port)), "{msg}");
    let r = d.run(&["-p", "same", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.result["text"], "same origin is fine");
}

#[test]
fn an_echoed_key_or_secret_header_is_redacted_everywhere() {
    let d = Dirs::new();
    let s = Hostile::start(|req, s| {
        let auth: String = req.headers.lines().filter(|l| !l.to_ascii_lowercase().starts_with("host")).collect();
        if req.body.contains("stream-echo") {
            return answer(s, &format!("you sent {auth}"));
        }
        json_reply(
            s,
            "401 Unauthorized",
            &json!({"error": {"message": format!("bad credentials: {auth}")}}),
            &[("x-echo-auth", KEY)],
        );
    });
    d.profile(&s, "headers = { \"x-api-token\" = \"tok-SECRET-HEADER-42\" }");
    let r = d.run(&["-p", "hi", "--json"]);
    assert_eq!(r.code, Some(1));
    let e = d.run(&["-p", "stream-echo", "--json"]);
    assert_eq!(e.code, Some(0));
    for secret in [KEY, "tok-SECRET-HEADER-42"] {
        for (what, text) in [("stdout", &r.stdout), ("stderr", &r.stderr), ("echo stdout", &e.stdout)] {
            assert!(!text.contains(secret), "{what} shows {secret}: {text}");
        }
        let db = d.db();
        assert!(!db.windows(secret.len()).any(|w| w == secret.as_bytes()), "the database holds {secret}");
    }
    assert!(r.result["error"]["message"].as_str().unwrap().contains("[redacted]"));
}

/// Past the raw-frame budget the client builds no frames, and it searches each read rather than
/// each event for secrets: a key echoed late in a long stream, split across two reads, is
/// still redacted from stdout and the store.
#[test]
fn a_key_echoed_late_in_a_long_stream_and_split_across_reads_is_redacted() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| {
        sse_head(s);
        let filler = "x".repeat(100);
        let mut body = String::new();
        for _ in 0..3000 {
            body.push_str(&chunk(&json!({"content": filler}), None));
        }
        let _ = s.write_all(body.as_bytes());
        let last = chunk(&json!({"content": format!(" echo {KEY} end")}), Some("stop")) + "data: [DONE]\n\n";
        let cut = last.find(KEY).unwrap_or(0) + KEY.len() / 2;
        let _ = s.write_all(&last.as_bytes()[..cut]);
        let _ = s.flush();
        thread::sleep(Duration::from_millis(200));
        let _ = s.write_all(&last.as_bytes()[cut..]);
    });
    d.profile(&s, "");
    let r = d.run(&["-p", "hi", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let text = r.result["text"].as_str().unwrap_or_default();
    assert!(text.ends_with(" echo [redacted] end"), "{}", &text[text.len().saturating_sub(60)..]);
    assert!(!r.stdout.contains(KEY), "stdout shows the key");
    let db = d.db();
    assert!(!db.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the database holds the key");
}

// --- panics, escapes, keys ------------------------------------------------------------------

#[test]
fn absurd_retry_after_values_are_errors_not_panics() {
    for (name, value) in [("Retry-After", "inf"), ("Retry-After", "1e20"), ("retry-after-ms", "1e30")] {
        let d = Dirs::new();
        let s = Hostile::start(move |_, s| {
            json_reply(s, "429 Too Many Requests", &json!({"error": {"message": "slow down"}}), &[(name, value)]);
        });
        d.profile(&s, "");
        let r = d.run(&["-p", "hi", "--json"]);
        assert_eq!(r.code, Some(1), "{name}: {value}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(r.result["error"]["message"].as_str().unwrap().contains("not waiting that long"), "{}", r.result);
    }
}

#[test]
fn escape_sequences_never_reach_stderr_and_stdout_to_a_pipe_is_byte_exact() {
    let d = Dirs::new();
    let evil = "\u{1b}]52;c;aGk=\u{7}\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\\u{1b}[2J\u{1b}]0;pwned\u{7}";
    let text = format!("text {evil}");
    let (e2, t2) = (evil.to_owned(), text.clone());
    let s = Hostile::start(move |req, s| {
        if has_tool_result(req) {
            return answer(s, &t2);
        }
        if req.body.contains("fail") {
            return json_reply(s, "400 Bad", &json!({"error": {"message": format!("no {e2}")}}), &[]);
        }
        sse_head(s);
        let call = json!({"index": 0, "id": format!("id{e2}"), "type": "function",
            "function": {"name": format!("current_time{e2}"), "arguments": "{}"}});
        let body = chunk(&json!({"reasoning_content": format!("think {e2}")}), None)
            + &chunk(&json!({"tool_calls": [call]}), Some("tool_calls"))
            + "data: [DONE]\n\n";
        let _ = s.write_all(body.as_bytes());
    });
    d.profile(&s, "");
    let r = d.run(&["-p", "hi", "--tools", "auto"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("think") && !r.stderr.contains('\u{1b}'), "{:?}", r.stderr);
    assert_eq!(r.stdout, format!("{text}\n"), "stdout to a pipe is the answer, byte for byte");
    let f = d.run(&["-p", "fail"]);
    assert_eq!(f.code, Some(1));
    assert!(f.stderr.contains("no ") && !f.stderr.contains('\u{1b}'), "{:?}", f.stderr);
    let id = String::from_utf8(d.command(&["history", "list"]).output().unwrap().stdout).unwrap();
    let id = id.lines().last().unwrap().split_whitespace().next().unwrap().to_owned();
    let md = d.command(&["history", "export", &id, "--format", "md"]).output().unwrap();
    assert!(!md.stdout.contains(&0x1b), "the markdown export is sanitised");
}

#[test]
fn a_hanging_or_silent_api_key_cmd_is_an_error_naming_it() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| answer(s, "hi"));
    d.profile(&s, "api_key_cmd = \"sleep 1000\"\napi_key_cmd_timeout = 0.5");
    let r = d.run(&["-p", "hi"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("sleep 1000") && r.stderr.contains("api_key_cmd_timeout"), "{}", r.stderr);
    d.profile(&s, "api_key_cmd = \"true\"");
    let r = d.run(&["-p", "hi"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("printed nothing"), "{}", r.stderr);
    assert!(s.requests().is_empty(), "no unauthenticated request went out");
}

// --- the store ------------------------------------------------------------------------------

#[test]
fn parallel_continues_append_in_turn_and_lose_nothing() {
    let d = Dirs::new();
    let s = Hostile::start(|req, s| {
        let v: Value = serde_json::from_str(&req.body).unwrap();
        let last = v["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
        answer(s, &format!("re {last}"));
    });
    d.profile(&s, "");
    assert_eq!(d.run(&["-p", "p0"]).code, Some(0));
    let runs: Vec<Running> = (1..=8).map(|i| d.spawn(&["-p", &format!("p{i}"), "--continue"])).collect();
    for c in runs {
        assert_eq!(finish(c, Duration::from_secs(20)).code, Some(0));
    }
    let list = String::from_utf8(d.command(&["history", "list"]).output().unwrap().stdout).unwrap();
    let id = list.split_whitespace().next().unwrap().to_owned();
    let json = d.command(&["history", "export", &id, "--format", "json"]).output().unwrap();
    let e: Value = serde_json::from_slice(&json.stdout).unwrap();
    let msgs = e["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 18, "nine prompts and nine replies");
    for pair in msgs.chunks(2) {
        let prompt = pair[0]["choices"][0]["content"].as_str().unwrap();
        assert_eq!(pair[1]["choices"][0]["content"].as_str().unwrap(), format!("re {prompt}"));
    }
}

#[test]
fn a_store_that_cannot_be_written_is_said_in_the_result_line() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| answer(s, "hi"));
    d.profile(&s, "");
    assert_eq!(d.run(&["-p", "first"]).code, Some(0));
    // Every write to the WAL fails as on a full disk.
    let wal = d.home.path().join("palaver.sqlite3-wal");
    let _ = std::fs::remove_file(&wal);
    let _ = std::fs::remove_file(d.home.path().join("palaver.sqlite3-shm"));
    std::os::unix::fs::symlink("/dev/full", &wal).unwrap();
    let r = d.run(&["-p", "second", "--json"]);
    assert_eq!(r.result["stored"], false, "{}", r.stdout);
    assert!(r.stderr.contains("not stored"), "{}", r.stderr);
    // Reading the history still works.
    let list = d.command(&["history", "list"]).output().unwrap();
    assert!(list.status.success() && String::from_utf8_lossy(&list.stdout).contains("first"));
}

#[test]
fn an_endless_model_list_is_cut_at_model_list_bytes() {
    let d = Dirs::new();
    let s = Hostile::start_listing(|_, s| {
        head(s, "200 OK", &[("Content-Type", "application/json")]);
        let _ = s.write_all(b"{\"data\":[");
        forever(s, "{\"id\":\"model-without-end\"},".repeat(1000).as_bytes());
    });
    // The default limit (32 MiB): an endless body once grew past 4 GB here.
    d.profile(&s, "");
    let r = d.run(&["models", "--provider", "h"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("model_list_bytes = 33554432") && r.stderr.contains("limits = {"), "{}", r.stderr);
    assert!(r.took < Duration::from_secs(8), "{:?}", r.took);
    // A smaller count limit refuses a long (finite) list, naming it.
    let d = Dirs::new();
    let s = Hostile::start_listing(|_, s| {
        let data: Vec<Value> = (0..50).map(|i| json!({"id": format!("m{i}")})).collect();
        json_reply(s, "200 OK", &json!({"data": data}), &[]);
    });
    d.profile(&s, "limits = { model_list_entries = 40 }");
    let r = d.run(&["models", "--provider", "h"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("has 50 models") && r.stderr.contains("model_list_entries = 40"), "{}", r.stderr);
    d.profile(&s, "limits = { model_list_entries = 50 }");
    let r = d.run(&["models", "--provider", "h"]);
    assert_eq!((r.code, r.stdout.lines().count()), (Some(0), 50), "{}", r.stderr);
}

/// Waits until `pidfile` names a process, and returns its pid.
fn pid_in(pidfile: &std::path::Path) -> String {
    wait_for("the child's pid", || std::fs::read_to_string(pidfile).is_ok_and(|p| p.trim().parse::<u32>().is_ok()));
    std::fs::read_to_string(pidfile).unwrap().trim().to_owned()
}

#[test]
fn ctrl_c_while_reading_an_attachment_from_stdin_exits_130() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| answer(s, "never asked"));
    d.profile(&s, "");
    // stdin stays open and empty: `-a -` waits for its end.
    let mut child = d
        .command(&["-p", "hi", "-a", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take();
    thread::sleep(Duration::from_millis(500));
    sigint(&child);
    let (code, _) = wait_exit(&mut child, Duration::from_secs(3));
    assert_eq!(code, Some(130));
    assert!(s.requests().is_empty(), "nothing was sent");
}

#[test]
fn ctrl_c_while_an_mcp_server_does_not_answer_initialize_exits_130_and_ends_it() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| answer(s, "never asked"));
    let pidfile = d.work.path().join("mcp.pid");
    d.profile(
        &s,
        &format!("[mcp.servers.mute]\ncommand = [\"sh\", \"-c\", \"echo $$ > {}; exec sleep 100\"]", pidfile.display()),
    );
    let mut child =
        d.command(&["-p", "hi", "--tools", "auto"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let pid = pid_in(&pidfile);
    thread::sleep(Duration::from_millis(200));
    sigint(&child);
    let (code, took) = wait_exit(&mut child, Duration::from_secs(3));
    assert_eq!(code, Some(130), "{took:?}");
    assert!(s.requests().is_empty(), "the prompt was not run after the Ctrl+C");
    wait_for("the MCP server to end", || !pid_alive(&pid));
}

#[test]
fn ctrl_c_while_api_key_cmd_runs_exits_130_and_ends_it() {
    let d = Dirs::new();
    let s = Hostile::start(|_, s| answer(s, "never asked"));
    let pidfile = d.work.path().join("key.pid");
    d.profile(&s, &format!("api_key_cmd = \"echo $$ > {}; exec sleep 100\"", pidfile.display()));
    let mut child = d.command(&["-p", "hi"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let pid = pid_in(&pidfile);
    sigint(&child);
    let (code, _) = wait_exit(&mut child, Duration::from_secs(3));
    assert_eq!(code, Some(130));
    assert!(s.requests().is_empty());
    wait_for("the key command to end", || !pid_alive(&pid));
}

#[test]
fn images_past_images_per_reply_are_dropped_and_said_and_the_reply_completes() {
    // A 1×1 PNG.
    const PNG: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let d = Dirs::new();
    let s = Hostile::start(|_, s| {
        sse_head(s);
        let mut body = String::new();
        for i in 0..6 {
            let item =
                json!({"type": "image_generation_call", "id": format!("ig_{i}"), "status": "completed", "result": PNG});
            let ev = json!({"type": "response.output_item.done", "output_index": i, "item": item});
            body += &format!("event: response.output_item.done\ndata: {ev}\n\n");
        }
        let text =
            json!({"type": "response.output_text.delta", "output_index": 6, "content_index": 0, "delta": "drawn"});
        body += &format!("event: response.output_text.delta\ndata: {text}\n\n");
        let done = json!({"type": "response.completed", "response": {"status": "completed", "output": []}});
        body += &format!("event: response.completed\ndata: {done}\n\n");
        let _ = s.write_all(body.as_bytes());
    });
    d.profile(&s, "api = \"responses\"\nlimits = { images_per_reply = 2 }");
    let r = d.run(&["-p", "draw six", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.result["finish_reason"], "stop", "{}", r.stdout);
    assert!(
        r.stderr.contains("4 generated images not kept") && r.stderr.contains("images_per_reply = 2"),
        "{}",
        r.stderr
    );
    let saved = std::fs::read_dir(d.home.path().join("images")).unwrap().count();
    assert_eq!(saved, 2, "only the images within the limit were kept");
}

#[test]
fn read_file_on_a_fifo_is_refused_and_palaver_exits_when_done() {
    let d = Dirs::new();
    let made = Command::new("mkfifo").arg(d.work.path().join("pipe")).status().unwrap();
    assert!(made.success());
    let s = Hostile::start(|req, s| {
        if has_tool_result(req) {
            return answer(s, "read it");
        }
        sse_head(s);
        let _ = s.write_all(calls(1, "read_file", &json!({"path": "pipe"})).as_bytes());
    });
    d.profile(&s, "");
    // Were the FIFO opened, a thread would wait for a writer and keep palaver from exiting.
    let r = d.run(&["-p", "read pipe", "--json", "--tools", "auto"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.result["text"], "read it");
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[1].body.contains("FIFO (named pipe), not a regular file"), "{}", reqs[1].body);
    assert!(r.took < Duration::from_secs(5), "{:?}", r.took);
}
