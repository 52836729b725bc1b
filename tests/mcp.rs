//! The MCP client against a tiny Python MCP server (`tests/mcp_server/server.py`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use palaver::config::mcp_server::Transport;
use palaver::config::{McpConfig, McpServer};
use palaver::tools::mcp::McpClient;
use palaver::tools::{Approval, Registry, ToolSource};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn script() -> String {
    format!("{}/tests/mcp_server/server.py", env!("CARGO_MANIFEST_DIR"))
}

fn server(mode: &str) -> McpServer {
    let mut command = vec!["python3".to_owned(), script()];
    if !mode.is_empty() {
        command.push(mode.to_owned());
    }
    McpServer { command, trust_read_only: true, ..McpServer::default() }
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test]
async fn a_servers_read_only_hint_is_believed_only_when_the_user_says_so() {
    // The server's own word that a tool changes nothing is as untrusted as the server.
    let untrusted = McpServer { trust_read_only: false, ..server("") };
    let (client, specs) = McpClient::start("test", &untrusted).await.unwrap();
    let echo = specs.iter().find(|s| s.name == "echo").unwrap();
    assert_eq!(echo.approval, Approval::Ask, "readOnlyHint: true, but not trusted");
    client.close().await;
    let (client, specs) = McpClient::start("test", &server("")).await.unwrap();
    assert_eq!(specs.iter().find(|s| s.name == "echo").unwrap().approval, Approval::Never);
    client.close().await;
}

#[tokio::test]
async fn start_lists_all_tools_with_schemas_and_approval() {
    let (client, specs) = McpClient::start("test", &server("")).await.unwrap();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    // Both pages of tools/list.
    assert_eq!(names, ["echo", "write_note", "fail", "mixed", "structured", "env", "current_time", "sleep"]);
    let get = |n: &str| specs.iter().find(|s| s.name == n).unwrap();

    let echo = get("echo");
    assert_eq!(echo.description, "Echoes its arguments as JSON.");
    assert_eq!(echo.parameters["properties"]["x"], json!({"type": "integer"}));
    assert_eq!(echo.source, ToolSource::Mcp("test".into(), Transport::Stdio));
    assert_eq!(echo.approval, Approval::Never, "readOnlyHint: true");

    let write = get("write_note");
    assert_eq!(write.parameters["required"], json!(["note"]));
    assert_eq!(write.approval, Approval::Ask, "readOnlyHint: false");
    assert_eq!(get("fail").approval, Approval::Ask, "no annotations");

    let mixed = get("mixed");
    assert_eq!(mixed.description, "", "no description");
    assert_eq!(mixed.parameters, json!({"type": "object"}));
    assert!(format!("{client:?}").contains("test"));
}

#[tokio::test]
async fn a_call_returns_the_text() {
    let (client, _) = McpClient::start("test", &server("")).await.unwrap();
    let out = client.call("echo", args(json!({"x": 1, "text": "hi"}))).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.text, r#"{"text": "hi", "x": 1}"#);

    let out = client.call("write_note", args(json!({"note": "milk"}))).await;
    assert_eq!(out.text, "noted: milk");

    // Other block types are summarised; structured content is used when there is no text.
    let out = client.call("mixed", Map::new()).await;
    assert_eq!(out.text, "first\n[image: image/png, 8 bytes base64]\nsecond");
    let out = client.call("structured", Map::new()).await;
    assert!(!out.is_error);
    assert_eq!(serde_json::from_str::<Value>(&out.text).unwrap(), json!({"answer": 42}));
}

#[tokio::test]
async fn the_configured_environment_reaches_the_server() {
    let mut cfg = server("");
    cfg.env.insert("PALAVER_MCP_TEST".into(), "from config".into());
    let (client, _) = McpClient::start("test", &cfg).await.unwrap();
    assert_eq!(client.call("env", Map::new()).await.text, "from config");
}

#[tokio::test]
async fn an_error_result_is_an_error_output() {
    let (client, _) = McpClient::start("test", &server("")).await.unwrap();
    let out = client.call("fail", Map::new()).await;
    assert!(out.is_error);
    assert_eq!(out.text, "something went wrong");
}

#[tokio::test]
async fn calling_a_nonexistent_tool_is_an_error_output() {
    let (client, _) = McpClient::start("test", &server("")).await.unwrap();
    let out = client.call("nope", Map::new()).await;
    assert!(out.is_error);
    assert!(out.text.contains("`test`"), "{}", out.text);
    assert!(out.text.contains("Unknown tool: nope"), "{}", out.text);
    // The session survives it.
    assert!(!client.call("echo", Map::new()).await.is_error);
}

