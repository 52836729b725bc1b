//! The conversation list overlay: a search field, a status line, then either the stored
//! conversations (title, model, date, message count; the one on screen marked `•`) or the
//! search hits (conversation, role and date over a snippet with the matched words
//! highlighted). A compare is one row (`compare · N models`, `+` before its title) whose
//! columns show under it, `├ column 1` with their models, once expanded. Rename edits the
//! selected title in place; delete asks on the last line.

use super::theme::Role as R;
use super::wrap::width;
use crate::app::State;
use crate::app::conversations::{ColumnRow, ConversationList, HitRow, ListFocus, Mode, Row, Selected};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use unicode_width::UnicodeWidthChar;

/// Widest the overlay gets.
const MAX_W: u16 = 110;
/// Tallest the overlay gets.
const MAX_H: u16 = 32;
/// Shortest, so typing a search does not make it jump for every result count.
const MIN_H: u16 = 14;

pub fn draw(f: &mut Frame, state: &State, list: &ConversationList) {
    let theme = &state.theme;
    let screen = f.area();
    // As tall as the entries need (a search's hits take three lines each), within limits.
    let entries = if list.searching_mode() { list.hits.len() * 3 } else { list.lines().len() + 1 };
    let want = u16::try_from(entries + 5).unwrap_or(u16::MAX).clamp(MIN_H, MAX_H);
    let w = MAX_W.min(screen.width.saturating_sub(2)).max(1.min(screen.width));
    let h = want.min(screen.height.saturating_sub(2)).max(1.min(screen.height));
    let area =
        Rect { x: screen.x + (screen.width - w) / 2, y: screen.y + (screen.height - h) / 2, width: w, height: h };
    let hint = match (&list.mode, list.focus, list.selected_entry()) {
        (Mode::Browse, _, Some(Selected::Row(r))) if r.is_compare() && w >= 70 => {
            "Enter reopen side by side · → its columns · Tab: rename/delete · Esc"
        }
        (Mode::Browse, _, Some(Selected::Row(r))) if r.is_compare() => "Enter reopen · → columns · Esc",
        (Mode::Browse, _, Some(Selected::Column(..))) if w >= 70 => {
            "Enter open this column as a chat · ← back to the compare · Esc"
        }
        (Mode::Browse, _, Some(Selected::Column(..))) => "Enter open column · ← back · Esc",
        (Mode::Rename(_), _, _) => "Enter save · Esc cancel",
        (Mode::ConfirmDelete, _, _) => "y delete · any other key keeps it",
        (Mode::Browse, ListFocus::Search, _) if w >= 70 => {
            "type to search · ↑↓ · Enter open · Tab: rename/delete/new · Esc"
        }
        (Mode::Browse, ListFocus::Search, _) => "↑↓ · Enter open · Tab: r/d/n · Esc",
        (Mode::Browse, ListFocus::Rows, _) if w >= 62 => "Enter open · r rename · d delete · n new · / search · Esc",
        (Mode::Browse, ListFocus::Rows, _) => "Enter · r rename · d delete · n new · Esc",
    };
    let block = Block::bordered()
        .border_style(theme.style(R::BorderFocused))
        .title(Span::styled(" Conversations ", theme.style(R::Title).add_modifier(Modifier::BOLD)))
        .title_bottom(Line::from(Span::styled(format!(" {hint} "), theme.style(R::Dim))).right_aligned())
        .style(theme.style(R::Base));
    let inner = block.inner(area);
    f.render_widget(Clear, area);
    f.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    let cols = usize::from(inner.width);
    let mut lines = vec![search_line(state, list, cols), status_line(state, list, cols)];
    let footer = confirm_line(state, list, cols);
    let room = usize::from(inner.height).saturating_sub(lines.len() + usize::from(footer.is_some()));
    if list.searching_mode() {
        hit_lines(state, list, cols, room, &mut lines);
    } else {
        row_lines(state, list, cols, room, &mut lines);
    }
    if let Some(footer) = footer {
        lines.resize(usize::from(inner.height) - 1, Line::default());
        lines.push(footer);
    }
    f.render_widget(Paragraph::new(lines), inner);
}

