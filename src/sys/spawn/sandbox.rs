//! The OS sandbox commands run in (`run_command`, Responses shell calls, user tools): on Linux,
//! Landlock, with reads allowed everywhere, writes only in the workspace and the temporary
//! directory (or nowhere, `read-only`), and TCP `bind`/`connect` refused unless the profile
//! opens the network (`sandbox_network = true`; needs Landlock ABI 4, Linux 6.7). A closed
//! network also means a seccomp filter (see [`super::seccomp`]): no socket of any family opens,
//! Unix ones included (a Unix socket reaches whatever listens outside: the user's tmux server,
//! Docker, ssh-agent, D-Bus), while `socketpair` still makes connected pairs between processes;
//! Landlock's scopes (ABI 6, Linux 6.12) also keep the command from abstract Unix sockets made
//! outside it. Signals to processes outside the sandbox are refused in every mode (ABI 6).
//! In `workspace-write`, `.git/hooks`, `.git/config` and palaver's own folders stay read-only
//! inside the workspace (see [`super::protect`]).
//!
//! Why a re-exec: Landlock must be applied in the child, between fork and exec, and
//! `CommandExt::pre_exec` is `unsafe` (the closure must be async-signal-safe, which building a
//! ruleset, allocating and opening paths is not) while palaver forbids `unsafe_code`. So a
//! sandboxed command is started as `palaver __sandbox-exec MODE NET WRITABLE… -- PROGRAM ARGS…`:
//! that process is single-threaded and has not started its runtime, applies Landlock to itself
//! with the crate's safe API, and `exec`s the command, which inherits the restriction (and
//! `no_new_privs`) for good. The pid stays the same, so process groups and kills work as before.
//!
//! Whether Landlock works is probed once, in a throwaway thread (a Landlock domain binds only
//! the thread that asked for it); when it does not, commands run without a sandbox and palaver
//! says so before the first one (see [`notice`]).

use super::{EnvPolicy, Role, Spawn};
#[cfg(target_os = "linux")]
use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    path_beneath_rules,
};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `sandbox = "workspace-write" | "read-only" | "off"` in a profile or a `[[tools]]` entry:
/// what a command palaver runs for a model may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes only in the workspace and the temporary directory.
    #[default]
    WorkspaceWrite,
    /// No writes at all (but `/dev/null`).
    ReadOnly,
    /// No sandbox: the command may do whatever the user may.
    Off,
}

impl SandboxMode {
    /// The name as written in `config.toml`.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::WorkspaceWrite => "workspace-write",
            Self::ReadOnly => "read-only",
            Self::Off => "off",
        }
    }

    /// The mode a label names.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Self::WorkspaceWrite, Self::ReadOnly, Self::Off].into_iter().find(|m| m.label() == s)
    }
}

/// Where a command runs and what it may not touch there.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// Its working directory.
    pub cwd: &'a Path,
    /// The workspace it may write in (`workspace-write`).
    pub workspace: &'a Path,
    /// Paths that stay read-only inside it (see [`super::protect`]).
    pub protect: &'a [PathBuf],
    /// The environment it gets.
    pub env: &'a EnvPolicy,
}

/// The argument that makes palaver the sandbox helper instead of the chat client.
pub const HELPER_ARG: &str = "__sandbox-exec";
/// In the helper's arguments, what follows (up to `--`) stays read-only (see [`super::protect`]).
const PROTECT_ARG: &str = "--protect";

/// The Landlock ABI whose rights palaver asks for (newer kernels enforce exactly these).
#[cfg(target_os = "linux")]
const TARGET_ABI: ABI = ABI::V5;

/// How commands run: the mode, whether the network is open, and the program that applies the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub mode: SandboxMode,
    /// Network sockets allowed (`sandbox_network = true`): TCP, UDP and the rest.
    pub network: bool,
    /// palaver itself (`/proc/self/exe`), run as [`HELPER_ARG`]; tests name the built binary.
    pub helper: PathBuf,
}

impl Default for Policy {
    /// No sandbox: what a bare library caller gets. The configured session sets one
    /// (`workspace-write` unless the profile says otherwise), see [`Policy::configured`].
    fn default() -> Self {
        Self { mode: SandboxMode::Off, network: true, helper: PathBuf::new() }
    }
}

