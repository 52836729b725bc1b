//! The blind arena: a compare of two to four models shown as A, B, … in random order. Once all
//! have answered, a vote bar comes up (A better · B better · … · tie · both/all bad); the keys
//! stay on the composer, so text typed then is a follow-up for all. Reasoning blocks stay
//! hidden until the vote (a reasoning model would give itself away; `ui::compare::columns`). A vote is deliberate: Tab to the bar,
//! an option highlighted with the arrows (or its letter) and Enter right after (`vote.rs`).
//! Then the names are shown and the battle is stored, once, with its ranking: the vote is final
//! (a vote cast with the names in sight would not be blind). The next prompt starts a new
//! battle: fresh conversations, a new random order, names hidden again.

use super::{CompareEffect, MAX_COLUMNS};
use crate::app::effect::Effect;
use crate::app::state::{Focus, State, TargetInfo};
use crate::engine::evals::stats::Rng;
use crate::engine::evals::style::{Style, style_of};
use crate::engine::message::Role;
use crate::store::runs::{BattleModel, BattleRow};

/// A vote: one of the columns was best, or all tied, or all were bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vote {
    A,
    B,
    C,
    D,
    Tie,
    BothBad,
}

/// Most models in one battle.
pub const MAX_ARENA: usize = 4;

impl Vote {
    /// The options of the vote bar for a battle of `n` models, in order.
    #[must_use]
    pub fn options(n: usize) -> Vec<Self> {
        let mut v = [Self::A, Self::B, Self::C, Self::D][..n.clamp(2, MAX_ARENA)].to_vec();
        v.extend([Self::Tie, Self::BothBad]);
        v
    }

    /// The column it names best, if any.
    #[must_use]
    pub fn best(self) -> Option<usize> {
        match self {
            Self::A => Some(0),
            Self::B => Some(1),
            Self::C => Some(2),
            Self::D => Some(3),
            Self::Tie | Self::BothBad => None,
        }
    }

    /// The letter that highlights it on the vote bar.
    #[must_use]
    pub fn letter(self) -> char {
        match self {
            Self::A => 'a',
            Self::B => 'b',
            Self::C => 'c',
            Self::D => 'd',
            Self::Tie => 't',
            Self::BothBad => 'n',
        }
    }

    /// Its name on the vote bar of a battle of `n` models.
    #[must_use]
    pub fn label(self, n: usize) -> &'static str {
        match self {
            Self::A => "A better",
            Self::B => "B better",
            Self::C => "C better",
            Self::D => "D better",
            Self::Tie => "tie",
            Self::BothBad if n > 2 => "all bad",
            Self::BothBad => "both bad",
        }
    }

    /// In a sentence, for a battle of `n` models.
    #[must_use]
    pub fn describe(self, n: usize) -> &'static str {
        match self {
            Self::A => "A is better",
            Self::B => "B is better",
            Self::C => "C is better",
            Self::D => "D is better",
            Self::Tie => "a tie",
            Self::BothBad if n > 2 => "all bad",
            Self::BothBad => "both bad",
        }
    }

    /// As the store keeps it: `a`…`d`, `tie`, `bad`.
    #[must_use]
    pub fn stored(self) -> &'static str {
        match self {
            Self::A => "a",
            Self::B => "b",
            Self::C => "c",
            Self::D => "d",
            Self::Tie => "tie",
            Self::BothBad => "bad",
        }
    }
}

/// The style of everything a column answered in this battle (a follow-up's answer counts too,
/// as LMArena sums a conversation's assistant tokens).
fn battle_style(col: &super::Column) -> Style {
    let answers: Vec<&str> = col
        .transcript
        .cells
        .iter()
        .filter_map(crate::app::transcript::Cell::message)
        .filter(|m| m.role() == Role::Assistant)
        .map(crate::engine::Message::text)
        .collect();
    style_of(&answers.join("\n\n"), None)
}

/// "two hidden models, A and B" / "3 hidden models, A B C".
fn hidden_models(n: usize) -> String {
    if n == 2 {
        return "two hidden models, A and B".to_owned();
    }
    let letters: Vec<String> = (0..n).map(letter).collect();
    format!("{n} hidden models, {}", letters.join(" "))
}

