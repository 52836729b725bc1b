//! `palaver config`: the configuration in effect and where each value came from (keys never
//! shown), `config init`: a commented template, `config check`: every problem palaver can find
//! before a request goes out. Resolution itself stays in `target.rs`; this only explains it.

use super::args::{ApiArg, ConfigAction, Global};
use super::exit::{EXIT_OK, EXIT_USAGE};
use crate::config::{Config, Paths, ProviderProfile};
use std::fmt::Write as _;

/// The template `config init` writes.
pub const TEMPLATE: &str = include_str!("config_template.toml");

/// Runs `palaver config [init|check]`.
pub fn run(action: Option<ConfigAction>, g: &Global, cfg: &Config, paths: &Paths) -> u8 {
    match action {
        None => {
            print!("{}", show(g, cfg, paths));
            EXIT_OK
        }
        Some(ConfigAction::Init) => match g.provider.as_deref() {
            None => init(paths, TEMPLATE),
            Some(name) => match crate::config::presets::get(name) {
                Some(p) => init(paths, &super::catalogue_cmd::preset_template(p)),
                None => {
                    let names: Vec<&str> = crate::config::presets::all().iter().map(|p| p.name.as_str()).collect();
                    say!(
                        "there is no built-in preset `{name}` (known: {}); `palaver providers` lists them",
                        names.join(", ")
                    );
                    EXIT_USAGE
                }
            },
        },
        Some(ConfigAction::Check) => {
            let problems = check(g, cfg, paths);
            if problems.is_empty() {
                match &cfg.loaded_from {
                    Some(p) => println!("{}: no problems found", p.display()),
                    None => println!("no config file at {}: every setting is a default", paths.config_file().display()),
                }
                EXIT_OK
            } else {
                for p in &problems {
                    say!("{p}");
                }
                EXIT_USAGE
            }
        }
    }
}

fn init(paths: &Paths, template: &str) -> u8 {
    let file = paths.config_file();
    if file.exists() {
        say!(
            "{} already exists; `palaver config` shows what is in effect (remove the file to start from the template)",
            file.display()
        );
        return EXIT_USAGE;
    }
    if let Err(e) = std::fs::create_dir_all(&paths.config_dir).and_then(|()| std::fs::write(&file, template)) {
        say!("cannot write {}: {e}", file.display());
        return EXIT_USAGE;
    }
    println!("wrote {}", file.display());
    if template == TEMPLATE {
        println!("edit it (uncomment a provider), then `palaver config check` and `palaver -p hello`");
    } else {
        println!("check it with `palaver config check`, then `palaver -p hello`");
    }
    EXIT_OK
}

/// Every problem with the configuration that would bite on the next run.
#[must_use]
pub fn check(g: &Global, cfg: &Config, paths: &Paths) -> Vec<String> {
    let mut out = cfg.warnings.clone();
    if let Some(name) = g.provider.as_ref().or(cfg.default_provider.as_ref()) {
        if !cfg.providers.contains_key(name) {
            let from = if g.provider.is_some() { "--provider" } else { "default_provider" };
            let hint = crate::config::check::suggest(name, cfg.providers.keys().map(String::as_str))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            out.push(format!("{from} names `{name}`, but there is no [providers.{name}]{hint}"));
        }
    }
    if let (None, crate::config::ProviderChoice::Several(names)) = (&g.provider, cfg.provider_choice()) {
        out.push(format!(
            "no default_provider, and {} providers to choose from ({}): a run without --provider stops \
             (exit 2); set default_provider = \"{}\"",
            names.len(),
            names.join(", "),
            names.first().map_or("NAME", String::as_str)
        ));
    }
    for (name, p) in &cfg.providers {
        if p.base_url.is_none() {
            out.push(format!("[providers.{name}] has no base_url"));
        }
        if let (Some(var), None) = (&p.api_key_env, &p.api_key_cmd) {
            if std::env::var(var).map_or(true, |v| v.is_empty()) {
                out.push(format!("[providers.{name}] api_key_env names {var}, which is not set"));
            }
        }
        if p.api.as_deref().is_some_and(|a| crate::api::Api::parse(a).is_none()) {
            out.push(format!("[providers.{name}] api must be \"chat\" or \"responses\""));
        }
    }
    for (name, server) in &cfg.mcp.servers {
        out.extend(server.problems(name));
    }
    let (_, key_problems) = crate::app::keymap::KeyMap::from_config(&cfg.keys);
    out.extend(key_problems);
    if let Some(p) = cfg.auto_compact_problem() {
        out.push(p);
    }
    if let Some(p) = cfg.notify_problem() {
        out.push(p);
    }
    if let Some(theme) = &cfg.theme {
        if let Err(e) = crate::ui::theme::Theme::load(theme, Some(&paths.themes_dir()), false) {
            out.push(format!("theme {theme}: {e}"));
        }
    }
    out
}

