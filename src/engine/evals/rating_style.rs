//! Bradley–Terry ratings with style control, fitted as LMArena does: a logistic regression of
//! each vote's outcome on the difference of model indicators (+1 for A, −1 for B) plus the
//! differences in the answers' style (length, markdown headers, lists, bold), each a normalised
//! difference `(a − b) / (a + b)` standardised over the votes. The model coefficients are the
//! ratings once style is accounted for; the style coefficients say how much voters reward it.
//!
//! As in `rating.rs`, ties (and "both bad") count half a win each way, every model plays one
//! virtual win and one virtual loss against a fixed reference (a finite rating for a model that
//! won everything), ratings are on the Elo scale with mean 1000, and intervals come from a
//! seeded bootstrap over the votes. Fitted by Newton's method (a handful of parameters).

use super::rating::Outcome;
use super::stats::{Rng, percentile};
use super::style::{FEATURES, Style};

/// Style covariates.
pub const K: usize = FEATURES.len();

/// A vote with the style of both answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StyledGame {
    pub a: usize,
    pub b: usize,
    pub outcome: Outcome,
    pub style_a: Style,
    pub style_b: Style,
}

/// A fit: each model's rating with style held equal, and the style coefficients (log-odds per
/// standard deviation of the normalised difference; positive means voters prefer more of it).
#[derive(Debug, Clone, PartialEq)]
pub struct StyledFit {
    pub ratings: Vec<f64>,
    pub coefs: [f64; K],
}

/// A fit with 95% bootstrap intervals.
#[derive(Debug, Clone, PartialEq)]
pub struct StyledStandings {
    pub fit: StyledFit,
    pub low: Vec<f64>,
    pub high: Vec<f64>,
    pub coef_low: [f64; K],
    pub coef_high: [f64; K],
}

/// One row of the regression: `b` is `None` for a virtual game against the reference.
struct Row {
    a: usize,
    b: Option<usize>,
    style: [f64; K],
    y: f64,
    w: f64,
}

/// Elo points per unit of log-odds.
const ELO: f64 = 400.0 / std::f64::consts::LN_10;

/// The normalised style differences of each game, standardised over the games.
fn style_columns(games: &[StyledGame]) -> Vec<[f64; K]> {
    let mut d: Vec<[f64; K]> = games
        .iter()
        .map(|g| {
            let (a, b) = (g.style_a.values(), g.style_b.values());
            std::array::from_fn(|k| if a[k] + b[k] > 0.0 { (a[k] - b[k]) / (a[k] + b[k]) } else { 0.0 })
        })
        .collect();
    #[allow(clippy::cast_precision_loss)]
    let n = d.len().max(1) as f64;
    for k in 0..K {
        let mean = d.iter().map(|r| r[k]).sum::<f64>() / n;
        let sd = (d.iter().map(|r| (r[k] - mean).powi(2)).sum::<f64>() / n).sqrt();
        for r in &mut d {
            // A covariate that never varies explains nothing: its column is left at zero.
            r[k] = if sd > 1e-12 { (r[k] - mean) / sd } else { 0.0 };
        }
    }
    d
}

fn rows(n: usize, games: &[StyledGame]) -> Vec<Row> {
    let mut rows = Vec::with_capacity(games.len() * 2 + n * 2);
    for (g, style) in games.iter().zip(style_columns(games)) {
        if g.a >= n || g.b >= n || g.a == g.b {
            continue;
        }
        let row = |y: f64, w: f64| Row { a: g.a, b: Some(g.b), style, y, w };
        match g.outcome {
            Outcome::AWins => rows.push(row(1.0, 1.0)),
            Outcome::BWins => rows.push(row(0.0, 1.0)),
            Outcome::Tie | Outcome::BothBad => {
                rows.push(row(1.0, 0.5));
                rows.push(row(0.0, 0.5));
            }
        }
    }
    for i in 0..n {
        for y in [1.0, 0.0] {
            rows.push(Row { a: i, b: None, style: [0.0; K], y, w: 1.0 });
        }
    }
    rows
}

/// Whether the style columns can be told apart from the models: false when, over these
/// games, some style difference is a combination of the model indicators (each model always
/// answers in its own style, say). The fit would then trade rating for style freely, and
/// its figures would mean nothing.
#[must_use]
pub fn style_separable(n: usize, games: &[StyledGame]) -> bool {
    let rows = rows(n, games);
    let real: Vec<&Row> = rows.iter().filter(|r| r.b.is_some()).collect();
    let column = |r: &Row, j: usize| -> f64 {
        if j < n { f64::from(u8::from(r.a == j)) - f64::from(u8::from(r.b == Some(j))) } else { r.style[j - n] }
    };
    let varied: Vec<usize> = (0..K).filter(|&k| real.iter().any(|r| r.style[k] != 0.0)).map(|k| n + k).collect();
    let models: Vec<usize> = (0..n).collect();
    let all: Vec<usize> = models.iter().copied().chain(varied.iter().copied()).collect();
    let gram = |cols: &[usize]| -> Vec<Vec<f64>> {
        cols.iter()
            .map(|&i| cols.iter().map(|&j| real.iter().map(|r| column(r, i) * column(r, j)).sum()).collect())
            .collect()
    };
    rank(gram(&all)) == rank(gram(&models)) + varied.len()
}

