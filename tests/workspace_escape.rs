//! Issue 12: the built-in tools must not reach outside the workspace, or into files that
//! usually hold secrets, without an approval naming the resolved path. Every attempt below is
//! checked three ways: `paths_needing_approval` names exactly the resolved path, running it
//! with nothing approved is refused (and the outside content never appears), and running it
//! with that resolved path approved goes through.
//!
//! Attempts per kind (51 refused-then-approved attempts in all):
//!   absolute path outside ..................................... 4 (read, list, search, write)
//!   `../` one level ........................................... 2 (read, custom-call read)
//!   `../` many levels ......................................... 2 (read, list)
//!   `a/../../x` ............................................... 2 (existing `a`, missing `a`)
//!   symlink file inside pointing out .......................... 2 (read, write through it)
//!   symlinked directory as a middle component ................. 2 (read, write below it)
//!   symlink chain (link -> link -> link -> outside) ........... 1
//!   `list_directory` of an outside folder ..................... 1
//!   `search_files` of an outside folder ....................... 2 (by content, by name)
//!   `list_directory` through an inner symlink dir pointing out  1
//!   `search_files` through an inner symlink dir pointing out .. 1
//!   non-existent target outside (write_file) .................. 3 (`../`, absolute, dangling link)
//!   secrets inside the workspace .............................. 18 (.env, .env.local,
//!       app/.env.production, .ssh/id_rsa, x.pem, id_ed25519, .git/config, .netrc,
//!       .aws/credentials, .gnupg/x, a protected config dir and a protected data dir,
//!       .ssh/id_rsa via `sub/..`, listing .ssh, searching .ssh, writing .env, a custom call
//!       reading .netrc, an innocent-looking link to .env)
//!   apply_patch ............................................... 5 (create `../x`, create at an
//!       absolute path, update at an absolute path, delete through a link out, update .env)
//!   shell with an outside working directory ................... 5 (local_shell `../out`,
//!       local_shell absolute, shell absolute, shell through an inner symlink dir, .ssh)
//! Also: an outside secret's reason names both; `paths_needing_approval` is empty for
//! invalid JSON, unknown tools, MCP approvals, `current_time` and plain-text custom input.
//! Walk checks (no approval needed, nothing outside may show): `search_files` of the root with
//! symlinks out (file, dir, chain) skips them and never greps secrets; `list_directory` of the
//! root shows links out only as `name@` with a marker. Controls: inside paths need nothing.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use palaver::tools::items;
use palaver::tools::{Registry, ToolOutput, Workspace};
use serde_json::json;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SECRET: &str = "TOP SECRET 4c1d";

struct Fx {
    _tmp: tempfile::TempDir,
    reg: Registry,
    /// The workspace root, resolved.
    w: PathBuf,
    /// A folder beside it, resolved, holding `secret.txt`.
    out: PathBuf,
}

