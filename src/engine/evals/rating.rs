//! Ratings from pairwise votes: Bradley–Terry strengths fitted with the MM algorithm (Hunter
//! 2004), shown on the Elo scale (400·log10, mean 1000), with 95% intervals from a bootstrap
//! over the votes. A tie (and "both bad") counts half a win to each side. Every model also
//! plays one virtual win and one virtual loss against a fixed reference, so a model that won
//! every vote gets a large finite rating instead of infinity.

use super::stats::{Rng, percentile};

/// The outcome of one vote between `a` and `b` (indices into the model list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    AWins,
    BWins,
    Tie,
    BothBad,
}

/// One vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Game {
    pub a: usize,
    pub b: usize,
    pub outcome: Outcome,
}

/// A model's standing.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub games: u64,
    pub wins: u64,
    pub losses: u64,
    pub ties: u64,
    pub both_bad: u64,
    /// (wins + ties/2) / games; `None` without games.
    pub win_rate: Option<f64>,
    pub rating: f64,
    /// 95% bootstrap interval of the rating.
    pub low: f64,
    pub high: f64,
}

/// The fitted strengths on the Elo scale, one per model.
#[must_use]
pub fn fit(n: usize, games: &[Game]) -> Vec<f64> {
    // w[i][j]: wins of i over j (ties half each).
    let mut w = vec![vec![0.0f64; n]; n];
    for g in games {
        if g.a >= n || g.b >= n || g.a == g.b {
            continue;
        }
        match g.outcome {
            Outcome::AWins => w[g.a][g.b] += 1.0,
            Outcome::BWins => w[g.b][g.a] += 1.0,
            Outcome::Tie | Outcome::BothBad => {
                w[g.a][g.b] += 0.5;
                w[g.b][g.a] += 0.5;
            }
        }
    }
    let mut p = vec![1.0f64; n];
    for _ in 0..500 {
        let mut next = vec![0.0f64; n];
        let mut change = 0.0f64;
        for i in 0..n {
            // The virtual reference (strength 1): one win and one loss against it.
            let wins: f64 = w[i].iter().sum::<f64>() + 1.0;
            let mut denom = 2.0 / (p[i] + 1.0);
            for j in 0..n {
                let games_ij = w[i][j] + w[j][i];
                if j != i && games_ij > 0.0 {
                    denom += games_ij / (p[i] + p[j]);
                }
            }
            next[i] = wins / denom;
            change = change.max((next[i] - p[i]).abs() / p[i]);
        }
        p = next;
        if change < 1e-9 {
            break;
        }
    }
    let elo: Vec<f64> = p.iter().map(|v| 400.0 * v.max(1e-12).log10()).collect();
    #[allow(clippy::cast_precision_loss)]
    let mean = if n == 0 { 0.0 } else { elo.iter().sum::<f64>() / n as f64 };
    elo.into_iter().map(|e| e - mean + 1000.0).collect()
}

/// Each model's standing: counts, win rate, rating and a bootstrap interval (`rounds`
/// resamples of the votes, seeded so the same votes always give the same figures).
#[must_use]
pub fn standings(n: usize, games: &[Game], rounds: usize) -> Vec<Standing> {
    let rating = fit(n, games);
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); n];
    let mut rng = Rng::new(0x5EED ^ games.len() as u64);
    if !games.is_empty() {
        let mut sample = Vec::with_capacity(games.len());
        for _ in 0..rounds {
            sample.clear();
            sample.extend((0..games.len()).map(|_| games[rng.below(games.len())]));
            for (i, r) in fit(n, &sample).into_iter().enumerate() {
                samples[i].push(r);
            }
        }
    }
    (0..n)
        .map(|i| {
            let mut s = Standing {
                games: 0,
                wins: 0,
                losses: 0,
                ties: 0,
                both_bad: 0,
                win_rate: None,
                rating: rating[i],
                low: rating[i],
                high: rating[i],
            };
            for g in games.iter().filter(|g| g.a == i || g.b == i) {
                s.games += 1;
                match (g.outcome, g.a == i) {
                    (Outcome::AWins, true) | (Outcome::BWins, false) => s.wins += 1,
                    (Outcome::AWins, false) | (Outcome::BWins, true) => s.losses += 1,
                    (Outcome::Tie, _) => s.ties += 1,
                    (Outcome::BothBad, _) => s.both_bad += 1,
                }
            }
            #[allow(clippy::cast_precision_loss)]
            if s.games > 0 {
                s.win_rate = Some((s.wins as f64 + (s.ties + s.both_bad) as f64 / 2.0) / s.games as f64);
            }
            if let (Some(lo), Some(hi)) = (percentile(&mut samples[i], 2.5), percentile(&mut samples[i], 97.5)) {
                (s.low, s.high) = (lo, hi);
            }
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn games(list: &[(usize, usize, Outcome)]) -> Vec<Game> {
        list.iter().map(|&(a, b, outcome)| Game { a, b, outcome }).collect()
    }

    #[test]
    fn the_stronger_model_rates_higher_and_ratings_centre_on_1000() {
        let mut g = Vec::new();
        for _ in 0..30 {
            g.push((0, 1, Outcome::AWins));
        }
        for _ in 0..10 {
            g.push((1, 0, Outcome::AWins));
        }
        let r = fit(2, &games(&g));
        assert!(r[0] > r[1]);
        assert!((r[0] + r[1] - 2000.0).abs() < 1e-6);
        // 3:1 odds are about 191 Elo points; the virtual games pull it in a little.
        assert!((150.0..200.0).contains(&(r[0] - r[1])), "{r:?}");
    }

    #[test]
    fn ties_are_even_and_unbeaten_models_stay_finite() {
        let r = fit(2, &games(&[(0, 1, Outcome::Tie), (0, 1, Outcome::BothBad)]));
        assert!((r[0] - r[1]).abs() < 1e-6);
        let r = fit(2, &games(&[(0, 1, Outcome::AWins); 5]));
        assert!(r[0].is_finite() && r[0] > r[1]);
    }

    #[test]
    fn standings_count_and_bracket_the_rating() {
        let g =
            games(&[(0, 1, Outcome::AWins), (1, 0, Outcome::Tie), (0, 2, Outcome::BWins), (2, 1, Outcome::BothBad)]);
        let s = standings(3, &g, 200);
        assert_eq!((s[0].games, s[0].wins, s[0].losses, s[0].ties), (3, 1, 1, 1));
        assert_eq!(s[1].both_bad, 1);
        assert_eq!(s[0].win_rate, Some(0.5));
        for x in &s {
            assert!(x.low <= x.rating + 1e-6 && x.rating <= x.high + 1e-6, "{x:?}");
        }
        assert_eq!(standings(3, &g, 200), s, "seeded: the same votes give the same figures");
    }
}
