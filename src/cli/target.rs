//! Resolves what to talk to from the flags, the config and the environment: a provider
//! profile, `--base-url`, `OPENAI_API_KEY`/`OPENAI_BASE_URL`, or the embedded demo provider.

use super::args::{ApiArg, Global};
use crate::api::Api;
use crate::api::client::Secret;
use crate::api::endpoint::KeySource;
use crate::config::provider::ToolsSetting;
use crate::config::{Config, ProviderProfile, resolve_key};
use crate::demo;
pub use crate::engine::target::Target;
use std::time::Duration;

/// A usage or configuration problem (exit status 2).
#[derive(Debug)]
pub struct UsageError(pub String);

const DEFAULT_OPENAI: &str = "https://api.openai.com/v1";

/// Where a run's requests go, decided before any key is looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The embedded demo provider; `fallback` says why when nobody asked for it.
    Demo { fallback: Option<String> },
    /// A base URL given outright (`--base-url`, or the one a continued conversation was at),
    /// with the profile whose settings go with it, and the provider name to show (else its host).
    Url { url: String, profile: Option<String>, name: Option<String> },
    /// A provider profile as configured; `from` says what chose it (for messages).
    Profile { name: String, from: String },
    /// No provider configured: `OPENAI_BASE_URL` (else api.openai.com) with the key variable.
    Env,
    /// No provider configured and no OpenAI key, but one preset's key variable `var` is set:
    /// that built-in preset (`GROQ_API_KEY` → groq).
    Found { name: String, var: String },
}

/// The presets whose key variable is set (`GROQ_API_KEY`), as (preset, variable), in the presets'
/// order: those a run with no provider configured can go to. A preset whose URL needs the user's
/// own part (Azure's resource) is not one: its key alone says nowhere to send it.
#[must_use]
pub fn keys_found() -> Vec<(String, String)> {
    crate::config::presets::all()
        .iter()
        .filter(|p| !p.placeholder)
        .filter_map(|p| Some((p.name.clone(), p.profile.api_key_env.clone()?)))
        .filter(|(_, var)| var != "OPENAI_API_KEY" && std::env::var(var).is_ok_and(|v| !v.trim().is_empty()))
        .collect()
}

/// The usage error of a run that found several preset keys and was told none to use.
#[must_use]
pub fn several_keys_message(found: &[(String, String)]) -> String {
    let list: Vec<String> = found.iter().map(|(p, v)| format!("{v} ({p})")).collect();
    format!(
        "no provider is configured and {} provider keys are set: {}; pass --provider NAME to pick one (as in --provider {}), or write a profile with `palaver config init --provider NAME`",
        found.len(),
        list.join(", "),
        found.first().map_or("NAME", |(p, _)| p.as_str())
    )
}

/// The presets the chat screen offers in its picker: several keys found and nothing else to go
/// by (no flag, no provider configured, no conversation to continue). Each is adopted into
/// `cfg`, so choosing one works as `--provider NAME`.
pub fn offered_on_screen(g: &Global, cfg: &mut Config) -> Vec<(String, String)> {
    if g.continue_last || g.resume.is_some() {
        return Vec::new();
    }
    let found = keys_found();
    let several = matches!(choose(g, cfg), Err(UsageError(m)) if m == several_keys_message(&found));
    if !several {
        return Vec::new();
    }
    for (name, _) in &found {
        cfg.adopt_preset(name);
    }
    found
}

/// The (preset, variable) of a run whose target `t` was found by its key (`Source::Found`).
#[must_use]
pub fn found_for(g: &Global, cfg: &Config, t: &Target) -> Option<(String, String)> {
    match choose(g, cfg) {
        Ok(Source::Found { name, var }) if t.provider == name && t.continued.is_none() => Some((name, var)),
        _ => None,
    }
}

/// The stderr note of a run whose target `t` was found by its key, if it was.
#[must_use]
pub fn found_note_for(g: &Global, cfg: &Config, t: &Target) -> Option<String> {
    found_for(g, cfg, t).map(|(name, var)| found_note(&name, &var))
}

