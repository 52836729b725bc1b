//! Overlays drawn over the screen, bottom of the stack first: help (generated from the keymap),
//! the command palette, the model picker and the code-block picker.

use super::theme::Role as R;
use crate::app::State;
use crate::app::overlay::{Overlay, Picker};
use crate::app::slash_menu::Kind;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

pub fn draw(f: &mut Frame, state: &State) {
    for o in &state.overlays {
        match o {
            Overlay::Help { scroll } => help(f, state, *scroll),
            Overlay::Palette(p) => picker(f, state, o.title(), p, None),
            Overlay::Models { picker: p, loading, error } => {
                let note = if *loading {
                    Some((
                        format!("{} asking the provider for its models…", super::cells::spinner(state.now_ms)),
                        R::Dim,
                    ))
                } else {
                    error.as_ref().map(|e| (format!("GET /models failed: {}", super::sanitize::sanitize(e)), R::Error))
                };
                picker(f, state, o.title(), p, note);
            }
            Overlay::CodeBlocks { picker: p, .. } => picker(f, state, o.title(), p, None),
            Overlay::Conversations(list) => super::conversations::draw(f, state, list),
            Overlay::Approval => super::approval::draw(f, state),
            Overlay::Inspector => super::inspector::draw(f, state),
            Overlay::Probs { id, cursor } => super::probs::draw(f, state, *id, *cursor),
            Overlay::Elicit => super::elicit::draw(f, state),
            Overlay::Sample => super::sample::draw(f, state),
        }
    }
}

/// A centred rectangle at most `w`×`h`.
pub(super) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width.saturating_sub(2)).max(1.min(area.width));
    let h = h.min(area.height.saturating_sub(2)).max(1.min(area.height));
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

/// An overlay's frame: the focused border, `title` at the top and `hint` at the bottom right.
pub(super) fn frame_block(state: &State, title: &str, hint: &str) -> Block<'static> {
    let theme = &state.theme;
    Block::bordered()
        .border_style(theme.style(R::BorderFocused))
        .title(Span::styled(format!(" {title} "), theme.style(R::Title).add_modifier(Modifier::BOLD)))
        .title_bottom(Line::from(Span::styled(format!(" {hint} "), theme.style(R::Dim))).right_aligned())
        .style(theme.style(R::Base))
}

/// The approval modal's keys, for the help overlay.
const APPROVAL_KEYS: [(&str, &str); 5] = [
    ("first ½ s", "no key decides: text goes to your message, Enter does nothing"),
    ("↑↓ Tab, Enter", "highlight an option, then confirm it with the Enter right after"),
    (
        "y n r e, Enter",
        "once · deny · deny with a reason · edit the arguments (no letter grants a session or a path outside the workspace)",
    ),
    ("PgUp PgDn", "scroll the details"),
    ("Esc Ctrl+C", "cancel the turn"),
];

/// The arena vote bar's keys, for the help overlay.
const VOTE_KEYS: [(&str, &str); 4] = [
    ("Tab", "from the message to the vote bar"),
    ("←→, Enter", "highlight a choice, then vote with the Enter right after"),
    ("a b t n, Enter", "A better · B better · tie · both bad"),
    ("u Backspace", "take the vote back (until the next prompt starts a new battle)"),
];

