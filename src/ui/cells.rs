//! Transcript cells rendered for a width: user, assistant (reasoning, refusal, markdown answer,
//! the streaming tail, tool-call cards, filter and error banners) and notices. Bodies are built
//! here and cached by `cache.rs`; headers are cheap and drawn fresh every frame (they carry the
//! spinner and the selection).

use super::cache::CachedCell;
use super::fmt;
use super::sanitize::sanitize;
use super::theme::{Role as R, Theme};
use super::wrap;
use crate::app::State;
use crate::app::tools::Owner;
use crate::app::transcript::{Cell, Notice, NoticeKind};
use crate::engine::message::{Message, MessageStatus, Role};
use crate::engine::safety::any_flagged;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// Spinner frames for a reply that is waiting.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The spinner frame for the app clock.
#[must_use]
pub fn spinner(now_ms: u64) -> &'static str {
    SPINNER[usize::try_from(now_ms / 100).unwrap_or(0) % SPINNER.len()]
}

/// (Re)builds a cell's cached body for `cols` columns; `owner` says whose transcript the cell
/// is in (the chat's, or a compare column's), for its tool cards.
pub fn build(entry: &mut CachedCell, cell: &Cell, state: &State, cols: usize, owner: Owner) {
    let theme = &state.theme;
    match cell {
        Cell::Notice(n) => {
            entry.header = false;
            entry.pre = notice(n, cols, theme);
            entry.reasoning_at = None;
            entry.md.clear();
            entry.tail.clear();
            entry.post.clear();
        }
        Cell::Message(m) => {
            entry.header = true;
            match m.role() {
                Role::Assistant => assistant(entry, m, state, cols, owner),
                // A tool result is shown on its call's card.
                _ if super::tool_card::hidden(m) => hide(entry),
                role => {
                    let style = match role {
                        Role::User => theme.style(R::Base),
                        _ => theme.style(R::Dim),
                    };
                    let mut lines = wrap::plain(&sanitize(m.text()), cols, style);
                    if role == Role::User {
                        fold_long(&mut lines, m, state, owner);
                        if m.text().is_empty() && !m.attachments.is_empty() {
                            lines.clear();
                        }
                        attachments(&mut lines, &mut entry.images, m, entry.image_mode, cols, theme);
                    }
                    entry.pre = lines;
                    entry.reasoning_at = None;
                    entry.md.clear();
                    entry.tail.clear();
                    entry.post.clear();
                }
            }
        }
    }
}

/// Makes a cell take no rows: a tool result (shown on its call's card), or a turn folded
/// behind a compaction card.
pub fn hide(entry: &mut CachedCell) {
    entry.header = false;
    entry.pre.clear();
    entry.reasoning_at = None;
    entry.md.clear();
    entry.tail.clear();
    entry.post.clear();
}

/// A user message longer than about a screenful is folded to that, with a line saying how
/// much is hidden and which key shows it (the same key that opens tool outputs).
fn fold_long(lines: &mut Vec<Line<'static>>, m: &Message, state: &State, owner: Owner) {
    use crate::app::keymap::Action;
    let limit = usize::from(state.size.1).saturating_sub(12).max(6);
    if lines.len() <= limit + 1 {
        return;
    }
    let dim = state.theme.style(R::Dim);
    let toggle = state.keymap.hint(Action::ToggleOutput);
    if owner == Owner::Chat && state.tools.open.contains(&m.id) {
        lines.push(Line::from(Span::styled(format!("▴ {toggle} folds this message"), dim)));
        return;
    }
    let hidden = lines.len() - limit;
    lines.truncate(limit);
    let select = state.keymap.hint(Action::Select);
    lines.push(Line::from(Span::styled(
        format!(
            "▾ {} more lines · select the message ({select}) and press {toggle} to show all",
            fmt::thousands(hidden as u64)
        ),
        dim,
    )));
}

