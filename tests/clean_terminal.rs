//! Issue 25 item 7, "Clean terminal, clean files", end to end against servers scripted on
//! 127.0.0.1: what a server, a model or a file name says reaches the terminal without its
//! escape codes, and a compressed body says that it is compressed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

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
    let server = Server::start(vec![Reply::json(200, EVIL_IDS).on_get()]);
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
    let server = Server::start(vec![Reply::json(500, body).on_get()]);
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
    let server = Server::start(vec![Reply::json(200, GZIP_BYTES).header("Content-Encoding", "gzip").on_get()]);
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
            // (Each cell's anchor, `<a id="cell-P-M"></a>`, is digits only.)
            ["<details>", "</details>", "<summary>", "</summary>", "<a id=\"cell-", "</a>"]
                .iter()
                .any(|t| tag.starts_with(t)),
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

/// `compare runs` as JSON lines.
fn runs_json(home: &Path) -> Vec<serde_json::Value> {
    let out = run(home, &["compare", "runs", "--json"]);
    text(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[test]
fn a_compare_run_whose_process_died_is_stopped_not_running() {
    // Every answer takes far longer than the test: the run is mid-way when it is killed.
    let server = Server::start(vec![Reply::sse("data: [DONE]\n\n").pause_first(std::time::Duration::from_secs(60))]);
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.txt");
    std::fs::write(&set, "one\ntwo\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--base-url", &server.base_url, "compare", "-m", "a", "-m", "b", "--prompts", set.to_str().unwrap()])
        .env("PALAVER_HOME", home.path())
        .env("OPENAI_API_KEY", "sk-test")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while server.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the run never sent a request");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let live = runs_json(home.path());
    assert_eq!(live.len(), 1);
    assert_eq!(live[0]["status"], "running", "while its process runs: {live:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    let dead = runs_json(home.path());
    assert_eq!(dead[0]["status"], "stopped", "after its process died: {dead:?}");
    let listed = text(&run(home.path(), &["compare", "runs"]).stdout);
    assert!(listed.contains("stopped") && !listed.contains("running"), "{listed}");
    let id = dead[0]["id"].as_str().unwrap();
    let shown = text(&run(home.path(), &["compare", "show", id]).stdout);
    assert!(shown.lines().next().unwrap_or("").ends_with("stopped"), "{shown}");
}

#[test]
fn a_read_only_store_still_lists_shows_and_rates_its_runs() {
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.txt");
    std::fs::write(&set, "one\ntwo\n").unwrap();
    let made = run(
        home.path(),
        &["--demo", "compare", "-m", "demo", "-m", "demo-reasoning", "--prompts", set.to_str().unwrap()],
    );
    assert_eq!(made.status.code(), Some(0), "{}", text(&made.stderr));
    let id = runs_json(home.path())[0]["id"].as_str().unwrap().to_owned();
    // Read-only for whoever runs palaver: as root (which writes anywhere) palaver runs as nobody
    // over a store it may read but not write; as anyone else the store loses its write bits.
    let root = Command::new("id").arg("-u").output().map(|o| text(&o.stdout).trim() == "0").unwrap_or(false);
    let mode = |m: u32| {
        use std::os::unix::fs::PermissionsExt;
        for entry in walk(home.path()) {
            let dir = entry.is_dir();
            std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(if dir { m | 0o111 } else { m })).unwrap();
        }
    };
    mode(if root { 0o644 } else { 0o444 });
    let ro = |args: &[&str]| -> Output {
        let mut c = if root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_palaver")]);
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_palaver"))
        };
        c.args(args).env("PALAVER_HOME", home.path()).env("HOME", home.path()).stdin(Stdio::null()).output().unwrap()
    };
    let runs = ro(&["compare", "runs"]);
    let shown = ro(&["compare", "show", &id]);
    let stats = ro(&["compare", "stats"]);
    mode(0o755);
    assert_eq!(runs.status.code(), Some(0), "{}", text(&runs.stderr));
    assert!(text(&runs.stdout).contains(&id) && text(&runs.stdout).contains("finished"), "{}", text(&runs.stdout));
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    assert!(text(&shown.stdout).contains("4 cells stored"), "{}", text(&shown.stdout));
    assert_eq!(stats.status.code(), Some(0), "{}", text(&stats.stderr));
    assert!(text(&stats.stdout).contains("no arena votes yet"), "{}", text(&stats.stdout));
    // Nothing was written: the runs still open for writing afterwards, unchanged.
    assert_eq!(runs_json(home.path())[0]["status"], "finished");
}

/// `dir` and everything under it.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}
