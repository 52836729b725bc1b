//! Provider presets: the built-in profiles of `assets/providers.toml` (data, not code).
//! `--provider NAME` uses one when config.toml has no profile of that name; `palaver config
//! init --provider NAME` writes one out; `palaver providers` lists them.

use super::ProviderProfile;
use serde::Deserialize;
use std::sync::OnceLock;

/// The presets as built into the binary.
pub const BUILT_IN: &str = include_str!("../../assets/providers.toml");

/// One preset: a profile plus what palaver says about it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Preset {
    #[serde(skip)]
    pub name: String,
    /// One line for `palaver providers`.
    pub about: String,
    /// A quirk or a hint.
    #[serde(default)]
    pub note: Option<String>,
    /// The base URL holds a part only the user knows (their resource or workspace).
    #[serde(default)]
    pub placeholder: bool,
    #[serde(flatten)]
    pub profile: ProviderProfile,
}

/// Every preset, in the file's order.
pub fn all() -> &'static [Preset] {
    static ALL: OnceLock<Vec<Preset>> = OnceLock::new();
    ALL.get_or_init(|| parse(BUILT_IN).unwrap_or_default())
}

/// The preset called `name`.
#[must_use]
pub fn get(name: &str) -> Option<&'static Preset> {
    all().iter().find(|p| p.name == name)
}

/// Parses a presets file, keeping the order of its tables.
///
/// # Errors
/// When the TOML does not read or a table is not a profile.
pub fn parse(text: &str) -> Result<Vec<Preset>, String> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_owned())?;
    let order = table_order(text);
    let mut out = Vec::new();
    for name in order {
        let Some(v) = doc.get(&name) else { continue };
        let mut p: Preset = v.clone().try_into().map_err(|e: toml::de::Error| format!("[{name}]: {e}"))?;
        p.name.clone_from(&name);
        out.push(p);
    }
    Ok(out)
}

/// The names of the top-level tables in the order the file writes them (a TOML table is a
/// map; the order is the file's, which `palaver providers` keeps).
fn table_order(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix('[')?.strip_suffix(']').map(str::to_owned))
        .filter(|n| !n.contains('.') && !n.starts_with('['))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_the_issue_names_is_there_and_complete() {
        let all = parse(BUILT_IN).unwrap();
        for name in [
            "openai",
            "azure",
            "openrouter",
            "groq",
            "together",
            "fireworks",
            "deepseek",
            "mistral",
            "xai",
            "gemini",
            "anthropic",
            "databricks",
            "ollama",
            "lmstudio",
            "vllm",
            "llamacpp",
        ] {
            let p = all.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("{name}"));
            let url = p.profile.base_url.as_deref().unwrap();
            assert!(url.starts_with("http"), "{name}: {url}");
            assert_eq!(url.contains('<'), p.placeholder, "{name}");
            assert!(p.profile.api_key_env.is_some(), "{name}");
            assert!(!p.about.is_empty());
        }
        assert_eq!(all[0].name, "openai");
        let azure = get("azure").unwrap();
        assert_eq!(azure.profile.auth.as_deref(), Some("api-key"));
        let or = get("openrouter").unwrap();
        assert_eq!(or.profile.headers.get("X-Title").map(String::as_str), Some("palaver"));
        assert!(get("ollama").unwrap().profile.key_optional);
        assert!(!get("groq").unwrap().profile.key_optional);
        assert_eq!(get("mistral").unwrap().profile.include_usage, Some(false));
        assert!(get("nope").is_none());
        // The providers with a batch API, at half price; the rest have none.
        for name in ["openai", "azure", "groq", "together", "mistral"] {
            assert_eq!(get(name).unwrap().profile.batch_terms().map(|t| t.discount), Some(0.5), "{name}");
        }
        assert_eq!(get("openrouter").unwrap().profile.batch_terms(), None);
    }

    /// Every preset's default model has the catalogue's window and price, so a first run on any
    /// of them gets a meter and a cost (groq's and xai's once named models the catalogue had
    /// dropped). Local servers' presets name no model (their window comes from the server), nor
    /// does Azure's (a deployment's name is the user's).
    #[test]
    fn every_presets_default_model_is_in_the_catalogue() {
        let cat = crate::config::catalogue::built_in();
        for p in all() {
            let Some(model) = p.profile.default_model.as_deref() else {
                assert!(
                    p.profile.key_optional || p.name == "azure",
                    "{}: a hosted preset names a default model",
                    p.name
                );
                continue;
            };
            let mut cfg = crate::config::Config::default();
            assert!(cfg.adopt_preset(&p.name));
            let f = cfg.model_facts_in(model, &cat).unwrap_or_else(|| panic!("{}: {model} is not catalogued", p.name));
            assert!(f.context_window.is_some_and(|w| w > 0), "{}: {model} has no window", p.name);
            let price = f.price.unwrap_or_else(|| panic!("{}: {model} has no price", p.name));
            assert!(price.input.is_some() && price.output.is_some(), "{}: {model}", p.name);
        }
    }
}
