//! `palaver models`: every configured provider's models — what its `GET /models` lists and
//! what its profile's `models` names — grouped by provider. A provider that cannot be asked
//! says why in its own group; the others still list. With a flag that names one target
//! (`--provider`, `--base-url`, `--demo`), or no provider configured, only that target is
//! listed, one model a line as before.

use super::args::Global;
use super::exit::{EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use super::target::{self, Target};
use crate::config::Config;
use crate::engine::target::storable_url;
use crate::text::sanitize::sanitize;
use serde_json::json;

/// Runs `palaver models`; returns the exit status: 0 when at least one provider answered,
/// 1 when none did, 2 for a configuration error of the one target asked for.
pub async fn run(g: &Global, cfg: &Config) -> u8 {
    let one = g.demo || g.provider.is_some() || g.base_url.is_some() || cfg.providers.is_empty();
    if one {
        let t = match target::resolve(g, cfg).await {
            Ok(t) => t,
            Err(e) => {
                say!("{}", e.0);
                return EXIT_USAGE;
            }
        };
        if let Some(note) = target::fallback_note(&t) {
            errln!("{note}");
        }
        let group = list_one(&t, cfg).await;
        return if g.json { print_json(std::slice::from_ref(&group), cfg) } else { print_flat(&group, cfg) };
    }
    let default = cfg.provider_choice().name().map(str::to_owned);
    let mut groups = Vec::new();
    // Keys first, one provider after another (a key command may ask for a passphrase).
    let mut targets = Vec::new();
    for name in cfg.providers.keys() {
        let mut flags = g.clone();
        flags.provider = Some(name.clone());
        targets.push((name.clone(), target::resolve(&flags, cfg).await));
    }
    let lists = targets.iter().map(|(name, t)| async move {
        match t {
            Ok(t) => list_one(t, cfg).await,
            Err(e) => Group {
                provider: name.clone(),
                base_url: cfg.providers.get(name).and_then(|p| p.base_url.as_deref()).map(storable_url),
                listed: Vec::new(),
                configured: configured(cfg, name),
                error: Some(e.0.clone()),
                demo: false,
            },
        }
    });
    groups.extend(futures_util::future::join_all(lists).await);
    if g.json { print_json(&groups, cfg) } else { print_groups(&groups, default.as_deref(), cfg) }
}

/// One provider's models.
struct Group {
    provider: String,
    base_url: Option<String>,
    /// What `GET /models` listed, in its order.
    listed: Vec<String>,
    /// What the profile names that the server did not list.
    configured: Vec<String>,
    /// Why the provider could not be asked.
    error: Option<String>,
    demo: bool,
}

fn configured(cfg: &Config, provider: &str) -> Vec<String> {
    let Some(p) = cfg.providers.get(provider) else { return Vec::new() };
    let mut out = p.models.clone();
    out.extend(p.default_model.clone().filter(|m| !p.models.contains(m)));
    out
}

async fn list_one(t: &Target, cfg: &Config) -> Group {
    let base_url = (t.demo.is_none()).then(|| storable_url(&t.endpoint.base_url));
    let (listed, error) = match crate::api::models::list(&t.endpoint).await {
        Ok(ids) => (ids, None),
        Err(e) => (Vec::new(), Some(format!("GET /models failed: {e}"))),
    };
    let configured = configured(cfg, &t.provider).into_iter().filter(|m| !listed.contains(m)).collect();
    Group { provider: t.provider.clone(), base_url, listed, configured, error, demo: t.demo.is_some() }
}

fn demo_note(g: &Group, id: &str) -> Option<&'static str> {
    crate::demo::MODELS.iter().find(|(m, _)| g.demo && *m == id).map(|(_, what)| *what)
}

/// One target, one model a line (the demo's marked as scripted, configured ones as such).
fn print_flat(g: &Group, cfg: &Config) -> u8 {
    for id in &g.listed {
        match (demo_note(g, id), facts_note(cfg, id)) {
            (Some(what), _) => rawln!("{}\t(demo: {what})", sanitize(id)),
            (None, Some(facts)) => rawln!("{}\t{facts}", sanitize(id)),
            (None, None) => rawln!("{}", sanitize(id)),
        }
    }
    for m in &g.configured {
        rawln!("{}\t(configured){}", sanitize(m), facts_note(cfg, m).map(|f| format!(" {f}")).unwrap_or_default());
    }
    if let Some(e) = &g.error {
        say!("{}", sanitize(e));
        return EXIT_PROVIDER;
    }
    EXIT_OK
}

