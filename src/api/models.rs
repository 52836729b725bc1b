//! `GET /models`: the provider's model list.

use super::client::Endpoint;
use super::wire::{compressed_coding, compressed_message, error_from_response};
use serde_json::Value;

/// Lists model ids, in the order the provider sent them.
///
/// # Errors
/// A readable message when the request fails or the provider answers with an error.
pub async fn list(ep: &Endpoint) -> Result<Vec<String>, String> {
    let http = super::client::endpoint_client(ep).map_err(|e| e.to_string())?;
    let req = ep.prepare(http.get(ep.url("models")).timeout(ep.timeouts.first_byte));
    let resp = req.send().await.map_err(|e| {
        let shown = super::redact::storable_url(&ep.base_url);
        format!("cannot reach {shown}: {}", e.to_string().replace(&ep.base_url, &shown))
    })?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.map_err(|e| e.to_string())?;
    if !(200..300).contains(&status) {
        let err = error_from_response(status, &headers, &bytes);
        return Err(format!("HTTP {status}: {}", err.message));
    }
    if let Some(coding) = compressed_coding(&headers) {
        return Err(compressed_message(&coding));
    }
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| format!("the model list is not JSON: {e}"))?;
    let data = v.get("data").or_else(|| v.get("models")).and_then(Value::as_array).cloned().unwrap_or_default();
    Ok(data
        .iter()
        .filter_map(|m| m.get("id").or_else(|| m.get("name")).and_then(Value::as_str).map(str::to_owned))
        .collect())
}
