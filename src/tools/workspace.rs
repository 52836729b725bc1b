//! TEMPORARY shim until the workspace module lands (replaced on merge).

use std::path::PathBuf;

/// A path a call touches that needs the user's approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathNeed {
    pub path: PathBuf,
    pub why: String,
    pub write: bool,
}
