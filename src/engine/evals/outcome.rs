//! A prompt × model cell's outcome from its stored samples: whether it passed, its score,
//! cost and latency. The one place a cell is decided for run-against-run comparisons; it takes
//! the samples as a list so that repeated cells decide the same way.

use super::expect;
use serde::Serialize;
use serde_json::Value;

/// One stored answer of a cell, as far as its outcome needs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// `None` when the prompt has no checks.
    pub pass: Option<bool>,
    /// The checks' weighted score, 0 to 1 (`None`: no checks).
    pub score: Option<f64>,
    pub cost: Option<f64>,
    pub latency_ms: Option<u64>,
}

impl Sample {
    /// A sample from a stored cell: `checked` says the prompt has `expect`; `checks` are the
    /// cell's stored results (`None`: the cell failed before any check ran, which fails).
    #[must_use]
    pub fn of(checked: bool, checks: Option<&Value>, cost: Option<f64>, latency_ms: Option<u64>) -> Self {
        let list = checks.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        Self {
            pass: checked.then(|| expect::cell_passes(list)),
            score: checked.then(|| score(list).unwrap_or(0.0)),
            cost,
            latency_ms,
        }
    }
}

/// A cell's outcome over its samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Outcome {
    pub pass: Option<bool>,
    pub score: Option<f64>,
    /// Means over the samples that have one.
    pub cost: Option<f64>,
    pub latency_ms: Option<f64>,
}

/// Decides a cell from its samples (`None` with none): it passes as `rates::decided` says for
/// the line's `threshold` (every sample, without one); score, cost and latency are their means.
#[must_use]
pub fn decide(samples: &[Sample], threshold: Option<f64>) -> Option<Outcome> {
    if samples.is_empty() {
        return None;
    }
    let checked: Vec<bool> = samples.iter().filter_map(|s| s.pass).collect();
    #[allow(clippy::cast_precision_loss)]
    Some(Outcome {
        pass: (!checked.is_empty()).then(|| super::rates::decided(&checked, threshold.unwrap_or(1.0))),
        score: mean(samples.iter().filter_map(|s| s.score)),
        cost: mean(samples.iter().filter_map(|s| s.cost)),
        latency_ms: mean(samples.iter().filter_map(|s| s.latency_ms.map(|v| v as f64))),
    })
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

/// The weighted score of stored check results: each check's own score where it gave one (a
/// judge, a script, `tool_f1`; turned round when negated), else 1 for a pass and 0 for a fail.
/// Checks weighing 0 decide nothing and count for nothing.
#[must_use]
pub fn score(checks: &[Value]) -> Option<f64> {
    let (mut sum, mut weights) = (0.0, 0.0);
    for r in checks {
        let w = r.get("weight").and_then(Value::as_f64).unwrap_or(1.0);
        if w <= 0.0 {
            continue;
        }
        let pass = r.get("pass").and_then(Value::as_bool) == Some(true);
        let negated = r.get("kind").and_then(Value::as_str).is_some_and(|k| k.starts_with("not_"));
        let v = match r.get("score").and_then(Value::as_f64) {
            Some(s) if negated => 1.0 - s.clamp(0.0, 1.0),
            Some(s) => s.clamp(0.0, 1.0),
            None => f64::from(u8::from(pass)),
        };
        sum += w * v;
        weights += w;
    }
    (weights > 0.0).then(|| sum / weights)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_score_weighs_each_check() {
        let c = json!([{"kind": "contains", "pass": true}, {"kind": "judge", "pass": false, "score": 0.4, "weight": 3.0},
            {"kind": "regex", "pass": false, "weight": 0.0}]);
        let s = score(c.as_array().unwrap()).unwrap();
        assert!((s - (1.0 + 3.0 * 0.4) / 4.0).abs() < 1e-12, "{s}");
        let neg = json!([{"kind": "not_judge", "pass": true, "score": 0.2}]);
        assert!((score(neg.as_array().unwrap()).unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(score(&[]), None);
    }

    #[test]
    fn a_cell_is_decided_from_its_samples() {
        let pass = json!([{"kind": "contains", "pass": true}]);
        let fail = json!([{"kind": "contains", "pass": false}]);
        let one = Sample::of(true, Some(&pass), Some(0.01), Some(100));
        assert_eq!(
            decide(&[one], None),
            Some(Outcome { pass: Some(true), score: Some(1.0), cost: Some(0.01), latency_ms: Some(100.0) })
        );
        let two = decide(&[one, Sample::of(true, Some(&fail), None, Some(300))], None).unwrap();
        assert_eq!((two.pass, two.score, two.cost, two.latency_ms), (Some(false), Some(0.5), Some(0.01), Some(200.0)));
        // A cell that errored before its checks ran fails them, with score 0.
        let errored = decide(&[Sample::of(true, None, None, None)], None).unwrap();
        assert_eq!((errored.pass, errored.score), (Some(false), Some(0.0)));
        // No checks on the prompt: nothing to pass or fail.
        let free = decide(&[Sample::of(false, None, None, Some(5))], None).unwrap();
        assert_eq!((free.pass, free.score), (None, None));
        assert_eq!(decide(&[], None), None);
    }
}
