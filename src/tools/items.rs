//! Responses API calls that palaver answers on the user's side besides function calls: shell
//! and local shell commands, patches (V4A diffs) and MCP approval requests. All have side
//! effects (or speak for the user), so the tool loop always asks before running them. Shell
//! commands start in the workspace root and patches stay inside it unless the user approved
//! the exact resolved path (checked again when they run).

use super::{Approval, PathNeed, ToolOutput, ToolSource, ToolSpec, Workspace};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The pseudo-spec used to gate a non-function call.
#[must_use]
pub fn spec_for_kind(kind: &str, name: &str) -> Option<ToolSpec> {
    let description = match kind {
        "shell" | "local_shell" => "run shell commands requested by the model",
        "apply_patch" => "create, update or delete a file with a patch",
        "mcp_approval" => "allow the provider to call an MCP tool",
        _ => return None,
    };
    Some(ToolSpec {
        name: name.to_owned(),
        description: description.into(),
        parameters: json!({}),
        source: ToolSource::Builtin,
        approval: Approval::Always,
    })
}

/// The exit status and output streams of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

/// Runs an argv in `cwd` under `ws`'s sandbox; a failure under the sandbox says so in its stderr.
async fn run_argv(
    argv: &[String],
    cwd: &Path,
    env: &Map<String, Value>,
    timeout: Duration,
    ws: &Workspace,
) -> CommandRun {
    let sandbox = ws.sandbox();
    let Some((program, args)) = argv.split_first() else {
        return CommandRun { exit_code: None, stdout: String::new(), stderr: "empty command".into(), timed_out: false };
    };
    let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    let mut cmd = sandbox.command(program.as_ref(), &args, ws.place(cwd));
    for (k, v) in env {
        if let Some(v) = v.as_str() {
            cmd.env(k, v);
        }
    }
    // Its own process group, ended whole on a timeout or a cancel; output read up to the cap.
    let cap = crate::api::limits::Limits::default().tool_output_bytes;
    let before = crate::tools::planted::Snapshot::take(ws);
    let mut run = match tokio::time::timeout(timeout, crate::tools::process::run(cmd, None, cap)).await {
        Err(_) => CommandRun { exit_code: None, stdout: String::new(), stderr: "timed out".into(), timed_out: true },
        Ok(Err(e)) => CommandRun {
            exit_code: None,
            stdout: String::new(),
            stderr: format!("cannot run {program}: {e}"),
            timed_out: false,
        },
        Ok(Ok(o)) => {
            let mut stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            if let Some(hint) = sandbox.result_hint(o.status.success(), &o.stderr) {
                stderr.push_str(&hint);
            }
            CommandRun {
                exit_code: o.status.code(),
                stdout: crate::tools::process::text(&o.stdout, o.truncated, cap),
                stderr,
                timed_out: false,
            }
        }
    };
    if let Some(note) = crate::tools::planted::note(&before.restore()) {
        run.stderr.push_str(&note);
    }
    run
}

fn timeout_of(action: &Value, default: Duration) -> Duration {
    action.get("timeout_ms").and_then(Value::as_u64).map_or(default, Duration::from_millis)
}

/// The working directory an action asks for, if any.
fn working_directory(action: &Value) -> Option<&str> {
    action.get("working_directory").and_then(Value::as_str).filter(|d| !d.is_empty())
}

/// The paths a shell, local shell or patch call would touch that need the user's approval in
/// `ws`: a patch's file, a command's working directory. Empty for other kinds and for text
/// that is not JSON (running it fails anyway).
#[must_use]
pub fn paths_needing_approval(ws: &Workspace, kind: &str, text: &str) -> Vec<PathNeed> {
    let Ok(v) = serde_json::from_str::<Value>(text) else { return Vec::new() };
    let path = match kind {
        "shell" | "local_shell" => working_directory(&v),
        "apply_patch" => v.get("path").and_then(Value::as_str),
        _ => None,
    };
    // Commands may change anything where they run: count both as writes.
    path.and_then(|p| ws.need(p, true)).into_iter().collect()
}