/// The one line a run that found its provider by its key says (stderr headless, a notice on
/// the chat screen).
#[must_use]
pub fn found_note(name: &str, var: &str) -> String {
    format!(
        "palaver: using the built-in `{name}` preset: {var} is set (no provider is configured; --provider NAME picks another)"
    )
}

/// Resolves the target.
///
/// # Errors
/// An unknown profile, several providers and none chosen, or a key command that fails.
pub async fn resolve(g: &Global, cfg: &Config) -> Result<Target, UsageError> {
    let source = choose(g, cfg)?;
    build(g, cfg, source).await
}

/// Which source the flags, the config and the environment name.
///
/// # Errors
/// Several providers configured and none chosen (no `--provider`, no `default_provider`).
pub fn choose(g: &Global, cfg: &Config) -> Result<Source, UsageError> {
    if g.demo {
        return Ok(Source::Demo { fallback: None });
    }
    let choice = cfg.provider_choice();
    let named = g
        .provider
        .clone()
        .map(|n| (n, "--provider".to_owned()))
        .or_else(|| choice.name().map(|n| (n.to_owned(), choice.origin().to_owned())));
    if let Some(url) = &g.base_url {
        return Ok(Source::Url { url: url.clone(), profile: named.map(|(n, _)| n), name: None });
    }
    if let Some((name, from)) = named {
        return Ok(Source::Profile { name, from });
    }
    if let crate::config::ProviderChoice::Several(names) = &choice {
        return Err(UsageError(crate::config::ProviderChoice::several_message(names)));
    }
    let key_env = g.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into());
    let env_key = std::env::var(&key_env).is_ok_and(|k| !k.is_empty());
    let env_url = std::env::var("OPENAI_BASE_URL").is_ok_and(|u| !u.is_empty());
    if env_key || env_url {
        return Ok(Source::Env);
    }
    // A key flag names the variable: the presets' own are not looked for then.
    if g.api_key_env.is_none() {
        match keys_found().as_slice() {
            [] => {}
            [(name, var)] => return Ok(Source::Found { name: name.clone(), var: var.clone() }),
            several => return Err(UsageError(several_keys_message(several))),
        }
    }
    Ok(Source::Demo { fallback: Some(fallback_reason(&key_env, cfg)) })
}

