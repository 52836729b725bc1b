//! The one way to start a process (issue 39 §2): every child palaver starts is a
//! `sys::spawn::Spawn`, which builds its environment by policy, gives it a process group and
//! registers it for the orphan sweep. A `Command::new` anywhere else under `src/` would start a
//! process with none of that; this test fails naming its file and line. (The sandbox helper's
//! own `exec`, in `src/sys/spawn/sandbox.rs`, replaces a process a `Spawn` started.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `Command::new` (std's or tokio's, however imported) outside `src/sys/`, as "file:line".
fn starts_outside_sys(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.strip_prefix(src).unwrap().starts_with("sys")) {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("Command::new") || code.contains("Command::from") {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn every_process_starts_through_sys_spawn() {
    let found = starts_outside_sys(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        found.is_empty(),
        "processes started outside sys::spawn (use sys::spawn::Spawn, which gives the child its \
         environment by policy, its own process group and a place in the orphan sweep):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_probe_finds_a_start_outside_sys() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tui")).unwrap();
    std::fs::create_dir_all(dir.path().join("sys")).unwrap();
    std::fs::write(dir.path().join("tui/x.rs"), "fn f() {\n    let _ = std::process::Command::new(\"sh\");\n}\n")
        .unwrap();
    std::fs::write(dir.path().join("sys/ok.rs"), "fn f() { let _ = std::process::Command::new(\"sh\"); }\n").unwrap();
    let found = starts_outside_sys(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("tui/x.rs:2"), "{found:?}");
}
