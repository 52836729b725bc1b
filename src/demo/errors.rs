//! OpenAI-style error bodies and the HTTP error replies built from them.

use axum::Json;
use axum::http::{HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// OpenAI's wording for a transient server failure, used both as a 500 and mid-stream.
pub const SERVER_ERROR_MESSAGE: &str = "The server had an error while processing your request. Sorry about that!";

pub fn body(message: &str, kind: &str, param: Option<&str>, code: Option<&str>) -> Value {
    json!({ "error": { "message": message, "type": kind, "param": param, "code": code } })
}

pub fn server_error_body() -> Value {
    body(SERVER_ERROR_MESSAGE, "server_error", None, None)
}

pub fn server_error() -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, Json(server_error_body())).into_response()
}

pub fn bad_request(message: &str, param: Option<&str>) -> Response {
    let body = body(message, "invalid_request_error", param, None);
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

pub fn model_not_found(model: &str) -> Response {
    let message = format!("The model `{model}` does not exist");
    let body = body(&message, "invalid_request_error", Some("model"), Some("model_not_found"));
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

pub fn not_found(method: &str, path: &str) -> Response {
    let message = format!("Invalid URL ({method} {path})");
    let body = body(&message, "invalid_request_error", None, None);
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

/// A 429 exactly as OpenAI sends it, including the headers a client may use to back off.
pub fn rate_limited(model: &str) -> Response {
    let message = format!(
        "Rate limit reached for {model} in organization org-demo on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s. Visit https://platform.openai.com/account/rate-limits to learn more."
    );
    let body = body(&message, "requests", Some("requests"), Some("rate_limit_exceeded"));
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (header::RETRY_AFTER, "1"),
            (HeaderName::from_static("x-ratelimit-limit-requests"), "3"),
            (HeaderName::from_static("x-ratelimit-remaining-requests"), "0"),
            (HeaderName::from_static("x-ratelimit-reset-requests"), "1s"),
        ],
        Json(body),
    )
        .into_response()
}
