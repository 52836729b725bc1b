//! Figures over many cells: percentiles (linear between closest ranks, as numpy's default),
//! and a small deterministic random source for shuffles and bootstraps (reproducible runs and
//! tests matter more here than cryptographic quality).

/// The `p`-th percentile (0–100) of `values`, linear between closest ranks; `None` when empty.
/// Sorts `values` in place.
#[must_use]
pub fn percentile(values: &mut [f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    #[allow(clippy::cast_precision_loss)]
    let rank = (p.clamp(0.0, 100.0) / 100.0) * (values.len() - 1) as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let lo = rank.floor() as usize;
    let hi = (lo + 1).min(values.len() - 1);
    #[allow(clippy::cast_precision_loss)]
    let frac = rank - lo as f64;
    Some(values[lo] + (values[hi] - values[lo]) * frac)
}

/// SplitMix64: a tiny, fast, well-mixed generator.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Seeded from the clock and the process (for the arena's column order).
    #[must_use]
    pub fn from_time() -> Self {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        #[allow(clippy::cast_possible_truncation)]
        Self::new((t as u64) ^ (u64::from(std::process::id()) << 32))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        #[allow(clippy::cast_possible_truncation)]
        let v = (self.next_u64() % (n.max(1) as u64)) as usize;
        v
    }

    /// Shuffles in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let mut v = vec![4.0, 1.0, 3.0, 2.0];
        assert_eq!(percentile(&mut v, 50.0), Some(2.5));
        assert_eq!(percentile(&mut v, 0.0), Some(1.0));
        assert_eq!(percentile(&mut v, 100.0), Some(4.0));
        assert!((percentile(&mut v, 95.0).unwrap() - 3.85).abs() < 1e-9);
        assert_eq!(percentile(&mut [7.0], 95.0), Some(7.0));
        assert_eq!(percentile(&mut [], 50.0), None);
    }

    #[test]
    fn shuffles_are_permutations_and_reproducible() {
        let mut a: Vec<u32> = (0..10).collect();
        let mut b = a.clone();
        Rng::new(3).shuffle(&mut a);
        Rng::new(3).shuffle(&mut b);
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
    }
}
