//! What palaver says when a server refuses or fails: an HTTP error status described with the
//! URL it came from and a hint (a 404 usually means the server does not offer that API, or the
//! base URL lacks its `/v1`), FastAPI-style `{"detail": …}` bodies turned into text, transport
//! failures by their root cause, and a complete 200 reply that holds no choices.

use super::Api;
use super::event::ProviderError;
use serde_json::Value;

/// Said of a non-streamed chat reply whose `choices` list is empty or missing: the server
/// answered, so this is not a stream that ended early.
pub const NO_CHOICES: &str = "the server answered with no choices (its response's `choices` list is empty)";

/// At most this many FastAPI validation errors are listed; the rest are counted.
const MAX_DETAILS: usize = 5;

/// The message for an HTTP error `status` from `url` (the endpoint of `api`), from the error
/// the body held.
#[must_use]
pub fn describe_http(status: u16, url: &str, api: Api, err: &ProviderError) -> String {
    if status != 404 {
        return err.message.clone();
    }
    if names_a_model(err) {
        // OpenAI, vLLM and Ollama answer 404 for an unknown model (Azure for an unknown
        // deployment): the API itself is there. Which names the server knows is one command away.
        return format!("{} ({url}); `palaver models` lists the models it offers", err.message);
    }
    let other = match api {
        Api::Chat => Api::Responses,
        Api::Responses => Api::Chat,
    };
    format!(
        "{url}: {}. The server may not offer the {} API: try --api {} (or check the base URL)",
        err.message.trim_end_matches('.'),
        title(api),
        other.name()
    )
}

fn title(api: Api) -> &'static str {
    match api {
        Api::Chat => "Chat Completions",
        Api::Responses => "Responses",
    }
}

fn names_a_model(err: &ProviderError) -> bool {
    matches!(err.code.as_deref(), Some("model_not_found" | "DeploymentNotFound"))
        || err.message.to_ascii_lowercase().contains("model")
}

/// FastAPI's `detail`: a string, an object, or a list of validation errors
/// `{loc: [...], msg, type}`, shown as `body.messages.0.content: Field required; …`.
#[must_use]
pub fn detail_text(detail: &Value) -> Option<String> {
    let text = match detail {
        Value::String(s) => s.trim().to_owned(),
        Value::Array(items) => {
            let mut parts: Vec<String> = items.iter().take(MAX_DETAILS).map(one_detail).collect();
            if items.len() > MAX_DETAILS {
                parts.push(format!("and {} more", items.len() - MAX_DETAILS));
            }
            parts.join("; ")
        }
        Value::Null => String::new(),
        other => one_detail(other),
    };
    (!text.is_empty()).then_some(text)
}

