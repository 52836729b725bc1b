//! Issue 25 item 7, "Clean terminal, clean files", end to end against servers scripted on
//! 127.0.0.1: what a server, a model or a file name says reaches the terminal without its
//! escape codes, and a compressed body says that it is compressed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scripted;

use scripted::{Reply, Server};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn run(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home)
        .env("HOME", home)
        .env("OPENAI_API_KEY", "sk-test")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// No escape, no C1 control, no BEL anywhere in what was printed.
fn assert_clean(what: &str, b: &[u8]) {
    let s = text(b);
    assert!(!s.contains('\u{1b}') && !s.contains('\u{7}') && !s.contains('\u{9b}'), "{what} is not clean: {s:?}");
}

const EVIL_IDS: &str = "{\"data\":[{\"id\":\"evil\\u001b]0;pwned\\u0007model\"},{\"id\":\"red\\u001b[31mX\\u001b[0m\"},{\"id\":\"c1\\u009b2Jgone\"}]}";

#[test]
fn models_listed_with_escape_codes_print_clean() {
    let server = Server::start(vec![Reply::json(200, EVIL_IDS)]);
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["models", "--base-url", &server.base_url]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_clean("stdout", &out.stdout);
    assert_clean("stderr", &out.stderr);
    let listed = text(&out.stdout);
    assert!(listed.contains("evilmodel") && listed.contains("redX"), "{listed}");
    assert!(!listed.contains("pwned"), "the OSC title payload leaked: {listed}");
}

#[test]
fn a_models_error_with_escape_codes_prints_clean() {
    let body = "{\"error\":{\"message\":\"no \\u001b[2J\\u001b]52;c;aGk=\\u0007models here\"}}";
    let server = Server::start(vec![Reply::json(500, body)]);
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["models", "--base-url", &server.base_url]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_clean("stderr", &out.stderr);
    assert!(text(&out.stderr).contains("no models here"), "{}", text(&out.stderr));
}

#[test]
fn an_attachment_name_with_escape_codes_prints_clean() {
    let server = Server::start(vec![Reply::json(500, "{}")]);
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("no\u{1b}]0;pwned\u{7}such\u{1b}[31m.png");
    let out =
        run(home.path(), &["-p", "hi", "--base-url", &server.base_url, "-m", "m", "-a", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_clean("stderr", &out.stderr);
    let err = text(&out.stderr);
    assert!(err.contains("cannot attach") && err.contains("nosuch.png"), "{err}");
    assert!(server.requests().is_empty(), "nothing is sent when an attachment cannot be read");
    // A file that exists but is not a type palaver sends: its name in the refusal is clean too.
    let odd = home.path().join("odd\u{1b}[2Jname.bin");
    std::fs::write(&odd, [0u8, 1, 2, 3, 0xff, 0xfe]).unwrap();
    let out = run(home.path(), &["-p", "hi", "--base-url", &server.base_url, "-m", "m", "-a", odd.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_clean("stderr", &out.stderr);
    assert!(text(&out.stderr).contains("oddname.bin"), "{}", text(&out.stderr));
}

/// Bytes that start like a gzip member (and hold an escape, which must not be printed).
const GZIP_BYTES: &str = "\u{1f}\u{8b}\u{8}\u{0}\u{1b}[2J";

#[test]
fn a_compressed_error_body_says_that_it_is_compressed() {
    let reply = Reply::json(502, GZIP_BYTES).header("Content-Encoding", "br");
    let server = Server::start(vec![reply]);
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["-p", "hi", "--base-url", &server.base_url, "-m", "m"]);
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("br-compressed") && err.contains("502"), "{err}");
    assert_clean("stderr", &out.stderr);
}

#[test]
fn a_compressed_answer_says_that_it_is_compressed() {
    let reply = Reply::json(200, GZIP_BYTES).header("Content-Encoding", "gzip");
    let server = Server::start(vec![reply]);
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["-p", "hi", "--base-url", &server.base_url, "-m", "m"]);
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("gzip-compressed"), "{err}");
    assert_clean("stderr", &out.stderr);
    // And `palaver models` against a gateway that compresses the list.
    let server = Server::start(vec![Reply::json(200, GZIP_BYTES).header("Content-Encoding", "gzip")]);
    let out = run(home.path(), &["models", "--base-url", &server.base_url]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("gzip-compressed"), "{}", text(&out.stderr));
}

