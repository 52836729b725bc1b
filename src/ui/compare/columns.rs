//! One compare column: a frame titled with its model, the live numbers on top, and its own
//! conversation below, laid out from its own render cache (cells keyed by id, revision and
//! width, as in the chat) and scrolled on its own or in step with the others.

use super::metrics::{ColumnMetrics, Phase};
use crate::app::State;
use crate::app::compare::{Column, ColumnView, Compare};
use crate::app::tools::Owner;
use crate::app::transcript::Cell;
use crate::engine::message::{Message, MessageStatus, Role};
use crate::ui::cache::CachedCell;
use crate::ui::cells;
use crate::ui::fmt;
use crate::ui::sanitize::sanitize;
use crate::ui::theme::Role as R;
use crate::ui::wrap;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Padding};
use std::collections::HashMap;

/// Body text starts this many columns in from the header.
const INDENT: u16 = 2;
/// Most rows the numbers on top of a column take.
pub const MAX_HEADER_ROWS: usize = 4;

/// Rendered cells of one column.
#[derive(Debug, Default)]
pub struct ColumnCache {
    /// (compare generation and arena battle, column, body width, theme): a change invalidates
    /// every cell (a new battle's cells reuse the old one's ids).
    key: (u64, usize, usize, String),
    cells: HashMap<u64, Entry>,
    /// Where each cell starts, kept across draws (see [`Layout`]).
    layout: Option<Layout>,
    /// Draws so far (see `Entry::drawn`).
    draws: u64,
    /// Cells rendered (for tests and benches).
    pub builds: u64,
    /// Cells measured for the layout (for tests and benches).
    pub measured: u64,
}

/// The line each of a column's cells starts on, and where the last one ends. A column seeded with a long
/// conversation (`/here`) must not measure all of it every frame: while the cells keep their
/// shape (the transcript's stamp) and nothing else that shapes an old cell changed, only the
/// cells from the last turn (or the lowest one changed in place) are measured again.
#[derive(Debug, Default)]
struct Layout {
    sig: Signature,
    starts: Vec<usize>,
    total: usize,
    /// The first line of each turn (each user message).
    turns: Vec<usize>,
    /// The index of the last user message: cells from there on may change every frame.
    last_turn: usize,
}

/// What shapes a column's old cells besides their own content: the list's shape, the screen's
/// height (long prompts fold to it), the arena's veil, and the reasoning the user opened.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Signature {
    stamp: u64,
    screen_rows: u16,
    hidden: bool,
    opened: (usize, u64),
}

impl Signature {
    fn of(state: &State, cmp: &Compare, col: &Column) -> Self {
        let opened = state.reasoning_open.iter().fold(0u64, |acc, id| acc ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        Self {
            stamp: col.transcript.cells.stamp(),
            screen_rows: state.size.1,
            hidden: cmp.hidden(),
            opened: (state.reasoning_open.len(), opened),
        }
    }
}

impl Layout {
    /// The first cell with a row at or below line `top`.
    fn first_at(&self, top: usize) -> usize {
        self.starts.partition_point(|&s| s <= top).saturating_sub(1)
    }
}

#[derive(Debug, Default)]
struct Entry {
    /// (revision, reasoning expanded, tool-card salt, reasoning hidden) the cell was built for.
    key: Option<(u64, bool, u64, bool)>,
    /// The draw that last asked for the cell.
    drawn: u64,
    cell: CachedCell,
}

impl ColumnCache {
    /// Forgets every cell when the compare, the column, the width or the theme changed.
    fn check_key(&mut self, state: &State, cmp: &Compare, column: usize, cols: usize) {
        let (epoch, col, width, theme) = &self.key;
        if (*epoch, *col, *width) != (cmp.epoch(), column, cols) || *theme != state.theme_name {
            self.cells.clear();
            self.layout = None;
            self.key = (cmp.epoch(), column, cols, state.theme_name.clone());
        }
    }

