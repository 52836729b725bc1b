//! End to end: the real binary against an OAuth-protected MCP server built with the PyPI `mcp`
//! package (tests/mcp_server/oauth_mcp_server.py, installed into target/mcp-py by
//! tests/mcp_server/install_mcp_py.sh) and a local authorization server
//! (tests/mcp_server/oauth_as.py). The test plays the browser: it GETs the URL `palaver mcp
//! login` prints and follows the redirect to palaver's loopback listener.
//!
//! Skipped, loudly, when the `mcp` package cannot be installed; under `CI=true` that is a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use scripted::{Reply, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The virtualenv's python with `mcp`, or `None` after saying loudly why not.
fn python_mcp() -> Option<PathBuf> {
    let root = env!("CARGO_MANIFEST_DIR");
    let _ = Command::new("bash").arg(format!("{root}/tests/mcp_server/install_mcp_py.sh")).status();
    let python = PathBuf::from(format!("{root}/target/mcp-py/bin/python"));
    let ok = Command::new(&python).args(["-c", "import mcp"]).status().is_ok_and(|s| s.success());
    if ok {
        return Some(python);
    }
    let why = "the PyPI `mcp` package is not installed (tests/mcp_server/install_mcp_py.sh failed)";
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: {why}");
    eprintln!("!!!!!!!! SKIPPED: {why} !!!!!!!!");
    None
}

/// Starts a script that prints `port N` once listening; its stdout is drained after that.
fn start(program: &Path, args: &[&str]) -> (Proc, u16) {
    let mut child = Command::new(program).args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    std::thread::spawn(move || lines.for_each(drop));
    let port = first.trim().strip_prefix("port ").unwrap().parse().unwrap();
    (Proc(child), port)
}

/// A GET or POST over plain HTTP/1.1: the status and the `Location` header.
fn http(method: &str, url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let location = text
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix("Location: ").or_else(|| l.strip_prefix("location: ")))
        .map(str::to_owned);
    (status, location)
}

fn palaver(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home)
        .env("OPENAI_API_KEY", "sk-test-0123456789")
        .env("BROWSER", "true")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `palaver mcp login prot`, with the test as the browser.
fn login(home: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["mcp", "login", "prot"])
        .env("PALAVER_HOME", home)
        .env("BROWSER", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let url = loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "no URL printed: {seen}");
        seen.push_str(&line);
        if let Some(u) = line.trim().strip_prefix("http://") {
            break format!("http://{u}");
        }
    };
    assert!(seen.contains("open this URL in a browser to log in to prot:"), "{seen}");
    let (status, to) = http("GET", &url);
    assert_eq!(status, 302, "the authorization server redirects back");
    let to = to.unwrap();
    assert!(to.starts_with("http://127.0.0.1:") && to.contains("/callback?code="), "{to}");
    assert_eq!(http("GET", &to).0, 200, "palaver's loopback listener takes the code");
    let mut out = child.wait_with_output().unwrap();
    err.read_to_string(&mut seen).unwrap();
    out.stderr = seen.into_bytes();
    out
}

fn chat_call(id: &str, name: &str, args: &str) -> String {
    let first = serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":name,"arguments":args}}]}}]});
    format!(
        "data: {first}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

const CHAT_TEXT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Done.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// A headless `--tools auto` turn on a scripted model; the model's requests.
fn turn(home: &Path, replies: Vec<Reply>) -> (Output, Vec<Value>) {
    let model = Server::start(replies);
    let out = palaver(home, &["--base-url", &model.base_url, "-m", "m", "-p", "use the tool", "--tools", "auto"]);
    let bodies = model.requests().iter().map(|r| serde_json::from_str(&r.body).unwrap()).collect();
    (out, bodies)
}

fn offered(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "whisper"))
}

fn count(log: &Path, what: &str) -> usize {
    std::fs::read_to_string(log).unwrap().lines().filter(|l| l.starts_with(what)).count()
}

