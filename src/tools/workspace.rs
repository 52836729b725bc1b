//! The workspace: the one directory the built-in tools may act in without asking. This module
//! owns resolving a path the model sent (relative paths against the workspace root, `..`,
//! absolute paths and symlinks on every component) and classifying where it lands: inside,
//! outside, or on a file that usually holds secrets. Deciding to ask, and asking, is the
//! caller's; the tools call [`Workspace::guard`] again when they run (defense in depth).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Symlinks followed while resolving one path before giving up (Linux's own limit is 40).
const MAX_LINK_HOPS: usize = 40;

/// Why a protected directory (palaver's own config and data) needs an approval.
const PROTECTED_WHY: &str = "palaver's own config and data";

/// The directory the built-in tools are confined to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// Canonical (symlink-free, absolute) unless the process's directory could not be read.
    root: PathBuf,
    /// Resolved directories that count as secret even inside the root.
    protected: Vec<PathBuf>,
    /// The OS sandbox commands started here run in (none unless the session sets one).
    sandbox: super::sandbox::Policy,
    /// Paths commands started here may not write even inside the root (see [`Workspace::planted`]).
    planted: Vec<PathBuf>,
    /// The environment commands started here get (`[tool_env]`).
    tool_env: crate::sys::spawn::EnvPolicy,
}

/// Where a path resolved to and what that means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathCheck {
    pub resolved: PathBuf,
    pub verdict: Verdict,
}

/// What a resolved path is, for the approval decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Inside the workspace and not a secret: no approval needed.
    Inside,
    /// Outside the workspace, or a path that cannot be resolved safely (a `..` after a
    /// component that does not exist, a symlink loop).
    Outside,
    /// Inside the workspace, but a file that usually holds secrets; the text says what kind.
    Secret(&'static str),
}

/// A path a call touches that needs the user's approval, for the modal and headless refusals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathNeed {
    pub path: PathBuf,
    /// "outside the workspace /w" or "usually holds secrets (SSH keys)".
    pub why: String,
    /// Whether the call may change the path (write, patch, run commands there).
    pub write: bool,
}

impl Default for Workspace {
    fn default() -> Self {
        Self::current()
    }
}