#[tokio::test]
async fn a_server_dying_during_a_call_is_an_error_output() {
    let (client, _) = McpClient::start("crashy", &server("--crash-on-call")).await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), client.call("echo", Map::new())).await.unwrap();
    assert!(out.is_error);
    assert!(out.text.contains("`crashy`"), "{}", out.text);
    // And the next call says so at once.
    let out = tokio::time::timeout(Duration::from_secs(5), client.call("echo", Map::new())).await.unwrap();
    assert!(out.is_error);
    assert!(out.text.contains("exited"), "{}", out.text);
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_an_error() {
    let cfg = McpServer { command: vec!["palaver-nonexistent-binary".into(), "--flag".into()], ..McpServer::default() };
    let err = McpClient::start("ghost", &cfg).await.unwrap_err();
    assert!(err.contains("`palaver-nonexistent-binary`"), "{err}");
    assert!(err.contains("no such command (is it installed, and on PATH?)"), "{err}");
    assert!(!err.contains("os error"), "{err}");

    let empty = McpServer { command: vec![], ..McpServer::default() };
    let err = McpClient::start("empty", &empty).await.unwrap_err();
    assert!(err.contains("empty"), "{err}");
}

#[tokio::test]
async fn a_server_that_exits_at_once_is_an_error_within_the_timeout() {
    let started = Instant::now();
    let err = McpClient::start("quitter", &server("--exit")).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert!(err.contains("`python3`"), "{err}");
    assert!(err.contains("exit status: 3"), "{err}");
    assert!(err.contains("fatal: cannot start"), "the server's stderr explains it: {err}");
}

