//! When to retry a failed request (only before the first byte): only what can get better by
//! sending the same request again. 408 (the server timed out waiting), 409 (a conflict, e.g. a
//! lock, that passes), 429 (a rate limit) and 5xx are retried, at most `max` times, waiting what
//! the server asked (`retry-after-ms`, `Retry-After` in seconds or as an HTTP date) or backing
//! off 0.5 s × 2ⁿ with jitter. A wait longer than the cap is reported instead of slept (Azure
//! asks for 86,400 s on a daily quota).
//!
//! Not retried: every other 4xx (the request itself is wrong), 501 and 505 (the server does not
//! do this at all), a 429 for an exhausted quota, and a 5xx whose body says the request cannot
//! be served (a context overflow, an image for a model without vision: llama.cpp answers that
//! one with a 500). Those are shown at once, with what to do (`errors::what_to_do`).

use super::errors::{Problem, problem};
use super::event::ProviderError;
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryDecision {
    RetryAfter(Duration),
    /// Do not retry; the note (if any) says why, for the user.
    GiveUp(Option<String>),
}

/// Whether sending the same request again may get another answer than `status` with `err`.
#[must_use]
pub fn may_get_better(status: u16, err: &ProviderError) -> bool {
    let served_another_time = match problem(status, err) {
        // What the request holds, or the account's credit: the same request meets the same end.
        Some(Problem::ContextOverflow | Problem::NoVision | Problem::Quota | Problem::BadRequest) => false,
        Some(Problem::Auth | Problem::TooLarge) | None => true,
    };
    let transient = match status {
        408 | 409 | 429 => true,
        501 | 505 => false,
        500..=599 => true,
        _ => false,
    };
    transient && served_another_time
}

