//! Where palaver keeps its files: everything under `$PALAVER_HOME` when set, else the
//! platform's config and data directories.

use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct Paths {
    pub config_dir: PathBuf,
    pub data_dir: PathBuf,
}

impl Paths {
    /// Resolves from the environment.
    #[must_use]
    pub fn from_env() -> Self {
        if let Some(home) = std::env::var_os("PALAVER_HOME").filter(|h| !h.is_empty()) {
            let home = PathBuf::from(home);
            return Self { config_dir: home.clone(), data_dir: home };
        }
        match directories::ProjectDirs::from("", "", "palaver") {
            Some(d) => Self { config_dir: d.config_dir().to_path_buf(), data_dir: d.data_dir().to_path_buf() },
            None => {
                let fallback = PathBuf::from(".palaver");
                Self { config_dir: fallback.clone(), data_dir: fallback }
            }
        }
    }

    #[must_use]
    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }

    #[must_use]
    pub fn themes_dir(&self) -> PathBuf {
        self.config_dir.join("themes")
    }

    #[must_use]
    pub fn database(&self) -> PathBuf {
        self.data_dir.join("palaver.sqlite3")
    }

    /// The response cache of prompt sets: in the platform's cache directory (under
    /// `$PALAVER_HOME/cache` when that is set), apart from the history it must not grow.
    #[must_use]
    pub fn reply_cache(&self) -> PathBuf {
        let home = std::env::var_os("PALAVER_HOME").filter(|h| !h.is_empty());
        let dir = match (home, directories::ProjectDirs::from("", "", "palaver")) {
            (None, Some(d)) => d.cache_dir().to_path_buf(),
            _ => self.data_dir.join("cache"),
        };
        dir.join("replies.sqlite3")
    }
}
