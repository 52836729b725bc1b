//! Tests of path resolution and classification: escapes through `..`, absolute paths and
//! symlinks, paths that do not exist yet, secrets, approvals, construction.

use super::*;
use std::os::unix::fs::symlink;

/// A workspace `w` and a sibling `out` holding `secret.txt`, in one temporary directory.
fn setup() -> (tempfile::TempDir, Workspace, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let w = tmp.path().join("w");
    let out = tmp.path().join("out");
    std::fs::create_dir_all(w.join("sub")).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("secret.txt"), "s").unwrap();
    std::fs::write(w.join("a.txt"), "a").unwrap();
    let ws = Workspace::new(&w, Vec::new()).unwrap();
    let out = std::fs::canonicalize(out).unwrap();
    (tmp, ws, out)
}

fn verdict(ws: &Workspace, raw: &str) -> Verdict {
    ws.check(raw).verdict
}

#[test]
fn relative_paths_resolve_against_the_root() {
    let (_t, ws, _out) = setup();
    let c = ws.check("a.txt");
    assert_eq!(c, PathCheck { resolved: ws.root().join("a.txt"), verdict: Verdict::Inside });
    assert_eq!(ws.check("./sub/../a.txt").resolved, ws.root().join("a.txt"));
    assert_eq!(ws.check("").resolved, ws.root());
    assert_eq!(ws.check(".").verdict, Verdict::Inside);
    // Not there yet: the rest is appended as written.
    assert_eq!(
        ws.check("new/dir/f.txt"),
        PathCheck { resolved: ws.root().join("new/dir/f.txt"), verdict: Verdict::Inside }
    );
}

#[test]
fn escapes_are_outside() {
    let (_t, ws, out) = setup();
    let abs = out.join("secret.txt");
    assert_eq!(ws.check(&abs.display().to_string()), PathCheck { resolved: abs.clone(), verdict: Verdict::Outside });
    assert_eq!(ws.check("../out/secret.txt"), PathCheck { resolved: abs, verdict: Verdict::Outside });
    assert_eq!(verdict(&ws, "../../../../../../../../etc/passwd"), Verdict::Outside);
    assert_eq!(ws.check("../../../../../../../../etc/passwd").resolved, PathBuf::from("/etc/passwd"));
    assert_eq!(verdict(&ws, "sub/../../out"), Verdict::Outside);
    assert_eq!(verdict(&ws, ".."), Verdict::Outside);
    // `..` after a missing component cannot be resolved honestly: treated as outside.
    assert_eq!(verdict(&ws, "nope/../a.txt"), Verdict::Outside);
    assert_eq!(verdict(&ws, "nope/../../out/x"), Verdict::Outside);
}

#[test]
fn symlinks_are_followed_on_every_component() {
    let (_t, ws, out) = setup();
    let r = ws.root().to_path_buf();
    symlink(out.join("secret.txt"), r.join("link.txt")).unwrap();
    symlink(&out, r.join("sub/outdir")).unwrap();
    symlink("link.txt", r.join("chain1")).unwrap();
    symlink("chain1", r.join("chain2")).unwrap();
    symlink("a.txt", r.join("inner")).unwrap();
    symlink(out.join("not-yet"), r.join("dangling")).unwrap();
    symlink("loop2", r.join("loop1")).unwrap();
    symlink("loop1", r.join("loop2")).unwrap();
    assert_eq!(ws.check("link.txt"), PathCheck { resolved: out.join("secret.txt"), verdict: Verdict::Outside });
    assert_eq!(ws.check("sub/outdir/secret.txt").resolved, out.join("secret.txt"));
    assert_eq!(verdict(&ws, "sub/outdir/new/file"), Verdict::Outside);
    assert_eq!(ws.check("chain2").resolved, out.join("secret.txt"));
    assert_eq!(ws.check("inner"), PathCheck { resolved: r.join("a.txt"), verdict: Verdict::Inside });
    // A dangling link would create its target on write: it resolves to that target.
    assert_eq!(ws.check("dangling"), PathCheck { resolved: out.join("not-yet"), verdict: Verdict::Outside });
    assert_eq!(verdict(&ws, "loop1"), Verdict::Outside);
    // `..` after a symlinked directory climbs from its target, as the kernel does.
    assert_eq!(ws.check("sub/outdir/..").resolved, out.parent().unwrap());
}

