//! User tools from `[[tools]]` in `config.toml`: the JSON arguments go to the command's stdin,
//! its stdout is the result, and a non-zero exit status makes it an error (with stderr).

use super::{Approval, ToolOutput, ToolSource, ToolSpec};
use crate::config::UserTool;
use serde_json::{Map, Value};
use std::path::Path;
use tokio::io::AsyncWriteExt;

/// The spec of a user tool.
///
/// # Errors
/// An empty command, or an unknown approval policy.
pub fn spec(t: &UserTool) -> Result<ToolSpec, String> {
    if t.command.is_empty() {
        return Err("`command` is empty".into());
    }
    let approval = match t.approval.as_deref() {
        None => Approval::Ask,
        Some(a) => Approval::parse(a).ok_or_else(|| format!("approval must be never, ask or always, not `{a}`"))?,
    };
    let parameters = match &t.parameters {
        Some(p) => serde_json::to_value(p).map_err(|e| e.to_string())?,
        None => serde_json::json!({"type": "object", "properties": {}}),
    };
    Ok(ToolSpec {
        name: t.name.clone(),
        description: t.description.clone(),
        parameters,
        source: ToolSource::User,
        approval,
    })
}

/// Runs the command in the process's current directory; see [`run_in`].
pub async fn run(t: &UserTool, args: &Map<String, Value>) -> ToolOutput {
    run_in(t, args, super::Workspace::current().root()).await
}

/// Runs the command in `dir` (the workspace root) with the arguments on stdin. The registry
/// applies the timeout; the child is killed when the future is dropped.
pub async fn run_in(t: &UserTool, args: &Map<String, Value>, dir: &Path) -> ToolOutput {
    let Some((program, rest)) = t.command.split_first() else {
        return ToolOutput::error("the tool has no command");
    };
    let child = tokio::process::Command::new(program)
        .args(rest)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return ToolOutput::error(format!("cannot start `{program}`: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        let input = Value::Object(args.clone()).to_string();
        // A command that does not read its stdin is fine: ignore a broken pipe.
        let _ = stdin.write_all(input.as_bytes()).await;
    }
    match child.wait_with_output().await {
        Err(e) => ToolOutput::error(format!("`{program}` failed: {e}")),
        Ok(o) if o.status.success() => ToolOutput::ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => ToolOutput::error(format!(
            "`{program}` exited with {}\n{}{}",
            o.status.code().map_or_else(|| "a signal".into(), |c| format!("status {c}")),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
    }
}
