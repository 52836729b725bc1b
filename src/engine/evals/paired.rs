//! Paired tests of one run against another over the same prompts: McNemar's exact test on
//! the pass/fail pairs, and a paired bootstrap on the per-prompt score differences. Pure
//! figures; `compare diff` pairs the cells and says what the figures mean.

use super::stats::{Rng, percentile};

/// The significance level a change must reach to count as one.
pub const ALPHA: f64 = 0.05;

/// Resamples behind a paired bootstrap.
pub const BOOTSTRAP_ROUNDS: usize = 10_000;

/// The bootstrap's seed: the same two runs always give the same interval and p-value.
pub const BOOTSTRAP_SEED: u64 = 0x5EED_D1FF;

/// McNemar's exact test: the two-sided binomial p-value (p = 0.5) of `b` pairs that went one
/// way against `c` that went the other. Exact at any size: no normal approximation, which is
/// wrong for the handful of discordant pairs a prompt set usually has.
#[must_use]
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    // Summed from logarithms: 0.5^n underflows once n passes about a thousand.
    #[allow(clippy::cast_precision_loss)]
    let ln_all = n as f64 * std::f64::consts::LN_2;
    let mut ln_choose = 0.0;
    let mut tail = 0.0;
    for i in 0..=b.min(c) {
        if i > 0 {
            #[allow(clippy::cast_precision_loss)]
            let step = ((n - i + 1) as f64).ln() - (i as f64).ln();
            ln_choose += step;
        }
        tail += (ln_choose - ln_all).exp();
    }
    (2.0 * tail).min(1.0)
}

/// A paired bootstrap of the mean of per-prompt differences (new − old).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Bootstrap {
    /// Pairs it was taken over.
    pub n: usize,
    pub mean: f64,
    /// The 95% percentile interval of the resampled means.
    pub low: f64,
    pub high: f64,
    /// Two-sided: how often a resampled mean fell on the other side of 0, doubled (with the
    /// usual +1 so a finite bootstrap never claims p = 0).
    pub p: f64,
}

/// The paired bootstrap of `diffs` (`None` when there are none), seeded so it is reproducible.
#[must_use]
pub fn paired_bootstrap(diffs: &[f64], rounds: usize, seed: u64) -> Option<Bootstrap> {
    if diffs.is_empty() || rounds == 0 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let len = diffs.len() as f64;
    let mean = diffs.iter().sum::<f64>() / len;
    let mut rng = Rng::new(seed);
    let mut means: Vec<f64> =
        (0..rounds).map(|_| (0..diffs.len()).map(|_| diffs[rng.below(diffs.len())]).sum::<f64>() / len).collect();
    // Sums of the same values in another order differ in the last bits: a tolerance keeps
    // "no change at all" from reading as a tiny one.
    let eps = 1e-12;
    let at_or_below = means.iter().filter(|m| **m <= eps).count();
    let at_or_above = means.iter().filter(|m| **m >= -eps).count();
    #[allow(clippy::cast_precision_loss)]
    let p = (2.0 * (at_or_below.min(at_or_above) + 1) as f64 / (rounds + 1) as f64).min(1.0);
    let low = percentile(&mut means, 2.5)?;
    let high = percentile(&mut means, 97.5)?;
    Some(Bootstrap { n: diffs.len(), mean, low, high, p })
}

/// A model's pass/fail pairs and score differences, tested.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Paired {
    /// Pairs that passed before and fail now (McNemar's b).
    pub newly_fail: u64,
    /// Pairs that failed before and pass now (McNemar's c).
    pub newly_pass: u64,
    /// McNemar's exact p-value; `None` with no pass/fail pair at all.
    pub mcnemar_p: Option<f64>,
    /// The score difference (new − old); `None` with no scored pair.
    pub score: Option<Bootstrap>,
}

impl Paired {
    /// Tests `pairs` of (old, new) pass/fail and `diffs` of score (new − old).
    #[must_use]
    pub fn test(pairs: impl IntoIterator<Item = (bool, bool)>, diffs: &[f64]) -> Self {
        let (mut b, mut c, mut any) = (0, 0, false);
        for (old, new) in pairs {
            any = true;
            b += u64::from(old && !new);
            c += u64::from(!old && new);
        }
        Self {
            newly_fail: b,
            newly_pass: c,
            mcnemar_p: any.then(|| mcnemar_exact(b, c)),
            score: paired_bootstrap(diffs, BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED),
        }
    }

