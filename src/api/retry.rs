//! When to retry a failed request (only before the first byte): 408, 409, 429 and 5xx, at
//! most `max` times, waiting what the server asked (`retry-after-ms`, `Retry-After` in seconds
//! or as an HTTP date) or backing off 0.5 s × 2ⁿ with jitter. A wait longer than the cap is
//! reported instead of slept (Azure asks for 86,400 s on a daily quota).

use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryDecision {
    RetryAfter(Duration),
    /// Do not retry; the note (if any) says why, for the user.
    GiveUp(Option<String>),
}

#[must_use]
pub fn decide_retry(
    status: u16,
    headers: &HeaderMap,
    message: &str,
    attempt: u32,
    max: u32,
    cap: Duration,
) -> RetryDecision {
    let retryable = matches!(status, 408 | 409 | 429) || status >= 500;
    if !retryable {
        return RetryDecision::GiveUp(None);
    }
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
    use reqwest::header::HeaderValue;

    #[test]
    fn honours_and_caps_retry_after() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("1"));
        let cap = Duration::from_secs(60);
        assert_eq!(decide_retry(429, &h, "", 0, 3, cap), RetryDecision::RetryAfter(Duration::from_secs(1)));
        assert!(matches!(decide_retry(429, &h, "", 3, 3, cap), RetryDecision::GiveUp(_)));
        assert_eq!(decide_retry(401, &h, "", 0, 3, cap), RetryDecision::GiveUp(None));
        let none = HeaderMap::new();
        let d = decide_retry(429, &none, "Please retry after 86400 seconds.", 0, 3, cap);
        assert!(matches!(d, RetryDecision::GiveUp(Some(ref n)) if n.contains("86400")));
        assert!(matches!(decide_retry(503, &none, "", 0, 3, cap), RetryDecision::RetryAfter(_)));
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
            let _ = decide_retry(429, &h, "", 0, 3, cap);
        }
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("inf"));
        assert!(matches!(decide_retry(429, &h, "", 0, 3, cap), RetryDecision::GiveUp(Some(_))));
        let huge = "Please retry after 99999999999999999999999999 seconds.";
        let _ = decide_retry(429, &HeaderMap::new(), huge, 0, 3, cap);
    }
}
