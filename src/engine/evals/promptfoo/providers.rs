//! A promptfoo config's `providers` as palaver targets: `openai:chat:MODEL`, `openai:MODEL`,
//! `openai:responses:MODEL`, any of them at another server by `config.apiBaseUrl`. The request
//! settings promptfoo sends go into the target's request fields, promptfoo's defaults included
//! (temperature 0 and 1,024 tokens on the chat API), so both tools ask the same question.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One provider of the config, as palaver will call it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provider {
    /// The provider profile palaver makes for it (its label, made a name).
    pub name: String,
    pub model: String,
    /// As promptfoo shows it: its `label`, else its `id`.
    pub label: String,
    /// `chat` or `responses`.
    pub api: String,
    /// `None`: `OPENAI_BASE_URL`, else OpenAI's.
    pub base_url: Option<String>,
    /// The variable holding the key (never the key).
    pub key_env: String,
    /// A server of the user's own (`apiBaseUrl`) may need no key.
    pub key_optional: bool,
    /// Top-level fields of every request.
    pub request: Map<String, Value>,
    pub headers: Map<String, Value>,
    /// Dollars per million input and output tokens (`config.cost`, `inputCost`, `outputCost`).
    pub price: Option<(f64, f64)>,
}

impl Provider {
    /// How `-m` would name it: `profile/model`.
    #[must_use]
    pub fn spec(&self) -> String {
        format!("{}/{}", self.name, self.model)
    }
}

/// The config keys that say where and how to connect, read here rather than sent.
const CONNECTION: &[&str] = &["apiBaseUrl", "apiHost", "apiKeyEnvar", "apiKeyRequired", "organization", "headers"];
/// The config keys sent as they are, as promptfoo sends them.
const SENT: &[&str] = &[
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "top_p",
    "seed",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "response_format",
    "reasoning_effort",
];

/// Every provider of `v` (a string, a list, or a map of id to options).
///
/// # Errors
/// A provider palaver cannot call (not OpenAI-compatible, a key written in the file), named.
pub fn all(v: &Value, notes: &mut Vec<String>) -> Result<Vec<Provider>, String> {
    let list: Vec<Value> = match v {
        Value::String(_) => vec![v.clone()],
        Value::Array(a) => a.clone(),
        Value::Object(o) => o
            .iter()
            .map(|(id, opts)| {
                let mut o = opts.as_object().cloned().unwrap_or_default();
                o.insert("id".into(), Value::String(id.clone()));
                Value::Object(o)
            })
            .collect(),
        _ => return Err("`providers` must be a list of provider ids or objects".into()),
    };
    let mut out: Vec<Provider> = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let mut made = one(p, notes).map_err(|e| format!("providers[{i}]: {e}"))?;
        made.name = unique(&made.name, out.iter().map(|p| p.name.as_str()));
        out.push(made);
    }
    if out.is_empty() {
        return Err("`providers` is empty".into());
    }
    Ok(out)
}

/// `base` unless taken, else `base-2`, `base-3`…
fn unique<'a>(base: &str, taken: impl Iterator<Item = &'a str> + Clone) -> String {
    let free = |n: &str| !taken.clone().any(|t| t == n);
    if free(base) {
        return base.to_owned();
    }
    (2..).map(|i| format!("{base}-{i}")).find(|n| free(n)).unwrap_or_else(|| base.to_owned())
}

/// One provider: a string id, `{id, label, config}`, or `{"openai:chat:m": {config}}` made so.
///
/// # Errors
/// As [`all`].
pub fn one(p: &Value, notes: &mut Vec<String>) -> Result<Provider, String> {
    let (id, label, config) = match p {
        Value::String(id) => (id.clone(), None, Map::new()),
        Value::Object(o) => {
            let id = o.get("id").and_then(Value::as_str).ok_or("a provider object needs its `id`")?;
            let label = o.get("label").and_then(Value::as_str).map(str::to_owned);
            let config = match o.get("config") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(c)) => c.clone(),
                Some(_) => return Err(format!("`{id}`: `config` must be an object")),
            };
            (id.to_owned(), label, config)
        }
        _ => return Err("a provider is an id or an object with `id`".into()),
    };
    let (api, model) = parse_id(&id)?;
    if config.contains_key("apiKey") {
        // The key itself is never repeated: only that the file holds one.
        return Err(format!(
            "`{id}`: config.apiKey writes a key into the file; palaver reads keys from the environment: \
             put it in a variable and name it with config.apiKeyEnvar"
        ));
    }
    let text = |k: &str| config.get(k).and_then(Value::as_str).map(str::to_owned);
    let base_url = text("apiBaseUrl").or_else(|| text("apiHost").map(|h| format!("https://{h}/v1")));
    let key_env = text("apiKeyEnvar").unwrap_or_else(|| "OPENAI_API_KEY".into());
    let mut request = Map::new();
    if api == "chat" {
        // promptfoo's own defaults for a chat model, unless the config says otherwise.
        request.insert("temperature".into(), Value::from(0));
        request.insert("max_tokens".into(), Value::from(1024));
    }
    for (k, v) in &config {
        if SENT.contains(&k.as_str()) {
            let key = if api == "responses" && k == "max_tokens" { "max_output_tokens" } else { k.as_str() };
            request.insert(key.to_owned(), v.clone());
        } else if k == "passthrough" {
            request.extend(v.as_object().cloned().unwrap_or_default());
        } else if !CONNECTION.contains(&k.as_str()) && !["cost", "inputCost", "outputCost"].contains(&k.as_str()) {
            notes.push(format!("provider `{id}`: config.{k} is not used by palaver"));
        }
    }
    let per_m = |k: &str| config.get(k).and_then(Value::as_f64).map(|c| c * 1e6);
    let price = match (per_m("inputCost").or(per_m("cost")), per_m("outputCost").or(per_m("cost"))) {
        (Some(i), Some(o)) => Some((i, o)),
        (Some(x), None) | (None, Some(x)) => Some((x, x)),
        (None, None) => None,
    };
    let shown = label.clone().unwrap_or_else(|| id.clone());
    Ok(Provider {
        name: name_of(&shown),
        model,
        label: shown,
        api: api.to_owned(),
        key_optional: base_url.is_some(),
        base_url,
        key_env,
        request,
        headers: config.get("headers").and_then(Value::as_object).cloned().unwrap_or_default(),
        price,
    })
}

