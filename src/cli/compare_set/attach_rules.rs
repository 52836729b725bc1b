//! A prompt set is often someone else's file: its `attach` paths are resolved against the
//! set's own folder and checked before anything is sent. A path that lands outside that
//! folder (an absolute path, a `..`, a symlink or hard link out, `/proc`), a file that usually
//! holds secrets by its name, or one whose text holds a credential is refused naming the line,
//! unless the user passed `--allow-attach-outside`. Each accepted path is stored resolved, so
//! every cell (and a resumed run) reads exactly the file that was checked.

use crate::engine::evals::prompts::PromptItem;
use crate::sys::read::not_regular;
use crate::tools::workspace::Workspace;
use std::path::Path;

/// Largest file whose text is scanned for credentials here; a larger one is refused by the
/// attachment limits when a cell reads it.
const SCAN_LIMIT: usize = 32 * 1024 * 1024;

/// Checks and resolves every item's local `attach` paths against `folder`.
///
/// # Errors
/// The first refused path: its line, the path as written and why; nothing has been sent.
pub fn check(items: &mut [PromptItem], folder: &Path, allow: bool) -> Result<(), String> {
    let ws = Workspace::new(folder, Vec::new()).map_err(|e| format!("cannot resolve the prompt set's folder: {e}"))?;
    for item in items.iter_mut() {
        for spec in &mut item.attach {
            if crate::engine::attach_load::is_url(spec) || spec == "-" {
                continue;
            }
            let check = ws.check(spec);
            let line =
                |why: String| format!("line {}: attach {}: {why}", item.line, crate::text::sanitize::sanitize(spec));
            let refuse = |why: String| {
                line(format!("{why}; nothing was sent (pass --allow-attach-outside to attach it anyway)"))
            };
            // A FIFO or a device would block or never end when a cell reads it: refused whatever
            // the flag says, before anything is sent.
            if let Some(what) = std::fs::metadata(&check.resolved).ok().and_then(|m| not_regular(m.file_type())) {
                return Err(line(format!(
                    "it is {what}, not a regular file; only regular files are attached; nothing was sent"
                )));
            }
            if !allow {
                if let Some(why) = ws.why(&check) {
                    let why = why.replace("outside the workspace", "outside the prompt set's folder");
                    let why = why
                        .strip_prefix("usually holds")
                        .map_or(format!("is {why}"), |rest| format!("usually holds{rest}"));
                    let resolved = check.resolved.display().to_string();
                    let shown = crate::text::sanitize::sanitize(&resolved);
                    return Err(refuse(format!("{shown} {why}")));
                }
                let kinds = secrets_in(&check.resolved);
                if !kinds.is_empty() {
                    return Err(refuse(format!("it holds {}", crate::text::secrets::describe(&kinds))));
                }
            }
            *spec = check.resolved.display().to_string();
        }
    }
    Ok(())
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
        check(&mut items, dir, allow).map(|()| items)
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
            assert!(e.contains(said) && e.contains("--allow-attach-outside"), "{e}");
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
}