impl Policy {
    /// The policy a profile asks for, applied by palaver's own binary.
    #[must_use]
    pub fn configured(mode: Option<SandboxMode>, network: Option<bool>) -> Self {
        Self {
            mode: mode.unwrap_or_default(),
            network: network.unwrap_or(false),
            helper: PathBuf::from("/proc/self/exe"),
        }
    }

    /// The same policy in another mode (a `[[tools]]` entry's own `sandbox`).
    #[must_use]
    pub fn with_mode(&self, mode: Option<SandboxMode>) -> Self {
        Self { mode: mode.unwrap_or(self.mode), ..self.clone() }
    }

    /// Whether commands really run sandboxed: asked for, and Landlock works here.
    #[must_use]
    pub fn active(&self) -> bool {
        self.mode != SandboxMode::Off && !self.helper.as_os_str().is_empty() && support().available()
    }

    /// One line naming the sandbox a command will run in, as probed here.
    #[must_use]
    pub fn describe(&self) -> String {
        self.describe_on(Some(support()))
    }

    /// One line naming the sandbox a command will run in on a system with `support` (`None`:
    /// not probed, as in a bare state; the mode alone is named).
    #[must_use]
    pub fn describe_on(&self, support: Option<Support>) -> String {
        if self.mode == SandboxMode::Off {
            return "no sandbox (sandbox = \"off\"): the command may change anything you may".into();
        }
        let (abi, net, sockets) = match support {
            Some(Support::Unavailable(why)) => return format!("NO sandbox: {why}"),
            Some(Support::Landlock { abi, net, sockets }) => (format!(" (Landlock {abi})"), net, sockets),
            None => (String::new(), true, true),
        };
        let writes = match self.mode {
            SandboxMode::ReadOnly => "none",
            _ => "workspace, temp dir",
        };
        let network = match (self.network, net, sockets) {
            (true, _, _) => "open",
            (false, _, true) => "closed, Unix sockets too",
            (false, true, false) => "TCP closed, UDP and other sockets NOT (no seccomp)",
            (false, false, false) => "NOT closed (needs Landlock ABI 4 or seccomp)",
        };
        // Without a mount namespace the same paths are put back after the command instead.
        let kept = match (self.mode, support.is_none() || super::protect::available()) {
            (SandboxMode::WorkspaceWrite, true) => " (not .git/hooks, .git/config, palaver's folders)",
            (SandboxMode::WorkspaceWrite, false) => " (.git/hooks, .git/config, palaver's folders put back after)",
            _ => "",
        };
        format!("sandbox {}{abi} · writes: {writes}{kept} · network: {network}", self.mode.label())
    }

    /// The [`Spawn`] running `program args` at `place` under this policy: wrapped in the helper
    /// when the sandbox is active, as is otherwise; in its own process group either way.
    #[must_use]
    pub fn command(&self, program: &OsStr, args: &[OsString], place: Place<'_>) -> Spawn {
        let mut cmd = if self.active() {
            let mut c = Spawn::new(&self.helper, Role::Contained, place.env);
            c.arg(HELPER_ARG).arg(self.mode.label()).arg(if self.network { "open" } else { "closed" });
            c.args(self.writable(place.workspace, place.cwd));
            if !place.protect.is_empty() {
                c.arg(PROTECT_ARG).args(place.protect);
            }
            c.arg("--").arg(program);
            c
        } else {
            Spawn::new(program, Role::Contained, place.env)
        };
        cmd.args(args).current_dir(place.cwd);
        cmd
    }

    /// The paths a sandboxed command may write below: `/dev/null` always; in `workspace-write`
    /// the workspace, the temporary directory, and a working directory outside the workspace
    /// (a shell call's, which the user approved as a write to run there).
    fn writable(&self, workspace: &Path, cwd: &Path) -> Vec<PathBuf> {
        let mut paths = vec![PathBuf::from("/dev/null")];
        if self.mode == SandboxMode::WorkspaceWrite {
            paths.push(workspace.to_path_buf());
            paths.push(std::env::temp_dir());
            if !cwd.starts_with(workspace) {
                paths.push(cwd.to_path_buf());
            }
        }
        paths
    }