#[test]
fn login_then_tools_then_a_headless_turn_then_refresh_then_logout() {
    let Some(python) = python_mcp() else { return };
    let dir = env!("CARGO_MANIFEST_DIR");
    let log = tempfile::NamedTempFile::new().unwrap();
    let (_as, as_port) =
        start(Path::new("python3"), &[&format!("{dir}/tests/mcp_server/oauth_as.py"), log.path().to_str().unwrap()]);
    let as_url = format!("http://127.0.0.1:{as_port}");
    let (_mcp, port) = start(&python, &[&format!("{dir}/tests/mcp_server/oauth_mcp_server.py"), &as_url]);
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::write(
        h.join("config.toml"),
        format!("[mcp.servers.prot]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntrust_read_only = true\n"),
    )
    .unwrap();
    let tokens = h.join("mcp-oauth/prot.json");

    // Before the login: it says so, and a conversation goes on without it.
    let out = palaver(h, &["mcp", "list"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("prot needs login: run `palaver mcp login prot`"), "{}", text(&out));
    assert!(text(&out).contains("auth       oauth: needs login"), "{}", text(&out));
    let (out, bodies) = turn(h, vec![Reply::sse(CHAT_TEXT)]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("prot needs login: run `palaver mcp login prot`"));
    assert!(!offered(&bodies[0]));

    let out = login(h);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "logged in to prot\n");
    assert_eq!((count(log.path(), "register"), count(log.path(), "token authorization_code")), (1, 1));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    let first_token = stored["access_token"].as_str().unwrap().to_owned();
    assert!(!text(&out).contains(&first_token), "the token is never printed");
    assert!(!std::fs::read_to_string(h.join("config.toml")).unwrap().contains(&first_token));

    let out = palaver(h, &["mcp", "tools", "prot"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("whisper  [read-only]"), "{}", text(&out));
    let out = palaver(h, &["mcp", "list"]);
    // An hour's token, listed within the second it was issued, shows a full hour left.
    let listed = text(&out);
    assert!(
        listed.contains("auth       oauth: logged in, expires in 59 min")
            || listed.contains("auth       oauth: logged in, expires in 1 h"),
        "{listed}"
    );

    // The model calls the protected tool in a headless turn.
    let (out, bodies) =
        turn(h, vec![Reply::sse(&chat_call("c1", "whisper", r#"{"text":"from the model"}"#)), Reply::sse(CHAT_TEXT)]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(offered(&bodies[0]));
    let tool = bodies[1]["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").cloned().unwrap();
    assert_eq!(tool["content"], "the protected server heard: from the model");
    assert_eq!(count(log.path(), "token refresh_token"), 0);

    // The server stops taking the token (401): palaver refreshes it, stores it, goes on. Tokens
    // issued from now on live 8 s, so a use after that finds it expired and refreshes first.
    assert_eq!(http("POST", &format!("{as_url}/admin/ttl?seconds=8")).0, 200);
    assert_eq!(http("POST", &format!("{as_url}/admin/expire")).0, 200);
    let out = palaver(h, &["mcp", "tools", "prot"]);
    assert!(out.status.success(), "{}", text(&out));
    let refreshed = count(log.path(), "token refresh_token");
    assert!(refreshed >= 1);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    assert_ne!(stored["access_token"].as_str().unwrap(), first_token);
    std::thread::sleep(std::time::Duration::from_secs(9));
    let inactive = count(log.path(), "introspect inactive");
    let (out, bodies) =
        turn(h, vec![Reply::sse(&chat_call("c2", "whisper", r#"{"text":"again"}"#)), Reply::sse(CHAT_TEXT)]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(bodies[1].to_string().contains("the protected server heard: again"), "{}", bodies[1]);
    assert!(count(log.path(), "token refresh_token") > refreshed);
    assert_eq!(count(log.path(), "introspect inactive"), inactive, "refreshed before use, not after a 401");

    // Logging out revokes at the server and forgets the tokens.
    let out = palaver(h, &["mcp", "logout", "prot"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "logged out of prot\n");
    assert_eq!(count(log.path(), "revoke refresh_token known=True"), 1);
    assert!(!tokens.exists());
    let out = palaver(h, &["mcp", "list"]);
    assert!(text(&out).contains("prot needs login: run `palaver mcp login prot`"), "{}", text(&out));
}

#[test]
fn login_refuses_what_it_cannot_log_in_to() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let cfg = "[mcp.servers.local]\ncommand = [\"true\"]\n[mcp.servers.env]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env = \"HOME\"\n";
    std::fs::write(h.join("config.toml"), cfg).unwrap();
    let out = palaver(h, &["mcp", "login", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no [mcp.servers.nope] in config.toml"), "{}", text(&out));
    let out = palaver(h, &["mcp", "login", "local"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("`local` is a stdio server"), "{}", text(&out));
    let out = palaver(h, &["mcp", "logout", "env"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("OAuth is not used"), "{}", text(&out));
    // A server that is not there: the login fails (exit 1) with the reason.
    std::fs::write(h.join("config.toml"), "[mcp.servers.gone]\nurl = \"http://127.0.0.1:9/mcp\"\n").unwrap();
    let out = palaver(h, &["mcp", "login", "gone"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("login to gone failed: http://127.0.0.1:9/mcp:"), "{}", text(&out));
}
