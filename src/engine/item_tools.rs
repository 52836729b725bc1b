//! Responses API calls that palaver answers on the user's side besides function calls: shell
//! and local shell commands, patches (V4A diffs) and MCP approval requests. All have side
//! effects (or speak for the user), so the tool loop always asks before running them.

use crate::tools::{Approval, ToolOutput, ToolSource, ToolSpec};
use serde_json::{Map, Value, json};
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

async fn run_argv(argv: &[String], cwd: Option<&str>, env: &Map<String, Value>, timeout: Duration) -> CommandRun {
    let Some((program, args)) = argv.split_first() else {
        return CommandRun { exit_code: None, stdout: String::new(), stderr: "empty command".into(), timed_out: false };
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).stdin(std::process::Stdio::null()).kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    for (k, v) in env {
        if let Some(v) = v.as_str() {
            cmd.env(k, v);
        }
    }
    match tokio::time::timeout(timeout, cmd.output()).await {
        Err(_) => CommandRun { exit_code: None, stdout: String::new(), stderr: "timed out".into(), timed_out: true },
        Ok(Err(e)) => CommandRun {
            exit_code: None,
            stdout: String::new(),
            stderr: format!("cannot run {program}: {e}"),
            timed_out: false,
        },
        Ok(Ok(o)) => CommandRun {
            exit_code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            timed_out: false,
        },
    }
}

fn timeout_of(action: &Value, default: Duration) -> Duration {
    action.get("timeout_ms").and_then(Value::as_u64).map_or(default, Duration::from_millis)
}

/// Runs a `shell_call` action (`commands`: shell command lines) or a `local_shell_call` action
/// (`command`: an argv). The output text is JSON the request builder turns into output items.
pub async fn run_shell(kind: &str, action_text: &str, default_timeout: Duration) -> ToolOutput {
    let action: Value = serde_json::from_str(action_text).unwrap_or(Value::Null);
    let timeout = timeout_of(&action, default_timeout);
    let runs: Vec<CommandRun> = if kind == "local_shell" {
        let argv: Vec<String> = action
            .get("command")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let env = action.get("env").and_then(Value::as_object).cloned().unwrap_or_default();
        let cwd = action.get("working_directory").and_then(Value::as_str);
        vec![run_argv(&argv, cwd, &env, timeout).await]
    } else {
        let commands: Vec<String> = action
            .get("commands")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let mut runs = Vec::new();
        for c in commands {
            runs.push(run_argv(&["sh".into(), "-c".into(), c], None, &Map::new(), timeout).await);
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
    ToolOutput { text: Value::Array(items).to_string(), is_error: failed }
}

/// Applies an `apply_patch_call` operation: `create_file`, `update_file` or `delete_file`
/// with a V4A diff.
pub fn apply_patch(operation_text: &str) -> ToolOutput {
    let op: Value = match serde_json::from_str(operation_text) {
        Ok(v) => v,
        Err(e) => return ToolOutput::error(format!("the patch operation is not JSON: {e}")),
    };
    let kind = op.get("type").and_then(Value::as_str).unwrap_or_default();
    let Some(path) = op.get("path").and_then(Value::as_str) else {
        return ToolOutput::error("the patch operation has no path");
    };
    let diff = op.get("diff").and_then(Value::as_str).unwrap_or_default();
    let result = match kind {
        "create_file" => {
            let content = added_lines(diff);
            std::fs::write(path, content).map(|()| format!("created {path}"))
        }
        "delete_file" => std::fs::remove_file(path).map(|()| format!("deleted {path}")),
        "update_file" => match std::fs::read_to_string(path) {
            Err(e) => Err(e),
            Ok(old) => match apply_v4a(&old, diff) {
                Ok(new) => std::fs::write(path, new).map(|()| format!("updated {path}")),
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
