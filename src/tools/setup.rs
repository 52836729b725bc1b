//! The session's built-in tools as the configuration asks: the workspace they are confined to
//! (`--workspace`, else `workspace =` in `config.toml`, else the working directory) with
//! palaver's own config and data directories protected, and the user's `[[tools]]`.

use super::Registry;
use super::workspace::Workspace;
use crate::config::{Config, Paths};
use std::path::PathBuf;

/// The workspace the configuration names (`~/` is the home directory).
///
/// # Errors
/// When the named directory does not exist or is not a directory.
pub fn workspace(cfg: &Config, paths: &Paths) -> Result<Workspace, String> {
    let protected = vec![paths.config_dir.clone(), paths.data_dir.clone()];
    let mut ws = match &cfg.workspace {
        Some(dir) => Workspace::new(&expand_home(dir), protected).map_err(|e| format!("workspace: {e}"))?,
        None => {
            let cwd = std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
            Workspace::new(&cwd, protected)?
        }
    };
    ws.set_tool_env(cfg.tool_env.clone());
    Ok(ws)
}

/// The built-in tools confined to the configured workspace, plus the user's tools; returns
/// notices for user tools that cannot be used.
///
/// # Errors
/// As [`workspace`].
pub fn builtins(cfg: &Config, paths: &Paths) -> Result<(Registry, Vec<String>), String> {
    let mut registry = Registry::builtins();
    registry.set_workspace(workspace(cfg, paths)?);
    let notices = registry.add_user_tools(&cfg.tools);
    Ok((registry, notices))
}

fn expand_home(p: &std::path::Path) -> PathBuf {
    match (p.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => p.to_path_buf(),
    }
}
