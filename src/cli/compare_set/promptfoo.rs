//! `compare --promptfoo CONFIG`: a promptfoo config read (by the one bounded reader, its files
//! by the prompt set's rule: inside its folder unless `--allow-outside`), translated, and run
//! as a prompt set. Its providers become provider profiles for this run only, kept with the
//! run (their key variables, never a key) so `--resume` finds them again. An assert it cannot
//! run is named before anything is sent, and refused unless `--skip-unsupported`.

use crate::cli::args::{CompareArgs, Global};
use crate::config::{Config, Price, ProviderProfile};
use crate::engine::evals::expect::Expect;
use crate::engine::evals::promptfoo::{self, Provider};
use crate::engine::evals::prompts::PromptItem;
use serde_json::Value;
use std::path::Path;

/// A config read and translated, ready to store as a run.
pub struct Loaded {
    pub items: Vec<PromptItem>,
    /// The columns first, then the grading providers.
    pub providers: Vec<Provider>,
    pub columns: usize,
}

/// Reads and translates the config at `path`.
///
/// # Errors
/// A config that cannot be read or translated, or that holds asserts palaver cannot run (unless
/// `--skip-unsupported`), each named; nothing has been sent.
pub fn load(path: &Path, ca: &CompareArgs) -> Result<Loaded, String> {
    use crate::sys::read::{INPUT_FILE, file_string};
    let shown = crate::text::sanitize::sanitize(&path.display().to_string()).into_owned();
    let text =
        file_string(path, INPUT_FILE).map_err(|e| e.about(&format!("cannot read the promptfoo config {shown}")))?;
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let ws = super::attach_rules::folder(&folder).map_err(|e| format!("{shown}: {e}"))?;
    let files = |name: &str| super::attach_rules::set_file(&ws, name, ca.allow_outside);
    let t = promptfoo::translate(&text, &files).map_err(|e| format!("{shown}: {e}"))?;
    for note in &t.notes {
        errln!("{shown}: {note}");
    }
    if !t.unsupported.is_empty() {
        let list = t.unsupported.iter().map(|u| format!("  {u}")).collect::<Vec<_>>().join("\n");
        if !ca.skip_unsupported {
            return Err(format!(
                "{shown}: palaver cannot run {} of its asserts or test fields as promptfoo would; nothing was sent:\n{list}\n\
                 (--skip-unsupported runs the rest without them)",
                t.unsupported.len()
            ));
        }
        errln!("{shown}: left out (--skip-unsupported):\n{list}");
    }
    let mut items = t.items;
    for item in &mut items {
        if let Some(v) = &item.expect_raw {
            let e = Expect::compile(v).map_err(|e| format!("{shown}: {}: {e}", item.id))?;
            item.expect = Some(e);
        }
    }
    let columns = t.columns.len();
    let providers = t.columns.into_iter().chain(t.graders).collect();
    Ok(Loaded { items, providers, columns })
}

/// Makes the run's models the config's providers: `-m` is theirs, and a profile for each.
///
/// # Errors
/// `-m` given too (the config names the models).
pub fn apply(g: &mut Global, cfg: &mut Config, l: &Loaded) -> Result<(), String> {
    if !g.model.is_empty() {
        return Err("--promptfoo takes its models from the config's providers: leave out -m".into());
    }
    if g.provider.is_some() || g.base_url.is_some() || g.demo {
        return Err(
            "--promptfoo takes its servers from the config's providers: leave out --provider, --base-url and --demo"
                .into(),
        );
    }
    g.model = l.providers[..l.columns].iter().map(Provider::spec).collect();
    // promptfoo's OpenAI provider asks for the whole answer at once: the same requests.
    g.no_stream = true;
    install(cfg, &l.providers);
    Ok(())
}

/// The providers as kept with the run (to find them again on `--resume`).
#[must_use]
pub fn kept(l: &Loaded) -> Value {
    serde_json::to_value(&l.providers).unwrap_or(Value::Null)
}

/// The profiles of a stored promptfoo run put back into `cfg` (nothing for another run).
pub fn restore(settings: &Value, cfg: &mut Config) {
    if let Some(ps) = settings.get("promptfoo").and_then(|v| serde_json::from_value::<Vec<Provider>>(v.clone()).ok()) {
        install(cfg, &ps);
    }
}

fn install(cfg: &mut Config, providers: &[Provider]) {
    // Their keys are secrets like any profile's: the one redactor learns them.
    crate::sys::secrets::register_all(providers.iter().filter_map(|p| std::env::var(&p.key_env).ok()));
    for p in providers {
        cfg.providers.insert(p.name.clone(), profile(p));
        if let Some((input, output)) = p.price {
            let facts = cfg.models.entry(p.model.clone()).or_default();
            facts.price.get_or_insert(Price { input: Some(input), output: Some(output), ..Price::default() });
        }
    }
}

/// The profile palaver calls a provider through. Without `apiBaseUrl` it goes where promptfoo's
/// OpenAI provider goes: `OPENAI_BASE_URL` (or `OPENAI_API_BASE_URL`), else OpenAI's API.
fn profile(p: &Provider) -> ProviderProfile {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let base_url = p.base_url.clone().or_else(|| env("OPENAI_BASE_URL")).or_else(|| env("OPENAI_API_BASE_URL"));
    ProviderProfile {
        base_url: Some(base_url.unwrap_or_else(|| "https://api.openai.com/v1".into())),
        api_key_env: Some(p.key_env.clone()),
        api: Some(p.api.clone()),
        key_optional: p.key_optional,
        request: p.request.iter().filter_map(|(k, v)| Some((k.clone(), toml::Value::try_from(v).ok()?))).collect(),
        headers: p.headers.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect(),
        ..ProviderProfile::default()
    }
}
