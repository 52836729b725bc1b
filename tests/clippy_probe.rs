//! The lint that keeps every read bounded (issue 39 §1): `clippy.toml` forbids the unbounded
//! reads anywhere but `sys::read`. This builds a throwaway crate holding the project's
//! `clippy.toml` and shows that adding one of those reads fails `cargo clippy -D warnings`
//! naming `disallowed`, and that the same crate without it passes. No dependencies, offline.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

/// `cargo clippy -D warnings` on a crate whose lib.rs is `body`: (passed, what it said).
fn clippy_on(dir: &Path, body: &str) -> (bool, String) {
    std::fs::write(dir.join("src/lib.rs"), body).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["clippy", "--offline", "--quiet", "--", "-D", "warnings"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env_remove("RUSTFLAGS")
        .env_remove("CLIPPY_CONF_DIR")
        .output()
        .expect("cargo clippy runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn an_unbounded_read_fails_the_lint_and_its_absence_passes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let project = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(project.join("clippy.toml"), dir.path().join("clippy.toml")).unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"probe\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n\n[workspace]\n",
    )
    .unwrap();
    let clean = "pub fn f(s: &str) -> usize {\n    s.len()\n}\n";
    let (passed, said) = clippy_on(dir.path(), clean);
    assert!(passed, "the crate without an unbounded read should pass: {said}");
    for (call, body) in [
        (
            "std::fs::read_to_string",
            "pub fn f() -> String {\n    std::fs::read_to_string(\"x\").unwrap_or_default()\n}\n",
        ),
        ("std::fs::read", "pub fn f() -> Vec<u8> {\n    std::fs::read(\"x\").unwrap_or_default()\n}\n"),
        (
            "std::io::Read::read_to_end",
            "use std::io::Read;\npub fn f(mut r: impl Read) -> Vec<u8> {\n    let mut v = Vec::new();\n    let _ = r.read_to_end(&mut v);\n    v\n}\n",
        ),
        (
            "std::io::BufRead::lines",
            "use std::io::BufRead;\npub fn f(r: impl BufRead) -> usize {\n    r.lines().count()\n}\n",
        ),
    ] {
        let (passed, said) = clippy_on(dir.path(), body);
        assert!(!passed, "{call} should fail the lint");
        assert!(said.contains("disallowed") && said.contains(call) && said.contains("sys::read"), "{call}: {said}");
    }
}
