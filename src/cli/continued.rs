//! `--continue` and `--resume ID`: a conversation goes on where it was — its provider, base URL,
//! model and API, as the store recorded them with its last answer — unless a flag overrides one.
//! Whatever is different (a flag, a provider gone from `config.toml`) is written down in the
//! target's `continued`, which stderr, the chat screen and the `--json` result line report.
//! Resolving a provider into an endpoint stays in `target.rs`.

use super::args::{ApiArg, Global};
use super::target::{self, Source, Target, UsageError};
use crate::config::{Config, Paths};
use crate::engine::target::{Change, Continued, StoredTarget, storable_url};
use crate::store::{StoreHandle, StoreOptions};

/// The target of a run, and the flags to run with: with `--continue` or `--resume` the flags
/// name the conversation found by its full id, so the run appends to that very conversation.
///
/// # Errors
/// As [`target::resolve`], and an unknown or ambiguous `--resume` id.
pub async fn resolve(g: &Global, cfg: &Config, paths: &Paths) -> Result<(Target, Global), UsageError> {
    if !(g.continue_last || g.resume.is_some()) {
        return Ok((target::resolve(g, cfg).await?, g.clone()));
    }
    let Some((id, stored)) = find(g, paths)? else {
        // Nothing to continue (or no store to read): the run says so itself.
        return Ok((target::resolve(g, cfg).await?, g.clone()));
    };
    let mut flags = g.clone();
    flags.resume = Some(id.clone());
    flags.continue_last = false;
    let t = resolve_stored(g, cfg, id, stored).await?;
    Ok((t, flags))
}

/// The target for continuing conversation `id`, which last talked to `stored`.
///
/// # Errors
/// As [`target::build`].
pub async fn resolve_stored(g: &Global, cfg: &Config, id: String, stored: StoredTarget) -> Result<Target, UsageError> {
    // A conversation started on a built-in preset (`--provider groq`, no profile) goes back to it.
    let adopted;
    let cfg = match stored.provider.as_deref() {
        Some(p) if !cfg.providers.contains_key(p) && crate::config::presets::get(p).is_some() => {
            let mut with = cfg.clone();
            with.adopt_preset(p);
            adopted = with;
            &adopted
        }
        _ => cfg,
    };
    let plan = plan(g, cfg, &stored);
    let mut flags = g.clone();
    if plan.keep_model {
        if flags.model.is_empty() {
            flags.model.extend(stored.model.clone());
        }
        if flags.api.is_none() {
            flags.api = stored.api.as_deref().and_then(crate::api::Api::parse).map(|a| match a {
                crate::api::Api::Chat => ApiArg::Chat,
                crate::api::Api::Responses => ApiArg::Responses,
            });
        }
    }
    let source = match plan.source {
        Some(s) => s,
        None => target::choose(&flags, cfg)?,
    };
    let mut t = target::build(&flags, cfg, source).await?;
    let changes = changes(g, &stored, &t, plan.why.as_deref());
    t.continued = Some(Continued { id, before: stored, changes, note: plan.note });
    Ok(t)
}

/// The conversation `--resume ID` or `--continue` names, and what it last talked to. `None`
/// when there is no history yet or nothing in it (the run says so itself).
fn find(g: &Global, paths: &Paths) -> Result<Option<(String, StoredTarget)>, UsageError> {
    let path = paths.database();
    if !path.exists() {
        return Ok(None);
    }
    let store = StoreHandle::open(&path, StoreOptions::default()).map_err(|e| {
        UsageError(format!("cannot reopen a conversation: the history at {} cannot be opened: {e}", path.display()))
    })?;
    let id = if let Some(id) = &g.resume {
        match store.resolve_id(id) {
            Ok(Some(full)) => full,
            Ok(None) => return Err(UsageError(format!("no conversation with ID {id} (see `palaver history list`)"))),
            Err(e) => return Err(UsageError(e.to_string())),
        }
    } else {
        match store.latest() {
            Ok(Some(s)) => s.id,
            _ => return Ok(None),
        }
    };
    let stored = store.stored_target(&id).ok().flatten().unwrap_or_default();
    Ok(Some((id, stored)))
}

/// How to go back to a stored target.
#[derive(Debug, Default, PartialEq, Eq)]
struct Plan {
    /// Where to go; `None`: wherever the flags and the config say now.
    source: Option<Source>,
    /// Whether the conversation's model and API stay (same provider, or the same server).
    keep_model: bool,
    /// Why the provider differs when no flag asked for it.
    why: Option<String>,
    note: Option<String>,
}

fn plan(g: &Global, cfg: &Config, stored: &StoredTarget) -> Plan {
    let stored_p = stored.provider.as_deref();
    let profile = stored_p.filter(|p| cfg.providers.contains_key(*p)).map(str::to_owned);
    if g.demo {
        return Plan {
            source: Some(Source::Demo { fallback: None }),
            keep_model: stored_p == Some("demo"),
            ..Plan::default()
        };
    }
    if let Some(p) = &g.provider {
        let source = match &g.base_url {
            Some(url) => Source::Url { url: url.clone(), profile: Some(p.clone()), name: None },
            None => Source::Profile { name: p.clone(), from: "--provider".into() },
        };
        return Plan { source: Some(source), keep_model: stored_p == Some(p.as_str()), ..Plan::default() };
    }
    if let Some(url) = &g.base_url {
        // Only the address moves: the conversation's profile and model stay.
        let source = Source::Url { url: url.clone(), profile, name: None };
        return Plan { source: Some(source), keep_model: stored_p != Some("demo"), ..Plan::default() };
    }
    from_record(g, cfg, stored)
}