impl Workspace {
    /// A workspace rooted at `root` (which must be an existing directory); `protected` are
    /// directories whose files need an approval even when inside it (palaver's config and data).
    ///
    /// # Errors
    /// When `root` does not exist or is not a directory.
    pub fn new(root: &Path, protected: Vec<PathBuf>) -> Result<Self, String> {
        let absolute = if root.is_absolute() {
            root.to_path_buf()
        } else {
            std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?.join(root)
        };
        let Some(resolved) = resolve(&absolute) else {
            return Err(format!("the workspace {} cannot be resolved", root.display()));
        };
        match std::fs::metadata(&resolved) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("the workspace {} is not a directory", root.display())),
            Err(e) => return Err(format!("the workspace {}: {e}", root.display())),
        }
        let protected: Vec<PathBuf> = protected
            .iter()
            .map(|p| {
                let p = if p.is_absolute() { p.clone() } else { resolved.join(p) };
                resolve(&p).unwrap_or(p)
            })
            .collect();
        let planted = planted(&resolved, &protected);
        Ok(Self {
            root: resolved,
            protected,
            sandbox: super::sandbox::Policy::default(),
            planted,
            tool_env: Default::default(),
        })
    }

    /// The process's current directory, with no protected directories. When that cannot be
    /// read, the root is `.` taken lexically, and every path then needs an approval.
    #[must_use]
    pub fn current() -> Self {
        let root = std::env::current_dir().ok().and_then(|d| resolve(&d)).unwrap_or_else(|| PathBuf::from("."));
        let planted = planted(&root, &[]);
        Self {
            root,
            protected: Vec::new(),
            sandbox: super::sandbox::Policy::default(),
            planted,
            tool_env: Default::default(),
        }
    }

    /// Paths a sandboxed command may not write even inside the root, because what is written
    /// there runs later outside any sandbox: git's hooks and config, the repository's
    /// `.palaver/` commands, palaver's own config and data.
    #[must_use]
    pub fn planted(&self) -> &[PathBuf] {
        &self.planted
    }

    /// The environment commands started here get.
    #[must_use]
    pub fn tool_env(&self) -> &crate::sys::spawn::EnvPolicy {
        &self.tool_env
    }

    /// Gives commands started here the environment `policy` builds (`[tool_env]`).
    pub fn set_tool_env(&mut self, policy: crate::sys::spawn::EnvPolicy) {
        self.tool_env = policy;
    }

    /// Where a command started in `cwd` runs, for [`super::sandbox::Policy::command`].
    #[must_use]
    pub fn place<'a>(&'a self, cwd: &'a Path) -> crate::sys::spawn::sandbox::Place<'a> {
        crate::sys::spawn::sandbox::Place { cwd, workspace: &self.root, protect: &self.planted, env: &self.tool_env }
    }

    /// The OS sandbox commands started in this workspace run in.
    #[must_use]
    pub fn sandbox(&self) -> &super::sandbox::Policy {
        &self.sandbox
    }

    /// Runs commands started here under `policy`.
    pub fn set_sandbox(&mut self, policy: super::sandbox::Policy) {
        self.sandbox = policy;
    }

    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path the model sent and classifies where it lands.
    #[must_use]
    pub fn check(&self, raw: &str) -> PathCheck {
        self.check_path(Path::new(raw))
    }

    /// [`Workspace::check`] for a path already in hand (a directory entry, a link).
    #[must_use]
    pub fn check_path(&self, path: &Path) -> PathCheck {
        let joined = self.root.join(path);
        match resolve(&joined) {
            Some(resolved) => {
                let verdict = self.classify(&resolved);
                PathCheck { resolved, verdict }
            }
            // Shown to the user as it was written: there is no honest resolved form.
            None => PathCheck { resolved: joined, verdict: Verdict::Outside },
        }
    }

    /// What a resolved path is: outside wins over secret (the approval text names both).
    #[must_use]
    pub fn classify(&self, resolved: &Path) -> Verdict {
        if !resolved.starts_with(&self.root) || hard_linked(resolved) {
            return Verdict::Outside;
        }
        self.secret_kind(resolved).map_or(Verdict::Inside, Verdict::Secret)
    }

    /// Whether a resolved path usually holds secrets, and what kind, wherever it is.
    #[must_use]
    pub fn secret_kind(&self, resolved: &Path) -> Option<&'static str> {
        if self.protected.iter().any(|p| resolved.starts_with(p)) {
            return Some(PROTECTED_WHY);
        }
        secret_kind(resolved)
    }

    /// The approval a path needs, if any.
    #[must_use]
    pub fn need(&self, raw: &str, write: bool) -> Option<PathNeed> {
        let check = self.check(raw);
        let why = self.why(&check)?;
        Some(PathNeed { path: check.resolved, why, write })
    }

    /// The reason a checked path needs an approval, or `None` when it does not.
    #[must_use]
    pub fn why(&self, check: &PathCheck) -> Option<String> {
        match check.verdict {
            Verdict::Inside => None,
            Verdict::Secret(kind) => Some(format!("usually holds secrets ({kind})")),
            Verdict::Outside => {
                let mut why = if check.resolved.starts_with(&self.root) {
                    format!("a hard link: its other names may be outside the workspace {}", self.root.display())
                } else {
                    format!("outside the workspace {}", self.root.display())
                };
                if let Some(kind) = self.secret_kind(&check.resolved) {
                    why.push_str(&format!(" and usually holds secrets ({kind})"));
                }
                Some(why)
            }
        }
    }

    /// The execution-time check: the resolved path when it is inside and not a secret, or when
    /// the user approved exactly that resolved path; otherwise an error for the model naming
    /// the path and why.
    ///
    /// # Errors
    /// The refusal text.
    pub fn guard(&self, raw: &str, approved: &[PathBuf]) -> Result<PathBuf, String> {
        let check = self.check(raw);
        match self.why(&check) {
            None => Ok(check.resolved),
            Some(_) if approved.contains(&check.resolved) => Ok(check.resolved),
            Some(why) => Err(refusal(&check.resolved, &why)),
        }
    }
}

