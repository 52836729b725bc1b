//! `palaver history export ID --format html`: the real binary, the embedded demo, a
//! conversation with a tool flow (demo-tools) and an attached image (demo-vision). The page is
//! one self-contained file: a CSP that loads nothing, no script, every text escaped, the tool
//! calls folded with their arguments and outputs, the image inline as a data URI.
//! (tests/report_browser.sh opens the same kind of page in headless Chromium.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn palaver(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .current_dir(cwd)
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "exit {:?}: {}", o.status.code(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 7) as u8, (y * 5) as u8, 128]));
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
    out
}

#[test]
fn a_conversation_with_tools_and_an_image_becomes_one_inert_page() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), "a file <script>alert(1)</script>\n").unwrap();
    let bytes = png(5, 3);
    std::fs::write(work.path().join("shot.png"), &bytes).unwrap();
    let hostile = "What is here? <script>document.title='pwned'</script> <img src=x onerror=alert(1)>";
    ok(&palaver(home.path(), work.path(), &["--demo", "-m", "demo-tools", "--yes", "-p", hostile]));
    ok(&palaver(home.path(), work.path(), &["--continue", "-m", "demo-vision", "-a", "shot.png", "-p", "and this?"]));
    let list = ok(&palaver(home.path(), work.path(), &["history", "list"]));
    let id = list.split_whitespace().next().unwrap().to_owned();
    let html = ok(&palaver(home.path(), work.path(), &["history", "export", &id, "--format", "html"]));

    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">"
    ));
    // Nothing from the prompt, the tools or the models became markup.
    assert!(!html.to_ascii_lowercase().contains("<script"), "a script tag in the page");
    assert!(!html.contains("<img src=x"), "the hostile img became markup");
    assert!(html.contains("What is here? &lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    // The tool flow: at least one call folded, with its arguments and its output.
    let calls = html.matches("<details class=\"tool\">").count();
    assert!(calls >= 1, "no tool call in the page");
    assert_eq!(html.matches("<pre class=\"out args\">").count(), calls);
    assert!(html.matches("<pre class=\"out output\">").count() >= 1);
    assert!(html.contains("<article class=\"msg tool\""), "the tool results are there");
    // The image inline, as the bytes that were attached; and demo-vision's answer about it.
    let uri = format!("data:image/png;base64,{}", base64_std(&bytes));
    assert!(html.contains(&format!("src=\"{uri}\"")), "the attached image is not inline");
    assert!(html.contains("5×3"), "demo-vision's description of the image is missing");
    // Usage per message, and every <img> in the page is a data URI.
    assert!(html.contains("<p class=\"meta usage\">"));
    for part in html.split("<img ").skip(1) {
        let src = part.split("src=\"").nth(1).unwrap();
        assert!(src.starts_with("data:image/"), "an image loads from elsewhere: {src:.60}");
    }
}

fn base64_std(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
