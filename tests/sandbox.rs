//! Commands under the OS sandbox (Landlock, and seccomp for every socket but a socketpair): a
//! write outside the workspace, a TCP connect and a UDP send fail inside it while a write
//! inside the workspace works — through the registry (the built
//! binary as the helper), and end to end with a scripted model calling `run_command` headless,
//! where the model gets the failure as the tool result. Where this kernel has no Landlock, the
//! tests check that palaver says so instead.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use palaver::config::provider::SandboxMode;
use palaver::tools::sandbox::{Policy, Support, support};
use palaver::tools::{Registry, Workspace};
use scripted::{Reply, Server};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// A directory outside the temporary directory (which the sandbox lets commands write): the
/// build's own temp folder, unless the checkout itself lies under the temporary directory (a CI
/// clone in /tmp), then the home directory or /var/tmp.
fn outside_tmp() -> tempfile::TempDir {
    let tmp = std::env::temp_dir().canonicalize().unwrap_or_else(|_| std::env::temp_dir());
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        std::env::var_os("HOME").map(PathBuf::from),
        Some(PathBuf::from("/var/tmp")),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter(|d| !d.canonicalize().unwrap_or_else(|_| d.clone()).starts_with(&tmp))
        .find_map(|d| tempfile::tempdir_in(d).ok())
        .expect("a writable directory outside the temporary directory")
}

fn policy(mode: SandboxMode, network: bool) -> Policy {
    Policy { mode, network, helper: PathBuf::from(env!("CARGO_BIN_EXE_palaver")) }
}

fn registry(ws: &Path, policy: Policy) -> Registry {
    let mut r = Registry::builtins();
    r.set_workspace(Workspace::new(ws, Vec::new()).unwrap());
    r.set_sandbox(policy);
    r
}

async fn run(r: &Registry, command: &str) -> palaver::tools::ToolOutput {
    let args = json!({ "command": command }).to_string();
    r.execute("run_command", &args, Duration::from_secs(20)).await
}

fn connect_command(port: u16) -> String {
    format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo connected")
}

/// A UDP datagram to `port` on 127.0.0.1 (Landlock has no UDP rules: seccomp refuses the socket).
fn udp_command(port: u16) -> String {
    format!(
        "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', \
         {port})); print('sent')\""
    )
}

/// A TCP connection to `port` on 127.0.0.1, from Python rather than the shell.
fn tcp_command(port: u16) -> String {
    format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port})); print('connected')\"")
}

/// A UDP socket on 127.0.0.1 to send to, and whether a datagram reached it.
fn udp_listener() -> (std::net::UdpSocket, u16) {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let port = socket.local_addr().unwrap().port();
    (socket, port)
}

fn received(socket: &std::net::UdpSocket) -> bool {
    socket.recv(&mut [0u8; 16]).is_ok()
}

#[tokio::test]
async fn workspace_write_confines_writes_and_closes_tcp() {
    let Support::Landlock { net, .. } = support() else {
        eprintln!("no Landlock on this kernel: {:?}", support());
        return;
    };
    let (ws, outside) = (outside_tmp(), outside_tmp());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let target = outside.path().join("outside-file");
    let r = registry(ws.path(), policy(SandboxMode::WorkspaceWrite, false));

    let out = run(&r, &format!("echo x > {}", target.display())).await;
    assert!(out.is_error && out.text.contains("Permission denied"), "{}", out.text);
    assert!(out.text.contains("workspace-write sandbox"), "the model is told why: {}", out.text);
    assert!(!target.exists());

    let inside =
        run(&r, "echo x > ./inside && cat inside && t=\"${TMPDIR:-/tmp}/palaver-sbx-$$\" && echo x > $t && rm $t")
            .await;
    assert!(!inside.is_error, "{}", inside.text);
    assert_eq!(std::fs::read_to_string(ws.path().join("inside")).unwrap(), "x\n");

    if net {
        let out = run(&r, &connect_command(port)).await;
        assert!(out.is_error && !out.text.contains("connected\n"), "{}", out.text);
        assert!(out.text.contains("Permission denied"), "{}", out.text);
        // Opened by the profile, the same connect works.
        let open = registry(ws.path(), policy(SandboxMode::WorkspaceWrite, true));
        let out = run(&open, &connect_command(port)).await;
        assert!(!out.is_error && out.text.contains("connected"), "{}", out.text);
    }
}

