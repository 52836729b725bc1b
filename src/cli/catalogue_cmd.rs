//! `palaver catalogue show MODEL | update FILE|URL` and `palaver providers`: what the built-in
//! model catalogue and provider presets (assets/) hold, and refreshing the catalogue from a
//! file or a URL the user names (palaver fetches nothing by itself).

use super::args::CatalogueAction;
use super::exit::{EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use crate::config::catalogue::{self, Catalogue, Origin};
use crate::config::catalogue_index;
use crate::config::{Config, ModelFacts, Paths, presets};
use crate::sys::read;
use crate::text::fmt::thousands;
use crate::text::sanitize::sanitize;
use serde_json::json;

/// Runs `palaver catalogue …`.
pub async fn run(action: &CatalogueAction, json: bool, cfg: &Config, paths: &Paths) -> u8 {
    match action {
        CatalogueAction::Show { model } => show(model, json, cfg),
        CatalogueAction::Update { source } => update(source, paths).await,
    }
}

fn show(model: &str, json: bool, cfg: &Config) -> u8 {
    let cat = catalogue::global();
    let Some(f) = cfg.model_facts_in(model, cat) else {
        say!(
            "the {} does not know `{model}`, and config.toml has no [models.\"{model}\"]; \
             write one with context_window and price, or `palaver catalogue update FILE|URL`",
            cat.describe()
        );
        return EXIT_USAGE;
    };
    let user = cfg.models.get(model);
    if json {
        rawln!("{}", show_json(model, &f, user, cat));
        return EXIT_OK;
    }
    for line in show_lines(model, &f, user, cat) {
        outln!("{line}");
    }
    EXIT_OK
}

/// Where a field came from: the user's entry when it set it, else the catalogue.
fn from(user_set: bool) -> &'static str {
    if user_set { "config.toml" } else { "catalogue" }
}

/// The lines of `catalogue show`.
#[must_use]
pub fn show_lines(model: &str, f: &ModelFacts, user: Option<&ModelFacts>, cat: &Catalogue) -> Vec<String> {
    let mut out = vec![model.to_owned()];
    match &f.catalogue_key {
        Some(key) => out.push(format!("  catalogue      {key} in the {}", cat.describe())),
        None => out.push("  catalogue      not listed".to_owned()),
    }
    if user.is_some() {
        out.push(format!("  config.toml    [models.\"{model}\"] (wins over the catalogue)"));
    }
    let tokens = |v: Option<u64>| v.map_or_else(|| "unknown".to_owned(), |v| format!("{} tokens", thousands(v)));
    let set = |pick: fn(&ModelFacts) -> bool| user.is_some_and(pick);
    out.push(format!("  context window {}  ({})", tokens(f.context_window), from(set(|u| u.context_window.is_some()))));
    out.push(format!("  max output     {}  ({})", tokens(f.max_output), from(set(|u| u.max_output.is_some()))));
    match &f.price {
        Some(p) => {
            let d = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("${v}"));
            let mut s = format!("in {} · out {}", d(p.input), d(p.output));
            for (label, v) in
                [("cache read", p.cached_input), ("cache write", p.cache_write), ("reasoning", p.reasoning)]
            {
                if v.is_some() {
                    s.push_str(&format!(" · {label} {}", d(v)));
                }
            }
            let whence = if f.price_estimated { "catalogue: costs are estimates" } else { "config.toml" };
            out.push(format!("  price per 1M   {s}  ({whence})"));
        }
        None => out.push("  price per 1M   unknown".to_owned()),
    }
    let a = f.abilities;
    let list = |items: &[(&str, Option<bool>)]| {
        let yes: Vec<&str> = items.iter().filter(|(_, v)| *v == Some(true)).map(|(n, _)| *n).collect();
        let no: Vec<&str> = items.iter().filter(|(_, v)| *v == Some(false)).map(|(n, _)| *n).collect();
        let unknown = items.iter().filter(|(_, v)| v.is_none()).count();
        let mut s = if yes.is_empty() { "text only".to_owned() } else { yes.join(", ") };
        if !no.is_empty() {
            s.push_str(&format!(" (not: {})", no.join(", ")));
        }
        if unknown > 0 && unknown < items.len() {
            s.push_str(" (others not stated)");
        }
        if unknown == items.len() { "not stated".to_owned() } else { s }
    };
    out.push(format!("  takes          {}", list(&[("image", a.image), ("pdf", a.pdf), ("audio", a.audio)])));
    let can = [("tool calling", a.tools), ("reasoning", a.reasoning), ("structured output", a.structured)];
    out.push(format!("  can            {}", list(&can).replace("text only", "none of these")));
    out
}