/// No flag names a target: where the conversation's record says.
fn from_record(g: &Global, cfg: &Config, stored: &StoredTarget) -> Plan {
    match (stored.provider.as_deref(), &stored.base_url) {
        (Some("demo"), _) => stay_on_demo(g, cfg),
        (Some(p), url) if cfg.providers.contains_key(p) => on_profile(cfg, p, url.as_deref()),
        (p, Some(u)) => {
            // Not a profile: a bare `--base-url` (named by its host), the environment's
            // `openai`, or a profile that is gone; the base URL it used is where it goes.
            let gone = p.filter(|p| *p != "openai" && *p != target::host_of(u));
            let name = p.filter(|_| gone.is_none()).map(str::to_owned);
            Plan {
                source: Some(Source::Url { url: u.clone(), profile: None, name }),
                keep_model: true,
                why: gone.map(|p| {
                    format!(
                        "`{p}` is no longer a provider in config.toml; going to the base URL this conversation used"
                    )
                }),
                ..Plan::default()
            }
        }
        (Some(p), None) => Plan {
            source: None,
            keep_model: false,
            why: Some(format!(
                "`{p}` is not a provider in config.toml and this conversation has no base URL recorded; \
                 the provider as configured now"
            )),
            ..Plan::default()
        },
        (None, None) => Plan { source: None, keep_model: true, ..Plan::default() },
    }
}

/// A conversation with the demo stays with it; said when a provider is set up by now.
fn stay_on_demo(g: &Global, cfg: &Config) -> Plan {
    match target::choose(g, cfg) {
        // A fresh run would be the demo too: the same note as a fresh run, if any.
        Ok(Source::Demo { fallback }) => {
            Plan { source: Some(Source::Demo { fallback }), keep_model: true, ..Plan::default() }
        }
        _ => Plan {
            source: Some(Source::Demo { fallback: None }),
            keep_model: true,
            note: Some(
                "it is with the built-in demo provider (scripted answers, not a model) and stays there; \
                 --provider NAME or --base-url URL moves it"
                    .into(),
            ),
            ..Plan::default()
        },
    }
}

/// A conversation on profile `p` stays on it, at its own base URL `url` when it has one.
fn on_profile(cfg: &Config, p: &str, url: Option<&str>) -> Plan {
    let configured = cfg.providers.get(p).and_then(|c| c.base_url.as_deref()).map(storable_url);
    match url {
        // The conversation's own base URL, though the profile now names another.
        Some(u) if configured.as_deref().is_some_and(|c| c != u) => Plan {
            source: Some(Source::Url { url: u.to_owned(), profile: Some(p.to_owned()), name: None }),
            keep_model: true,
            note: Some(format!(
                "providers.{p}.base_url is now {}; this conversation stays at {u} (--provider {p} uses the profile's)",
                configured.unwrap_or_default()
            )),
            ..Plan::default()
        },
        _ => Plan {
            source: Some(Source::Profile { name: p.to_owned(), from: "this conversation".into() }),
            keep_model: true,
            ..Plan::default()
        },
    }
}

/// What differs between the stored target and `t`, each with why.
fn changes(g: &Global, stored: &StoredTarget, t: &Target, why: Option<&str>) -> Vec<Change> {
    let provider_why = if g.demo {
        "--demo".to_owned()
    } else if g.provider.is_some() {
        "--provider".to_owned()
    } else if g.base_url.is_some() {
        "--base-url".to_owned()
    } else {
        why.unwrap_or("the provider as configured now").to_owned()
    };
    let mut out = Vec::new();
    let mut push = |what: &'static str, before: Option<&String>, after: Option<String>, why: String| {
        if let (Some(b), Some(a)) = (before, after) {
            if *b != a {
                out.push(Change { what, before: b.clone(), after: a, why });
            }
        }
    };
    push("provider", stored.provider.as_ref(), Some(t.provider.clone()), provider_why.clone());
    let url_why = if g.base_url.is_some() { "--base-url".to_owned() } else { provider_why.clone() };
    push("base_url", stored.base_url.as_ref(), t.storable_base_url(), url_why);
    let follows = format!("{provider_why}: {}'s default", t.provider);
    let model_why = if g.model.is_empty() { follows.clone() } else { "-m".to_owned() };
    push("model", stored.model.as_ref(), Some(t.model.clone()), model_why);
    let api_why = if g.api.is_some() { "--api".to_owned() } else { follows };
    push("api", stored.api.as_ref(), Some(t.api.name().to_owned()), api_why);
    out
}

#[cfg(test)]
#[path = "continued_tests.rs"]
mod tests;