fn search_line(state: &State, list: &ConversationList, cols: usize) -> Line<'static> {
    let theme = &state.theme;
    let focused = list.focus == ListFocus::Search && list.mode == Mode::Browse;
    let mut spans = vec![Span::styled("Search: ", theme.style(if focused { R::Accent } else { R::Dim }))];
    if list.query.is_empty() {
        if focused {
            spans.push(Span::styled("▏", theme.style(R::Accent)));
            spans.push(Span::styled("type words to search every message", theme.style(R::Dim)));
        } else {
            spans.push(Span::styled("/ to search every message", theme.style(R::Dim)));
        }
    } else {
        spans.push(Span::styled(clean(&list.query), theme.style(R::Base)));
        if focused {
            spans.push(Span::styled("▏", theme.style(R::Accent)));
        }
    }
    Line::from(truncate(spans, cols))
}

fn status_line(state: &State, list: &ConversationList, cols: usize) -> Line<'static> {
    let theme = &state.theme;
    let spin = super::cells::spinner(state.now_ms);
    let (text, role) = if let Some(e) = &list.error {
        (clean(e), R::Error)
    } else if list.searching_mode() {
        let n = list.hits.len();
        match (list.searching, n) {
            (true, _) => (format!("{spin} searching…"), R::Dim),
            (false, 0) => (format!("no message matches “{}”", clean(list.query.trim())), R::Dim),
            (false, n) if n >= crate::app::conversations::MAX_HITS => (format!("the newest {n} matches"), R::Dim),
            (false, n) => (format!("{n} match{}", if n == 1 { "" } else { "es" }), R::Dim),
        }
    } else if list.loading && list.rows.is_empty() {
        (format!("{spin} loading…"), R::Dim)
    } else if list.rows.is_empty() {
        (String::new(), R::Dim)
    } else {
        let compares = list.rows.iter().filter(|r| r.is_compare()).count();
        let n = list.rows.len() - compares;
        let more = if list.more { "+" } else { "" };
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let what = match (n, compares) {
            (n, 0) => format!("{n}{more} conversation{}", plural(n)),
            (0, c) => format!("{c}{more} compare{}", plural(c)),
            (n, c) => format!("{n} conversation{} and {c} compare{}{more}", plural(n), plural(c)),
        };
        (format!("{what}, newest first"), R::Dim)
    };
    Line::from(truncate(vec![Span::styled(text, theme.style(role))], cols))
}

/// The delete question, when one is asked.
fn confirm_line(state: &State, list: &ConversationList, cols: usize) -> Option<Line<'static>> {
    if list.mode != Mode::ConfirmDelete {
        return None;
    }
    let (_, title, count) = list.selection()?;
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let (kind, what) = match (list.selected_entry(), count) {
        (Some(Selected::Row(r)), Some(n)) if r.is_compare() => {
            let k = r.columns.len() as u64;
            ("compare ", format!(" ({k} column{}, {n} message{})", plural(k), plural(n)))
        }
        (Some(Selected::Column(_, c)), Some(n)) => ("", format!(" (column {}, {n} message{})", c.number, plural(n))),
        (_, Some(n)) => ("", format!(" ({n} message{})", plural(n))),
        (_, None) => ("", String::new()),
    };
    let strong = state.theme.style(R::Error).add_modifier(Modifier::BOLD);
    // The question ends on the keys, so a long title is what gets cut.
    let keys = "? y/N";
    let room = cols.saturating_sub(width(keys) + width(&what) + width(kind) + 9);
    let title = truncate(vec![Span::raw(clean(title))], room).into_iter().map(|s| s.content).collect::<String>();
    let spans = vec![Span::styled(format!("Delete {kind}“{title}”{what}"), strong), Span::styled(keys, strong)];
    Some(Line::from(truncate(spans, cols)))
}

/// First entry to show so that `selected` is visible in `room` entries.
fn first_shown(selected: usize, room: usize) -> usize {
    selected.saturating_sub(room.saturating_sub(1))
}

