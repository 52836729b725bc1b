//! A prompt set is often someone else's file, and so are the files it names: its `attach`
//! paths, its `vars` files, its judges' prompt files and its schema files all resolve in the
//! set's own folder by one rule ([`resolve`]), checked before anything is sent. A path that
//! lands outside that folder (an absolute path, a `..`, a symlink or hard link out, `/proc`),
//! a file that usually holds secrets by its name, or one whose text holds a credential is
//! refused naming the line, unless the user passed `--allow-outside`. A FIFO or a device is
//! refused whatever the flag says. Each accepted path is stored resolved, so every cell (and a
//! resumed run) reads exactly the file that was checked.

use crate::engine::evals::expect::Expect;
use crate::engine::evals::prompts::PromptItem;
use crate::sys::read::Budget;
use crate::sys::read::not_regular;
use crate::tools::workspace::Workspace;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Largest file whose text is scanned for credentials here; a larger one is refused by the
/// attachment limits when a cell reads it.
const SCAN_LIMIT: usize = 32 * 1024 * 1024;

/// The largest `vars` or schema file a prompt set may name.
pub const SET_FILE: Budget = Budget::fixed("prompt_set_file_bytes", 16 * 1024 * 1024);
/// The largest judge prompt file a prompt set may name.
pub const JUDGE_PROMPT: Budget = Budget::fixed("judge_prompt_bytes", 1024 * 1024);

/// The folder a prompt set's paths resolve in.
///
/// # Errors
/// The folder cannot be resolved.
pub fn folder(path: &Path) -> Result<Workspace, String> {
    Workspace::new(path, Vec::new()).map_err(|e| format!("cannot resolve the prompt set's folder: {e}"))
}

/// The one rule for a path a prompt set names: `spec` resolved in the set's folder (`ws`),
/// refused when it is not a regular file, and unless `allow`, when it lands outside the
/// folder or holds secrets by its name or its text.
///
/// # Errors
/// Why it is refused, ending with what nothing was sent and how to allow it.
pub fn resolve(ws: &Workspace, spec: &str, allow: bool) -> Result<PathBuf, String> {
    let check = ws.check(spec);
    let refuse = |why: String| format!("{why}; nothing was sent (pass --allow-outside to use it anyway)");
    // A FIFO or a device would block or never end when it is read: refused whatever the flag
    // says, before anything is sent.
    if let Some(what) = std::fs::metadata(&check.resolved).ok().and_then(|m| not_regular(m.file_type())) {
        return Err(format!("it is {what}, not a regular file; only regular files are read; nothing was sent"));
    }
    if !allow {
        if let Some(why) = ws.why(&check) {
            let why = why.replace("outside the workspace", "outside the prompt set's folder");
            let why =
                why.strip_prefix("usually holds").map_or(format!("is {why}"), |rest| format!("usually holds{rest}"));
            let resolved = check.resolved.display().to_string();
            let shown = crate::text::sanitize::sanitize(&resolved);
            return Err(refuse(format!("{shown} {why}")));
        }
        let kinds = secrets_in(&check.resolved);
        if !kinds.is_empty() {
            return Err(refuse(format!("it holds {}", crate::text::secrets::describe(&kinds))));
        }
    }
    Ok(check.resolved)
}

/// Reads a file [`resolve`] let through, refused past `budget` (the thing read named `what`).
///
/// # Errors
/// It cannot be read, is larger than the budget, or is not UTF-8.
pub fn read(path: &Path, budget: Budget, what: &str) -> Result<String, String> {
    crate::sys::read::file_string(path, budget).map_err(|e| match e {
        crate::sys::read::ReadError::Over(b) => b.refused(&format!("the {what}")),
        other => other.to_string(),
    })
}

/// The text of the file `name` in the set's folder, for the set's parser: `None` when there is
/// nothing by that name.
///
/// # Errors
/// The file is refused by [`resolve`], or cannot be read.
pub fn set_file(ws: &Workspace, name: &str, allow: bool) -> Result<Option<String>, String> {
    let shown = crate::text::sanitize::sanitize(name).into_owned();
    if std::fs::symlink_metadata(ws.root().join(name)).is_err() {
        return Ok(None);
    }
    let path = resolve(ws, name, allow).map_err(|why| format!("{shown}: {why}"))?;
    read(&path, SET_FILE, "file a prompt set names").map(Some).map_err(|why| format!("cannot read {shown}: {why}"))
}