    /// Brings the layout up to date: the cells that may have changed since the last draw are
    /// measured (all of them when the signature changed).
    fn lay_out(&mut self, state: &State, cmp: &Compare, column: usize, cols: usize) -> Option<&Layout> {
        self.check_key(state, cmp, column, cols);
        let col = cmp.columns.get(column)?;
        let cells = &col.transcript.cells;
        let sig = Signature::of(state, cmp, col);
        let kept = self.layout.take().filter(|l| l.sig == sig && l.starts.len() == cells.len());
        let from = kept.as_ref().map_or(0, |l| l.last_turn.min(cells.low_touched()).min(cells.len()));
        let mut layout = kept.unwrap_or(Layout { sig, ..Layout::default() });
        let mut line = layout.starts.get(from).copied().unwrap_or(layout.total);
        layout.starts.truncate(from);
        layout.turns.retain(|&t| t < line);
        for index in from..cells.len() {
            self.measured += 1;
            let h = self.cell(state, cmp, column, index, cols).map_or(1, CachedCell::height);
            if cells[index].message().is_some_and(|m| m.role() == Role::User) {
                layout.turns.push(line);
                layout.last_turn = index;
            }
            layout.starts.push(line);
            line += h;
        }
        layout.total = line;
        self.layout = Some(layout);
        self.layout.as_ref()
    }

    /// The rendered cell at `index` of the column, for `cols` columns of body.
    fn cell(&mut self, state: &State, cmp: &Compare, column: usize, index: usize, cols: usize) -> Option<&CachedCell> {
        self.check_key(state, cmp, column, cols);
        let cell = cmp.columns.get(column)?.transcript.cells.get(index)?;
        let expanded = cell.message().is_some_and(|m| state.reasoning_expanded(m));
        let owner = cmp.owner(column);
        // In an arena before the vote a reasoning block would give its model away (only some
        // models think aloud, and how long they do is telling): the cell is built without it,
        // leaving no trace, and with it once the vote reveals the names.
        let hide = cmp.hidden() && cell.message().is_some_and(thinks);
        // The salt moves while the column's tools run, so their elapsed times count up.
        let want = Some((cell.revision(), expanded, crate::ui::tool_card::salt(state, owner, cell), hide));
        let entry = self.cells.entry(cell.id()).or_default();
        // A cell whose markdown is behind its text goes on where it stopped, once a draw (the
        // draw asks for a cell twice: its height, then its rows).
        let stale = entry.key != want || (entry.cell.md.behind() && entry.drawn != self.draws);
        entry.drawn = self.draws;
        if stale {
            if hide {
                let mut bare = cell.clone();
                if let Cell::Message(m) = &mut bare {
                    let m = std::sync::Arc::make_mut(m);
                    m.choices.iter_mut().for_each(|c| c.reasoning.clear());
                    m.items.retain(|i| !is_reasoning_item(i));
                }
                cells::build(&mut entry.cell, &bare, state, cols, owner);
            } else {
                cells::build(&mut entry.cell, cell, state, cols, owner);
            }
            drop_chat_hints(&mut entry.cell);
            entry.key = want;
            self.builds += 1;
        }
        Some(&entry.cell)
    }

