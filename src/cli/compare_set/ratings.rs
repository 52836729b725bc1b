//! `compare stats`, the figures: each model's record and Bradley–Terry rating from the arena's
//! votes, raw and with style control (answer length, markdown headers, lists, bold held equal,
//! as LMArena does), each with a seeded bootstrap interval, and the style coefficients. Few
//! votes are said to be few rather than shown with precision they do not have.

use crate::engine::evals::rating::{Game, Standing};
use crate::engine::evals::rating_style::{K, StyledGame, StyledStandings, style_separable, styled_standings_by_battle};
use crate::engine::evals::style::{FEATURES, Style};
use crate::store::runs::BattleRow;
use crate::text::sanitize::sanitize;

/// Votes a model needs before its interval says much: with fewer, a bootstrap over a handful of
/// battles swings by hundreds of points and its ordering is mostly chance.
pub const MIN_VOTES: u64 = 10;

/// Votes with the answers' style needed before style control is fitted: it has four more
/// coefficients to estimate than the raw rating, and with fewer votes they are noise.
pub const MIN_STYLED_VOTES: usize = 30;

/// Bootstrap resamples behind the style-controlled intervals (each a Newton fit).
pub const STYLED_ROUNDS: usize = 200;

/// The seed of the style-controlled bootstrap: the same votes always give the same figures.
const SEED: u64 = 0x5717_1E5E;

/// The battles whose every answer's style is kept, as styled games between `names` (the
/// games of each battle as `actions::games` made them, in the same order).
#[must_use]
pub fn styled_games(names: &[String], battles: &[BattleRow], games: &[Vec<Game>]) -> Vec<Vec<StyledGame>> {
    battles
        .iter()
        .zip(games)
        .filter_map(|(b, gs)| {
            let style_of = |model: usize| -> Option<Style> {
                let name = names.get(model)?;
                b.models.iter().find(|m| format!("{}/{}", m.provider, m.model) == *name)?.style
            };
            gs.iter()
                .map(|g| {
                    Some(StyledGame {
                        a: g.a,
                        b: g.b,
                        outcome: g.outcome,
                        style_a: style_of(g.a)?,
                        style_b: style_of(g.b)?,
                    })
                })
                .collect()
        })
        .collect()
}

/// Style control over `styled` battles, or why it is not fitted: too few votes for it to mean
/// anything, or styles that cannot be told apart from the models.
///
/// # Errors
/// The line the table prints instead of the style coefficients.
pub fn style_control(n: usize, styled: &[Vec<StyledGame>]) -> Result<StyledStandings, String> {
    if styled.len() < MIN_STYLED_VOTES {
        return Err(format!(
            "styled: not fitted — {} vote{} carr{} the answers' style (votes from before palaver kept it \
             have none); style control needs {MIN_STYLED_VOTES}",
            styled.len(),
            if styled.len() == 1 { "" } else { "s" },
            if styled.len() == 1 { "ies" } else { "y" }
        ));
    }
    let games: Vec<StyledGame> = styled.iter().flatten().copied().collect();
    if !style_separable(n, &games) {
        return Err("styled: not fitted — in these votes the answers' style goes with the model (each model answers \
                    in its own style), so style cannot be told apart from the model; vote on varied prompts"
            .to_owned());
    }
    Ok(styled_standings_by_battle(n, styled, STYLED_ROUNDS, SEED ^ styled.len() as u64))
}