/// The report `palaver config` prints.
#[must_use]
pub fn show(g: &Global, cfg: &Config, paths: &Paths) -> String {
    let mut s = String::new();
    let file = paths.config_file();
    let read = match &cfg.loaded_from {
        Some(_) => "read".to_owned(),
        None => "not found: every setting is a default; `palaver config init` writes a template".to_owned(),
    };
    let home = std::env::var_os("PALAVER_HOME").filter(|h| !h.is_empty());
    let _ = writeln!(s, "config file     {} ({read})", file.display());
    let _ = writeln!(s, "data directory  {} (conversations: palaver.sqlite3)", paths.data_dir.display());
    let _ = writeln!(s, "themes          {}", paths.themes_dir().display());
    let _ = writeln!(
        s,
        "PALAVER_HOME    {}",
        if home.is_some() { "set: config and data both live there" } else { "not set: the platform's directories" }
    );
    let _ = writeln!(s, "\nthe next run (value, then where it came from)");
    for (k, v, from) in next_run(g, cfg) {
        let _ = writeln!(s, "  {k:<10} {v:<36} {from}");
    }
    let remembered = crate::config::remembered::Remembered::load(paths).theme;
    let theme = match (remembered, cfg.theme.clone()) {
        (Some(t), _) => {
            (t, format!("/theme, remembered in {}", crate::config::remembered::Remembered::file(paths).display()))
        }
        (None, Some(t)) => (t, "theme in config.toml".to_owned()),
        (None, None) => ("dark".to_owned(), "default".to_owned()),
    };
    let _ = writeln!(s, "  {:<10} {:<36} {}", "theme", theme.0, theme.1);
    let mouse = cfg.mouse.map_or(("captured", "default"), |m| {
        (if m { "captured" } else { "left to the terminal" }, "mouse in config.toml")
    });
    let _ = writeln!(s, "  {:<10} {:<36} {}", "mouse", mouse.0, mouse.1);
    let prose =
        cfg.prose_width.map_or(("100".to_owned(), "default"), |w| (w.to_string(), "prose_width in config.toml"));
    let _ = writeln!(s, "  {:<10} {:<36} {}", "prose", format!("{} columns at most", prose.0), prose.1);
    let _ = writeln!(s, "\nproviders");
    if cfg.providers.is_empty() {
        let _ = writeln!(s, "  none configured");
    }
    for (name, p) in &cfg.providers {
        let _ = writeln!(
            s,
            "  {name}: {} · {} · key {} · models: {}",
            p.base_url.as_deref().map_or_else(|| "(no base_url)".into(), crate::engine::target::storable_url),
            p.api().name(),
            key_source(p, g),
            if p.models.is_empty() { "none listed".to_owned() } else { p.models.join(", ") }
        );
    }
    let demo: Vec<&str> = crate::demo::MODELS.iter().map(|(m, _)| *m).collect();
    let _ = writeln!(s, "  demo: built in (--demo) · models: {}", demo.join(", "));
    if !cfg.models.is_empty() {
        let _ = writeln!(s, "\nmodels");
        for (name, m) in &cfg.models {
            let ctx = m.context_window.map(|c| format!("context {c}")).unwrap_or_else(|| "context unknown".into());
            let price = m.price.as_ref().map_or_else(
                || "no price set".to_owned(),
                |p| {
                    let f = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v}"));
                    format!("price per 1M: in {} · cached {} · out {}", f(p.input), f(p.cached_input), f(p.output))
                },
            );
            let _ = writeln!(s, "  {name}: {ctx} · {price}");
        }
    }
    let problems = check(g, cfg, paths);
    if !problems.is_empty() {
        let _ = writeln!(s, "\nproblems (also: palaver config check)");
        for p in problems {
            let _ = writeln!(s, "  {p}");
        }
    }
    s
}

