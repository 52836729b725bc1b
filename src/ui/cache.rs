//! The render cache: each cell's body rendered for a width, keyed by (cell id, revision, width)
//! plus the view flags that change it. A streaming reply renders its markdown only as lines
//! complete (`stream_md`); the line still arriving is wrapped on its own, incrementally
//! (`wrap::GrowingLine`).

use super::cells;
use super::sanitize::sanitize;
use super::stream_md::StreamingMarkdown;
use super::wrap::{self, GrowingLine};
use crate::app::State;
use ratatui::style::Style;
use ratatui::text::Line;
use std::collections::HashMap;

/// Wrapped plain text that only ever grows (a reply's reasoning): complete lines are wrapped
/// once, the last line as it grows (`GrowingLine`). Its rows are read in place, never copied.
#[derive(Debug, Default)]
pub struct Incremental {
    /// The width and style the rows are for.
    key: Option<(usize, Style)>,
    done_len: usize,
    done: Vec<Line<'static>>,
    /// The line still arriving, and whether it has rows (not when it is empty after others).
    last: GrowingLine,
    shows_last: bool,
}

impl Incremental {
    /// Wraps `text`, reusing the complete lines already wrapped.
    pub fn update(&mut self, text: &str, cols: usize, style: Style) {
        let key = Some((cols, style));
        if self.key != key || text.len() < self.done_len || !text.is_char_boundary(self.done_len) {
            *self = Self { key, ..Self::default() };
        }
        let cut = text.rfind('\n').map_or(0, |i| i + 1);
        if cut > self.done_len {
            let chunk = &text[self.done_len..cut - 1];
            self.done.extend(wrap::plain(&sanitize(chunk), cols, style));
            self.done_len = cut;
        }
        let last = &text[self.done_len..];
        self.shows_last = !last.is_empty() || self.done.is_empty();
        if self.shows_last {
            self.last.update(self.done_len, last, cols, style, None);
        } else {
            self.last.clear();
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.done.len() + if self.shows_last { self.last.len() } else { 0 }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[must_use]
    pub fn get(&self, i: usize) -> Option<&Line<'static>> {
        match i.checked_sub(self.done.len()) {
            None => self.done.get(i),
            Some(j) if self.shows_last => self.last.get(j),
            Some(_) => None,
        }
    }
}

/// One cell's rendered body.
#[derive(Debug, Default)]
pub struct CachedCell {
    /// (revision, reasoning expanded, tool-card salt, folded behind a compaction, shown as JSON
    /// and folded: `JsonViews::salt`) the body was built for.
    key: Option<(u64, bool, u64, bool, u8)>,
    /// The draw that last asked for this cell (for the budget's eviction).
    used: u64,
    /// Whether a header line is drawn above the body (messages yes, notices no).
    pub header: bool,
    /// Before the answer: reasoning, refusal.
    pub pre: Vec<Line<'static>>,
    /// The answer's complete lines as markdown.
    pub md: StreamingMarkdown,
    /// The answer's line still arriving, plain, with the cursor.
    pub tail: GrowingLine,
    /// After the answer: tool cards, banners.
    pub post: Vec<Line<'static>>,
    /// The reasoning's rows, drawn within `pre` from index `reasoning_at` when it is open.
    pub reasoning: Incremental,
    pub reasoning_at: Option<usize>,
    /// Images drawn over rows the body reserved for them.
    pub images: Vec<super::images::Slot>,
    /// How images are drawn (copied from the cache before a build).
    pub image_mode: super::images::Mode,
}

impl CachedCell {
    /// Body lines (without the header and the blank line after the cell).
    #[must_use]
    pub fn body_len(&self) -> usize {
        self.pre_len() + self.md.len() + self.tail.len() + self.post.len()
    }

    /// Rows before the answer: `pre` and the reasoning's rows within it.
    #[must_use]
    pub fn pre_len(&self) -> usize {
        self.pre.len() + self.reasoning_at.map_or(0, |_| self.reasoning.len())
    }

    fn pre_line(&self, i: usize) -> Option<&Line<'static>> {
        match self.reasoning_at {
            Some(at) if i >= at => {
                let r = self.reasoning.len();
                if i < at + r { self.reasoning.get(i - at) } else { self.pre.get(i - r) }
            }
            _ => self.pre.get(i),
        }
    }

    /// Rows the cell takes: header, body, one blank separator.
    #[must_use]
    pub fn height(&self) -> usize {
        // A hidden cell (a tool result, shown on its call's card) takes no rows at all.
        if !self.header && self.body_len() == 0 {
            return 0;
        }
        usize::from(self.header) + self.body_len() + 1
    }

    /// Body line `i`.
    #[must_use]
    pub fn body_line(&self, i: usize) -> Option<&Line<'static>> {
        let (p, m, t) = (self.pre_len(), self.md.len(), self.tail.len());
        if i < p {
            self.pre_line(i)
        } else if i < p + m {
            self.md.get(i - p)
        } else if i < p + m + t {
            self.tail.get(i - p - m)
        } else {
            self.post.get(i - p - m - t)
        }
    }
}

