//! Token log probabilities for the demo's answers, when a request asks for them: each streamed
//! piece is one token, its log probability derived from its text and place (the same answer
//! always gets the same numbers), with `top` alternatives in the shape both APIs use.

use serde_json::{Value, json};

/// Words the alternatives are drawn from.
const ALTERNATIVES: &[&str] = &[" the", " a", ",", " and", " is", "\n", " to", " of", ".", " it", " that", " in"];

/// The entry for token `text` at position `index`, with `top` alternatives (itself among them).
#[must_use]
pub fn entry(text: &str, index: usize, top: u32) -> Value {
    let lp = logprob(text, index);
    let p = lp.exp();
    let mut tops = vec![(text.to_owned(), lp)];
    let mut rest = 1.0 - p;
    for alt in ALTERNATIVES.iter().cycle().skip(index % ALTERNATIVES.len()).filter(|a| **a != text) {
        if tops.len() >= top as usize {
            break;
        }
        // Each alternative takes about half of what probability is left.
        rest /= 2.0;
        tops.push(((*alt).to_owned(), round(rest.max(1e-9).ln())));
    }
    tops.truncate(top as usize);
    tops.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top_logprobs: Vec<Value> =
        tops.iter().map(|(t, l)| json!({"token": t, "logprob": l, "bytes": t.as_bytes()})).collect();
    json!({"token": text, "logprob": lp, "bytes": text.as_bytes(), "top_logprobs": top_logprobs})
}

/// Every entry of an answer streamed as `pieces`.
#[must_use]
pub fn entries<'a>(pieces: impl IntoIterator<Item = &'a str>, top: u32) -> Vec<Value> {
    pieces.into_iter().enumerate().map(|(i, t)| entry(t, i, top)).collect()
}

/// Mostly sure, now and then not: a hash, to the fourth power, spread over 0 … −3.
fn logprob(text: &str, index: usize) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ index as u64;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let x = (h % 1000) as f64 / 1000.0;
    round(-3.0 * x * x * x * x)
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_deterministic_probabilities_with_their_alternatives() {
        let e = entry("Hello", 3, 5);
        assert_eq!(e, entry("Hello", 3, 5));
        let lp = e["logprob"].as_f64().unwrap();
        assert!((-3.0..=0.0).contains(&lp));
        let tops = e["top_logprobs"].as_array().unwrap();
        assert_eq!(tops.len(), 5);
        assert!(tops.iter().any(|t| t["token"] == "Hello" && t["logprob"] == lp));
        let sum: f64 = tops.iter().map(|t| t["logprob"].as_f64().unwrap().exp()).sum();
        assert!(sum <= 1.0001, "{sum}");
        assert!(tops.windows(2).all(|w| w[0]["logprob"].as_f64() >= w[1]["logprob"].as_f64()));
        assert_eq!(e["bytes"], json!([72, 101, 108, 108, 111]));
        assert!(entry("x", 0, 0)["top_logprobs"].as_array().unwrap().is_empty());
    }
}