#[tokio::test]
async fn a_closed_network_refuses_udp_and_tcp_sockets_and_an_open_one_allows_them() {
    let Support::Landlock { sockets, .. } = support() else { return };
    if !sockets {
        eprintln!("no seccomp here: the sandbox closes TCP only, and says so");
        return;
    }
    let ws = outside_tmp();
    let (udp, udp_port) = udp_listener();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_port = tcp.local_addr().unwrap().port();
    let r = registry(ws.path(), policy(SandboxMode::WorkspaceWrite, false));

    let out = run(&r, &udp_command(udp_port)).await;
    assert!(out.is_error && !out.text.contains("sent"), "{}", out.text);
    assert!(out.text.contains("Operation not permitted"), "the socket itself is refused: {}", out.text);
    assert!(out.text.contains("no socket opened, not even a Unix one"), "the model is told why: {}", out.text);
    assert!(!received(&udp), "a datagram got out of the sandbox");
    let out = run(&r, &tcp_command(tcp_port)).await;
    assert!(out.is_error && !out.text.contains("connected"), "{}", out.text);
    assert!(out.text.contains("Operation not permitted"), "{}", out.text);
    // Socket pairs (pipes between the command's own processes) and workspace writes still work.
    let out = run(&r, "python3 -c \"import socket; socket.socketpair(); print('pair')\" && echo x > ./in").await;
    assert!(!out.is_error && out.text.contains("pair") && ws.path().join("in").exists(), "{}", out.text);

    // `sandbox_network = true`: both go through.
    let open = registry(ws.path(), policy(SandboxMode::WorkspaceWrite, true));
    let out = run(&open, &udp_command(udp_port)).await;
    assert!(!out.is_error && out.text.contains("sent"), "{}", out.text);
    assert!(received(&udp), "the datagram did not arrive");
    let out = run(&open, &tcp_command(tcp_port)).await;
    assert!(!out.is_error && out.text.contains("connected"), "{}", out.text);
}

#[tokio::test]
async fn read_only_refuses_even_the_workspace_and_off_refuses_nothing() {
    if !support().available() {
        return;
    }
    let (ws, outside) = (outside_tmp(), outside_tmp());
    let r = registry(ws.path(), policy(SandboxMode::ReadOnly, false));
    let out = run(&r, "cat /etc/hostname >/dev/null && echo read-ok && echo x > ./inside").await;
    assert!(out.is_error && out.text.contains("read-ok") && out.text.contains("Permission denied"), "{}", out.text);
    assert!(!ws.path().join("inside").exists());

    // A user tool's own `sandbox = "off"` runs it unconfined, even under a read-only profile.
    let target = outside.path().join("written");
    let tool = palaver::config::UserTool {
        name: "touch_outside".into(),
        description: String::new(),
        command: vec!["sh".into(), "-c".into(), format!("echo x > {}", target.display())],
        parameters: None,
        approval: None,
        timeout_secs: None,
        sandbox: Some(SandboxMode::Off),
        env: None,
    };
    let mut r = r;
    assert!(r.add_user_tools(std::slice::from_ref(&tool)).is_empty());
    let out = r.execute("touch_outside", "{}", Duration::from_secs(20)).await;
    assert!(!out.is_error && target.exists(), "{}", out.text);

    // Without its own setting it runs in the profile's sandbox.
    std::fs::remove_file(&target).unwrap();
    assert!(r.add_user_tools(&[palaver::config::UserTool { sandbox: None, ..tool }]).is_empty());
    let out = r.execute("touch_outside", "{}", Duration::from_secs(20)).await;
    assert!(out.is_error && out.text.contains("read-only sandbox") && !target.exists(), "{}", out.text);
}