/// The arena's state within a compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arena {
    /// Names are shown (after the vote).
    pub revealed: bool,
    /// Every column answered the battle's latest prompt: the vote bar is up, until the next
    /// prompt (a follow-up of this battle, or the first of the next one).
    pub awaiting: bool,
    /// This battle's vote, as the store holds it.
    pub vote: Option<Vote>,
    /// Battles so far (seeds each battle's order).
    pub round: u64,
    pub seed: u64,
    /// The battle's first prompt (stored with the vote).
    pub prompt: String,
    /// The vote bar's keys.
    pub bar: VoteBar,
}

/// The vote bar: a vote is a deliberate act, an option highlighted with the arrows (or its
/// letter) and confirmed by the Enter right after (see `vote.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VoteBar {
    /// The keys are on the bar (while `State::focus` is on the columns).
    pub focused: bool,
    /// The highlighted option (an index into `Vote::ALL`); any key but a choosing one clears it.
    pub highlight: Option<usize>,
    /// The highlight came from this letter: Enter next votes, any other text key makes both text.
    pub pending: Option<char>,
}

/// "A", "B", … for column position `i`.
#[must_use]
pub fn letter(i: usize) -> String {
    char::from(b'A' + u8::try_from(i.min(MAX_COLUMNS)).unwrap_or(0)).to_string()
}

impl State {
    /// Opens the arena on two to four targets, in an order drawn from `seed`.
    ///
    /// # Errors
    /// As `open_compare`; and an arena takes two to four models.
    pub fn open_arena(&mut self, mut targets: Vec<TargetInfo>, seed: u64) -> Result<(), String> {
        if !(2..=MAX_ARENA).contains(&targets.len()) {
            return Err(format!("the arena takes two to four models, got {}", targets.len()));
        }
        // A model against itself would store a vote of a model over itself, and rate it.
        for (i, t) in targets.iter().enumerate() {
            if targets[..i].iter().any(|o| o.provider == t.provider && o.model == t.model) {
                return Err(format!(
                    "the arena takes different models; {} is named twice",
                    crate::text::sanitize::sanitize(&t.model)
                ));
            }
        }
        let n = targets.len();
        Rng::new(seed).shuffle(&mut targets);
        self.open_compare(targets)?;
        if let Some(cmp) = self.compare.active.as_mut() {
            cmp.arena = Some(Arena {
                revealed: false,
                awaiting: false,
                vote: None,
                round: 0,
                seed,
                prompt: String::new(),
                bar: VoteBar::default(),
            });
        }
        self.flash(format!("arena: {}; ask something, then vote", hidden_models(n)));
        Ok(())
    }

    /// Before a prompt goes out in the arena: after a vote (or one taken back), a new battle
    /// (fresh columns in a new random order, names hidden); the battle's first prompt is
    /// remembered for the vote. A prompt before any vote is a follow-up in the same battle.
    pub(crate) fn arena_before_send(&mut self, prompt: &str) {
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let Some(arena) = cmp.arena.as_mut() else { return };
        let new_battle = arena.vote.is_some() || arena.revealed;
        if new_battle {
            arena.round += 1;
            arena.vote = None;
            arena.revealed = false;
            let mut rng = Rng::new(arena.seed ^ arena.round.wrapping_mul(0x9E37_79B9));
            let mut targets: Vec<TargetInfo> = cmp.columns.iter().map(|c| c.target.clone()).collect();
            rng.shuffle(&mut targets);
            for (i, (col, t)) in cmp.columns.iter_mut().zip(targets).enumerate() {
                *col = super::Column::new(i, t);
            }
            cmp.diff = None;
            cmp.focus = 0;
            arena.prompt.clear();
        }
        if arena.prompt.is_empty() {
            prompt.clone_into(&mut arena.prompt);
        }
        arena.awaiting = false;
        arena.bar = VoteBar::default();
        if new_battle {
            // The last flash named the models: it goes with the battle it was about.
            let n = self.compare.active.as_ref().map_or(2, |c| c.columns.len());
            self.flash(format!("new battle: {}", hidden_models(n)));
        }
    }

