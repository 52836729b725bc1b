//! Configuration: where palaver keeps its files (`PALAVER_HOME` or the platform directories),
//! `config.toml` with provider profiles, per-model facts, themes and keys. A missing file is
//! fine; a bad one is an error naming the line.

pub mod attachments;
pub mod catalogue;
pub mod catalogue_import;
pub mod catalogue_index;
pub mod check;
pub mod commands;
pub mod compare;
pub mod mcp_server;
pub mod notify;
pub mod paths;
pub mod presets;
pub mod provider;
pub mod remembered;
pub mod theme;

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

pub use paths::Paths;
pub use provider::{ProviderProfile, resolve_key};

/// Price per million tokens.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: Option<f64>,
    /// Prompt tokens read from the provider's cache (default: the input price).
    pub cached_input: Option<f64>,
    pub output: Option<f64>,
    /// Prompt tokens written to the provider's cache (default: the input price).
    pub cache_write: Option<f64>,
    /// Reasoning tokens, when they cost other than output tokens (default: the output price).
    pub reasoning: Option<f64>,
}

/// Facts about one model that providers do not tell: the user's `[models."…"]` entry, filled
/// in from the catalogue field by field (`Config::model_facts`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct ModelFacts {
    pub context_window: Option<u64>,
    /// The most tokens one reply may hold.
    pub max_output: Option<u64>,
    pub price: Option<Price>,
    /// Look this model up in the catalogue under another id (a deployment's own name).
    pub catalogue_model: Option<String>,
    /// What the model takes and can do (only the catalogue says).
    #[serde(skip)]
    pub abilities: catalogue::Abilities,
    /// The catalogue's `provider/id` when any field came from it.
    #[serde(skip)]
    pub catalogue_key: Option<String>,
    /// The price is the catalogue's (the user set none): costs from it are estimates.
    #[serde(skip)]
    pub price_estimated: bool,
    /// Where `context_window` came from.
    #[serde(skip)]
    pub window_from: Option<WindowFrom>,
}

/// Where a model's context window came from, in the order they win.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowFrom {
    /// The user's `[models."…"] context_window`.
    Config,
    /// The server said so, at this place (`llama.cpp /v1/models`).
    Server(&'static str),
    /// The model catalogue.
    Catalogue,
}

impl std::fmt::Display for WindowFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Config => f.write_str("config"),
            Self::Server(at) => write!(f, "server ({at})"),
            Self::Catalogue => f.write_str("catalogue"),
        }
    }
}