/// How a profile's key is found, without ever showing it.
fn key_source(p: &ProviderProfile, g: &Global) -> String {
    if let Some(var) = &g.api_key_env {
        return format!("${var} ({}, --api-key-env)", var_state(var));
    }
    if p.api_key_cmd.is_some() {
        return "from api_key_cmd (not run here)".to_owned();
    }
    let var = p.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
    format!("${var} ({})", var_state(var))
}

fn var_state(var: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => format!("set, {} characters", v.chars().count()),
        _ => "not set".to_owned(),
    }
}

/// Provider, base URL, API, model and key of the next run, each with its origin; mirrors
/// `target::resolve` without starting anything.
fn next_run(g: &Global, cfg: &Config) -> Vec<(&'static str, String, String)> {
    let key_env = g.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into());
    let env_key = std::env::var(&key_env).is_ok_and(|k| !k.is_empty());
    let env_url = std::env::var("OPENAI_BASE_URL").ok().filter(|u| !u.is_empty());
    let choice = cfg.provider_choice();
    let named = g
        .provider
        .clone()
        .map(|n| (n, "--provider"))
        .or_else(|| choice.name().map(|n| (n.to_owned(), choice.origin())));
    let mut rows = Vec::new();
    let api_row = |p: Option<&ProviderProfile>, pname: &str| match (g.api, p.and_then(|p| p.api.clone())) {
        (Some(a), _) => (if a == ApiArg::Responses { "responses" } else { "chat" }.to_owned(), "--api".to_owned()),
        (None, Some(a)) => (a, format!("providers.{pname}.api")),
        (None, None) => ("chat".to_owned(), "default".to_owned()),
    };
    let model_row = |p: Option<&ProviderProfile>, pname: &str, fallback: &str| {
        if let Some(m) = g.model.first() {
            return (m.clone(), "-m".to_owned());
        }
        if let Some(m) = p.and_then(|p| p.default_model.clone()) {
            return (m, format!("providers.{pname}.default_model"));
        }
        if let Some(m) = p.and_then(|p| p.models.first().cloned()) {
            return (m, format!("providers.{pname}.models[0]"));
        }
        (fallback.to_owned(), "default".to_owned())
    };
    match super::target::choose(g, cfg) {
        Ok(super::target::Source::Found { name, var }) => return found_rows(g, cfg, &name, &var),
        Err(e) if !super::target::keys_found().is_empty() => {
            rows.push(("provider", "none chosen".to_owned(), format!("runs stop (exit 2): {}", e.0)));
            return rows;
        }
        _ => {}
    }
    let demo = g.demo
        || (g.base_url.is_none() && named.is_none() && cfg.providers.is_empty() && !env_key && env_url.is_none());
    if demo {
        let why = if g.demo {
            "--demo".to_owned()
        } else {
            format!("fallback: {key_env} is not set and no provider is configured")
        };
        rows.push(("provider", "demo (built in, scripted answers)".to_owned(), why));
        let (m, from) = model_row(None, "demo", "demo");
        rows.push(("model", m, from));
        return rows;
    }
    if let (None, None, crate::config::ProviderChoice::Several(names)) = (&g.base_url, &named, &choice) {
        let what = format!("none of {}", names.join(", "));
        rows.push(("provider", what, "no default_provider, no --provider: runs stop (exit 2)".to_owned()));
        return rows;
    }
    let profile = named.as_ref().and_then(|(n, _)| cfg.providers.get(n));
    let pname = named.as_ref().map_or("openai".to_owned(), |(n, _)| n.clone());
    rows.extend(where_rows(g, named.as_ref(), profile, (&key_env, env_key), env_url));
    let (a, from) = api_row(profile, &pname);
    rows.push(("api", a, from));
    let (m, from) = model_row(profile, &pname, "gpt-4o-mini");
    let window = window_row(cfg, &m);
    rows.push(("model", m, from));
    rows.push(window);
    let key = profile.map_or_else(|| format!("${key_env} ({})", var_state(&key_env)), |p| key_source(p, g));
    rows.push(("key", key, "never shown".to_owned()));
    rows
}

