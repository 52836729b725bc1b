//! Server-side speed numbers some servers add beside usage (llama.cpp's non-standard `timings`
//! object: prompt and generation token counts, milliseconds and tokens per second). They are
//! kept on the reply's usage value under `timings`, verbatim, so they reach the store, the usage
//! panel and the result line's `usage.details` with no plumbing of their own. A reply whose
//! server sent timings but no usage gets a usage value holding only `timings`.

use super::event::StreamEvent;
use serde_json::{Map, Value};

/// The key the timings are kept under on the usage value.
pub const KEY: &str = "timings";

/// What a stream has said so far about usage and timings. They may arrive in different chunks
/// (llama.cpp puts timings on the finish chunk and usage, when asked for, on a later one), and
/// the reducer keeps only the last `Usage` event, so every event carries both.
#[derive(Debug, Default)]
pub struct UsageAndTimings {
    usage: Option<Map<String, Value>>,
    timings: Option<Value>,
}

impl UsageAndTimings {
    /// Notes what one chunk carried and, when it carried either, emits the merged usage.
    /// Empty or non-object values mean nothing was sent.
    pub fn note(&mut self, usage: Option<&Value>, timings: Option<&Value>, out: &mut Vec<StreamEvent>) {
        let usage = usage.and_then(Value::as_object).filter(|m| !m.is_empty());
        let timings = timings.filter(|t| t.as_object().is_some_and(|m| !m.is_empty()));
        if usage.is_none() && timings.is_none() {
            return;
        }
        if let Some(u) = usage {
            self.usage = Some(u.clone());
        }
        if let Some(t) = timings {
            self.timings = Some(t.clone());
        }
        let mut merged = self.usage.clone().unwrap_or_default();
        if let Some(t) = &self.timings {
            merged.insert(KEY.to_owned(), t.clone());
        }
        out.push(StreamEvent::Usage(Value::Object(merged)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn usages(out: &[StreamEvent]) -> Vec<Value> {
        out.iter()
            .filter_map(|e| match e {
                StreamEvent::Usage(u) => Some(u.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn timings_and_usage_merge_whatever_the_order() {
        let t = json!({"prompt_n": 5, "predicted_per_second": 41.5});
        let u = json!({"prompt_tokens": 11, "completion_tokens": 8});
        let mut s = UsageAndTimings::default();
        let mut out = Vec::new();
        s.note(None, Some(&t), &mut out);
        s.note(Some(&u), None, &mut out);
        let got = usages(&out);
        assert_eq!(got[0], json!({"timings": t}));
        assert_eq!(got[1], json!({"prompt_tokens": 11, "completion_tokens": 8, "timings": t}));
        let mut s = UsageAndTimings::default();
        let mut out = Vec::new();
        s.note(Some(&u), None, &mut out);
        s.note(None, Some(&t), &mut out);
        assert_eq!(usages(&out)[1], got[1]);
    }

    #[test]
    fn nothing_sent_emits_nothing() {
        let mut s = UsageAndTimings::default();
        let mut out = Vec::new();
        s.note(Some(&json!({})), Some(&Value::Null), &mut out);
        s.note(Some(&Value::Null), Some(&json!({})), &mut out);
        s.note(None, None, &mut out);
        assert!(out.is_empty());
    }
}