    /// After a column's reply: once every column has answered, the vote bar comes up. The keys
    /// stay where they are: text typed next goes to the composer (a follow-up for both).
    pub(crate) fn arena_check(&mut self) {
        let busy = self.compare_busy();
        let tab = self.keymap.hint(crate::app::keymap::Action::CompareColumns);
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let answered = cmp.columns.iter().all(|c| c.last_reply().is_some_and(|m| !m.is_live()));
        let Some(arena) = cmp.arena.as_mut() else { return };
        if busy || !answered || arena.awaiting {
            return;
        }
        let asked = cmp
            .columns
            .iter()
            .any(|c| c.transcript.cells.iter().filter_map(|x| x.message()).any(|m| m.role() == Role::User));
        if !asked {
            return;
        }
        arena.awaiting = true;
        if arena.vote.is_none() {
            let msg = match cmp.columns.len() {
                2 => format!("both answered: {tab} to the vote bar, or keep asking both"),
                _ => format!("all answered: {tab} to the vote bar, or keep asking them all"),
            };
            self.flash(msg);
        }
        self.dirty = true;
    }

    /// Whether the keys are on the arena's vote bar.
    #[must_use]
    pub fn vote_bar_focused(&self) -> bool {
        self.focus == Focus::Transcript && self.arena().is_some_and(|a| a.awaiting && a.bar.focused)
    }

    /// The open arena, if any.
    #[must_use]
    pub fn arena(&self) -> Option<&Arena> {
        self.compare.active.as_ref().and_then(|c| c.arena.as_ref())
    }

    pub(crate) fn arena_mut(&mut self) -> Option<&mut Arena> {
        self.compare.active.as_mut().and_then(|c| c.arena.as_mut())
    }

    /// Puts the keys on the vote bar, nothing highlighted; false when there is nothing to vote on.
    pub(crate) fn arena_bar_enter(&mut self) -> bool {
        let Some(arena) = self.arena_mut().filter(|a| a.awaiting) else { return false };
        arena.bar = VoteBar { focused: true, ..VoteBar::default() };
        self.focus = Focus::Transcript;
        true
    }

    /// Takes the keys off the vote bar (they go to the composer or the columns).
    pub(crate) fn arena_bar_leave(&mut self) {
        if let Some(arena) = self.arena_mut() {
            arena.bar = VoteBar::default();
        }
    }

    /// Casts this battle's vote: the names are shown and the store keeps the battle, once, with
    /// its ranking. Once the names are shown the vote is final: voting again would be voting
    /// with the names in sight.
    pub(crate) fn arena_vote(&mut self, vote: Vote, fx: &mut Vec<Effect>) {
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let Some(arena) = cmp.arena.as_mut() else { return };
        arena.bar = VoteBar::default();
        if arena.vote.is_some() || arena.revealed {
            self.focus = Focus::Composer;
            self.flash("the vote is final once the names are shown · the next prompt starts a new battle");
            return;
        }
        arena.vote = Some(vote);
        arena.revealed = true;
        let n = cmp.columns.len();
        let battle = BattleRow {
            id: format!("{}/{}", cmp.group, arena.round + 1),
            created_at: 0,
            prompt: arena.prompt.clone(),
            models: cmp
                .columns
                .iter()
                .map(|c| BattleModel {
                    model: c.target.model.clone(),
                    provider: c.target.provider.clone(),
                    style: Some(battle_style(c)),
                })
                .collect(),
            vote: vote.stored().to_owned(),
        };
        fx.push(Effect::Compare(CompareEffect::Vote(Box::new(battle))));
        let names: Vec<String> =
            cmp.columns.iter().enumerate().map(|(i, c)| format!("{} was {}", letter(i), c.target.model)).collect();
        let msg = format!("voted {}: {} · next prompt: new battle", vote.describe(n), names.join(", "));
        self.focus = Focus::Composer;
        self.flash(msg);
        self.dirty = true;
    }
}

#[cfg(test)]
#[path = "arena_tests.rs"]
mod tests;
