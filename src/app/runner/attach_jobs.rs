//! Carries out `AttachEffect`s off the UI task: reading and typing a file, listing a folder
//! for completion, writing an image to a file and starting the system viewer.

use super::Runner;
use crate::app::attach::{AttachEffect, AttachMsg, ImageSource, complete};
use crate::app::msg::Msg;

impl Runner {
    /// Runs one attachment effect on a blocking task; its answer comes back as a `Msg`.
    pub fn attach_effect(&mut self, effect: AttachEffect) {
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let msg = match effect {
                AttachEffect::Load { spec, policy, paste, confirmed } => {
                    let path = expand_home(&spec);
                    let result = crate::engine::attach_load::load(&path, None, &policy).map_err(|e| e.0);
                    let secret = result
                        .as_ref()
                        .ok()
                        .filter(|_| !confirmed)
                        .and_then(|a| crate::engine::attach_load::secret_in(&path, a));
                    match secret {
                        Some(why) => AttachMsg::Secret { spec, why, paste },
                        None => AttachMsg::Loaded { spec, result, paste },
                    }
                }
                AttachEffect::Complete { typed } => {
                    let (draft, candidates) = complete(&typed);
                    AttachMsg::Completed { typed, draft, candidates }
                }
                // The interactive loop reads the clipboard itself (it is the terminal's side).
                AttachEffect::PasteImage { .. } => return,
                AttachEffect::Open(source) => match open(source) {
                    Ok(path) => AttachMsg::Opened(path),
                    Err(e) => AttachMsg::OpenFailed(e),
                },
            };
            let _ = tx.send(Msg::Attach(msg));
        });
    }
}

/// `~/x` as the user meant it.
pub(super) fn expand_home(spec: &str) -> String {
    match (spec.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => format!("{}/{rest}", home.to_string_lossy()),
        _ => spec.to_owned(),
    }
}

/// How long the opener is watched for a failure before it is taken to have started a viewer
/// (`xdg-open` returns at once on most desktops; where it runs the viewer itself, it waits).
const OPENER_WATCH: std::time::Duration = std::time::Duration::from_secs(3);

/// Writes the image where a viewer can read it (`<data dir>/open/`, named by its hash) and
/// starts the platform's opener; answers where the file is, or why it could not be shown
/// (naming the file, so the user can open it another way).
fn open(source: ImageSource) -> Result<std::path::PathBuf, String> {
    let path = match source {
        // Checked again here: the file must still be one palaver saved.
        ImageSource::File(p) => crate::engine::images::saved_image(&p.to_string_lossy())
            .ok_or_else(|| format!("cannot open {}: not an image palaver saved", p.display()))?,
        ImageSource::Bytes { name, data } => {
            write_for_viewer(&crate::config::Paths::from_env().data_dir.join("open"), &name, data.bytes())?
        }
    };
    let vars = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).is_some();
    launch(&path, cfg!(target_os = "macos") || vars("DISPLAY") || vars("WAYLAND_DISPLAY"))
        .map_err(|why| format!("cannot open the image: {why}; the file is {}", path.display()))?;
    Ok(path)
}

/// Starts the opener on `path` and watches it for a little while: a missing opener, one that
/// exits with a failure (no application for the type, no display) or no display at all is an
/// error saying which.
fn launch(path: &std::path::Path, display: bool) -> Result<(), String> {
    if !display {
        return Err("no graphical display (DISPLAY and WAYLAND_DISPLAY are not set)".into());
    }
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    // Lasting: the viewer it starts outlives it on purpose.
    let mut spawn = crate::sys::spawn::Spawn::helper(opener, crate::sys::spawn::Role::Lasting);
    spawn
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = spawn.std().map_err(|e| format!("cannot start {opener}: {e}"))?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let said =
                    child.stderr.take().and_then(|err| crate::sys::read::head(err, 4096).ok()).unwrap_or_default();
                let said = String::from_utf8_lossy(&said);
                let said = crate::text::sanitize::sanitize(&said).split_whitespace().collect::<Vec<_>>().join(" ");
                let code = status.code().map_or_else(|| "a signal".to_owned(), |c| c.to_string());
                return Err(if said.is_empty() {
                    format!("{opener} failed (exit {code})")
                } else {
                    format!("{opener} failed (exit {code}): {said}")
                });
            }
            Ok(None) if started.elapsed() < OPENER_WATCH => std::thread::sleep(std::time::Duration::from_millis(50)),
            // Still running: it is the viewer, or an opener waiting on one. Reaped on this
            // blocking thread (never the UI task), so no zombie is left behind.
            Ok(None) => {
                drop(child.stderr.take());
                let _ = child.wait();
                return Ok(());
            }
            Err(e) => return Err(format!("cannot wait for {opener}: {e}")),
        }
    }
}