    /// Drops cells no longer in the column (after a retry moved a reply into a branch); called
    /// once a draw, before the cells are asked for.
    fn retain(&mut self, col: &Column) {
        self.draws += 1;
        if self.cells.len() > col.transcript.cells.len() * 2 + 16 {
            let live: std::collections::HashSet<u64> = col.transcript.cells.iter().map(Cell::id).collect();
            self.cells.retain(|id, _| live.contains(id));
        }
    }
}

/// Whether a reply holds reasoning: its text, or (Responses API) reasoning items, encrypted or not.
fn thinks(m: &Message) -> bool {
    m.choices.iter().any(|c| !c.reasoning.is_empty()) || m.items.iter().any(is_reasoning_item)
}

fn is_reasoning_item(item: &serde_json::Value) -> bool {
    item.get("type").and_then(serde_json::Value::as_str) == Some("reasoning")
}

/// The chat's hints for collapsed reasoning and folded tool output name keys that act on a
/// selected message; a column has no selection, so they are cut (the inspector and a kept
/// column show everything).
fn drop_chat_hints(cell: &mut CachedCell) {
    if let Some(first) = cell.pre.first_mut() {
        for span in &mut first.spans {
            if let Some(cut) = span.content.find(" (select, t to open)") {
                span.content.to_mut().truncate(cut);
            }
        }
    }
    for line in cell.pre.iter_mut().chain(cell.post.iter_mut()) {
        for span in &mut line.spans {
            if let Some(cut) = span.content.find(" · select, ").filter(|_| span.content.starts_with('…')) {
                span.content.to_mut().truncate(cut);
            }
        }
    }
}

/// The numbers on top of column `i`, flowed into lines of `width`.
#[must_use]
pub fn header_lines(state: &State, cmp: &Compare, i: usize, width: usize) -> Vec<Line<'static>> {
    let Some(col) = cmp.columns.get(i) else { return Vec::new() };
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    let m = ColumnMetrics::of(state, col);
    let mut chips: Vec<(String, Style)> = Vec::new();
    // In an arena before the vote, palaver's own numbers that could tell the models apart
    // (times, the finish reason, token counts, speed, cost) wait for the vote.
    let hidden = cmp.hidden();
    let elapsed = m.elapsed_ms.filter(|_| !hidden).map(fmt::duration).unwrap_or_default();
    let phase = match &m.phase {
        Phase::Ready => ("ready".to_owned(), dim),
        Phase::Waiting => {
            (format!("{} waiting {elapsed}", cells::spinner(state.now_ms)), theme.style(R::StatusStreaming))
        }
        Phase::Streaming => (format!("● streaming {elapsed}"), theme.style(R::StatusStreaming)),
        Phase::Done if hidden => ("✓ done".to_owned(), theme.style(R::Success)),
        Phase::Done => (format!("✓ done in {elapsed}"), theme.style(R::Success)),
        Phase::Cancelled => (format!("■ cancelled at {elapsed}"), theme.style(R::Warning)),
        Phase::Failed(why) => (format!("✗ {why}"), theme.style(R::Error).add_modifier(Modifier::BOLD)),
    };
    // Between requests, the column's tool loop is what it is doing.
    let phase = tools_phase(state, cmp.owner(i)).unwrap_or(phase);
    chips.push((phase.0.trim_end().to_owned(), phase.1));
    let r = &m.reply;
    // What needs attention comes first, so a narrow column cannot cut it off.
    if let Some(note) = &col.note {
        chips.push((format!("↻ {}", sanitize(note)), theme.style(R::Warning)));
    }
    if r.safety_flag {
        chips.push(("⚑ safety".to_owned(), theme.style(R::Warning).add_modifier(Modifier::BOLD)));
    }
    // A reply cut at the token limit names a model that writes long (or a server's cap).
    let finish =
        r.finish_reason.as_deref().filter(|_| !hidden && !matches!(m.phase, Phase::Cancelled | Phase::Failed(_)));
    if let Some(f) = finish.filter(|f| *f != "stop") {
        chips.push((format!("finish {}", sanitize(f)), theme.style(R::Warning)));
    }
    if let Some(ttft) = r.ttft_ms.filter(|_| !hidden) {
        chips.push((format!("ttft {}", fmt::duration(ttft)), dim));
    }
    if hidden && col.last_reply().is_some() {
        chips.push(("numbers after the vote".to_owned(), dim));
    }
    if let Some(tps) = r.tokens_per_s.filter(|_| !hidden) {
        chips.push((format!("{}{tps:.0} tok/s", if r.tps_estimated { "~" } else { "" }), dim));
    }
    let u = &r.usage;
    if let Some(p) = u.prompt.filter(|_| !hidden) {
        let cached =
            u.cached.filter(|c| *c > 0).map(|c| format!(" ({} cached)", fmt::thousands(c))).unwrap_or_default();
        chips.push((format!("in {}{cached}", fmt::thousands(p)), dim));
    }
    if let Some(n) = m.output.filter(|_| !hidden) {
        let est = if m.output_estimated { "~" } else { "" };
        let reasoning =
            u.reasoning.filter(|c| *c > 0).map(|c| format!(" ({} reasoning)", fmt::thousands(c))).unwrap_or_default();
        chips.push((format!("out {est}{}{reasoning}", fmt::thousands(n)), dim));
    }
    if let Some(c) = r.cost.filter(|_| !hidden) {
        chips.push((crate::engine::metrics::money_label(c, r.cost_estimated), dim));
    }
    // With `--logprobs`: how sure each model was, side by side.
    let lp = col.last_reply().and_then(|m| crate::engine::logprobs::stats_of(&m.main().logprobs));
    if let Some(s) = lp.filter(|_| !hidden) {
        chips.push((format!("logprob {:.2} · ppl {:.2}", s.mean_logprob, s.perplexity), dim));
    }
    if m.tool_calls > 0 {
        let s = if m.tool_calls == 1 { "" } else { "s" };
        chips.push((format!("⚙ {} tool call{s}", m.tool_calls), theme.style(R::Tool)));
    }
    if finish == Some("stop") {
        chips.push(("finish stop".to_owned(), dim));
    }
    flow(chips, width, dim)
}

