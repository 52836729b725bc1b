//! The diff view: the latest answers of two columns compared word by word, the first column's
//! own words coloured as removed and the second's as added, in one full-width pane. The diff
//! and its wrapping are cached by (answers, revisions, width), so a frame only recomputes it
//! when an answer changed.

use crate::app::State;
use crate::app::compare::{Compare, DiffView};
use crate::engine::diff::{self, Change};
use crate::ui::sanitize::sanitize;
use crate::ui::theme::Role as R;
use crate::ui::wrap;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;

/// (generation and battle, column a, message a, revision a, column b, message b, revision b, width, theme).
type Key = (u64, usize, u64, u64, usize, u64, u64, usize, String);

/// The last diff computed and its lines.
#[derive(Debug, Default)]
pub struct DiffCache {
    key: Option<Key>,
    lines: Vec<Line<'static>>,
    similarity: f64,
    /// Diffs computed (for tests and benches).
    pub builds: u64,
}

/// Draws the diff into `area`; returns (lines, rows shown).
pub fn draw(
    f: &mut Frame,
    area: Rect,
    state: &State,
    cmp: &Compare,
    d: DiffView,
    cache: &mut DiffCache,
) -> (usize, u16) {
    let theme = &state.theme;
    let (Some(ca), Some(cb)) = (cmp.columns.get(d.a), cmp.columns.get(d.b)) else { return (0, 0) };
    let name = |c: &crate::app::compare::Column| {
        let i = cmp.columns.iter().position(|x| std::ptr::eq(x, c)).unwrap_or(0);
        sanitize(&cmp.label(i)).into_owned()
    };
    let (ma, mb) = (ca.last_reply(), cb.last_reply());
    let inner_w = usize::from(area.width.saturating_sub(2)).max(1);
    let key: Key = (
        cmp.epoch(),
        d.a,
        ma.map_or(0, |m| m.id),
        ma.map_or(0, |m| m.revision),
        d.b,
        mb.map_or(0, |m| m.id),
        mb.map_or(0, |m| m.revision),
        inner_w,
        state.theme_name.clone(),
    );
    if cache.key.as_ref() != Some(&key) {
        let (ta, tb) = (ma.map_or("", |m| m.text()), mb.map_or("", |m| m.text()));
        let segments = diff::words(&sanitize(ta), &sanitize(tb));
        cache.similarity = diff::similarity(&segments);
        cache.lines = render(state, &segments, inner_w);
        cache.key = Some(key);
        cache.builds += 1;
    }
    let streaming = ca.live.is_some() || cb.live.is_some();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let pct = (cache.similarity * 100.0).round() as u32;
    let title = Line::from(vec![
        Span::styled(" diff of the last answers · ", theme.style(R::Title)),
        Span::styled(format!("− {}", name(ca)), theme.style(R::DiffRemoved).add_modifier(Modifier::BOLD)),
        Span::styled("  ", theme.style(R::Title)),
        Span::styled(format!("+ {}", name(cb)), theme.style(R::DiffAdded).add_modifier(Modifier::BOLD)),
        Span::styled(format!(" · {pct}% in common{} ", if streaming { " so far" } else { "" }), theme.style(R::Title)),
    ]);
    let hint = Line::from(Span::styled(" Tab next pair · ↑↓ PgUp PgDn scroll · d or Esc close ", theme.style(R::Dim)))
        .right_aligned();
    let block = Block::bordered().border_style(theme.style(R::BorderFocused)).title(title).title_bottom(hint);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let rows = usize::from(inner.height);
    let total = cache.lines.len();
    let top = d.scroll.min(total.saturating_sub(rows));
    for (r, line) in cache.lines.iter().skip(top).take(rows).enumerate() {
        let y = inner.y + u16::try_from(r).unwrap_or(0);
        f.buffer_mut().set_line(inner.x, y, line, inner.width);
    }
    if ma.is_none() || mb.is_none() {
        let text = "nothing to compare yet: send a prompt first";
        f.buffer_mut().set_string(inner.x, inner.y, text, theme.style(R::Dim));
    }
    (total, inner.height)
}

/// Segments as wrapped lines: line breaks kept, removed words struck through, added underlined
/// (so the difference shows without colour too).
fn render(state: &State, segments: &[diff::Segment], cols: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let style = |c: Change| match c {
        Change::Equal => theme.style(R::Base),
        Change::Removed => theme.style(R::DiffRemoved).add_modifier(Modifier::CROSSED_OUT),
        Change::Added => theme.style(R::DiffAdded).add_modifier(Modifier::UNDERLINED),
    };
    let mut out = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    for s in segments {
        let mut parts = s.text.split('\n').peekable();
        while let Some(part) = parts.next() {
            if !part.is_empty() {
                cur.push(Span::styled(part.to_owned(), style(s.change)));
            }
            if parts.peek().is_some() {
                out.extend(wrap::spans(std::mem::take(&mut cur), cols));
            }
        }
    }
    if !cur.is_empty() {
        out.extend(wrap::spans(cur, cols));
    }
    out
}
