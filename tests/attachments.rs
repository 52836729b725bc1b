//! Attachments end to end: the real binary, headless, against the demo's `demo-vision` (which
//! reports what arrived: sizes and hashes) and against a scripted 127.0.0.1 server (the exact
//! wire JSON per API; nothing sent when a limit or the profile refuses).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use base64::Engine as _;
use scripted::{Reply, Server};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const CHAT_OK: &str = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
const RESP_OK: &str = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[]}}\n\n";

fn run_in(home: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home)
        .env("OPENAI_API_KEY", "sk-test")
        .env_remove("OPENAI_BASE_URL")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn result_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let v: Value = serde_json::from_str(last).unwrap_or(Value::Null);
    assert_eq!(v["type"], "result", "no result line: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    v
}

fn sha12(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// A real PNG of `w`×`h` with a gradient (so it compresses to something non-trivial).
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 7) as u8, (y * 5) as u8, 128]));
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
    out
}

fn jpeg(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 3) as u8, (y * 3) as u8, 40]));
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Jpeg).unwrap();
    out
}

const PDF: &[u8] = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj\n3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n4 0 obj << /Type /Page /Parent 2 0 R >> endobj\n5 0 obj << /Type /Page /Parent 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";

#[test]
fn demo_vision_sees_the_true_size_and_hash_on_both_apis() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = png(37, 21);
    let path = dir.path().join("some.png");
    std::fs::write(&path, &bytes).unwrap();
    let p = path.to_str().unwrap();
    for api in ["chat", "responses"] {
        for stream in [true, false] {
            let mut args = vec!["--demo", "--api", api, "-m", "demo-vision", "-p", "what is this", "-a", p, "--json"];
            if !stream {
                args.push("--no-stream");
            }
            let out = run_in(dir.path(), &args, None);
            assert!(out.status.success(), "{api}: {}", String::from_utf8_lossy(&out.stderr));
            let r = result_of(&out);
            let text = r["text"].as_str().unwrap();
            let part = if api == "chat" { "image_url" } else { "input_image" };
            let want = format!("{part}: image/png, 37×21 px, {} bytes, sha256 {}", bytes.len(), sha12(&bytes));
            assert!(text.contains(&want), "{api} stream={stream}: {text}");
            let a = &r["attachments"][0];
            assert_eq!((a["name"].as_str(), a["media_type"].as_str()), (Some("some.png"), Some("image/png")));
            assert_eq!(
                (a["width"].as_u64(), a["height"].as_u64(), a["bytes"].as_u64()),
                (Some(37), Some(21), Some(bytes.len() as u64))
            );
            assert_eq!(a["sha256"], sha12(&bytes));
        }
    }
}

#[test]
fn a_pdf_goes_as_a_file_part_and_stdin_bytes_attach() {
    let dir = tempfile::tempdir().unwrap();
    // The name says text; the bytes say PDF.
    let path = dir.path().join("report.txt");
    std::fs::write(&path, PDF).unwrap();
    for (api, part) in [("chat", "file report.txt"), ("responses", "input_file report.txt")] {
        let out = run_in(
            dir.path(),
            &["--demo", "--api", api, "-m", "demo-vision", "-p", "x", "-a", path.to_str().unwrap(), "--json"],
            None,
        );
        let text = result_of(&out)["text"].as_str().unwrap().to_owned();
        let want = format!("{part}: application/pdf, 3 pages, {} bytes, sha256 {}", PDF.len(), sha12(PDF));
        assert!(text.contains(&want), "{text}");
    }
    let bytes = jpeg(16, 8);
    let out =
        run_in(dir.path(), &["--demo", "-m", "demo-vision", "-p", "what is this", "-a", "-", "--json"], Some(&bytes));
    let text = result_of(&out)["text"].as_str().unwrap().to_owned();
    assert!(text.contains(&format!("image/jpeg, 16×8 px, {} bytes, sha256 {}", bytes.len(), sha12(&bytes))), "{text}");
}

