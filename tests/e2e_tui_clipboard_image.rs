//! End to end in tmux with a real X clipboard (Xvfb + xclip): Ctrl+V with a PNG on the
//! clipboard makes an attachment chip that reaches demo-vision (which describes what it
//! received), and `/paste-image` with text on the clipboard says there is no image. Skips when
//! tmux, Xvfb or xclip is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn installed(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 6) as u8, 200 - (y * 4) as u8, 90]));
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
    out
}

/// An X server of our own, killed on drop.
struct Xvfb(Child, String);

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn xvfb() -> Xvfb {
    let display = format!(":{}", 300 + std::process::id() % 500);
    let child = Command::new("Xvfb")
        .args([display.as_str(), "-nolisten", "tcp", "-screen", "0", "640x480x24"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let x = Xvfb(child, display);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !Command::new("xclip")
        .args(["-selection", "clipboard", "-o"])
        .env("DISPLAY", &x.1)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.code() != Some(1) || Instant::now() > deadline)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    x
}

/// Puts `bytes` of `mime` on the clipboard (xclip stays behind to serve it until replaced).
fn clip(display: &str, mime: &str, bytes: &[u8]) {
    let mut c = Command::new("xclip")
        .args(["-selection", "clipboard", "-t", mime, "-i"])
        .env("DISPLAY", display)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut c.stdin.take().unwrap(), bytes).unwrap();
    c.wait().unwrap();
}

#[test]
fn a_clipboard_image_becomes_a_chip_that_reaches_demo_vision() {
    if !tmux_available() || !installed("Xvfb") || !installed("xclip") {
        return;
    }
    let x = xvfb();
    clip(&x.1, "image/png", &png(40, 30));
    let t =
        Tmux::launch("--demo -m demo-vision").wrapped_in(&format!("env -u WAYLAND_DISPLAY DISPLAY={}", x.1)).start();
    t.wait_ready();
    t.keys(&["C-v"]);
    let s = t.wait_for("the chip", |s| s.contains("▣ clipboard.png 40×30"));
    assert!(s.contains("attached clipboard.png"), "{s}");
    t.send("what is on my clipboard?");
    t.wait_for("demo-vision's description", |s| s.contains("image/png") && s.contains("40×30") && s.contains("✓ done"));
    // Text on the clipboard: no image, and it says so.
    clip(&x.1, "text/plain", b"just words");
    t.send("/paste-image");
    t.wait_for("the no-image message", |s| s.contains("no image on the clipboard"));
    t.quit();
}