/// Runs a `shell_call` action in the process's current directory; see [`run_shell_in`].
pub async fn run_shell(kind: &str, action_text: &str, default_timeout: Duration) -> ToolOutput {
    run_shell_in(&Workspace::current(), kind, action_text, default_timeout, &[]).await
}

/// Runs a `shell_call` action (`commands`: shell command lines) or a `local_shell_call` action
/// (`command`: an argv) in the workspace root, or in the action's `working_directory`
/// resolved against it (outside, only when that resolved path is in `approved`). The output
/// text is JSON the request builder turns into output items.
pub async fn run_shell_in(
    ws: &Workspace,
    kind: &str,
    action_text: &str,
    default_timeout: Duration,
    approved: &[PathBuf],
) -> ToolOutput {
    let action: Value = serde_json::from_str(action_text).unwrap_or(Value::Null);
    let timeout = timeout_of(&action, default_timeout);
    let cwd = match working_directory(&action).map(|d| ws.guard(d, approved)) {
        None => ws.root().to_path_buf(),
        Some(Ok(dir)) => dir,
        Some(Err(refusal)) => return ToolOutput::error(refusal),
    };
    let runs: Vec<CommandRun> = if kind == "local_shell" {
        let argv: Vec<String> = action
            .get("command")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let env = action.get("env").and_then(Value::as_object).cloned().unwrap_or_default();
        vec![run_argv(&argv, &cwd, &env, timeout, ws).await]
    } else {
        let commands: Vec<String> = action
            .get("commands")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let mut runs = Vec::new();
        for c in commands {
            runs.push(run_argv(&["sh".into(), "-c".into(), c], &cwd, &Map::new(), timeout, ws).await);
        }
        runs
    };
    if runs.is_empty() {
        return ToolOutput::error("the call carried no command");
    }
    let failed = runs.iter().any(|r| r.exit_code != Some(0));
    let items: Vec<Value> = runs
        .iter()
        .map(|r| {
            let outcome = if r.timed_out {
                json!({"type": "timeout"})
            } else {
                json!({"type": "exit", "exit_code": r.exit_code})
            };
            json!({"stdout": r.stdout, "stderr": r.stderr, "outcome": outcome})
        })
        .collect();
    ToolOutput { text: Value::Array(items).to_string(), is_error: failed, images: Vec::new(), held: None }
}

/// Applies an `apply_patch_call` operation in the process's current directory; see
/// [`apply_patch_in`].
#[must_use]
pub fn apply_patch(operation_text: &str) -> ToolOutput {
    apply_patch_in(&Workspace::current(), operation_text, &[])
}

/// Applies an `apply_patch_call` operation: `create_file`, `update_file` or `delete_file`
/// with a V4A diff. The path resolves against the workspace root; one outside it, or a file
/// that usually holds secrets, is refused unless that resolved path is in `approved`.
#[must_use]
pub fn apply_patch_in(ws: &Workspace, operation_text: &str, approved: &[PathBuf]) -> ToolOutput {
    let op: Value = match serde_json::from_str(operation_text) {
        Ok(v) => v,
        Err(e) => return ToolOutput::error(format!("the patch operation is not JSON: {e}")),
    };
    let kind = op.get("type").and_then(Value::as_str).unwrap_or_default();
    let Some(path) = op.get("path").and_then(Value::as_str) else {
        return ToolOutput::error("the patch operation has no path");
    };
    let target = match ws.guard(path, approved) {
        Ok(t) => t,
        Err(refusal) => return ToolOutput::error(refusal),
    };
    let diff = op.get("diff").and_then(Value::as_str).unwrap_or_default();
    let result = match kind {
        "create_file" => {
            let content = added_lines(diff);
            std::fs::write(&target, content).map(|()| format!("created {path}"))
        }
        "delete_file" => std::fs::remove_file(link_or(ws, path, &target)).map(|()| format!("deleted {path}")),
        "update_file" => match crate::sys::read::file_string(&target, crate::sys::read::INPUT_FILE) {
            Err(e) => return ToolOutput::error(e.about(&format!("cannot update {path}"))),
            Ok(old) => match apply_v4a(&old, diff) {
                Ok(new) => std::fs::write(&target, new).map(|()| format!("updated {path}")),
                Err(e) => return ToolOutput::error(format!("the patch does not apply to {path}: {e}")),
            },
        },
        other => return ToolOutput::error(format!("unknown patch operation `{other}`")),
    };
    match result {
        Ok(msg) => ToolOutput::ok(msg),
        Err(e) => ToolOutput::error(format!("{kind} {path} failed: {e}")),
    }
}