fn show_json(model: &str, f: &ModelFacts, user: Option<&ModelFacts>, cat: &Catalogue) -> serde_json::Value {
    let a = f.abilities;
    let origin = match &cat.origin {
        Origin::BuiltIn => "built-in".to_owned(),
        Origin::DataDir(p) => p.display().to_string(),
    };
    json!({
        "model": model,
        "catalogue": f.catalogue_key.as_ref().map(|k| json!({"key": k, "from": origin, "source": cat.source, "date": cat.date})),
        "config": user.is_some(),
        "context_window": f.context_window,
        "max_output": f.max_output,
        "price": f.price.as_ref().map(|p| json!({"input": p.input, "output": p.output, "cache_read": p.cached_input,
            "cache_write": p.cache_write, "reasoning": p.reasoning, "estimated": f.price_estimated})),
        "input": {"image": a.image, "pdf": a.pdf, "audio": a.audio},
        "tool_calling": a.tools, "reasoning": a.reasoning, "structured_output": a.structured,
    })
}

async fn update(source: &str, paths: &Paths) -> u8 {
    let is_url = source.starts_with("https://") || source.starts_with("http://");
    let text = if is_url { fetch(source).await } else { read(source) };
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            say!("{e}; nothing was written");
            return if is_url { EXIT_PROVIDER } else { EXIT_USAGE };
        }
    };
    let dest = paths.data_dir.join(catalogue_index::FILE_NAME);
    let written = convert(&text, source).and_then(|text| {
        std::fs::create_dir_all(&paths.data_dir).map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
        catalogue_index::write(&text, &dest)
    });
    let facts = match written {
        Ok(f) => f,
        Err(e) => {
            say!("{} is not a catalogue palaver reads: {e}; nothing was written", sanitize(source));
            return EXIT_USAGE;
        }
    };
    // A copy an older palaver wrote would be read if the index went: it goes now.
    let _ = std::fs::remove_file(paths.data_dir.join(catalogue::FILE_NAME));
    outln!(
        "wrote {} ({} models, {}, {}); it wins over the built-in catalogue (remove it to go back)",
        dest.display(),
        thousands(facts.models as u64),
        facts.source,
        facts.date
    );
    EXIT_OK
}

/// The catalogue text for what `source` held: palaver's format as it is, LiteLLM's JSON
/// converted (its lines are checked as the index is written).
fn convert<'a>(text: &'a str, source: &str) -> Result<std::borrow::Cow<'a, str>, String> {
    if text.starts_with(catalogue::MAGIC) {
        Ok(text.into())
    } else if text.trim_start().starts_with('{') {
        let date = today();
        crate::config::catalogue_import::from_litellm(text, &format!("LiteLLM JSON from {source}"), &date)
            .map(Into::into)
    } else {
        Err(format!(
            "expected palaver's catalogue format (first line `{}`) or LiteLLM's model_prices_and_context_window.json",
            catalogue::MAGIC
        ))
    }
}

/// A catalogue file, whole: only a regular file (a FIFO or `/dev/zero` is refused at once),
/// within `catalogue_bytes`.
fn read(path: &str) -> Result<String, String> {
    read::file_string(std::path::Path::new(path), catalogue::BUDGET)
        .map_err(|e| e.about(&format!("cannot read {}", sanitize(path))))
}