/// The target for `source`, with its key resolved and the flags' settings applied.
///
/// # Errors
/// An unknown profile, an unset key variable named explicitly, or a key command that fails.
pub async fn build(g: &Global, cfg: &Config, source: Source) -> Result<Target, UsageError> {
    let key_env = g.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into());
    // Where the key comes from is decided in each arm, beside the lookup it describes (a 401's hint names it).
    let (name, profile, base_url, key, demo, fallback, key_source) = match source {
        Source::Demo { fallback } => {
            let server =
                demo::spawn_local().await.map_err(|e| UsageError(format!("cannot start the demo provider: {e}")))?;
            let url = server.base_url.clone();
            let server = Some(std::sync::Arc::new(server));
            ("demo".to_owned(), ProviderProfile::demo(), url, Secret::default(), server, fallback, KeySource::Unknown)
        }
        Source::Url { url, profile: profile_name, name } => {
            let profile = profile_name.as_ref().and_then(|n| cfg.providers.get(n)).cloned().unwrap_or_default();
            if let Some(var) = &g.api_key_env {
                key_must_be_set(var, "--api-key-env")?;
            }
            let cmd = if g.api_key_env.is_some() { None } else { profile.api_key_cmd.as_deref() };
            let var = g.api_key_env.clone().or_else(|| profile.api_key_env.clone()).unwrap_or(key_env);
            let key = resolve_key(&var, cmd, profile.key_cmd_timeout(), true).map_err(UsageError)?;
            let source = cmd.map_or(KeySource::Env(var), |c| KeySource::Command(c.to_owned()));
            let name = name.or(profile_name).unwrap_or_else(|| host_of(&url));
            (name, profile, url, key, None, None, source)
        }
        Source::Profile { name, from } => {
            let (profile, key) = profile_and_key(g, cfg, &name, &from, &key_env)?;
            let url = profile
                .base_url
                .clone()
                .ok_or_else(|| UsageError(format!("provider `{name}` has no base_url in config.toml")))?;
            // With a profile its command wins over any variable.
            let source = match &profile.api_key_cmd {
                Some(cmd) => KeySource::Command(cmd.clone()),
                None => {
                    KeySource::Env(g.api_key_env.clone().or_else(|| profile.api_key_env.clone()).unwrap_or(key_env))
                }
            };
            (name, profile, url, key, None, None, source)
        }
        Source::Found { name, var } => {
            let profile = crate::config::presets::get(&name).map(|p| p.profile.clone()).unwrap_or_default();
            let url = profile.base_url.clone().unwrap_or_else(|| DEFAULT_OPENAI.into());
            let key = Secret::new(std::env::var(&var).unwrap_or_default());
            (name, profile, url, key, None, None, KeySource::Env(var))
        }
        Source::Env => {
            let url = std::env::var("OPENAI_BASE_URL")
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| DEFAULT_OPENAI.into());
            let key = Secret::new(std::env::var(&key_env).unwrap_or_default());
            ("openai".to_owned(), ProviderProfile::default(), url, key, None, None, KeySource::Env(key_env))
        }
    };
    let mut endpoint = profile.endpoint(&base_url, key);
    endpoint.key_source = key_source;
    let secs = |v: Option<f64>, d: Duration| v.map_or(d, |s| Duration::from_secs_f64(s.max(0.001)));
    endpoint.timeouts.connect = secs(g.connect_timeout, endpoint.timeouts.connect);
    endpoint.timeouts.first_byte = secs(g.first_byte_timeout, endpoint.timeouts.first_byte);
    endpoint.timeouts.idle = secs(g.idle_timeout, endpoint.timeouts.idle);
    let api = match g.api {
        Some(ApiArg::Chat) => Api::Chat,
        Some(ApiArg::Responses) => Api::Responses,
        None => profile.api(),
    };
    let model = g
        .model
        .first()
        .cloned()
        .or_else(|| profile.default_model.clone())
        .or_else(|| profile.models.first().cloned())
        .unwrap_or_else(|| if demo.is_some() { "demo".into() } else { "gpt-4o-mini".into() });
    let request_extra =
        profile.request.iter().filter_map(|(k, v)| serde_json::to_value(v).ok().map(|v| (k.clone(), v))).collect();
    let request_bytes = endpoint.limits.request_bytes;
    Ok(Target {
        provider: name,
        endpoint,
        api,
        model,
        include_usage: profile.include_usage.unwrap_or(true),
        chain_responses: profile.previous_response_id.unwrap_or(false),
        request_extra,
        tools: if demo.is_some() { Some(ToolsSetting::Auto) } else { profile.tools },
        attachments: crate::config::attachments::AttachmentPolicy {
            request_bytes: Some(request_bytes),
            ..profile.attachments
        },
        demo,
        fallback,
        continued: None,
        sandbox: crate::tools::sandbox::Policy::configured(profile.sandbox, profile.sandbox_network),
        json_object_only: profile.structured_outputs == Some(crate::config::provider::StructuredOutputs::JsonObject),
        batch: profile.batch_terms(),
    })
}

