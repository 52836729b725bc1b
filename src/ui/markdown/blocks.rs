//! Where the top-level blocks of a text are, by line: what the streaming renderer checks its
//! cuts against. Rendering a text in pieces gives the same lines as rendering it whole only
//! when every cut falls between top-level blocks and no piece needs another's link
//! definitions; this is the parse that says so.

use super::options;
use crate::ui::highlight::lang_token;
use crate::ui::sanitize::sanitize;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

/// One top-level block: its first and last line (0-based), and the language token when it
/// is a fenced code block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopBlock {
    pub first: usize,
    pub last: usize,
    pub fence: Option<String>,
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
    let mut blocks = Vec::new();
    let mut depth = 0usize;
    for (event, range) in iter {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    let fence = match &tag {
                        Tag::CodeBlock(CodeBlockKind::Fenced(info)) => Some(sanitize(lang_token(info)).into_owned()),
                        _ => None,
                    };
                    let last = line_of(range.end.saturating_sub(1).max(range.start));
                    blocks.push(TopBlock { first: line_of(range.start), last, fence });
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            // A leaf at the top (a rule) is a block of its own.
            _ if depth == 0 => {
                let last = line_of(range.end.saturating_sub(1).max(range.start));
                blocks.push(TopBlock { first: line_of(range.start), last, fence: None });
            }
            _ => {}
        }
    }
    Some(blocks)
}

/// Whether no block of `blocks` runs across the start of line `line`.
#[must_use]
pub fn is_cut(blocks: &[TopBlock], line: usize) -> bool {
    !blocks.iter().any(|b| b.first < line && b.last >= line)
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
    }
}