/// The rows of a run that goes to preset `name` because its key variable `var` is set.
fn found_rows(g: &Global, cfg: &Config, name: &str, var: &str) -> Vec<(&'static str, String, String)> {
    let profile = crate::config::presets::get(name).map(|p| p.profile.clone()).unwrap_or_default();
    let why = format!("{var} is set, the only provider key found (no provider configured)");
    let mut rows = vec![("provider", format!("{name} (built-in preset)"), why)];
    rows.push(("base_url", profile.base_url.clone().unwrap_or_default(), format!("the {name} preset")));
    rows.push(("api", profile.api().name().to_owned(), format!("the {name} preset")));
    let (model, from) = match (g.model.first(), &profile.default_model) {
        (Some(m), _) => (m.clone(), "-m".to_owned()),
        (None, Some(m)) => (m.clone(), format!("the {name} preset's default_model")),
        (None, None) => ("gpt-4o-mini".to_owned(), "default".to_owned()),
    };
    let window = window_row(cfg, &model);
    rows.push(("model", model, from));
    rows.push(window);
    rows.push(("key", format!("${var} ({})", var_state(var)), "never shown".to_owned()));
    rows
}

/// The model's context window and where it came from: config.toml, the server (asked by
/// [`learn_window`]) or the catalogue.
fn window_row(cfg: &Config, model: &str) -> (&'static str, String, String) {
    match cfg.model_facts(model).and_then(|f| Some((f.context_window.filter(|w| *w > 0)?, f.window_from?))) {
        Some((w, from)) => ("window", format!("{} tokens", crate::text::fmt::thousands(w)), from.to_string()),
        None => (
            "window",
            "unknown (no meter, no pre-send check)".to_owned(),
            format!("set [models.\"{model}\"] context_window in config.toml"),
        ),
    }
}

/// Asks the next run's server for its model's window, as a run would (`target::learn_window`),
/// so `palaver config` can say it came from there. Only a key from a variable is sent: a key
/// command is not run here, and a local server needs none.
pub async fn learn_window(g: &Global, cfg: &mut Config) {
    let rows = next_run(g, cfg);
    let get = |k: &str| rows.iter().find(|r| r.0 == k).map(|r| r.1.clone());
    // The demo has no base_url row.
    let (Some(url), Some(model)) = (get("base_url"), get("model")) else { return };
    if !cfg.asks_server_for_window(&model, &url) {
        return;
    }
    let profile = get("provider").and_then(|p| cfg.providers.get(&p).cloned()).unwrap_or_default();
    let var = g.api_key_env.clone().or_else(|| profile.api_key_env.clone()).unwrap_or_else(|| "OPENAI_API_KEY".into());
    let key = crate::api::client::Secret::new(std::env::var(&var).unwrap_or_default());
    let ep = profile.endpoint(&url, key);
    if let Some(w) = crate::api::window::served_window(&ep, &model, crate::api::window::LOOKUP_TIMEOUT).await {
        cfg.served.insert(model, w);
    }
}

/// The provider and base URL rows of the next run (not the demo, not several unchosen).
fn where_rows(
    g: &Global,
    named: Option<&(String, &str)>,
    profile: Option<&ProviderProfile>,
    (key_env, env_key): (&str, bool),
    env_url: Option<String>,
) -> Vec<(&'static str, String, String)> {
    let mut rows = Vec::new();
    match (&g.base_url, named) {
        (Some(url), _) => {
            let (name, from) = named.map_or_else(
                || (super::target::host_of(url), "--base-url (named after its host)".to_owned()),
                |(n, f)| (n.clone(), (*f).to_owned()),
            );
            rows.push(("provider", name, from));
            let shown = crate::engine::target::storable_url(url);
            rows.push(("base_url", shown, "--base-url".to_owned()));
        }
        (None, Some((n, from))) => {
            let missing = if profile.is_none() { " (no such provider: an error)" } else { "" };
            rows.push(("provider", format!("{n}{missing}"), (*from).to_owned()));
            let url = profile
                .and_then(|p| p.base_url.as_deref())
                .map_or_else(|| "(none)".into(), crate::engine::target::storable_url);
            rows.push(("base_url", url, format!("providers.{n}.base_url")));
        }
        (None, None) => {
            // Only what is true: this branch runs when one of them is set (else the demo).
            let why = match (env_key, env_url.is_some()) {
                (true, true) => format!("{key_env} and OPENAI_BASE_URL are set"),
                (true, false) => format!("{key_env} is set"),
                _ => "OPENAI_BASE_URL is set".to_owned(),
            };
            rows.push(("provider", "openai".to_owned(), why));
            let (url, from) = env_url.map_or(("https://api.openai.com/v1".to_owned(), "default".to_owned()), |u| {
                (u, "OPENAI_BASE_URL".to_owned())
            });
            rows.push(("base_url", url, from));
        }
    }
    rows
}