fn notice(n: &Notice, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    let (mark, role) = match n.kind {
        NoticeKind::Info => ("· ", R::Notice),
        NoticeKind::Error => ("✗ ", R::Error),
    };
    let text = format!("{mark}{}", sanitize(&n.text));
    wrap::plain(&text, cols, theme.style(role))
}

fn assistant(entry: &mut CachedCell, m: &Message, state: &State, cols: usize, owner: Owner) {
    let (expanded, theme) = (state.reasoning_expanded(m), &state.theme);
    let main = m.main();
    let live = m.is_live();
    // Reasoning and refusal come before the answer.
    let mut pre = Vec::new();
    let mut reasoning_at = None;
    if !main.reasoning.is_empty() {
        let dim = theme.style(R::Reasoning);
        if expanded {
            pre.push(Line::from(Span::styled("▾ reasoning", dim.add_modifier(Modifier::BOLD))));
            // Its rows are read from `entry.reasoning` where they go, not copied here.
            entry.reasoning.update(&main.reasoning, cols, dim);
            reasoning_at = Some(pre.len());
            pre.push(Line::default());
        } else {
            let words = main.reasoning.split_whitespace().count();
            pre.push(Line::from(Span::styled(format!("▸ reasoning · {words} words (select, t to open)"), dim)));
        }
    }
    if !main.refusal.is_empty() {
        let text = format!("⚠ refused: {}", sanitize(&main.refusal));
        pre.extend(wrap::plain(&text, cols, theme.style(R::Warning).add_modifier(Modifier::BOLD)));
    }
    pre.extend(super::item_card::leading(m, state, cols));
    if let Some(c) = &m.compaction {
        let card = super::compaction::card(m, c, state, cols);
        reasoning_at = reasoning_at.map(|at| at + card.len());
        pre.splice(0..0, card);
    }
    entry.pre = pre;
    entry.reasoning_at = reasoning_at;

    // An answer checked against a schema is drawn as JSON, once it has finished.
    let json = state.json_views.get(m.id).filter(|_| !live);
    if let Some(view) = json {
        entry.pre.extend(super::json_view::lines(view, state.json_views.folded(m.id), cols, theme));
        entry.md.clear();
    }
    // Complete lines are markdown; the line still arriving stays plain until it completes.
    // A rendering behind the text (the frame's layout budget) shows as far as it got.
    let content = &main.content;
    let committed = if json.is_some() { content.len() } else { entry.md.update(content, live, cols, theme) };
    let tail = &content[committed..];
    if live && !tail.is_empty() && !entry.md.behind() {
        let (width, cursor) = (cols.saturating_sub(1).max(1), Span::styled("▌", theme.style(R::Accent)));
        entry.tail.update(committed, tail, width, theme.style(R::Base), Some(cursor));
    } else {
        entry.tail.clear();
    }
    let mut post = Vec::new();
    post.extend(super::item_card::trailing(m, state, cols));
    post.extend(super::tool_card::cards(m, state, cols, owner));
    post.extend(banners(m, cols, theme));
    let before = entry.pre_len() + entry.md.len();
    generated_images(&mut post, &mut entry.images, m, entry.image_mode, cols, before, theme);
    entry.post = post;
}

/// A user message's attachments: one line each (name, type, pixel size, bytes), and for an
/// image the rows its picture is drawn over.
fn attachments(
    lines: &mut Vec<Line<'static>>,
    slots: &mut Vec<super::images::Slot>,
    m: &Message,
    mode: super::images::Mode,
    cols: usize,
    theme: &Theme,
) {
    for a in &m.attachments {
        let missing = if a.data.is_none() && a.url.is_none() { " · bytes not kept" } else { "" };
        let text = format!("▣ {}{missing}", sanitize(&a.describe()));
        lines.extend(wrap::plain(&text, cols, theme.style(R::Accent)));
        if let Some(slot) = super::images::slot_for(a, lines.len(), cols, mode) {
            lines.extend(std::iter::repeat_n(Line::default(), usize::from(slot.rows)));
            slots.push(slot);
        }
    }
}

