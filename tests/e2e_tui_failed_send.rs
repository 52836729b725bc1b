//! End to end in tmux: a send the server refuses for good (llama.cpp's real answer to an image
//! for a model without vision, a 500 that is not retried) gives the draft back as the user left
//! it: the big paste as its chip, the attachment chip, and the error with what to do. Skips when
//! tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;
mod scripted;

use common::tmux::{Tmux, tmux_available};
use scripted::{Reply, Server};

fn png() -> Vec<u8> {
    let mut out = Vec::new();
    image::RgbImage::new(8, 8).write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
    out
}

#[test]
fn a_refused_send_gives_back_the_draft_with_its_chips() {
    if !tmux_available() {
        return;
    }
    let body = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sse/llamacpp_error_no_vision.json"),
    )
    .unwrap();
    // The second answer is there only if palaver retried, which it must not.
    let server = Server::start(vec![Reply::json(500, body.trim()), Reply::json(500, body.trim())]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.png"), png()).unwrap();
    let t = Tmux::launch(&format!("--base-url {} --model m", server.base_url)).keep_cwd(dir).start();
    t.wait_ready();
    t.send("/attach ./a.png");
    t.wait_for("the attachment chip", |s| s.contains("▣ a.png 8×8"));
    let paste = tempfile::NamedTempFile::new().unwrap();
    let text: String = (0..300).map(|i| format!("log line {i:04}\n")).collect();
    std::fs::write(paste.path(), &text).unwrap();
    t.type_text("look at ");
    t.tmux(&["load-buffer", &paste.path().display().to_string()]);
    t.tmux(&["paste-buffer", "-p", "-t", "main"]);
    t.wait_for("the paste chip", |s| s.contains("[pasted 300 lines"));
    t.keys(&["Enter"]);
    let s = t.wait_for("the error and the draft", |s| {
        s.contains("m · failed") && s.contains("the chat screen)") && s.contains("look at [pasted")
    });
    assert!(s.contains("read images: remove the image, or send it to a model that can"), "what to do: {s}");
    assert!(s.contains("look at [pasted 300 lines"), "the paste is back as its chip: {s}");
    assert!(!s.lines().any(|l| l.contains("log line 0001") && l.contains("│ >")), "{s}");
    assert!(s.contains("▣ a.png 8×8"), "the attachment chip is back: {s}");
    assert!(!s.contains("retry 1"), "not retried: {s}");
    assert_eq!(server.requests().len(), 1, "not retried");
    t.quit();
}

/// Issue 39: in vim mode, `dd` then `p` of a line holding a paste chip put back its label,
/// and the request carried the 159-byte label instead of the 1 MB paste.
#[test]
fn vim_dd_then_p_of_a_paste_chip_sends_the_paste() {
    if !tmux_available() {
        return;
    }
    let answer = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"got it\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = Server::start(vec![Reply::sse(answer)]);
    let paste = tempfile::NamedTempFile::new().unwrap();
    let text: String = (0..20_000).map(|i| format!("pasted row {i:05} {}\n", "x".repeat(40))).collect();
    assert!(text.len() > 1_000_000);
    std::fs::write(paste.path(), &text).unwrap();
    let t = Tmux::launch(&format!("--base-url {} --model m", server.base_url)).start();
    t.wait_ready();
    t.send("/vim");
    t.wait_for("vim on", |s| s.contains("vim keys on"));
    t.tmux(&["load-buffer", &paste.path().display().to_string()]);
    t.tmux(&["paste-buffer", "-p", "-t", "main"]);
    t.wait_for("the paste chip", |s| s.contains("[pasted 20,000 lines"));
    t.keys(&["Escape"]);
    t.type_text("dd");
    t.wait_for("the chip cut", |s| !s.contains("[pasted 20,000 lines"));
    t.type_text("p");
    t.wait_for("the chip put back", |s| s.contains("[pasted 20,000 lines"));
    t.keys(&["Enter"]);
    t.wait_for("the answer", |s| s.contains("got it"));
    let sent = &server.requests()[0].body;
    assert!(sent.len() > 1_000_000, "the paste went, not its label: {} bytes", sent.len());
    assert!(sent.contains("pasted row 19999") && !sent.contains("[pasted 20,000"), "the paste's text");
    t.quit();
}

/// Issue 40: ↑ brings a sent prompt with a big paste back as it was typed — the paste as its
/// chip, as a failed send gives it back — and sending it again sends the whole paste.
#[test]
fn up_brings_a_sent_paste_back_as_its_chip() {
    if !tmux_available() {
        return;
    }
    let answer = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"got it\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = Server::start(vec![Reply::sse(answer), Reply::sse(answer)]);
    let paste = tempfile::NamedTempFile::new().unwrap();
    let text: String = (0..300).map(|i| format!("log line {i:04}\n")).collect();
    std::fs::write(paste.path(), &text).unwrap();
    let t = Tmux::launch(&format!("--base-url {} --model m", server.base_url)).start();
    t.wait_ready();
    t.type_text("look at ");
    t.tmux(&["load-buffer", &paste.path().display().to_string()]);
    t.tmux(&["paste-buffer", "-p", "-t", "main"]);
    t.wait_for("the paste chip", |s| s.contains("[pasted 300 lines"));
    t.keys(&["Enter"]);
    t.wait_for("the reply", |s| s.contains("got it") && s.contains("✓ done"));
    t.keys(&["Up"]);
    let s = t.wait_for("the recalled draft", |s| s.lines().any(|l| l.contains("│ look at [pasted 300 lines")));
    assert!(s.contains("1 paste"), "the composer's title counts the chip: {s}");
    t.keys(&["Enter"]);
    t.wait_for("the second request", |_| server.requests().len() == 2);
    let body = &server.requests()[1].body;
    assert!(body.contains("log line 0000") && body.contains("log line 0299"), "the whole paste went out again");
    t.quit();
}
