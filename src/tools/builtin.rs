//! Built-in tools. `read_file`, `list_directory`, `search_files` and `current_time` only read;
//! `run_command` and `write_file` have side effects and are always asked for.

use super::{Approval, ToolOutput, ToolSource, ToolSpec};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

const DEFAULT_READ_BYTES: u64 = 64 * 1024;
const MAX_READ_BYTES: u64 = 1024 * 1024;
const MAX_SEARCH_RESULTS: usize = 200;
/// Folders a search never walks into: large, generated, or not the user's text.
const SKIP_DIRS: [&str; 4] = [".git", "target", "node_modules", ".venv"];

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

    pub async fn run(self, args: &Map<String, Value>) -> ToolOutput {
        if self == Self::RunCommand {
            return run_command(args).await;
        }
        let args = args.clone();
        // File-system work is blocking: keep it off the async workers.
        let job = tokio::task::spawn_blocking(move || match self {
            Self::ReadFile => read_file(&args),
            Self::ListDirectory => list_directory(&args),
            Self::SearchFiles => search_files(&args),
            Self::CurrentTime => Ok(current_time()),
            Self::WriteFile | Self::RunCommand => write_file(&args),
        });
        match job.await {
            Ok(Ok(text)) => ToolOutput::ok(text),
            Ok(Err(e)) => ToolOutput::error(e),
            Err(e) => ToolOutput::error(format!("the tool crashed: {e}")),
        }
    }
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn required<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    str_arg(args, key).ok_or_else(|| format!("missing required string argument `{key}`"))
}

fn read_file(args: &Map<String, Value>) -> Result<String, String> {
    use std::io::Read;
    let path = required(args, "path")?;
    let limit = args.get("max_bytes").and_then(Value::as_u64).unwrap_or(DEFAULT_READ_BYTES).min(MAX_READ_BYTES);
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open {path}: {e}"))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut buf = Vec::new();
    file.take(limit).read_to_end(&mut buf).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if size > limit {
        text.push_str(&format!("\n[truncated: showed {limit} of {size} bytes]"));
    }
    Ok(text)
}

fn list_directory(args: &Map<String, Value>) -> Result<String, String> {
    let path = str_arg(args, "path").unwrap_or(".");
    let entries = std::fs::read_dir(path).map_err(|e| format!("cannot list {path}: {e}"))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| {
            let mut n = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                n.push('/');
            }
            n
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Ok(format!("{path} is empty"));
    }
    Ok(names.join("\n"))
}

fn search_files(args: &Map<String, Value>) -> Result<String, String> {
    let root = PathBuf::from(str_arg(args, "path").unwrap_or("."));
    let name = str_arg(args, "name").filter(|s| !s.is_empty()).map(str::to_lowercase);
    let content = str_arg(args, "content").filter(|s| !s.is_empty());
    if name.is_none() && content.is_none() {
        return Err("give `name`, `content` or both".into());
    }
    let mut hits = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for e in entries {
            let path = e.path();
            let file_name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if !SKIP_DIRS.contains(&file_name.as_str()) {
                    stack.push(path);
                }
                continue;
            }
            if name.as_ref().is_some_and(|n| !file_name.to_lowercase().contains(n.as_str())) {
                continue;
            }
            match content {
                None => hits.push(display(&path)),
                Some(needle) => grep(&path, needle, &mut hits),
            }
            if hits.len() >= MAX_SEARCH_RESULTS {
                hits.push(format!("[stopped at {MAX_SEARCH_RESULTS} results]"));
                return Ok(hits.join("\n"));
            }
        }
    }
    if hits.is_empty() {
        return Ok(format!("no matches under {}", display(&root)));
    }
    Ok(hits.join("\n"))
}

fn grep(path: &Path, needle: &str, hits: &mut Vec<String>) {
    let Ok(meta) = std::fs::metadata(path) else { return };
    if meta.len() > 1024 * 1024 {
        return;
    }
    let Ok(bytes) = std::fs::read(path) else { return };
    if bytes.contains(&0) {
        return; // binary
    }
    let text = String::from_utf8_lossy(&bytes);
    for (i, line) in text.lines().enumerate() {
        if line.contains(needle) {
            hits.push(format!("{}:{}: {}", display(path), i + 1, super::clip(line.trim(), 200)));
            if hits.len() >= MAX_SEARCH_RESULTS {
                return;
            }
        }
    }
}

fn display(p: &Path) -> String {
    p.strip_prefix("./").unwrap_or(p).display().to_string()
}

fn write_file(args: &Map<String, Value>) -> Result<String, String> {
    let path = required(args, "path")?;
    let content = required(args, "content")?;
    std::fs::write(path, content).map_err(|e| format!("cannot write {path}: {e}"))?;
    Ok(format!("wrote {} bytes to {path}", content.len()))
}

async fn run_command(args: &Map<String, Value>) -> ToolOutput {
    let Some(command) = str_arg(args, "command") else {
        return ToolOutput::error("missing required string argument `command`");
    };
    let out = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await;
    match out {
        Err(e) => ToolOutput::error(format!("cannot run sh: {e}")),
        Ok(o) => {
            let text = format!(
                "exit status: {}\nstdout:\n{}\nstderr:\n{}",
                o.status.code().map_or_else(|| "killed by a signal".into(), |c| c.to_string()),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
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
        let p = dir.path().join("a.txt");
        let ps = p.display().to_string();
        let w = Builtin::WriteFile.run(&args(json!({"path": ps, "content": "hello\nworld"}))).await;
        assert!(!w.is_error, "{}", w.text);
        let r = Builtin::ReadFile.run(&args(json!({"path": ps, "max_bytes": 5}))).await;
        assert!(r.text.starts_with("hello") && r.text.contains("truncated"));
        let d = dir.path().display().to_string();
        assert_eq!(Builtin::ListDirectory.run(&args(json!({"path": d}))).await.text, "a.txt");
        let s = Builtin::SearchFiles.run(&args(json!({"path": d, "content": "world"}))).await;
        assert!(s.text.ends_with("a.txt:2: world"), "{}", s.text);
        let c = Builtin::RunCommand.run(&args(json!({"command": "echo hi; exit 3"}))).await;
        assert!(c.is_error && c.text.contains("exit status: 3") && c.text.contains("hi"));
        assert!(Builtin::ReadFile.run(&args(json!({}))).await.is_error);
    }
}
