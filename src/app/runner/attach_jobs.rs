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
                AttachEffect::Load { spec, policy, paste } => {
                    let path = expand_home(&spec);
                    let result = crate::engine::attach_load::load(&path, None, &policy).map_err(|e| e.0);
                    AttachMsg::Loaded { spec, result, paste }
                }
                AttachEffect::Complete { typed } => {
                    let (draft, candidates) = complete(&typed);
                    AttachMsg::Completed { typed, draft, candidates }
                }
                AttachEffect::Open(source) => match open(source) {
                    Ok(()) => return,
                    Err(e) => AttachMsg::OpenFailed(e),
                },
            };
            let _ = tx.send(Msg::Attach(msg));
        });
    }
}

/// `~/x` as the user meant it.
fn expand_home(spec: &str) -> String {
    match (spec.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => format!("{}/{rest}", home.to_string_lossy()),
        _ => spec.to_owned(),
    }
}

/// Writes the image where a viewer can read it (`<data dir>/open/`, named by its hash) and
/// starts the platform's opener without waiting for it.
fn open(source: ImageSource) -> Result<(), String> {
    let path = match source {
        // Checked again here: the file must still be one palaver saved.
        ImageSource::File(p) => crate::engine::images::saved_image(&p.to_string_lossy())
            .ok_or_else(|| format!("cannot open {}: not an image palaver saved", p.display()))?,
        ImageSource::Bytes { name, data } => {
            write_for_viewer(&crate::config::Paths::from_env().data_dir.join("open"), &name, data.bytes())?
        }
    };
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    std::process::Command::new(opener)
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        // Waited for on this blocking thread (never the UI task), so no zombie is left behind.
        .map(|mut child| drop(child.wait()))
        .map_err(|e| format!("cannot start {opener} for {}: {e}", path.display()))
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
mod tests {
    use super::*;

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
