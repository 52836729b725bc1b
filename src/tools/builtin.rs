//! Built-in tools. `read_file`, `list_directory`, `search_files` and `current_time` only read;
//! `run_command` and `write_file` have side effects and are always asked for. The file tools
//! (in `files.rs`) are confined to the workspace; `run_command` starts in its root.

use super::files::{self, Reach, str_arg};
use super::workspace::{PathNeed, Workspace};
use super::{Approval, ToolOutput, ToolSource, ToolSpec};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    ReadFile,
    ListDirectory,
    SearchFiles,
    CurrentTime,
    RunCommand,
    WriteFile,
}

impl Builtin {
    pub const ALL: [Self; 6] =
        [Self::ReadFile, Self::ListDirectory, Self::SearchFiles, Self::CurrentTime, Self::RunCommand, Self::WriteFile];

    #[must_use]
    pub fn spec(self) -> ToolSpec {
        let (name, description, parameters, approval) = match self {
            Self::ReadFile => (
                "read_file",
                "Read a text file. Returns at most max_bytes bytes (default 65536).",
                json!({"type":"object","properties":{"path":{"type":"string","description":"file path"},
                    "max_bytes":{"type":"integer","description":"byte limit"}},"required":["path"]}),
                Approval::Never,
            ),
            Self::ListDirectory => (
                "list_directory",
                "List the entries of a directory (folders end with /).",
                json!({"type":"object","properties":{"path":{"type":"string","description":"directory, default ."}}}),
                Approval::Never,
            ),
            Self::SearchFiles => (
                "search_files",
                "Find files under a directory by name (substring) and/or by content (lines containing text).",
                json!({"type":"object","properties":{"path":{"type":"string","description":"directory, default ."},
                    "name":{"type":"string","description":"substring of the file name"},
                    "content":{"type":"string","description":"text to find inside files"}}}),
                Approval::Never,
            ),
            Self::CurrentTime => (
                "current_time",
                "The current date and time (UTC) and the Unix time.",
                json!({"type":"object","properties":{}}),
                Approval::Never,
            ),
            Self::RunCommand => (
                "run_command",
                "Run a shell command (sh -c) and return its exit status, stdout and stderr.",
                json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}),
                Approval::Always,
            ),
            Self::WriteFile => (
                "write_file",
                "Write text to a file, creating or replacing it.",
                json!({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},
                    "required":["path","content"]}),
                Approval::Always,
            ),
        };
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
            source: ToolSource::Builtin,
            approval,
        }
    }

    /// Runs the tool confined to the process's current directory, approving nothing outside.
    pub async fn run(self, args: &Map<String, Value>) -> ToolOutput {
        self.run_in(&Workspace::current(), args, &[]).await
    }

    /// Runs the tool in `ws`: a path that needs an approval and is not among the resolved
    /// `approved` paths comes back as an error naming it.
    pub async fn run_in(self, ws: &Workspace, args: &Map<String, Value>, approved: &[PathBuf]) -> ToolOutput {
        self.run_capped(ws, args, approved, crate::api::limits::Limits::default().tool_output_bytes).await
    }

    /// [`Builtin::run_in`], a command's output read up to `cap` bytes.
    pub async fn run_capped(
        self,
        ws: &Workspace,
        args: &Map<String, Value>,
        approved: &[PathBuf],
        cap: usize,
    ) -> ToolOutput {
        if self == Self::RunCommand {
            return run_command(args, ws, cap).await;
        }
        let args = args.clone();
        let reach = Reach { ws: ws.clone(), approved: approved.to_vec() };
        // File-system work is blocking: keep it off the async workers.
        let job = tokio::task::spawn_blocking(move || match self {
            Self::ReadFile => files::read_file(&reach, &args),
            Self::ListDirectory => files::list_directory(&reach, &args),
            Self::SearchFiles => files::search_files(&reach, &args),
            Self::CurrentTime => Ok(current_time()),
            Self::WriteFile | Self::RunCommand => files::write_file(&reach, &args),
        });
        match job.await {
            Ok(Ok(text)) => ToolOutput::ok(text),
            Ok(Err(e)) => ToolOutput::error(e),
            Err(e) => ToolOutput::error(format!("the tool crashed: {e}")),
        }
    }

    /// The paths a call with these arguments would touch that need the user's approval in
    /// `ws`. A missing or non-string path needs nothing: the tool refuses it by itself.
    #[must_use]
    pub fn paths_needing_approval(self, ws: &Workspace, args: &Map<String, Value>) -> Vec<PathNeed> {
        let (path, write) = match self {
            Self::ReadFile => (str_arg(args, "path"), false),
            Self::ListDirectory | Self::SearchFiles => (Some(str_arg(args, "path").unwrap_or(".")), false),
            Self::WriteFile => (str_arg(args, "path"), true),
            Self::CurrentTime | Self::RunCommand => (None, false),
        };
        path.and_then(|p| ws.need(p, write)).into_iter().collect()
    }
}

