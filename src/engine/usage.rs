//! A normalized view over the usage object a provider sent, for both APIs. The raw object is
//! the truth; this only reads it (Responses `input_tokens` are `prompt_tokens` here). The
//! server's own speed numbers (llama.cpp `timings`) ride on the same object; `ServerTimings`
//! reads them.

use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageView {
    pub prompt: Option<u64>,
    pub completion: Option<u64>,
    pub total: Option<u64>,
    pub cached: Option<u64>,
    /// Prompt tokens written to the provider's cache (OpenRouter's `cache_write_tokens`,
    /// Anthropic's `cache_creation_input_tokens`), priced as cache writes.
    pub cache_write: Option<u64>,
    pub reasoning: Option<u64>,
    pub accepted_prediction: Option<u64>,
    pub rejected_prediction: Option<u64>,
    pub prompt_audio: Option<u64>,
    pub completion_audio: Option<u64>,
}

impl UsageView {
    #[must_use]
    pub fn from_raw(u: &Value) -> Self {
        let num = |v: Option<&Value>| v.and_then(Value::as_u64);
        let pick = |keys: &[&str]| keys.iter().find_map(|k| num(u.get(*k)));
        let ptd = u.get("prompt_tokens_details").or_else(|| u.get("input_tokens_details"));
        let ctd = u.get("completion_tokens_details").or_else(|| u.get("output_tokens_details"));
        Self {
            prompt: pick(&["prompt_tokens", "input_tokens"]),
            completion: pick(&["completion_tokens", "output_tokens"]),
            total: pick(&["total_tokens"]),
            cached: num(ptd.and_then(|d| d.get("cached_tokens"))),
            cache_write: num(ptd.and_then(|d| d.get("cache_write_tokens")))
                .or_else(|| num(ptd.and_then(|d| d.get("cache_creation_tokens"))))
                .or_else(|| num(u.get("cache_creation_input_tokens"))),
            // Databricks (and Azure-hosted DeepSeek) put reasoning_tokens at the top level.
            reasoning: num(ctd.and_then(|d| d.get("reasoning_tokens"))).or_else(|| num(u.get("reasoning_tokens"))),
            accepted_prediction: num(ctd.and_then(|d| d.get("accepted_prediction_tokens"))),
            rejected_prediction: num(ctd.and_then(|d| d.get("rejected_prediction_tokens"))),
            prompt_audio: num(ptd.and_then(|d| d.get("audio_tokens"))),
            completion_audio: num(ctd.and_then(|d| d.get("audio_tokens"))),
        }
    }

    /// Whether the provider sent any token count (a usage value may hold only `timings`).
    #[must_use]
    pub fn has_counts(&self) -> bool {
        self.prompt.is_some() || self.completion.is_some() || self.total.is_some()
    }

    /// The `usage` object of the headless result line (DESIGN.md §2): the normalized numbers the
    /// provider sent, plus every other detail verbatim under `details`.
    #[must_use]
    pub fn result_json(raw: &Value) -> Value {
        let mut out = Self::from_raw(raw).counts_json();
        let top = ["prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens"];
        if let Some(obj) = raw.as_object() {
            let details: Map<String, Value> =
                obj.iter().filter(|(k, _)| !top.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
            if !details.is_empty() {
                out.insert("details".into(), Value::Object(details));
            }
        }
        Value::Object(out)
    }
}

/// How usage adds up, for a tool-loop turn and for a conversation: every count the providers
/// sent is summed; a count no reply carried stays absent rather than becoming zero.
impl UsageView {
    pub fn add(&mut self, other: &Self) {
        let sum = |a: &mut Option<u64>, b: Option<u64>| {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0).saturating_add(b));
            }
        };
        sum(&mut self.prompt, other.prompt);
        sum(&mut self.completion, other.completion);
        sum(&mut self.total, other.total);
        sum(&mut self.cached, other.cached);
        sum(&mut self.cache_write, other.cache_write);
        sum(&mut self.reasoning, other.reasoning);
        sum(&mut self.accepted_prediction, other.accepted_prediction);
        sum(&mut self.rejected_prediction, other.rejected_prediction);
        sum(&mut self.prompt_audio, other.prompt_audio);
        sum(&mut self.completion_audio, other.completion_audio);
    }

    /// The counts as the result line names them (`prompt_tokens`, …), absent ones left out.
    #[must_use]
    pub fn counts_json(&self) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, v) in [
            ("prompt_tokens", self.prompt),
            ("completion_tokens", self.completion),
            ("total_tokens", self.total),
            ("cached_tokens", self.cached),
            ("reasoning_tokens", self.reasoning),
        ] {
            if let Some(v) = v {
                out.insert(k.into(), Value::from(v));
            }
        }
        out
    }
}