/// A user tool: JSON arguments on stdin, stdout is the result.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct UserTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub command: Vec<String>,
    #[serde(default)]
    pub parameters: Option<toml::Value>,
    /// never | ask | always
    #[serde(default)]
    pub approval: Option<String>,
    pub timeout_secs: Option<u64>,
    /// The OS sandbox this command runs in, over the provider's (`workspace-write` by default).
    #[serde(default)]
    pub sandbox: Option<provider::SandboxMode>,
    /// The environment this command gets, instead of `[tool_env]`.
    #[serde(default)]
    pub env: Option<crate::sys::spawn::EnvPolicy>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct McpServer {
    /// A stdio server: the program and its arguments (empty for a remote server).
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Bytes of one message from this server (a page of its tool list, one tool result);
    /// unset: `MCP_MESSAGE_BYTES` (16 MiB).
    #[serde(default)]
    pub max_message_bytes: Option<usize>,
    /// Tools this server may list; unset: `MCP_TOOLS` (1000).
    #[serde(default)]
    pub max_tools: Option<usize>,
    /// A remote server over streamable HTTP (`http://…/mcp`), instead of `command`.
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent with every request to a remote server.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The environment variable holding a bearer token for a remote server (never the token
    /// itself: a config file is shared and backed up).
    #[serde(default)]
    pub bearer_token_env: Option<String>,
    /// The server may ask to use the conversation's model (`sampling/createMessage`): only then
    /// is sampling offered to it, and each request still needs the user's approval (or `--yes`).
    #[serde(default)]
    pub allow_sampling: bool,
    /// Take the server's word that a tool it marks `readOnlyHint` has no side effects, and run
    /// it without asking under `--tools auto`. Off by default: a server's annotations are as
    /// untrusted as the server (the MCP specification says so), so every call is asked for.
    #[serde(default)]
    pub trust_read_only: bool,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct McpConfig {
    #[serde(default)]
    pub servers: BTreeMap<String, McpServer>,
}

/// The whole `config.toml`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Config {
    pub default_provider: Option<String>,
    pub theme: Option<String>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderProfile>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelFacts>,
    #[serde(default)]
    pub tools: Vec<UserTool>,
    /// The environment of every command a model runs (`run_command`, shell calls, user tools):
    /// by default palaver's without the secret-looking variables.
    #[serde(default)]
    pub tool_env: crate::sys::spawn::EnvPolicy,
    #[serde(default)]
    pub mcp: McpConfig,
    /// Key bindings: action name → key description ("ctrl+p").
    #[serde(default)]
    pub keys: BTreeMap<String, String>,
    /// Where the built-in file tools may act (default: the working directory).
    pub workspace: Option<std::path::PathBuf>,
    /// Widest that prose is wrapped on a wide terminal, in columns (default 100; 0 for no limit).
    pub prose_width: Option<u16>,
    /// Whether the chat screen captures the mouse (wheel, clicks); `false` leaves it to the
    /// terminal, so its own text selection works (default true; `/mouse` switches while it runs).
    pub mouse: Option<bool>,
    /// When the chat compacts by itself: a share of the context window (default 0.85), or
    /// `false` for never (see [`Config::auto_compact_at`]).
    pub auto_compact: Option<AutoCompact>,
    /// The summarisation prompt `/compact` and `--compact` send (default
    /// [`DEFAULT_COMPACT_PROMPT`]).
    pub compact_prompt: Option<String>,
    /// The summary's own output budget, in tokens (default: a quarter of the window, at most
    /// 1,024); the turn's `max_tokens` never applies to it.
    pub compact_max_tokens: Option<u64>,
    /// A file whose text replaces the built-in prompt of prompt-set `judge` checks
    /// (`assets/judges/rubric.md`; a check's own `prompt` wins).
    pub judge_prompt: Option<std::path::PathBuf>,
    /// Prompt sets' settings: the response cache's TTL and size.
    #[serde(default)]
    pub compare: compare::CompareConfig,
    /// The command `/paste-image` (Ctrl+V) reads a clipboard image from, its PNG on stdout
    /// (default: `wl-paste`, `xclip`, `pngpaste` or `osascript`, whichever the session has).
    pub clipboard_image_cmd: Option<Vec<String>>,
    /// Vim keys in the composer from the start (`/vim` switches while it runs).
    pub vim_mode: Option<bool>,
    /// How the chat screen notifies while its terminal is not focused (default `auto`).
    pub notify: Option<notify::NotifyMode>,
    /// The program (and its first arguments) `notify = "command"` runs; the text goes last.
    pub notify_command: Option<Vec<String>>,
    /// Whether a `config.toml` was actually read.
    #[serde(skip)]
    pub loaded_from: Option<std::path::PathBuf>,
    /// Windows the servers of this run stated, by model (`learn_window`): between the user's
    /// `context_window` and the catalogue's.
    #[serde(skip)]
    pub served: BTreeMap<String, crate::api::window::ServedWindow>,
    /// Keys the file has that palaver does not read, each with its line and the closest known
    /// key (`check::unknown_keys`); the CLI prints them, the chat screen shows them as notices.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// `auto_compact = 0.85` or `auto_compact = false` (`true` is the default share).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum AutoCompact {
    On(bool),
    At(f64),
}

/// The summarisation prompt, unless config.toml's `compact_prompt` replaces it (README).
pub const DEFAULT_COMPACT_PROMPT: &str = "Summarise the conversation so far so that it can continue from the \
summary alone: the user's goals and constraints, decisions made and why, facts, names, numbers, file paths and code \
that later turns rely on, what was tried and failed, and open questions or next steps. Write it as notes for \
yourself, without preamble, in the language of the conversation.";

/// The share of the window past which the chat compacts by itself, unless configured.
pub const AUTO_COMPACT_DEFAULT: f64 = 0.85;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: line {line}, column {column}: {message}")]
    Parse { path: String, line: usize, column: usize, message: String },
    #[error("{0}")]
    Invalid(String),
}

