//! Issue 40's small truths, headless: every hint names a knob that exists where it is shown
//! (the flags of the command line, the commands of the chat screen), a refusal that names a
//! request parameter names its flag, a short schema without commas is told to use them, and a
//! cancel before any reply arrived does not claim to keep a partial reply.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;
mod scripted;

use clap::CommandFactory;
use common::tmux::{Tmux, tmux_available};
use palaver::api::errors::{Face, every_hint};
use scripted::{Reply, Server};
use std::io::Read as _;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn palaver(args: &[&str]) -> Command {
    common::cli::palaver(&tempfile::tempdir().unwrap().keep(), args)
}

fn run(args: &[&str]) -> Output {
    palaver(args).output().unwrap()
}

/// Every long flag of the command line, its subcommands' included.
fn flags(cmd: &clap::Command, out: &mut Vec<String>) {
    out.extend(cmd.get_arguments().filter_map(|a| a.get_long()).map(|l| format!("--{l}")));
    for sub in cmd.get_subcommands() {
        flags(sub, out);
    }
}

/// The `--flags` and `/commands` a hint names.
fn knobs(hint: &str, prefix: &str) -> Vec<String> {
    hint.split(|c: char| c.is_whitespace() || "(),;:".contains(c))
        .filter(|w| w.starts_with(prefix) && w.len() > prefix.len())
        .filter(|w| w[prefix.len()..].starts_with(|c: char| c.is_ascii_lowercase()))
        .map(|w| w.trim_end_matches(['.', '\'', '`']).to_owned())
        .collect()
}

#[test]
fn every_hint_names_a_knob_that_exists_where_it_is_shown() {
    let mut known = Vec::new();
    flags(&palaver::cli::args::Cli::command(), &mut known);
    known.push("--help".to_owned());
    let commands: Vec<&str> = palaver::app::commands::COMMANDS.iter().map(|(c, _, _)| *c).collect();
    for hint in every_hint(Face::Headless) {
        assert!(knobs(&hint, "/").is_empty(), "a headless hint names a slash command: {hint}");
        for flag in knobs(&hint, "--") {
            assert!(known.contains(&flag), "{flag} is not a flag of palaver: {hint}");
        }
    }
    for hint in every_hint(Face::Screen) {
        for cmd in knobs(&hint, "/") {
            assert!(commands.contains(&cmd.as_str()), "{cmd} is not a command of the chat screen: {hint}");
        }
        // A flag on the chat screen only with the words that say it takes a new start.
        for flag in knobs(&hint, "--") {
            assert!(known.contains(&flag) && hint.contains("start palaver again"), "{flag} on the chat screen: {hint}");
        }
    }
}

#[test]
fn llama_cpps_logprobs_refusal_names_the_logprobs_flag() {
    let body = r#"{"error":{"code":400,"message":"top_logprobs requires logprobs to be set to true","type":"invalid_request_error"}}"#;
    let s = Server::start(vec![Reply::json(400, body)]);
    let out = run(&["--base-url", &s.base_url, "--api", "responses", "--logprobs", "3", "-p", "hi"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("(--logprobs)"), "{err}");
    assert!(!err.contains("/set"), "no chat-screen command headless: {err}");
}

#[test]
fn on_the_chat_screen_the_same_refusal_names_the_slash_command() {
    if !tmux_available() {
        return;
    }
    let body = r#"{"error":{"code":400,"message":"top_logprobs requires logprobs to be set to true","type":"invalid_request_error"}}"#;
    let s = Server::start(vec![Reply::json(400, body)]);
    let t = Tmux::start(&format!("--base-url {} -m m --api responses --logprobs 3", s.base_url));
    t.wait_ready();
    t.send("hi");
    let screen = t.wait_for("the refusal", |s| s.contains("what it names"));
    assert!(screen.contains("(/logprobs)") && !screen.contains("--logprobs"), "{screen}");
    t.quit();
}

#[test]
fn a_short_schema_without_commas_is_told_to_use_them() {
    let out = run(&["--demo", "--schema", "name age int", "-p", "hi"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("separate fields with commas (`name, age int`)"), "{err}");
    assert!(!err.contains("`ageint`"), "{err}");
    // What it accepted, it still accepts.
    let out = run(&["--demo", "--schema", "name, age int", "-p", "hi"]);
    assert_ne!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_cancel_before_any_reply_does_not_claim_to_keep_one() {
    // A server that answers nothing for a long while: Ctrl+C comes before any text.
    let s = Server::start(vec![Reply::sse("data: [DONE]\n\n").pause_first(Duration::from_secs(20))]);
    let mut child = palaver(&["--base-url", &s.base_url, "-m", "m", "-p", "hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the request is out, so the turn (not the start-up) hears the signal.
    for _ in 0..100 {
        if !s.requests().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!s.requests().is_empty(), "the request went out");
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("nothing had arrived, so there is nothing to keep"), "{stderr}");
    assert!(!stderr.contains("what arrived is kept"), "{stderr}");
}

#[test]
fn a_bare_compare_model_that_is_another_providers_says_so_once() {
    const OK: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let s = Server::start_fn(|_| Reply::sse(OK));
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), format!("[providers.local]\nbase_url = \"{}\"\n", s.base_url))
        .unwrap();
    let out = palaver(&["compare", "-m", "my-model", "-m", "mistral-small-latest", "-p", "hi"])
        .env("PALAVER_HOME", home.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("(the default provider)")).collect();
    assert_eq!(said.len(), 1, "once, for the model palaver knows elsewhere: {err}");
    assert!(said[0].contains("`mistral-small-latest` goes to local") && said[0].contains("mistral's model"), "{err}");
    assert!(said[0].contains("add [providers.mistral] to config.toml"), "{err}");
    // It still went where it went: both columns asked the configured server.
    assert_eq!(s.requests().len(), 2);
}
