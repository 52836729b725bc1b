//! User tools from `[[tools]]` in `config.toml`: the JSON arguments go to the command's stdin,
//! its stdout is the result, and a non-zero exit status makes it an error (with stderr).

use super::{Approval, ToolOutput, ToolSource, ToolSpec};
use crate::config::UserTool;
use serde_json::{Map, Value};
use std::path::Path;

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
    run_in(t, args, super::Workspace::current().root(), crate::api::limits::Limits::default().tool_output_bytes).await
}

/// Runs the command in `dir` with no sandbox; see [`run_sandboxed`].
pub async fn run_in(t: &UserTool, args: &Map<String, Value>, dir: &Path, cap: usize) -> ToolOutput {
    let ws = super::Workspace::current();
    let place = super::sandbox::Place { cwd: dir, workspace: dir, ..ws.place(dir) };
    run_under(t, args, place, &super::sandbox::Policy::default(), cap).await
}

/// Runs the command in the workspace root under the workspace's sandbox, or the one the
/// tool's own `sandbox` names.
pub async fn run_sandboxed(t: &UserTool, args: &Map<String, Value>, ws: &super::Workspace, cap: usize) -> ToolOutput {
    // The tool's own `env` table replaces `[tool_env]` for it.
    let place = super::sandbox::Place { env: t.env.as_ref().unwrap_or(ws.tool_env()), ..ws.place(ws.root()) };
    let before = super::planted::Snapshot::take(ws);
    let mut out = run_under(t, args, place, &ws.sandbox().with_mode(t.sandbox), cap).await;
    if let Some(note) = super::planted::note(&before.restore()) {
        out.text.push_str(&note);
    }
    out
}

/// Runs the command in `dir` under `policy` with the arguments on stdin, in its own process
/// group (ended whole when the future is dropped: a timeout or a cancel), its output read up
/// to `cap` bytes. The registry applies the timeout.
async fn run_under(
    t: &UserTool,
    args: &Map<String, Value>,
    place: super::sandbox::Place<'_>,
    policy: &super::sandbox::Policy,
    cap: usize,
) -> ToolOutput {
    let Some((program, rest)) = t.command.split_first() else {
        return ToolOutput::error("the tool has no command");
    };
    let rest: Vec<std::ffi::OsString> = rest.iter().map(Into::into).collect();
    let cmd = policy.command(program.as_ref(), &rest, place);
    let input = Value::Object(args.clone()).to_string().into_bytes();
    match super::process::run(cmd, Some(input), cap).await {
        Err(e) => ToolOutput::error(format!("cannot start `{program}`: {e}")),
        Ok(o) if o.status.success() => ToolOutput::ok(super::process::text(&o.stdout, o.truncated, cap)),
        Ok(o) => ToolOutput::error(format!(
            "`{program}` exited with {}\n{}{}{}",
            o.status.code().map_or_else(|| "a signal".into(), |c| format!("status {c}")),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
            policy.result_hint(false, &o.stderr).map(|h| format!("\n{h}")).unwrap_or_default()
        )),
    }
}
