//! Where the top-level blocks of a text are, by line: what the streaming renderer checks its
//! cuts against. Rendering a text in pieces gives the same lines as rendering it whole only
//! when every cut falls between top-level blocks and no piece needs another's link
//! definitions; this is the parse that says so.

use super::options;
use crate::ui::highlight::lang_token;
use crate::ui::sanitize::sanitize;
use crate::ui::stream_block::BlockKind;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

/// One top-level block: its first and last line (0-based), and the language token when it
/// is a fenced code block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopBlock {
    pub first: usize,
    pub last: usize,
    pub fence: Option<String>,
    /// What it is, when it is a kind streamed line by line.
    pub kind: Option<BlockKind>,
    /// A paragraph with an inline element (emphasis, a link, a code span…) across a line
    /// break: its lines read one at a time are not read as they are together.
    pub crossing: bool,
}

/// The top-level blocks of `text` (as the renderer parses it: already sanitized), in order;
/// `None` when the text defines link references (a piece rendered alone would not see them).
#[must_use]
pub fn top_level(text: &str) -> Option<Vec<TopBlock>> {
    let iter = Parser::new_ext(text, options()).into_offset_iter();
    if iter.reference_definitions().iter().next().is_some() {
        return None;
    }
    let newlines: Vec<usize> = memchr::memchr_iter(b'\n', text.as_bytes()).collect();
    let line_of = |offset: usize| newlines.partition_point(|&p| p < offset);
    let mut blocks: Vec<TopBlock> = Vec::new();
    let mut depth = 0usize;
    for (event, range) in iter {
        // A block's range takes in the blank lines and the indent after it (a list's does): its
        // last line is the last that holds any of its text.
        let lines = || {
            let end = range.start + text.get(range.clone()).map_or(0, |t| t.trim_end().len());
            (line_of(range.start), line_of(end.saturating_sub(1).max(range.start)))
        };
        match event {
            Event::Start(tag) if depth == 0 => {
                let fence = match &tag {
                    Tag::CodeBlock(CodeBlockKind::Fenced(info)) => Some(sanitize(lang_token(info)).into_owned()),
                    _ => None,
                };
                let kind = match tag {
                    Tag::Paragraph => Some(BlockKind::Paragraph),
                    Tag::List(_) => Some(BlockKind::List),
                    Tag::Table(_) => Some(BlockKind::Table),
                    _ => None,
                };
                let (first, last) = lines();
                blocks.push(TopBlock { first, last, fence, kind, crossing: false });
                depth = 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            // A leaf at the top (a rule) is a block of its own.
            _ if depth == 0 => {
                let (first, last) = lines();
                blocks.push(TopBlock { first, last, fence: None, kind: None, crossing: false });
            }
            Event::Start(_) | Event::Code(_) | Event::InlineHtml(_) | Event::InlineMath(_) => {
                depth += usize::from(matches!(event, Event::Start(_)));
                if let Some(b) = blocks.last_mut().filter(|b| b.kind == Some(BlockKind::Paragraph)) {
                    let (first, last) = lines();
                    b.crossing |= first != last;
                }
            }
            _ => {}
        }
    }
    Some(blocks)
}

/// Whether no block of `blocks` runs across the start of line `line`.
#[must_use]
pub fn is_cut(blocks: &[TopBlock], line: usize) -> bool {
    // Top-level blocks are in order and do not overlap: only the last one starting before
    // the line can run across it.
    let before = blocks.partition_point(|b| b.first < line);
    before.checked_sub(1).is_none_or(|i| blocks[i].last < line)
}

/// The block of `blocks` that starts on line `first`.
#[must_use]
pub fn starting_at(blocks: &[TopBlock], first: usize) -> Option<&TopBlock> {
    blocks.get(blocks.partition_point(|b| b.first < first)).filter(|b| b.first == first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_by_line() {
        let text = "# T\n\npara\ncontinued\n\n```rust\nfn x() {}\n\n```\n- a\n\n- b\n";
        let b = top_level(text).unwrap();
        let firsts: Vec<(usize, usize)> = b.iter().map(|b| (b.first, b.last)).collect();
        assert_eq!(firsts, [(0, 0), (2, 3), (5, 8), (9, 11)]);
        assert_eq!(b[2].fence.as_deref(), Some("rust"));
        assert!(is_cut(&b, 5));
        assert!(is_cut(&b, 9));
        // The loose list runs across its blank line.
        assert!(!is_cut(&b, 11));
        assert!(top_level("[a]: https://example.com\n\nsee [a]\n").is_none());
        // A list ends at its last item's text, not at the blank lines or indent after it.
        let list = top_level("1. a\n2. b\n\n\nA para.\n").unwrap();
        assert_eq!((list[0].first, list[0].last, list[1].first), (0, 1, 4));
        assert_eq!(top_level("1.\n x\n").unwrap()[0].last, 0);
        assert_eq!(b[1].kind, Some(BlockKind::Paragraph));
        assert_eq!(b[3].kind, Some(BlockKind::List));
        assert_eq!(starting_at(&b, 5).map(|b| b.first), Some(5));
        assert!(starting_at(&b, 3).is_none());
    }

    #[test]
    fn inline_elements_across_lines() {
        let crossing = |text: &str| top_level(text).unwrap()[0].crossing;
        assert!(!crossing("a *b*\nc `d` [e](f)\n"));
        assert!(crossing("a *b\nc* d\n"));
        assert!(crossing("a `b\nc` d\n"));
        assert!(crossing("[a\nb](c)\n"));
        assert!(crossing("a <span\nclass=x> b\n"));
        // Not a paragraph: nothing to read line by line.
        assert!(!crossing("- *a\n  b*\n"));
        let t = top_level("| a | b |\n|---|---|\n| 1 | 2 |\n").unwrap();
        assert_eq!((t[0].kind, t[0].first, t[0].last), (Some(BlockKind::Table), 0, 2));
    }
}