/// Images a model generated and palaver saved: the rows their pictures are drawn over, after
/// the reply's cards. `before` is the body rows that come before `post`.
fn generated_images(
    post: &mut Vec<Line<'static>>,
    slots: &mut Vec<super::images::Slot>,
    m: &Message,
    mode: super::images::Mode,
    cols: usize,
    before: usize,
    theme: &Theme,
) {
    for call in m.main().tool_calls.iter() {
        for a in &call.images {
            let Some(slot) = super::images::slot_for(a, before + post.len() + 1, cols, mode) else { continue };
            let text = format!("▣ {} · {}", sanitize(&call.name), sanitize(&a.describe()));
            post.push(Line::from(Span::styled(text, theme.style(R::Accent))));
            post.extend(std::iter::repeat_n(Line::default(), usize::from(slot.rows)));
            slots.push(slot);
        }
    }
    for note in m.item_notes.values() {
        let Some(path) = note.get("saved_path").and_then(|p| p.as_str()) else { continue };
        if let Some(slot) = super::images::slot_for_file(path, before + post.len() + 1, cols, mode) {
            let text = format!("▣ generated image · {}", sanitize(&slot.label));
            post.push(Line::from(Span::styled(text, theme.style(R::Accent))));
            post.extend(std::iter::repeat_n(Line::default(), usize::from(slot.rows)));
            slots.push(slot);
        }
    }
}

/// Banners on the message itself: content filter, flagged safety, cut short, cancelled, errors.
fn banners(m: &Message, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    let main = m.main();
    let mut out = Vec::new();
    let strong = |r: R| -> Style { theme.style(r).add_modifier(Modifier::BOLD) };
    let filtered = crate::engine::safety::filtered_categories(main.content_filter.as_ref());
    if main.finish_reason.as_deref() == Some("content_filter") {
        let why = if filtered.is_empty() { String::new() } else { format!(" ({})", filtered.join(", ")) };
        let text = format!("⊘ stopped by the provider's content filter{why}");
        out.extend(wrap::plain(&sanitize(&text), cols, strong(R::Error)));
    } else if main.content_filter.as_ref().is_some_and(any_flagged) {
        let text = if filtered.is_empty() {
            "⚠ the safety filter flagged this reply (see Safety)".to_owned()
        } else {
            format!("⚠ filtered: {}", filtered.join(", "))
        };
        out.extend(wrap::plain(&sanitize(&text), cols, strong(R::Warning)));
    }
    if main.finish_reason.as_deref() == Some("length") {
        out.push(Line::from(Span::styled(
            "… cut off at the token limit (finish_reason: length)",
            theme.style(R::Warning),
        )));
    }
    match m.status {
        MessageStatus::Cancelled => {
            let text = if m.arrived_any() {
                "■ cancelled — the partial reply is kept"
            } else {
                "■ cancelled before any reply arrived"
            };
            out.push(Line::from(Span::styled(text, strong(R::Warning))));
        }
        MessageStatus::Failed | MessageStatus::Interrupted => {
            let text = match &m.error {
                Some(e) => {
                    let status = e.status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
                    format!("✗ {} error: {status}{}", e.kind, e.message)
                }
                None => "✗ the reply failed".to_owned(),
            };
            out.extend(wrap::plain(&sanitize(&text), cols, strong(R::Error)));
        }
        _ => {}
    }
    out
}

