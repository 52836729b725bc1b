//! A top-level markdown block rendered as its lines arrive, for a cost that grows with the new
//! lines rather than with the block: a paragraph, a list or a table that never meets a blank
//! line (a log, a CSV, a 50,000-item list) would otherwise be rendered again from its start
//! each time a line completes.
//!
//! The contract every kind keeps (and tests against `markdown::render` on random blocks): after
//! the lines `L1..Ln` were all accepted by [`GrowingBlock::push`], the rows are exactly those of
//! rendering `L1\n…\nLn` whole for the same width (`stream_md`'s `render`: markdown wrapped,
//! then fitted). Whether the block really was one block of that kind, as the whole answer
//! parses, is what `stream_md`'s final check settles (it renders the whole answer once when not).

use ratatui::text::Line;

/// What a block rendered line by line is, for the final check against the whole answer's parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Paragraph,
    List,
    Table,
}

/// A block that grows a line at a time.
pub trait GrowingBlock: std::fmt::Debug + Send {
    /// Offers the block's next complete line: sanitized, without its line ending. Returns false,
    /// changing nothing, when the line does not continue this block as this kind renders it; the
    /// caller then ends the block before the line.
    fn push(&mut self, line: &str) -> bool;
    /// Rows so far; the last ones may still change as lines arrive.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn get(&self, i: usize) -> Option<&Line<'static>>;
    fn kind(&self) -> BlockKind;
}

/// Row `i` of a block held as two parts in order (rows final, then rows that may still change).
#[must_use]
pub fn row_of<'a>(first: &'a [Line<'static>], then: &'a [Line<'static>], i: usize) -> Option<&'a Line<'static>> {
    match i.checked_sub(first.len()) {
        None => first.get(i),
        Some(j) => then.get(j),
    }
}