/// [`Workspace::planted`] for a workspace at `root` with palaver's folders `protected`.
fn planted(root: &Path, protected: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths = vec![root.join(".git/hooks"), root.join(".git/config"), root.join(".palaver")];
    paths.extend(protected.iter().cloned());
    paths
}

/// Whether `path` is a regular file with more than one name. A hard link inside the workspace
/// to a file outside it looks like any other file; its link count is the only sign, so every
/// such file is treated as outside (reading or writing it reaches the other names too).
#[must_use]
pub fn hard_linked(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.nlink() > 1)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// The error a tool returns for a path the user did not approve.
#[must_use]
pub fn refusal(path: &Path, why: &str) -> String {
    format!(
        "refused: {} is {why}; reaching it needs the user's approval, which was not given. \
         Work with files inside the workspace instead.",
        path.display()
    )
}

/// Directories whose contents usually are secrets.
const SECRET_DIRS: [(&str, &str); 3] = [(".ssh", "SSH keys"), (".aws", "AWS credentials"), (".gnupg", "GnuPG keys")];
/// Private key file names start `id_` and one of these; `.pub` files are public keys.
const KEY_TYPES: [&str; 5] = ["rsa", "dsa", "ecdsa", "ed25519", "xmss"];
/// Credential files a project folder (or a home directory) commonly holds, by exact name.
const SECRET_FILES: [(&str, &str); 16] = [
    (".netrc", "login passwords (.netrc)"),
    ("_netrc", "login passwords (.netrc)"),
    (".git-credentials", "git credentials"),
    (".npmrc", "package registry tokens (.npmrc)"),
    (".pypirc", "package registry passwords (.pypirc)"),
    (".yarnrc.yml", "package registry tokens (.yarnrc.yml)"),
    (".vault-token", "a Vault token"),
    (".pgpass", "database passwords (.pgpass)"),
    (".my.cnf", "database passwords (.my.cnf)"),
    ("credentials.json", "cloud credentials (credentials.json)"),
    ("service-account.json", "cloud credentials"),
    ("terraform.tfvars", "Terraform variables, which often hold secrets"),
    (".htpasswd", "password hashes (.htpasswd)"),
    ("secrets.yml", "application secrets"),
    ("secrets.yaml", "application secrets"),
    ("master.key", "application secrets (master.key)"),
];
/// Files known by their folder and name (`.docker/config.json`), compared on the last two names.
const SECRET_PAIRS: [(&str, &str, &str); 7] = [
    (".git", "config", "git config, which may hold credentials"),
    (".docker", "config.json", "registry logins (.docker/config.json)"),
    (".kube", "config", "Kubernetes credentials (.kube/config)"),
    (".gem", "credentials", "package registry tokens (.gem/credentials)"),
    (".cargo", "credentials.toml", "package registry tokens (.cargo/credentials)"),
    (".cargo", "credentials", "package registry tokens (.cargo/credentials)"),
    ("gcloud", "application_default_credentials.json", "Google Cloud credentials"),
];
/// Name endings of files that hold keys, keystores or state with secrets in it.
const SECRET_ENDINGS: [(&str, &str); 9] = [
    (".pem", "a PEM key or certificate"),
    (".key", "a private key (.key)"),
    (".p12", "a key store (.p12)"),
    (".pfx", "a key store (.pfx)"),
    (".jks", "a key store (.jks)"),
    (".keystore", "a key store"),
    (".tfstate", "Terraform state, which holds secrets"),
    (".tfstate.backup", "Terraform state, which holds secrets"),
    (".ppk", "a private SSH key (PuTTY)"),
];