fn row_lines(state: &State, list: &ConversationList, cols: usize, room: usize, lines: &mut Vec<Line<'static>>) {
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    if list.rows.is_empty() {
        if !list.loading && list.error.is_none() {
            lines.push(Line::default());
            lines.push(Line::from(Span::styled(
                "  No saved conversations yet: every conversation is saved as you chat.",
                dim,
            )));
        }
        return;
    }
    let shown = list.lines();
    let columns = || shown.iter().filter_map(|&(r, c)| list.rows.get(r)?.columns.get(c?));
    let model_w = list.rows.iter().map(|r| width(&r.model)).chain(columns().map(|c| width(&c.model))).max();
    let model_w = model_w.unwrap_or(0).min(18);
    let show_model = cols >= 64 && model_w > 0;
    let count_w = list.rows.iter().map(|r| count(r.messages).len()).max().unwrap_or(0);
    let right_w = 16 + 2 + count_w + if show_model { model_w + 2 } else { 0 };
    let title_w = cols.saturating_sub(4 + right_w + 2).max(8);
    let widths = (title_w, model_w, count_w, show_model);
    for (i, &(row, column)) in shown.iter().enumerate().skip(first_shown(list.selected, room)).take(room) {
        let selected = i == list.selected;
        let Some(r) = list.rows.get(row) else { continue };
        let line = match column.and_then(|c| r.columns.get(c).map(|col| (c, col))) {
            Some((c, col)) => column_line(state, list, col, c + 1 == r.columns.len(), selected, widths, cols),
            None => row_line(state, list, r, selected, widths, cols),
        };
        lines.push(line);
    }
}

/// A compare's column under it: `├ column 2` where a title goes, then its model, date and count.
#[allow(clippy::similar_names)]
fn column_line(
    state: &State,
    list: &ConversationList,
    c: &ColumnRow,
    last: bool,
    selected: bool,
    (title_w, model_w, count_w, show_model): (usize, usize, usize, bool),
    cols: usize,
) -> Line<'static> {
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    let current = list.current.as_deref() == Some(c.id.as_str());
    let branch = if last { "└" } else { "├" };
    let mut spans = row_marks(selected, current, theme);
    let mut label = vec![Span::styled(format!("  {branch} column {}", c.number), dim)];
    if !show_model {
        label.push(Span::styled(format!(" · {}", clean(&c.model)), theme.style(R::Assistant)));
    }
    spans.extend(pad(label, title_w));
    let model = show_model.then_some((c.model.as_str(), model_w));
    finish_row(row_tail(spans, model, &c.date, c.messages, count_w, theme), cols, selected, theme)
}

#[allow(clippy::similar_names)]
fn row_line(
    state: &State,
    list: &ConversationList,
    r: &Row,
    selected: bool,
    (title_w, model_w, count_w, show_model): (usize, usize, usize, bool),
    cols: usize,
) -> Line<'static> {
    let theme = &state.theme;
    let current = list.current.as_deref() == Some(r.id.as_str())
        || (r.is_compare() && list.current_group.as_deref() == Some(r.id.as_str()));
    let mut spans = row_marks(selected, current, theme);
    match (&list.mode, selected) {
        (Mode::Rename(input), true) => {
            let text = format!("{}▏", clean(input));
            spans.extend(pad(vec![Span::styled(text, theme.style(R::Accent).add_modifier(Modifier::BOLD))], title_w));
        }
        _ => {
            let style = if current { theme.style(R::Base).add_modifier(Modifier::BOLD) } else { theme.style(R::Base) };
            let mut title = Vec::new();
            if r.is_compare() {
                // `+` folded, `−` with its columns showing under it.
                let sign = if list.expanded.contains(&r.id) { "− " } else { "+ " };
                title.push(Span::styled(sign, theme.style(R::Accent)));
            }
            title.push(Span::styled(clean(&r.title), style));
            spans.extend(pad(title, title_w));
        }
    }
    let model = show_model.then_some((r.model.as_str(), model_w));
    finish_row(row_tail(spans, model, &r.date, r.messages, count_w, theme), cols, selected, theme)
}

/// A row's first two marks: the selection arrow and the dot of the conversation on screen.
fn row_marks(selected: bool, current: bool, theme: &crate::ui::theme::Theme) -> Vec<Span<'static>> {
    vec![
        Span::styled(if selected { "▸ " } else { "  " }, theme.style(R::Accent)),
        Span::styled(if current { "• " } else { "  " }, theme.style(R::Accent)),
    ]
}