fn one_detail(item: &Value) -> String {
    let msg = item.get("msg").or_else(|| item.get("message")).and_then(Value::as_str);
    let Some(msg) = msg else {
        return match item {
            Value::String(s) => s.clone(),
            other => other.to_string().chars().take(300).collect(),
        };
    };
    let loc: Vec<String> = item
        .get("loc")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|part| match part {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    if loc.is_empty() { msg.to_owned() } else { format!("{}: {msg}", loc.join(".")) }
}

/// The error for a complete chat reply with no choices.
#[must_use]
pub fn no_choices(body: &Value) -> ProviderError {
    ProviderError {
        status: None,
        message: NO_CHOICES.to_owned(),
        kind: None,
        code: None,
        param: None,
        body: body.clone(),
    }
}

/// The innermost cause of an error chain: the part that says what actually happened.
#[must_use]
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &dyn std::error::Error = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// Whether a request failed because the pooled connection it went out on was already closed by
/// the server, before any answer: safe to send once more on a new connection.
#[must_use]
pub fn is_stale_connection(e: &reqwest::Error) -> bool {
    if e.is_connect() || e.is_timeout() || e.is_builder() || e.status().is_some() {
        return false;
    }
    let cause = root_cause(e).to_ascii_lowercase();
    ["connection closed before message completed", "connection reset", "broken pipe"].iter().any(|s| cause.contains(s))
}

/// A request that got no HTTP answer at all.
#[must_use]
pub fn describe_reqwest(e: &reqwest::Error, base_url: &str) -> String {
    // A password in the base URL (`http://user:pass@host`) is never part of a message.
    let shown = super::redact::storable_url(base_url);
    let cause = root_cause(e).replace(base_url, &shown);
    let base_url = shown.as_str();
    if e.is_builder() {
        return format!("{base_url} is not a usable base URL ({cause}); it should look like http://HOST:PORT/v1");
    }
    let mut out = if e.is_connect() {
        format!("could not connect to {base_url}: {cause}")
    } else {
        format!("the request to {base_url} failed: {cause}")
    };
    let lower = cause.to_ascii_lowercase();
    // rustls meeting a plain-HTTP server reads its answer as a corrupt TLS record, or waits for
    // a handshake that never comes (llama.cpp); local servers seldom speak TLS at all.
    let plain_http_likely = lower.contains("corrupt message")
        || lower.contains("invalidcontenttype")
        || (is_local(base_url) && (e.is_connect() || e.is_timeout()));
    if base_url.starts_with("https://") && plain_http_likely {
        out.push_str(" (is the server plain HTTP? try http://)");
    }
    out
}

fn is_local(url: &str) -> bool {
    let host = url.split("://").nth(1).unwrap_or(url);
    ["127.", "localhost", "[::1]", "0.0.0.0"].iter().any(|h| host.starts_with(h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::wire::{error_from_body, error_from_value};
    use serde_json::json;

    const URL: &str = "http://127.0.0.1:8080/v1/responses";

    #[test]
    fn a_404_names_the_url_and_suggests_the_other_api() {
        let e = error_from_body(404, br#"{"error":{"message":"File Not Found","type":"not_found_error","code":404}}"#);
        let m = describe_http(404, URL, Api::Responses, &e);
        assert_eq!(
            m,
            "http://127.0.0.1:8080/v1/responses: File Not Found. The server may not offer the Responses API: \
             try --api chat (or check the base URL)"
        );
        let e = error_from_body(404, b"<html><body><h1>404 Not Found</h1><hr>nginx</body></html>");
        let m = describe_http(404, "http://h/v1/chat/completions", Api::Chat, &e);
        assert!(m.starts_with("http://h/v1/chat/completions: 404 Not Found nginx."), "{m}");
        assert!(m.contains("Chat Completions API: try --api responses"), "{m}");
    }

    #[test]
    fn a_404_for_an_unknown_model_is_not_blamed_on_the_api() {
        let e = error_from_value(
            Some(404),
            &json!({"error":{"message":"The model `x` does not exist","code":"model_not_found"}}),
        );
        assert_eq!(
            describe_http(404, URL, Api::Responses, &e),
            format!("The model `x` does not exist ({URL}); `palaver models` lists the models it offers")
        );
        let e = error_from_body(400, br#"{"detail":"bad"}"#);
        assert_eq!(describe_http(400, URL, Api::Responses, &e), "bad");
    }

    #[test]
    fn fastapi_details_are_shown_with_their_location() {
        let body = json!({"detail":[
            {"loc":["body","messages",0,"content"],"msg":"Field required","type":"missing"},
            {"loc":["body","model"],"msg":"Input should be a valid string","type":"string_type"}]});
        let e = error_from_value(Some(422), &body);
        assert_eq!(e.message, "body.messages.0.content: Field required; body.model: Input should be a valid string");
        assert_eq!(error_from_value(Some(400), &json!({"detail":"Model not loaded"})).message, "Model not loaded");
        let many: Vec<Value> = (0..7).map(|i| json!({"loc":["body",i],"msg":"bad"})).collect();
        let t = detail_text(&Value::Array(many)).unwrap_or_default();
        assert!(t.ends_with("body.4: bad; and 2 more"), "{t}");
        assert_eq!(detail_text(&json!({"msg":"x"})).as_deref(), Some("x"));
        assert_eq!(detail_text(&json!("")), None);
    }
}