/// What a column's tool loop is doing, when it is between requests: calls waiting for the user
/// (the modal asks one at a time), or running.
fn tools_phase(state: &State, owner: Owner) -> Option<(String, Style)> {
    let theme = &state.theme;
    let t = state.tools.turn(owner)?;
    let round = format!("round {}/{}", state.tools.rounds(owner), state.tools.step_limit);
    if !t.queue.is_empty() {
        let text = format!("? {} waiting for approval · {round}", t.queue.len());
        return Some((text, theme.style(R::Warning).add_modifier(Modifier::BOLD)));
    }
    let n = t.running.len();
    let s = if n == 1 { "" } else { "s" };
    let text = format!("{} running {n} tool{s} · {round}", cells::spinner(state.now_ms));
    Some((text, theme.style(R::StatusStreaming)))
}

/// Lays chips out left to right with " · " between them, wrapping at `width`.
fn flow(chips: Vec<(String, Style)>, width: usize, sep: Style) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut w = 0;
    for (text, style) in chips {
        let tw = wrap::width(&text);
        if !cur.is_empty() && w + 3 + tw > width {
            lines.push(Line::from(std::mem::take(&mut cur)));
            w = 0;
        }
        if !cur.is_empty() {
            cur.push(Span::styled(" · ", sep));
            w += 3;
        }
        // A chip wider than the column is cut rather than spilling over the border.
        let text = if tw > width { super::clip(&text, width) } else { text };
        w += wrap::width(&text);
        cur.push(Span::styled(text, style));
    }
    if !cur.is_empty() {
        lines.push(Line::from(cur));
    }
    lines
}