    /// The sentence added to a sandboxed command's result when it failed, or when its stderr
    /// reads like a refusal (a script may go on and exit 0), so the model knows why.
    #[must_use]
    /// What the sandbox refused, as [`super::refusal`] reads stderr, comes first, one
    /// `[palaver: LABEL]` line each: the card shows those labels.
    pub fn result_hint(&self, success: bool, stderr: &[u8]) -> Option<String> {
        let refused = |needle: &[u8]| stderr.windows(needle.len()).any(|w| w == needle);
        let said =
            refused(b"Permission denied") || refused(b"Operation not permitted") || refused(b"Read-only file system");
        if !self.active() {
            return None;
        }
        let found = super::refusal::find(stderr, !self.network);
        if success && !said && found.is_empty() {
            return None;
        }
        let labels: String = found.iter().map(|r| format!("{}\n", r.marker())).collect();
        self.failure_hint().map(|hint| format!("{labels}{hint}"))
    }

    /// The sentence added to a failed sandboxed command's result, so the model knows why.
    #[must_use]
    pub fn failure_hint(&self) -> Option<String> {
        self.active().then(|| {
            format!(
                "[palaver ran this command in the {} sandbox: {}; a \"Permission denied\", \
                 \"Operation not permitted\" or \"Read-only file system\" above may be the sandbox refusing it]",
                self.mode.label(),
                match (self.mode, self.network) {
                    (SandboxMode::ReadOnly, false) =>
                        "no file may be written and no socket opened, not even a Unix one",
                    (SandboxMode::ReadOnly, true) => "no file may be written",
                    (_, false) =>
                        "files may be written only in the workspace and the temp dir (not .git/hooks, .git/config \
                         or palaver's folders), and no socket opened, not even a Unix one",
                    (_, true) =>
                        "files may be written only in the workspace and the temp dir (not .git/hooks, .git/config \
                         or palaver's folders)",
                }
            )
        })
    }
}

/// What this system offers, probed once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Landlock works; `abi` is the version palaver uses, `net` whether it can close TCP,
    /// `sockets` whether seccomp closes every other socket (and TCP, whatever the ABI).
    Landlock { abi: u8, net: bool, sockets: bool },
    /// No Landlock here, and why.
    Unavailable(&'static str),
}

impl Support {
    #[must_use]
    pub fn available(self) -> bool {
        matches!(self, Self::Landlock { .. })
    }
}

/// The probed support (first call probes, in a throwaway thread).
#[must_use]
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(|| {
        let probe = std::thread::spawn(|| restrict(SandboxMode::ReadOnly, false, &[]));
        match probe.join() {
            Ok(Ok(s)) => s,
            Ok(Err(_)) | Err(_) => Support::Unavailable("the Landlock probe failed"),
        }
    })
}

/// What palaver says before the first command when `policy` cannot be had here: no Landlock at
/// all, or no network rules in this kernel's Landlock. `None` when all is as asked.
#[must_use]
pub fn notice(policy: &Policy) -> Option<String> {
    notice_on(policy, support())
}

/// [`notice`] on a system with `support`.
fn notice_on(policy: &Policy, support: Support) -> Option<String> {
    if policy.mode == SandboxMode::Off {
        return None;
    }
    match support {
        Support::Unavailable(why) => Some(format!(
            "commands will run WITHOUT a sandbox: {why} (sandbox = \"{}\" asks for Landlock, Linux 5.13 or later)",
            policy.mode.label()
        )),
        Support::Landlock { abi, net: false, sockets: false } if !policy.network => Some(format!(
            "the command sandbox cannot close the network: this kernel's Landlock ABI is {abi} and TCP rules need 4 \
             (Linux 6.7), and {}; file writes are still confined",
            SECCOMP_UNAVAILABLE
        )),
        Support::Landlock { net: true, sockets: false, .. } if !policy.network => Some(format!(
            "the command sandbox closes only TCP: {SECCOMP_UNAVAILABLE}, so UDP and other sockets stay open to \
             commands; file writes are still confined"
        )),
        Support::Landlock { .. } => None,
    }
}

/// [`notice`], the first time only: a process says it once, before its first command.
#[must_use]
pub fn notice_once(policy: &Policy) -> Option<String> {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let text = notice(policy)?;
    (!SAID.swap(true, std::sync::atomic::Ordering::Relaxed)).then_some(text)
}

