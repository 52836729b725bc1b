//! `GET /models`: the provider's model list, read under two named limits (`model_list_bytes`
//! for the body, `model_list_entries` for the models in it): an endless or huge body is cut
//! where it passes the first, never held whole.

use super::client::Endpoint;
use super::limits::Limits;
use super::wire::{compressed_coding, compressed_message, error_from_response};
use serde_json::Value;

/// Lists model ids, in the order the provider sent them.
///
/// # Errors
/// A readable message when the request fails, the provider answers with an error, or the list
/// passes a limit.
pub async fn list(ep: &Endpoint) -> Result<Vec<String>, String> {
    let http = super::client::endpoint_client(ep).map_err(|e| e.to_string())?;
    let req = ep.prepare(http.get(ep.url("models")).timeout(ep.timeouts.first_byte));
    // The chat's own wording ("could not connect to …"), without a password of the URL.
    let resp = req.send().await.map_err(|e| super::errors::describe_reqwest(&e, &ep.base_url))?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let budget = Limits::budget("model_list_bytes", ep.limits.model_list_bytes);
    // Chunk by chunk, so a body that never ends costs at most the limit (and one chunk).
    let bytes = crate::sys::read::body(resp, budget).await.map_err(|e| e.about("the model list is too large"))?;
    if !(200..300).contains(&status) {
        let err = error_from_response(status, &headers, &bytes);
        return Err(format!("HTTP {status}: {}", err.message));
    }
    if let Some(coding) = compressed_coding(&headers) {
        return Err(compressed_message(&coding));
    }
    parse(&bytes, &ep.limits)
}

/// The ids in a model list body (`data` or `models`, each with `id` or `name`).
fn parse(bytes: &[u8], limits: &Limits) -> Result<Vec<String>, String> {
    if super::limits::json_deeper_than(bytes, limits.json_depth) {
        return Err(Limits::refused("json_depth", "the model list is nested too deeply", limits.json_depth));
    }
    let mut v: Value = serde_json::from_slice(bytes).map_err(|e| format!("the model list is not JSON: {e}"))?;
    let data = match v.get_mut("data").filter(|d| d.is_array()) {
        Some(d) => d.take(),
        None => v.get_mut("models").map(Value::take).unwrap_or_default(),
    };
    let Value::Array(data) = data else { return Ok(Vec::new()) };
    if data.len() > limits.model_list_entries {
        let what = format!("the model list has {} models", data.len());
        return Err(Limits::refused("model_list_entries", &what, limits.model_list_entries));
    }
    Ok(data
        .iter()
        .filter_map(|m| m.get("id").or_else(|| m.get("name")).and_then(Value::as_str).map(str::to_owned))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_order_under_the_count_limit() {
        let l = Limits::default();
        let ids = parse(br#"{"data":[{"id":"b"},{"id":"a"},{"x":1}]}"#, &l).unwrap();
        assert_eq!(ids, ["b", "a"]);
        assert_eq!(parse(br#"{"models":[{"name":"m"}]}"#, &l).unwrap(), ["m"]);
        let small = Limits { model_list_entries: 2, ..l };
        let e = parse(br#"{"data":[{"id":"a"},{"id":"b"},{"id":"c"}]}"#, &small).unwrap_err();
        assert!(e.contains("has 3 models") && e.contains("model_list_entries = 2") && e.contains("limits = {"), "{e}");
        assert!(parse(br#"{"data":[{"id":"a"},{"id":"b"}]}"#, &small).is_ok());
        assert!(parse(&[b'['; 200], &l).unwrap_err().contains("json_depth"));
    }
}
