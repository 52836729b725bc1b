//! End to end in tmux: `/attach` with Tab completion, the chip above the composer, the sent
//! message with its image drawn as half-blocks (tmux without passthrough gets them), a
//! generated image drawn under the reply, and a bad path that keeps the draft. Skips when
//! tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 6) as u8, 200 - (y * 4) as u8, 90]));
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
    out
}

/// Rows of `lines` that are mostly upper half blocks: an image drawn.
fn half_block_rows<'a>(lines: impl Iterator<Item = &'a str>) -> usize {
    lines.filter(|l| l.matches('▀').count() >= 8).count()
}

#[test]
fn an_attached_and_a_generated_image_are_drawn_as_half_blocks() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("some-photo.png"), png(40, 30)).unwrap();
    let t = Tmux::launch("--api responses -m demo-vision").cwd(dir.path()).keep_cwd(dir).start();
    t.wait_ready();
    // Tab completes the path.
    t.type_text("/attach ./some-");
    t.keys(&["Tab"]);
    t.wait_for("the completed path", |s| s.contains("/attach ./some-photo.png"));
    t.keys(&["Enter"]);
    let s = t.wait_for("the chip", |s| s.contains("▣ some-photo.png 40×30"));
    assert!(s.contains("Alt+X removes"), "{s}");
    t.send("what is this? draw one back");
    t.wait_for("the answer with the image's facts", |s| s.contains("40×30 px") && s.contains("✓ done"));
    // The generated image (image_generation_call) is drawn under the reply.
    let s = t.wait_for("the generated image", |s| {
        s.contains("▣ generated image · ig_demo_1.png")
            && half_block_rows(s.lines().skip_while(|l| !l.contains("ig_demo_1.png"))) >= 4
    });
    // Drawn in colour: the pane holds 24-bit colour cells.
    let colours = String::from_utf8_lossy(&t.tmux(&["capture-pane", "-p", "-e", "-t", "main"]).stdout).into_owned();
    assert!(colours.contains("38;2;") && colours.contains("48;2;"), "no true-colour cells:\n{s}");
    // The attached image is drawn under the sent message, at the top.
    t.keys(&["C-Home"]);
    let s = t.wait_for("the sent message with its image", |s| s.contains("▣ some-photo.png · image/png · 40×30"));
    assert!(half_block_rows(s.lines().skip_while(|l| !l.contains("▣ some-photo.png")).skip(1).take(15)) >= 4, "{s}");
    t.quit();
}

#[test]
fn a_bad_path_keeps_the_draft_and_a_chip_can_be_removed() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.png"), png(8, 8)).unwrap();
    let t = Tmux::launch("-m demo-vision").cwd(dir.path()).keep_cwd(dir).start();
    t.wait_ready();
    t.send("/attach ./missing.png");
    let s = t.wait_for("the error", |s| s.contains("cannot attach ./missing.png"));
    assert!(s.contains("/attach ./missing.png"), "the command came back to be fixed: {s}");
    t.keys(&["C-u"]);
    t.send("/attach ./a.png");
    t.wait_for("the chip", |s| s.contains("▣ a.png 8×8"));
    t.keys(&["M-x"]);
    t.wait_for("the chip removed", |s| s.contains("removed a.png") && !s.contains("▣ a.png 8×8"));
    t.quit();
}