/// Profile `name` (chosen by `from`) and its key.
fn profile_and_key(
    g: &Global,
    cfg: &Config,
    name: &str,
    from: &str,
    key_env: &str,
) -> Result<(ProviderProfile, Secret), UsageError> {
    let profile = cfg.providers.get(name).cloned().ok_or_else(|| {
        UsageError(format!(
            "{from} names `{name}`, but there is no [providers.{name}] in config.toml (known: {}){}",
            known(cfg),
            crate::config::check::suggest(name, cfg.providers.keys().map(String::as_str))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default()
        ))
    })?;
    // A preset's URL with the user's part still to fill in (Azure's resource), said before
    // anything about keys.
    if let Some(url) = profile.base_url.as_deref().filter(|u| u.contains('<')) {
        return Err(UsageError(format!(
            "provider `{name}`'s base_url {url} needs your own in place of <…>: pass --base-url, \
             or write a profile with `palaver config init --provider {name}`"
        )));
    }
    if profile.api_key_cmd.is_none() {
        match (&g.api_key_env, &profile.api_key_env) {
            (Some(var), _) => key_must_be_set(var, "--api-key-env")?,
            (None, Some(_)) if profile.key_optional => {}
            (None, Some(var)) => {
                // A preset taken with no profile of that name: the user never wrote that table.
                let preset = crate::config::presets::get(name).is_some_and(|p| p.profile == profile);
                let named_by = if preset {
                    format!("the built-in `{name}` preset (palaver providers)")
                } else {
                    format!("[providers.{name}] api_key_env")
                };
                key_must_be_set(var, &named_by)?;
            }
            (None, None) => {}
        }
    }
    let var = g.api_key_env.clone().or_else(|| profile.api_key_env.clone()).unwrap_or_else(|| key_env.to_owned());
    let key = resolve_key(&var, profile.api_key_cmd.as_deref(), profile.key_cmd_timeout(), true).map_err(UsageError)?;
    Ok((profile, key))
}

/// A key variable named explicitly (a flag or a profile's `api_key_env`) must be set: finding
/// out from a 401 after the request went out names nothing.
fn key_must_be_set(var: &str, named_by: &str) -> Result<(), UsageError> {
    if std::env::var(var).is_ok_and(|v| !v.is_empty()) {
        return Ok(());
    }
    Err(UsageError(format!(
        "{named_by} names the environment variable {var}, which is not set; export {var}=… before running palaver{}",
        if named_by.starts_with('[') { " (or remove api_key_env for a server that needs no key)" } else { "" }
    )))
}

/// What palaver looked for before falling back to the demo provider, in one line.
fn fallback_reason(key_env: &str, cfg: &Config) -> String {
    let file = crate::config::Paths::from_env().config_file();
    let config = match &cfg.loaded_from {
        Some(path) => format!("{} has no [providers]", path.display()),
        None => format!("there is no {}", file.display()),
    };
    format!("{key_env} is not set and {config}")
}

/// The one-line stderr note of a headless run that fell back to the demo provider.
#[must_use]
pub fn fallback_note(t: &Target) -> Option<String> {
    t.fallback.as_ref().map(|why| {
        format!(
            "palaver: answering with the built-in demo provider (scripted text, not a model): {why}; \
             set OPENAI_API_KEY (and OPENAI_BASE_URL), pass --base-url, or run `palaver config init` \
             (--demo asks for the demo without this note)"
        )
    })
}

/// Asks the target's server for the model's window when config.toml gives none, and keeps what
/// it says for this run (`Config::served`, between the config and the catalogue). Headless runs
/// it before the request, bounded by `LOOKUP_TIMEOUT`; a server that says nothing or fails
/// leaves the catalogue's window.
pub async fn learn_window(cfg: &mut Config, t: &Target) {
    if t.demo.is_some() || !cfg.asks_server_for_window(&t.model, &t.endpoint.base_url) {
        return;
    }
    let within = crate::api::window::LOOKUP_TIMEOUT;
    if let Some(w) = crate::api::window::served_window(&t.endpoint, &t.model, within).await {
        cfg.served.insert(t.model.clone(), w);
    }
}

