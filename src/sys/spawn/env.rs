//! The environment a child gets, built by policy rather than copied from palaver's own: a key
//! in palaver's environment is palaver's, and a command a model runs (or a helper it hands a
//! path to) has no use for it. Learned from Codex's `shell_environment_policy`, simplified:
//!
//! - `inherit = "core"` (the default): palaver's environment without every variable whose name
//!   looks secret (`*KEY*`, `*SECRET*`, `*TOKEN*`, `*PASSWORD*`, `*PASSWD*`, `*CREDENTIAL*`,
//!   case-insensitive), the key variables the config and the presets name, `AWS_*` and
//!   `SSH_AUTH_SOCK`;
//! - `inherit = "all"`: palaver's whole environment;
//! - `inherit = "none"`: nothing but what `include` and `set` add.
//!
//! Then `include` globs take variables back from palaver's environment (even secret-looking
//! ones: the user named them), `exclude` globs drop variables (over `include`), and `set` gives
//! values outright. Globs know `*` and `?` and compare without case, as Codex's do.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::sync::{Mutex, PoisonError};

/// Where a child's environment starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inherit {
    /// palaver's environment without the secret-looking variables.
    #[default]
    Core,
    /// palaver's whole environment, secrets included.
    All,
    /// Nothing.
    None,
}

impl Inherit {
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::All => "all",
            Self::None => "none",
        }
    }
}

/// `[tool_env]` in `config.toml`, or a `[[tools]]` entry's own `env` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct EnvPolicy {
    #[serde(default)]
    pub inherit: Inherit,
    /// Variables of palaver's environment passed on whatever `inherit` says.
    #[serde(default)]
    pub include: Vec<String>,
    /// Variables never passed on (they win over `include`).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Variables set outright.
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

/// Secret-bearing variables whose names do not say so.
const SECRET_GLOBS: [&str; 2] = ["AWS_*", "SSH_AUTH_SOCK"];
/// What an MCP server gets besides its table's `env`: enough to find programs, a home, a
/// language and a temporary directory.
const BASE: [&str; 12] =
    ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "TMPDIR", "TZ", "SYSTEMROOT"];

/// Key variables named by the configuration and the presets (`api_key_env`,
/// `bearer_token_env`), left out of every "core" environment.
static KEY_NAMES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Adds variable names to leave out of "core" environments (the config's key variables).
pub fn forget<I: IntoIterator<Item = S>, S: AsRef<str>>(names: I) {
    let mut known = KEY_NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    for name in names {
        let name = name.as_ref().trim();
        if !name.is_empty() && !known.iter().any(|k| k.eq_ignore_ascii_case(name)) {
            known.push(name.to_owned());
        }
    }
}

/// Whether a variable's name looks like it holds a secret (or the config names it a key).
#[must_use]
pub fn looks_secret(name: &str) -> bool {
    crate::sys::secrets::name_says_secret(name)
        || SECRET_GLOBS.iter().any(|g| glob(g, name))
        || KEY_NAMES.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|k| k.eq_ignore_ascii_case(name))
}

impl EnvPolicy {
    /// The environment built from `parent` (palaver's, as `std::env::vars_os` gives it).
    #[must_use]
    pub fn build(&self, parent: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
        let matches = |globs: &[String], name: &str| globs.iter().any(|g| glob(g, name));
        let mut out: Vec<(OsString, OsString)> = parent
            .into_iter()
            .filter(|(k, _)| {
                let name = k.to_string_lossy();
                let base = match self.inherit {
                    Inherit::All => true,
                    Inherit::Core => !looks_secret(&name),
                    Inherit::None => false,
                };
                (base || matches(&self.include, &name)) && !matches(&self.exclude, &name)
            })
            .collect();
        for (k, v) in &self.set {
            out.retain(|(name, _)| name.as_os_str() != OsStr::new(k));
            out.push((k.into(), v.into()));
        }
        out
    }

    /// Palaver's own environment under this policy.
    #[must_use]
    pub fn current(&self) -> Vec<(OsString, OsString)> {
        self.build(std::env::vars_os())
    }

    /// Palaver's whole environment, for the one child that must reach the user's credential
    /// store (`api_key_cmd`: `VAULT_TOKEN`, `OP_SERVICE_ACCOUNT_TOKEN`, a GPG or SSH agent).
    #[must_use]
    pub fn all() -> Self {
        Self { inherit: Inherit::All, ..Self::default() }
    }