/// A row's last columns: the model (when it has a column of its own), the date, the count.
fn row_tail(
    mut spans: Vec<Span<'static>>,
    model: Option<(&str, usize)>,
    date: &str,
    messages: u64,
    count_w: usize,
    theme: &crate::ui::theme::Theme,
) -> Vec<Span<'static>> {
    let dim = theme.style(R::Dim);
    if let Some((model, model_w)) = model {
        spans.push(Span::raw("  "));
        spans.extend(pad(vec![Span::styled(clean(model), theme.style(R::Assistant))], model_w));
    }
    spans.push(Span::styled(format!("  {date}"), dim));
    spans.push(Span::styled(format!("  {:>count_w$}", count(messages)), dim));
    spans
}

/// A row cut to the width, patched with the selection's style when it is the selected one.
fn finish_row(
    spans: Vec<Span<'static>>,
    cols: usize,
    selected: bool,
    theme: &crate::ui::theme::Theme,
) -> Line<'static> {
    let mut spans = truncate(spans, cols);
    if selected {
        for s in &mut spans {
            s.style = s.style.patch(theme.style(R::Selection));
        }
    }
    Line::from(spans)
}

fn count(n: u64) -> String {
    format!("{n} msg{}", if n == 1 { "" } else { "s" })
}

fn hit_lines(state: &State, list: &ConversationList, cols: usize, room: usize, lines: &mut Vec<Line<'static>>) {
    // Each hit takes two lines and a blank one between hits.
    let per = room / 3 + usize::from(room % 3 == 2);
    for (i, h) in list.hits.iter().enumerate().skip(first_shown(list.selected, per.max(1))).take(per.max(1)) {
        if lines.len() > 2 {
            lines.push(Line::default());
        }
        let selected = i == list.selected;
        let [head, snippet] = hit_pair(state, list, h, selected, cols);
        lines.push(head);
        lines.push(snippet);
    }
}

fn hit_pair(state: &State, list: &ConversationList, h: &HitRow, selected: bool, cols: usize) -> [Line<'static>; 2] {
    let theme = &state.theme;
    let current = list.current.as_deref() == Some(h.id.as_str());
    let title = match (&list.mode, selected) {
        (Mode::Rename(input), true) => {
            Span::styled(format!("{}▏", clean(input)), theme.style(R::Accent).add_modifier(Modifier::BOLD))
        }
        _ => Span::styled(clean(&h.title), theme.style(R::Base).add_modifier(Modifier::BOLD)),
    };
    let role = match h.role.as_str() {
        "user" => Span::styled("you", theme.style(R::User)),
        "assistant" => Span::styled("reply", theme.style(R::Assistant)),
        "tool" => Span::styled("tool result", theme.style(R::Tool)),
        other => Span::styled(clean(other), theme.style(R::Dim)),
    };
    let mut head = vec![
        Span::styled(if selected { "▸ " } else { "  " }, theme.style(R::Accent)),
        Span::styled(if current { "• " } else { "  " }, theme.style(R::Accent)),
        title,
        Span::styled(" · ", theme.style(R::Dim)),
        role,
    ];
    if h.group.is_some() {
        // A compare's column: whose answer it is matters.
        head.push(Span::styled(format!(" · {} in a compare", clean(&h.model)), theme.style(R::Dim)));
    }
    head.push(Span::styled(format!(" · {}", h.date), theme.style(R::Dim)));
    head = truncate(head, cols);
    let mut snippet = vec![Span::raw("    ")];
    snippet.extend(near_first_match(
        highlighted(state, &h.snippet, &h.ranges),
        match_style(state),
        cols.saturating_sub(4),
    ));
    let mut snippet = truncate(snippet, cols);
    if selected {
        let sel = theme.style(R::Selection);
        for s in head.iter_mut() {
            s.style = s.style.patch(sel);
        }
        let mark = match_style(state);
        for s in snippet.iter_mut().filter(|s| s.style != mark) {
            s.style = s.style.patch(sel);
        }
    }
    [Line::from(head), Line::from(snippet)]
}

/// How a matched word is shown.
#[must_use]
pub fn match_style(state: &State) -> Style {
    state.theme.style(R::Accent).add_modifier(Modifier::BOLD | Modifier::REVERSED)
}