#[tokio::test]
async fn responses_shell_calls_run_in_the_sandbox() {
    if !support().available() {
        return;
    }
    let (ws, outside) = (outside_tmp(), outside_tmp());
    let r = registry(ws.path(), policy(SandboxMode::WorkspaceWrite, false));
    let target = outside.path().join("f");
    let action = json!({"commands": [format!("echo x > {}", target.display()), "echo y > ./in"]}).to_string();
    let out = palaver::tools::items::run_shell_in(r.workspace(), "shell", &action, Duration::from_secs(20), &[]).await;
    let runs: Value = serde_json::from_str(&out.text).unwrap();
    assert!(out.is_error);
    assert!(runs[0]["stderr"].as_str().unwrap().contains("Permission denied"), "{runs}");
    assert_eq!(runs[1]["outcome"]["exit_code"], 0, "{runs}");
    assert!(!target.exists() && ws.path().join("in").exists());
    // From a folder of the workspace, the whole workspace stays writable.
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    let action = json!({"commands": ["echo z > ../from-sub"], "working_directory": "sub"}).to_string();
    let out = palaver::tools::items::run_shell_in(r.workspace(), "shell", &action, Duration::from_secs(20), &[]).await;
    assert!(!out.is_error && ws.path().join("from-sub").exists(), "{}", out.text);
}

fn chat_calls(calls: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (i, (id, command)) in calls.iter().enumerate() {
        let args = json!({ "command": command }).to_string();
        let d = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"id":id,"type":"function",
            "function":{"name":"run_command","arguments":args}}]}}]});
        s.push_str(&format!("data: {d}\n\n"));
    }
    s.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    s
}

const CHAT_TEXT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// A headless run in `base/ws` with `HOME` = `base/home` and `TMPDIR` = `base/tmp` (so the
/// home directory is outside both places the sandbox lets a command write), `config` as
/// `config.toml` (`URL` replaced by the server's).
fn headless(server: &Server, base: &Path, config: &str) -> (Output, Value) {
    for d in ["ws", "home", "tmp", "palaver"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    std::fs::write(base.join("palaver/config.toml"), config.replace("URL", &server.base_url)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["-p", "go", "--json", "--yes"])
        .current_dir(base.join("ws"))
        .env("PALAVER_HOME", base.join("palaver"))
        .env("HOME", base.join("home"))
        .env("TMPDIR", base.join("tmp"))
        .env("K", "sk-x")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("null");
    (out.clone(), serde_json::from_str(last).unwrap_or(Value::Null))
}

const PROFILE: &str = "default_provider = \"p\"\n[providers.p]\nbase_url = \"URL\"\napi_key_env = \"K\"\n\
                       default_model = \"m\"\ntools = \"auto\"\n";

#[test]
fn a_scripted_model_cannot_write_home_or_connect_but_can_write_the_workspace() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (udp, udp_port) = udp_listener();
    let calls = [
        ("c1", "echo x > ~/outside-file".to_owned()),
        ("c2", "echo x > ./inside && cat inside".to_owned()),
        ("c3", connect_command(port)),
        ("c4", udp_command(udp_port)),
    ];
    let calls: Vec<(&str, &str)> = calls.iter().map(|(i, c)| (*i, c.as_str())).collect();
    let base = outside_tmp();
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
    let (out, r) = headless(&s, base.path(), PROFILE);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(r["text"], "done", "{stderr}");
    let got_out = received(&udp);
    let Support::Landlock { net, sockets, .. } = support() else {
        assert!(stderr.contains("WITHOUT a sandbox"), "palaver must say there is no sandbox: {stderr}");
        return;
    };
    assert!(!base.path().join("home/outside-file").exists(), "the write outside got through");
    assert_eq!(std::fs::read_to_string(base.path().join("ws/inside")).unwrap(), "x\n");
    // What the model got back, in the follow-up request.
    let follow: Value = serde_json::from_str(&s.requests()[1].body).unwrap();
    let result = |i: usize| follow["messages"][2 + i]["content"].as_str().unwrap_or_default().to_owned();
    assert!(result(0).contains("exit status: 2") && result(0).contains("Permission denied"), "{}", result(0));
    assert!(result(0).contains("workspace-write sandbox"), "{}", result(0));
    assert!(result(1).starts_with("exit status: 0\nstdout:\nx\n"), "{}", result(1));
    if sockets {
        // seccomp refuses the socket before Landlock sees a connect.
        assert!(result(2).contains("Operation not permitted") && !result(2).contains("connected"), "{}", result(2));
        assert!(result(3).contains("PermissionError") && result(3).contains("exit status: 1"), "{}", result(3));
        assert!(result(3).contains("no socket opened, not even a Unix one"), "{}", result(3));
        assert!(!got_out, "a datagram got out of the sandbox");
    } else if net {
        assert!(result(2).contains("connect: Permission denied") && !result(2).contains("connected"), "{}", result(2));
        assert!(stderr.contains("closes only TCP"), "{stderr}");
    } else {
        assert!(stderr.contains("cannot close the network"), "{stderr}");
    }

    // The profile decides: `sandbox = "off"` lets the same write through, and
    // `sandbox_network = true` the same connect.
    let base = outside_tmp();
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
    headless(&s, base.path(), &format!("{PROFILE}sandbox = \"off\"\n"));
    assert!(base.path().join("home/outside-file").exists());
    assert!(received(&udp), "without a sandbox, the datagram arrives");
    let base = outside_tmp();
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
    headless(&s, base.path(), &format!("{PROFILE}sandbox_network = true\n"));
    let follow: Value = serde_json::from_str(&s.requests()[1].body).unwrap();
    assert!(follow["messages"][4]["content"].as_str().unwrap().contains("connected"), "{follow}");
    assert!(follow["messages"][5]["content"].as_str().unwrap().contains("sent"), "{follow}");
    assert!(received(&udp), "with the network open, the datagram arrives");
    assert!(!base.path().join("home/outside-file").exists());
}

