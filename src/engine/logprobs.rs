//! Token log probabilities of a reply (`--logprobs`, `/logprobs`): the shapes both APIs send
//! (Chat `{"content": [...]}` per chunk, Responses a list per delta) read into one list of
//! tokens, and what the usage panel and `--json` say of them (mean log probability, perplexity).

use serde::Serialize;
use serde_json::Value;

/// One alternative the model weighed for a token.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alternative {
    pub token: String,
    pub logprob: f64,
}

/// One token of the answer, with its log probability and the alternatives that were sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Token {
    pub token: String,
    pub logprob: f64,
    pub top: Vec<Alternative>,
}

impl Token {
    /// The probability, 0 … 1.
    #[must_use]
    pub fn prob(&self) -> f64 {
        self.logprob.exp().clamp(0.0, 1.0)
    }
}

/// The summary of an answer's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stats {
    pub tokens: usize,
    /// Mean log probability per token (natural log, ≤ 0).
    pub mean_logprob: f64,
    /// `exp(−mean)`: 1 is certain; higher is less sure.
    pub perplexity: f64,
}

/// Every token entry in `chunks` (each as the reducer kept it from one event), in order.
fn entries(chunks: &[Value]) -> impl Iterator<Item = &Value> {
    // Chat puts the list under `content`; Responses sends the list itself.
    chunks.iter().flat_map(|c| c.get("content").unwrap_or(c).as_array().into_iter().flatten())
}

/// The tokens in `chunks`, with their alternatives, in order.
#[must_use]
pub fn tokens(chunks: &[Value]) -> Vec<Token> {
    entries(chunks).filter_map(token).collect()
}

/// Each token's text and log probability, borrowed (what a heatmap lays out every frame).
#[must_use]
pub fn light(chunks: &[Value]) -> Vec<(&str, f64)> {
    entries(chunks).filter_map(|e| Some((e.get("token")?.as_str()?, e.get("logprob")?.as_f64()?))).collect()
}

/// Token `i` with its alternatives.
#[must_use]
pub fn token_at(chunks: &[Value], i: usize) -> Option<Token> {
    entries(chunks).filter_map(token).nth(i)
}

/// [`stats`] without building the tokens (the usage panel asks every frame).
#[must_use]
pub fn stats_of(chunks: &[Value]) -> Option<Stats> {
    let (n, sum) = entries(chunks)
        .filter_map(|e| e.get("token").and(e.get("logprob")?.as_f64()))
        .fold((0usize, 0.0), |(n, s), lp| (n + 1, s + lp));
    (n > 0).then(|| Stats { tokens: n, mean_logprob: sum / n as f64, perplexity: (-(sum / n as f64)).exp() })
}

fn token(e: &Value) -> Option<Token> {
    let token = e.get("token")?.as_str()?.to_owned();
    let logprob = e.get("logprob")?.as_f64()?;
    let top = e
        .get("top_logprobs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| {
            Some(Alternative { token: a.get("token")?.as_str()?.to_owned(), logprob: a.get("logprob")?.as_f64()? })
        })
        .collect();
    Some(Token { token, logprob, top })
}

/// Mean log probability and perplexity (`None` without tokens).
#[must_use]
pub fn stats(tokens: &[Token]) -> Option<Stats> {
    if tokens.is_empty() {
        return None;
    }
    let mean = tokens.iter().map(|t| t.logprob).sum::<f64>() / tokens.len() as f64;
    Some(Stats { tokens: tokens.len(), mean_logprob: mean, perplexity: (-mean).exp() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_shapes_read_into_one_list_with_stats() {
        let chat = json!({"content": [{"token": "Hi", "logprob": -0.5, "top_logprobs": [{"token": "Hi", "logprob": -0.5}, {"token": "Hello", "logprob": -1.2}]}], "refusal": null});
        let responses = json!([{"token": "!", "logprob": -1.5, "bytes": [33], "top_logprobs": []}]);
        let t = tokens(&[chat, responses, json!({"content": null})]);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].top[1], Alternative { token: "Hello".into(), logprob: -1.2 });
        let s = stats(&t).unwrap();
        assert!((s.mean_logprob + 1.0).abs() < 1e-9);
        assert!((s.perplexity - 1f64.exp()).abs() < 1e-9);
        assert!((t[1].prob() - (-1.5f64).exp()).abs() < 1e-12);
        assert_eq!(stats(&[]), None);
        let chunks = [json!({"content": [{"token": "a", "logprob": -1.0}]}), json!([{"token": "b", "logprob": -3.0}])];
        assert_eq!(light(&chunks), [("a", -1.0), ("b", -3.0)]);
        assert_eq!(stats_of(&chunks), stats(&tokens(&chunks)));
        assert_eq!(token_at(&chunks, 1).map(|t| t.token), Some("b".to_owned()));
    }
}