fn fixture() -> Fx {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (w, out) = (base.join("w"), base.join("out"));
    for d in ["sub", ".ssh", ".aws", ".gnupg", ".git", "home/config", "home/data", "app"] {
        std::fs::create_dir_all(w.join(d)).unwrap();
    }
    std::fs::create_dir_all(out.join("deep")).unwrap();
    std::fs::write(out.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(out.join("deep/also.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(w.join("a.txt"), "hello\n").unwrap();
    for f in [
        ".env",
        ".env.local",
        "app/.env.production",
        ".ssh/id_rsa",
        "x.pem",
        "id_ed25519",
        ".git/config",
        ".netrc",
        ".aws/credentials",
        ".gnupg/x",
        "home/config/config.toml",
        "home/data/history.db",
    ] {
        std::fs::write(w.join(f), format!("{SECRET}\n")).unwrap();
    }
    std::fs::write(w.join("id_ed25519.pub"), "ssh-ed25519 AAAA public\n").unwrap();
    symlink(out.join("secret.txt"), w.join("link.txt")).unwrap();
    symlink(&out, w.join("sub/outdir")).unwrap();
    symlink("link.txt", w.join("chain1")).unwrap();
    symlink("chain1", w.join("chain2")).unwrap();
    symlink(out.join("not-yet.txt"), w.join("dangling")).unwrap();
    symlink(".env", w.join("innocent.txt")).unwrap();
    symlink("a.txt", w.join("inner-link")).unwrap();
    let protected = vec![w.join("home/config"), w.join("home/data")];
    let mut reg = Registry::builtins();
    reg.set_workspace(Workspace::new(&w, protected).unwrap());
    Fx { _tmp: tmp, reg, w, out }
}

/// Runs a call of any kind the way the tool loop does, with `approved` resolved paths.
async fn run(fx: &Fx, kind: &str, name: &str, args: &str, approved: &[PathBuf]) -> ToolOutput {
    let t = Duration::from_secs(10);
    match kind {
        "shell" | "local_shell" => items::run_shell_in(fx.reg.workspace(), kind, args, t, approved).await,
        "apply_patch" => items::apply_patch_in(fx.reg.workspace(), args, approved),
        _ => fx.reg.execute_with(name, args, t, approved).await,
    }
}

/// The attempt needs an approval naming `expected` (with `why` in its reason), is refused
/// without it, and runs with it. Returns the approved run's output.
async fn refused_then_runs(fx: &Fx, kind: &str, name: &str, args: &str, expected: &Path, why: &str) -> ToolOutput {
    let needs = fx.reg.paths_needing_approval(kind, name, args);
    assert_eq!(needs.len(), 1, "{kind}/{name} {args}: {needs:?}");
    assert_eq!(needs[0].path, expected, "{kind}/{name} {args}");
    assert!(needs[0].why.contains(why), "{kind}/{name} {args}: {}", needs[0].why);
    let out = run(fx, kind, name, args, &[]).await;
    assert!(out.is_error, "{kind}/{name} {args} ran without approval: {}", out.text);
    assert!(out.text.starts_with("refused: ") && out.text.contains(&expected.display().to_string()), "{}", out.text);
    assert!(!out.text.contains(SECRET), "{}", out.text);
    // Approving some other path changes nothing.
    let other = run(fx, kind, name, args, &[fx.w.join("a.txt")]).await;
    assert!(other.text.starts_with("refused: "), "{}", other.text);
    let out = run(fx, kind, name, args, &[expected.to_path_buf()]).await;
    assert!(!out.text.starts_with("refused: "), "{kind}/{name} {args} approved but refused: {}", out.text);
    out
}

const OUTSIDE: &str = "outside the workspace";
const SECRETS: &str = "usually holds secrets";

fn a(v: serde_json::Value) -> String {
    v.to_string()
}

#[tokio::test]
async fn path_escapes_are_refused_until_approved() {
    let fx = fixture();
    let secret = fx.out.join("secret.txt");
    let s = secret.display().to_string();
    let out_dir = fx.out.display().to_string();
    let read = |p: &str| a(json!({ "path": p }));
    let search = |p: &str| a(json!({ "path": p, "content": "TOP SECRET" }));

    // Absolute paths.
    let o = refused_then_runs(&fx, "", "read_file", &read(&s), &secret, OUTSIDE).await;
    assert!(o.text.contains(SECRET), "approved read reads: {}", o.text);
    let o = refused_then_runs(&fx, "", "list_directory", &read(&out_dir), &fx.out, OUTSIDE).await;
    assert!(o.text.contains("secret.txt"), "{}", o.text);
    let o = refused_then_runs(&fx, "", "search_files", &search(&out_dir), &fx.out, OUTSIDE).await;
    assert!(o.text.contains("secret.txt:1:") && o.text.contains("deep/also.txt:1:"), "{}", o.text);
    let abs_new = fx.out.join("abs-new.txt");
    let args = a(json!({"path": abs_new.display().to_string(), "content": "x"}));
    refused_then_runs(&fx, "", "write_file", &args, &abs_new, OUTSIDE).await;
    assert!(abs_new.exists());

    // `../`, one level and many.
    refused_then_runs(&fx, "", "read_file", &read("../out/secret.txt"), &secret, OUTSIDE).await;
    refused_then_runs(&fx, "custom", "read_file", &read("../out/secret.txt"), &secret, OUTSIDE).await;
    let ups = "../".repeat(fx.w.components().count() + 3);
    let many = format!("{ups}{}", s.trim_start_matches('/'));
    refused_then_runs(&fx, "", "read_file", &read(&many), &secret, OUTSIDE).await;
    let o = refused_then_runs(
        &fx,
        "",
        "list_directory",
        &read("../../.."),
        &fx.w.join("../../..").canonicalize().unwrap(),
        OUTSIDE,
    )
    .await;
    assert!(!o.is_error, "{}", o.text);

    // `a/../../x`: through an existing folder, and through one that does not exist (taken as
    // written; the kernel then fails to open it even when approved).
    refused_then_runs(&fx, "", "read_file", &read("sub/../../out/secret.txt"), &secret, OUTSIDE).await;
    let lexical = fx.w.join("nope/../../out/secret.txt");
    let o = refused_then_runs(&fx, "", "read_file", &read("nope/../../out/secret.txt"), &lexical, OUTSIDE).await;
    assert!(!o.text.contains(SECRET), "{}", o.text);

    // Symlinks: a file, a middle directory, a chain.
    refused_then_runs(&fx, "", "read_file", &read("link.txt"), &secret, OUTSIDE).await;
    let args = a(json!({"path": "link.txt", "content": "overwritten"}));
    refused_then_runs(&fx, "", "write_file", &args, &secret, OUTSIDE).await;
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    refused_then_runs(&fx, "", "read_file", &read("sub/outdir/secret.txt"), &secret, OUTSIDE).await;
    let below = fx.out.join("deep/new.txt");
    let args = a(json!({"path": "sub/outdir/deep/new.txt", "content": "x"}));
    refused_then_runs(&fx, "", "write_file", &args, &below, OUTSIDE).await;
    assert!(below.exists());
    let o = refused_then_runs(&fx, "", "read_file", &read("chain2"), &secret, OUTSIDE).await;
    assert!(o.text.contains(SECRET));

    // Listing and searching folders outside, directly and through an inner link.
    refused_then_runs(&fx, "", "list_directory", &read("../out"), &fx.out, OUTSIDE).await;
    refused_then_runs(&fx, "", "search_files", &search("../out"), &fx.out, OUTSIDE).await;
    let by_name = a(json!({"path": "../out", "name": "secret"}));
    refused_then_runs(&fx, "", "search_files", &by_name, &fx.out, OUTSIDE).await;
    refused_then_runs(&fx, "", "list_directory", &read("sub/outdir"), &fx.out, OUTSIDE).await;
    let o = refused_then_runs(&fx, "", "search_files", &search("sub/outdir"), &fx.out, OUTSIDE).await;
    assert!(o.text.contains("sub/outdir/secret.txt:1:"), "shown as the model wrote it: {}", o.text);
}

#[tokio::test]
async fn new_files_outside_are_refused_until_approved() {
    let fx = fixture();
    let write = |p: &str| a(json!({ "path": p, "content": "x" }));
    let target = fx.out.join("new.txt");
    refused_then_runs(&fx, "", "write_file", &write("../out/new.txt"), &target, OUTSIDE).await;
    assert!(target.exists());
    let target = fx.out.join("brand/new.txt");
    let abs = target.display().to_string();
    let o = refused_then_runs(&fx, "", "write_file", &write(&abs), &target, OUTSIDE).await;
    assert!(o.is_error && o.text.contains("cannot write"), "no such folder: {}", o.text);
    // A dangling link would create its target: it counts as that target.
    let target = fx.out.join("not-yet.txt");
    refused_then_runs(&fx, "", "write_file", &write("dangling"), &target, OUTSIDE).await;
    assert!(target.exists());
}

#[tokio::test]
async fn secrets_inside_are_refused_until_approved() {
    let fx = fixture();
    let read = |p: &str| a(json!({ "path": p }));
    for f in [
        ".env",
        ".env.local",
        "app/.env.production",
        ".ssh/id_rsa",
        "x.pem",
        "id_ed25519",
        ".git/config",
        ".netrc",
        ".aws/credentials",
        ".gnupg/x",
        "home/config/config.toml",
        "home/data/history.db",
    ] {
        let o = refused_then_runs(&fx, "", "read_file", &read(f), &fx.w.join(f), SECRETS).await;
        assert!(o.text.contains(SECRET), "{f}: {}", o.text);
    }
    refused_then_runs(&fx, "", "read_file", &read("sub/../.ssh/id_rsa"), &fx.w.join(".ssh/id_rsa"), SECRETS).await;
    refused_then_runs(&fx, "", "list_directory", &read(".ssh"), &fx.w.join(".ssh"), SECRETS).await;
    let search = a(json!({"path": ".ssh", "content": "TOP"}));
    refused_then_runs(&fx, "", "search_files", &search, &fx.w.join(".ssh"), SECRETS).await;
    let write = a(json!({"path": ".env", "content": "KEY=1"}));
    refused_then_runs(&fx, "", "write_file", &write, &fx.w.join(".env"), SECRETS).await;
    refused_then_runs(&fx, "custom", "read_file", &read(".netrc"), &fx.w.join(".netrc"), SECRETS).await;
    // A harmless name that links to a secret is the secret.
    refused_then_runs(&fx, "", "read_file", &read("innocent.txt"), &fx.w.join(".env"), SECRETS).await;
    // Outside and secret: the reason says both.
    let o = fx.reg.paths_needing_approval("", "read_file", &read("../w/.ssh/../../out/.env"));
    assert!(o.len() == 1 && o[0].why.contains(OUTSIDE) && o[0].why.contains(SECRETS), "{o:?}");
    // Public keys and look-alikes are fine.
    for f in ["id_ed25519.pub", "a.txt", "inner-link", "."] {
        assert!(fx.reg.paths_needing_approval("", "read_file", &read(f)).is_empty(), "{f}");
    }
    let o = run(&fx, "", "read_file", &read("id_ed25519.pub"), &[]).await;
    assert!(!o.is_error && o.text.contains("public"), "{}", o.text);
}

#[tokio::test]
async fn walks_never_follow_links_out_or_read_secrets() {
    let fx = fixture();
    // Searching the whole workspace: no approval, no outside content, no secret content.
    let search = a(json!({"path": ".", "content": "TOP SECRET"}));
    assert!(fx.reg.paths_needing_approval("", "search_files", &search).is_empty());
    let o = run(&fx, "", "search_files", &search, &[]).await;
    assert!(!o.is_error, "{}", o.text);
    assert!(!o.text.contains(SECRET), "a secret or an outside file was searched: {}", o.text);
    assert!(o.text.starts_with("no matches"), "{}", o.text);
    assert!(
        o.text.ends_with(
            "[not searched: 12 file(s) that usually hold secrets or are hard links; read_file asks the user]"
        ),
        "{}",
        o.text
    );
    // By name, links out (file, chain, directory) are skipped too; links inside are kept.
    let o = run(&fx, "", "search_files", &a(json!({"name": "secret"})), &[]).await;
    assert!(o.text.starts_with("no matches"), "{}", o.text);
    let o = run(&fx, "", "search_files", &a(json!({"name": "chain"})), &[]).await;
    assert!(o.text.starts_with("no matches"), "{}", o.text);
    let o = run(&fx, "", "search_files", &a(json!({"content": "hello"})), &[]).await;
    assert!(o.text.starts_with("a.txt:1: hello\ninner-link:1: hello\n[not searched: 12 "), "{}", o.text);
    // Listing shows links only by name, marked, whether they point in or out.
    let o = run(&fx, "", "list_directory", &a(json!({})), &[]).await;
    let lines: Vec<&str> = o.text.lines().collect();
    assert!(lines.contains(&"link.txt@ (link pointing outside the workspace)"), "{}", o.text);
    assert!(lines.contains(&"chain2@ (link pointing outside the workspace)"), "{}", o.text);
    assert!(lines.contains(&"inner-link@") && lines.contains(&"sub/") && lines.contains(&".env"), "{}", o.text);
    let o = run(&fx, "", "list_directory", &a(json!({"path": "sub"})), &[]).await;
    assert_eq!(o.text, "outdir@ (link pointing outside the workspace)");
    assert!(!o.text.contains(&fx.out.display().to_string()), "the target is not shown");
}

#[tokio::test]
async fn patches_outside_or_on_secrets_are_refused_until_approved() {
    let fx = fixture();
    let op = |kind: &str, path: &str, diff: &str| a(json!({"type": kind, "path": path, "diff": diff}));
    let x = fx.w.parent().unwrap().join("x");
    refused_then_runs(&fx, "apply_patch", "apply_patch", &op("create_file", "../x", "+hi"), &x, OUTSIDE).await;
    assert_eq!(std::fs::read_to_string(&x).unwrap(), "hi\n");
    let created = fx.out.join("patched.txt");
    let args = op("create_file", &created.display().to_string(), "+made");
    refused_then_runs(&fx, "apply_patch", "apply_patch", &args, &created, OUTSIDE).await;
    let secret = fx.out.join("secret.txt");
    let args = op("update_file", &secret.display().to_string(), &format!("@@\n-{SECRET}\n+gone"));
    let o = refused_then_runs(&fx, "apply_patch", "apply_patch", &args, &secret, OUTSIDE).await;
    assert!(!o.is_error, "{}", o.text);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "gone\n");
    let args = op("delete_file", "link.txt", "");
    refused_then_runs(&fx, "apply_patch", "apply_patch", &args, &secret, OUTSIDE).await;
    // Deleting a link removes the link, not what it points at.
    assert!(secret.exists() && std::fs::symlink_metadata(fx.w.join("link.txt")).is_err());
    let args = op("update_file", ".env", &format!("@@\n-{SECRET}\n+X=1"));
    refused_then_runs(&fx, "apply_patch", "apply_patch", &args, &fx.w.join(".env"), SECRETS).await;
    // Inside: nothing to approve.
    let args = op("create_file", "sub/ok.txt", "+fine");
    assert!(fx.reg.paths_needing_approval("apply_patch", "apply_patch", &args).is_empty());
    assert!(!run(&fx, "apply_patch", "apply_patch", &args, &[]).await.is_error);
}

#[tokio::test]
async fn shells_start_in_the_workspace_and_ask_for_other_folders() {
    let fx = fixture();
    let local = |wd: &str| a(json!({"type": "exec", "command": ["pwd"], "working_directory": wd}));
    let shell = |wd: &str| a(json!({"commands": ["pwd"], "working_directory": wd}));
    let o = refused_then_runs(&fx, "local_shell", "local_shell", &local("../out"), &fx.out, OUTSIDE).await;
    assert!(o.text.contains(&fx.out.display().to_string()), "{}", o.text);
    let abs = fx.out.display().to_string();
    refused_then_runs(&fx, "local_shell", "local_shell", &local(&abs), &fx.out, OUTSIDE).await;
    refused_then_runs(&fx, "shell", "shell", &shell(&abs), &fx.out, OUTSIDE).await;
    refused_then_runs(&fx, "shell", "shell", &shell("sub/outdir"), &fx.out, OUTSIDE).await;
    refused_then_runs(&fx, "local_shell", "local_shell", &local(".ssh"), &fx.w.join(".ssh"), SECRETS).await;
    // No working directory: the workspace root, with nothing to approve; the same for
    // run_command.
    let args = a(json!({"commands": ["pwd"]}));
    assert!(fx.reg.paths_needing_approval("shell", "shell", &args).is_empty());
    let o = run(&fx, "shell", "shell", &args, &[]).await;
    assert!(o.text.contains(&format!("{}\\n", fx.w.display())), "{}", o.text);
    let o = run(&fx, "", "run_command", &a(json!({"command": "pwd"})), &[]).await;
    assert!(o.text.contains(&format!("{}\n", fx.w.display())), "{}", o.text);
    let o = run(&fx, "local_shell", "local_shell", &local("sub"), &[]).await;
    assert!(o.text.contains(&fx.w.join("sub").display().to_string()), "{}", o.text);
}

#[tokio::test]
async fn nothing_to_approve_for_other_calls() {
    let fx = fixture();
    let r = &fx.reg;
    assert!(r.paths_needing_approval("", "read_file", "{not json").is_empty());
    assert!(r.paths_needing_approval("", "nope", r#"{"path":"/etc/passwd"}"#).is_empty());
    assert!(r.paths_needing_approval("mcp_approval", "x", r#"{"path":"/etc/passwd"}"#).is_empty());
    assert!(r.paths_needing_approval("", "current_time", r#"{"path":"/etc/passwd"}"#).is_empty());
    assert!(r.paths_needing_approval("custom", "read_file", "/etc/passwd").is_empty(), "plain text is `input`");
    assert!(r.paths_needing_approval("apply_patch", "apply_patch", "nope").is_empty());
}
