//! `history show` of an arena: its columns grouped by battle, each labelled with the battle's
//! number, the column's letter and, once the vote was cast, the model and what the vote said of
//! it. A battle's columns are the conversations of the compare group made for it: the k-th
//! conversation of each column position (ids sort by time) belongs to battle k, stored as
//! `GROUP/k` (`app::compare::arena`).

use crate::store::ConversationSummary;
use crate::store::runs::{BattleRow, RunStore};
use std::path::Path;

/// The stored battles of compare `group` (none: not an arena, or nothing could be read).
#[must_use]
pub fn of_group(db: &Path, group: &str) -> Vec<BattleRow> {
    let prefix = format!("{group}/");
    let Ok(store) = RunStore::open_read_only(db) else { return Vec::new() };
    store.battles().unwrap_or_default().into_iter().filter(|b| b.id.starts_with(&prefix)).collect()
}

/// Each column's battle number (1 first), in the order `columns` came (by position, then id).
#[must_use]
pub fn numbers(columns: &[ConversationSummary]) -> Vec<usize> {
    let mut seen: Vec<(Option<u32>, usize)> = Vec::new();
    columns
        .iter()
        .map(|c| match seen.iter_mut().find(|(p, _)| *p == c.compare_column) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                seen.push((c.compare_column, 1));
                1
            }
        })
        .collect()
}

/// The rule over a column of battle `number`: its letter, and the model and its part in the
/// vote once cast (`battle` is `None` when no vote was stored: the names stay unsaid).
#[must_use]
pub fn label(number: usize, position: usize, model: &str, battle: Option<&BattleRow>) -> String {
    let letter = char::from(b'A' + u8::try_from(position.min(25)).unwrap_or(0));
    let Some(b) = battle else {
        return format!("battle {number} · {letter} · not voted");
    };
    let part = match (b.vote.as_str(), b.best()) {
        ("tie", _) => " (a tie)",
        (_, Some(w)) if w == position => " (voted best)",
        (_, Some(_)) => "",
        _ if b.models.len() > 2 => " (all bad)",
        _ => " (both bad)",
    };
    format!("battle {number} · {letter} · {model}{part}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::runs::BattleModel;

    fn col(position: u32, id: &str) -> ConversationSummary {
        ConversationSummary {
            id: id.into(),
            title: String::new(),
            model: None,
            provider: None,
            api: None,
            created_at: 0,
            updated_at: 0,
            messages: 0,
            active_branch: 0,
            compare_group: Some("g".into()),
            compare_column: Some(position),
        }
    }

    #[test]
    fn columns_are_numbered_by_battle_and_labelled_after_the_vote() {
        let cols = [col(0, "a1"), col(0, "a2"), col(1, "b1"), col(1, "b2")];
        assert_eq!(numbers(&cols), [1, 2, 1, 2]);
        let m = |n: &str| BattleModel { model: n.into(), provider: "p".into(), style: None };
        let b = BattleRow {
            id: "g/1".into(),
            created_at: 0,
            prompt: String::new(),
            models: vec![m("x"), m("y")],
            vote: "b".into(),
        };
        assert_eq!(label(1, 0, "x", Some(&b)), "battle 1 · A · x");
        assert_eq!(label(1, 1, "y", Some(&b)), "battle 1 · B · y (voted best)");
        assert_eq!(label(2, 1, "y", None), "battle 2 · B · not voted");
        let tie = BattleRow { vote: "tie".into(), ..b };
        assert_eq!(label(1, 0, "x", Some(&tie)), "battle 1 · A · x (a tie)");
    }
}
