//! Figures over a cell's repeated samples (`compare --repeat N`): how a cell is decided from
//! its samples, its pass rate with a Wilson interval, the unbiased pass@k and pass^k, a
//! sample's score, and a model's mean score with a bootstrap interval over prompts.

use super::stats::{Rng, percentile};
use serde::Serialize;

/// The pass rate a cell's samples must reach when its line gives no `threshold`: every
/// sample, so a run without repeats decides each cell as its one sample did.
pub const DEFAULT_THRESHOLD: f64 = 1.0;

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_985;

/// Bootstrap rounds of a model's mean score.
pub const BOOTSTRAP_ROUNDS: usize = 1000;

/// Whether a cell passes, from whether each of its samples passed: its pass rate is at least
/// `threshold` (0 to 1). A cell without samples does not pass. The one rule the summary,
/// `--min-pass`, JUnit, the exit status and run-against-run diffs decide cells by.
#[must_use]
pub fn decided(samples_passed: &[bool], threshold: f64) -> bool {
    let n = samples_passed.len();
    if n == 0 {
        return false;
    }
    let c = samples_passed.iter().filter(|p| **p).count();
    #[allow(clippy::cast_precision_loss)]
    let rate = c as f64 / n as f64;
    // A third of samples is 0.333…: a threshold written 0.33 or 1/3 must both be met by it.
    rate + 1e-9 >= threshold
}

/// A share and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// The 95% Wilson score interval of `c` passes out of `n` (`None` when `n` is 0): unlike the
/// normal approximation it stays inside 0–1 and is sound for the few samples a run repeats.
#[must_use]
pub fn wilson(c: u64, n: u64) -> Option<Estimate> {
    if n == 0 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let (c, n) = (c.min(n) as f64, n as f64);
    let p = c / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(Estimate { value: p, low: (center - half).max(0.0), high: (center + half).min(1.0) })
}

/// The unbiased pass@k from `n` samples with `c` passes: the chance that at least one of `k`
/// samples drawn without replacement passes, `1 − C(n−c, k) / C(n, k)`. `None` when `k` is 0
/// or more than `n`.
#[must_use]
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n {
        return None;
    }
    Some(1.0 - ratio(n - c.min(n), n, k))
}

/// The unbiased pass^k from `n` samples with `c` passes: the chance that all of `k` samples
/// drawn without replacement pass, `C(c, k) / C(n, k)`. `None` when `k` is 0 or more than `n`.
#[must_use]
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n {
        return None;
    }
    Some(ratio(c.min(n), n, k))
}

/// `C(a, k) / C(n, k)` as a product, so no factorial overflows: `∏ (a − i) / (n − i)`.
fn ratio(a: u64, n: u64, k: u64) -> f64 {
    if a < k {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)]
    (0..k).map(|i| (a - i) as f64 / (n - i) as f64).product()
}

/// The mean of `values` with a 95% percentile bootstrap interval: `rounds` resamplings with
/// replacement from a generator seeded by `seed`, so the same run always prints the same
/// interval. `None` when empty.
#[must_use]
pub fn bootstrap_mean(values: &[f64], rounds: usize, seed: u64) -> Option<Estimate> {
    if values.is_empty() {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let mean = |v: &mut dyn Iterator<Item = f64>, n: usize| v.sum::<f64>() / n as f64;
    let value = mean(&mut values.iter().copied(), values.len());
    let mut rng = Rng::new(seed);
    let mut means: Vec<f64> = (0..rounds)
        .map(|_| mean(&mut (0..values.len()).map(|_| values[rng.below(values.len())]), values.len()))
        .collect();
    let low = percentile(&mut means, 2.5).unwrap_or(value);
    let high = percentile(&mut means, 97.5).unwrap_or(value);
    Some(Estimate { value, low, high })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn wilson_matches_known_intervals() {
        let e = wilson(7, 10).unwrap();
        assert!(close(e.value, 0.7) && close(e.low, 0.396_8) && close(e.high, 0.892_2), "{e:?}");
        let all = wilson(5, 5).unwrap();
        assert!(close(all.low, 0.565_5) && close(all.high, 1.0), "{all:?}");
        let none = wilson(0, 5).unwrap();
        assert!(close(none.low, 0.0) && close(none.high, 0.434_5), "{none:?}");
        assert_eq!(wilson(0, 0), None);
    }

    /// pass@k and pass^k by listing every k-subset of the samples.
    fn brute(passes: &[bool], k: usize) -> (f64, f64) {
        let n = passes.len();
        let (mut any, mut all, mut subsets) = (0u32, 0u32, 0u32);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != k {
                continue;
            }
            subsets += 1;
            let picked: Vec<bool> = (0..n).filter(|i| mask & (1 << i) != 0).map(|i| passes[i]).collect();
            any += u32::from(picked.iter().any(|p| *p));
            all += u32::from(picked.iter().all(|p| *p));
        }
        (f64::from(any) / f64::from(subsets), f64::from(all) / f64::from(subsets))
    }

    #[test]
    fn pass_at_k_and_pass_hat_k_match_brute_force() {
        for n in 1..=7u64 {
            for c in 0..=n {
                let passes: Vec<bool> = (0..n).map(|i| i < c).collect();
                for k in 1..=n {
                    let (any, all) = brute(&passes, usize::try_from(k).unwrap());
                    assert!(close(pass_at_k(n, c, k).unwrap(), any), "pass@{k} n={n} c={c}");
                    assert!(close(pass_hat_k(n, c, k).unwrap(), all), "pass^{k} n={n} c={c}");
                }
            }
        }
        assert_eq!(pass_at_k(3, 1, 4), None);
        assert_eq!(pass_hat_k(3, 1, 0), None);
    }

    #[test]
    fn a_cell_is_decided_by_its_pass_rate_against_the_threshold() {
        assert!(decided(&[true], DEFAULT_THRESHOLD));
        assert!(!decided(&[false], DEFAULT_THRESHOLD));
        assert!(!decided(&[true, true, false], DEFAULT_THRESHOLD));
        assert!(decided(&[true, true, false], 0.66));
        assert!(decided(&[true, false, false], 1.0 / 3.0));
        assert!(!decided(&[true, false, false, false], 0.3));
        assert!(decided(&[false, false], 0.0));
        assert!(!decided(&[], 0.0), "no sample, no pass");
    }

    #[test]
    fn the_bootstrap_is_seeded_and_brackets_the_mean() {
        let v = [1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 0.25];
        let a = bootstrap_mean(&v, BOOTSTRAP_ROUNDS, 7).unwrap();
        assert_eq!(Some(a), bootstrap_mean(&v, BOOTSTRAP_ROUNDS, 7), "deterministic");
        assert!(close(a.value, 0.593_75));
        assert!(a.low < a.value && a.value < a.high && a.low >= 0.0 && a.high <= 1.0, "{a:?}");
        // The standard error of this mean is about 0.16: the interval is about ±0.3.
        assert!(a.high - a.low > 0.4 && a.high - a.low < 0.8, "{a:?}");
        let one = bootstrap_mean(&[0.5], 100, 1).unwrap();
        assert!(close(one.low, 0.5) && close(one.high, 0.5));
        assert_eq!(bootstrap_mean(&[], 100, 1), None);
    }
}