/// Writes `bytes` to `<dir>/<sha256>.<ext>` for a viewer: the extension from the bytes (png,
/// jpg, gif or webp; anything else is refused, whatever its name says), the folder private
/// (0700), the file written beside it and renamed into place (a link planted at the name is
/// replaced, never followed).
fn write_for_viewer(dir: &std::path::Path, name: &str, bytes: &[u8]) -> Result<std::path::PathBuf, String> {
    use std::io::Write as _;
    let ext = match crate::engine::attachment::sniff(bytes) {
        Ok((_, m)) if m == "image/png" => "png",
        Ok((_, m)) if m == "image/jpeg" => "jpg",
        Ok((_, m)) if m == "image/gif" => "gif",
        Ok((_, m)) if m == "image/webp" => "webp",
        _ => return Err(format!("cannot open {name}: it is not a png, jpeg, gif or webp image")),
    };
    let fail = |e: std::io::Error| format!("cannot write the image to {}: {e}", dir.display());
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        builder.mode(0o700);
        builder.create(dir).map_err(fail)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(fail)?;
    }
    #[cfg(not(unix))]
    builder.create(dir).map_err(fail)?;
    let hash = crate::engine::attachment::sha256_hex(bytes);
    let path = dir.join(format!("{hash}.{ext}"));
    let tmp = dir.join(format!(".{hash}.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    Ok(path)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read what they wrote
mod tests {
    use super::*;

    #[test]
    fn an_opener_that_cannot_show_the_image_says_why() {
        let p = std::path::Path::new("/nonexistent/palaver-test/a.png");
        let e = launch(p, false).unwrap_err();
        assert!(e.contains("no graphical display"), "{e}");
        // With a display named, the platform opener runs: where it is missing or fails (as on a
        // machine with no desktop), the answer says which and how.
        if let Err(e) = launch(p, true) {
            assert!(e.contains("xdg-open") || e.contains("open"), "{e}");
        }
    }

    #[test]
    fn the_viewer_gets_a_private_file_named_by_the_bytes() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("open");
        let gif = b"GIF89a\x01\x00\x01\x00rest".to_vec();
        let p = write_for_viewer(&dir, "x.sh", &gif).unwrap();
        let hash = crate::engine::attachment::sha256_hex(&gif);
        assert_eq!(p, dir.join(format!("{hash}.gif")), "the name says nothing: the bytes do");
        assert_eq!(std::fs::read(&p).unwrap(), gif);
        // Again (the same image opened twice), and over a link planted at the name.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
            let target = home.path().join("target");
            std::fs::write(&target, "keep").unwrap();
            std::fs::remove_file(&p).unwrap();
            std::os::unix::fs::symlink(&target, &p).unwrap();
            assert_eq!(write_for_viewer(&dir, "a.gif", &gif).unwrap(), p);
            assert_eq!(std::fs::read(&target).unwrap(), b"keep", "the link was not followed");
            assert_eq!(std::fs::read(&p).unwrap(), gif);
        }
        assert!(write_for_viewer(&dir, "a.gif", &gif).is_ok());
        let e = write_for_viewer(&dir, "evil.desktop", b"[Desktop Entry]\nExec=sh").unwrap_err();
        assert!(e.contains("not a png, jpeg, gif or webp"), "{e}");
        assert!(write_for_viewer(&dir, "a.pdf", b"%PDF-1.7").is_err());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temp file left behind");
    }
}