/// Why seccomp could not be had, in words for the notice.
#[cfg(target_os = "linux")]
const SECCOMP_UNAVAILABLE: &str = super::seccomp::UNAVAILABLE;
#[cfg(not(target_os = "linux"))]
const SECCOMP_UNAVAILABLE: &str = "seccomp is Linux's";

/// Restricts the calling thread (and what it later executes): reads anywhere, writes below
/// `writable` only, signals only inside the sandbox, and unless `network`, TCP closed by
/// Landlock, every socket (Unix ones too, but `socketpair`) by seccomp, abstract Unix sockets
/// made outside out of reach. Returns what was enforced.
///
/// # Errors
/// When the ruleset cannot be built or applied.
#[cfg(target_os = "linux")]
pub fn restrict(mode: SandboxMode, network: bool, writable: &[PathBuf]) -> Result<Support, String> {
    let e = |e: landlock::RulesetError| e.to_string();
    // Scopes are asked for at their own ABI (6), best effort: an older kernel enforces the rest.
    let mut ruleset =
        Ruleset::default().handle_access(AccessFs::from_all(TARGET_ABI)).map_err(e)?.scope(Scope::Signal).map_err(e)?;
    if !network {
        ruleset = ruleset.handle_access(AccessNet::from_all(TARGET_ABI)).map_err(e)?;
        ruleset = ruleset.scope(Scope::AbstractUnixSocket).map_err(e)?;
    }
    let writable: Vec<&PathBuf> = match mode {
        SandboxMode::Off => return Err("sandbox = \"off\" has nothing to apply".into()),
        _ => writable.iter().filter(|p| p.exists()).collect(),
    };
    let status = ruleset
        .create()
        .map_err(e)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(TARGET_ABI)))
        .map_err(e)?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(TARGET_ABI)))
        .map_err(e)?
        .restrict_self()
        .map_err(e)?;
    match (status.ruleset, status.landlock) {
        (RulesetStatus::NotEnforced, LandlockStatus::NotEnabled) => {
            Ok(Support::Unavailable("Landlock is built into this kernel but not enabled (boot option lsm=)"))
        }
        (RulesetStatus::NotEnforced, _) => Ok(Support::Unavailable("this kernel has no Landlock")),
        (_, LandlockStatus::Available { effective_abi, .. }) => Ok(Support::Landlock {
            abi: abi_number(effective_abi),
            net: effective_abi >= ABI::V4,
            // With the network open there is nothing to filter: what seccomp could do is moot.
            sockets: network || super::seccomp::close_sockets().is_ok(),
        }),
        (_, _) => Ok(Support::Unavailable("Landlock reported no ABI")),
    }
}

/// Elsewhere there is no Landlock: nothing is restricted, and [`support`] says so.
///
/// # Errors
/// Never.
#[cfg(not(target_os = "linux"))]
pub fn restrict(_mode: SandboxMode, _network: bool, _writable: &[PathBuf]) -> Result<Support, String> {
    Ok(Support::Unavailable("Landlock is Linux's, and palaver has no other sandbox for this system"))
}

/// An ABI's version number.
#[cfg(target_os = "linux")]
fn abi_number(abi: ABI) -> u8 {
    let known = [ABI::V1, ABI::V2, ABI::V3, ABI::V4, ABI::V5, ABI::V6, ABI::V7, ABI::V8, ABI::V9, ABI::V10];
    known.iter().position(|&k| k == abi).and_then(|i| u8::try_from(i + 1).ok()).unwrap_or(0)
}