#[test]
fn thirty_mb_is_refused_before_anything_is_sent() {
    let server = Server::start(vec![Reply::sse(CHAT_OK)]);
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.png");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(30 * 1024 * 1024).unwrap();
    let out =
        run_in(dir.path(), &["--base-url", &server.base_url, "-m", "m", "-p", "hi", "-a", big.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("30.0 MB") && err.contains("limit of 20.0 MB") && err.contains("nothing was sent"), "{err}");
    assert_eq!(server.requests().len(), 0, "a request went out");
    // Several smaller files over the per-request total are refused the same way.
    let parts: Vec<String> = (0..3)
        .map(|i| {
            let p = dir.path().join(format!("part{i}.pdf"));
            let mut bytes = PDF.to_vec();
            bytes.resize(19 * 1024 * 1024, b' ');
            std::fs::write(&p, bytes).unwrap();
            p.display().to_string()
        })
        .collect();
    let mut args = vec!["--base-url", server.base_url.as_str(), "-m", "m", "-p", "hi"];
    for p in &parts {
        args.extend(["-a", p.as_str()]);
    }
    let out = run_in(dir.path(), &args, None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("request_bytes") && err.contains("nothing was sent"), "{err}");
    assert_eq!(server.requests().len(), 0, "a request went out");
}

#[test]
fn the_wire_json_is_exact_for_both_apis() {
    let dir = tempfile::tempdir().unwrap();
    let img = png(4, 2);
    let (ip, dp, tp) = (dir.path().join("a.png"), dir.path().join("d.pdf"), dir.path().join("n.md"));
    std::fs::write(&ip, &img).unwrap();
    std::fs::write(&dp, PDF).unwrap();
    std::fs::write(&tp, "# notes\n").unwrap();
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let img_uri = format!("data:image/png;base64,{}", b64(&img));
    let pdf_uri = format!("data:application/pdf;base64,{}", b64(PDF));
    let text = json!({"type": "text", "text": "<file name=\"n.md\">\n# notes\n\n</file>"});
    for api in ["chat", "responses"] {
        let server = Server::start(vec![Reply::sse(if api == "chat" { CHAT_OK } else { RESP_OK })]);
        let args = [
            "--base-url",
            &server.base_url,
            "--api",
            api,
            "-m",
            "m",
            "-p",
            "look",
            "--detail",
            "high",
            "-a",
            ip.to_str().unwrap(),
            "-a",
            dp.to_str().unwrap(),
            "-a",
            tp.to_str().unwrap(),
            "-a",
            "https://example.com/cat.webp",
        ];
        let out = run_in(dir.path(), &args, None);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let seen = server.requests();
        let body: Value = serde_json::from_str(&seen[0].body).unwrap();
        let content = if api == "chat" { &body["messages"][0]["content"] } else { &body["input"][0]["content"] };
        let want = if api == "chat" {
            json!([
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": img_uri, "detail": "high"}},
                {"type": "file", "file": {"filename": "d.pdf", "file_data": pdf_uri}},
                text,
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.webp", "detail": "high"}},
            ])
        } else {
            let mut t = text.clone();
            t["type"] = json!("input_text");
            json!([
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": img_uri, "detail": "high"},
                {"type": "input_file", "filename": "d.pdf", "file_data": pdf_uri},
                t,
                {"type": "input_image", "image_url": "https://example.com/cat.webp", "detail": "high"},
            ])
        };
        assert_eq!(content, &want, "{api}");
    }
}

#[test]
fn a_profile_that_takes_urls_only_or_no_files_is_told_before_sending() {
    let server = Server::start(vec![Reply::sse(CHAT_OK)]);
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[providers.local]\nbase_url = \"{}\"\napi_key_env = \"OPENAI_API_KEY\"\nattachments = {{ images = \"url-only\", files = false }}\n",
        server.base_url
    );
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    let ip = dir.path().join("a.png");
    std::fs::write(&ip, png(3, 3)).unwrap();
    let dp = dir.path().join("d.pdf");
    std::fs::write(&dp, PDF).unwrap();
    for (file, says) in [(&ip, "by URL only"), (&dp, "takes no files")] {
        let out =
            run_in(dir.path(), &["--provider", "local", "-m", "m", "-p", "x", "-a", file.to_str().unwrap()], None);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(server.requests().len(), 0);
    // A URL is fine.
    let out =
        run_in(dir.path(), &["--provider", "local", "-m", "m", "-p", "x", "-a", "https://example.com/a.png"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn continue_resends_from_the_store_and_exports_carry_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = png(9, 9);
    let path = dir.path().join("photo.png");
    std::fs::write(&path, &bytes).unwrap();
    let out = run_in(
        dir.path(),
        &["--demo", "-m", "demo-vision", "-p", "what", "-a", path.to_str().unwrap(), "--json"],
        None,
    );
    assert!(out.status.success());
    // The file is gone from disk: the next turn must send it from the store.
    std::fs::remove_file(&path).unwrap();
    let out = run_in(dir.path(), &["--demo", "-m", "demo-vision", "-p", "and now?", "--continue", "--json"], None);
    let text = result_of(&out)["text"].as_str().unwrap().to_owned();
    assert!(text.contains("Earlier messages carried again"), "{text}");
    assert!(text.contains(&format!("9×9 px, {} bytes, sha256 {}", bytes.len(), sha12(&bytes))), "{text}");

    let list = run_in(dir.path(), &["history", "list"], None);
    let id = String::from_utf8_lossy(&list.stdout).split_whitespace().next().unwrap().to_owned();
    let out = run_in(dir.path(), &["history", "export", &id, "--format", "json"], None);
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sha: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(e["messages"][0]["attachments"][0]["sha256"], sha);
    let data = e["attachments"][&sha]["data"].as_str().unwrap();
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(data).unwrap(), bytes);
    // Reloadable: the store's import puts the bytes back under their hash.
    let store =
        palaver::store::StoreHandle::open(&dir.path().join("import.db"), palaver::store::StoreOptions::default())
            .unwrap();
    let parsed = palaver::store::export::parse(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let new_id = palaver::store::export::import(&store, &parsed).unwrap();
    let again = palaver::store::export::export(&store, &new_id).unwrap().unwrap();
    assert_eq!(again.attachments, parsed.attachments);
    assert_eq!(again.messages[0].attachments[0].data.as_ref().map(|d| d.bytes().to_vec()), Some(bytes.clone()));

    // Markdown links to the files it writes beside it (in the working directory).
    let md = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "export", &id, "--format", "md"])
        .env("PALAVER_HOME", dir.path())
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&md.stdout);
    let file = format!("{id}-attachments/{}-photo.png", &sha[..12]);
    assert!(text.contains(&format!("![photo.png](<{file}>)")), "{text}");
    assert_eq!(std::fs::read(dir.path().join(&file)).unwrap(), bytes);
}