/// The snippet on one line with its `ranges` highlighted: runs of whitespace (indented code,
/// line breaks) become one space. Ranges that do not fall on character boundaries (they come
/// from the database) are ignored rather than trusted.
fn highlighted(state: &State, snippet: &str, ranges: &[std::ops::Range<usize>]) -> Vec<Span<'static>> {
    let base = state.theme.style(R::Base);
    let mark = match_style(state);
    // `at[i]` is where byte `i` of the snippet lands in `flat`.
    let mut flat = String::with_capacity(snippet.len());
    let mut at = vec![0; snippet.len() + 1];
    let mut last_space = false;
    for (i, c) in snippet.char_indices() {
        at[i] = flat.len();
        let space = c.is_whitespace();
        if !(space && last_space) {
            flat.push(if space { ' ' } else { c });
        }
        last_space = space;
    }
    at[snippet.len()] = flat.len();
    let mut out = Vec::new();
    let mut done = 0;
    for r in ranges {
        let ok = r.start < r.end
            && r.end <= snippet.len()
            && snippet.is_char_boundary(r.start)
            && snippet.is_char_boundary(r.end)
            && at[r.start] >= done;
        if !ok {
            continue;
        }
        let (start, end) = (at[r.start], at[r.end]);
        if start > done {
            out.push(Span::styled(clean(&flat[done..start]), base));
        }
        out.push(Span::styled(clean(&flat[start..end]), mark));
        done = end;
    }
    if done < flat.len() {
        out.push(Span::styled(clean(&flat[done..]), base));
    }
    out
}

/// Drops the start of a snippet whose first match would not show in `cols` columns, keeping
/// a little context before it behind a `…`.
fn near_first_match(spans: Vec<Span<'static>>, mark: Style, cols: usize) -> Vec<Span<'static>> {
    const CONTEXT: usize = 12;
    let before: usize = spans.iter().take_while(|s| s.style != mark).map(|s| width(&s.content)).sum();
    let first = spans.iter().find(|s| s.style == mark).map_or(0, |s| width(&s.content));
    if before + first <= cols.saturating_sub(4) || before <= CONTEXT {
        return spans;
    }
    let mut drop = before - CONTEXT;
    let mut out = Vec::with_capacity(spans.len() + 1);
    for s in spans {
        if drop == 0 || s.style == mark {
            drop = 0;
            out.push(s);
            continue;
        }
        let w = width(&s.content);
        if w <= drop {
            drop -= w;
            continue;
        }
        let mut skipped = 0;
        let rest: String = s
            .content
            .chars()
            .skip_while(|c| {
                let cw = c.width().unwrap_or(0);
                let skip = skipped + cw <= drop;
                if skip {
                    skipped += cw;
                }
                skip
            })
            .collect();
        drop = 0;
        out.push(Span::styled(format!("…{}", rest.trim_start_matches('…')), s.style));
    }
    out
}

/// Text from the store or the model, safe for a cell.
fn clean(s: &str) -> String {
    super::wrap::clean(&super::sanitize::sanitize(s)).into_owned()
}

/// Spans padded with spaces (or cut with `…`) to exactly `w` columns.
fn pad(spans: Vec<Span<'static>>, w: usize) -> Vec<Span<'static>> {
    let mut out = truncate(spans, w);
    let used: usize = out.iter().map(|s| width(&s.content)).sum();
    if used < w {
        out.push(Span::raw(" ".repeat(w - used)));
    }
    out
}

/// Spans cut to `cols` columns, ending in `…` when something was cut.
fn truncate(spans: Vec<Span<'static>>, cols: usize) -> Vec<Span<'static>> {
    let total: usize = spans.iter().map(|s| width(&s.content)).sum();
    if total <= cols {
        return spans;
    }
    let budget = cols.saturating_sub(1);
    let mut used = 0;
    let mut out = Vec::new();
    let mut last_style = Style::default();
    for s in spans {
        last_style = s.style;
        let mut text = String::new();
        for c in s.content.chars() {
            let cw = c.width().unwrap_or(0);
            if used + cw > budget {
                break;
            }
            used += cw;
            text.push(c);
        }
        let full = text.len() == s.content.len();
        if !text.is_empty() {
            out.push(Span::styled(text, s.style));
        }
        if !full {
            break;
        }
    }
    if cols > 0 {
        out.push(Span::styled("…", last_style));
    }
    out
}