impl Config {
    /// Loads `config.toml` from `paths`; a missing file gives the defaults.
    ///
    /// # Errors
    /// When the file exists but cannot be read or parsed.
    pub fn load(paths: &Paths) -> Result<Self, ConfigError> {
        let file = paths.config_file();
        use crate::sys::read::{CONFIG_FILE, ReadError, file_string};
        let cfg = match file_string(&file, CONFIG_FILE) {
            Ok(text) => {
                let mut cfg = Self::parse(&text, &file)?;
                cfg.warnings = check::unknown_keys(&text).iter().map(|u| format!("{}: {u}", file.display())).collect();
                cfg.loaded_from = Some(file);
                cfg
            }
            Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Self::default(),
            Err(ReadError::Io(e)) => return Err(ConfigError::Read { path: file.display().to_string(), source: e }),
            Err(e) => {
                return Err(ConfigError::Read { path: file.display().to_string(), source: std::io::Error::other(e) });
            }
        };
        // No child palaver starts gets these, whatever their names look like.
        crate::sys::spawn::env::forget(cfg.key_names());
        Ok(cfg)
    }

    /// The variables holding keys that this config and the presets name (`api_key_env`,
    /// `bearer_token_env`).
    #[must_use]
    pub fn key_names(&self) -> Vec<String> {
        let profiles = self.providers.values().chain(presets::all().iter().map(|p| &p.profile));
        let mut names: Vec<String> = profiles.filter_map(|p| p.api_key_env.clone()).collect();
        names.extend(self.mcp.servers.values().filter_map(|s| s.bearer_token_env.clone()));
        names
    }

