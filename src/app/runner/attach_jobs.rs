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

/// Writes the image where a viewer can read it (the temp dir, named by its hash) and starts
/// the platform's opener without waiting for it.
fn open(source: ImageSource) -> Result<(), String> {
    let path = match source {
        ImageSource::File(p) => p,
        ImageSource::Bytes { name, sha256, data } => {
            let ext = name.rsplit_once('.').map_or("img", |(_, e)| e);
            let safe: String = ext.chars().filter(char::is_ascii_alphanumeric).take(5).collect();
            let p = std::env::temp_dir().join(format!("palaver-{}.{safe}", &sha256[..sha256.len().min(16)]));
            std::fs::write(&p, data.bytes()).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            p
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