/// The speeds a server measured itself (llama.cpp's `timings`, kept on the usage value): what
/// it spent on the prompt (tokens not served from its cache) and on generation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerTimings {
    pub prompt_n: Option<u64>,
    pub prompt_ms: Option<f64>,
    pub prompt_per_second: Option<f64>,
    /// Prompt tokens the server reused from its cache (not counted in `prompt_n`).
    pub cache_n: Option<u64>,
    pub predicted_n: Option<u64>,
    pub predicted_ms: Option<f64>,
    pub predicted_per_second: Option<f64>,
}

impl ServerTimings {
    /// The timings on a usage value, when the server sent any number there.
    #[must_use]
    pub fn from_usage(raw: &Value) -> Option<Self> {
        let t = raw.get("timings")?;
        let int = |k: &str| t.get(k).and_then(Value::as_u64);
        // Negative or non-finite values mean "not measured" (llama.cpp sends -1 for some).
        let real = |k: &str| t.get(k).and_then(Value::as_f64).filter(|v| v.is_finite() && *v >= 0.0);
        let s = Self {
            prompt_n: int("prompt_n"),
            prompt_ms: real("prompt_ms"),
            prompt_per_second: real("prompt_per_second"),
            cache_n: int("cache_n"),
            predicted_n: int("predicted_n"),
            predicted_ms: real("predicted_ms"),
            predicted_per_second: real("predicted_per_second"),
        };
        (s != Self::default()).then_some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn databricks_and_responses_shapes() {
        let v = UsageView::from_raw(
            &json!({"prompt_tokens":3,"completion_tokens":5,"total_tokens":8,"reasoning_tokens":2}),
        );
        assert_eq!(v.reasoning, Some(2));
        let v = UsageView::from_raw(
            &json!({"input_tokens":3,"output_tokens":5,"total_tokens":8,"input_tokens_details":{"cached_tokens":1},"output_tokens_details":{"reasoning_tokens":4}}),
        );
        assert_eq!((v.prompt, v.completion, v.cached, v.reasoning), (Some(3), Some(5), Some(1), Some(4)));
        let r = UsageView::result_json(
            &json!({"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_cache_hit_tokens":1}),
        );
        assert_eq!(r["details"]["prompt_cache_hit_tokens"], 1);
    }

    #[test]
    fn timings_only_usage_has_no_counts_and_keeps_the_timings_as_details() {
        let t = json!({"prompt_n":11,"prompt_ms":87.3,"prompt_per_second":126.0,"predicted_n":8,
            "predicted_ms":170.0,"predicted_per_second":41.2,"cache_n":0});
        let raw = json!({ "timings": t });
        assert!(!UsageView::from_raw(&raw).has_counts());
        assert_eq!(UsageView::result_json(&raw), json!({"details": {"timings": t}}));
        let s = ServerTimings::from_usage(&raw).unwrap_or_default();
        assert_eq!((s.prompt_n, s.predicted_n, s.cache_n), (Some(11), Some(8), Some(0)));
        assert_eq!(s.predicted_per_second, Some(41.2));
        let both = json!({"prompt_tokens":11,"completion_tokens":8,"total_tokens":19,"timings":t});
        assert!(UsageView::from_raw(&both).has_counts());
        assert_eq!(UsageView::result_json(&both)["details"], json!({"timings": t}));
        assert_eq!(ServerTimings::from_usage(&json!({"timings":{"prompt_per_second":-1}})), None);
        assert_eq!(ServerTimings::from_usage(&json!({"prompt_tokens":1})), None);
    }
}