    /// Parses config text; errors name the line and column.
    ///
    /// # Errors
    /// When the TOML is invalid or a field has the wrong type.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        toml::from_str::<Self>(text).map_err(|e| {
            let (line, column) = e.span().map_or((0, 0), |span| line_col(text, span.start));
            ConfigError::Parse { path: path.display().to_string(), line, column, message: e.message().to_owned() }
        })
    }

    /// The share of the context window past which the chat compacts before sending, or `None`
    /// when `auto_compact = false`.
    #[must_use]
    pub fn auto_compact_at(&self) -> Option<f64> {
        match self.auto_compact {
            None | Some(AutoCompact::On(true)) => Some(AUTO_COMPACT_DEFAULT),
            Some(AutoCompact::On(false)) => None,
            Some(AutoCompact::At(v)) if v > 0.0 && v <= 1.0 => Some(v),
            // Out of range (`config check` says so): the default, rather than compacting always.
            Some(AutoCompact::At(_)) => Some(AUTO_COMPACT_DEFAULT),
        }
    }

    /// What is wrong with `auto_compact`: a share must be above 0 and at most 1.
    #[must_use]
    pub fn auto_compact_problem(&self) -> Option<String> {
        match self.auto_compact {
            Some(AutoCompact::At(v)) if !(v > 0.0 && v <= 1.0) => Some(format!(
                "auto_compact = {v}: give a share of the context window above 0 and at most 1 (0.85 is the \
                 default), or false to turn it off"
            )),
            _ => None,
        }
    }

    /// The summarisation prompt: `compact_prompt`, else the built-in one.
    #[must_use]
    pub fn compact_prompt(&self) -> &str {
        self.compact_prompt.as_deref().filter(|p| !p.trim().is_empty()).unwrap_or(DEFAULT_COMPACT_PROMPT)
    }

    /// What is known about `model`: the user's `[models."…"]` entry, each field it leaves
    /// unset filled from the catalogue (under the entry's or a listing profile's
    /// `catalogue_model` when one is set); the window the server stated (`served`) comes
    /// between the two. `None` when none of them knows the model.
    #[must_use]
    pub fn model_facts(&self, model: &str) -> Option<ModelFacts> {
        self.model_facts_in(model, catalogue::global())
    }

    /// `model_facts` against a given catalogue (tests, `palaver catalogue show`).
    #[must_use]
    pub fn model_facts_in(&self, model: &str, cat: &catalogue::Catalogue) -> Option<ModelFacts> {
        let user = self.models.get(model);
        let alias = user.and_then(|u| u.catalogue_model.as_deref()).or_else(|| {
            self.providers
                .values()
                .find(|p| p.models.iter().any(|m| m == model) || p.default_model.as_deref() == Some(model))
                .and_then(|p| p.catalogue_model.as_deref())
        });
        let entry = cat.lookup(alias.unwrap_or(model));
        let served = self.served.get(model);
        if user.is_none() && entry.is_none() && served.is_none() {
            return None;
        }
        let mut f = user.cloned().unwrap_or_default();
        f.window_from = f.context_window.map(|_| WindowFrom::Config);
        if let (None, Some(w)) = (f.context_window, served) {
            f.context_window = Some(w.tokens);
            f.window_from = Some(WindowFrom::Server(w.source));
        }
        if let Some(e) = entry {
            if let (None, Some(w)) = (f.context_window, e.context_window) {
                f.context_window = Some(w);
                f.window_from = Some(WindowFrom::Catalogue);
            }
            f.max_output = f.max_output.or(e.max_output);
            let p = &e.prices;
            if f.price.is_none() && (p.input.is_some() || p.output.is_some()) {
                f.price = Some(Price {
                    input: p.input,
                    cached_input: p.cache_read,
                    output: p.output,
                    cache_write: p.cache_write,
                    reasoning: p.reasoning,
                });
                f.price_estimated = true;
            }
            f.abilities = e.abilities;
            f.catalogue_key = Some(e.key.clone());
        }
        Some(f)
    }

    /// Whether config.toml gives `model`'s window (then no server is asked).
    #[must_use]
    pub fn window_configured(&self, model: &str) -> bool {
        self.models.get(model).is_some_and(|m| m.context_window.is_some())
    }

    /// Whether a run asks the server at `base_url` for `model`'s window before it counts on one:
    /// not when config.toml gives it, nor when the server already said; a hosted provider only
    /// when the catalogue does not know the model (its list and the catalogue agree, and every
    /// headless run would pay a round trip before its first token); a server the user runs
    /// (local or on a private network) always, since its window is whatever it was started with.
    #[must_use]
    pub fn asks_server_for_window(&self, model: &str, base_url: &str) -> bool {
        if self.window_configured(model) || self.served.contains_key(model) {
            return false;
        }
        crate::api::endpoint::is_local(base_url) || self.model_facts(model).and_then(|f| f.context_window).is_none()
    }

    /// Makes the built-in preset `name` a provider of this run when config.toml has no
    /// profile of that name (`--provider groq` with no config file); a profile always wins.
    /// Returns whether a preset was taken.
    pub fn adopt_preset(&mut self, name: &str) -> bool {
        if self.providers.contains_key(name) {
            return false;
        }
        let Some(p) = presets::get(name) else { return false };
        self.providers.insert(name.to_owned(), p.profile.clone());
        true
    }

    /// Which provider a run uses when no flag names one: `default_provider`, else the only
    /// provider configured. Several and no `default_provider` is not a choice palaver makes
    /// for the user (it once quietly went to api.openai.com).
    #[must_use]
    pub fn provider_choice(&self) -> ProviderChoice {
        if let Some(name) = &self.default_provider {
            return ProviderChoice::Default(name.clone());
        }
        let mut names = self.providers.keys();
        match (names.next(), names.next()) {
            (None, _) => ProviderChoice::None,
            (Some(only), None) => ProviderChoice::Only(only.clone()),
            _ => ProviderChoice::Several(self.providers.keys().cloned().collect()),
        }
    }

    /// The configured providers that list `model` (in `models` or as `default_model`), in
    /// name order.
    #[must_use]
    pub fn providers_listing(&self, model: &str) -> Vec<&str> {
        self.providers
            .iter()
            .filter(|(_, p)| p.models.iter().any(|m| m == model) || p.default_model.as_deref() == Some(model))
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

/// The provider a run goes to when no flag names one (see [`Config::provider_choice`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderChoice {
    /// `default_provider` names it (it may name no configured provider: an error later).
    Default(String),
    /// The one provider in `config.toml`.
    Only(String),
    /// Several providers and no `default_provider`: the user has to say which.
    Several(Vec<String>),
    /// No provider configured.
    None,
}