/// A message's header line in a column: who, and how the reply is doing.
fn header(state: &State, m: &Message, hidden: Option<&str>) -> Line<'static> {
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    match m.role() {
        Role::User => Line::from(Span::styled("you", theme.style(R::User).add_modifier(Modifier::BOLD))),
        Role::Assistant => {
            // In an arena before the vote the reply is signed with the column's letter only.
            let name = match hidden {
                Some(letter) => letter.to_owned(),
                None => sanitize(&crate::engine::target::model_label(m.model.as_deref(), m.meta.model.as_deref()))
                    .into_owned(),
            };
            let mut spans = vec![Span::styled(name, theme.style(R::Assistant).add_modifier(Modifier::BOLD))];
            let meta = match m.status {
                // Nor its time: how long a reply took can name its server.
                MessageStatus::Complete if hidden.is_some() => None,
                MessageStatus::Complete => m.timing.total_ms.map(|t| (fmt::duration(t), R::Dim)),
                _ => cells::status_word(m, state.now_ms),
            };
            if let Some((text, role)) = meta {
                spans.push(Span::styled(" · ", dim));
                spans.push(Span::styled(text, theme.style(role)));
            }
            Line::from(spans)
        }
        Role::Tool => Line::from(Span::styled("tool result", theme.style(R::Tool).add_modifier(Modifier::BOLD))),
        Role::System => Line::from(Span::styled("system", dim.add_modifier(Modifier::BOLD))),
    }
}

/// Draws column `i` into `area` (frame included) with `header_rows` rows of numbers on top;
/// returns where its body went and how it is scrolled.
pub fn draw(
    f: &mut Frame,
    area: Rect,
    state: &State,
    cmp: &Compare,
    i: usize,
    header_rows: usize,
    cache: &mut ColumnCache,
) -> ColumnView {
    let theme = &state.theme;
    let Some(col) = cmp.columns.get(i) else { return ColumnView::default() };
    let focused = cmp.focus == i;
    let keys_here = focused && state.focus == crate::app::state::Focus::Transcript && state.overlays.is_empty();
    let border = theme.style(if keys_here { R::BorderFocused } else { R::Border });
    // Unfocused titles keep the marker's room, so the columns' numbers and names line up.
    let mark = if focused { "▸ " } else { "  " };
    let provider = if col.target.provider == state.target.provider && !cmp_mixed(cmp) {
        String::new()
    } else {
        format!(" · {}", sanitize(&col.target.provider))
    };
    let provider = if cmp.hidden() { String::new() } else { provider + &served_note(col) };
    let mut title = format!(" {mark}{}{provider} ", sanitize(&cmp.label(i)));
    if cmp.full && focused {
        title.push_str("· full width ");
    }
    let title_style = if focused { theme.style(R::Title).add_modifier(Modifier::BOLD) } else { theme.style(R::Title) };
    let max_title = usize::from(area.width.saturating_sub(4));
    let block = Block::bordered()
        .border_style(border)
        .padding(Padding::horizontal(1))
        .title(Span::styled(super::clip(&title, max_title), title_style));
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.width < 4 || inner.height < 2 {
        return ColumnView { column: i, ..ColumnView::default() };
    }
    // The numbers, then a rule, then the conversation.
    let head = header_lines(state, cmp, i, usize::from(inner.width));
    let rows = u16::try_from(header_rows.min(MAX_HEADER_ROWS)).unwrap_or(0).min(inner.height.saturating_sub(2));
    for (r, line) in head.iter().take(usize::from(rows)).enumerate() {
        let y = inner.y + u16::try_from(r).unwrap_or(0);
        f.buffer_mut().set_line(inner.x, y, line, inner.width);
    }
    // The rule joins the frame on both sides: ├────┤.
    let rule_y = inner.y + rows;
    let rule = format!("├{}┤", "─".repeat(usize::from(area.width.saturating_sub(2))));
    f.buffer_mut().set_string(area.x, rule_y, rule, border);
    let body = Rect { x: inner.x, y: rule_y + 1, width: inner.width, height: inner.height - rows - 1 };
    let view = body_view(f, body, state, cmp, i, cache);
    ColumnView {
        column: i,
        area: (body.x, body.y, body.width, body.height),
        frame: (area.x, area.y, area.width, area.height),
        ..view
    }
}

/// ` · served X` when the column's latest reply came from another model than the one asked
/// for (a router, a dated Azure id): the title says both.
fn served_note(col: &crate::app::compare::Column) -> String {
    let last = col.transcript.cells.iter().rev().filter_map(|c| c.message()).find(|m| m.meta.model.is_some());
    last.and_then(|m| crate::engine::target::served_differs(Some(&col.target.model), m.meta.model.as_deref()))
        .map(|s| format!(" · served {}", sanitize(s)))
        .unwrap_or_default()
}