/// Every provider under its own heading.
fn print_groups(groups: &[Group], default: Option<&str>, cfg: &Config) -> u8 {
    for g in groups {
        let mark = if default == Some(g.provider.as_str()) { " (default)" } else { "" };
        let url = g.base_url.as_deref().map(|u| format!(" · {u}")).unwrap_or_default();
        rawln!("{}{mark}{}", sanitize(&g.provider), sanitize(&url));
        for id in &g.listed {
            match facts_note(cfg, id) {
                Some(f) => rawln!("  {}\t{f}", sanitize(id)),
                None => rawln!("  {}", sanitize(id)),
            }
        }
        for m in &g.configured {
            rawln!(
                "  {}\t(configured){}",
                sanitize(m),
                facts_note(cfg, m).map(|f| format!(" {f}")).unwrap_or_default()
            );
        }
        if let Some(e) = &g.error {
            rawln!("  ! {}", sanitize(e));
        } else if g.listed.is_empty() && g.configured.is_empty() {
            rawln!("  (the server listed no models)");
        }
    }
    status(groups)
}

/// `--json`: one object a line, `{"provider","model","source"}` (`listed` or `configured`), and
/// `{"provider","error"}` for a provider that could not be asked.
fn print_json(groups: &[Group], cfg: &Config) -> u8 {
    for g in groups {
        for (id, source) in g.listed.iter().map(|m| (m, "listed")).chain(g.configured.iter().map(|m| (m, "configured")))
        {
            let mut line = json!({"provider": g.provider, "model": id, "source": source});
            if let (Some(obj), Some(facts)) = (line.as_object_mut(), facts_json(cfg, id)) {
                obj.extend(facts);
            }
            rawln!("{line}");
        }
        if let Some(e) = &g.error {
            rawln!("{}", json!({"provider": g.provider, "base_url": g.base_url, "error": e}));
        }
    }
    status(groups)
}

/// What the catalogue or config.toml knows of `model`, for its line: window, price per
/// million tokens and where they came from (`~` on a catalogue price: costs from it are
/// estimates).
fn facts_note(cfg: &Config, model: &str) -> Option<String> {
    let f = cfg.model_facts(model)?;
    let mut parts = Vec::new();
    if let Some(w) = f.context_window {
        parts.push(format!("{} context", crate::text::fmt::thousands(w)));
    }
    if let Some(p) = &f.price {
        let tilde = if f.price_estimated { "~" } else { "" };
        let d = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{tilde}${v}"));
        parts.push(format!("{} in · {} out per 1M", d(p.input), d(p.output)));
    }
    if parts.is_empty() {
        return None;
    }
    parts.push(facts_from(cfg, model, &f).to_owned());
    Some(parts.join(" · "))
}

/// Where a model's facts came from: config.toml, the catalogue, or both.
fn facts_from(cfg: &Config, model: &str, f: &crate::config::ModelFacts) -> &'static str {
    match (cfg.models.contains_key(model), f.catalogue_key.is_some()) {
        (true, true) => "config.toml + catalogue",
        (true, false) => "config.toml",
        (false, _) => "catalogue",
    }
}

/// The facts as `--json` fields: `context_window`, `price` (per million tokens, with
/// `estimated`), `facts_from`.
fn facts_json(cfg: &Config, model: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let f = cfg.model_facts(model)?;
    let mut out = serde_json::Map::new();
    out.insert("context_window".into(), json!(f.context_window));
    out.insert(
        "price".into(),
        f.price.as_ref().map_or(serde_json::Value::Null, |p| {
            json!({"input": p.input, "output": p.output, "cache_read": p.cached_input, "cache_write": p.cache_write,
                "reasoning": p.reasoning, "estimated": f.price_estimated})
        }),
    );
    out.insert("facts_from".into(), json!(facts_from(cfg, model, &f)));
    Some(out)
}

/// 0 when at least one provider answered, 1 when none did.
fn status(groups: &[Group]) -> u8 {
    if groups.iter().any(|g| g.error.is_none()) { EXIT_OK } else { EXIT_PROVIDER }
}