    /// Significantly worse: more new failures than new passes at p < [`ALPHA`], or a score
    /// whose whole interval lies below 0.
    #[must_use]
    pub fn worse(&self) -> bool {
        self.mcnemar_p.is_some_and(|p| p < ALPHA && self.newly_fail > self.newly_pass)
            || self.score.is_some_and(|s| s.high < 0.0)
    }

    /// Significantly better: the mirror of [`Paired::worse`].
    #[must_use]
    pub fn better(&self) -> bool {
        !self.worse()
            && (self.mcnemar_p.is_some_and(|p| p < ALPHA && self.newly_pass > self.newly_fail)
                || self.score.is_some_and(|s| s.low > 0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcnemar_matches_the_binomial_tables() {
        // 2 · P(X ≤ 2), X ~ Bin(12, 0.5) = 2 · 79/4096.
        assert!((mcnemar_exact(10, 2) - 0.038_574_2).abs() < 1e-6);
        assert!((mcnemar_exact(2, 10) - mcnemar_exact(10, 2)).abs() < 1e-15, "two-sided: symmetric");
        assert!((mcnemar_exact(8, 0) - 2.0 / 256.0).abs() < 1e-12);
        assert!((mcnemar_exact(5, 0) - 0.0625).abs() < 1e-12);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert_eq!(mcnemar_exact(7, 7), 1.0);
        assert_eq!(mcnemar_exact(1, 0), 1.0);
        // Large counts stay finite and tiny where they should be.
        let p = mcnemar_exact(2000, 1000);
        assert!(p > 0.0 && p < 1e-40, "{p}");
        assert!((mcnemar_exact(1500, 1500) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn the_bootstrap_is_seeded_and_brackets_the_mean() {
        let diffs: Vec<f64> = (0..30).map(|i| if i % 3 == 0 { -1.0 } else { 0.2 }).collect();
        let a = paired_bootstrap(&diffs, 2000, 7).unwrap();
        assert_eq!(Some(a), paired_bootstrap(&diffs, 2000, 7), "same seed, same figures");
        assert!(a.low <= a.mean && a.mean <= a.high, "{a:?}");
        assert!((a.mean - (-10.0 + 4.0) / 30.0).abs() < 1e-12);
        assert_eq!(paired_bootstrap(&[], 100, 1), None);
    }

    #[test]
    fn no_change_has_p_one_and_a_clear_drop_a_small_p() {
        let same = paired_bootstrap(&[0.0; 12], 1000, 1).unwrap();
        assert_eq!((same.low, same.high, same.p), (0.0, 0.0, 1.0));
        let drop: Vec<f64> = [-1.0; 8].iter().chain(&[0.0; 4]).copied().collect();
        let d = paired_bootstrap(&drop, 5000, 3).unwrap();
        assert!(d.high < 0.0 && d.p < 0.01, "{d:?}");
        // One broken prompt of twelve: the interval reaches 0, the drop is not significant.
        let one: Vec<f64> = std::iter::once(-1.0).chain([0.0; 11]).collect();
        let o = paired_bootstrap(&one, 5000, 3).unwrap();
        assert!(o.high >= 0.0 && o.p > ALPHA, "{o:?}");
    }

    #[test]
    fn worse_needs_significance_and_direction() {
        let t = Paired::test([(true, false); 8].into_iter().chain([(true, true); 4]), &[]);
        assert_eq!((t.newly_fail, t.newly_pass), (8, 0));
        assert!(t.worse() && !t.better());
        let back = Paired::test([(false, true); 8], &[]);
        assert!(back.better() && !back.worse());
        let one = Paired::test([(true, false)].into_iter().chain([(true, true); 11]), &[]);
        assert!(!one.worse() && !one.better(), "{one:?}");
        let none = Paired::test(std::iter::empty(), &[]);
        assert_eq!((none.mcnemar_p, none.worse()), (None, false));
        // Pass/fail unchanged, but every score fell: worse by the bootstrap.
        let scores = Paired::test([(true, true); 10], &[-0.3; 10]);
        assert!(scores.worse(), "{scores:?}");
    }
}