/// The header line of a message cell: who, and how the reply is doing.
#[must_use]
pub fn header(state: &State, m: &Message, index: usize) -> Line<'static> {
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    let selected = state.selected == Some(m.id);
    let mut label_style = match m.role() {
        Role::User => theme.style(R::User),
        Role::Assistant => theme.style(R::Assistant),
        Role::Tool => theme.style(R::Tool),
        Role::System => dim,
    }
    .add_modifier(Modifier::BOLD);
    if selected {
        label_style = label_style.patch(theme.style(R::Selection));
    }
    let label = match m.role() {
        Role::User => "you".to_owned(),
        // A server that answers with another model than the one asked for shows both.
        Role::Assistant => {
            sanitize(&crate::engine::target::model_label(m.model.as_deref(), m.meta.model.as_deref())).into_owned()
        }
        Role::Tool => "tool result".to_owned(),
        Role::System => "system".to_owned(),
    };
    let mut spans = vec![Span::styled(label, label_style)];
    let mut meta: Vec<(String, Style)> = Vec::new();
    if m.role() == Role::Assistant {
        let t = &m.timing;
        match m.status {
            MessageStatus::Complete => {
                if let Some(total) = t.total_ms {
                    meta.push((fmt::duration(total), dim));
                }
                if let Some(n) = m.usage.as_ref().and_then(|u| crate::engine::usage::UsageView::from_raw(u).completion)
                {
                    meta.push((format!("{} tokens", fmt::thousands(n)), dim));
                }
            }
            _ => meta.extend(status_word(m, state.now_ms).map(|(w, role)| (w, theme.style(role)))),
        }
    }
    if state.editing == Some(m.id) {
        meta.push(("editing".to_owned(), theme.style(R::Accent)));
    }
    let versions = state.transcript.versions_at(index);
    if versions > 0 {
        let s = if versions == 1 { "" } else { "s" };
        meta.push((format!("{versions} other version{s} ([ ])"), dim));
    }
    for (text, style) in meta {
        spans.push(Span::styled(" · ", dim));
        spans.push(Span::styled(text, style));
    }
    Line::from(spans)
}

/// The word a reply's header shows for a state other than complete: the spinner while it
/// waits, and for one that ended early what ended it (a connect failure is not "interrupted").
#[must_use]
pub fn status_word(m: &crate::engine::Message, now_ms: u64) -> Option<(String, R)> {
    let word = match m.status {
        MessageStatus::Complete => return None,
        MessageStatus::Waiting => return Some((format!("{} waiting", spinner(now_ms)), R::StatusStreaming)),
        MessageStatus::Streaming => return Some(("● streaming".to_owned(), R::StatusStreaming)),
        MessageStatus::Cancelled => return Some(("cancelled".to_owned(), R::Warning)),
        MessageStatus::Failed => "failed",
        MessageStatus::Interrupted => match m.error.as_ref().map(|e| e.kind.as_str()) {
            Some("connect") => "could not connect",
            Some("connect_timeout") => "connect timed out",
            Some("first_byte_timeout") => "no response",
            Some("idle_timeout") => "stalled",
            Some("redirect") => "redirect refused",
            Some("request") => "request failed",
            Some("truncated") => "cut off",
            Some("limit") => "over a limit",
            _ => "interrupted",
        },
    };
    Some((word.to_owned(), R::Error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::message::{ErrorInfo, Message};

    fn ended(kind: &str) -> Message {
        let mut m = Message::assistant_pending();
        m.status = MessageStatus::Interrupted;
        m.error =
            Some(ErrorInfo { status: None, message: String::new(), kind: kind.into(), body: serde_json::Value::Null });
        m
    }

    #[test]
    fn what_ended_a_reply_is_named() {
        let word = |m: &Message| status_word(m, 0).map(|(w, _)| w);
        assert_eq!(word(&ended("connect")).as_deref(), Some("could not connect"));
        assert_eq!(word(&ended("idle_timeout")).as_deref(), Some("stalled"));
        assert_eq!(word(&ended("something new")).as_deref(), Some("interrupted"));
        let mut done = ended("connect");
        done.status = MessageStatus::Complete;
        assert_eq!(word(&done), None);
    }
}