/// Every `<` of `md` outside a fenced code block, with the text that follows it.
fn tags_outside_fences(md: &str) -> Vec<String> {
    let (mut open, mut found): (Option<usize>, Vec<String>) = (None, Vec::new());
    for line in md.lines() {
        let ticks = line.trim_start().chars().take_while(|&c| c == '`').count();
        match open {
            Some(n) if ticks >= n && line.trim_start()[ticks..].trim().is_empty() => open = None,
            Some(_) => {}
            None if ticks >= 3 => open = Some(ticks),
            None => found.extend(line.match_indices('<').map(|(i, _)| line[i..].chars().take(12).collect())),
        }
    }
    found
}

#[test]
fn the_markdown_report_escapes_html_and_keeps_its_table() {
    const EVIL: &str = "<img src=x onerror=alert(1)>";
    let answer = format!(
        "data: {}\n\ndata: [DONE]\n\n",
        serde_json::json!({"choices":[{"index":0,"delta":{"content":format!("hi {EVIL} </details> | x")},
            "finish_reason":"<b>stop</b>|x"}]})
    );
    let server = Server::start_fn(move |seen| {
        if seen.body.contains("\"model\":\"bad\"") {
            Reply::json(400, &serde_json::json!({"error":{"message":format!("no {EVIL} | for\nyou")}}).to_string())
        } else {
            Reply::sse(&answer)
        }
    });
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.jsonl");
    let prompt =
        serde_json::json!({"id": format!("p1 {EVIL}|"), "prompt": format!("say {EVIL}\n```\n<script>x</script>")});
    std::fs::write(&set, format!("{prompt}\n")).unwrap();
    let md = home.path().join("r.md");
    let out = run(
        home.path(),
        &[
            "--base-url",
            &server.base_url,
            "compare",
            "-m",
            "good",
            "-m",
            "bad",
            "--prompts",
            set.to_str().unwrap(),
            "--report",
            md.to_str().unwrap(),
        ],
    );
    assert!(md.exists(), "exit {:?}: {}", out.status.code(), text(&out.stderr));
    let report = std::fs::read_to_string(&md).unwrap();
    // Outside code blocks the only tags are the report's own.
    for tag in tags_outside_fences(&report) {
        assert!(
            ["<details>", "</details>", "<summary>", "</summary>"].iter().any(|t| tag.starts_with(t)),
            "an HTML tag from the prompt, the answer or the server is live in the report: {tag:?}\n{report}"
        );
    }
    assert!(report.contains("&lt;img src=x onerror=alert(1)&gt;"), "the injected tags are shown as text:\n{report}");
    // The prompt and the answers are kept verbatim inside their fences.
    assert!(report.contains("<script>x</script>") && report.contains(&format!("hi {EVIL} </details> | x")), "{report}");
    // The summary table keeps one row a line and one cell a column: every row has as many
    // unescaped pipes as the header.
    let rows: Vec<&str> =
        report.lines().skip_while(|l| !l.starts_with("| |")).take_while(|l| l.starts_with('|')).collect();
    assert!(rows.len() > 3, "{report}");
    let pipes = |l: &str| l.replace("\\|", "").matches('|').count();
    assert!(rows.iter().all(|r| pipes(r) == pipes(rows[0])), "a table row broke: {rows:#?}");
    assert!(report.contains("> error:") && report.contains("no &lt;img"), "{report}");
}
