//! Editing the draft in `$VISUAL` / `$EDITOR`: a temporary file, the editor in the foreground,
//! the file read back. The caller suspends the screen around it.

use crate::sys::spawn::{Role, Spawn};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The editor command: `$VISUAL`, else `$EDITOR`, else `vi`. It may carry arguments (`code -w`).
#[must_use]
pub fn editor_command() -> Vec<String> {
    let raw = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_owned());
    raw.split_whitespace().map(str::to_owned).collect()
}

/// Runs the editor on `draft` (blocking) and returns the edited text.
///
/// # Errors
/// When the file cannot be written or read, or the editor cannot start or exits with an error.
pub fn edit(draft: &str) -> Result<String, String> {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("palaver-draft-{}-{n}.md", std::process::id()));
    std::fs::write(&path, draft).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let cmd = editor_command();
    let (prog, args) = cmd.split_first().map_or(("vi", &[][..]), |(p, a)| (p.as_str(), a));
    // In palaver's process group, which holds the terminal: the editor reads the keyboard.
    let mut spawn = Spawn::helper(prog, Role::Terminal);
    spawn.args(args).arg(&path);
    let result = spawn.std().and_then(|mut child| child.wait());
    let out = match result {
        Ok(status) if status.success() => crate::sys::read::file_string(&path, crate::sys::read::INPUT_FILE)
            .map_err(|e| format!("cannot read the draft back: {e}")),
        Ok(status) => Err(format!("{} exited with {status}; the draft is unchanged", cmd.join(" "))),
        Err(e) => Err(format!("cannot run {}: {e}", cmd.join(" "))),
    };
    let _ = std::fs::remove_file(&path);
    out
}
