//! Compare mode: 2–4 columns side by side, each a model with its own multi-turn conversation,
//! all fed from the one composer. This module owns the columns' state and their `Msg`/`Effect`
//! vocabulary; `turns.rs` sends and folds replies, `keys.rs` handles keys and the mouse,
//! `view.rs` focus, scrolling, full width and the diff, `arena.rs` and `vote.rs` the blind arena
//! and its vote bar, `runner.rs` the requests (one endpoint per provider). Each column runs the chat's tool loop as its own `Owner` (`tool_turns.rs`)
//! and is saved by the chat's persistence (`persist_sync.rs`). Drawing is `ui::compare`.

pub mod arena;
mod attach;
mod here;
mod keys;
pub(crate) mod runner;
mod turns;
mod view;
mod vote;

use super::persist::Persist;
use super::state::{Live, TargetInfo};
use super::tools::Owner;
use super::transcript::Transcript;
use crate::api::Api;
use crate::api::client::WireEvent;

/// Fewest and most columns a compare has.
pub const MIN_COLUMNS: usize = 2;
pub const MAX_COLUMNS: usize = 4;

/// One model's side of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Position when the compare started (stays the same when others are dropped).
    pub index: usize,
    pub target: TargetInfo,
    pub transcript: Transcript,
    /// The reply in flight in this column.
    pub live: Option<Live>,
    /// The top line shown; `None` follows the bottom.
    pub scroll: Option<usize>,
    /// Output arrived below while the column was scrolled up.
    pub unseen: bool,
    /// A transient note about the request (a retry after a 429).
    pub note: Option<String>,
    /// Messages the column was opened with (the chat's history): the column becomes a
    /// conversation of its own in the history only once it has more.
    pub seeded: usize,
    /// What the history store holds of this column's conversation (the chat's persistence,
    /// see `persist_sync.rs`).
    pub persist: Persist,
}

impl Column {
    #[must_use]
    pub fn new(index: usize, target: TargetInfo) -> Self {
        Self {
            index,
            target,
            transcript: Transcript::default(),
            live: None,
            scroll: None,
            unseen: false,
            note: None,
            seeded: 0,
            persist: Persist::default(),
        }
    }

    /// The latest reply (the one the metrics describe).
    #[must_use]
    pub fn last_reply(&self) -> Option<&crate::engine::Message> {
        self.transcript
            .cells
            .iter()
            .rev()
            .filter_map(super::transcript::Cell::message)
            .find(|m| m.role() == crate::engine::Role::Assistant)
    }
}

/// The diff view: the latest answers of two columns, word by word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffView {
    /// The column whose words show as removed.
    pub a: usize,
    /// The column whose words show as added.
    pub b: usize,
    /// The top line shown.
    pub scroll: usize,
}

/// An open comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Compare {
    /// Tells this compare's replies from those of an earlier one.
    pub generation: u64,
    /// The compare group id the columns are saved under.
    pub group: String,
    pub columns: Vec<Column>,
    /// The column keys act on (by position in `columns`).
    pub focus: usize,
    /// Show only the focused column, full width.
    pub full: bool,
    /// Scroll all columns together.
    pub sync: bool,
    pub diff: Option<DiffView>,
    /// The blind arena: names hidden until the vote (see `arena.rs`).
    pub arena: Option<arena::Arena>,
    /// Opened from a message of the chat ("compare from here"): the chat's cell index where the
    /// columns' turn starts. Keeping a column then continues the chat on a branch from there.
    pub from_here: Option<usize>,
}

impl Compare {
    /// A compare of `columns`, focused on the first, each scrolled on its own, no diff.
    #[must_use]
    pub fn new(generation: u64, group: String, columns: Vec<Column>) -> Self {
        Self {
            generation,
            group,
            columns,
            focus: 0,
            full: false,
            sync: false,
            diff: None,
            arena: None,
            from_here: None,
        }
    }

    /// How column `i` is named on screen: "A", "B"… in an arena whose names are hidden, else
    /// its number and model.
    #[must_use]
    pub fn label(&self, i: usize) -> String {
        let Some(col) = self.columns.get(i) else { return String::new() };
        match &self.arena {
            Some(a) if !a.revealed => arena::letter(i),
            Some(_) => format!("{} {}", arena::letter(i), col.target.model),
            None => format!("{} {}", col.index + 1, col.target.model),
        }
    }

    /// Tells the columns' conversations apart for render caches: the generation, and in an
    /// arena the battle (a battle's columns are fresh conversations whose ids start again).
    #[must_use]
    pub fn epoch(&self) -> u64 {
        (self.generation << 32) | self.arena.as_ref().map_or(0, |a| a.round & 0xFFFF_FFFF)
    }

