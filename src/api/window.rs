//! The context window a server states for a model it serves. OpenAI-compatible servers have no
//! common field for it, so each is read where it says it: llama.cpp's `/v1/models` (`meta.n_ctx`,
//! the window it was started with) or `/props`; vLLM's `/v1/models` (`max_model_len`); Ollama's
//! `POST /api/show` (`num_ctx` in its parameters, else `model_info.<arch>.context_length`); LM
//! Studio's `/api/v0/models` (`loaded_context_length`, else `max_context_length`); and a hosted
//! provider's `/v1/models` when it lists one (`context_length`, `context_window`). One
//! `GET /models` first; a second request only when that list says which local server it is.

use super::client::Endpoint;
use super::limits::Limits;
use serde_json::{Value, json};
use std::time::Duration;

/// A window a server stated, and where it said so (`llama.cpp /v1/models`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServedWindow {
    pub tokens: u64,
    pub source: &'static str,
}

/// How long a lookup may take in all: it runs before a headless request, and a server that does
/// not answer this fast is not one to wait for (the catalogue answers instead).
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);

/// What the server behind `ep` says `model`'s window is; `None` when it says nothing, fails or
/// takes longer than `within` (a failure is silent: the catalogue is the fallback).
pub async fn served_window(ep: &Endpoint, model: &str, within: Duration) -> Option<ServedWindow> {
    tokio::time::timeout(within, ask(ep, model)).await.ok().flatten()
}

async fn ask(ep: &Endpoint, model: &str) -> Option<ServedWindow> {
    let http = super::client::endpoint_client(ep).ok()?;
    let list = fetch(ep, ep.prepare(http.get(ep.url("models")))).await?;
    let entry = entry_for(&list, model)?;
    if let Some(w) = in_list_entry(entry) {
        return Some(w);
    }
    let root = server_root(&ep.base_url);
    match server_kind(entry) {
        Kind::LlamaCpp => {
            let props = fetch(ep, ep.prepare(http.get(format!("{root}/props")))).await?;
            in_props(&props)
        }
        Kind::Ollama => {
            let id = entry.get("id").and_then(Value::as_str).unwrap_or(model);
            let body = json!({ "model": id, "name": id });
            let show = fetch(ep, ep.prepare(http.post(format!("{root}/api/show")).json(&body))).await?;
            in_ollama_show(&show)
        }
        Kind::LmStudio => {
            let v0 = fetch(ep, ep.prepare(http.get(format!("{root}/api/v0/models")))).await?;
            in_lmstudio(&v0, entry.get("id").and_then(Value::as_str).unwrap_or(model))
        }
        Kind::Other => None,
    }
}

/// A JSON body read under the model list's limits; `None` for anything else.
async fn fetch(ep: &Endpoint, req: reqwest::RequestBuilder) -> Option<Value> {
    let resp = req.send().await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let budget = Limits::budget("model_list_bytes", ep.limits.model_list_bytes);
    let bytes = crate::sys::read::body(resp, budget).await.ok()?;
    if super::limits::json_deeper_than(&bytes, ep.limits.json_depth) {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

/// The base URL without its `/v1`: where llama.cpp, Ollama and LM Studio serve their own APIs.
fn server_root(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base).to_owned()
}

/// `model`'s entry in a model list: by id or alias (Ollama lists `name:latest` for `name`), or
/// llama.cpp's only model (it serves that one whatever the request names).
fn entry_for<'a>(list: &'a Value, model: &str) -> Option<&'a Value> {
    let data = list.get("data")?.as_array()?;
    let named = |e: &&Value| {
        let id = e.get("id").and_then(Value::as_str).unwrap_or_default();
        let alias = e.get("aliases").and_then(Value::as_array).is_some_and(|a| a.iter().any(|x| x == model));
        id == model || alias || id.strip_suffix(":latest") == Some(model)
    };
    data.iter().find(named).or_else(|| match data.as_slice() {
        [only] if server_kind(only) == Kind::LlamaCpp => Some(only),
        _ => None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    LlamaCpp,
    Ollama,
    LmStudio,
    Other,
}

/// Which local server wrote a model list entry, by the owner it names (Ollama's ids carry a
/// `:tag`, and its owner is `library` or the model's namespace).
fn server_kind(entry: &Value) -> Kind {
    let owner = entry.get("owned_by").and_then(Value::as_str).unwrap_or_default();
    let id = entry.get("id").and_then(Value::as_str).unwrap_or_default();
    match owner {
        "llamacpp" => Kind::LlamaCpp,
        "organization_owner" => Kind::LmStudio,
        "library" | "ollama" => Kind::Ollama,
        _ if id.contains(':') && entry.get("created").is_some() && !id.contains('/') => Kind::Ollama,
        _ => Kind::Other,
    }
}

fn tokens(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64).filter(|n| *n > 0)
}