/// Targets for compare columns. A model written `provider/model` whose prefix names a configured
/// provider (or `demo`) goes to that provider. A bare model goes to the provider whose `models`
/// list it: the default provider when it is one of them, else the only one; listed by several
/// (none of them the default) is a usage error naming them; listed by none, it goes to the
/// default target (a server may serve models no profile lists).
///
/// # Errors
/// As `resolve`, and a bare model that several providers list.
pub async fn resolve_columns(g: &Global, cfg: &Config, models: &[String]) -> Result<Vec<Target>, UsageError> {
    let mut made: Vec<(String, Target)> = Vec::new();
    let mut out = Vec::new();
    // Asked at most once per run, and only when a bare model is in no profile's `models`.
    let mut served: Option<Vec<(String, Vec<String>)>> = None;
    for spec in models {
        let (mut provider, model) = column_provider(g, cfg, spec)?;
        if provider.is_none() && asks_the_servers(g, cfg, spec) {
            if served.is_none() {
                served = Some(served_lists(g, cfg).await);
            }
            let serving: Vec<&str> = served
                .iter()
                .flatten()
                .filter(|(_, list)| list.iter().any(|m| m == spec))
                .map(|(n, _)| n.as_str())
                .collect();
            provider = pick_listing(cfg, spec, &serving)?;
        }
        let key = provider.clone().unwrap_or_default();
        let found = made.iter().find(|(k, _)| *k == key).map(|(_, t)| t.clone());
        let mut t = match found {
            Some(t) => t,
            None => {
                let mut flags = g.clone();
                match provider.as_deref() {
                    Some("demo") => flags.demo = true,
                    Some(p) => {
                        flags.provider = Some(p.to_owned());
                        flags.base_url = None;
                        flags.demo = false;
                    }
                    None => {}
                }
                let t = resolve(&flags, cfg).await?;
                if t.demo.is_some() && key != "demo" {
                    // One demo server for the default and `demo/…` columns alike.
                    made.push(("demo".to_owned(), t.clone()));
                }
                made.push((key, t.clone()));
                t
            }
        };
        t.model = model;
        if provider.is_none() && !targets_named(g) {
            if let Some(note) = likely_elsewhere(cfg, &t) {
                say!("{note}");
            }
        }
        out.push(t);
    }
    Ok(out)
}

/// Whether flags name the target, so every bare model goes there by the user's own word.
fn targets_named(g: &Global) -> bool {
    g.demo || g.provider.is_some() || g.base_url.is_some()
}

/// What to say of a bare compare model `t` that went to the default target when another
/// provider palaver knows (configured, or a preset) is where it was likely meant: the preset
/// whose default model it is, else the provider the catalogue files it under. `None` when
/// palaver knows of no other home for it, or it is already there.
fn likely_elsewhere(cfg: &Config, t: &Target) -> Option<String> {
    if t.demo.is_some() {
        return None;
    }
    let by_preset = crate::config::presets::all()
        .iter()
        .find(|p| p.profile.default_model.as_deref() == Some(t.model.as_str()))
        .map(|p| p.name.clone());
    let by_catalogue = || {
        let entry = crate::config::catalogue::global().lookup(&t.model)?;
        let (maker, _) = entry.key.split_once('/')?;
        let known = cfg.providers.contains_key(maker) || crate::config::presets::get(maker).is_some();
        known.then(|| maker.to_owned())
    };
    let home = by_preset.or_else(by_catalogue)?;
    // Already there, under its own name or another (a profile on the same server).
    let url = cfg
        .providers
        .get(&home)
        .map(|p| &p.base_url)
        .or_else(|| Some(&crate::config::presets::get(&home)?.profile.base_url));
    let same_server = url
        .and_then(Option::as_deref)
        .is_some_and(|u| u.trim_end_matches('/') == t.endpoint.base_url.trim_end_matches('/'));
    if home == t.provider || same_server {
        return None;
    }
    let how = if cfg.providers.contains_key(&home) {
        format!("name it {home}/{} to send it there", t.model)
    } else {
        format!(
            "to send it there, add [providers.{home}] to config.toml (`palaver providers` shows its settings) and \
             name it {home}/{}",
            t.model
        )
    };
    Some(format!("`{}` goes to {} (the default provider), though it is {home}'s model; {how}", t.model, t.provider))
}

/// Whether a bare column model is to be looked for in the providers' own model lists: no flag
/// names the target, several providers are configured, and no profile's `models` names it.
fn asks_the_servers(g: &Global, cfg: &Config, spec: &str) -> bool {
    !(g.demo || g.provider.is_some() || g.base_url.is_some())
        && cfg.providers.len() > 1
        && !spec.contains('/')
        && cfg.providers_listing(spec).is_empty()
}

