//! The one way palaver starts a process (issue 39 §2): `run_command`, shell and local-shell
//! calls, user tools, MCP stdio servers, `api_key_cmd`, the notify command, the file and
//! browser openers, `$EDITOR` and the clipboard tools are all a [`Spawn`]. Whatever starts a
//! process gets, by construction:
//!
//! - an environment built by policy ([`env`]), never palaver's own as is;
//! - a process group of its own (but `$EDITOR`, which needs the terminal's), and a place in the
//!   registry [`reap::sweep`] reads, so what escapes it is found and ended ([`reap`]);
//! - for a command a model chose, the sandbox ([`sandbox`]): Landlock, the seccomp filter that
//!   closes every socket ([`seccomp`]), and the read-only binds over the paths that would run
//!   code later ([`protect`]).
//!
//! `tests/layers.rs` fails on a `Command::new` anywhere else under `src/`. The one other
//! start is the sandbox helper's own `exec` (in [`sandbox::exec_main`]): it replaces the helper
//! process with the command, which the `Spawn` that started the helper already covers.

pub mod env;
pub mod protect;
pub mod reap;
pub mod refusal;
pub mod sandbox;
#[cfg(target_os = "linux")]
pub mod seccomp;

pub use env::{EnvPolicy, Inherit};
pub use reap::{Group, adopt_orphans, kill_all, kill_group, sweep};

use std::ffi::OsStr;
use std::path::Path;
use std::process::Stdio;

/// Which process group a child leads, and whether its orphans are spared by [`reap::sweep`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A command a model chose (or `api_key_cmd`): its own group, ended with all it started.
    Contained,
    /// An MCP server, or a helper that may leave a daemon on purpose (a clipboard owner, the
    /// viewer an opener starts): its own group, and that group's orphans are spared.
    Lasting,
    /// `$EDITOR`: in palaver's group, which holds the terminal (a group of its own could not
    /// read the keyboard).
    Terminal,
}

/// A process about to start: a program, its arguments, its environment (by policy) and its
/// role. Build it, then [`Spawn::std`] or [`Spawn::tokio`] start it.
#[derive(Debug)]
pub struct Spawn {
    cmd: std::process::Command,
    role: Role,
}

impl Spawn {
    /// `program` with the environment `policy` builds from palaver's.
    #[must_use]
    pub fn new(program: impl AsRef<OsStr>, role: Role, policy: &EnvPolicy) -> Self {
        let mut cmd = std::process::Command::new(program);
        cmd.env_clear().envs(policy.current());
        Self { cmd, role }
    }

    /// A helper palaver runs for the user (notify, opener, clipboard, `$EDITOR`): the "core"
    /// environment, without secret-looking variables.
    #[must_use]
    pub fn helper(program: impl AsRef<OsStr>, role: Role) -> Self {
        Self::new(program, role, &EnvPolicy::default())
    }

    /// An MCP stdio server: a minimal base environment plus exactly its table's `env`.
    #[must_use]
    pub fn server(program: impl AsRef<OsStr>, table: &std::collections::BTreeMap<String, String>) -> Self {
        let mut cmd = std::process::Command::new(program);
        cmd.env_clear().envs(env::server(std::env::vars_os(), table));
        Self { cmd, role: Role::Lasting }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.cmd.arg(arg);
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(&mut self, args: I) -> &mut Self {
        self.cmd.args(args);
        self
    }

    /// A variable set outright (a shell call's own `env`, which the model wrote and the user sees).
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.cmd.env(key, value);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.cmd.current_dir(dir);
        self
    }

    pub fn stdin(&mut self, s: Stdio) -> &mut Self {
        self.cmd.stdin(s);
        self
    }

    pub fn stdout(&mut self, s: Stdio) -> &mut Self {
        self.cmd.stdout(s);
        self
    }

    pub fn stderr(&mut self, s: Stdio) -> &mut Self {
        self.cmd.stderr(s);
        self
    }

    /// The command as it will run, for tests and messages.
    #[must_use]
    pub fn as_std(&self) -> &std::process::Command {
        &self.cmd
    }

    fn prepare(&mut self) {
        use std::os::unix::process::CommandExt;
        if self.role != Role::Terminal {
            self.cmd.process_group(0);
        }
    }

    /// Starts it as a `std` child (registered before any sweep can look).
    ///
    /// # Errors
    /// When the program cannot be started.
    pub fn std(mut self) -> std::io::Result<std::process::Child> {
        self.prepare();
        let mut known = reap::known();
        let child = self.cmd.spawn()?;
        known.started(child.id(), self.role == Role::Lasting);
        Ok(child)
    }

    /// Starts it as a `tokio` child, killed when dropped (registered before any sweep can look).
    ///
    /// # Errors
    /// When the program cannot be started.
    pub fn tokio(mut self) -> std::io::Result<tokio::process::Child> {
        self.prepare();
        let mut cmd = tokio::process::Command::from(self.cmd);
        cmd.kill_on_drop(true);
        let mut known = reap::known();
        let child = cmd.spawn()?;
        known.started(child.id().unwrap_or(0), self.role == Role::Lasting);
        Ok(child)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_gets_the_policy_environment_and_its_own_group() {
        // SAFETY-free: set_var is unsafe in edition 2024, so read what the test process has.
        let secret = std::env::vars().find(|(k, _)| env::looks_secret(k)).map(|(k, _)| k);
        let mut s = Spawn::helper("sh", Role::Contained);
        s.args(["-c", "env; ps -o pgid= -p $$"]).stdout(Stdio::piped()).stdin(Stdio::null());
        let out = s.std().and_then(std::process::Child::wait_with_output).unwrap_or_else(|e| panic!("{e}"));
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(secret) = secret {
            assert!(!text.contains(&format!("{secret}=")), "{secret} reached the child");
        }
        assert!(text.contains("PATH="));
        let server = Spawn::server("true", &[("ONLY".to_owned(), "1".to_owned())].into());
        let vars: Vec<_> = server.as_std().get_envs().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
        assert!(vars.contains(&"ONLY".to_owned()) && vars.iter().all(|v| v != "CARGO_PKG_NAME"), "{vars:?}");
    }
}
