//! The one spawn function, end to end (issue 39 §2): a scripted model calls `run_command`
//! headless under `--tools auto --yes`, and what the commands try is checked from outside:
//! `env` shows no key of palaver's, a `setsid` or double-forked escape is gone when palaver
//! exits, `.git/hooks` and `.git/config` stay as they were, and no Unix socket outside the
//! sandbox (a pathname one, an abstract one) is reached while `socketpair` still works.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use palaver::tools::sandbox::{Support, support};
use scripted::{Reply, Server};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn chat_calls(calls: &[String]) -> String {
    let mut s = String::new();
    for (i, command) in calls.iter().enumerate() {
        let args = json!({ "command": command }).to_string();
        let d = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"id":format!("c{i}"),"type":"function",
            "function":{"name":"run_command","arguments":args}}]}}]});
        s.push_str(&format!("data: {d}\n\n"));
    }
    s.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    s
}

const CHAT_TEXT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// A directory outside the temporary directory (which the sandbox lets commands write).
fn outside_tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Whether a live process has `needle` in its command line.
fn running(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(needle) && !stat.contains(") Z") {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

/// The tool results the model got, in the follow-up request.
fn results(server: &Server, n: usize) -> Vec<String> {
    let follow: Value = serde_json::from_str(&server.requests()[1].body).unwrap();
    (0..n).map(|i| follow["messages"][2 + i]["content"].as_str().unwrap_or_default().to_owned()).collect()
}

fn headless(server: &Server, base: &Path) -> std::process::Output {
    for d in ["ws/.git/hooks", "home", "palaver"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    std::fs::write(base.join("ws/.git/config"), "[core]\n").unwrap();
    let config = "default_provider = \"p\"\n[providers.p]\nbase_url = \"URL\"\napi_key_env = \"K_FOR_TEST\"\n\
                  default_model = \"m\"\ntools = \"auto\"\n";
    std::fs::write(base.join("palaver/config.toml"), config.replace("URL", &server.base_url)).unwrap();
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["-p", "go", "--json", "--yes", "--tools", "auto"])
        .current_dir(base.join("ws"))
        .env("PALAVER_HOME", base.join("palaver"))
        .env("HOME", base.join("home"))
        .env("K_FOR_TEST", "sk-configured-key-value")
        .env("OPENAI_API_KEY", "sk-openai-key-value")
        .env("FOO_TOKEN", "foo-token-value")
        .env("PLAIN_SETTING", "plain-value")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn commands_get_no_secret_leave_nothing_behind_and_plant_nothing() {
    let base = outside_tmp();
    let tag = std::process::id();
    let calls = vec![
        "env".to_owned(),
        // The pause lets both escape before the command ends (else its group's end takes them).
        format!("setsid sleep {tag}1 > /dev/null 2>&1 & (setsid sh -c 'sleep {tag}2 & ' &) ; sleep 0.5; echo started"),
        "printf '#!/bin/sh\\necho planted\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
         echo '[core] hooksPath = /tmp' >> .git/config; echo tried"
            .to_owned(),
    ];
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
    let out = headless(&s, base.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = results(&s, calls.len());
    for secret in ["sk-configured-key-value", "sk-openai-key-value", "foo-token-value"] {
        assert!(!r[0].contains(secret), "`env` showed a secret: {}", r[0]);
    }
    assert!(r[0].contains("PLAIN_SETTING=plain-value"), "the rest of the environment is passed on: {}", r[0]);
    assert!(r[1].contains("started"), "{}", r[1]);
    std::thread::sleep(Duration::from_millis(200));
    for n in 1..=2 {
        assert!(running(&format!("sleep {tag}{n}")).is_empty(), "the escaped sleep {tag}{n} outlived palaver");
    }
    if support().available() {
        let ws = base.path().join("ws");
        assert!(!ws.join(".git/hooks/pre-commit").exists(), "a hook was planted: {}", r[2]);
        assert_eq!(std::fs::read_to_string(ws.join(".git/config")).unwrap(), "[core]\n", "{}", r[2]);
        assert!(
            r[2].contains("Read-only file system") && r[2].contains("not .git/hooks"),
            "the model is told why: {}",
            r[2]
        );
    }
}

#[test]
fn no_unix_socket_outside_the_sandbox_is_reached_but_socketpairs_work() {
    let Support::Landlock { sockets: true, .. } = support() else {
        eprintln!("no seccomp sandbox here: {:?}", support());
        return;
    };
    use std::os::linux::net::SocketAddrExt;
    let base = outside_tmp();
    let path = base.path().join("outside.sock");
    let pathname = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let name = format!("palaver-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let abstract_ = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    pathname.set_nonblocking(true).unwrap();
    abstract_.set_nonblocking(true).unwrap();
    let py = |target: &str| {
        format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect({target}); print('reached')\""
        )
    };
    let calls = vec![
        py(&format!("'{}'", path.display())),
        py(&format!("'\\\\0{name}'")),
        "python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'x'); print('pair', b.recv(1))\"".to_owned(),
    ];
    let s = Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(CHAT_TEXT)]);
    let out = headless(&s, base.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = results(&s, calls.len());
    for (i, what) in [(0, "a pathname Unix socket"), (1, "an abstract Unix socket")] {
        assert!(!r[i].contains("reached") && r[i].contains("PermissionError"), "{what} was reached: {}", r[i]);
    }
    assert!(pathname.accept().is_err() && abstract_.accept().is_err(), "a connection arrived");
    assert!(r[2].contains("pair b'x'"), "socketpair must work: {}", r[2]);
    assert!(r[0].contains("not even a Unix one"), "the model is told what is closed: {}", r[0]);
}

/// Without root, the helper makes the same paths read-only inside a user namespace that maps the
/// user to itself (run here as `nobody` through `setpriv`, when this test runs as root).
#[test]
fn without_root_the_paths_stay_read_only_in_a_user_namespace() {
    let setpriv = Path::new("/usr/bin/setpriv");
    let root = std::fs::read_to_string("/proc/self/status").unwrap().lines().any(|l| l.starts_with("Uid:\t0\t"));
    if !root || !setpriv.exists() || !support().available() {
        eprintln!("needs root and setpriv to become nobody");
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let ws = base.path().join("ws");
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    for p in [base.path(), ws.as_path(), &ws.join(".git"), &ws.join(".git/hooks"), &ws.join(".git/config")] {
        Command::new("chmod").arg("777").arg(p).status().unwrap();
    }
    let as_nobody = |args: &[&str]| {
        Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_palaver"), "__sandbox-exec"])
            .args(args)
            .current_dir(&ws)
            .output()
            .unwrap()
    };
    if !as_nobody(&["--probe-protect"]).status.success() {
        eprintln!("no user namespaces for nobody here: palaver puts the paths back after instead");
        return;
    }
    let (w, hooks, config) = (ws.to_str().unwrap(), ws.join(".git/hooks"), ws.join(".git/config"));
    let out = as_nobody(&[
        "workspace-write",
        "closed",
        "/dev/null",
        w,
        "--protect",
        hooks.to_str().unwrap(),
        config.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "echo x > .git/hooks/pre-commit; echo y >> .git/config; echo z > inside; id -u",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Read-only file system"), "{stderr}");
    assert!(!hooks.join("pre-commit").exists() && std::fs::read_to_string(&config).unwrap() == "[core]\n");
    assert_eq!(std::fs::read_to_string(ws.join("inside")).unwrap(), "z\n", "the workspace stays writable");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "65534", "the user is mapped to itself");
}

/// `[tool_env]` reaches `run_command`, and a user tool's own `env` table replaces it.
#[tokio::test]
async fn tool_env_and_a_tools_own_env_decide_what_commands_get() {
    use palaver::sys::spawn::{EnvPolicy, Inherit};
    let dir = tempfile::tempdir().unwrap();
    let mut ws = palaver::tools::Workspace::new(dir.path(), Vec::new()).unwrap();
    ws.set_tool_env(EnvPolicy {
        inherit: Inherit::None,
        include: vec!["PATH".into()],
        set: [("FROM_TOOL_ENV".to_owned(), "1".to_owned())].into(),
        ..EnvPolicy::default()
    });
    let mut r = palaver::tools::Registry::builtins();
    r.set_workspace(ws);
    let out = r.execute("run_command", &json!({"command": "env"}).to_string(), Duration::from_secs(20)).await;
    assert!(out.text.contains("FROM_TOOL_ENV=1") && out.text.contains("PATH="), "{}", out.text);
    assert!(!out.text.contains("HOME="), "inherit = none passed HOME: {}", out.text);
    let tool = palaver::config::UserTool {
        name: "show_env".into(),
        command: vec!["env".into()],
        env: Some(EnvPolicy { set: [("OWN".to_owned(), "2".to_owned())].into(), ..EnvPolicy::default() }),
        ..Default::default()
    };
    assert!(r.add_user_tools(std::slice::from_ref(&tool)).is_empty());
    let out = r.execute("show_env", "{}", Duration::from_secs(20)).await;
    assert!(out.text.contains("OWN=2") && !out.text.contains("FROM_TOOL_ENV"), "{}", out.text);
}

/// A daemon palaver's own helper left before a command started (a gpg-agent from `api_key_cmd`)
/// is no descendant of that command: the command's end leaves it alone. The helper waits a
/// moment before it answers, as a real daemon is detached before its starter returns: on a busy
/// machine `setsid` may not yet have run when the helper's group is ended.
#[test]
fn a_daemon_started_before_the_command_is_not_swept() {
    let base = outside_tmp();
    let tag = std::process::id();
    for d in ["ws", "palaver"] {
        std::fs::create_dir_all(base.path().join(d)).unwrap();
    }
    let s = Server::start(vec![
        Reply::sse(&chat_calls(&[format!("setsid sleep {tag}9 > /dev/null 2>&1 & sleep 0.5; echo bg")])),
        Reply::sse(CHAT_TEXT),
    ]);
    let config = format!(
        "default_provider = \"p\"\n[providers.p]\nbase_url = \"{}\"\n\
         api_key_cmd = \"setsid sleep {tag}8 > /dev/null 2>&1 & sleep 1; echo sk-from-cmd\"\ndefault_model = \"m\"\ntools = \"auto\"\n",
        s.base_url
    );
    std::fs::write(base.path().join("palaver/config.toml"), config).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["-p", "go", "--json", "--yes", "--tools", "auto"])
        .current_dir(base.path().join("ws"))
        .env("PALAVER_HOME", base.path().join("palaver"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let daemon = running(&format!("sleep {tag}8"));
    for pid in &daemon {
        let _ = Command::new("kill").arg("-9").arg(pid).status();
    }
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(running(&format!("sleep {tag}9")).is_empty(), "the command's escape survived");
    assert_eq!(daemon.len(), 1, "the helper's daemon, started before the command, was ended");
}
