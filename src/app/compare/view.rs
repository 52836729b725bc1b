//! How the compare screen is looked at: which column has focus, full width, synchronised
//! scrolling and scrolling the diff. Heights are known only to the view, so scrolling reads
//! what the last draw reported (`ViewReport::compare`) and the draw clamps again.

use super::{ColumnView, Compare};
use crate::app::state::State;

impl State {
    /// Moves column focus by `step` (wrapping). With the diff open, the diff follows: it shows
    /// the focused column against the next one.
    pub(crate) fn compare_focus_step(&mut self, step: isize) {
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let n = cmp.columns.len();
        if n == 0 {
            return;
        }
        let next = (cmp.focus as isize + step).rem_euclid(n as isize);
        cmp.focus = usize::try_from(next).unwrap_or(0);
        if let Some(d) = cmp.diff.as_mut() {
            d.a = cmp.focus;
            d.b = (cmp.focus + 1) % n;
            d.scroll = 0;
        }
    }

    /// Focuses column `i` (a click).
    pub(crate) fn compare_focus_on(&mut self, i: usize) {
        if let Some(cmp) = self.compare.active.as_mut().filter(|c| i < c.columns.len()) {
            cmp.focus = i;
        }
    }

    pub(crate) fn compare_toggle_full(&mut self) {
        if let Some(cmp) = self.compare.active.as_mut() {
            cmp.full = !cmp.full;
            cmp.diff = None;
        }
    }

    pub(crate) fn compare_toggle_sync(&mut self) {
        let Some(cmp) = self.compare.active.as_mut() else { return };
        cmp.sync = !cmp.sync;
        let on = cmp.sync;
        if on {
            let view = self.view.compare.columns.clone();
            if let Some(cmp) = self.compare.active.as_mut() {
                align(cmp, &view);
            }
        }
        self.flash(if on {
            "synchronised scrolling on: columns scroll together, turn by turn"
        } else {
            "synchronised scrolling off"
        });
    }

    /// Scrolls the diff, or the focused column (all of them when synchronised), by `delta` lines.
    pub(crate) fn compare_scroll(&mut self, delta: i64) {
        let view = self.view.compare.clone();
        let Some(cmp) = self.compare.active.as_mut() else { return };
        if let Some(d) = cmp.diff.as_mut() {
            let max = view.diff_lines.saturating_sub(usize::from(view.diff_rows));
            d.scroll = add(d.scroll, delta).min(max);
            return;
        }
        let i = cmp.focus;
        let Some(v) = view.columns.iter().find(|v| v.column == i) else { return };
        let Some(col) = cmp.columns.get_mut(i) else { return };
        let current = col.scroll.unwrap_or_else(|| v.max_top());
        set_top(col, v, add(current, delta));
        if cmp.sync {
            align(cmp, &view.columns);
        }
    }

    /// Jumps the diff or the focused column (all, when synchronised) to the top or the bottom.
    pub(crate) fn compare_scroll_end(&mut self, bottom: bool) {
        let view = self.view.compare.clone();
        let Some(cmp) = self.compare.active.as_mut() else { return };
        if let Some(d) = cmp.diff.as_mut() {
            d.scroll = if bottom { view.diff_lines.saturating_sub(usize::from(view.diff_rows)) } else { 0 };
            return;
        }
        let sync = cmp.sync;
        let focus = cmp.focus;
        for (i, col) in cmp.columns.iter_mut().enumerate() {
            if i != focus && !sync {
                continue;
            }
            if bottom {
                col.scroll = None;
                col.unseen = false;
            } else if let Some(v) = view.columns.iter().find(|v| v.column == i) {
                set_top(col, v, 0);
            } else {
                col.scroll = Some(0);
            }
        }
    }

    /// Rows a page scroll moves in the compare screen.
    #[must_use]
    pub fn compare_page(&self) -> i64 {
        let v = &self.view.compare;
        let rows = if v.diff_rows > 0 { v.diff_rows } else { v.columns.iter().map(|c| c.area.3).max().unwrap_or(2) };
        i64::from(rows.saturating_sub(2).max(1))
    }
}

fn add(at: usize, delta: i64) -> usize {
    let d = usize::try_from(delta.unsigned_abs()).unwrap_or(usize::MAX);
    if delta < 0 { at.saturating_sub(d) } else { at.saturating_add(d) }
}

/// Puts a column's top line at `top`, clamped; at the bottom it follows new output again.
fn set_top(col: &mut super::Column, v: &ColumnView, top: usize) {
    let max = v.max_top();
    if top >= max {
        col.scroll = None;
        col.unseen = false;
    } else {
        col.scroll = Some(top);
    }
}

/// Scrolls every other column to the focused column's place, turn by turn: the same turn, at
/// the same fraction of it, so each column reaches a prompt when the focused one does.
fn align(cmp: &mut Compare, view: &[ColumnView]) {
    let Some(fv) = view.iter().find(|v| v.column == cmp.focus) else { return };
    let Some(focused) = cmp.columns.get(cmp.focus) else { return };
    let top = focused.scroll.unwrap_or_else(|| fv.max_top());
    let following = focused.scroll.is_none();
    let turn = fv.turns.iter().rposition(|&t| t <= top);
    let offset = turn.map_or(top, |k| top - fv.turns[k]);
    let span = |v: &ColumnView, k: usize| v.turns.get(k + 1).copied().unwrap_or(v.lines).saturating_sub(v.turns[k]);
    let focused_span = turn.map_or(1, |k| span(fv, k)).max(1);
    for (i, col) in cmp.columns.iter_mut().enumerate() {
        if i == cmp.focus {
            continue;
        }
        let Some(v) = view.iter().find(|v| v.column == i) else { continue };
        if following {
            col.scroll = None;
            col.unseen = false;
            continue;
        }
        let target = match turn {
            Some(k) if k < v.turns.len() => {
                let len = span(v, k);
                v.turns[k] + (offset * len / focused_span).min(len.saturating_sub(1))
            }
            Some(_) => v.lines,
            None => offset,
        };
        set_top(col, v, target);
    }
}