/// Refusals labelled: a `curl` to a listening port and a write outside the workspace, in a
/// script that goes on and exits 0, come back labelled "blocked by the sandbox (network
/// closed)" and "write refused by the sandbox" — for the model, and in the `--json` result.
#[test]
fn refused_connections_and_writes_are_labelled_even_when_the_command_exits_0() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let calls = [
        ("c1", format!("curl -sS http://127.0.0.1:{port}/ ; echo carried on")),
        ("c2", "echo x > ~/outside-file; echo carried on".to_owned()),
        ("c3", "echo fine > ./inside".to_owned()),
    ];
    let calls: Vec<(&str, &str)> = calls.iter().map(|(i, c)| (*i, c.as_str())).collect();
    let base = outside_tmp();
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
    let (out, r) = headless(&s, base.path(), PROFILE);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(r["text"], "done", "{stderr}");
    let Support::Landlock { sockets, .. } = support() else { return };
    let follow: Value = serde_json::from_str(&s.requests()[1].body).unwrap();
    let result = |i: usize| follow["messages"][2 + i]["content"].as_str().unwrap_or_default().to_owned();
    assert!(result(0).starts_with("exit status: 0"), "{}", result(0));
    if sockets && which("curl") {
        assert!(result(0).contains("[palaver: blocked by the sandbox (network closed)]"), "{}", result(0));
        let output = r["tool_calls"][0]["output"].as_str().unwrap_or_default();
        assert!(output.contains("blocked by the sandbox (network closed)"), "{r}");
    }
    assert!(result(1).starts_with("exit status: 0"), "{}", result(1));
    assert!(result(1).contains("[palaver: write refused by the sandbox]"), "{}", result(1));
    assert!(!result(1).contains("network closed"), "{}", result(1));
    assert!(!result(2).contains("[palaver:"), "{}", result(2));
    let (tools, _) = (r["tool_calls"].as_array().unwrap(), listener);
    assert_eq!(tools.len(), 3);
}

fn which(program: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {program}")]).output().is_ok_and(|o| o.status.success())
}
