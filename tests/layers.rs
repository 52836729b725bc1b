//! The architecture guard: every module imports only from the layers below its own. The order
//! of the layers is written here, once; the README's architecture section follows it. A module
//! that reaches up fails this test with the file, the line and the import. It also holds that
//! every process is started through `sys::spawn`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

/// The layers from the bottom up: each may import from those before it, never after.
const LAYERS: &[&str] = &[
    "text",        // sanitising, formatting, code blocks: pure text helpers
    "sys",         // the one bounded reader and the one spawn function
    "api",         // the client: wire types, SSE, mappers, errors, retries
    "demo",        // the embedded demo provider: a server on api's wire types
    "config",      // paths, providers, theme and keymap as data
    "tools",       // the registry, built-in tools in a workspace, user tools, MCP
    "engine",      // the conversation model, reducer, request builder, turn engine
    "store",       // SQLite
    "runs",        // the headless turn loop, its recorder, prompt-set cells and their scheduler
    "app",         // interactive state, messages, effects (no terminal, no drawing)
    "ui",          // pure drawing from &State
    "tui",         // the terminal: guard, input, frame limiter, editor, clipboard
    "interactive", // the loop tying tui, app and ui together
    "fuzzing",     // entry points for the fuzz targets
    "cli",         // the command line, headless runs, subcommands
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == module)
}

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

/// The top-level modules a line names as `crate::MODULE`, outside comments and strings.
fn crate_refs(line: &str) -> Vec<&str> {
    let code = line.split("//").next().unwrap_or("");
    let mut refs = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        let tail = &rest[at + "crate::".len()..];
        if tail.starts_with('{') {
            refs.push("{"); // a grouped import hides its layers from this guard
        }
        let name_end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        // `palaver_crate::x` or `$crate::` are not ours.
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            refs.push(&tail[..name_end]);
        }
        rest = &tail[name_end..];
    }
    refs
}

/// Every upward import under `src/`, as "file:line: layer imports higher".
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let Some(first) = rel.components().next().and_then(|c| c.as_os_str().to_str()) else { continue };
        let own = first.trim_end_matches(".rs");
        let Some(own_rank) = rank(own) else { continue }; // lib.rs, main.rs: the top
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for target in crate_refs(line) {
                match rank(target) {
                    Some(r) if r > own_rank => bad.push(format!(
                        "src/{}:{}: `{own}` imports `{target}`, a layer above it: {}",
                        rel.display(),
                        n + 1,
                        line.trim()
                    )),
                    None if target == "{" => bad.push(format!(
                        "src/{}:{}: write one `use crate::LAYER::…` per layer (grouped `crate::{{…}}` hides them)",
                        rel.display(),
                        n + 1
                    )),
                    None if !target.is_empty() => {
                        bad.push(format!(
                            "src/{}:{}: `crate::{target}` is in no layer of tests/layers.rs",
                            rel.display(),
                            n + 1
                        ));
                    }
                    _ => {}
                }
            }
        }
    }
    bad
}

#[test]
fn modules_import_only_from_layers_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let bad = violations(&src);
    assert!(bad.is_empty(), "imports that go up a layer:\n{}", bad.join("\n"));
}

#[test]
fn every_top_level_module_has_a_layer() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    for line in lib.lines() {
        if let Some(name) = line.trim().strip_prefix("pub mod ").and_then(|l| l.strip_suffix(';')) {
            assert!(rank(name).is_some(), "src/lib.rs declares `{name}`, which tests/layers.rs puts in no layer");
        }
    }
}

#[test]
fn the_guard_catches_an_upward_import() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("app")).unwrap();
    std::fs::write(dir.path().join("app/x.rs"), "use crate::engine::Message;\nuse crate::ui::draw; // drawing\n")
        .unwrap();
    let bad = violations(dir.path());
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("src/app/x.rs:2: `app` imports `ui`"), "{bad:?}");
    assert_eq!(crate_refs("let x = 1; // crate::ui::draw"), Vec::<&str>::new());
}

// The one way to start a process (issue 39 §2): every child palaver starts is a
// `sys::spawn::Spawn`, which builds its environment by policy, gives it a process group and
// registers it for the orphan sweep. A `Command::new` anywhere else under `src/` would start a
// process with none of that. (The sandbox helper's own `exec`, in `src/sys/spawn/sandbox.rs`,
// replaces a process a `Spawn` started.)

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
