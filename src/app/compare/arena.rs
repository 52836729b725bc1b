//! The blind arena: a compare of two models shown as A and B in random order. Once both have
//! answered, a vote bar comes up (A better · B better · tie · both bad); the keys stay on the
//! composer, so text typed then is a follow-up for both. A vote is deliberate: Tab to the bar,
//! an option highlighted with the arrows (or its letter) and Enter right after (`vote.rs`).
//! Then the names are shown and the vote is stored; it can be changed or taken back until the
//! next prompt starts a new battle: fresh conversations, a new random order, names hidden again.

use super::{CompareEffect, MAX_COLUMNS};
use crate::app::effect::Effect;
use crate::app::state::{Focus, State, TargetInfo};
use crate::engine::evals::stats::Rng;
use crate::engine::message::Role;
use crate::store::runs::VoteRow;

/// A vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vote {
    A,
    B,
    Tie,
    BothBad,
}

impl Vote {
    /// The options of the vote bar, in order.
    pub const ALL: [Self; 4] = [Self::A, Self::B, Self::Tie, Self::BothBad];

    /// The letter that highlights it on the vote bar.
    #[must_use]
    pub fn letter(self) -> char {
        match self {
            Self::A => 'a',
            Self::B => 'b',
            Self::Tie => 't',
            Self::BothBad => 'n',
        }
    }

    /// Its name on the vote bar.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::A => "A better",
            Self::B => "B better",
            Self::Tie => "tie",
            Self::BothBad => "both bad",
        }
    }

    /// As stored: `a`, `b`, `tie`, `bad`.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            Self::A => "a",
            Self::B => "b",
            Self::Tie => "tie",
            Self::BothBad => "bad",
        }
    }

    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::A => "A is better",
            Self::B => "B is better",
            Self::Tie => "a tie",
            Self::BothBad => "both bad",
        }
    }
}

/// The arena's state within a compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arena {
    /// Names are shown (after a vote; they stay shown if it is taken back).
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
    /// Opens the arena on two targets, in an order drawn from `seed`.
    ///
    /// # Errors
    /// As `open_compare`; and an arena takes exactly two models.
    pub fn open_arena(&mut self, mut targets: Vec<TargetInfo>, seed: u64) -> Result<(), String> {
        if targets.len() != 2 {
            return Err(format!("the arena takes two models, got {}", targets.len()));
        }
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
        self.flash("arena: two hidden models, A and B; ask something, then vote");
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
            self.flash("new battle: two hidden models, A and B");
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
            self.flash(format!("both answered: {tab} to the vote bar, or keep asking both"));
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

    /// Casts (or changes) this battle's vote: the names are shown and the store holds it.
    pub(crate) fn arena_vote(&mut self, vote: Vote, fx: &mut Vec<Effect>) {
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let generation = cmp.generation;
        let Some(arena) = cmp.arena.as_mut() else { return };
        let before = arena.vote.replace(vote);
        arena.revealed = true;
        arena.bar = VoteBar::default();
        let battle = (generation, arena.round);
        let (Some(a), Some(b)) = (cmp.columns.first(), cmp.columns.get(1)) else { return };
        let row = VoteRow {
            model_a: a.target.model.clone(),
            provider_a: a.target.provider.clone(),
            model_b: b.target.model.clone(),
            provider_b: b.target.provider.clone(),
            winner: vote.code().to_owned(),
            prompt: arena.prompt.clone(),
        };
        let what = if before.is_some() { "vote changed to" } else { "voted" };
        let tab = self.keymap.hint(crate::app::keymap::Action::CompareColumns);
        let msg = format!(
            "{what} {}: A was {}, B was {} · {tab} then u takes it back · next prompt: new battle",
            vote.describe(),
            row.model_a,
            row.model_b
        );
        fx.push(Effect::Compare(CompareEffect::Vote { battle, row: Some(row) }));
        self.focus = Focus::Composer;
        self.flash(msg);
        self.dirty = true;
    }

    /// Takes this battle's vote back: the store forgets it. The names stay shown (they were
    /// seen); voting again is allowed until the next prompt starts a new battle.
    pub(crate) fn arena_undo(&mut self, fx: &mut Vec<Effect>) -> bool {
        let Some(cmp) = self.compare.active.as_mut() else { return false };
        let generation = cmp.generation;
        let Some(arena) = cmp.arena.as_mut().filter(|a| a.vote.is_some()) else { return false };
        arena.vote = None;
        let battle = (generation, arena.round);
        fx.push(Effect::Compare(CompareEffect::Vote { battle, row: None }));
        self.flash("vote taken back (the names stay shown) · vote again, or the next prompt starts a new battle");
        self.dirty = true;
        true
    }
}

#[cfg(test)]
#[path = "arena_tests.rs"]
mod tests;