/// Rendered lines the cache keeps across draws; past it, the cells used longest ago are
/// dropped (and rebuilt if scrolled back to), so a long session's memory is bounded by what
/// is on screen plus this, not by the whole transcript.
pub const LINE_BUDGET: usize = 50_000;

/// Rendered cells for the current width and theme.
#[derive(Debug, Default)]
pub struct RenderCache {
    cells: HashMap<u64, CachedCell>,
    /// Draws so far (see `CachedCell::used`).
    draws: u64,
    cols: usize,
    theme: String,
    /// Body lines of all cells held, kept up to date as cells are built and dropped (`None`:
    /// to count once), so a frame does not sum every cell ever scrolled past.
    lines: Option<usize>,
    /// Cells rendered since the cache was made (for tests and benches).
    pub builds: u64,
    /// The compare screen's column and diff caches.
    pub compare: super::compare::Caches,
    /// Pictures of images, made off the draw path.
    pub images: super::images::Images,
}

impl RenderCache {
    /// The cell at `index`, rendered for `cols` columns of body.
    pub fn cell(&mut self, state: &State, index: usize, cols: usize) -> Option<&CachedCell> {
        if cols != self.cols || state.theme_name != self.theme {
            // A resize or a theme change invalidates every layout at once.
            self.cells.clear();
            self.lines = Some(0);
            self.cols = cols;
            self.theme.clone_from(&state.theme_name);
        }
        let cell = state.transcript.cells.get(index)?;
        let expanded = cell.message().is_some_and(|m| state.reasoning_expanded(m));
        let owner = crate::app::tools::Owner::Chat;
        let folded = state.folded(index);
        let json = state.json_views.salt(cell.id());
        let key = Some((cell.revision(), expanded, super::tool_card::salt(state, owner, cell), folded, json));
        let entry = self.cells.entry(cell.id()).or_default();
        // A cell whose markdown is behind its text goes on where it stopped, once a draw (the
        // draw asks for a cell twice: its height, then its rows).
        let stale = entry.key != key || (entry.md.behind() && entry.used != self.draws);
        entry.used = self.draws;
        if stale {
            let before = entry.body_len();
            entry.image_mode = self.images.mode;
            entry.images.clear();
            if folded {
                // Behind a closed compaction card: no rows at all, as a tool result.
                cells::hide(entry);
            } else {
                cells::build(entry, cell, state, cols, owner);
            }
            entry.key = key;
            self.builds += 1;
            self.lines = self.lines.map(|n| n.saturating_sub(before) + entry.body_len());
        }
        Some(entry)
    }

    /// Drops cells that are no longer in the transcript (after `/clear` or a branch switch), and
    /// keeps the rest within [`LINE_BUDGET`]. Called once per draw, before the cells are asked for.
    pub fn retain(&mut self, state: &State) {
        if self.cells.len() > state.transcript.cells.len() * 2 + 64 {
            let live: std::collections::HashSet<u64> =
                state.transcript.cells.iter().map(crate::app::transcript::Cell::id).collect();
            self.cells.retain(|id, _| live.contains(id));
            self.lines = None;
        }
        self.within_budget(LINE_BUDGET);
        self.draws += 1;
    }