/// A window the list entry itself states.
fn in_list_entry(e: &Value) -> Option<ServedWindow> {
    let at = |tokens: u64, source| Some(ServedWindow { tokens, source });
    if let Some(n) = tokens(e.pointer("/meta/n_ctx")) {
        return at(n, "llama.cpp /v1/models");
    }
    if let Some(n) = tokens(e.get("max_model_len")) {
        return at(n, "vLLM /v1/models");
    }
    ["context_length", "context_window", "max_context_length"]
        .iter()
        .find_map(|k| tokens(e.get(*k)))
        .and_then(|n| at(n, "/v1/models"))
}

/// llama.cpp's `/props`: the window of each of its slots (what a request must fit).
fn in_props(v: &Value) -> Option<ServedWindow> {
    let n = tokens(v.pointer("/default_generation_settings/n_ctx")).or_else(|| tokens(v.get("n_ctx")))?;
    Some(ServedWindow { tokens: n, source: "llama.cpp /props" })
}

/// Ollama's `/api/show`: `num_ctx` when the model sets one (what it runs with), else the
/// model's own `<arch>.context_length`.
fn in_ollama_show(v: &Value) -> Option<ServedWindow> {
    let params = v.get("parameters").and_then(Value::as_str).unwrap_or_default();
    let num_ctx = params.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some("num_ctx")).then(|| words.next()?.parse::<u64>().ok()).flatten()
    });
    let info = v.get("model_info").and_then(Value::as_object);
    let trained = info.and_then(|m| m.iter().find(|(k, _)| k.ends_with(".context_length")).map(|(_, v)| v));
    let n = num_ctx.filter(|n| *n > 0).or_else(|| tokens(trained))?;
    Some(ServedWindow { tokens: n, source: "Ollama /api/show" })
}

/// LM Studio's `/api/v0/models`: the window the model is loaded with, else its largest.
fn in_lmstudio(v: &Value, id: &str) -> Option<ServedWindow> {
    let e = v.get("data")?.as_array()?.iter().find(|e| e.get("id").and_then(Value::as_str) == Some(id))?;
    let n = tokens(e.get("loaded_context_length")).or_else(|| tokens(e.get("max_context_length")))?;
    Some(ServedWindow { tokens: n, source: "LM Studio /api/v0/models" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_servers_shape_is_read() {
        let llama = json!({"data":[{"id":"smollm2","aliases":["smollm2"],"owned_by":"llamacpp",
            "meta":{"n_ctx":4096,"n_ctx_train":8192}}]});
        // llama.cpp serves its one model whatever the request names.
        let e = entry_for(&llama, "anything").unwrap();
        assert_eq!(in_list_entry(e), Some(ServedWindow { tokens: 4096, source: "llama.cpp /v1/models" }));
        let vllm = json!({"data":[{"id":"org/m","owned_by":"vllm","max_model_len":8192}]});
        assert_eq!(in_list_entry(entry_for(&vllm, "org/m").unwrap()).map(|w| w.tokens), Some(8192));
        assert!(entry_for(&vllm, "other").is_none());
        let props = json!({"default_generation_settings":{"n_ctx":2048}});
        assert_eq!(in_props(&props).map(|w| w.tokens), Some(2048));
        let ollama = json!({"data":[{"id":"llama3.2:latest","created":1,"owned_by":"library"}]});
        let e = entry_for(&ollama, "llama3.2").unwrap();
        assert_eq!(server_kind(e), Kind::Ollama);
        let show = json!({"parameters":"stop \"<|eot|>\"\nnum_ctx                        8192",
            "model_info":{"general.architecture":"llama","llama.context_length":131072}});
        assert_eq!(in_ollama_show(&show).map(|w| w.tokens), Some(8192));
        let show = json!({"model_info":{"llama.context_length":131072}});
        assert_eq!(in_ollama_show(&show).map(|w| w.tokens), Some(131_072));
        let lms = json!({"data":[{"id":"qwen","max_context_length":32768,"loaded_context_length":4096}]});
        assert_eq!(in_lmstudio(&lms, "qwen").map(|w| w.tokens), Some(4096));
        assert_eq!(server_kind(&json!({"id":"qwen","owned_by":"organization_owner"})), Kind::LmStudio);
        // A hosted provider's own field; OpenAI's entries say nothing.
        assert_eq!(in_list_entry(&json!({"id":"x","context_window":131072})).map(|w| w.source), Some("/v1/models"));
        assert_eq!(in_list_entry(&json!({"id":"gpt-4o","owned_by":"system"})), None);
        assert_eq!(server_kind(&json!({"id":"gpt-4o","owned_by":"system"})), Kind::Other);
        assert_eq!(server_root("http://h:1/v1/"), "http://h:1");
    }
}