/// Every configured provider's `GET /models` (concurrently, each within 10 s); a provider that
/// cannot answer lists nothing.
async fn served_lists(g: &Global, cfg: &Config) -> Vec<(String, Vec<String>)> {
    let asks = cfg.providers.keys().map(|name| async move {
        let mut flags = g.clone();
        flags.provider = Some(name.clone());
        let t = resolve(&flags, cfg).await.ok()?;
        let list = tokio::time::timeout(Duration::from_secs(10), crate::api::models::list(&t.endpoint)).await.ok()?;
        Some((name.clone(), list.ok()?))
    });
    futures_util::future::join_all(asks).await.into_iter().flatten().collect()
}

/// Of the providers that list `spec`: the default when it is one of them, else the only one;
/// several is a usage error naming them; none is the default target.
fn pick_listing(cfg: &Config, spec: &str, listing: &[&str]) -> Result<Option<String>, UsageError> {
    let default = cfg.provider_choice();
    match listing {
        [] => Ok(None),
        _ if default.name().is_some_and(|d| listing.contains(&d)) => Ok(None),
        [only] => Ok(Some((*only).to_owned())),
        several => Err(UsageError(format!(
            "model `{spec}` is listed by several providers ({}): name one, as in -m {}/{spec}",
            several.join(", "),
            several[0]
        ))),
    }
}

/// The provider a compare column goes to (`None`: the default target) and its model.
fn column_provider(g: &Global, cfg: &Config, spec: &str) -> Result<(Option<String>, String), UsageError> {
    if let Some((p, m)) = spec.split_once('/').filter(|(p, _)| *p == "demo" || cfg.providers.contains_key(*p)) {
        return Ok((Some(p.to_owned()), m.to_owned()));
    }
    // Flags that name the target send every bare model there.
    if g.demo || g.provider.is_some() || g.base_url.is_some() {
        return Ok((None, spec.to_owned()));
    }
    Ok((pick_listing(cfg, spec, &cfg.providers_listing(spec))?, spec.to_owned()))
}

fn known(cfg: &Config) -> String {
    if cfg.providers.is_empty() {
        return "none".into();
    }
    cfg.providers.keys().cloned().collect::<Vec<_>>().join(", ")
}

