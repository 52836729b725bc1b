//! Choices made in the chat screen that outlive it (`/theme`): a small TOML file in the data
//! directory, written whole and renamed into place. The user's `config.toml` is never rewritten:
//! its comments and order are the user's.

use super::Paths;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the chat screen remembers between runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remembered {
    /// The theme last chosen with `/theme` (wins over `theme` in config.toml: it is newer).
    pub theme: Option<String>,
}

impl Remembered {
    #[must_use]
    pub fn file(paths: &Paths) -> PathBuf {
        paths.data_dir.join("remembered.toml")
    }

    /// What was remembered; nothing when the file is missing or unreadable (a remembered choice
    /// is a convenience, never a reason not to start).
    #[must_use]
    pub fn load(paths: &Paths) -> Self {
        crate::sys::read::file_string(&Self::file(paths), crate::sys::read::CONFIG_FILE)
            .ok()
            .and_then(|t| toml::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Writes the file (blocking: call it off the UI task).
    ///
    /// # Errors
    /// When the data directory cannot be written.
    pub fn save(&self, paths: &Paths) -> Result<(), String> {
        let file = Self::file(paths);
        let text = toml::to_string(self).map_err(|e| e.to_string())?;
        let fail = |e: std::io::Error| format!("cannot remember the choice in {}: {e}", file.display());
        std::fs::create_dir_all(&paths.data_dir).map_err(fail)?;
        let tmp = file.with_extension(format!("toml.{}.tmp", std::process::id()));
        std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &file)).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_is_kept_and_a_bad_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths { config_dir: dir.path().into(), data_dir: dir.path().join("data") };
        assert_eq!(Remembered::load(&paths), Remembered::default());
        Remembered { theme: Some("light".into()) }.save(&paths).unwrap();
        assert_eq!(Remembered::load(&paths).theme.as_deref(), Some("light"));
        std::fs::write(Remembered::file(&paths), "theme = [").unwrap();
        assert_eq!(Remembered::load(&paths), Remembered::default());
    }
}
