//! A top-level list rendered as its lines arrive: items already complete are drawn once and
//! kept; only the last item, which may still gain continuation lines (nested lists, lazy
//! paragraph lines), is drawn again when it grows. Whether a line is a new item of the same
//! list, a continuation of the last one, or the end of the list is what pulldown-cmark says of
//! the last item followed by that line: no list rule is written here a second time.

use super::markdown;
use super::stream_block::{BlockKind, GrowingBlock};
use super::theme::Theme;
use super::wrap;
use ratatui::text::Line;

/// A list growing a line at a time.
#[derive(Debug)]
pub struct ListBlock {
    cols: usize,
    theme: Theme,
    /// Rows of the items before the last one, final.
    done: Vec<Line<'static>>,
    /// The last item: its lines, its number (`None` in a bullet list), whether the item before
    /// it left a gap pending (`None` when it is the first), and its rows.
    item: String,
    number: Option<u64>,
    before: Option<bool>,
    rows: Vec<Line<'static>>,
    /// Whether the last item leaves a gap pending for the next.
    after: bool,
    /// The bullet of a bullet list whose first item starts with it and a space.
    bullet: Option<u8>,
}

impl ListBlock {
    /// A list starting with `first_line`, or `None` when that line does not start one.
    #[must_use]
    pub fn start(first_line: &str, cols: usize, theme: &Theme) -> Option<Self> {
        let shape = opens(first_line)?;
        if shape.items.len() != 1 {
            return None;
        }
        let mut block = Self {
            cols,
            theme: theme.clone(),
            done: Vec::new(),
            item: first_line.to_owned(),
            number: shape.start,
            before: None,
            rows: Vec::new(),
            after: false,
            bullet: None,
        };
        let b = first_line.as_bytes();
        if shape.start.is_none() && b.len() > 1 && b"-+*".contains(&b[0]) && b[1] == b' ' {
            block.bullet = Some(b[0]);
        }
        block.draw_item();
        Some(block)
    }

    /// Draws the last item again.
    fn draw_item(&mut self) {
        let width = u16::try_from(self.cols).unwrap_or(u16::MAX);
        let (rows, after) = markdown::list_item(&self.item, width, &self.theme, self.number, self.before);
        self.rows = wrap::fit(rows, self.cols);
        self.after = after;
    }
}

impl ListBlock {
    /// Whether `line` is certainly the next item of this bullet list, without a parse: its
    /// bullet and a space at the margin close whatever the last item holds, unless the line is
    /// blank after the bullet (an empty item cannot interrupt a paragraph), a thematic break
    /// (`- - -`, which wins over an item) or may define a link reference (`]:`, refused).
    fn next_item(&self, line: &str) -> bool {
        let Some(bullet) = self.bullet else { return false };
        let b = line.as_bytes();
        b.len() > 2
            && b[0] == bullet
            && b[1] == b' '
            && !b[2..].iter().all(|&c| c == b' ' || c == b'\t')
            && !b.iter().all(|&c| c == bullet || c == b' ' || c == b'\t')
            && !line.contains("]:")
    }

    /// The last item is complete: `line` starts the next one.
    fn new_item(&mut self, line: &str) {
        self.done.append(&mut self.rows);
        self.before = Some(self.after);
        self.number = self.number.map(|n| n.saturating_add(1));
        self.item = line.to_owned();
    }
}

/// The shape of `text` when it is one top-level list (and not blank: the caller cuts at blank
/// lines).
fn opens(text: &str) -> Option<markdown::ListShape> {
    if text.trim().is_empty() {
        return None;
    }
    markdown::list_shape(text)
}

impl GrowingBlock for ListBlock {
    fn push(&mut self, line: &str) -> bool {
        if line.trim().is_empty() {
            return false;
        }
        if self.next_item(line) {
            self.new_item(line);
            self.draw_item();
            return true;
        }
        let text = format!("{}\n{line}", self.item);
        let Some(shape) = opens(&text) else { return false };
        match shape.items[..] {
            [_] => self.item = text,
            [_, next] if next > self.item.len() => self.new_item(line),
            _ => return false,
        }
        self.draw_item();
        true
    }

    fn len(&self) -> usize {
        self.done.len() + self.rows.len()
    }

    fn get(&self, i: usize) -> Option<&Line<'static>> {
        super::stream_block::row_of(&self.done, &self.rows, i)
    }

    fn kind(&self) -> BlockKind {
        BlockKind::List
    }
}

#[cfg(test)]
#[path = "stream_list_tests.rs"]
pub(crate) mod tests;