/// The kind of secret a path usually holds, judged by its names only. Names compare without
/// case: on a case-insensitive file system `.SSH/ID_RSA` is the key itself.
#[must_use]
pub fn secret_kind(path: &Path) -> Option<&'static str> {
    let names: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().to_lowercase()),
            _ => None,
        })
        .collect();
    // A directory anywhere on the path (the path itself included: listing `.ssh` names keys).
    for name in &names {
        if let Some((_, kind)) = SECRET_DIRS.iter().find(|(d, _)| d == name) {
            return Some(kind);
        }
    }
    let file = names.last()?.as_str();
    let parent = names.len().checked_sub(2).and_then(|i| names.get(i)).map(String::as_str);
    if file == ".env" || file.starts_with(".env.") {
        return Some("environment secrets (.env)");
    }
    if let Some((_, kind)) = SECRET_FILES.iter().find(|(n, _)| *n == file) {
        return Some(kind);
    }
    if let Some((_, _, kind)) = SECRET_PAIRS.iter().find(|(d, n, _)| Some(*d) == parent && *n == file) {
        return Some(kind);
    }
    if let Some((_, kind)) = SECRET_ENDINGS.iter().find(|(end, _)| file.ends_with(end)) {
        return Some(kind);
    }
    if let Some(rest) = file.strip_prefix("id_")
        && KEY_TYPES.iter().any(|k| rest.starts_with(k))
        && !file.ends_with(".pub")
    {
        return Some("a private SSH key");
    }
    git_internals(&names)
}

/// Git's hooks run on the next git command, and its config can name commands too: writing
/// either is running code, so both need an approval naming the path.
fn git_internals(names: &[String]) -> Option<&'static str> {
    if names.iter().any(|n| n == ".palaver") {
        return Some("palaver's repository commands, which run as prompts and tools");
    }
    let git = names.iter().rposition(|n| n == ".git")?;
    match names.get(git + 1).map(String::as_str) {
        Some("hooks") => Some("git hooks, which run as commands"),
        _ => None,
    }
}

/// One step of a path still to resolve.
enum Part {
    /// A root (`/`, or a Windows prefix and root): resolution restarts there.
    Root(PathBuf),
    Up,
    Name(OsString),
}

fn parts(p: &Path) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => out.push(Part::Up),
            Component::Normal(n) => out.push(Part::Name(n.to_owned())),
            Component::Prefix(_) => out.push(Part::Root(PathBuf::from(c.as_os_str()))),
            Component::RootDir => match out.last_mut() {
                Some(Part::Root(prefix)) => prefix.push(c.as_os_str()),
                _ => out.push(Part::Root(PathBuf::from(c.as_os_str()))),
            },
        }
    }
    out
}

/// Resolves an absolute path: follows symlinks on every existing component (so the result
/// has none), then appends the part that does not exist yet as written. `None` when that is
/// not safe to do: a `..` after a missing component (where it lands depends on what gets
/// created there), a symlink loop, or an unreadable link.
#[must_use]
pub fn resolve(path: &Path) -> Option<PathBuf> {
    let mut todo = parts(path);
    todo.reverse();
    let mut cur = PathBuf::new();
    let mut missing: Vec<OsString> = Vec::new();
    let mut hops = 0;
    while let Some(part) = todo.pop() {
        match part {
            Part::Root(r) => {
                cur = r;
                missing.clear();
            }
            Part::Up if missing.is_empty() => {
                cur.pop();
            }
            Part::Up => return None,
            Part::Name(n) if !missing.is_empty() => missing.push(n),
            Part::Name(n) => {
                let next = cur.join(&n);
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        hops += 1;
                        if hops > MAX_LINK_HOPS {
                            return None;
                        }
                        let target = std::fs::read_link(&next).ok()?;
                        // A relative target is read from the link's directory, which is `cur`.
                        todo.extend(parts(&target).into_iter().rev());
                    }
                    Ok(_) => cur = next,
                    // Not there (or not reachable): everything from here on is taken as written.
                    Err(_) => missing.push(n),
                }
            }
        }
    }
    Some(missing.iter().fold(cur, |p, n| p.join(n)))
}

#[cfg(test)]
#[cfg(unix)]
#[path = "workspace_tests.rs"]
mod tests;