/// `palaver __sandbox-exec MODE open|closed WRITABLE… [--protect PATH…] -- PROGRAM ARGS…` (the
/// arguments after [`HELPER_ARG`]): makes the protected paths read-only, applies the sandbox to
/// this process and execs the program. Returns only on failure, with the exit status (126: the
/// sandbox could not be applied, so nothing ran; 127: the program could not be executed).
#[must_use]
pub fn exec_main(args: &[OsString]) -> u8 {
    use std::os::unix::process::CommandExt;
    if args.len() == 1 && args[0] == super::protect::PROBE_ARG {
        return super::protect::probe_main();
    }
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("palaver: {HELPER_ARG}: missing `--` before the command");
        return 126;
    };
    let (head, tail) = (&args[..split], &args[split + 1..]);
    let mode = head.first().and_then(|m| m.to_str()).and_then(SandboxMode::parse);
    let network = head.get(1).is_some_and(|n| n == "open");
    let (Some(mode), Some((program, rest))) = (mode, tail.split_first()) else {
        eprintln!("palaver: {HELPER_ARG}: expected MODE open|closed PATHS… -- PROGRAM ARGS…");
        return 126;
    };
    let paths = head.get(2..).unwrap_or_default();
    let (writable, protect) = match paths.iter().position(|a| a == PROTECT_ARG) {
        Some(at) => (&paths[..at], &paths[at + 1..]),
        None => (paths, &[][..]),
    };
    let writable: Vec<PathBuf> = writable.iter().map(PathBuf::from).collect();
    let protect: Vec<PathBuf> = protect.iter().map(PathBuf::from).collect();
    // Without a mount namespace the protected paths are checked by palaver after the command
    // instead (see `tools::planted`): the command still runs.
    let _ = super::protect::apply(&protect);
    match restrict(mode, network, &writable) {
        Ok(Support::Landlock { .. }) => {}
        Ok(Support::Unavailable(why)) => {
            eprintln!("palaver: the sandbox could not be applied ({why}); the command was not run");
            return 126;
        }
        Err(e) => {
            eprintln!("palaver: the sandbox could not be applied ({e}); the command was not run");
            return 126;
        }
    }
    // Not a Spawn: this replaces the helper, already started (and registered) by one, with
    // the command, keeping its pid, group, environment and restrictions.
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!("palaver: cannot run {}: {err}", program.to_string_lossy());
    127
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read what they wrote
mod tests {
    use super::*;

