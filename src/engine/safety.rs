//! Safety results: merging per-chunk `content_filter_results` into one view per choice.

use serde_json::{Map, Value};

const SEVERITIES: [&str; 4] = ["safe", "low", "medium", "high"];

/// Rank of a severity string (unknown values rank below `safe`).
#[must_use]
pub fn severity_rank(s: &str) -> Option<usize> {
    SEVERITIES.iter().position(|x| *x == s)
}

/// Merges one chunk's results into the accumulated map: per category, `filtered` and
/// `detected` are true if any chunk said so, `severity` is the highest seen; other fields
/// (citations, details, unknown categories) are kept as last sent.
pub fn merge_filter(acc: &mut Map<String, Value>, chunk: &Value) {
    let Some(chunk) = chunk.as_object() else { return };
    for (cat, v) in chunk {
        let Some(v) = v.as_object() else {
            acc.insert(cat.clone(), v.clone());
            continue;
        };
        let cur = acc.entry(cat.clone()).or_insert_with(|| Value::Object(Map::new()));
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Some(cur) = cur.as_object_mut() else { continue };
        for (k, val) in v {
            match (k.as_str(), val) {
                ("filtered" | "detected", Value::Bool(b)) => {
                    let was = cur.get(k).and_then(Value::as_bool).unwrap_or(false);
                    cur.insert(k.clone(), Value::Bool(was || *b));
                }
                ("severity", Value::String(s)) => {
                    let old = cur.get("severity").and_then(Value::as_str).and_then(severity_rank);
                    if severity_rank(s).is_some_and(|r| old.is_none_or(|o| r > o)) || old.is_none() {
                        cur.insert(k.clone(), val.clone());
                    }
                }
                _ => {
                    cur.insert(k.clone(), val.clone());
                }
            }
        }
    }
}

/// The categories merged filter results mark as filtered, each with its severity when sent
/// (`violence: high`): what a reply stopped by the filter names, on screen and headless alike.
#[must_use]
pub fn filtered_categories(results: Option<&Map<String, Value>>) -> Vec<String> {
    results
        .into_iter()
        .flatten()
        .filter(|(_, v)| v.get("filtered").and_then(Value::as_bool) == Some(true))
        .map(|(k, v)| match v.get("severity").and_then(Value::as_str) {
            Some(sev) => format!("{k}: {sev}"),
            None => k.clone(),
        })
        .collect()
}

/// Whether any category in a results map was filtered or detected.
#[must_use]
pub fn any_flagged(results: &Map<String, Value>) -> bool {
    results.values().any(|v| {
        v.get("filtered").and_then(Value::as_bool) == Some(true)
            || v.get("detected").and_then(Value::as_bool) == Some(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_ors_flags_and_keeps_highest() {
        let mut acc = Map::new();
        merge_filter(&mut acc, &json!({"violence":{"filtered":false,"severity":"medium"},"x":{"foo":1}}));
        merge_filter(
            &mut acc,
            &json!({"violence":{"filtered":true,"severity":"low"},"pmc":{"detected":true,"citation":{"URL":"u"}}}),
        );
        assert_eq!(acc["violence"], json!({"filtered":true,"severity":"medium"}));
        assert_eq!(acc["pmc"]["citation"]["URL"], "u");
        assert_eq!(acc["x"], json!({"foo":1}));
        assert!(any_flagged(&acc));
    }
}
