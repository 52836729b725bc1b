//! A prompt set's `script` check: the user's program reads the cell as JSON on its stdin and
//! prints its verdict, `{"pass": true, "score": 0.9, "reason": "…"}`, as its last line. A set is
//! often someone else's file, so a script runs only when the user allowed the set's scripts,
//! and then sandboxed: writes only in the temporary directory, every socket closed, the policy
//! environment, a process group of its own ended when it is over, its output read up to a cap
//! and a timeout.

use crate::engine::evals::expect::{CheckResult, ScriptSpec};
use crate::store::runs::CellRow;
use crate::sys::spawn::EnvPolicy;
use crate::sys::spawn::sandbox::{Place, Policy, SandboxMode};
use serde_json::{Value, json};
use std::time::Duration;

/// The most a script may print, on stdout and on stderr each.
const OUTPUT_CAP: usize = 256 * 1024;
/// The most of a script's reason kept.
const REASON_CHARS: usize = 500;

/// What a script gets on its stdin: the prompt, the answer and the cell's figures.
#[must_use]
pub fn input(prompt: &str, row: &CellRow) -> Value {
    json!({
        "prompt": prompt,
        "answer": row.text,
        "reasoning": row.reasoning,
        "model": row.model,
        "provider": row.provider,
        "finish_reason": row.finish_reason,
        "tool_calls": row.tool_calls,
        "usage": row.usage,
        "cost": row.cost,
        "latency_ms": row.total_ms,
    })
}

/// Runs the script on `input` and reads its verdict (kind `script`, before the check's
/// modifiers).
pub async fn check(spec: &ScriptSpec, input: &Value) -> CheckResult {
    let Some((program, args)) = spec.command.split_first() else {
        return failed("the script has no command".into());
    };
    let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    let temp = std::env::temp_dir();
    let dir = spec.dir.clone().unwrap_or_else(|| std::path::PathBuf::from("."));
    let env = EnvPolicy::default();
    let place = Place { cwd: &dir, workspace: &temp, protect: &[], env: &env };
    let policy = Policy::configured(Some(SandboxMode::WorkspaceWrite), Some(false));
    let cmd = policy.command(program.as_ref(), &args, place);
    let shown = crate::text::sanitize::sanitize(program).into_owned();
    let run = crate::tools::process::run(cmd, Some(input.to_string().into_bytes()), OUTPUT_CAP);
    match tokio::time::timeout(Duration::from_millis(spec.timeout_ms), run).await {
        Err(_) => failed(format!("`{shown}` took longer than {} s and was stopped", spec.timeout_ms / 1000)),
        Ok(Err(e)) => failed(format!("cannot start `{shown}`: {e}")),
        Ok(Ok(out)) if !out.status.success() => {
            let status = out.status.code().map_or_else(|| "a signal".into(), |c| format!("status {c}"));
            let said = String::from_utf8_lossy(&out.stderr);
            failed(format!(
                "`{shown}` exited with {status}{}",
                first_line(&said).map(|l| format!(": {l}")).unwrap_or_default()
            ))
        }
        Ok(Ok(out)) => verdict(&String::from_utf8_lossy(&out.stdout))
            .unwrap_or_else(|| failed(format!("`{shown}` printed no verdict (a last line {{\"pass\": true|false}})"))),
    }
}

/// The verdict in a script's output: its last non-empty line, a JSON object with `pass`.
fn verdict(stdout: &str) -> Option<CheckResult> {
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty())?;
    let v: Value = serde_json::from_str(last.trim()).ok()?;
    let pass = v.get("pass")?.as_bool()?;
    let reason = v.get("reason").and_then(Value::as_str).map(clean);
    let score = v.get("score").and_then(Value::as_f64).filter(|s| s.is_finite());
    Some(CheckResult { score, ..CheckResult::new("script", pass, reason) })
}

fn failed(why: String) -> CheckResult {
    CheckResult::new("script", false, Some(why))
}

/// A line a script wrote, as a report may show it: control sequences stripped, cut short.
fn clean(text: &str) -> String {
    crate::tools::clip(&crate::text::sanitize::sanitize(text), REASON_CHARS)
}

fn first_line(text: &str) -> Option<String> {
    text.lines().find(|l| !l.trim().is_empty()).map(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_is_the_last_line() {
        let v = verdict("working…\n{\"pass\": true, \"score\": 0.75, \"reason\": \"ok\\u001b[31m\"}\n\n").unwrap();
        assert_eq!((v.pass, v.score, v.detail.as_deref()), (true, Some(0.75), Some("ok")));
        assert!(verdict("{\"score\": 1}").is_none());
        assert!(verdict("pass").is_none());
        assert!(verdict("").is_none());
    }
}
