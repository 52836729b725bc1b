//! The built-in file tools (`read_file`, `list_directory`, `search_files`, `write_file`),
//! confined to the workspace: every path goes through [`Workspace::guard`] when the tool runs,
//! whatever was decided before, and the walks of `list_directory` and `search_files` never
//! follow a symlink out. Blocking; the caller runs them off the async workers.

use super::workspace::{Verdict, Workspace};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

const DEFAULT_READ_BYTES: u64 = 64 * 1024;
const MAX_READ_BYTES: u64 = 1024 * 1024;
const MAX_SEARCH_RESULTS: usize = 200;
/// Files larger than this are not searched for content.
const MAX_GREP_BYTES: u64 = 1024 * 1024;
/// Folders a search never walks into: large, generated, or not the user's text.
const SKIP_DIRS: [&str; 4] = [".git", "target", "node_modules", ".venv"];

/// What a file tool may reach: the workspace, plus the resolved paths the user approved.
#[derive(Debug, Clone)]
pub struct Reach {
    pub ws: Workspace,
    pub approved: Vec<PathBuf>,
}

impl Reach {
    fn guard(&self, raw: &str) -> Result<PathBuf, String> {
        self.ws.guard(raw, &self.approved)
    }
}

pub(super) fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn required<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    str_arg(args, key).ok_or_else(|| format!("missing required string argument `{key}`"))
}

pub(super) fn read_file(reach: &Reach, args: &Map<String, Value>) -> Result<String, String> {
    let raw = required(args, "path")?;
    let path = reach.guard(raw)?;
    let limit = args.get("max_bytes").and_then(Value::as_u64).unwrap_or(DEFAULT_READ_BYTES).min(MAX_READ_BYTES);
    // Only a regular file: a FIFO would block this thread (and keep palaver alive) until a
    // writer came, and a device might never end.
    let file = crate::sys::read::open_regular(&path).map_err(|e| format!("cannot read {raw}: {e}"))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let buf = crate::sys::read::head(file, usize::try_from(limit).unwrap_or(usize::MAX))
        .map_err(|e| format!("cannot read {raw}: {e}"))?;
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if size > limit {
        text.push_str(&format!("\n[truncated: showed {limit} of {size} bytes]"));
    }
    Ok(text)
}

/// Lists names; a symlink is shown as `name@` and never followed, with a note when it points
/// outside the workspace (its target is not shown: that would describe the outside).
pub(super) fn list_directory(reach: &Reach, args: &Map<String, Value>) -> Result<String, String> {
    let raw = str_arg(args, "path").unwrap_or(".");
    let dir = reach.guard(raw)?;
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("cannot list {raw}: {e}"))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| {
            let mut n = e.file_name().to_string_lossy().into_owned();
            match e.file_type() {
                Ok(t) if t.is_symlink() => {
                    n.push('@');
                    if reach.ws.check_path(&e.path()).verdict == Verdict::Outside {
                        n.push_str(" (link pointing outside the workspace)");
                    }
                }
                Ok(t) if t.is_dir() => n.push('/'),
                _ => {}
            }
            n
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Ok(format!("{raw} is empty"));
    }
    Ok(names.join("\n"))
}

