//! The compare screen: 2–4 columns side by side (or the focused one full width, or the diff of
//! two), the metrics strip under them, the shared composer and a status line. Pure drawing
//! from `&State` plus the columns' own render caches; it reports where the columns went and how
//! they are scrolled so keys and the mouse can act on them.

pub mod columns;
pub mod diff;
pub mod metrics;
pub mod strip;
pub mod vote;

use super::theme::Role as R;
use super::{RenderCache, composer, overlays, wrap};
use crate::app::State;
use crate::app::compare::{Compare, CompareView};
use crate::app::keymap::Action;
use crate::app::msg::ViewReport;
use crate::app::state::Focus;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Padding, Paragraph};

/// Screens shorter than this leave the metrics strip out (the columns need the rows).
const STRIP_MIN_HEIGHT: u16 = 22;

/// The compare screen's caches: one per column, and the diff.
#[derive(Debug, Default)]
pub struct Caches {
    pub columns: Vec<columns::ColumnCache>,
    pub diff: diff::DiffCache,
}

pub use super::wrap::ellipsize as clip;

/// Draws the compare screen; returns the view report (the chat's own scroll position is kept).
pub fn draw(f: &mut Frame, state: &State, cache: &mut RenderCache) -> ViewReport {
    let mut report = ViewReport { compare: CompareView::default(), ..state.view.clone() };
    report.cells.clear();
    let Some(cmp) = state.compare.active.as_ref() else { return report };
    let area = f.area();
    super::fill(f, state.theme.style(R::Base));
    let composer_h = composer::height(state, area.width, area.height);
    let strip_h = if area.height >= STRIP_MIN_HEIGHT && !state.compare.strip_hidden { strip::HEIGHT } else { 0 };
    let vote_h = u16::from(cmp.arena.as_ref().is_some_and(|a| a.awaiting));
    let [main, strip_area, vote_area, composer_area, status_area] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(strip_h),
        Constraint::Length(vote_h),
        Constraint::Length(composer_h),
        Constraint::Length(1),
    ])
    .areas(area);
    let n = cmp.columns.len().max(1);
    let split: Vec<Rect> =
        Layout::horizontal(vec![Constraint::Ratio(1, u32::try_from(n).unwrap_or(1)); n]).split(main).to_vec();
    let caches = &mut cache.compare;
    caches.columns.resize_with(n, Default::default);
    if let Some(d) = cmp.diff {
        let (lines, rows) = diff::draw(f, main, state, cmp, d, &mut caches.diff);
        report.compare.diff_lines = lines;
        report.compare.diff_rows = rows;
    } else {
        let shown: Vec<(usize, Rect)> =
            if cmp.full { vec![(cmp.focus, main)] } else { split.iter().copied().enumerate().collect() };
        // Every column gets as many rows of numbers as the busiest one needs, so bodies line up.
        let header_rows = shown
            .iter()
            .map(|&(i, r)| columns::header_lines(state, cmp, i, usize::from(r.width.saturating_sub(2))).len())
            .max()
            .unwrap_or(1)
            .clamp(1, columns::MAX_HEADER_ROWS);
        // Answers streaming side by side share the frame's layout, so they advance together.
        crate::ui::frame_budget::share_layout(shown.len());
        for (i, r) in shown {
            let view = columns::draw(f, r, state, cmp, i, header_rows, &mut caches.columns[i]);
            report.compare.columns.push(view);
        }
    }
    if strip_h > 0 {
        // Under each column's text: inside its frame and padding.
        let segments: Vec<(u16, u16)> = split.iter().map(|r| (r.x + 2, r.width.saturating_sub(4))).collect();
        strip::draw(f, strip_area, state, cmp, &segments);
    }
    if vote_h > 0 {
        vote::draw(f, vote_area, state, cmp);
    }
    draw_composer(f, composer_area, state, cmp);
    super::slash_menu::draw(f, composer_area, state);
    draw_status(f, status_area, state, cmp);
    overlays::draw(f, state);
    report.composer = (composer_area.x, composer_area.y, composer_area.width, composer_area.height);
    report
}

