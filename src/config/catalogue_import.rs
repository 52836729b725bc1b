//! Turns LiteLLM's `model_prices_and_context_window.json` into palaver's catalogue format, so
//! `palaver catalogue update` takes the file as LiteLLM publishes it. The same rules as
//! `assets/catalogue/generate.py` (which builds the built-in catalogue): keep that in step.

use serde_json::Value;
use std::fmt::Write as _;

/// LiteLLM's provider name → palaver's, in the order a bare id is claimed.
const PROVIDERS: &[(&str, &str)] = &[
    ("openai", "openai"),
    ("anthropic", "anthropic"),
    ("gemini", "gemini"),
    ("mistral", "mistral"),
    ("deepseek", "deepseek"),
    ("xai", "xai"),
    ("groq", "groq"),
    ("together_ai", "together"),
    ("fireworks_ai", "fireworks"),
    ("cerebras", "cerebras"),
    ("perplexity", "perplexity"),
    ("deepinfra", "deepinfra"),
    ("databricks", "databricks"),
    ("openrouter", "openrouter"),
    ("ollama", "ollama"),
    ("azure", "azure"),
];
const ABILITIES: &[(&str, char)] = &[
    ("supports_vision", 'i'),
    ("supports_pdf_input", 'p'),
    ("supports_audio_input", 'a'),
    ("supports_function_calling", 't'),
    ("supports_reasoning", 'r'),
    ("supports_response_schema", 's'),
];

/// The catalogue text for LiteLLM's JSON `json`, its header naming `source` and `date`.
///
/// # Errors
/// When the JSON is not an object of models.
pub fn from_litellm(json: &str, source: &str, date: &str) -> Result<String, String> {
    let doc: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let obj = doc.as_object().ok_or("not LiteLLM's model list: the JSON is not an object")?;
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.sort();
    let mut out = format!("{}\tsource={source}\tdate={date}\n", super::catalogue::MAGIC);
    let mut seen = std::collections::HashSet::new();
    for (src, name) in PROVIDERS {
        for key in &keys {
            let e = &obj[key.as_str()];
            if e.get("litellm_provider").and_then(Value::as_str) != Some(src) {
                continue;
            }
            if !matches!(e.get("mode").and_then(Value::as_str), None | Some("chat" | "responses")) {
                continue;
            }
            let id = key.strip_prefix(&format!("{src}/")).unwrap_or(key);
            if (*src == "azure" && id.contains('/')) || id.contains(['\t', '\n']) {
                continue;
            }
            // An entry with neither a window nor a price tells palaver nothing worth a line.
            if ["max_input_tokens", "max_tokens", "input_cost_per_token"]
                .iter()
                .all(|k| e.get(*k).and_then(Value::as_f64).is_none())
            {
                continue;
            }
            let full = format!("{name}/{id}");
            if seen.insert(full.clone()) {
                line(&mut out, &full, e);
            }
        }
    }
    if seen.is_empty() {
        return Err("not LiteLLM's model list: no chat model of a known provider in it".into());
    }
    Ok(out)
}

fn line(out: &mut String, key: &str, e: &Value) {
    let num = |k: &str| e.get(k).and_then(Value::as_f64);
    let tokens = |v: Option<f64>| v.filter(|v| *v > 0.0).map_or(String::new(), |v| format!("{}", v.round()));
    let million = |v: Option<f64>| v.map_or(String::new(), |v| format!("{}", round6(v * 1e6)));
    let output = million(num("output_cost_per_token"));
    let reasoning = million(num("output_cost_per_reasoning_token"));
    let mut abilities = String::new();
    for (k, c) in ABILITIES {
        match e.get(*k).and_then(Value::as_bool) {
            Some(b) => abilities.push(if b { c.to_ascii_uppercase() } else { *c }),
            // LiteLLM reads a missing `supports_vision` as "no" (its `supports_vision()`).
            None if *k == "supports_vision" => abilities.push(*c),
            None => {}
        }
    }
    let fields = [
        key.to_owned(),
        tokens(num("max_input_tokens").or_else(|| num("max_tokens"))),
        tokens(num("max_output_tokens")),
        million(num("input_cost_per_token")),
        output.clone(),
        million(num("cache_read_input_token_cost")),
        million(num("cache_creation_input_token_cost")),
        if reasoning == output { String::new() } else { reasoning },
        abilities,
    ];
    let _ = writeln!(out, "{}", fields.join("\t").trim_end_matches('\t'));
}

/// Six significant digits, as the generator writes them (`0.15`, not `0.15000000000000002`).
fn round6(v: f64) -> f64 {
    if v == 0.0 {
        return 0.0;
    }
    #[allow(clippy::cast_possible_truncation)]
    let digits = 5 - v.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits);
    (v * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::catalogue::{Catalogue, Origin};

    #[test]
    fn litellm_json_becomes_a_catalogue() {
        let json = r#"{
          "sample_spec": {"litellm_provider": "one of …"},
          "gpt-4o-mini": {"litellm_provider": "openai", "mode": "chat", "max_input_tokens": 128000,
            "max_output_tokens": 16384, "input_cost_per_token": 1.5e-07, "output_cost_per_token": 6e-07,
            "cache_read_input_token_cost": 7.5e-08, "supports_vision": true, "supports_reasoning": false},
          "azure/gpt-4o-mini": {"litellm_provider": "azure", "mode": "chat", "input_cost_per_token": 1.65e-07},
          "azure/eu/gpt-4o-mini": {"litellm_provider": "azure", "mode": "chat"},
          "text-embedding-3-small": {"litellm_provider": "openai", "mode": "embedding"}
        }"#;
        let text = from_litellm(json, "LiteLLM test", "2026-01-02").unwrap();
        let c = Catalogue::parse(&text, Origin::BuiltIn).unwrap();
        assert_eq!(c.len(), 2, "{text}");
        assert_eq!(c.date, "2026-01-02");
        let e = c.lookup("gpt-4o-mini").unwrap();
        assert_eq!((e.prices.input, e.prices.output, e.prices.cache_read), (Some(0.15), Some(0.6), Some(0.075)));
        assert_eq!((e.abilities.image, e.abilities.reasoning, e.abilities.pdf), (Some(true), Some(false), None));
        // A missing supports_vision is LiteLLM's "no".
        assert_eq!(c.lookup("azure/gpt-4o-mini").unwrap().abilities.image, Some(false));
        assert_eq!(c.lookup("azure/gpt-4o-mini").unwrap().prices.input, Some(0.165));
        assert!(from_litellm("[1]", "x", "d").is_err());
        assert!(from_litellm("{}", "x", "d").is_err());
    }

    #[test]
    fn prices_are_written_to_six_significant_digits() {
        assert_eq!(round6(0.15000000000000002), 0.15);
        assert_eq!(round6(1.1e-6 * 1e6), 1.1);
        assert_eq!(round6(3e-2), 0.03);
    }
}
