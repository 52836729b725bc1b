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

/// Resolves the target.
///
/// # Errors
/// An unknown profile, or a key command that fails.
pub async fn resolve(g: &Global, cfg: &Config) -> Result<Target, UsageError> {
    let key_env = g.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into());
    let env_key = std::env::var(&key_env).ok().filter(|k| !k.is_empty());
    let profile_name = g.provider.clone().or_else(|| cfg.default_provider.clone());
    // A `default_provider` that names nothing is an error below, like `--provider nope`: it once
    // fell back to the demo silently.
    let use_demo = g.demo
        || (g.base_url.is_none()
            && profile_name.is_none()
            && cfg.providers.is_empty()
            && env_key.is_none()
            && std::env::var("OPENAI_BASE_URL").map_or(true, |u| u.is_empty()));
    let fallback = (use_demo && !g.demo).then(|| fallback_reason(&key_env, cfg));
    let (name, profile, base_url, key, demo) = if use_demo {
        let server =
            demo::spawn_local().await.map_err(|e| UsageError(format!("cannot start the demo provider: {e}")))?;
        let url = server.base_url.clone();
        ("demo".to_owned(), ProviderProfile::default(), url, Secret::default(), Some(std::sync::Arc::new(server)))
    } else if let Some(url) = &g.base_url {
        let profile = profile_name.as_ref().and_then(|n| cfg.providers.get(n)).cloned().unwrap_or_default();
        if let Some(var) = &g.api_key_env {
            key_must_be_set(var, "--api-key-env")?;
        }
        let cmd = if g.api_key_env.is_some() { None } else { profile.api_key_cmd.as_deref() };
        let key = resolve_key(&key_env, cmd, profile.key_cmd_timeout(), true).map_err(UsageError)?;
        (profile_name.clone().unwrap_or_else(|| host_of(url)), profile, url.clone(), key, None)
    } else if let Some(name) = profile_name {
        let profile = cfg.providers.get(&name).cloned().ok_or_else(|| {
            let from = if g.provider.is_some() { "--provider" } else { "default_provider in config.toml" };
            UsageError(format!(
                "{from} names `{name}`, but there is no [providers.{name}] in config.toml (known: {}){}",
                known(cfg),
                crate::config::check::suggest(&name, cfg.providers.keys().map(String::as_str))
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default()
            ))
        })?;
        if profile.api_key_cmd.is_none() {
            match (&g.api_key_env, &profile.api_key_env) {
                (Some(var), _) => key_must_be_set(var, "--api-key-env")?,
                (None, Some(var)) => key_must_be_set(var, &format!("[providers.{name}] api_key_env"))?,
                (None, None) => {}
            }
        }
        let var = g.api_key_env.clone().or_else(|| profile.api_key_env.clone()).unwrap_or(key_env);
        let key =
            resolve_key(&var, profile.api_key_cmd.as_deref(), profile.key_cmd_timeout(), true).map_err(UsageError)?;
        let url = profile
            .base_url
            .clone()
            .ok_or_else(|| UsageError(format!("provider `{name}` has no base_url in config.toml")))?;
        (name, profile, url, key, None)
    } else {
        let url =
            std::env::var("OPENAI_BASE_URL").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| DEFAULT_OPENAI.into());
        let key = Secret::new(env_key.unwrap_or_default());
        ("openai".to_owned(), ProviderProfile::default(), url, key, None)
    };
    let mut endpoint = profile.endpoint(&base_url, key);
    endpoint.key_source = key_source(g, &profile, demo.is_some());
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
    })
}

/// Where `resolve` took the key from, as its branches do, for the hint a 401 gets.
fn key_source(g: &Global, profile: &ProviderProfile, demo: bool) -> KeySource {
    if demo {
        return KeySource::Unknown;
    }
    // With --base-url, --api-key-env wins over the profile's command; with a profile, the command wins.
    let by_url = g.base_url.is_some();
    if profile.api_key_cmd.is_some() && !(by_url && g.api_key_env.is_some()) {
        return KeySource::Command;
    }
    let profile_var = if by_url { None } else { profile.api_key_env.clone() };
    KeySource::Env(g.api_key_env.clone().or(profile_var).unwrap_or_else(|| "OPENAI_API_KEY".to_owned()))
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

/// Targets for compare columns. A model written `provider/model` whose prefix names a configured
/// provider (or `demo`) goes to that provider; any other model goes to the default target.
///
/// # Errors
/// As `resolve`.
pub async fn resolve_columns(g: &Global, cfg: &Config, models: &[String]) -> Result<Vec<Target>, UsageError> {
    let base = resolve(g, cfg).await?;
    let mut demo: Option<Target> = (base.provider == "demo").then(|| base.clone());
    let mut out = Vec::new();
    for spec in models {
        let split = spec.split_once('/').filter(|(p, _)| *p == "demo" || cfg.providers.contains_key(*p));
        let mut t = match split {
            Some(("demo", _)) => {
                if demo.is_none() {
                    let mut flags = g.clone();
                    flags.demo = true;
                    demo = Some(resolve(&flags, cfg).await?);
                }
                demo.clone().ok_or_else(|| UsageError("the demo provider did not start".into()))?
            }
            Some((provider, _)) => {
                let mut flags = g.clone();
                flags.provider = Some(provider.to_owned());
                flags.base_url = None;
                flags.demo = false;
                resolve(&flags, cfg).await?
            }
            None => base.clone(),
        };
        t.model = split.map_or_else(|| spec.clone(), |(_, m)| m.to_owned());
        out.push(t);
    }
    Ok(out)
}

fn known(cfg: &Config) -> String {
    if cfg.providers.is_empty() {
        return "none".into();
    }
    cfg.providers.keys().cloned().collect::<Vec<_>>().join(", ")
}

fn host_of(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.split(['/', ':']).next().unwrap_or("custom").to_owned()
}