#[must_use]
pub fn decide_retry(
    status: u16,
    headers: &HeaderMap,
    err: &ProviderError,
    attempt: u32,
    max: u32,
    cap: Duration,
) -> RetryDecision {
    if !may_get_better(status, err) {
        return RetryDecision::GiveUp(None);
    }
    let message = err.message.as_str();
    if header(headers, "x-should-retry") == Some("false") {
        return RetryDecision::GiveUp(Some("the provider said not to retry".into()));
    }
    let asked = server_delay(headers).or_else(|| delay_in_message(message));
    if let Some(wait) = asked {
        if wait > cap {
            return RetryDecision::GiveUp(Some(format!(
                "the provider asks to retry after {} s; not waiting that long",
                wait.as_secs()
            )));
        }
    }
    if attempt >= max {
        return RetryDecision::GiveUp(Some(format!("gave up after {attempt} retries")));
    }
    RetryDecision::RetryAfter(asked.unwrap_or_else(|| backoff(attempt)))
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// Longest wait a header can ask for, however large its number: a day is already "not waiting
/// that long", and keeping the value finite and small keeps `Duration` from panicking.
const LONGEST_ASKED: f64 = 365.0 * 86_400.0;

/// Seconds as a `Duration` whatever the server wrote: negative and NaN are zero, `inf` and
/// `1e30` are a year (far past any cap, so reported rather than slept).
fn secs(v: f64) -> Duration {
    let v = if v.is_nan() { 0.0 } else { v.clamp(0.0, LONGEST_ASKED) };
    Duration::try_from_secs_f64(v).unwrap_or(Duration::ZERO)
}

fn server_delay(h: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = header(h, "retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(secs(ms / 1000.0));
    }
    let v = header(h, "retry-after")?;
    if let Ok(s) = v.parse::<f64>() {
        return Some(secs(s));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or_default())
}

/// Azure puts "Please retry after N seconds" in the message when no header says so.
fn delay_in_message(msg: &str) -> Option<Duration> {
    let i = msg.find("retry after ")?;
    let rest = &msg[i + "retry after ".len()..];
    let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let secs = n.parse::<u64>().ok()?;
    rest[n.len()..].trim_start().starts_with("second").then(|| Duration::from_secs(secs))
}

fn backoff(attempt: u32) -> Duration {
    let base = 0.5 * f64::from(1u32 << attempt.min(4));
    let jitter = 1.0 - 0.25 * (f64::from(std::process::id() % 100) / 100.0);
    Duration::from_secs_f64((base * jitter).min(8.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::wire::error_from_body;
    use reqwest::header::HeaderValue;

    fn said(message: &str) -> ProviderError {
        error_from_body(500, serde_json::json!({"error": {"message": message}}).to_string().as_bytes())
    }

    #[test]
    fn honours_and_caps_retry_after() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("1"));
        let cap = Duration::from_secs(60);
        assert_eq!(decide_retry(429, &h, &said(""), 0, 3, cap), RetryDecision::RetryAfter(Duration::from_secs(1)));
        assert!(matches!(decide_retry(429, &h, &said(""), 3, 3, cap), RetryDecision::GiveUp(_)));
        assert_eq!(decide_retry(401, &h, &said(""), 0, 3, cap), RetryDecision::GiveUp(None));
        let none = HeaderMap::new();
        let d = decide_retry(429, &none, &said("Please retry after 86400 seconds."), 0, 3, cap);
        assert!(matches!(d, RetryDecision::GiveUp(Some(ref n)) if n.contains("86400")));
        assert!(matches!(decide_retry(503, &none, &said(""), 0, 3, cap), RetryDecision::RetryAfter(_)));
    }

    /// What can get better by sending the same request again, by status and by what the body
    /// says: real bodies from llama.cpp (captured from its server, b11549), vLLM, OpenAI, Azure,
    /// LM Studio and Ollama.
    #[test]
    fn only_what_can_get_better_is_retried() {
        let llama_ctx = r#"{"error":{"code":400,"message":"request (2009 tokens) exceeds the available context size (512 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":2009,"n_ctx":512}}"#;
        let llama_img = r#"{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}"#;
        let openai_ctx = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let vllm_ctx = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":500}"#;
        let vllm_img = r#"{"object":"error","message":"facebook/opt-125m is not a multimodal model None","type":"BadRequestError","param":null,"code":400}"#;
        let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        let lmstudio_img = r#"{"error":"Model does not support images. Please use a model that does."}"#;
        let overloaded = r#"{"error":{"message":"The server is overloaded","type":"server_error"}}"#;
        let table: &[(u16, &str, bool)] = &[
            (500, llama_img, false),
            (503, llama_img, false),
            (400, llama_img, false),
            (400, llama_ctx, false),
            (500, llama_ctx, false),
            (500, vllm_ctx, false),
            (400, openai_ctx, false),
            (500, vllm_img, false),
            (500, lmstudio_img, false),
            (429, quota, false),
            (429, r#"{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}"#, true),
            (408, "", true),
            (409, r#"{"error":{"message":"conflict"}}"#, true),
            (500, overloaded, true),
            (502, "<html><body>Bad Gateway</body></html>", true),
            (503, "", true),
            (501, r#"{"error":{"message":"not implemented"}}"#, false),
            (505, "", false),
            (400, r#"{"error":{"message":"bad"}}"#, false),
            (401, r#"{"error":{"message":"Incorrect API key provided"}}"#, false),
            (403, "", false),
            (404, r#"{"error":{"message":"model not found"}}"#, false),
            (413, "", false),
            (422, r#"{"detail":"bad"}"#, false),
            // llama.cpp's own wording when a tool call's arguments are not JSON (checked with curl).
            (
                500,
                r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error","type":"server_error"}}"#,
                false,
            ),
        ];
        let cap = Duration::from_secs(60);
        for &(status, body, retried) in table {
            let err = error_from_body(status, body.as_bytes());
            assert_eq!(may_get_better(status, &err), retried, "{status} {body}");
            let d = decide_retry(status, &HeaderMap::new(), &err, 0, 3, cap);
            assert_eq!(matches!(d, RetryDecision::RetryAfter(_)), retried, "{status} {body}: {d:?}");
        }
    }

    /// Hostile numbers never panic: they are reported as too long (or read as zero).
    #[test]
    fn absurd_retry_after_values_do_not_panic() {
        let cap = Duration::from_secs(60);
        for (name, value) in [
            ("retry-after", "inf"),
            ("retry-after", "1e20"),
            ("retry-after", "-inf"),
            ("retry-after", "NaN"),
            ("retry-after", "-5"),
            ("retry-after-ms", "1e30"),
            ("retry-after-ms", "inf"),
            ("retry-after", "99999999999999999999999999"),
        ] {
            let mut h = HeaderMap::new();
            h.insert(name, HeaderValue::from_static(value));
            let _ = decide_retry(429, &h, &said(""), 0, 3, cap);
        }
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("inf"));
        assert!(matches!(decide_retry(429, &h, &said(""), 0, 3, cap), RetryDecision::GiveUp(Some(_))));
        let huge = "Please retry after 99999999999999999999999999 seconds.";
        let _ = decide_retry(429, &HeaderMap::new(), &said(huge), 0, 3, cap);
    }
}
