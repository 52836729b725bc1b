//! Pieces of a block rendered as its lines arrive (`stream_list`, `stream_table`): one item of
//! a top-level list drawn as the whole list draws it, a table's cells collected as the whole
//! table's are, and the parses that say whether a line still belongs to the block. The rules
//! stay the renderer's: these entry points feed it the item's or the row's own parse.

use super::para::simple_events;
use super::{Renderer, options, table::Table, wrap::Run};
use crate::ui::sanitize::sanitize;
use crate::ui::theme::Theme;
use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use ratatui::text::Line;

/// How a text parses when it is exactly one top-level list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListShape {
    /// Where each item starts (byte offsets).
    pub items: Vec<usize>,
    /// The first item's number; `None` for a bullet list.
    pub start: Option<u64>,
}

/// The shape of `text` (sanitized) as one top-level list; `None` when it is anything else, or
/// defines link references (which items rendered one at a time would not see).
#[must_use]
pub fn list_shape(text: &str) -> Option<ListShape> {
    let iter = Parser::new_ext(text, options()).into_offset_iter();
    if iter.reference_definitions().iter().next().is_some() {
        return None;
    }
    let mut events = iter.into_iter();
    let Some((Event::Start(Tag::List(start)), _)) = events.next() else { return None };
    let mut shape = ListShape { items: Vec::new(), start };
    let mut depth = 1usize;
    for (event, range) in events {
        if depth == 0 {
            // A second top-level block.
            return None;
        }
        match event {
            Event::Start(tag) => {
                if depth == 1 && matches!(tag, Tag::Item) {
                    shape.items.push(range.start);
                }
                depth += 1;
            }
            Event::End(_) => depth -= 1,
            _ => {}
        }
    }
    Some(shape)
}

/// One item of a top-level list (`text`: the item's lines, marker first), drawn as
/// [`super::render`] draws it inside the whole list: numbered `number` (`None` for a bullet),
/// after the items before it (`after`: whether the one before left a gap pending; `None` for
/// the first item). Returns the rows and whether this item leaves a gap pending.
#[must_use]
pub fn list_item(
    text: &str,
    width: u16,
    theme: &Theme,
    number: Option<u64>,
    after: Option<bool>,
) -> (Vec<Line<'static>>, bool) {
    if width == 0 {
        return (Vec::new(), false);
    }
    let text = sanitize(text);
    let mut r = Renderer::on_sanitized(usize::from(width), theme, &text);
    r.earlier = after.is_some();
    r.pending_gap = after.unwrap_or(false);
    if number.is_none()
        && let Some(events) = simple_item(&text)
    {
        r.lists.push(None);
        r.event(Event::Start(Tag::Item));
        for event in events {
            r.event(event);
        }
        r.event(Event::End(TagEnd::Item));
        return (r.out, r.pending_gap);
    }
    parsed_item(&text, r, number)
}

/// The events inside a bullet item of one line (`- ` and text that [`simple_events`] reads:
/// a paragraph, drawn bare in a tight item), when pulldown-cmark's reading is certain.
fn simple_item(text: &str) -> Option<Vec<Event<'_>>> {
    let b = text.as_bytes();
    if b.len() < 3 || !b"-+*".contains(&b[0]) || b[1] != b' ' || text.contains('\n') {
        return None;
    }
    simple_events(text[2..].trim_end_matches(' '))
}

/// [`list_item`] as pulldown-cmark reads the item.
fn parsed_item(text: &str, mut r: Renderer<'_>, number: Option<u64>) -> (Vec<Line<'static>>, bool) {
    let mut events = Parser::new_ext(text, options());
    // The list's own start and end belong to the whole list, not to one of its items.
    if !matches!(events.next(), Some(Event::Start(Tag::List(_)))) {
        return (Vec::new(), false);
    }
    r.lists.push(number);
    for event in events {
        if matches!(event, Event::End(TagEnd::List(_))) && r.lists.len() == 1 {
            break;
        }
        r.event(event);
    }
    (r.out, r.pending_gap)
}

/// The runs of `text` (sanitized, one line) read as inline content alone, as the renderer
/// collects a table cell's: `None` when the line parses as anything but one paragraph (a
/// heading, a list item, an HTML block, a link reference definition).
#[must_use]
pub fn inline_runs(text: &str, theme: &Theme) -> Option<Vec<Run>> {
    let mut r = Renderer::on_sanitized(1, theme, text);
    let mut events = Parser::new_ext(text, options());
    let Some(Event::Start(Tag::Paragraph)) = events.next() else { return None };
    for event in events.by_ref() {
        if matches!(event, Event::End(TagEnd::Paragraph)) {
            break;
        }
        r.event(event);
    }
    if events.next().is_some() || !r.styles.is_empty() || !r.links.is_empty() {
        return None;
    }
    Some(r.runs)
}

/// The cells of `text` as the renderer collects them, when `text` is exactly one table.
#[must_use]
pub fn table_of(text: &str, theme: &Theme) -> Option<Table> {
    let text = sanitize(text);
    // The width plays no part in collecting cells.
    let mut r = Renderer::on_sanitized(1, theme, &text);
    let mut events = Parser::new_ext(&text, options());
    let Some(Event::Start(Tag::Table(aligns))) = events.next() else { return None };
    r.start(Tag::Table(aligns));
    for event in events.by_ref() {
        if matches!(event, Event::End(TagEnd::Table)) {
            break;
        }
        r.event(event);
    }
    // Anything after the table is another block.
    if events.next().is_some() {
        return None;
    }
    r.table.take()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIECES: [&str; 14] = [
        "item",
        "**strong**",
        "**two words**",
        "`code`",
        "`a b`",
        "*",
        "`",
        "**a**.",
        "日本語のテキスト",
        "👨\u{200d}👩\u{200d}👧",
        "e\u{301}",
        "supercalifragilistic",
        "1.",
        "[x]",
    ];

    /// A one-line bullet item read without the parser draws as the parser's reading does,
    /// after any item before it, at any width.
    #[test]
    fn simple_items_draw_as_parsed_ones() {
        let themes = [Theme::load("dark", None, false).unwrap(), Theme::load("dark", None, true).unwrap()];
        let mut seed = 3u64;
        let mut simple = 0;
        for case in 0..6000 {
            let mut text = ["- ", "* ", "+ "][case % 3].to_owned();
            for _ in 0..(seed >> 40) % 7 + 1 {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                text.push_str(PIECES[(seed >> 33) as usize % PIECES.len()]);
                text.push_str(["", " ", " ", ": ", "  "][(seed >> 20) as usize % 5]);
            }
            if simple_item(&text).is_none() {
                continue;
            }
            simple += 1;
            let theme = &themes[case % 2];
            let width = [1, 2, 3, 7, 12, 30, 80][case % 7];
            for after in [None, Some(false), Some(true)] {
                let fast = list_item(&text, width, theme, None, after);
                let mut r = Renderer::new(usize::from(width), theme);
                r.earlier = after.is_some();
                r.pending_gap = after.unwrap_or(false);
                assert_eq!(fast, parsed_item(&text, r, None), "{text:?} at {width} after {after:?}");
            }
        }
        assert!(simple > 1000, "{simple} simple items");
    }
}