    /// Whether model names are hidden (an arena before its vote).
    #[must_use]
    pub fn hidden(&self) -> bool {
        self.arena.as_ref().is_some_and(|a| !a.revealed)
    }

    /// Whether any column is streaming.
    #[must_use]
    pub fn is_live(&self) -> bool {
        self.columns.iter().any(|c| c.live.is_some())
    }

    /// Columns with a reply in flight.
    #[must_use]
    pub fn live_count(&self) -> usize {
        self.columns.iter().filter(|c| c.live.is_some()).count()
    }

    #[must_use]
    pub fn focused(&self) -> Option<&Column> {
        self.columns.get(self.focus)
    }

    /// The tool-loop owner of column `i` (its position) of this compare.
    #[must_use]
    pub fn owner(&self, i: usize) -> Owner {
        Owner::Column { generation: self.generation, column: i }
    }
}

/// Compare mode as a part of the app state: the open comparison, and the ones left behind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompareMode {
    pub active: Option<Compare>,
    /// Compares that were closed or had a column kept: their columns stay in memory.
    pub kept: Vec<Compare>,
    /// The last generation handed out.
    pub generations: u64,
    /// The metrics strip under the columns is hidden (F2, the chat's panels key).
    pub strip_hidden: bool,
}

impl CompareMode {
    /// Whether compare mode is on.
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    /// Whether a column is streaming (the loop keeps ticking).
    #[must_use]
    pub fn is_live(&self) -> bool {
        self.active.as_ref().is_some_and(Compare::is_live)
    }
}

/// What compare mode asks the runner to do.
#[derive(Debug, Clone, PartialEq)]
pub enum CompareEffect {
    /// Send a column's request to `provider`'s endpoint; its reply streams into message `id`
    /// of column `column` of compare `generation`.
    Start {
        generation: u64,
        column: usize,
        id: u64,
        provider: String,
        api: Api,
        body: std::sync::Arc<crate::engine::body::Body>,
    },
    /// Stop a column's request; what arrived stays.
    Cancel { generation: u64, column: usize, id: u64 },
    /// The kept column's provider becomes the chat's endpoint.
    UseEndpoint { provider: String },
    /// Store an arena battle with its vote (final: cast once).
    Vote(Box<crate::store::runs::BattleRow>),
}

/// What the runner reports about column requests.
#[derive(Debug)]
pub enum CompareMsg {
    /// The request for message `id` of a column went out at `now_ms`.
    Started { generation: u64, column: usize, id: u64, now_ms: u64 },
    /// A wire event of a column's request, stamped with the app clock.
    Wire { generation: u64, column: usize, id: u64, event: Box<WireEvent>, now_ms: u64 },
    /// A provider's endpoint was resolved after a keep asked for it before it was known.
    EndpointReady { provider: String },
    /// An arena vote could not be stored (why).
    VoteFailed(String),
}

/// What the view reports back about the compare screen after each draw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompareView {
    pub columns: Vec<ColumnView>,
    /// Lines in the diff view and rows it shows (0 when closed).
    pub diff_lines: usize,
    pub diff_rows: u16,
}

/// One column as drawn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ColumnView {
    /// Position in `Compare::columns`.
    pub column: usize,
    /// Screen area of the column's body as (x, y, width, height).
    pub area: (u16, u16, u16, u16),
    /// The whole column, frame included, for the mouse.
    pub frame: (u16, u16, u16, u16),
    /// Lines of content and the top line drawn.
    pub lines: usize,
    pub top: usize,
    /// The first line of each turn (each user message), for synchronised scrolling.
    pub turns: Vec<usize>,
}

impl ColumnView {
    /// The largest top line (the last line at the bottom).
    #[must_use]
    pub fn max_top(&self) -> usize {
        self.lines.saturating_sub(usize::from(self.area.3))
    }

    /// Whether (`col`, `row`) is inside the column (its frame included).
    #[must_use]
    pub fn contains(&self, col: u16, row: u16) -> bool {
        let (x, y, w, h) = self.frame;
        col >= x && col < x.saturating_add(w) && row >= y && row < y.saturating_add(h)
    }
}

/// Splits `provider/model` when the prefix names a configured provider (or `demo`), as the
/// headless compare does; any other slash is part of the model's name.
#[must_use]
pub fn split_spec<'a>(spec: &'a str, cfg: &crate::config::Config) -> Option<(&'a str, &'a str)> {
    spec.split_once('/').filter(|(p, m)| !m.is_empty() && (*p == "demo" || cfg.providers.contains_key(*p)))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tool_tests;