    /// Runs `f` in a thread restricted by the sandbox, as a helper process would be.
    fn sandboxed<T: Send + 'static>(network: bool, ws: PathBuf, f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(move || {
            let applied = restrict(SandboxMode::WorkspaceWrite, network, &[ws, PathBuf::from("/dev/null")]);
            assert!(matches!(applied, Ok(Support::Landlock { .. })), "{applied:?}");
            f()
        })
        .join()
        .unwrap_or_else(|_| panic!("the sandboxed thread panicked"))
    }

    #[test]
    fn writes_outside_the_workspace_and_tcp_connects_are_refused() {
        if !support().available() {
            eprintln!("no Landlock here: {:?}", support());
            return;
        }
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let outside = tempfile::tempdir_in(std::env::var_os("HOME").unwrap_or_else(|| ".".into()))
            .unwrap_or_else(|e| panic!("{e}"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let (inside, out) = (ws.path().join("inside"), outside.path().join("outside-file"));
        let (wrote_in, wrote_out, connected, read, udp, unix) = sandboxed(false, ws.path().to_path_buf(), move || {
            (
                std::fs::write(&inside, "x").is_ok(),
                std::fs::write(&out, "x"),
                std::net::TcpStream::connect(addr),
                std::fs::read_to_string("/etc/passwd").is_ok(),
                std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| e.kind()),
                std::os::unix::net::UnixStream::pair().is_ok(),
            )
        });
        assert!(wrote_in && read && unix);
        if matches!(support(), Support::Landlock { sockets: true, .. }) {
            assert_eq!(udp.err(), Some(std::io::ErrorKind::PermissionDenied), "a UDP socket got through the sandbox");
        }
        let denied = wrote_out.err().map(|e| e.kind());
        assert_eq!(denied, Some(std::io::ErrorKind::PermissionDenied));
        if matches!(support(), Support::Landlock { net: true, .. }) {
            assert!(connected.is_err(), "a TCP connect got through the sandbox");
        }
        // The same thread opened to the network connects, and opens UDP sockets.
        let (connected, udp) = sandboxed(true, ws.path().to_path_buf(), move || {
            (std::net::TcpStream::connect(addr).is_ok(), std::net::UdpSocket::bind("127.0.0.1:0").is_ok())
        });
        assert!(connected && udp);
    }

    #[test]
    fn off_wraps_nothing_and_the_description_names_the_mode() {
        let off = Policy::default();
        let env = EnvPolicy::default();
        let at = |dir: &'static str| Place { cwd: Path::new(dir), workspace: Path::new(dir), protect: &[], env: &env };
        let cmd = off.command(OsStr::new("sh"), &["-c".into(), "true".into()], at("/"));
        assert_eq!(cmd.as_std().get_program(), "sh");
        assert!(off.describe().contains("off") && off.failure_hint().is_none() && notice(&off).is_none());
        if support().available() {
            let ww = Policy { helper: PathBuf::from("/proc/self/exe"), ..Policy::configured(None, None) };
            assert!(ww.result_hint(true, b"all fine").is_none());
            assert!(ww.result_hint(true, b"sh: 1: cannot create /x: Permission denied").is_some());
            assert!(ww.result_hint(false, b"").is_some_and(|h| h.contains("workspace-write sandbox")));
        }
        let ww = Policy::configured(None, None);
        assert_eq!((ww.mode, ww.network), (SandboxMode::WorkspaceWrite, false));
        if support().available() {
            let cmd = ww.command(OsStr::new("sh"), &["-c".into(), "true".into()], at("/w"));
            let args: Vec<_> = cmd.as_std().get_args().map(|a| a.to_string_lossy().into_owned()).collect();
            assert_eq!(&args[..3], [HELPER_ARG, "workspace-write", "closed"]);
            // A working directory outside the workspace (approved) is writable too; one inside adds nothing.
            assert_eq!(ww.writable(Path::new("/w"), Path::new("/w/sub")).len(), 3);
            assert!(ww.writable(Path::new("/w"), Path::new("/elsewhere")).contains(&PathBuf::from("/elsewhere")));
            assert_eq!(ww.with_mode(Some(SandboxMode::ReadOnly)).writable(Path::new("/w"), Path::new("/x")).len(), 1);
            assert!(
                args.contains(&"/w".to_owned())
                    && args.ends_with(&["--".into(), "sh".into(), "-c".into(), "true".into()])
            );
            assert!(ww.describe().starts_with("sandbox workspace-write (Landlock "), "{}", ww.describe());
        }
        assert_eq!(ww.with_mode(Some(SandboxMode::ReadOnly)).mode, SandboxMode::ReadOnly);
    }

    #[test]
    fn a_missing_sandbox_is_said_never_silent() {
        let ww = Policy::configured(None, None);
        let none = Support::Unavailable("this kernel has no Landlock");
        let said = notice_on(&ww, none).unwrap_or_default();
        assert!(said.contains("WITHOUT a sandbox") && said.contains("no Landlock"), "{said}");
        assert!(ww.describe_on(Some(none)).starts_with("NO sandbox"));
        let old = Support::Landlock { abi: 3, net: false, sockets: false };
        assert!(notice_on(&ww, old).is_some_and(|n| n.contains("cannot close the network") && n.contains("ABI is 3")));
        assert!(ww.describe_on(Some(old)).contains("network: NOT closed"));
        // Without seccomp, Landlock closes TCP only: that is said too.
        let tcp_only = Support::Landlock { abi: 7, net: true, sockets: false };
        let said = notice_on(&ww, tcp_only).unwrap_or_default();
        assert!(said.contains("closes only TCP") && said.contains("seccomp") && said.contains("UDP"), "{said}");
        assert!(ww.describe_on(Some(tcp_only)).contains("network: TCP closed, UDP and other sockets NOT"));
        // With seccomp, an old Landlock still closes the network: no socket but a Unix one opens.
        let seccomp_only = Support::Landlock { abi: 3, net: false, sockets: true };
        assert!(notice_on(&ww, seccomp_only).is_none());
        assert!(ww.describe_on(Some(seccomp_only)).ends_with("network: closed, Unix sockets too"));
        // Nothing to say when the network is meant to be open, or all is as asked, or it is off.
        assert!(notice_on(&Policy::configured(None, Some(true)), old).is_none());
        assert!(notice_on(&ww, Support::Landlock { abi: 7, net: true, sockets: true }).is_none());
        assert!(notice_on(&Policy::default(), none).is_none());
    }

    #[test]
    fn the_helper_refuses_malformed_arguments() {
        assert_eq!(exec_main(&["workspace-write".into(), "closed".into()]), 126);
        assert_eq!(exec_main(&["sideways".into(), "closed".into(), "--".into(), "true".into()]), 126);
    }
}