async fn fetch(url: &str) -> Result<String, String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot fetch {}: {e}", sanitize(url));
    let resp = reqwest::Client::new()
        .get(url)
        .timeout(std::time::Duration::from_secs(60))
        .send()
        .await
        .map_err(|e| fail(&e))?;
    if !resp.status().is_success() {
        return Err(fail(&resp.status()));
    }
    let body =
        read::body(resp, catalogue::BUDGET).await.map_err(|e| e.about(&format!("cannot fetch {}", sanitize(url))))?;
    String::from_utf8(body).map_err(|_| fail(&"not UTF-8 text"))
}

/// Today's date (UTC) as `YYYY-MM-DD`, for a converted catalogue's header.
fn today() -> String {
    let c = crate::store::ids::Civil::from_ms(crate::store::ids::now_ms());
    format!("{:04}-{:02}-{:02}", c.year, c.month, c.day)
}

/// `palaver providers`: every preset, one a line, its name the first word.
pub fn providers(json: bool, cfg: &Config) -> u8 {
    for p in presets::all() {
        let prof = &p.profile;
        let url = prof.base_url.as_deref().unwrap_or_default();
        let key = prof.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
        let own = cfg.providers.contains_key(&p.name);
        // Whether the variable holds something, never what.
        let set = std::env::var(key).is_ok_and(|v| !v.trim().is_empty());
        if json {
            rawln!(
                "{}",
                json!({"name": p.name, "about": p.about, "base_url": url, "api_key_env": key,
                    "key_optional": prof.key_optional, "auth": prof.auth.as_deref().unwrap_or("bearer"),
                    "api": prof.api().name(), "default_model": prof.default_model, "headers": prof.headers,
                    "include_usage": prof.include_usage.unwrap_or(true), "note": p.note, "configured": own, "key_set": set,
                    "batch": prof.batch_terms().map(|t| json!({"discount": t.discount}))})
            );
            continue;
        }
        let key = match (prof.key_optional, set) {
            (_, true) => format!("{key} (set)"),
            (true, false) => format!("{key} (optional)"),
            (false, false) => key.to_owned(),
        };
        let mine = if own { " · config.toml has a profile of this name (it wins)" } else { "" };
        outln!("{:<11} {} · {url} · key {key} · {}{mine}", p.name, p.about, prof.api().name());
        if let Some(n) = &p.note {
            outln!("{:<11} {n}", "");
        }
    }
    if !json {
        rawln!("\nuse one: palaver --provider NAME … (no config needed), or palaver config init --provider NAME");
        rawln!(
            "with no provider configured, the one preset whose key is set (and not OPENAI_API_KEY) is used by itself"
        );
    }
    EXIT_OK
}

