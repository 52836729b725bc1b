//! End to end: the real binary in tmux (its own socket per test, its own `PALAVER_HOME`, no API
//! key, so it talks to the embedded demo provider), driven with `send-keys` and read with
//! `capture-pane`, polling until the screen shows what a user would wait for. Skips (and says
//! so) when tmux is not installed.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

#[test]
fn send_a_prompt_and_see_the_answer_and_usage() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("");
    t.wait_ready();
    let s = t.screen();
    assert!(s.contains("demo · demo · chat"), "{s}");
    t.type_text("hello from tmux");
    t.keys(&["Enter"]);
    let s = t.wait_for("the finished answer", |s| s.contains("Ask another question") && s.contains("✓ done"));
    assert!(s.contains("hello from tmux"), "{s}");
    assert!(s.contains("this reply"), "{s}");
    assert!(s.contains("completion") && s.contains("reasoning") && s.contains("total"), "usage panel: {s}");
    assert!(!s.contains("provider sent no usage"), "{s}");
    // A second turn goes out with the first in its context (the demo counts turns).
    t.type_text("again");
    t.keys(&["Enter"]);
    t.wait_for("the second answer", |s| s.contains("Turn 2"));
}

#[test]
fn esc_cancels_a_slow_reply_and_keeps_it() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("");
    t.wait_ready();
    t.type_text("/model demo-slow");
    t.keys(&["Enter"]);
    t.wait_for("the model switch", |s| s.contains("model: demo-slow"));
    t.type_text("tell me about streaming");
    t.keys(&["Enter"]);
    t.wait_for("streaming text", |s| s.contains("● streaming") && s.contains("A language model"));
    t.keys(&["Escape"]);
    let s = t.wait_for("the cancelled mark", |s| s.contains("cancelled — the partial reply is kept"));
    assert!(s.contains("■ cancelled"), "status bar: {s}");
    // The stream really stopped: nothing more arrives.
    std::thread::sleep(Duration::from_millis(1500));
    let later = t.screen();
    let transcript =
        |s: &str| s.lines().take(34).map(|l| l.chars().take(80).collect::<String>()).collect::<Vec<_>>().join("\n");
    assert_eq!(transcript(&s), transcript(&later), "the reply kept growing after Esc");
}

#[test]
fn resize_mid_stream_keeps_the_text() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("--model demo-slow");
    t.wait_ready();
    t.type_text("stream slowly");
    t.keys(&["Enter"]);
    t.wait_for("streaming text", |s| s.contains("● streaming") && s.contains("A language model"));
    t.tmux(&["resize-window", "-t", "main", "-x", "64", "-y", "24"]);
    t.wait_for("the narrow layout", |s| s.lines().all(|l| l.chars().count() <= 64) && s.contains("streaming"));
    std::thread::sleep(Duration::from_millis(500));
    t.tmux(&["resize-window", "-t", "main", "-x", "120", "-y", "40"]);
    t.wait_for("the wide layout again", |s| s.lines().any(|l| l.chars().count() > 100));
    t.keys(&["Escape"]);
    t.keys(&["C-Home"]);
    let s = t.wait_for("the whole partial reply", |s| s.contains("cancelled — the partial reply is kept"));
    assert!(s.contains("Why answers stream"), "{s}");
    assert!(s.contains("A language model writes one token at a time"), "{s}");
    assert!(s.contains("stream slowly"), "{s}");
}

#[test]
fn ctrl_q_quits_and_restores_the_shell() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("");
    t.wait_ready();
    assert_eq!(t.display("#{alternate_on}"), "1", "palaver runs on the alternate screen");
    t.type_text("a draft that is not sent");
    t.keys(&["C-q"]);
    let s = t.wait_for("the shell after palaver", |s| s.contains("EXITED-"));
    assert!(s.contains("EXITED-0"), "exit status: {s}");
    assert!(!s.contains("Type a message"), "the chat screen is gone: {s}");
    assert_eq!(t.display("#{alternate_on}"), "0", "the alternate screen was left");
    // Raw mode is off again: the shell's terminal echoes and cooks input.
    t.type_text("echo typed-after");
    t.keys(&["Enter"]);
}

/// A one-route HTTP server answering every POST with one SSE body, then closing.
fn scripted_server(body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
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
    format!("http://{addr}/v1")
}

#[test]
fn escape_sequences_in_a_reply_do_not_reach_the_terminal() {
    if !tmux_available() {
        return;
    }
    let chunk = |content: &str, finish: Option<&str>| {
        let v = serde_json::json!({"id":"x","object":"chat.completion.chunk","model":"evil","choices":[
            {"index":0,"delta":{"content":content},"finish_reason":finish}]});
        format!("data: {v}\n\n")
    };
    let body = [
        chunk("Before \u{1b}]0;PWNED\u{7} middle ", None),
        chunk("\u{1b}[2J\u{1b}[H after the clear\n", None),
        chunk("\u{9b}31mC1 red\u{1b}[0m done", Some("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let url = scripted_server(body);
    let t = Tmux::start(&format!("--base-url {url} --model evil"));
    t.wait_ready();
    let title_before = t.display("#{pane_title}");
    t.type_text("say something nasty");
    t.keys(&["Enter"]);
    let s = t.wait_for("the reply", |s| s.contains("done") && s.contains("✓ done"));
    assert!(s.contains("Before"), "{s}");
    assert!(s.contains("after the clear"), "{s}");
    assert!(s.contains("say something nasty"), "the screen was not cleared: {s}");
    let title = t.display("#{pane_title}");
    assert!(!title.contains("PWNED"), "the reply retitled the pane: {title}");
    assert_eq!(title, title_before);
}