/// The standings table, best raw rating first, with the style-controlled columns beside (or a
/// dash, and a line saying why); then the style coefficients.
#[must_use]
pub fn table(names: &[String], s: &[Standing], styled: Result<&StyledStandings, &str>) -> String {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| s[b].rating.total_cmp(&s[a].rating));
    let w = names.iter().map(|n| sanitize(n).chars().count()).max().unwrap_or(5).max(5);
    let mut out = format!(
        "{:<w$}  {:>6}  {:>5}  {:>6}  {:>5}  {:>8}  {:>6}  {:>15}  {:>6}  {:>15}\n",
        "model", "votes", "wins", "losses", "ties", "win rate", "rating", "95% interval", "styled", "95% interval"
    );
    for i in order {
        let x = &s[i];
        let rate = x.win_rate.map_or_else(|| "-".into(), |r| format!("{:.0}%", r * 100.0));
        let few = if x.games < MIN_VOTES { " *" } else { "" };
        let (sr, si) = match styled {
            Ok(st) => (format!("{:.0}", st.fit.ratings[i]), format!("{:.0} – {:.0}{few}", st.low[i], st.high[i])),
            Err(_) => ("-".to_owned(), "-".to_owned()),
        };
        out.push_str(&format!(
            "{:<w$}  {:>6}  {:>5}  {:>6}  {:>5}  {:>8}  {:>6.0}  {:>15}  {:>6}  {:>15}\n",
            sanitize(&names[i]),
            x.games,
            x.wins,
            x.losses,
            x.ties + x.both_bad,
            rate,
            x.rating,
            format!("{:.0} – {:.0}{few}", x.low, x.high),
            sr,
            si
        ));
    }
    let few: Vec<String> =
        names.iter().zip(s).filter(|(_, x)| x.games < MIN_VOTES).map(|(n, _)| sanitize(n).into_owned()).collect();
    if !few.is_empty() {
        out.push_str(&format!(
            "* fewer than {MIN_VOTES} votes ({}): the interval is too wide to mean anything yet; keep voting\n",
            few.join(", ")
        ));
    }
    match styled {
        Ok(st) => out.push_str(&coefficients(st)),
        Err(why) => {
            out.push_str(why);
            out.push('\n');
        }
    }
    out
}