/// `sh -c COMMAND` in the workspace root, under the workspace's sandbox, in its own process
/// group (ended whole when the call ends, times out or is cancelled: nothing it started
/// survives it). A failure under the sandbox says so, for the model.
async fn run_command(args: &Map<String, Value>, ws: &Workspace, cap: usize) -> ToolOutput {
    let Some(command) = str_arg(args, "command") else {
        return ToolOutput::error("missing required string argument `command`");
    };
    let policy = ws.sandbox();
    let cmd = policy.command("sh".as_ref(), &["-c".into(), command.into()], ws.place(ws.root()));
    let before = super::planted::Snapshot::take(ws);
    let ran = super::process::run(cmd, None, cap).await;
    let reverted = before.restore();
    match ran {
        Err(e) => ToolOutput::error(format!("cannot run sh: {e}")),
        Ok(o) => {
            let text = format!(
                "exit status: {}\nstdout:\n{}\nstderr:\n{}",
                o.status.code().map_or_else(|| "killed by a signal".into(), |c| c.to_string()),
                super::process::text(&o.stdout, o.truncated, cap),
                String::from_utf8_lossy(&o.stderr)
            );
            let mut text = match policy.result_hint(o.status.success(), &o.stderr) {
                Some(hint) => format!("{text}\n{hint}"),
                None => text,
            };
            if let Some(note) = super::planted::note(&reverted) {
                text.push_str(&note);
            }
            if o.status.success() { ToolOutput::ok(text) } else { ToolOutput::error(text) }
        }
    }
}

/// UTC date and time from the system clock, without a calendar crate.
fn current_time() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z (unix {secs})", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
    }

    #[tokio::test]
    async fn read_list_search_write_run() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = Workspace::new(dir.path(), Vec::new()).unwrap_or_else(|e| panic!("{e}"));
        let run = |b: Builtin, a: Value| {
            let ws = ws.clone();
            async move { b.run_in(&ws, &args(a), &[]).await }
        };
        let w = run(Builtin::WriteFile, json!({"path": "a.txt", "content": "hello\nworld"})).await;
        assert!(!w.is_error, "{}", w.text);
        let r = run(Builtin::ReadFile, json!({"path": "a.txt", "max_bytes": 5})).await;
        assert!(r.text.starts_with("hello") && r.text.contains("truncated"));
        // An absolute path inside the workspace is fine too.
        let abs = ws.root().join("a.txt").display().to_string();
        assert!(!run(Builtin::ReadFile, json!({"path": abs})).await.is_error);
        assert_eq!(run(Builtin::ListDirectory, json!({})).await.text, "a.txt");
        let s = run(Builtin::SearchFiles, json!({"path": ".", "content": "world"})).await;
        assert_eq!(s.text, "a.txt:2: world");
        let c = run(Builtin::RunCommand, json!({"command": "echo hi; pwd; exit 3"})).await;
        assert!(c.is_error && c.text.contains("exit status: 3") && c.text.contains("hi"));
        assert!(c.text.contains(&ws.root().display().to_string()), "runs in the workspace: {}", c.text);
        assert!(run(Builtin::ReadFile, json!({})).await.is_error);
        let out = run(Builtin::ReadFile, json!({"path": "../x"})).await;
        assert!(out.is_error && out.text.contains("outside the workspace"), "{}", out.text);
    }

    #[test]
    fn path_arguments_needing_approval() {
        let ws = Workspace::current();
        let need = |b: Builtin, a: Value| b.paths_needing_approval(&ws, &args(a));
        assert!(need(Builtin::ReadFile, json!({"path": "Cargo.toml"})).is_empty());
        assert_eq!(need(Builtin::ReadFile, json!({"path": "/etc/passwd"}))[0].path, PathBuf::from("/etc/passwd"));
        assert!(need(Builtin::WriteFile, json!({"path": ".env", "content": ""}))[0].write);
        assert_eq!(need(Builtin::ListDirectory, json!({"path": "/"})).len(), 1);
        assert!(need(Builtin::ListDirectory, json!({})).is_empty());
        assert!(need(Builtin::RunCommand, json!({"command": "cat /etc/passwd"})).is_empty());
        assert!(need(Builtin::ReadFile, json!({"path": 3})).is_empty());
    }
}