fn help(f: &mut Frame, state: &State, scroll: u16) {
    let theme = &state.theme;
    let area = centered(f.area(), 84, u16::MAX);
    let inner_w = usize::from(area.width.saturating_sub(2));
    let help = state.keymap.help();
    let widest = help.iter().flat_map(|(_, rows)| rows.iter().map(|(k, _)| super::wrap::width(k))).max().unwrap_or(0);
    // Keys get a column; on a narrow screen a long key list goes on its own line above its text.
    let key_w = (widest + 3).min(inner_w * 2 / 5).max(12);
    let heading =
        |t: &str| Line::from(Span::styled(t.to_owned(), theme.style(R::Heading).add_modifier(Modifier::BOLD)));
    let mut lines: Vec<Line<'static>> = Vec::new();
    let row = |lines: &mut Vec<Line<'static>>, keys: &str, desc: &str| {
        let keys_w = super::wrap::width(keys) + 2;
        if keys_w > key_w {
            lines.push(Line::from(Span::styled(format!("  {keys}"), theme.style(R::Accent))));
            lines.extend(super::wrap::hanging(&" ".repeat(key_w), desc, inner_w, theme.style(R::Base)));
        } else {
            let pad = " ".repeat(key_w - keys_w);
            let first = format!("  {keys}{pad}");
            let mut wrapped = super::wrap::hanging(&" ".repeat(key_w), desc, inner_w, theme.style(R::Base));
            if let Some(l) = wrapped.first_mut() {
                l.spans[0] = Span::styled(first, theme.style(R::Accent));
            }
            lines.extend(wrapped);
        }
    };
    for (title, rows) in help {
        lines.push(heading(title));
        for (keys, desc) in rows {
            row(&mut lines, &keys, desc);
        }
        lines.push(Line::default());
    }
    // The approval modal and the vote bar choose with their own keys, which are not rebound.
    lines.push(heading("Approval modal (a tool call asks)"));
    for (keys, desc) in APPROVAL_KEYS {
        row(&mut lines, keys, desc);
    }
    lines.push(Line::default());
    lines.push(heading("Arena vote bar (both answered)"));
    for (keys, desc) in VOTE_KEYS {
        row(&mut lines, keys, desc);
    }
    lines.push(Line::default());
    lines.push(heading("Commands (type in the composer, or Ctrl+P)"));
    // The `/` menu's list (already sanitised), so help and the menu never disagree.
    let entries = state.command_entries();
    let of = |kind: Kind| entries.iter().filter(move |e| e.kind == kind);
    for e in of(Kind::BuiltIn) {
        row(&mut lines, &e.usage(), &e.about);
    }
    row(&mut lines, "//text", "send a message that starts with a slash");
    for (kind, title) in [
        (Kind::User, "Your commands (commands/*.md; $ARGUMENTS is what follows)"),
        (Kind::Mcp, "MCP prompts (from the servers in config.toml)"),
    ] {
        if of(kind).next().is_some() {
            lines.push(Line::default());
            lines.push(heading(title));
            for e in of(kind) {
                row(&mut lines, &e.usage(), &e.about);
            }
        }
    }
    lines.push(Line::default());
    lines.extend(super::wrap::plain(
        "Keys are set in config.toml under [keys], e.g. palette = \"ctrl+k\".",
        inner_w,
        theme.style(R::Dim),
    ));
    let area = centered(f.area(), 84, u16::try_from(lines.len() + 2).unwrap_or(u16::MAX));
    let max_scroll = u16::try_from(lines.len()).unwrap_or(u16::MAX).saturating_sub(area.height.saturating_sub(2));
    let block = frame_block(state, "Help", "↑↓ scroll · Esc close");
    f.render_widget(Clear, area);
    f.render_widget(Paragraph::new(lines).block(block).scroll((scroll.min(max_scroll), 0)), area);
}

fn picker(f: &mut Frame, state: &State, title: &str, p: &Picker, note: Option<(String, R)>) {
    let theme = &state.theme;
    let visible = p.visible();
    let want = u16::try_from(visible.len()).unwrap_or(u16::MAX).saturating_add(4).max(8);
    let area = centered(f.area(), 72, want.min(24));
    let block = frame_block(state, title, "type to filter · ↑↓ · Enter · Esc");
    let inner = block.inner(area);
    f.render_widget(Clear, area);
    f.render_widget(block, area);
    if inner.height == 0 {
        return;
    }
    let mut lines = vec![Line::from(vec![
        Span::styled("> ", theme.style(R::Accent)),
        Span::styled(super::sanitize::sanitize(&p.query).into_owned(), theme.style(R::Base)),
        Span::styled("▏", theme.style(R::Accent)),
    ])];
    if let Some((text, role)) = note {
        lines.push(Line::from(Span::styled(text, theme.style(role))));
    }
    let room = usize::from(inner.height).saturating_sub(lines.len());
    let selected = p.selected.min(visible.len().saturating_sub(1));
    let first = selected.saturating_sub(room.saturating_sub(1));
    if visible.is_empty() {
        lines.push(Line::from(Span::styled("  nothing matches", theme.style(R::Dim))));
    }
    let label_w = p.items.iter().map(|i| super::wrap::width(&i.label)).max().unwrap_or(0).min(40);
    for (row, &i) in visible.iter().enumerate().skip(first).take(room) {
        let item = &p.items[i];
        let label = super::sanitize::sanitize(&item.label).into_owned();
        let pad = label_w.saturating_sub(super::wrap::width(&label));
        let mut spans = vec![
            Span::styled(if row == selected { "▸ " } else { "  " }, theme.style(R::Accent)),
            Span::styled(format!("{label}{}", " ".repeat(pad)), theme.style(R::Base)),
            Span::styled(format!("  {}", super::sanitize::sanitize(&item.detail)), theme.style(R::Dim)),
        ];
        if row == selected {
            for s in &mut spans {
                s.style = s.style.patch(theme.style(R::Selection));
            }
        }
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