impl ProviderChoice {
    /// The chosen name, when there is one.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::Default(n) | Self::Only(n) => Some(n),
            Self::Several(_) | Self::None => None,
        }
    }

    /// Where the choice came from, for messages and `palaver config`.
    #[must_use]
    pub fn origin(&self) -> &'static str {
        match self {
            Self::Default(_) => "default_provider in config.toml",
            Self::Only(_) => "the only provider in config.toml",
            Self::Several(_) | Self::None => "",
        }
    }

    /// The message for several providers and no `default_provider` (a usage error).
    #[must_use]
    pub fn several_message(names: &[String]) -> String {
        format!(
            "config.toml has {} providers ({}) and no default_provider: pass --provider NAME, or set \
             default_provider = \"{}\" in config.toml",
            names.len(),
            names.join(", "),
            names.first().map_or("NAME", String::as_str)
        )
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(before.len(), |i| before.len() - i - 1) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_compact_takes_a_share_or_false() {
        let parse = |t: &str| Config::parse(t, Path::new("c.toml")).unwrap_or_default();
        assert_eq!(parse("").auto_compact_at(), Some(AUTO_COMPACT_DEFAULT));
        assert_eq!(parse("auto_compact = 0.5").auto_compact_at(), Some(0.5));
        assert_eq!(parse("auto_compact = false").auto_compact_at(), None);
        assert_eq!(parse("auto_compact = true").auto_compact_at(), Some(AUTO_COMPACT_DEFAULT));
        let wild = parse("auto_compact = 85");
        assert_eq!(wild.auto_compact_at(), Some(AUTO_COMPACT_DEFAULT));
        assert!(wild.auto_compact_problem().is_some_and(|p| p.contains("at most 1")));
        assert!(parse("auto_compact = 1").auto_compact_problem().is_none(), "an integer 1 is a share too");
        assert_eq!(parse("compact_prompt = \"Be brief.\"").compact_prompt(), "Be brief.");
        assert_eq!(parse("").compact_prompt(), DEFAULT_COMPACT_PROMPT);
    }

    #[test]
    fn bad_config_names_the_line() {
        let text = "default_provider = \"x\"\n[providers.x]\nbase_url = 3\n";
        let err = Config::parse(text, Path::new("config.toml")).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("line 3"), "{err}");
    }

    #[test]
    fn the_window_comes_from_the_config_then_the_server_then_the_catalogue() {
        use crate::api::window::ServedWindow;
        let cat = catalogue::built_in();
        let served = ServedWindow { tokens: 4096, source: "llama.cpp /v1/models" };
        let mut cfg = Config::parse("[models.\"mine\"]\ncontext_window = 1000\n", Path::new("c")).unwrap();
        for m in ["mine", "gpt-4o-mini", "smollm2"] {
            cfg.served.insert(m.to_owned(), served);
        }
        let f = cfg.model_facts_in("mine", &cat).unwrap();
        assert_eq!((f.context_window, f.window_from), (Some(1000), Some(WindowFrom::Config)));
        let f = cfg.model_facts_in("gpt-4o-mini", &cat).unwrap();
        assert_eq!((f.context_window, f.window_from), (Some(4096), Some(WindowFrom::Server("llama.cpp /v1/models"))));
        // The catalogue still prices it.
        assert!(f.price_estimated && f.price.is_some());
        // A model only the server knows.
        let f = cfg.model_facts_in("smollm2", &cat).unwrap();
        assert_eq!(f.window_from.map(|w| w.to_string()).as_deref(), Some("server (llama.cpp /v1/models)"));
        let f = Config::default().model_facts_in("gpt-4o-mini", &cat).unwrap();
        assert_eq!((f.context_window, f.window_from), (Some(128_000), Some(WindowFrom::Catalogue)));
        assert_eq!(Config::default().model_facts_in("smollm2", &cat), None);
    }

    #[test]
    fn a_local_server_is_asked_for_its_window_and_a_hosted_one_only_for_unknown_models() {
        let cfg = Config::parse("[models.\"mine\"]\ncontext_window = 1000\n", Path::new("c")).unwrap();
        let (local, hosted) = ("http://127.0.0.1:8080/v1", "https://api.openai.com/v1");
        assert!(cfg.asks_server_for_window("gpt-4o-mini", local), "a local server may serve it on any window");
        assert!(!cfg.asks_server_for_window("gpt-4o-mini", hosted), "the catalogue knows it: no round trip");
        assert!(cfg.asks_server_for_window("some-new-model", hosted));
        assert!(!cfg.asks_server_for_window("mine", local), "config.toml gives it");
    }

    #[test]
    fn the_users_entry_wins_field_by_field_over_the_catalogue() {
        let cat = catalogue::built_in();
        let text = "[models.\"gpt-4o-mini\"]\ncontext_window = 1000\n\
                    [models.\"priced\"]\nprice = { input = 1.0 }\ncatalogue_model = \"gpt-4o\"\n\
                    [providers.az]\nbase_url = \"https://x/v1\"\nmodels = [\"prod-chat\"]\ncatalogue_model = \"gpt-4o-mini\"\n";
        let cfg = Config::parse(text, Path::new("c")).unwrap();
        // The user's window, the catalogue's price and output limit (an estimate).
        let f = cfg.model_facts_in("gpt-4o-mini", &cat).unwrap();
        assert_eq!(f.context_window, Some(1000));
        assert_eq!(f.max_output, Some(16_384));
        assert_eq!(f.price.as_ref().and_then(|p| p.input), Some(0.15));
        assert!(f.price_estimated);
        // The user's price wins whole, and is no estimate; the rest from gpt-4o's entry.
        let f = cfg.model_facts_in("priced", &cat).unwrap();
        assert_eq!(f.price.as_ref().map(|p| (p.input, p.output)), Some((Some(1.0), None)));
        assert!(!f.price_estimated);
        assert_eq!(f.catalogue_key.as_deref(), Some("openai/gpt-4o"));
        // A deployment named in a profile with catalogue_model.
        let f = cfg.model_facts_in("prod-chat", &cat).unwrap();
        assert_eq!(f.catalogue_key.as_deref(), Some("openai/gpt-4o-mini"));
        assert_eq!(f.context_window, Some(128_000));
        assert_eq!(cfg.model_facts_in("nobody-knows", &cat), None);
    }

    #[test]
    fn a_preset_is_adopted_only_when_no_profile_has_its_name() {
        let mut cfg = Config::parse("[providers.groq]\nbase_url = \"http://mine/v1\"\n", Path::new("c")).unwrap();
        assert!(!cfg.adopt_preset("groq"));
        assert_eq!(cfg.providers["groq"].base_url.as_deref(), Some("http://mine/v1"));
        assert!(cfg.adopt_preset("openrouter"));
        assert_eq!(cfg.providers["openrouter"].api_key_env.as_deref(), Some("OPENROUTER_API_KEY"));
        assert!(!cfg.adopt_preset("no-such-preset"));
    }

    #[test]
    fn full_example_parses() {
        let text = r#"
default_provider = "openai"
theme = "dark"
[providers.openai]
base_url = "https://example.invalid/v1"
api_key_env = "OPENAI_API_KEY"
api = "chat"
models = ["gpt-4o-mini", "o4-mini"]
headers = { "x-extra" = "1" }
[providers.azure]
base_url = "https://x.openai.azure.com/openai/deployments/d"
auth = "api-key"
query = { "api-version" = "2024-10-21" }
include_usage = false
[models."gpt-4o-mini"]
context_window = 128000
price = { input = 0.15, cached_input = 0.075, output = 0.60 }
[[tools]]
name = "git_log"
description = "recent commits"
command = ["git", "log", "-n", "20"]
parameters = { type = "object", properties = {} }
approval = "never"
[mcp.servers.files]
command = ["mcp-server-filesystem", "."]
"#;
        let cfg = Config::parse(text, Path::new("c")).ok();
        let cfg = cfg.unwrap_or_default();
        assert_eq!(cfg.providers.len(), 2);
        assert_eq!(cfg.models["gpt-4o-mini"].context_window, Some(128_000));
        assert_eq!(cfg.tools[0].name, "git_log");
        assert_eq!(cfg.mcp.servers["files"].command[0], "mcp-server-filesystem");
    }
}