#[test]
fn secrets_inside_the_workspace_need_approval() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join("data")).unwrap();
    let ws = Workspace::new(tmp.path(), vec![home.join("data"), PathBuf::from("cfg")]).unwrap();
    // What a sandboxed command started here may not write either.
    let root = ws.root().to_path_buf();
    for p in [root.join(".git/hooks"), root.join(".git/config"), root.join(".palaver"), root.join("home/data")] {
        assert!(ws.planted().contains(&p), "{p:?} not in {:?}", ws.planted());
    }
    for p in [
        ".env",
        ".env.local",
        "app/.env.production",
        ".ssh/id_rsa",
        ".ssh",
        ".ssh/known_hosts",
        "x.pem",
        "CERT.PEM",
        "id_ed25519",
        "keys/id_ecdsa_sk",
        ".git/config",
        ".netrc",
        ".git-credentials",
        ".aws/credentials",
        ".gnupg/x",
        "home/data/conversations.db",
        "home/data",
        "cfg/config.toml",
        ".npmrc",
        "web/.npmrc",
        ".pypirc",
        ".docker/config.json",
        ".kube/config",
        "infra/terraform.tfstate",
        "infra/prod.tfstate.backup",
        ".vault-token",
        "credentials.json",
        "server.key",
        "store.p12",
        ".pgpass",
        ".cargo/credentials.toml",
        ".git/hooks/pre-commit",
        ".git/hooks",
        "sub/.git/hooks/post-checkout",
        ".palaver/commands/deploy.md",
    ] {
        assert!(matches!(verdict(&ws, p), Verdict::Secret(_)), "{p} should be secret");
        assert!(ws.need(p, false).is_some_and(|n| n.why.starts_with("usually holds secrets")), "{p}");
    }
    for p in [
        "id_rsa.pub",
        "id_utils.rs",
        "environment.txt",
        ".envrc",
        "src/config",
        ".git/HEAD",
        "home/other",
        "a.txt",
        "config.json",
        "docker/config.json",
        "keys.rs",
        "package.json",
        "hooks/pre-commit",
        "main.tf",
    ] {
        assert_eq!(verdict(&ws, p), Verdict::Inside, "{p} should be allowed");
        assert_eq!(ws.need(p, false), None);
    }
    assert_eq!(secret_kind(Path::new("/h/.ssh/id_rsa")), Some("SSH keys"));
    // Case-insensitive file systems open these as the real thing.
    for p in ["/h/.SSH/x", "/h/.Env", "/h/ID_RSA", "/h/.Git/Config", "/h/k.PEM"] {
        assert!(secret_kind(Path::new(p)).is_some(), "{p}");
    }
    assert_eq!(verdict(&ws, "/etc/.env"), Verdict::Outside);
    let need = ws.need("/etc/.env", true).unwrap();
    assert!(need.why.contains("outside the workspace") && need.why.contains("secrets"), "{}", need.why);
    assert!(need.write);
}

#[test]
fn guard_lets_approved_paths_through() {
    let (_t, ws, out) = setup();
    let target = out.join("secret.txt");
    let err = ws.guard("../out/secret.txt", &[]).unwrap_err();
    assert!(err.contains(&target.display().to_string()) && err.contains("outside the workspace"), "{err}");
    assert_eq!(ws.guard("../out/secret.txt", std::slice::from_ref(&target)), Ok(target.clone()));
    // Approving one path approves only that path.
    assert!(ws.guard("../out/other.txt", &[target]).is_err());
    assert_eq!(ws.guard("a.txt", &[]), Ok(ws.root().join("a.txt")));
}

#[test]
fn construction() {
    let (_t, ws, out) = setup();
    assert!(Workspace::new(&out.join("secret.txt"), Vec::new()).unwrap_err().contains("not a directory"));
    assert!(Workspace::new(&out.join("missing"), Vec::new()).is_err());
    // A root given through a symlink is stored resolved.
    let link = out.join("to-w");
    symlink(ws.root(), &link).unwrap();
    assert_eq!(Workspace::new(&link, Vec::new()).unwrap().root(), ws.root());
    let cur = Workspace::current();
    assert!(cur.root().is_absolute());
    assert_eq!(Workspace::default(), cur);
}

#[test]
fn a_hard_link_counts_as_outside() {
    let (_t, ws, out) = setup();
    let r = ws.root().to_path_buf();
    std::fs::hard_link(out.join("secret.txt"), r.join("looks-local.txt")).unwrap();
    let check = ws.check("looks-local.txt");
    assert_eq!(check.verdict, Verdict::Outside);
    let need = ws.need("looks-local.txt", false).unwrap();
    assert!(need.why.starts_with("a hard link: its other names may be outside the workspace"), "{}", need.why);
    assert!(ws.guard("looks-local.txt", &[]).unwrap_err().contains("hard link"));
    assert_eq!(ws.guard("looks-local.txt", std::slice::from_ref(&check.resolved)), Ok(check.resolved));
    // A file with one name is still inside.
    std::fs::write(r.join("plain.txt"), "p").unwrap();
    assert_eq!(ws.check("plain.txt").verdict, Verdict::Inside);
}