pub(super) fn search_files(reach: &Reach, args: &Map<String, Value>) -> Result<String, String> {
    let raw = str_arg(args, "path").unwrap_or(".");
    let name = str_arg(args, "name").filter(|s| !s.is_empty()).map(str::to_lowercase);
    let content = str_arg(args, "content").filter(|s| !s.is_empty());
    if name.is_none() && content.is_none() {
        return Err("give `name`, `content` or both".into());
    }
    let root = reach.guard(raw)?;
    // Results are shown under the path as the model wrote it, not the resolved one.
    let shown = |p: &Path| display(&Path::new(raw).join(p.strip_prefix(&root).unwrap_or(p)));
    let mut hits = Vec::new();
    // Files whose content was not searched because they usually hold secrets: the model is
    // told, so that "no matches" is not taken for more than it is.
    let mut secrets = 0;
    // Only real directories are pushed: the walk stays under `root` by construction.
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for e in entries {
            let path = e.path();
            let file_name = e.file_name().to_string_lossy().into_owned();
            let Ok(kind) = e.file_type() else { continue };
            // The file whose content would be read: the entry, or a link's resolved target.
            let target = if kind.is_symlink() {
                let check = reach.ws.check_path(&path);
                let reachable = check.verdict != Verdict::Outside || check.resolved.starts_with(&root);
                // A link out is skipped; a link to a directory is not walked (no loops).
                if !reachable || check.resolved.is_dir() {
                    continue;
                }
                check.resolved
            } else if kind.is_dir() {
                if !SKIP_DIRS.contains(&file_name.as_str()) {
                    stack.push(path);
                }
                continue;
            } else {
                path.clone()
            };
            if name.as_ref().is_some_and(|n| !file_name.to_lowercase().contains(n.as_str())) {
                continue;
            }
            match content {
                None => hits.push(shown(&path)),
                // A secret's content (or a hard link's, whose other names may be outside) is
                // never searched unless that very file was approved.
                Some(_)
                    if (reach.ws.secret_kind(&target).is_some() || super::workspace::hard_linked(&target))
                        && !reach.approved.contains(&target) =>
                {
                    secrets += 1;
                }
                Some(needle) => grep(&target, &shown(&path), needle, &mut hits),
            }
            if hits.len() >= MAX_SEARCH_RESULTS {
                hits.push(format!("[stopped at {MAX_SEARCH_RESULTS} results]"));
                return Ok(hits.join("\n"));
            }
        }
    }
    if hits.is_empty() {
        hits.push(format!("no matches under {raw}"));
    }
    if secrets > 0 {
        hits.push(format!(
            "[not searched: {secrets} file(s) that usually hold secrets or are hard links; read_file asks the user]"
        ));
    }
    Ok(hits.join("\n"))
}

fn grep(path: &Path, shown: &str, needle: &str, hits: &mut Vec<String>) {
    let Ok(meta) = std::fs::metadata(path) else { return };
    // Only regular files: reading a FIFO or a device would block or never end.
    if !meta.is_file() || meta.len() > MAX_GREP_BYTES {
        return;
    }
    let budget = crate::sys::read::Budget::fixed("grep_bytes", usize::try_from(MAX_GREP_BYTES).unwrap_or(usize::MAX));
    let Ok(bytes) = crate::sys::read::file_bytes(path, budget) else { return };
    if bytes.contains(&0) {
        return; // binary
    }
    let text = String::from_utf8_lossy(&bytes);
    for (i, line) in text.lines().enumerate() {
        if line.contains(needle) {
            hits.push(format!("{shown}:{}: {}", i + 1, super::clip(line.trim(), 200)));
            if hits.len() >= MAX_SEARCH_RESULTS {
                return;
            }
        }
    }
}

fn display(p: &Path) -> String {
    p.strip_prefix("./").unwrap_or(p).display().to_string()
}

pub(super) fn write_file(reach: &Reach, args: &Map<String, Value>) -> Result<String, String> {
    let raw = required(args, "path")?;
    let content = required(args, "content")?;
    let path = reach.guard(raw)?;
    // Writing into a FIFO blocks until a reader comes; into a device, who knows.
    if let Some(what) = std::fs::metadata(&path).ok().and_then(|m| crate::sys::read::not_regular(m.file_type())) {
        return Err(format!("cannot write {raw}: it is {what}, not a regular file; only regular files are written"));
    }
    std::fs::write(&path, content).map_err(|e| format!("cannot write {raw}: {e}"))?;
    Ok(format!("wrote {} bytes to {raw}", content.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_at_once_for_reading_and_writing() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let reach = Reach { ws: Workspace::new(dir.path(), Vec::new()).unwrap(), approved: Vec::new() };
        let args = |v: Value| v.as_object().unwrap().clone();
        // Were it opened, this thread would wait for a writer forever.
        let e = read_file(&reach, &args(serde_json::json!({"path": "pipe"}))).unwrap_err();
        assert!(e.contains("FIFO") && e.contains("not a regular file"), "{e}");
        let e = write_file(&reach, &args(serde_json::json!({"path": "pipe", "content": "x"}))).unwrap_err();
        assert!(e.contains("FIFO"), "{e}");
        std::fs::write(dir.path().join("a.txt"), "words").unwrap();
        assert_eq!(read_file(&reach, &args(serde_json::json!({"path": "a.txt"}))).unwrap(), "words");
    }
}