/// Checks and resolves every item's local `attach` paths and its judges' prompt files against
/// the set's folder, and refuses `script` checks unless `scripts` (the user's `--allow-scripts`):
/// a set names programs to run, and a set is often someone else's file.
///
/// # Errors
/// The first refused path or script: its line, what it names and why; nothing has been sent.
pub fn check(items: &mut [PromptItem], ws: &Workspace, allow: bool, scripts: bool) -> Result<(), String> {
    for item in items.iter_mut() {
        let line = item.line;
        let refused = |kind: &str, spec: &str, why: String| {
            format!("line {line}: {kind} {}: {why}", crate::text::sanitize::sanitize(spec))
        };
        for spec in &mut item.attach {
            if crate::engine::attach_load::is_url(spec) || spec == "-" {
                continue;
            }
            let resolved = resolve(ws, spec, allow).map_err(|why| refused("attach", spec, why))?;
            *spec = resolved.display().to_string();
        }
        if let Some(raw) = item.expect_raw.as_mut() {
            item.expect = Some(expect_rules(raw, ws, allow, scripts).map_err(|e| format!("line {line}: {e}"))?);
        }
        // A conversation's turns carry their own checks, under the same rules.
        let turns = item.conversation.as_mut().and_then(|c| c.get_mut("turns")).and_then(Value::as_array_mut);
        for (i, turn) in turns.into_iter().flatten().enumerate() {
            if let Some(raw) = turn.get_mut("expect") {
                expect_rules(raw, ws, allow, scripts).map_err(|e| format!("line {line}: turn {}: {e}", i + 1))?;
            }
        }
    }
    Ok(())
}