/// Whether the columns talk to more than one provider (then every title names its provider).
fn cmp_mixed(cmp: &Compare) -> bool {
    cmp.columns.windows(2).any(|w| w[0].target.provider != w[1].target.provider)
}

/// Draws the conversation of column `i` into `body`; returns the line count, top and turns.
fn body_view(f: &mut Frame, body: Rect, state: &State, cmp: &Compare, i: usize, cache: &mut ColumnCache) -> ColumnView {
    let theme = &state.theme;
    let Some(col) = cmp.columns.get(i) else { return ColumnView::default() };
    let cells = &col.transcript.cells;
    if cells.is_empty() {
        let hint = "type a prompt below: every column answers it";
        for (r, line) in wrap::plain(hint, usize::from(body.width), theme.style(R::Dim)).iter().enumerate() {
            if let Ok(r) = u16::try_from(r) {
                if r < body.height {
                    f.buffer_mut().set_line(body.x, body.y + r, line, body.width);
                }
            }
        }
        return ColumnView::default();
    }
    cache.retain(col);
    let cols = usize::from(body.width.saturating_sub(INDENT)).max(1);
    let Some(layout) = cache.lay_out(state, cmp, i, cols) else { return ColumnView::default() };
    let (total, turns) = (layout.total, layout.turns.clone());
    let rows = usize::from(body.height);
    let max_top = total.saturating_sub(rows);
    let top = col.scroll.unwrap_or(max_top).min(max_top);
    // The first visible cell, then rows until the body is full.
    let mut index = layout.first_at(top);
    let start = layout.starts.get(index).copied().unwrap_or(0);
    let mut line = top - start;
    let mut y = body.y;
    let bottom = body.y + body.height;
    while y < bottom && index < cells.len() {
        let letter = cmp.hidden().then(|| cmp.label(i));
        let head = cells[index].message().map(|m| header(state, m, letter.as_deref()));
        let Some(cell) = cache.cell(state, cmp, i, index, cols) else { break };
        for r in line..cell.height() {
            if y >= bottom {
                break;
            }
            let body_row = r.checked_sub(usize::from(cell.header));
            match (body_row, &head) {
                (None, Some(h)) => {
                    f.buffer_mut().set_line(body.x, y, h, body.width);
                }
                (Some(b), _) => {
                    if let Some(l) = cell.body_line(b) {
                        let x = if cell.header { body.x + INDENT } else { body.x };
                        f.buffer_mut().set_line(x, y, l, body.width - (x - body.x));
                    }
                }
                (None, None) => {}
            }
            y += 1;
        }
        index += 1;
        line = 0;
    }
    if top < max_top {
        let (text, role) = if col.unseen { (" ↓ new output ", R::Accent) } else { (" ↓ more ", R::Dim) };
        let w = u16::try_from(wrap::width(text)).unwrap_or(0).min(body.width);
        let style = theme.style(role).add_modifier(Modifier::REVERSED);
        f.buffer_mut().set_string(body.x + body.width - w, bottom - 1, text, style);
    }
    ColumnView { column: i, lines: total, top, turns, ..ColumnView::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_text_or_items_count_as_thinking() {
        let mut m = Message::with_text(Role::Assistant, "answer");
        assert!(!thinks(&m));
        m.items.push(serde_json::json!({"type": "message"}));
        assert!(!thinks(&m));
        m.items.push(serde_json::json!({"type": "reasoning", "encrypted_content": "gAAA"}));
        assert!(thinks(&m), "an encrypted reasoning item would show its marker");
        let mut t = Message::with_text(Role::Assistant, "answer");
        t.main_mut().reasoning = "hmm".into();
        assert!(thinks(&t));
    }
}
