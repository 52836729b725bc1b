//! The blind arena: a compare of two models shown as A and B in random order. Once both have
//! answered, the keys move to the columns for the vote — `a` A better, `b` B better, `t` tie,
//! `n` both bad (Esc skips it) — then the names are shown and the vote is stored. The next
//! prompt starts a new battle: fresh conversations, a new random order, names hidden again.

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

    /// The vote a key stands for.
    #[must_use]
    pub fn from_key(c: char) -> Option<Self> {
        match c.to_ascii_lowercase() {
            'a' => Some(Self::A),
            'b' => Some(Self::B),
            't' | '=' => Some(Self::Tie),
            'n' => Some(Self::BothBad),
            _ => None,
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
    /// Names are shown (after the vote).
    pub revealed: bool,
    /// Both answered and no vote yet: the keys are on the columns for it.
    pub awaiting: bool,
    /// This battle's vote.
    pub vote: Option<Vote>,
    /// Battles so far (seeds each battle's order).
    pub round: u64,
    pub seed: u64,
    /// The battle's first prompt (stored with the vote).
    pub prompt: String,
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
            cmp.arena =
                Some(Arena { revealed: false, awaiting: false, vote: None, round: 0, seed, prompt: String::new() });
        }
        self.flash("arena: two hidden models, A and B; ask something, then vote");
        Ok(())
    }

    /// Before a prompt goes out in the arena: after a vote, a new battle (fresh columns in a new
    /// random order, names hidden); the battle's first prompt is remembered for the vote.
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
        if new_battle {
            // The last flash named the models: it goes with the battle it was about.
            self.flash("new battle: two hidden models, A and B");
        }
    }

    /// After a column's reply: once every column has answered, the keys go to the columns for
    /// the vote.
    pub(crate) fn arena_check(&mut self) {
        let busy = self.compare_busy();
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let answered = cmp.columns.iter().all(|c| c.last_reply().is_some_and(|m| !m.is_live()));
        let Some(arena) = cmp.arena.as_mut() else { return };
        if busy || !answered || arena.vote.is_some() || arena.awaiting {
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
        self.focus = Focus::Transcript;
        self.flash("vote: a A is better · b B is better · t tie · n both bad · Esc skips");
        self.dirty = true;
    }

    /// A vote key on the columns: `true` when it was one (and the vote is taken).
    pub(crate) fn arena_key(&mut self, c: char, fx: &mut Vec<Effect>) -> bool {
        let Some(cmp) = self.compare.active.as_mut() else { return false };
        let Some(arena) = cmp.arena.as_mut() else { return false };
        if !arena.awaiting {
            return false;
        }
        let Some(vote) = Vote::from_key(c) else { return false };
        arena.awaiting = false;
        arena.vote = Some(vote);
        arena.revealed = true;
        let (Some(a), Some(b)) = (cmp.columns.first(), cmp.columns.get(1)) else { return true };
        let row = VoteRow {
            model_a: a.target.model.clone(),
            provider_a: a.target.provider.clone(),
            model_b: b.target.model.clone(),
            provider_b: b.target.provider.clone(),
            winner: vote.code().to_owned(),
            prompt: arena.prompt.clone(),
        };
        let msg = format!(
            "voted {}: A was {}, B was {} · next prompt starts a new battle",
            vote.describe(),
            row.model_a,
            row.model_b
        );
        fx.push(Effect::Compare(CompareEffect::Vote(row)));
        self.focus = Focus::Composer;
        self.flash(msg);
        self.dirty = true;
        true
    }
}