#[test]
fn copy_as_curl_with_a_body_file_really_sends_the_request() {
    if Command::new("curl").arg("--version").output().is_err() {
        return;
    }
    let server = Server::start(vec![Reply::sse(CHAT_OK)]);
    let dir = tempfile::tempdir().unwrap();
    let img = png(300, 200);
    let mut user = palaver::engine::message::Message::user("look");
    user.attachments.push(palaver::engine::attachment::Attachment::from_bytes("a.png", img).unwrap());
    let opts = palaver::engine::request::RequestOptions { model: "m".into(), stream: true, ..Default::default() };
    let body = palaver::engine::request::build_body(palaver::api::Api::Chat, &[user], &opts);
    // What the inspector shows is abbreviated; what curl sends is whole.
    let shown = palaver::engine::attach_wire::abbreviated(&body).to_string();
    assert!(shown.contains("data:image/png;base64,…(") && shown.len() < 1000, "{shown}");
    let file = dir.path().join("body.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let ep = palaver::config::provider::ProviderProfile::default()
        .endpoint(&server.base_url, palaver::api::client::Secret::new("sk-test".into()));
    let cmd = ep.curl_file(palaver::api::Api::Chat, &file.display().to_string());
    let out = Command::new("sh").arg("-c").arg(&cmd).env("OPENAI_API_KEY", "sk-test").output().unwrap();
    assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
    let seen = server.requests();
    let sent: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(sent, body);
}

#[test]
fn a_fifo_is_refused_before_it_is_opened_and_nothing_is_sent() {
    let server = Server::start(vec![Reply::sse(CHAT_OK)]);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.txt");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--base-url", &server.base_url, "-m", "m", "-p", "hi", "-a", fifo.to_str().unwrap()])
        .env("PALAVER_HOME", dir.path())
        .env("OPENAI_API_KEY", "sk-test")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Opening the FIFO would wait for a writer forever: the run must end on its own, at once.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("palaver hung on -a with a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot attach") && err.contains("FIFO") && err.contains("not a regular file"), "{err}");
    assert_eq!(server.requests().len(), 0, "a request went out");
}

/// Issue 25 item 4: `-a https://user:pass@host/…` — the user name and password are never sent,
/// stored or printed; the address is stored and shown without them (and without a secret query
/// parameter, which only the provider gets: a signed link needs it).
#[test]
fn a_urls_user_name_and_password_are_never_sent_stored_or_printed() {
    let dir = tempfile::tempdir().unwrap();
    let url = "https://alice:hunter2-secret@pics.example.invalid/cat.png?size=2&access_token=tok-sekrit-123";
    let out = run_in(dir.path(), &["--demo", "-m", "demo-vision", "-p", "what", "-a", url, "--json"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let text = result_of(&out)["text"].as_str().unwrap().to_owned();
    // demo-vision names the URL it received: the host and the query, no user or password.
    assert!(text.contains("url https://pics.example.invalid/cat.png?size=2&access_token=tok-sekrit-123"), "{text}");
    for said in [&stdout, &stderr] {
        assert!(!said.contains("hunter2-secret") && !said.contains("alice"), "printed: {said}");
    }
    let list = run_in(dir.path(), &["history", "list"], None);
    let id = String::from_utf8_lossy(&list.stdout).split_whitespace().next().unwrap().to_owned();
    let out = run_in(dir.path(), &["history", "export", &id, "--format", "json"], None);
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = &e["messages"][0]["attachments"][0];
    assert_eq!(a["url"], "https://pics.example.invalid/cat.png?size=2", "{a}");
    assert_eq!(a["name"], "https://pics.example.invalid/cat.png?size=2", "{a}");
    let shown = run_in(dir.path(), &["history", "show", &id], None);
    for kept in [String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&shown.stdout)] {
        assert!(!kept.contains("hunter2-secret") && !kept.contains("alice"), "stored: {kept}");
    }
    // Nor in the database's files (its write-ahead log included).
    let mut files = 0;
    for entry in walk(dir.path()) {
        if entry.file_name().is_some_and(|n| n.to_string_lossy().starts_with("palaver.sqlite3")) {
            files += 1;
            let bytes = std::fs::read(&entry).unwrap_or_default();
            assert!(!String::from_utf8_lossy(&bytes).contains("hunter2-secret"), "in {}", entry.display());
        }
    }
    assert!(files > 0, "the database was found");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}