/// The shared composer; its title says where Enter sends and where the keys are.
fn draw_composer(f: &mut Frame, area: Rect, state: &State, cmp: &Compare) {
    let theme = &state.theme;
    let k = |a| state.keymap.hint(a);
    let focused = state.focus == Focus::Composer && state.overlays.is_empty();
    let live = cmp.live_count();
    let tooling = tool_columns(state, cmp);
    let voting = cmp.arena.as_ref().filter(|a| a.awaiting);
    // "Keep typing" only where typing really lands here.
    let typing = if state.typing_reaches_composer() { " · you can keep typing" } else { "" };
    let title = if state.vote_bar_focused() {
        format!(" keys on the vote bar · {} back to the message ", k(Action::CompareLeave))
    } else if state.focus == Focus::Transcript {
        format!(
            " keys on column {} · {} next · {} full · {} sync · {} diff · {} keep · {} retry · {} back ",
            cmp.focus + 1,
            k(Action::CompareNext),
            k(Action::CompareFull),
            k(Action::CompareSync),
            k(Action::CompareDiff),
            k(Action::CompareKeep),
            k(Action::CompareRetry),
            k(Action::CompareLeave),
        )
    } else if live > 0 {
        let s = if live == 1 { "y" } else { "ies" };
        format!(" {live} repl{s} streaming · {} cancels all{typing} ", k(Action::Cancel))
    } else if tooling > 0 {
        let s = if tooling == 1 { "" } else { "s" };
        format!(" tools running in {tooling} column{s} · {} cancels all{typing} ", k(Action::Cancel))
    } else if let Some(a) = voting {
        let next = match (a.vote.is_some() || a.revealed, cmp.columns.len()) {
            (true, _) => "starts a new battle",
            (false, 2) => "asks both again",
            (false, _) => "asks them all again",
        };
        format!(" message · Enter {next} · {} to the vote bar ", k(Action::CompareColumns))
    } else {
        format!(
            " message to {} models · Enter sends to all · {} to the columns ",
            cmp.columns.len(),
            k(Action::CompareColumns)
        )
    };
    let border = theme.style(if focused { R::BorderFocused } else { R::Border });
    let block = Block::bordered()
        .border_style(border)
        .padding(Padding::horizontal(1))
        .title(Span::styled(clip(&title, usize::from(area.width.saturating_sub(2))), theme.style(R::Title)));
    let inner = block.inner(area);
    f.render_widget(block, area);
    composer::draw_inside(f, inner, state, focused);
}

/// Columns whose tool loop is between requests (calls running or waiting for the user).
fn tool_columns(state: &State, cmp: &Compare) -> usize {
    (0..cmp.columns.len()).filter(|&i| state.tools.turn(cmp.owner(i)).is_some()).count()
}

/// "compare · 2 streaming · 1 done · sync" on the left, a flash or key hints on the right.
fn draw_status(f: &mut Frame, area: Rect, state: &State, cmp: &Compare) {
    let theme = &state.theme;
    let bar = theme.style(R::StatusBar);
    let dim = theme.style(R::Dim);
    let (mut live, mut done, mut failed) = (0, 0, 0);
    for (i, c) in cmp.columns.iter().enumerate() {
        match c.last_reply().map(|m| m.status) {
            _ if c.live.is_some() => live += 1,
            // Between two requests of its tool loop a column is not done yet.
            _ if state.tools.turn(cmp.owner(i)).is_some() => {}
            Some(crate::engine::MessageStatus::Complete) => done += 1,
            Some(crate::engine::MessageStatus::Failed | crate::engine::MessageStatus::Interrupted) => failed += 1,
            _ => {}
        }
    }
    let mut left = vec![Span::styled(format!(" compare · {} models", cmp.columns.len()), bar)];
    let mut add = |text: String, role: R| {
        left.push(Span::styled(" · ", dim));
        left.push(Span::styled(text, theme.style(role)));
    };
    if live > 0 {
        add(format!("{} {live} streaming", super::cells::spinner(state.now_ms)), R::StatusStreaming);
    }
    let tooling = tool_columns(state, cmp);
    if tooling > 0 {
        add(format!("⚙ {tooling} using tools"), R::Tool);
    }
    if done > 0 {
        add(format!("✓ {done} done"), R::Success);
    }
    if failed > 0 {
        add(format!("✗ {failed} failed"), R::StatusError);
    }
    if cmp.sync {
        add("⇅ sync".to_owned(), R::Accent);
    }
    if cmp.full {
        add("full width".to_owned(), R::Accent);
    }
    if cmp.diff.is_some() {
        add("diff".to_owned(), R::Accent);
    }
    let width = usize::from(area.width);
    let left_w: usize = left.iter().map(|s| wrap::width(&s.content)).sum();
    let right = match &state.flash {
        Some(flash) => {
            let role = if flash.error { R::StatusError } else { R::Accent };
            let room = if width > left_w + 24 { width - left_w - 2 } else { width.saturating_sub(1) };
            let text = clip(&super::sanitize::sanitize(&flash.text), room);
            if wrap::width(&text) + left_w + 1 > width {
                left.clear();
            }
            Span::styled(format!("{text} "), theme.style(role))
        }
        None => {
            let k = |a| state.keymap.hint(a);
            Span::styled(
                format!("{} columns · /compare off leaves · {} help ", k(Action::CompareColumns), k(Action::Help)),
                dim,
            )
        }
    };
    let left_w: usize = left.iter().map(|s| wrap::width(&s.content)).sum();
    let right_w = wrap::width(&right.content);
    let mut spans = left;
    if left_w + right_w <= width {
        spans.push(Span::styled(" ".repeat(width - left_w - right_w), bar));
        spans.push(right);
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(bar), area);
}