/// The rank of a symmetric positive semi-definite matrix, by elimination with a tolerance
/// relative to its largest diagonal entry.
#[allow(clippy::needless_range_loop)] // row and column indices read as the algebra does
fn rank(mut a: Vec<Vec<f64>>) -> usize {
    let size = a.len();
    let scale = (0..size).map(|i| a[i][i].abs()).fold(0.0f64, f64::max);
    let tol = scale * 1e-9;
    let mut rank = 0;
    let mut used = vec![false; size];
    for c in 0..size {
        let Some(p) = (0..size).filter(|&r| !used[r]).max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs())) else {
            break;
        };
        if a[p][c].abs() <= tol {
            continue;
        }
        used[p] = true;
        rank += 1;
        for r in 0..size {
            if r != p {
                let f = a[r][c] / a[p][c];
                for k in c..size {
                    a[r][k] -= f * a[p][k];
                }
            }
        }
    }
    rank
}

/// The fit on `n` models.
#[must_use]
pub fn fit_styled(n: usize, games: &[StyledGame]) -> StyledFit {
    let rows = rows(n, games);
    let p = n + K;
    let mut theta = vec![0.0f64; p];
    for _ in 0..100 {
        let mut grad = vec![0.0f64; p];
        let mut hess = vec![vec![0.0f64; p]; p];
        for r in &rows {
            let mut x: Vec<(usize, f64)> = vec![(r.a, 1.0)];
            if let Some(b) = r.b {
                x.push((b, -1.0));
            }
            x.extend(r.style.iter().enumerate().filter(|(_, v)| **v != 0.0).map(|(k, v)| (n + k, *v)));
            let z: f64 = x.iter().map(|&(j, v)| theta[j] * v).sum();
            let prob = 1.0 / (1.0 + (-z).exp());
            for &(j, vj) in &x {
                grad[j] += r.w * (r.y - prob) * vj;
                for &(l, vl) in &x {
                    hess[j][l] += r.w * prob * (1.0 - prob) * vj * vl;
                }
            }
        }
        // A whisper of ridge keeps the system solvable when a covariate is all zeros.
        for (j, row) in hess.iter_mut().enumerate() {
            row[j] += 1e-9;
            grad[j] -= 1e-9 * theta[j];
        }
        let Some(step) = solve(hess, grad) else { break };
        let size = step.iter().fold(0.0f64, |m, s| m.max(s.abs()));
        for (t, s) in theta.iter_mut().zip(&step) {
            *t += s;
        }
        if size < 1e-10 {
            break;
        }
    }
    let elo: Vec<f64> = theta[..n].iter().map(|b| b * ELO).collect();
    #[allow(clippy::cast_precision_loss)]
    let mean = if n == 0 { 0.0 } else { elo.iter().sum::<f64>() / n as f64 };
    StyledFit {
        ratings: elo.into_iter().map(|e| e - mean + 1000.0).collect(),
        coefs: std::array::from_fn(|k| theta[n + k]),
    }
}

/// Solves `a·x = b` by Gaussian elimination with partial pivoting; `None` when singular.
#[allow(clippy::needless_range_loop)] // row and column indices read as the algebra does
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for c in 0..n {
        let pivot = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[pivot][c].abs() < 1e-300 {
            return None;
        }
        a.swap(c, pivot);
        b.swap(c, pivot);
        for r in c + 1..n {
            let f = a[r][c] / a[c][c];
            if f != 0.0 {
                for k in c..n {
                    a[r][k] -= f * a[c][k];
                }
                b[r] -= f * b[c];
            }
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

/// The fit and its 95% intervals from `rounds` bootstrap resamples of the votes, drawn from
/// `seed`: the same votes and seed always give the same figures. Each game is a battle of its
/// own; see [`styled_standings_by_battle`].
#[must_use]
pub fn styled_standings(n: usize, games: &[StyledGame], rounds: usize, seed: u64) -> StyledStandings {
    let battles: Vec<Vec<StyledGame>> = games.iter().map(|g| vec![*g]).collect();
    styled_standings_by_battle(n, &battles, rounds, seed)
}

/// As [`styled_standings`] over battles (the games one vote decided): the bootstrap resamples
/// battles, so a vote among several models is one observation, not one per pair.
#[must_use]
pub fn styled_standings_by_battle(n: usize, battles: &[Vec<StyledGame>], rounds: usize, seed: u64) -> StyledStandings {
    let games: Vec<StyledGame> = battles.iter().flatten().copied().collect();
    let fit = fit_styled(n, &games);
    let mut ratings: Vec<Vec<f64>> = (0..n).map(|_| Vec::with_capacity(rounds)).collect();
    let mut coefs: Vec<Vec<f64>> = (0..K).map(|_| Vec::with_capacity(rounds)).collect();
    let mut rng = Rng::new(seed);
    if !battles.is_empty() {
        let mut sample = Vec::with_capacity(games.len());
        for _ in 0..rounds {
            sample.clear();
            for _ in 0..battles.len() {
                sample.extend_from_slice(&battles[rng.below(battles.len())]);
            }
            let f = fit_styled(n, &sample);
            for (i, r) in f.ratings.into_iter().enumerate() {
                ratings[i].push(r);
            }
            for (k, c) in f.coefs.into_iter().enumerate() {
                coefs[k].push(c);
            }
        }
    }
    let bound = |v: &mut Vec<f64>, p: f64, at: f64| percentile(v, p).unwrap_or(at);
    let low = (0..n).map(|i| bound(&mut ratings[i], 2.5, fit.ratings[i])).collect();
    let high = (0..n).map(|i| bound(&mut ratings[i], 97.5, fit.ratings[i])).collect();
    let coef_low = std::array::from_fn(|k| bound(&mut coefs[k], 2.5, fit.coefs[k]));
    let coef_high = std::array::from_fn(|k| bound(&mut coefs[k], 97.5, fit.coefs[k]));
    StyledStandings { fit, low, high, coef_low, coef_high }
}

#[cfg(test)]
#[path = "rating_style_tests.rs"]
mod tests;