    /// Evicts the cells used longest ago until at most half of `budget` lines are kept, once
    /// more than `budget` are; the cells of the last draw are never evicted.
    fn within_budget(&mut self, budget: usize) {
        let mut lines = *self.lines.get_or_insert_with(|| self.cells.values().map(CachedCell::body_len).sum());
        if lines <= budget {
            return;
        }
        let mut by_age: Vec<(u64, u64)> = self.cells.iter().map(|(id, c)| (c.used, *id)).collect();
        by_age.sort_unstable();
        for (used, id) in by_age {
            if lines <= budget / 2 || used + 1 >= self.draws {
                break;
            }
            if let Some(c) = self.cells.remove(&id) {
                lines -= c.body_len();
            }
        }
        self.lines = Some(lines);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growing_reasoning_reads_as_the_whole_reasoning_wrapped() {
        let text = "First thought, a long one that wraps.\nlinewithoutanyspacesthatgoesonandonandon\n\n日本語のテキスト \
                    and\tmore\nlast";
        for cols in [1, 4, 9, 30] {
            let mut r = Incremental::default();
            for (end, _) in text.char_indices().skip(1).chain([(text.len(), ' ')]) {
                let part = &text[..end];
                r.update(part, cols, Style::default());
                let mut want: Vec<Line<'static>> = Vec::new();
                let cut = part.rfind('\n').map_or(0, |i| i + 1);
                if cut > 0 {
                    want.extend(wrap::plain(&sanitize(&part[..cut - 1]), cols, Style::default()));
                }
                if cut < part.len() || cut == 0 {
                    want.extend(wrap::plain(&sanitize(&part[cut..]), cols, Style::default()));
                }
                let got: Vec<Line<'static>> = (0..r.len()).filter_map(|i| r.get(i)).cloned().collect();
                assert_eq!(got, want, "{cols} cols, {part:?}");
            }
        }
    }

    #[test]
    fn open_reasoning_is_drawn_in_place_between_its_header_and_the_answer() {
        use crate::engine::message::{Message, Role};
        let mut s = crate::app::test_state();
        s.transcript.push_message(Message::user("why"));
        let mut reply = Message::with_text(Role::Assistant, "the answer");
        reply.choices[0].reasoning = "step one\nstep two".into();
        s.transcript.push_message(reply);
        let id = s.transcript.cells.last().map(crate::app::transcript::Cell::id).unwrap_or_default();
        s.reasoning_open.insert(id);
        let mut cache = RenderCache::default();
        cache.retain(&s);
        let cell = cache.cell(&s, 1, 40).unwrap();
        let rows: Vec<String> =
            (0..cell.body_len()).filter_map(|i| cell.body_line(i)).map(ToString::to_string).collect();
        assert!(rows.len() > 4, "{rows:?}");
        assert_eq!(rows[..4], ["▾ reasoning", "step one", "step two", ""]);
        assert!(rows[4].contains("the answer"), "{rows:?}");
    }

    #[test]
    fn the_budget_evicts_the_cells_used_longest_ago() {
        let mut cache = RenderCache::default();
        for id in 0..10u64 {
            let cell = cache.cells.entry(id).or_default();
            cell.pre = vec![Line::from("x"); 100];
            cell.used = id;
        }
        cache.draws = 10;
        cache.within_budget(500);
        let total: usize = cache.cells.values().map(CachedCell::body_len).sum();
        assert!(total <= 250, "{total} lines kept");
        assert!(cache.cells.contains_key(&9), "the last draw's cell stays");
        assert!(!cache.cells.contains_key(&0), "the oldest goes first");
    }

    #[test]
    fn the_line_count_follows_the_cells_built_and_dropped() {
        use crate::engine::message::{Message, Role};
        let mut s = crate::app::test_state();
        for i in 0..40 {
            s.transcript.push_message(Message::user(&format!("question {i}")));
            s.transcript.push_message(Message::with_text(Role::Assistant, &"a line\n".repeat(i + 1)));
        }
        let mut cache = RenderCache::default();
        let sum = |c: &RenderCache| c.cells.values().map(CachedCell::body_len).sum::<usize>();
        cache.retain(&s);
        for i in 0..s.transcript.cells.len() {
            cache.cell(&s, i, 60);
        }
        assert_eq!(cache.lines, Some(sum(&cache)));
        // A reply grows: rebuilt, and counted again.
        let last = s.transcript.cells.last().map(crate::app::transcript::Cell::id).unwrap_or_default();
        if let Some(m) = s.transcript.message_mut(last) {
            m.choices[0].content.push_str("more\nand more\n");
            m.revision += 1;
        }
        cache.cell(&s, s.transcript.cells.len() - 1, 60);
        assert_eq!(cache.lines, Some(sum(&cache)));
        // Over a budget, the oldest go and the count follows.
        cache.draws += 5;
        let all = sum(&cache);
        cache.within_budget(all - 1);
        assert_eq!(cache.lines, Some(sum(&cache)));
        assert!(sum(&cache) <= all / 2, "{} of {all} lines kept", sum(&cache));
    }

    #[test]
    fn a_reply_behind_its_text_goes_on_once_a_draw_until_it_has_caught_up() {
        use crate::engine::message::{Message, MessageStatus, Role};
        use crate::ui::frame_budget::FrameBudget;
        let mut s = crate::app::test_state();
        s.transcript.push_message(Message::user("a long one"));
        let mut reply = Message::with_text(Role::Assistant, &"A paragraph line.\n\n".repeat(100));
        reply.status = MessageStatus::Streaming;
        s.transcript.push_message(reply);
        let mut cache = RenderCache::default();
        let mut draws = 0;
        loop {
            let budget = FrameBudget::layout_lines(30);
            cache.retain(&s);
            let builds = cache.builds;
            let first = cache.cell(&s, 1, 60).map(CachedCell::height);
            let built = cache.builds - builds;
            // The draw asks again for the rows: the same layout, not a second step.
            assert_eq!(cache.cell(&s, 1, 60).map(CachedCell::height), first);
            assert_eq!(cache.builds - builds, built);
            draws += 1;
            if !budget.starved() {
                break;
            }
            assert_eq!(built, 1, "a cell behind is built again in the next draw");
            assert!(draws < 50);
        }
        assert!(draws >= 200 / 30, "{draws} draws");
        let body = cache.cells.values().map(|c| c.md.len()).max().unwrap_or(0);
        assert_eq!(body, 199, "every line laid out (a blank between paragraphs)");
    }
}
