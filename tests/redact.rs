//! The one redactor end to end (issue 39 §3): a scripted model on 127.0.0.1 has a user tool
//! print the provider key and a secret variable of palaver's environment, raw and in every
//! encoding, and sends the key back itself in a call's arguments and its reply. Neither secret,
//! in any form, reaches the second request, the `--json` output or anything under
//! `PALAVER_HOME`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use scripted::{Reply, Server};
use std::path::Path;
use std::process::Command;

/// No known credential shape (`sk-`, `ghp_`…): shape scanning would hold it back on its own,
/// and this is about the values palaver knows.
const KEY: &str = "pv-e2e-redact-0123456789abcdefXYZ";
const TOKEN: &str = "tok-e2e-svc-9876543210zyxwvuTS";

/// Prints both secrets (each built from two halves, so the config never holds one whole) raw,
/// in base64 at the three byte offsets, base64url and hex.
const LEAK: &str = r#"
k="$(printf '%s%s' 'pv-e2e-' 'redact-0123456789abcdefXYZ')"
t="$(printf '%s%s' 'tok-e2e-' 'svc-9876543210zyxwvuTS')"
for s in "$k" "$t"; do
  printf 'raw %s\n' "$s"
  printf '%s' "$s" | base64 -w0; echo
  printf 'x%s' "$s" | base64 -w0; echo
  printf 'xy%s' "$s" | base64 -w0; echo
  printf '%s' "$s" | base64 -w0 | tr '+/' '-_' | tr -d '='; echo
  printf '%s' "$s" | od -An -tx1 | tr -d ' \n'; echo
  printf '%s' "$s" | od -An -tx1 | tr -d ' \n' | tr a-f A-F; echo
done
"#;

/// What must never be seen of `secret`: itself, its hex, its whole base64 and base64url, and
/// the middle of its base64 at offsets 1 and 2 (the part that is the secret's alone).
fn forms(secret: &str) -> Vec<String> {
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    let mut out = vec![secret.to_owned(), hex.to_ascii_uppercase(), hex, STANDARD.encode(secret)];
    out.push(URL_SAFE_NO_PAD.encode(secret));
    for prefix in ["x", "xy"] {
        let b64 = STANDARD.encode(format!("{prefix}{secret}"));
        out.push(b64[4..b64.len() - 4].to_owned());
    }
    out
}

fn holds(bytes: &[u8], form: &str) -> bool {
    bytes.windows(form.len()).any(|w| w == form.as_bytes())
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn chat_calls(calls: &[(&str, &str, &str)]) -> String {
    let mut s = String::new();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let first = serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}}]});
        let rest = serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"function":{"arguments":args}}]}}]});
        s.push_str(&format!("data: {first}\n\ndata: {rest}\n\n"));
    }
    s.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    s
}

/// A reply whose text spells the key's base64 across two stream events.
fn chat_text_split(text: &str) -> String {
    let (a, b) = text.split_at(text.len() / 2);
    let ev = |t: &str| serde_json::json!({"choices":[{"index":0,"delta":{"content":t}}]});
    format!(
        "data: {}\n\ndata: {}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n",
        ev(&format!("here it is: {a}")),
        ev(b)
    )
}

#[test]
fn no_known_secret_or_its_encodings_is_sent_back_printed_or_stored() {
    let base = tempfile::tempdir().unwrap();
    let (home, ws) = (base.path().join("palaver"), base.path().join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    let echo = serde_json::json!({ "command": format!("echo {KEY}") }).to_string();
    let calls = [("call_1", "leak", "{}"), ("call_2", "run_command", echo.as_str())];
    let server =
        Server::start(vec![Reply::sse(&chat_calls(&calls)), Reply::sse(&chat_text_split(&STANDARD.encode(KEY)))]);
    let config = format!(
        "default_provider = \"p\"\n[providers.p]\nbase_url = \"{}\"\napi_key_env = \"K\"\ndefault_model = \"m\"\n\n\
         [[tools]]\nname = \"leak\"\ndescription = \"prints things\"\ncommand = [\"sh\", \"-c\", '''{LEAK}''']\n\
         sandbox = \"off\"\n",
        server.base_url
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["-p", "go", "--json", "--tools", "auto", "--yes"])
        .current_dir(&ws)
        .env("PALAVER_HOME", &home)
        .env("K", KEY)
        .env("MY_SERVICE_TOKEN", TOKEN)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{stderr}");
    let second = seen[1].body.as_bytes();
    let stored: Vec<(std::path::PathBuf, Vec<u8>)> = {
        let mut paths = Vec::new();
        files(&home, &mut paths);
        paths.into_iter().map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect()
    };
    assert!(stored.iter().any(|(p, _)| p.to_string_lossy().contains("sqlite")), "{stored:?}");
    for form in forms(KEY).iter().chain(&forms(TOKEN)) {
        assert!(!holds(second, form), "the second request holds {form}: {}", seen[1].body);
        assert!(!holds(&out.stdout, form), "--json holds {form}: {}", String::from_utf8_lossy(&out.stdout));
        assert!(!holds(&out.stderr, form), "stderr holds {form}: {stderr}");
        for (path, bytes) in &stored {
            assert!(!holds(bytes, form), "{} holds {form}", path.display());
        }
    }
    // The tool ran and its output went back, redacted.
    assert!(holds(second, "raw [redacted]"), "{}", seen[1].body);
    // The reply's text deltas, put together, spell no secret: the one split across two events
    // was held back until it was whole, then printed redacted.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let text: String =
        lines.iter().filter(|v| v["type"] == "text").filter_map(|v| v["delta"].as_str()).collect::<Vec<_>>().concat();
    assert_eq!(text, "here it is: [redacted]", "{stdout}");
}

/// A store written before a secret was known (an older palaver, or before the variable was
/// set) still holds it: what `history` prints and exports is redacted all the same.
#[test]
fn history_show_and_every_export_format_are_redacted() {
    use palaver::engine::message::Message;
    use palaver::store::{NewConversation, StoreHandle, StoreOptions};
    let home = tempfile::tempdir().unwrap();
    // This test process never registers TOKEN: the store keeps it raw.
    let store = StoreHandle::open(&home.path().join("palaver.sqlite3"), StoreOptions::default()).unwrap();
    let conv = store.create_conversation(NewConversation { title: "old".into(), ..Default::default() });
    let b64 = STANDARD.encode(TOKEN);
    store.save_message(&conv, 0, &Message::user(&format!("token {TOKEN} and {b64}")));
    store.flush().unwrap();
    drop(store);
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(args)
            .env("PALAVER_HOME", home.path())
            .env("MY_SERVICE_TOKEN", TOKEN)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    for args in [
        &["history", "show", &conv][..],
        &["history", "export", &conv, "--format", "md"],
        &["history", "export", &conv, "--format", "json"],
        &["history", "export", &conv, "--format", "html"],
    ] {
        let out = run(args);
        assert!(holds(&out, "[redacted]"), "{args:?}: {}", String::from_utf8_lossy(&out));
        for form in forms(TOKEN) {
            assert!(!holds(&out, &form), "{args:?} holds {form}");
        }
    }
    let json: serde_json::Value =
        serde_json::from_slice(&run(&["history", "export", &conv, "--format", "json"])).unwrap();
    assert_eq!(json["messages"][0]["choices"][0]["content"], "token [redacted] and [redacted]", "{json}");
}