/// What deleting `path` removes: the link itself when its last component is a symlink (as
/// `rm` does; removing a link never reaches outside), else the resolved `target`.
fn link_or(ws: &Workspace, path: &str, target: &Path) -> PathBuf {
    let raw = Path::new(path);
    let (Some(parent), Some(name)) = (raw.parent(), raw.file_name()) else { return target.to_path_buf() };
    let link = ws.check_path(parent).resolved.join(name);
    match std::fs::symlink_metadata(&link) {
        Ok(m) if m.file_type().is_symlink() => link,
        _ => target.to_path_buf(),
    }
}

fn added_lines(diff: &str) -> String {
    let mut out = String::new();
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix('+') {
            out.push_str(rest);
            out.push('\n');
        }
    }
    out
}

/// Applies V4A hunks: each hunk (`@@` separated) is context (` `), removed (`-`) and added (`+`)
/// lines; the old lines must be found in order in the file.
///
/// # Errors
/// When a hunk's old lines cannot be found.
pub fn apply_v4a(old: &str, diff: &str) -> Result<String, String> {
    let mut lines: Vec<String> = old.lines().map(str::to_owned).collect();
    let mut cursor = 0;
    let mut hunks: Vec<Vec<&str>> = vec![Vec::new()];
    for line in diff.lines() {
        if line.starts_with("@@") {
            hunks.push(Vec::new());
        } else if let Some(h) = hunks.last_mut() {
            h.push(line);
        }
    }
    for hunk in hunks.into_iter().filter(|h| !h.is_empty()) {
        let before: Vec<&str> = hunk.iter().filter(|l| !l.starts_with('+')).map(|l| l.get(1..).unwrap_or("")).collect();
        let after: Vec<String> =
            hunk.iter().filter(|l| !l.starts_with('-')).map(|l| l.get(1..).unwrap_or("").to_owned()).collect();
        let at = (cursor..=lines.len().saturating_sub(before.len()))
            .find(|&i| {
                lines
                    .get(i..i + before.len())
                    .is_some_and(|w| w.iter().zip(&before).all(|(a, b)| a.trim_end() == b.trim_end()))
            })
            .ok_or_else(|| format!("cannot find the lines starting `{}`", before.first().copied().unwrap_or("")))?;
        let n = after.len();
        lines.splice(at..at + before.len(), after);
        cursor = at + n;
    }
    let mut out = lines.join("\n");
    if old.ends_with('\n') || old.is_empty() {
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4a_updates_in_place() {
        let old = "a\nb\nc\nd\n";
        let diff = "@@\n a\n-b\n+B\n+B2\n c\n";
        assert_eq!(apply_v4a(old, diff).as_deref(), Ok("a\nB\nB2\nc\nd\n"));
        assert!(apply_v4a(old, "@@\n x\n-y\n").is_err());
    }

    #[tokio::test]
    async fn shell_outputs_are_structured() {
        let out = run_shell("shell", r#"{"commands":["echo hi","exit 2"]}"#, Duration::from_secs(5)).await;
        assert!(out.is_error);
        let v: Value = serde_json::from_str(&out.text).unwrap_or(Value::Null);
        assert_eq!(v[0]["stdout"], "hi\n");
        assert_eq!(v[1]["outcome"]["exit_code"], 2);
        let out = run_shell("local_shell", r#"{"type":"exec","command":["echo","x"]}"#, Duration::from_secs(5)).await;
        assert!(!out.is_error);
    }
}