/// `openai:chat:m`, `openai:responses:m`, `openai:m` → (API, model).
fn parse_id(id: &str) -> Result<(&'static str, String), String> {
    let Some(rest) = id.strip_prefix("openai:") else {
        return Err(format!(
            "`{id}` is not an OpenAI-compatible provider (palaver runs openai:chat:MODEL, openai:responses:MODEL \
             and openai:MODEL, at any server with config.apiBaseUrl)"
        ));
    };
    let (api, model) = match rest.split_once(':') {
        Some(("chat", m)) => ("chat", m),
        Some(("responses", m)) => ("responses", m),
        Some((kind, _))
            if ["completion", "embedding", "embeddings", "assistant", "realtime", "image"].contains(&kind) =>
        {
            return Err(format!("`{id}`: openai:{kind} is not run by palaver (chat and responses are)"));
        }
        _ => ("chat", rest),
    };
    if model.trim().is_empty() {
        return Err(format!("`{id}` names no model"));
    }
    Ok((api, model.to_owned()))
}

/// A label made a profile name: letters, digits, `-` and `_` (no `/`, which splits `-m`).
fn name_of(label: &str) -> String {
    let mut s: String =
        label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    s = s.trim_matches('-').chars().take(40).collect();
    // `demo/…` means palaver's embedded demo: a label of that name must not take it.
    if s.is_empty() || s == "demo" { format!("pf-{s}") } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_labels_and_config_become_targets() {
        let mut notes = Vec::new();
        let ps = all(
            &json!([
                "openai:chat:gpt-4o-mini",
                {"id": "openai:responses:o4", "label": "o4 (responses)", "config": {"max_tokens": 50, "apiKeyEnvar": "MY_KEY"}},
                {"id": "openai:chat:local", "label": "demo", "config": {"apiBaseUrl": "http://127.0.0.1:9/v1", "temperature": 0.5, "seed": 7, "cost": 0.000002, "frobnicate": 1}},
                "openai:gpt-4o-mini"
            ]),
            &mut notes,
        )
        .unwrap();
        assert_eq!(ps[0].spec(), "openai-chat-gpt-4o-mini/gpt-4o-mini");
        assert_eq!((ps[0].api.as_str(), ps[0].request["temperature"].clone()), ("chat", json!(0)));
        assert_eq!(ps[1].name, "o4-responses");
        assert_eq!((ps[1].api.as_str(), ps[1].key_env.as_str()), ("responses", "MY_KEY"));
        assert_eq!(ps[1].request, json!({"max_output_tokens": 50}).as_object().unwrap().clone());
        assert_eq!(ps[2].name, "pf-demo");
        assert_eq!(ps[2].base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert!(ps[2].key_optional && !ps[0].key_optional);
        assert_eq!((ps[2].request["temperature"].clone(), ps[2].request["seed"].clone()), (json!(0.5), json!(7)));
        assert!((ps[2].price.unwrap().0 - 2.0).abs() < 1e-9);
        assert_eq!(ps[3].name, "openai-gpt-4o-mini");
        assert_eq!(notes, ["provider `openai:chat:local`: config.frobnicate is not used by palaver"]);
    }

    #[test]
    fn providers_palaver_cannot_call_are_named() {
        let mut notes = Vec::new();
        assert!(
            all(&json!(["anthropic:messages:claude"]), &mut notes).unwrap_err().contains("not an OpenAI-compatible")
        );
        let e = all(&json!([{"id": "openai:chat:x", "config": {"apiKey": "sk-secret-123"}}]), &mut notes).unwrap_err();
        assert!(e.contains("apiKeyEnvar") && !e.contains("sk-secret"), "{e}");
        assert!(all(&json!(["openai:embedding:x"]), &mut notes).is_err());
        let twice = all(&json!(["openai:chat:a", "openai:chat:a"]), &mut notes).unwrap();
        assert_eq!((twice[0].name.as_str(), twice[1].name.as_str()), ("openai-chat-a", "openai-chat-a-2"));
        let map = all(&json!({"openai:chat:m": {"label": "L"}}), &mut notes).unwrap();
        assert_eq!(map[0].spec(), "L/m");
    }
}
