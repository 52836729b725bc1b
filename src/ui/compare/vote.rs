//! The arena's vote bar, one row above the composer once every column has answered: the
//! options (one "better" per column, tie, both/all bad) with their letters, the highlighted one marked, the vote cast ticked, and the keys
//! that act on it now.

use crate::app::State;
use crate::app::compare::Compare;
use crate::app::compare::arena::Vote;
use crate::app::keymap::Action;
use crate::ui::theme::Role as R;
use crate::ui::wrap;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// Draws the bar into `area` (one row).
pub fn draw(f: &mut Frame, area: Rect, state: &State, cmp: &Compare) {
    let Some(arena) = cmp.arena.as_ref() else { return };
    let theme = &state.theme;
    let focused = state.vote_bar_focused();
    let title = if focused { R::Accent } else { R::Heading };
    let mut spans = vec![Span::styled(" Vote ", theme.style(title).add_modifier(Modifier::BOLD))];
    let n = cmp.columns.len();
    for (i, v) in Vote::options(n).iter().enumerate() {
        let on = focused && arena.bar.highlight == Some(i);
        let cast = arena.vote == Some(*v);
        let mark = if on {
            "▸"
        } else if cast {
            "✓"
        } else {
            " "
        };
        let mut option = vec![
            Span::styled(format!(" {mark} "), theme.style(if cast { R::Success } else { R::Accent })),
            Span::styled(v.letter().to_string(), theme.style(R::Accent).add_modifier(Modifier::BOLD)),
            Span::styled(format!(" {} ", v.label(n)), theme.style(if cast { R::Success } else { R::Base })),
        ];
        if on {
            for s in &mut option {
                s.style = s.style.patch(theme.style(R::Selection));
            }
        }
        spans.extend(option);
    }
    let (long, short) = hint(state, arena, focused, n);
    let used: usize = spans.iter().map(|s| wrap::width(&s.content)).sum();
    let width = usize::from(area.width);
    // The hint goes right, the long one where it fits; the options are never cut.
    let room = width.saturating_sub(used + 2);
    let hint = if wrap::width(&long) <= room { long } else { short };
    if room > 8 {
        let hint = super::clip(&hint, room);
        let pad = width.saturating_sub(used + wrap::width(&hint) + 1);
        spans.push(Span::raw(" ".repeat(pad)));
        spans.push(Span::styled(format!("{hint} "), theme.style(R::Dim)));
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(theme.style(R::Base)), area);
}

/// The keys that act on the bar now: in full, and short for a narrow screen.
fn hint(state: &State, arena: &crate::app::compare::arena::Arena, focused: bool, n: usize) -> (String, String) {
    let tab = state.keymap.hint(Action::CompareColumns);
    let back = state.keymap.hint(Action::CompareLeave);
    match (focused, arena.vote, arena.bar.pending) {
        (true, _, Some(c)) => (format!("Enter votes · any other key makes “{c}” text"), "Enter votes".to_owned()),
        (true, Some(_), None) => (format!("the vote is final · {back} back"), "final".to_owned()),
        (true, None, None) => {
            let letters: Vec<String> = Vote::options(n).iter().map(|v| v.letter().to_string()).collect();
            (
                format!("←→ choose · Enter votes · {} then Enter · {back} back", letters.join(" ")),
                "←→ then Enter".to_owned(),
            )
        }
        (false, Some(v), _) => (format!("voted {} · final", v.describe(n)), "voted · final".to_owned()),
        (false, None, _) => (format!("{tab} to vote"), format!("{tab} to vote")),
    }
}
