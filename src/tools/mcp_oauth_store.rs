//! Where the OAuth tokens of remote MCP servers are kept: one JSON file per server under the
//! data directory (`mcp-oauth/NAME.json`), readable by the user alone (0600, in a 0700
//! directory), written atomically (a temporary file renamed over the old one) so a crash never
//! leaves half a token. Never in `config.toml`, which is shared and backed up.
//!
//! A file names the server URL it was issued for: when the config's `url` changes, the old
//! tokens are not sent to the new server (it needs a new login).

use serde::{Deserialize, Serialize};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// One server's OAuth client and tokens.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Stored {
    /// The MCP server's URL these tokens were issued for.
    pub server_url: String,
    /// The resource indicator sent with every grant (RFC 8707).
    pub resource: String,
    /// The client registered with the authorization server (RFC 7591).
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub token_endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch (`None`: not said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// When the access token was issued (seconds since the Unix epoch), for its lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obtained_at: Option<u64>,
}

/// Never the secrets: a `{:?}` in a log or an error must not carry a token.
impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stored")
            .field("server_url", &self.server_url)
            .field("client_id", &self.client_id)
            .field("expires_at", &self.expires_at)
            .field("has_refresh_token", &self.refresh_token.is_some())
            .finish_non_exhaustive()
    }
}

impl Stored {
    /// Every secret in it, for a redactor.
    #[must_use]
    pub fn secrets(&self) -> Vec<String> {
        let mut out = vec![self.access_token.clone()];
        out.extend(self.refresh_token.clone());
        out.extend(self.client_secret.clone());
        out
    }

    /// Seconds until the access token expires (negative: expired); `None` when not said.
    #[must_use]
    pub fn expires_in(&self) -> Option<i64> {
        let at = i64::try_from(self.expires_at?).ok()?;
        Some(at - i64::try_from(now()).unwrap_or(i64::MAX))
    }

    /// Whether the access token is expired or expires within `margin` seconds, or within a
    /// quarter of its lifetime when that is shorter (a token that lives 8 s is not refreshed
    /// on every request).
    #[must_use]
    pub fn is_expiring(&self, margin: i64) -> bool {
        let lifetime = self.expires_at.zip(self.obtained_at).map(|(e, o)| e.saturating_sub(o));
        let quarter = lifetime.and_then(|l| i64::try_from(l / 4).ok()).unwrap_or(margin);
        self.expires_in().is_some_and(|left| left <= margin.min(quarter))
    }
}

/// Seconds since the Unix epoch.
#[must_use]
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The directory of the token files.
#[must_use]
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("mcp-oauth")
}

/// The file of server `name`: its name with anything but `[A-Za-z0-9_-]` hex-escaped, so a
/// name such as `../x` stays inside the directory.
#[must_use]
pub fn file(data_dir: &Path, name: &str) -> PathBuf {
    let mut safe = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            safe.push(char::from(b));
        } else {
            safe.push_str(&format!("%{b:02X}"));
        }
    }
    dir(data_dir).join(format!("{safe}.json"))
}

/// The tokens of server `name` if there are any for `url`.
///
/// # Errors
/// When the file exists but cannot be read or parsed (the message names the file, not its
/// contents).
pub fn load(data_dir: &Path, name: &str, url: &str) -> Result<Option<Stored>, String> {
    let path = file(data_dir, name);
    let text = match crate::sys::read::file_string(&path, crate::sys::read::CONFIG_FILE) {
        Ok(t) => t,
        Err(crate::sys::read::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(crate::sys::read::ReadError::Io(e)) => return Err(format!("{}: {}", path.display(), e.kind())),
        Err(e) => return Err(e.about(&path.display().to_string())),
    };
    let stored: Stored =
        serde_json::from_str(&text).map_err(|_| format!("{} is not a palaver token file", path.display()))?;
    Ok(Some(stored).filter(|s| s.server_url == url))
}

/// Writes the tokens of server `name`: a 0600 temporary file beside it, renamed over it.
///
/// # Errors
/// When the directory or the file cannot be written.
pub fn save(data_dir: &Path, name: &str, stored: &Stored) -> Result<(), String> {
    let path = file(data_dir, name);
    let dir = dir(data_dir);
    let fail = |e: std::io::Error| format!("cannot write {}: {}", path.display(), e.kind());
    create_private_dir(&dir).map_err(fail)?;
    let tmp =
        dir.join(format!(".{}.{}.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("t"), std::process::id()));
    let body = serde_json::to_vec_pretty(stored).map_err(|e| format!("cannot encode the tokens: {e}"))?;
    let written = (|| {
        let mut f = private_file(&tmp)?;
        f.write_all(&body)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(fail)
}

/// Deletes the tokens of server `name`; `true` when there were some.
///
/// # Errors
/// When the file exists but cannot be removed.
pub fn delete(data_dir: &Path, name: &str) -> Result<bool, String> {
    let path = file(data_dir, name);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot remove {}: {}", path.display(), e.kind())),
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Stored {
        Stored {
            server_url: "http://127.0.0.1:9/mcp".into(),
            client_id: "c1".into(),
            access_token: "at-secret-0123".into(),
            refresh_token: Some("rt-secret-4567".into()),
            expires_at: Some(now() + 100),
            ..Stored::default()
        }
    }

    #[test]
    fn tokens_round_trip_in_a_private_file_for_their_url_only() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(load(home.path(), "a", "http://127.0.0.1:9/mcp").unwrap(), None);
        save(home.path(), "a", &sample()).unwrap();
        save(home.path(), "a", &sample()).unwrap();
        assert_eq!(load(home.path(), "a", "http://127.0.0.1:9/mcp").unwrap(), Some(sample()));
        // Another URL under the same name does not get these tokens.
        assert_eq!(load(home.path(), "a", "http://elsewhere/mcp").unwrap(), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(file(home.path(), "a")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(dir(home.path())).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        // No temporary file is left beside it.
        assert_eq!(std::fs::read_dir(dir(home.path())).unwrap().count(), 1);
        assert!(delete(home.path(), "a").unwrap());
        assert!(!delete(home.path(), "a").unwrap());
    }

    #[test]
    fn names_stay_in_the_directory_and_debug_hides_secrets() {
        let f = file(Path::new("/d"), "../x y");
        assert_eq!(f, Path::new("/d/mcp-oauth/%2E%2E%2Fx%20y.json"));
        let shown = format!("{:?}", sample());
        assert!(!shown.contains("secret"), "{shown}");
        assert!(sample().secrets().contains(&"rt-secret-4567".to_owned()));
        assert!(!sample().is_expiring(30));
        assert!(sample().is_expiring(200));
        assert!(!Stored { expires_at: None, ..sample() }.is_expiring(1000));
        // A short-lived token is refreshed in the last quarter of its life, not always.
        let short = Stored { obtained_at: Some(now()), expires_at: Some(now() + 8), ..sample() };
        assert!(!short.is_expiring(30));
        assert!(Stored { obtained_at: Some(now() - 7), expires_at: Some(now() + 1), ..sample() }.is_expiring(30));
    }
}