#[tokio::test]
async fn a_program_that_is_not_an_mcp_server_is_an_error() {
    let cfg = McpServer { command: vec!["true".into()], ..McpServer::default() };
    let err = McpClient::start("true", &cfg).await.unwrap_err();
    assert!(err.contains("`true`"), "{err}");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_client_kills_the_server() {
    let (client, _) = McpClient::start("test", &server("")).await.unwrap();
    let dbg = format!("{client:?}");
    let pid: u32 = dbg.split("pid: Some(").nth(1).unwrap().split(')').next().unwrap().parse().unwrap();
    let proc_dir = format!("/proc/{pid}");
    assert!(std::path::Path::new(&proc_dir).exists());
    drop(client);
    // Killed and reaped (tokio reaps orphaned children in the background).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive = std::fs::read_to_string(format!("{proc_dir}/stat"))
            .map(|s| s.split_whitespace().nth(2).is_none_or(|state| state != "Z"))
            .unwrap_or(false);
        if !alive {
            break;
        }
        assert!(Instant::now() < deadline, "the server {pid} is still running");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_registry_adds_mcp_tools_and_runs_them() {
    let mut servers = BTreeMap::new();
    servers.insert("test".to_owned(), server(""));
    let mut r = Registry::builtins();
    let builtin_count = r.specs().len();
    let notices = r.add_mcp_servers(&McpConfig { servers }).await;
    assert!(notices.is_empty(), "{notices:?}");

    let echo = r.get("echo").expect("echo is registered");
    assert_eq!(echo.source, ToolSource::Mcp("test".into(), Transport::Stdio));
    assert_eq!(echo.approval, Approval::Never);
    assert_eq!(r.specs().len(), builtin_count + 8);
    // A clash with a built-in keeps the built-in and prefixes the server's tool.
    assert_eq!(r.get("current_time").unwrap().source, ToolSource::Builtin);
    assert_eq!(r.get("test__current_time").unwrap().source, ToolSource::Mcp("test".into(), Transport::Stdio));

    let t = Duration::from_secs(5);
    let out = r.execute("echo", "{\"x\":1}", t).await;
    assert_eq!(out, palaver::tools::ToolOutput::ok(r#"{"x": 1}"#));
    assert_eq!(r.execute("test__current_time", "", t).await.text, "tea time");
    assert!(r.execute("fail", "{}", t).await.is_error);

    // A slow tool is cut off by the registry's timeout and the session stays usable.
    let out = r.execute("sleep", "{\"seconds\":1.5}", Duration::from_millis(300)).await;
    assert!(out.is_error && out.text.contains("timed out"), "{out:?}");
    assert!(!r.execute("echo", "{}", t).await.is_error);
}

#[tokio::test]
async fn a_failing_server_is_a_notice_and_the_other_tools_stay() {
    let mut servers = BTreeMap::new();
    servers.insert("broken".to_owned(), server("--exit"));
    servers.insert("good".to_owned(), server(""));
    servers.insert(
        "missing".to_owned(),
        McpServer { command: vec!["palaver-no-such-server".into()], ..McpServer::default() },
    );
    let mut r = Registry::builtins();
    let notices = r.add_mcp_servers(&McpConfig { servers }).await;
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices.iter().any(|n| n.contains("`broken`") && n.contains("exit status: 3")), "{notices:?}");
    assert!(notices.iter().any(|n| n.contains("`missing`") && n.contains("no such command")), "{notices:?}");
    assert!(r.get("read_file").is_some(), "built-ins stay");
    assert_eq!(r.get("echo").unwrap().source, ToolSource::Mcp("good".into(), Transport::Stdio));
    assert!(!r.execute("echo", "{\"x\":1}", Duration::from_secs(5)).await.is_error);
}

#[tokio::test]
async fn a_tool_result_over_the_message_limit_is_refused_at_once_with_that_reason() {
    let (client, _) = McpClient::start("test", &server("")).await.unwrap();
    let started = Instant::now();
    let out = client.call("huge", Map::new()).await;
    assert!(out.is_error, "{out:?}");
    let text = &out.text;
    assert!(text.contains("MCP_MESSAGE_BYTES") && text.contains("16.0 MB") && text.contains("`huge`"), "{text}");
    assert!(!text.contains("timed out"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    // The connection is closed: later calls say why, without waiting.
    let again = client.call("echo", Map::new()).await;
    assert!(again.is_error && again.text.contains("MCP_MESSAGE_BYTES"), "{again:?}");
}

#[tokio::test]
async fn a_tool_list_over_its_limits_is_refused_at_once_with_that_reason() {
    let started = Instant::now();
    let e = McpClient::start("test", &server("--endless-tools")).await.unwrap_err();
    assert!(e.contains("more than 1000 tools") && e.contains("MCP_TOOLS"), "{e}");
    let e = McpClient::start("test", &server("--huge-list")).await.unwrap_err();
    assert!(e.contains("MCP_MESSAGE_BYTES"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_server_s_own_limits_replace_the_defaults() {
    let few = McpServer { max_tools: Some(5), ..server("") };
    let e = McpClient::start("few", &few).await.unwrap_err();
    assert!(e.contains("more than 5 tools") && e.contains("`max_tools`"), "{e}");
    // A small message limit: the listing fits, an 8 KB result does not, and says so at once.
    let small = McpServer { max_message_bytes: Some(4096), ..server("") };
    let (client, _) = McpClient::start("small", &small).await.unwrap();
    let started = Instant::now();
    let out = client.call("echo", args(json!({"text": "x".repeat(8000)}))).await;
    assert!(out.is_error && out.text.contains("larger than 4.0 KB"), "{out:?}");
    assert!(out.text.contains("`max_message_bytes`"), "how to raise it is named: {out:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // Raised, the same result comes through.
    let roomy = McpServer { max_message_bytes: Some(16 * 1024), ..server("") };
    let (client, _) = McpClient::start("roomy", &roomy).await.unwrap();
    let out = client.call("echo", args(json!({"text": "x".repeat(8000)}))).await;
    assert!(!out.is_error && out.text.contains(&"x".repeat(8000)), "{out:?}");
}

#[tokio::test]
async fn images_an_mcp_tool_returns_count_toward_the_reply_s_image_limits() {
    use palaver::api::limits::Limits;
    use palaver::engine::images::reply_image_budget;
    use palaver::engine::message::{Message, ToolCall};
    use palaver::engine::tool_loop::run_calls_until;
    let mut servers = BTreeMap::new();
    servers.insert("pics".to_owned(), server("--images"));
    let mut r = Registry::builtins();
    assert!(r.add_mcp_servers(&McpConfig { servers }).await.is_empty());
    let call = |id: &str, count: u32| ToolCall {
        id: id.into(),
        name: "images".into(),
        arguments: json!({ "count": count }).to_string(),
        ..ToolCall::default()
    };
    // The reply generated one image (96 bytes of base64, as each PNG the server sends).
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let mut reply = Message::assistant_pending();
    reply.items.push(json!({"type": "image_generation_call", "id": "ig", "result": png}));
    let run = |limits: Limits, calls: Vec<ToolCall>| {
        let (r, reply) = (&r, &reply);
        async move {
            let mut calls = calls;
            let mut budget = reply_image_budget(limits, reply, None);
            let pending = std::future::pending();
            run_calls_until(r, &mut calls, Duration::from_secs(10), usize::MAX, &mut budget, pending).await;
            calls
        }
    };
    // images_per_reply = 4: the generated one and three of the four returned are kept.
    let calls = run(Limits { images_per_reply: 4, ..Limits::default() }, vec![call("a", 2), call("b", 2)]).await;
    assert_eq!(calls.iter().map(|c| c.images.len()).sum::<usize>(), 3);
    let outputs: Vec<&str> = calls.iter().map(|c| c.output.as_deref().unwrap_or_default()).collect();
    let said = outputs.iter().filter(|o| o.contains("image dropped: this reply passed the limit images_per_reply = 4"));
    assert_eq!(said.count(), 1, "{outputs:?}");
    // item_payload_bytes: the generated image and one returned fill 192 bytes; the next is dropped.
    let calls = run(Limits { item_payload_bytes: 192, ..Limits::default() }, vec![call("c", 2)]).await;
    assert_eq!(calls[0].images.len(), 1);
    let out = calls[0].output.as_deref().unwrap_or_default();
    assert!(out.contains("[image 2 (image/png): image dropped") && out.contains("item_payload_bytes = 192"), "{out}");
}

#[tokio::test]
async fn a_server_that_died_is_no_longer_offered_and_the_others_are() {
    let cfg = palaver::config::McpConfig {
        servers: [("crashy".to_owned(), server("--crash-on-call")), ("steady".to_owned(), server(""))].into(),
    };
    let mut registry = palaver::tools::Registry::builtins();
    assert!(registry.add_mcp_servers(&cfg).await.is_empty());
    let offered = |r: &palaver::tools::Registry| -> Vec<String> {
        r.definitions().iter().map(|d| d["name"].as_str().unwrap().to_owned()).collect()
    };
    // The first server keeps the tools' own names; the second one's are prefixed.
    assert!(offered(&registry).contains(&"write_note".to_owned()), "{:?}", offered(&registry));
    let out = registry.execute("write_note", r#"{"note":"x"}"#, Duration::from_secs(10)).await;
    assert!(out.is_error && out.text.contains("`crashy`"), "{out:?}");
    let now = offered(&registry);
    assert!(!now.contains(&"write_note".to_owned()) && !now.contains(&"echo".to_owned()), "{now:?}");
    assert!(now.contains(&"steady__write_note".to_owned()) && now.contains(&"read_file".to_owned()), "{now:?}");
}

#[tokio::test]
async fn tab_after_resource_cycles_the_servers_resource_uris() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use palaver::app::{Msg, State, TargetInfo};
    fn press(s: &mut State, code: KeyCode) {
        s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    }
    let cfg = McpConfig { servers: [("files".to_owned(), server(""))].into() };
    let mut registry = Registry::builtins();
    assert!(registry.add_mcp_servers(&cfg).await.is_empty());
    let theme = palaver::ui::theme::Theme::load("dark", None, true).unwrap();
    let target = TargetInfo::new("demo", "demo", palaver::api::Api::Chat);
    let settings = palaver::engine::target::TurnSettings::default();
    let mut s = State::new(target, settings, palaver::config::Config::default(), theme, "dark");
    s.tools.set = palaver::app::tools::ToolSet(std::sync::Arc::new(registry));
    for c in "/resource test://".chars() {
        press(&mut s, KeyCode::Char(c));
    }
    press(&mut s, KeyCode::Tab);
    assert_eq!(s.composer.text(), "/resource test://notes.txt");
    press(&mut s, KeyCode::Tab);
    assert_eq!(s.composer.text(), "/resource test://dot.png");
    press(&mut s, KeyCode::Tab);
    assert_eq!(s.composer.text(), "/resource test://notes.txt", "back to the first");
    // Typing narrows it.
    for _ in 0.."notes.txt".len() {
        press(&mut s, KeyCode::Backspace);
    }
    press(&mut s, KeyCode::Char('d'));
    press(&mut s, KeyCode::Tab);
    assert_eq!(s.composer.text(), "/resource test://dot.png");
    press(&mut s, KeyCode::Tab);
    assert_eq!(s.composer.text(), "/resource test://dot.png", "the only one that fits");
}
