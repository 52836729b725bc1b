// The registry is process-wide: each test registers secrets of its own, so tests running at
// once never see each other's.
use super::*;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn the_secret_and_each_encoding_are_redacted() {
    let key = "sk-enc-0123456789abcdefXYZ";
    register(key);
    let b = key.as_bytes();
    let encoded = [
        key.to_owned(),
        hex(b),
        hex(b).to_ascii_uppercase(),
        STANDARD.encode(b),
        STANDARD_NO_PAD.encode(b),
        URL_SAFE.encode(b),
        URL_SAFE_NO_PAD.encode(b),
    ];
    for e in encoded {
        assert_eq!(redact(&format!("before {e} after")), "before [redacted] after", "{e}");
    }
}

#[test]
fn a_secret_inside_longer_base64_is_found_at_every_offset() {
    // `?` and `>` make `/` and `+` in standard base64, `_` and `-` in base64url.
    let key = "tok-off?>?>-9f8e7d6c5b4a";
    register(key);
    for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for before in 0..6 {
            for after in 0..4 {
                let mut bytes = b"line one: ".repeat(3)[..before].to_vec();
                bytes.extend_from_slice(key.as_bytes());
                bytes.extend_from_slice(&b"\n..."[..after]);
                let text = engine.encode(&bytes);
                let out = redact(&text);
                assert!(out.contains(REDACTED), "offset {before}, {after} after: {text}");
                // Left around the mark: at most the character each side that mixes the
                // secret's bits with its neighbours' (its 24 bytes are 32 characters).
                assert!(text.len() + REDACTED.len() - out.len() >= 31, "{out}");
            }
        }
    }
}

#[test]
fn short_values_are_ignored_and_registering_twice_changes_nothing() {
    register("short12");
    assert_eq!(redact("a short12 value"), "a short12 value");
    let document = "d".repeat(MAX_SECRET + 1);
    register(&document);
    assert!(!holds(document.as_bytes()), "a document is not a secret");
    let key = "pw-idem-ABCDEFGH";
    register(key);
    let forms_once = forms_count();
    register_all([key, key]);
    assert_eq!(forms_count(), forms_once);
    assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
}

fn forms_count() -> usize {
    REGISTRY.read().unwrap_or_else(PoisonError::into_inner).as_ref().map_or(0, |r| r.forms.len())
}

#[test]
fn a_secret_containing_json_escapes_is_found_in_json_text() {
    let key = "pw\"quoted\\back";
    register(key);
    let json = serde_json::json!({ "echo": key }).to_string();
    assert!(!redact(&json).contains("quoted"), "{json}");
}

#[test]
fn secret_names_are_recognised_and_settings_are_not() {
    for name in ["OPENAI_API_KEY", "github_token", "DB_PASSWORD", "MY_SECRET", "AWS_SESSION_TOKEN", "AWS_ANYTHING"] {
        assert!(is_secret_name(name), "{name}");
    }
    for name in ["PATH", "HOME", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "LANG"] {
        assert!(!is_secret_name(name), "{name}");
    }
}

#[test]
fn a_secret_is_seen_whole_or_split_across_reads_and_stays_seen() {
    let key = "sk-watch-0123456789";
    register(key);
    let body = format!("data: one\n\ndata: {key}\n\ndata: two\n\n");
    let body = body.as_bytes();
    let at = body.windows(key.len()).position(|w| w == key.as_bytes()).unwrap_or(0);
    for size in [1, 2, 5, 13, 19, 20, body.len()] {
        let mut watch = Watch::default();
        let seen: Vec<bool> = body.chunks(size).map(|read| seen_in(&mut watch, read)).collect();
        // Seen from the read holding the secret's last byte, and from then on.
        let first = (at + key.len() - 1) / size;
        assert_eq!(seen.iter().position(|&s| s), Some(first), "reads of {size}");
        assert!(seen[first..].iter().all(|&s| s), "reads of {size}");
    }
    let mut watch = Watch::default();
    assert!(!b"sk-watch-012345678 sk-watch-0 123456789".chunks(3).any(|read| seen_in(&mut watch, read)));
}

#[test]
fn a_secret_spelled_across_deltas_is_held_back_and_redacted() {
    let key = "hold-back-0123456789";
    register(key);
    let b64 = STANDARD.encode(key);
    let text = format!("one {key} two {b64} three");
    for size in [1, 2, 3, 7, 50] {
        let mut h = Holdback::default();
        let mut out = String::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(size) {
            let piece: String = piece.iter().collect();
            let printed = h.push(&piece);
            out.push_str(printed.as_deref().unwrap_or(&piece));
        }
        out.push_str(&h.take());
        assert_eq!(out, "one [redacted] two [redacted] three", "deltas of {size}");
    }
    // Text that cannot start a secret is not held.
    let mut h = Holdback::default();
    assert_eq!(h.push("plain words; "), None, "printed as it is");
}