/// One `expect` made ready to run: its judge prompt files resolved in the set's folder, its
/// scripts set to run there (and refused unless `scripts`), compiled.
fn expect_rules(raw: &mut Value, ws: &Workspace, allow: bool, scripts: bool) -> Result<Expect, String> {
    let mut failed = None;
    judge_prompts(raw, &mut |spec| match resolve(ws, spec, allow) {
        Ok(p) => Some(p.display().to_string()),
        Err(why) => {
            let spec = crate::text::sanitize::sanitize(spec);
            failed.get_or_insert_with(|| format!("judge prompt {spec}: {why}"));
            None
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    // Scripts run in the set's folder, whatever the set says; kept in what the store
    // keeps, so a resumed run finds it.
    script_dirs(raw, &ws.root().display().to_string());
    let expect = Expect::compile(raw).map_err(|e| format!("expect: {e}"))?;
    if !scripts {
        refuse_scripts(&expect)?;
    }
    Ok(expect)
}

/// Replaces the `prompt` file of every judge check in `expect` with what `resolve` makes of it
/// (left as it is when `resolve` says `None`).
fn judge_prompts(expect: &mut Value, resolve: &mut dyn FnMut(&str) -> Option<String>) {
    match expect {
        Value::Array(checks) => checks.iter_mut().for_each(|c| judge_prompts(c, resolve)),
        Value::Object(o) if o.contains_key("judge") || o.contains_key("select_best") => {
            if let Some(Value::String(path)) = o.get_mut("prompt") {
                if let Some(resolved) = resolve(path) {
                    *path = resolved;
                }
            }
        }
        _ => {}
    }
}

/// Sets the folder every `script` check of `expect` runs in.
fn script_dirs(expect: &mut Value, dir: &str) {
    match expect {
        Value::Array(checks) => checks.iter_mut().for_each(|c| script_dirs(c, dir)),
        Value::Object(o) => {
            if let Some(script) = o.get_mut("script") {
                if script.is_array() {
                    *script = serde_json::json!({"command": script.take()});
                }
                if let Value::Object(s) = script {
                    s.insert("dir".into(), Value::String(dir.to_owned()));
                }
            }
            if let Some(inner) = o.get_mut("not") {
                script_dirs(inner, dir);
            }
        }
        _ => {}
    }
}

/// A set's `script` checks are refused unless the user allowed them (`--allow-scripts`).
///
/// # Errors
/// The first script, naming its program.
pub fn refuse_scripts(expect: &Expect) -> Result<(), String> {
    let Some((spec, _)) = expect.scripts().next() else { return Ok(()) };
    let program = crate::text::sanitize::sanitize(spec.command.first().map_or("", String::as_str)).into_owned();
    Err(format!(
        "a `script` check would run `{program}`, a program the prompt set names; nothing was sent (pass --allow-scripts to run the set's scripts, sandboxed with the network closed)"
    ))
}

/// The credential kinds a regular file's text holds (nothing for a FIFO, a device, a folder or
/// a file that cannot be read: the cell that loads it says why).
fn secrets_in(path: &Path) -> Vec<&'static str> {
    let Ok(meta) = std::fs::metadata(path) else { return Vec::new() };
    if !meta.is_file() {
        return Vec::new();
    }
    let Ok(bytes) = crate::sys::read::open_regular(path)
        .map_err(|e| e.to_string())
        .and_then(|f| crate::sys::read::head(f, SCAN_LIMIT).map_err(|e| e.to_string()))
    else {
        return Vec::new();
    };
    crate::text::secrets::find(&String::from_utf8_lossy(&bytes))
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use crate::engine::evals::prompts::parse;

    fn set(dir: &Path, lines: &str, allow: bool) -> Result<Vec<PromptItem>, String> {
        let mut items = parse(lines).unwrap();
        check(&mut items, &folder(dir).unwrap(), allow, false).map(|()| items)
    }

    #[test]
    fn paths_resolve_in_the_set_folder_and_nothing_else_is_let_through() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("set");
        std::fs::create_dir_all(dir.join("img")).unwrap();
        std::fs::write(dir.join("img/a.txt"), "hello").unwrap();
        std::fs::write(dir.join(".env"), "KEY=1").unwrap();
        let key = format!("-----BEGIN {}-----\nMIIE\n", "EC PRIVATE KEY");
        std::fs::write(dir.join("notes.txt"), key).unwrap();
        std::fs::write(tmp.path().join("outside.txt"), "o").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside.txt"), dir.join("link.txt")).unwrap();
        let ok = set(&dir, "{\"prompt\":\"p\",\"attach\":[\"img/a.txt\",\"https://x.test/a.png\"]}\n", false).unwrap();
        let root = dir.canonicalize().unwrap();
        assert_eq!(ok[0].attach, vec![root.join("img/a.txt").display().to_string(), "https://x.test/a.png".into()]);
        for (attach, said) in [
            ("/proc/self/status", "outside the prompt set's folder"),
            ("../outside.txt", "outside the prompt set's folder"),
            ("link.txt", "outside the prompt set's folder"),
            (".env", "usually holds secrets (environment secrets (.env))"),
            ("notes.txt", "it holds a private key (PEM block)"),
        ] {
            let text = format!("{{\"prompt\":\"first\"}}\n\n{{\"prompt\":\"p\",\"attach\":\"{attach}\"}}\n");
            let e = set(&dir, &text, false).unwrap_err();
            assert!(e.starts_with(&format!("line 3: attach {attach}: ")), "{e}");
            assert!(e.contains(said) && e.contains("--allow-outside"), "{e}");
            // The flag lets it through, resolved.
            let items = set(&dir, &text, true).unwrap();
            assert!(Path::new(&items[1].attach[0]).is_absolute(), "{:?}", items[1].attach);
        }
    }

    #[test]
    fn a_fifo_is_refused_naming_its_line_even_with_the_flag() {
        let tmp = tempfile::tempdir().unwrap();
        rustix::fs::mknodat(rustix::fs::CWD, tmp.path().join("pipe"), rustix::fs::FileType::Fifo, 0o600.into(), 0)
            .unwrap();
        for allow in [false, true] {
            let e =
                set(tmp.path(), "{\"prompt\":\"a\"}\n{\"prompt\":\"p\",\"attach\":[\"pipe\"]}\n", allow).unwrap_err();
            assert!(e.starts_with("line 2: attach pipe: it is a FIFO (named pipe), not a regular file"), "{e}");
        }
    }

    #[test]
    fn judge_prompt_and_set_files_follow_the_same_rule() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("set");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("judge.md"), "Rate {{answer}}").unwrap();
        std::fs::write(dir.join("rows.csv"), "a\n1\n").unwrap();
        std::fs::write(tmp.path().join("elsewhere.csv"), "a\n2\n").unwrap();
        let ws = folder(&dir).unwrap();
        let root = dir.canonicalize().unwrap();
        let judged = |prompt: &str| {
            format!(
                "{{\"prompt\":\"p\"}}\n{{\"prompt\":\"q\",\"expect\":[\"x\",{{\"judge\":\"good\",\"prompt\":\"{prompt}\"}}]}}\n"
            )
        };
        let items = set(&dir, &judged("judge.md"), false).unwrap();
        let kept = root.join("judge.md").display().to_string();
        assert_eq!(items[1].expect_raw.as_ref().unwrap()[1]["prompt"], kept.as_str(), "stored resolved");
        assert_eq!(items[1].expect.as_ref().unwrap().judged().next().unwrap().prompt.as_deref(), Some(kept.as_str()));
        for outside in ["../elsewhere.csv", "/etc/hostname"] {
            let e = set(&dir, &judged(outside), false).unwrap_err();
            assert!(
                e.starts_with(&format!("line 2: judge prompt {outside}: ")) && e.contains("--allow-outside"),
                "{e}"
            );
            assert!(set(&dir, &judged(outside), true).is_ok());
        }
        // vars and schema files: read through `set_file`, by the same rule.
        assert_eq!(set_file(&ws, "rows.csv", false).unwrap().as_deref(), Some("a\n1\n"));
        assert_eq!(set_file(&ws, "gone.csv", false).unwrap(), None);
        let e = set_file(&ws, "../elsewhere.csv", false).unwrap_err();
        assert!(e.contains("outside the prompt set's folder") && e.contains("--allow-outside"), "{e}");
        assert_eq!(set_file(&ws, "../elsewhere.csv", true).unwrap().as_deref(), Some("a\n2\n"));
    }
}