/// The `[providers.NAME]` template `config init --provider NAME` writes.
#[must_use]
pub fn preset_template(p: &presets::Preset) -> String {
    let prof = &p.profile;
    let mut s = format!(
        "# palaver configuration, from the `{}` preset ({}).\n# `palaver config` shows what is in effect; `palaver config check` checks it.\n\ndefault_provider = \"{}\"\n\n[providers.{}]\n",
        p.name, p.about, p.name, p.name
    );
    let q = |v: &str| format!("{v:?}");
    if let Some(u) = &prof.base_url {
        let hint = if p.placeholder { "   # put your own in place of <…>" } else { "" };
        s.push_str(&format!("base_url = {}{hint}\n", q(u)));
    }
    if let Some(k) = &prof.api_key_env {
        s.push_str(&format!("api_key_env = {}        # or api_key_cmd = \"pass show {}\"\n", q(k), p.name));
    }
    if prof.key_optional {
        s.push_str("key_optional = true   # a local server: no key needed\n");
    }
    if let Some(a) = &prof.auth {
        s.push_str(&format!("auth = {}\n", q(a)));
    }
    s.push_str(&format!("api = {}                  # or \"responses\"\n", q(prof.api().name())));
    if let Some(m) = &prof.default_model {
        s.push_str(&format!("default_model = {}\n", q(m)));
    }
    if !prof.headers.is_empty() {
        let h: Vec<String> = prof.headers.iter().map(|(k, v)| format!("{} = {}", q(k), q(v))).collect();
        s.push_str(&format!("headers = {{ {} }}\n", h.join(", ")));
    }
    if let Some(u) = prof.include_usage {
        s.push_str(&format!("include_usage = {u}\n"));
    }
    if let Some(terms) = prof.batch_terms() {
        s.push_str(&format!(
            "batch = true                  # compare --batch: its batch API\nbatch_discount = {}\n",
            terms.discount
        ));
    }
    if let Some(n) = &p.note {
        s.push_str(&format!("# {n}\n"));
    }
    s.push_str(
        "# models = [\"…\"]             # the models the picker offers\n\n\
         # Prices and context windows come from the built-in catalogue (palaver catalogue show MODEL);\n\
         # an entry here wins over it:\n# [models.\"my-model\"]\n# context_window = 128000\n\
         # price = { input = 0.15, cached_input = 0.075, output = 0.60 }   # per million tokens\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_template_parses_back_into_its_profile() {
        for p in presets::all() {
            let text = preset_template(p);
            let cfg =
                Config::parse(&text, std::path::Path::new("t")).unwrap_or_else(|e| panic!("{}: {e}\n{text}", p.name));
            let got = &cfg.providers[&p.name];
            assert_eq!(got.base_url, p.profile.base_url, "{}", p.name);
            assert_eq!(got.api_key_env, p.profile.api_key_env);
            assert_eq!(got.auth, p.profile.auth);
            assert_eq!(got.headers, p.profile.headers);
            assert_eq!(got.include_usage, p.profile.include_usage);
            assert_eq!(got.key_optional, p.profile.key_optional);
            assert_eq!(got.batch_terms(), p.profile.batch_terms(), "{}", p.name);
            assert_eq!(cfg.default_provider.as_deref(), Some(p.name.as_str()));
            assert!(crate::config::check::unknown_keys(&text).is_empty(), "{}", p.name);
        }
    }

    #[test]
    fn show_says_where_each_fact_came_from() {
        let cat = catalogue::built_in();
        let text = "[models.\"gpt-4o-mini\"]\ncontext_window = 1000\n";
        let cfg = Config::parse(text, std::path::Path::new("c")).unwrap();
        let f = cfg.model_facts_in("gpt-4o-mini", &cat).unwrap();
        let lines = show_lines("gpt-4o-mini", &f, cfg.models.get("gpt-4o-mini"), &cat).join("\n");
        assert!(lines.contains("openai/gpt-4o-mini in the built-in catalogue (LiteLLM"), "{lines}");
        assert!(lines.contains("context window 1,000 tokens  (config.toml)"), "{lines}");
        assert!(lines.contains("max output     16,384 tokens  (catalogue)"), "{lines}");
        assert!(lines.contains("in $0.15 · out $0.6 · cache read $0.075  (catalogue: costs are estimates)"), "{lines}");
        assert!(lines.contains("takes          image, pdf"), "{lines}");
    }

    #[test]
    fn update_takes_palaver_format_or_litellm_json_and_refuses_others() {
        let parsed = |text: std::borrow::Cow<'_, str>| Catalogue::parse(&text, Origin::BuiltIn).unwrap();
        let ours = format!("{}\tsource=s\tdate=d\na/m\t10\n", catalogue::MAGIC);
        assert_eq!(parsed(convert(&ours, "f").unwrap()).len(), 1);
        let lite = r#"{"m": {"litellm_provider": "openai", "mode": "chat", "max_input_tokens": 5}}"#;
        let text = convert(lite, "u").unwrap();
        assert!(text.contains("LiteLLM JSON from u"), "{text}");
        assert_eq!(parsed(text).lookup("m").unwrap().context_window, Some(5));
        assert!(convert("<html>", "u").unwrap_err().contains("expected palaver's catalogue format"));
        assert_eq!(today().len(), 10);
    }
}