/// The style coefficients with their intervals, one line.
fn coefficients(st: &StyledStandings) -> String {
    let parts: Vec<String> = (0..K)
        .map(|k| {
            // A covariate that never varied in these votes has nothing to say: no figure for it.
            if [st.fit.coefs[k], st.coef_low[k], st.coef_high[k]].iter().all(|c| c.abs() < 1e-9) {
                return format!("{} – (never varied)", FEATURES[k]);
            }
            format!("{} {:+.2} ({:+.2} – {:+.2})", FEATURES[k], st.fit.coefs[k], st.coef_low[k], st.coef_high[k])
        })
        .collect();
    format!(
        "style coefficients (log-odds per SD of the normalised difference; > 0: voters prefer more): {}\n",
        parts.join(" · ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::evals::rating::{Outcome, standings, standings_by_battle};
    use crate::engine::evals::stats::Rng;
    use crate::store::runs::BattleModel;

    #[test]
    fn too_few_votes_are_said_to_be_too_few() {
        let names = vec!["alpha".to_owned(), "beta".to_owned()];
        let few: Vec<Game> = (0..3).map(|_| Game { a: 0, b: 1, outcome: Outcome::AWins }).collect();
        let why = style_control(2, &[]).err().unwrap_or_default();
        let why = why.replace("0 votes carry", "3 votes carry");
        let table = table(&names, &standings(2, &few, 50), Err(&why));
        assert!(table.contains("* fewer than 10 votes (alpha, beta)"), "{table}");
        assert!(table.contains("styled: not fitted — 3 votes carry the answers' style"), "{table}");
        let many: Vec<Game> = (0..24)
            .map(|i| Game { a: 0, b: 1, outcome: if i % 3 == 0 { Outcome::BWins } else { Outcome::AWins } })
            .collect();
        let t = super::table(&names, &standings(2, &many, 50), Err("styled: not fitted"));
        assert!(!t.contains('*'), "{t}");
    }

    /// 90 votes among three models where voters reward length and `long` writes long answers.
    fn planted() -> (Vec<String>, Vec<BattleRow>) {
        let names = ["long", "short", "plain"];
        let mut rng = Rng::new(11);
        let votes = (0..90)
            .map(|i| {
                let (a, b) = [(0, 1), (1, 2), (2, 0)][i % 3];
                let len = |m: usize, rng: &mut Rng| (if m == 0 { 500 } else { 150 } + rng.below(500)) as u64;
                let (la, lb) = (len(a, &mut rng), len(b, &mut rng));
                let winner = match (la > lb, rng.below(5)) {
                    (_, 0) => "tie",
                    (true, _) => "a",
                    (false, _) => "b",
                };
                let style = |t: u64, lists: u64| Some(Style { tokens: t, headers: 1, lists, bold: 2 });
                let model = |m: usize, style| BattleModel { model: names[m].into(), provider: "demo".into(), style };
                let (sa, sb) = (style(la, rng.below(4) as u64), style(lb, rng.below(4) as u64));
                BattleRow {
                    id: format!("g/{i}"),
                    created_at: 0,
                    prompt: String::new(),
                    models: vec![model(a, sa), model(b, sb)],
                    vote: winner.into(),
                }
            })
            .collect();
        (names.iter().map(|n| format!("demo/{n}")).collect(), votes)
    }

    #[test]
    fn stats_show_raw_and_style_controlled_ratings_and_the_coefficients() {
        let (_, votes) = planted();
        let (names, games) = super::super::actions::games(&votes);
        let styled = styled_games(&names, &votes, &games);
        assert_eq!(styled.len(), 90);
        let st = style_control(names.len(), &styled).unwrap_or_else(|e| panic!("{e}"));
        let raw = standings_by_battle(names.len(), &games, 200);
        let long = names.iter().position(|n| n == "demo/long").unwrap_or_else(|| panic!("{names:?}"));
        let mean_other = |r: &[f64]| (r.iter().sum::<f64>() - r[long]) / 2.0;
        let raw_r: Vec<f64> = raw.iter().map(|x| x.rating).collect();
        assert!(
            st.fit.ratings[long] - mean_other(&st.fit.ratings) < raw_r[long] - mean_other(&raw_r) - 50.0,
            "style control takes the length bonus off: {raw_r:?} → {:?}",
            st.fit.ratings
        );
        assert!(st.fit.coefs[0] > 0.0, "{:?}", st.fit.coefs);
        let out = table(&names, &raw, Ok(&st));
        assert!(out.contains("styled") && out.contains("style coefficients") && out.contains("length +"), "{out}");
        insta::assert_snapshot!(out);
    }

    #[test]
    fn a_style_that_goes_with_the_model_is_not_fitted() {
        // Each model always answers in its own style: style and model cannot be told apart.
        let fixed = |t: u64| Style { tokens: t, headers: 0, lists: 0, bold: 0 };
        let games: Vec<StyledGame> = (0..60)
            .map(|i| {
                let (a, b) = [(0, 1), (1, 2), (2, 0)][i % 3];
                let outcome = if i % 4 == 0 { Outcome::BWins } else { Outcome::AWins };
                StyledGame { a, b, outcome, style_a: fixed(100 * (a as u64 + 1)), style_b: fixed(100 * (b as u64 + 1)) }
            })
            .collect();
        let battles: Vec<Vec<StyledGame>> = games.into_iter().map(|g| vec![g]).collect();
        let why = style_control(3, &battles).err().unwrap_or_default();
        assert!(why.contains("cannot be told apart from the model"), "{why}");
        // The planted set varies within each model: it is fitted.
        let (_, votes) = planted();
        let (names, g) = super::super::actions::games(&votes);
        assert!(style_control(names.len(), &styled_games(&names, &votes, &g)).is_ok());
    }

    #[test]
    fn a_battle_of_three_is_one_vote_with_its_styles() {
        let style = |t: u64| Some(Style { tokens: t, headers: 0, lists: 0, bold: 0 });
        let m = |name: &str, t: u64| BattleModel { model: name.into(), provider: "p".into(), style: style(t) };
        let battle = BattleRow {
            id: "g/1".into(),
            created_at: 0,
            prompt: "hi".into(),
            models: vec![m("x", 10), m("y", 20), m("z", 30)],
            vote: "c".into(),
        };
        assert_eq!(battle.ranking(), [2, 2, 1]);
        let (names, games) = super::super::actions::games(std::slice::from_ref(&battle));
        assert_eq!(names, ["p/x", "p/y", "p/z"]);
        // z beat x and z beat y; x and y were not compared.
        assert_eq!(
            games,
            [vec![Game { a: 0, b: 2, outcome: Outcome::BWins }, Game { a: 1, b: 2, outcome: Outcome::BWins }]]
        );
        let styled = styled_games(&names, std::slice::from_ref(&battle), &games);
        assert_eq!(styled[0][1].style_a.tokens, 20);
        assert_eq!(styled[0][1].style_b.tokens, 30);
        let s = standings_by_battle(3, &games, 50);
        assert_eq!((s[2].games, s[2].wins, s[0].losses, s[1].losses), (1, 1, 1, 1));
    }
}