pub fn host_of(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.split(['/', ':']).next().unwrap_or("custom").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        Config::parse(text, std::path::Path::new("config.toml")).unwrap()
    }

    const TWO: &str = "[providers.a]\nbase_url = \"http://127.0.0.1:9501/v1\"\nmodels = [\"m-a\", \"shared\"]\n\
                       [providers.b]\nbase_url = \"http://127.0.0.1:9502/v1\"\nmodels = [\"m-b\", \"shared\"]\n";

    #[test]
    fn the_only_provider_is_the_default() {
        let c = cfg("[providers.local]\nbase_url = \"http://127.0.0.1:9500/v1\"\n");
        let s = choose(&Global::default(), &c).unwrap();
        assert_eq!(s, Source::Profile { name: "local".into(), from: "the only provider in config.toml".into() });
    }

    #[test]
    fn several_providers_and_no_default_is_a_usage_error_naming_them() {
        let e = choose(&Global::default(), &cfg(TWO)).err().unwrap();
        assert!(e.0.contains("2 providers (a, b)") && e.0.contains("--provider"), "{}", e.0);
        // Never the quiet fall back to api.openai.com: not even with a key in the environment.
        assert!(!e.0.contains("openai.com"));
        // A flag or default_provider chooses.
        let g = Global { provider: Some("b".into()), ..Global::default() };
        assert!(matches!(choose(&g, &cfg(TWO)), Ok(Source::Profile { name, .. }) if name == "b"));
        let with_default = format!("default_provider = \"a\"\n{TWO}");
        assert!(
            matches!(choose(&Global::default(), &cfg(&with_default)), Ok(Source::Profile { name, .. }) if name == "a")
        );
        // --base-url needs no choice.
        let g = Global { base_url: Some("http://127.0.0.1:1/v1".into()), ..Global::default() };
        assert!(matches!(choose(&g, &cfg(TWO)), Ok(Source::Url { profile: None, .. })));
    }

    #[tokio::test]
    async fn a_misspelt_default_provider_names_the_closest() {
        let c = cfg(&format!("default_provider = \"bb\"\n{TWO}"));
        let e = resolve(&Global::default(), &c).await.err().unwrap();
        assert!(
            e.0.contains("default_provider in config.toml names `bb`") && e.0.contains("did you mean `b`?"),
            "{}",
            e.0
        );
    }

    #[test]
    fn a_bare_compare_model_goes_to_the_provider_that_lists_it() {
        let c = cfg(TWO);
        let g = Global::default();
        assert_eq!(column_provider(&g, &c, "m-b").unwrap(), (Some("b".into()), "m-b".into()));
        assert_eq!(column_provider(&g, &c, "m-a").unwrap(), (Some("a".into()), "m-a".into()));
        // provider/model keeps working, and a model with a slash that names no provider is a model.
        assert_eq!(column_provider(&g, &c, "b/x").unwrap(), (Some("b".into()), "x".into()));
        assert_eq!(column_provider(&g, &c, "org/x").unwrap(), (None, "org/x".into()));
        // Listed by nobody: the default target.
        assert_eq!(column_provider(&g, &c, "other").unwrap(), (None, "other".into()));
        // Listed by several: name one.
        let e = column_provider(&g, &c, "shared").err().unwrap();
        assert!(e.0.contains("(a, b)") && e.0.contains("-m a/shared"), "{}", e.0);
        // …unless the default provider is one of them.
        let c = cfg(&format!("default_provider = \"b\"\n{TWO}"));
        assert_eq!(column_provider(&g, &c, "shared").unwrap(), (None, "shared".into()));
        // A flag that names the target sends bare models there.
        let g = Global { provider: Some("a".into()), ..Global::default() };
        assert_eq!(column_provider(&g, &c, "m-b").unwrap(), (None, "m-b".into()));
    }

    #[tokio::test]
    async fn compare_columns_resolve_to_their_providers() {
        let c = cfg(TWO);
        let models = vec!["m-a".to_owned(), "m-b".to_owned()];
        let t = resolve_columns(&Global::default(), &c, &models).await.unwrap();
        let got: Vec<(&str, &str, &str)> =
            t.iter().map(|t| (t.provider.as_str(), t.model.as_str(), t.endpoint.base_url.as_str())).collect();
        assert_eq!(got, [("a", "m-a", "http://127.0.0.1:9501/v1"), ("b", "m-b", "http://127.0.0.1:9502/v1")]);
    }

    #[test]
    fn a_bare_compare_model_that_is_another_providers_says_so() {
        let mut t = crate::engine::target::test_target(crate::api::Api::Chat, "mistral-small-latest");
        t.provider = "local".into();
        t.endpoint.base_url = "http://127.0.0.1:8080/v1".into();
        let c = cfg("[providers.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\n");
        let note = likely_elsewhere(&c, &t).unwrap_or_default();
        assert!(
            note.starts_with("`mistral-small-latest` goes to local (the default provider), though it is mistral's"),
            "{note}"
        );
        assert!(note.contains("add [providers.mistral] to config.toml"), "{note}");
        // Configured: named as a column's provider.
        let c = cfg(
            "[providers.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\n[providers.mistral]\nbase_url = \"https://api.mistral.ai/v1\"\n",
        );
        assert!(
            likely_elsewhere(&c, &t)
                .unwrap_or_default()
                .ends_with("name it mistral/mistral-small-latest to send it there")
        );
        // Where it belongs, or a model palaver knows no other home for: nothing to say.
        t.endpoint.base_url = "https://api.mistral.ai/v1".into();
        assert_eq!(likely_elsewhere(&c, &t), None);
        t.model = "my-own-finetune".into();
        assert_eq!(likely_elsewhere(&c, &t), None);
    }
}
