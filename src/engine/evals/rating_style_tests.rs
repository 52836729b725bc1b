//! The style-controlled fit on planted data: a length bias the ratings must see through.

use super::*;
use crate::engine::evals::rating::fit;

fn style(tokens: u64) -> Style {
    Style { tokens, headers: 0, lists: 0, bold: 0 }
}

/// Three equally good models; model 0 writes longer answers, and voters prefer the longer
/// answer (log-odds 3 per unit of normalised length difference), whoever wrote it.
fn length_biased(games: usize, seed: u64) -> Vec<StyledGame> {
    let mut rng = Rng::new(seed);
    let len = |m: usize, rng: &mut Rng| (if m == 0 { 400 } else { 100 } + rng.below(800)) as u64;
    (0..games)
        .map(|i| {
            let (a, b) = [(0, 1), (1, 2), (2, 0)][i % 3];
            let (la, lb) = (len(a, &mut rng), len(b, &mut rng));
            #[allow(clippy::cast_precision_loss)]
            let d = (la as f64 - lb as f64) / (la + lb) as f64;
            let p = 1.0 / (1.0 + (-3.0 * d).exp());
            #[allow(clippy::cast_precision_loss)]
            let u = rng.below(1_000_000) as f64 / 1e6;
            let outcome = if u < p { Outcome::AWins } else { Outcome::BWins };
            StyledGame { a, b, outcome, style_a: style(la), style_b: style(lb) }
        })
        .collect()
}

#[test]
fn style_control_takes_a_planted_length_bias_out_of_the_ratings() {
    let g = length_biased(3000, 7);
    let plain: Vec<_> =
        g.iter().map(|x| crate::engine::evals::rating::Game { a: x.a, b: x.b, outcome: x.outcome }).collect();
    let raw = fit(3, &plain);
    let styled = fit_styled(3, &g);
    let gap = |r: &[f64]| r[0] - (r[1] + r[2]) / 2.0;
    assert!(gap(&raw) > 60.0, "raw ratings reward the long answers: {raw:?}");
    assert!(gap(&styled.ratings).abs() < 25.0, "style control evens them: {styled:?}");
    assert!(gap(&styled.ratings) < gap(&raw) - 50.0, "{raw:?} → {styled:?}");
    assert!(styled.coefs[0] > 0.5, "length is rewarded: {:?}", styled.coefs);
    for k in 1..K {
        assert!(styled.coefs[k].abs() < 1e-6, "markdown never varied: {:?}", styled.coefs);
    }
}

#[test]
fn without_style_differences_the_fit_is_plain_bradley_terry() {
    let outcomes = [Outcome::AWins, Outcome::BWins, Outcome::AWins, Outcome::Tie, Outcome::AWins, Outcome::BothBad];
    let g: Vec<StyledGame> = (0..60)
        .map(|i| {
            let (a, b) = [(0, 1), (1, 2), (0, 2)][i % 3];
            StyledGame { a, b, outcome: outcomes[i % outcomes.len()], style_a: style(50), style_b: style(50) }
        })
        .collect();
    let plain: Vec<_> =
        g.iter().map(|x| crate::engine::evals::rating::Game { a: x.a, b: x.b, outcome: x.outcome }).collect();
    let raw = fit(3, &plain);
    let styled = fit_styled(3, &g);
    for (r, s) in raw.iter().zip(&styled.ratings) {
        assert!((r - s).abs() < 1e-3, "{raw:?} vs {styled:?}");
    }
    let unbeaten = [StyledGame { a: 0, b: 1, outcome: Outcome::AWins, style_a: style(9), style_b: style(3) }; 5];
    let f = fit_styled(2, &unbeaten);
    assert!(f.ratings.iter().all(|r| r.is_finite()) && f.ratings[0] > f.ratings[1], "{f:?}");
}

#[test]
fn the_bootstrap_is_seeded_and_brackets_the_fit() {
    let g = length_biased(300, 3);
    let a = styled_standings(3, &g, 60, 42);
    assert_eq!(a, styled_standings(3, &g, 60, 42), "same votes, same seed: same figures");
    assert_ne!(a.low, styled_standings(3, &g, 60, 43).low, "the seed draws the resamples");
    for i in 0..3 {
        assert!(a.low[i] <= a.fit.ratings[i] + 1e-6 && a.fit.ratings[i] <= a.high[i] + 1e-6, "{a:?}");
        assert!(a.high[i] - a.low[i] > 1.0, "a real interval: {a:?}");
    }
    assert!(a.coef_low[0] > 0.0, "length's whole interval is above zero: {a:?}");
    let empty = styled_standings(2, &[], 10, 1);
    assert_eq!(empty.low, empty.fit.ratings);
}