    /// One line for the approval modal and `config check`.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut s = format!("env: {}", self.inherit.label());
        if self.inherit == Inherit::Core {
            s.push_str(" (no secret-looking variables)");
        }
        for (word, list) in [("include", &self.include), ("exclude", &self.exclude)] {
            if !list.is_empty() {
                s.push_str(&format!(", {word} {}", list.join(" ")));
            }
        }
        if !self.set.is_empty() {
            s.push_str(&format!(", set {}", self.set.keys().cloned().collect::<Vec<_>>().join(" ")));
        }
        s
    }
}

/// An MCP server's environment: the minimal [`BASE`] of `parent` plus exactly its table's `env`.
#[must_use]
pub fn server(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    table: &BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    let base = EnvPolicy {
        inherit: Inherit::None,
        include: BASE.iter().map(|s| (*s).to_owned()).collect(),
        set: table.clone(),
        ..EnvPolicy::default()
    };
    base.build(parent)
}

/// `*` any run of characters, `?` any one, all else itself without case.
#[must_use]
pub fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (
        pattern.chars().map(|c| c.to_ascii_uppercase()).collect(),
        name.chars().map(|c| c.to_ascii_uppercase()).collect(),
    );
    // The classic two-pointer match: on a mismatch, let the last `*` swallow one more character.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("OPENAI_API_KEY", "sk-1"),
            ("FOO_TOKEN", "t"),
            ("db_password", "p"),
            ("AWS_REGION", "eu"),
            ("SSH_AUTH_SOCK", "/s"),
            ("GITHUB_PAT_CREDENTIALS", "c"),
            ("MY_PROVIDER_VAR", "k"),
            ("LC_ALL", "C"),
            ("EDITOR", "vi"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn globs_match_without_case() {
        assert!(glob("AWS_*", "aws_secret") && glob("*", "") && glob("LC_*", "LC_ALL") && glob("a?c", "ABC"));
        assert!(!glob("AWS_*", "XAWS_") && !glob("a?c", "ac") && !glob("PATH", "PATHX"));
        assert!(glob("*_KEY*", "OPENAI_API_KEY") && glob("*a*b*", "xxaxxbxx") && !glob("*a*b", "xxaxxbxx"));
    }

    #[test]
    fn core_leaves_out_secret_looking_and_configured_names() {
        forget(["MY_PROVIDER_VAR"]);
        let env = names(&EnvPolicy::default().build(parent()));
        assert_eq!(env, ["PATH", "HOME", "LC_ALL", "EDITOR"]);
        let all = names(&EnvPolicy::all().build(parent()));
        assert_eq!(all.len(), parent().len());
    }

    #[test]
    fn include_exclude_and_set_change_the_base() {
        let p = EnvPolicy {
            inherit: Inherit::Core,
            include: vec!["foo_*".into(), "AWS_*".into()],
            exclude: vec!["AWS_*".into(), "EDITOR".into()],
            set: [("X".to_owned(), "1".to_owned()), ("HOME".to_owned(), "/other".to_owned())].into(),
        };
        let env = p.build(parent());
        assert_eq!(names(&env), ["PATH", "FOO_TOKEN", "LC_ALL", "HOME", "X"]);
        assert!(env.contains(&("HOME".into(), "/other".into())));
        let none = EnvPolicy { inherit: Inherit::None, include: vec!["PATH".into()], ..EnvPolicy::default() };
        assert_eq!(names(&none.build(parent())), ["PATH"]);
    }

    #[test]
    fn a_server_gets_the_base_and_its_table_only() {
        let table = [("API_TOKEN".to_owned(), "mine".to_owned())].into();
        let env = server(parent(), &table);
        assert_eq!(names(&env), ["PATH", "HOME", "LC_ALL", "API_TOKEN"]);
    }

    #[test]
    fn the_config_form_parses_and_refuses_strangers() {
        let p: EnvPolicy =
            toml::from_str("inherit = \"none\"\ninclude = [\"PATH\"]\nset = { A = \"b\" }").unwrap_or_default();
        assert_eq!((p.inherit, p.include.len(), p.set.len()), (Inherit::None, 1, 1));
        assert!(toml::from_str::<EnvPolicy>("inherit = \"some\"").is_err());
        assert!(p.describe().starts_with("env: none, include PATH, set A"));
    }
}
