//! End to end in tmux: `/export html PATH` in the chat screen writes the conversation on
//! screen as one self-contained page (CSP, no script, the hostile prompt as text) and says
//! where. Skips when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use common::tmux::{Tmux, tmux_available};

#[test]
fn export_html_writes_the_page_of_the_chat() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let t = Tmux::launch("--demo -m demo").cwd(dir.path()).start();
    t.wait_ready();
    t.chat("hello <script>x()</script>");
    let out = dir.path().join("page.html");
    t.send(&format!("/export html {}", out.display()));
    t.wait_for("the path it was written to", |s| s.contains("exported to") && s.contains("page.html"));
    t.quit();
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("Content-Security-Policy"), "no CSP");
    assert!(!html.to_ascii_lowercase().contains("<script"), "a script tag");
    assert!(html.contains("hello &lt;script&gt;x()&lt;/script&gt;"));
    assert!(html.contains("<pre class=\"code\""), "the demo's code block is not there");
    assert_eq!(html.matches("<article class=\"msg").count(), 2);
}
