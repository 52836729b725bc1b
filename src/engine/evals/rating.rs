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
/// resamples of the votes, seeded so the same votes always give the same figures). Each game is
/// a battle of its own; see [`standings_by_battle`].
#[must_use]
pub fn standings(n: usize, games: &[Game], rounds: usize) -> Vec<Standing> {
    let battles: Vec<Vec<Game>> = games.iter().map(|g| vec![*g]).collect();
    standings_by_battle(n, &battles, rounds)
}

/// As [`standings`] over battles, each the games one vote decided (a vote among three models
/// decides two or three pairs). The bootstrap resamples battles, not games: the pairs of one
/// vote are one observation, so a battle of many models does not narrow the intervals. A
/// model's counts are per battle too: a win when it beat another, a loss when it lost to one.
#[must_use]
pub fn standings_by_battle(n: usize, battles: &[Vec<Game>], rounds: usize) -> Vec<Standing> {
    let all: Vec<Game> = battles.iter().flatten().copied().collect();
    let rating = fit(n, &all);
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); n];
    let mut rng = Rng::new(0x5EED ^ battles.len() as u64);
    if !battles.is_empty() {
        let mut sample = Vec::with_capacity(all.len());
        for _ in 0..rounds {
            sample.clear();
            for _ in 0..battles.len() {
                sample.extend_from_slice(&battles[rng.below(battles.len())]);
            }
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
            for battle in battles {
                count_battle(&mut s, i, battle);
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

/// What one battle counts for model `i`: nothing when it was not in it, else one win, loss,
/// tie or both-bad.
fn count_battle(s: &mut Standing, i: usize, battle: &[Game]) {
    let mine: Vec<&Game> = battle.iter().filter(|g| g.a == i || g.b == i).collect();
    if mine.is_empty() {
        return;
    }
    s.games += 1;
    let won = |g: &&Game| matches!((g.outcome, g.a == i), (Outcome::AWins, true) | (Outcome::BWins, false));
    let lost = |g: &&Game| matches!((g.outcome, g.a == i), (Outcome::AWins, false) | (Outcome::BWins, true));
    if mine.iter().any(won) {
        s.wins += 1;
    } else if mine.iter().any(lost) {
        s.losses += 1;
    } else if mine.iter().all(|g| g.outcome == Outcome::BothBad) {
        s.both_bad += 1;
    } else {
        s.ties += 1;
    }
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

    #[test]
    fn a_battle_of_three_counts_once_and_does_not_narrow_the_interval() {
        // Twenty battles of three: model 0 best in twelve (beating 1 and 2), 1 best in eight.
        let battle = |best: usize| -> Vec<Game> {
            (0..3).filter(|&o| o != best).map(|o| Game { a: best, b: o, outcome: Outcome::AWins }).collect()
        };
        let battles: Vec<Vec<Game>> = (0..20).map(|k| battle(if k % 5 < 3 { 0 } else { 1 })).collect();
        let by_battle = standings_by_battle(3, &battles, 300);
        assert_eq!((by_battle[0].games, by_battle[0].wins, by_battle[0].losses), (20, 12, 8));
        assert_eq!((by_battle[2].games, by_battle[2].wins, by_battle[2].losses), (20, 0, 20));
        // The same votes as forty separate pairs: counted twice, and the interval narrower.
        let pairs: Vec<Game> = battles.iter().flatten().copied().collect();
        let by_pair = standings(3, &pairs, 300);
        assert_eq!(by_pair[0].games, 32);
        let width = |s: &Standing| s.high - s.low;
        assert!(width(&by_battle[0]) > width(&by_pair[0]), "{by_battle:?} vs {by_pair:?}");
        assert!((by_battle[0].rating - by_pair[0].rating).abs() < 1e-9, "the same fit");
    }
}
