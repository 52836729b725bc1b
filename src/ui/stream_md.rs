//! Markdown for an answer that is still arriving, at a cost that does not grow with the answer.
//! Complete lines are rendered as markdown; blocks that a blank line (outside a code fence) has
//! closed are rendered once and kept; only the open block is re-rendered when a line completes.
//! When the answer is finished it is rendered whole, once, so the final layout is exact.

use super::markdown;
use super::sanitize::sanitize;
use super::theme::Theme;
use super::wrap;
use ratatui::text::Line;

/// Rendered markdown of one answer.
#[derive(Debug, Default)]
pub struct StreamingMarkdown {
    /// Closed blocks, rendered once.
    stable: Vec<Line<'static>>,
    /// Bytes of the answer the closed blocks cover.
    stable_len: usize,
    /// The open block (from `stable_len` to the last complete line).
    active: Vec<Line<'static>>,
    /// Bytes of the answer rendered so far (closed and open blocks).
    rendered_len: usize,
    /// Whether the text was rendered whole (the answer was finished).
    whole: bool,
    /// Scanner state: how far lines were examined, and whether that point is inside a fence.
    scanned: usize,
    in_fence: bool,
}

impl StreamingMarkdown {
    #[must_use]
    pub fn len(&self) -> usize {
        self.stable.len() + self.active.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[must_use]
    pub fn get(&self, i: usize) -> Option<&Line<'static>> {
        if i < self.stable.len() { self.stable.get(i) } else { self.active.get(i - self.stable.len()) }
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Brings the rendering up to date with `content`. While `live`, the unfinished last line is
    /// left out (the caller shows it plain); once finished, everything is rendered whole.
    /// Returns the number of bytes covered.
    pub fn update(&mut self, content: &str, live: bool, cols: usize, theme: &Theme) -> usize {
        if content.len() < self.rendered_len || !content.is_char_boundary(self.rendered_len) {
            // The text was replaced rather than extended: start over.
            self.clear();
        }
        if !live {
            if !(self.whole && self.rendered_len == content.len()) {
                self.stable = render(content, cols, theme);
                self.stable_len = content.len();
                self.active.clear();
                self.rendered_len = content.len();
                self.whole = true;
            }
            return content.len();
        }
        self.whole = false;
        let committed = content.rfind('\n').map_or(0, |i| i + 1);
        if committed == self.rendered_len {
            return committed;
        }
        let boundary = self.scan(content, committed);
        if boundary > self.stable_len {
            let block = render(&content[self.stable_len..boundary], cols, theme);
            if !self.stable.is_empty() && !block.is_empty() {
                self.stable.push(Line::default());
            }
            self.stable.extend(block);
            self.stable_len = boundary;
        }
        self.active = render(&content[self.stable_len..committed], cols, theme);
        if !self.stable.is_empty() && !self.active.is_empty() {
            self.active.insert(0, Line::default());
        }
        self.rendered_len = committed;
        committed
    }

    /// Scans complete lines up to `committed` for the last blank line outside a code fence;
    /// returns the byte offset after it (a point where a block has certainly closed).
    fn scan(&mut self, content: &str, committed: usize) -> usize {
        let mut boundary = self.stable_len;
        let mut pos = self.scanned;
        while pos < committed {
            let end = content[pos..committed].find('\n').map_or(committed, |i| pos + i + 1);
            let line = content[pos..end].trim_end_matches(['\n', '\r']);
            let trimmed = line.trim_start();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                self.in_fence = !self.in_fence;
            } else if !self.in_fence && line.trim().is_empty() {
                boundary = end;
            }
            pos = end;
        }
        self.scanned = pos;
        boundary
    }
}

fn render(text: &str, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    let text = sanitize(text);
    if text.trim().is_empty() {
        return Vec::new();
    }
    wrap::fit(markdown::render(&text, u16::try_from(cols).unwrap_or(u16::MAX), theme), cols)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: impl Iterator<Item = String>) -> Vec<String> {
        lines.map(|l| l.trim_end().to_owned()).collect()
    }

    fn texts(md: &StreamingMarkdown) -> Vec<String> {
        plain((0..md.len()).filter_map(|i| md.get(i)).map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()))
    }

    #[test]
    fn streamed_blocks_match_the_whole_render() {
        let theme = Theme::load("dark", None, true).unwrap();
        let text = "# Title\n\nA paragraph that\ncontinues.\n\n- one\n- two\n\n```rust\nfn main() {\n\n    x();\n}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nEnd.\n";
        let mut streamed = StreamingMarkdown::default();
        let mut prefix = String::new();
        for c in text.chars() {
            prefix.push(c);
            streamed.update(&prefix, true, 60, &theme);
        }
        let mut whole = StreamingMarkdown::default();
        whole.update(text, false, 60, &theme);
        assert_eq!(texts(&streamed), texts(&whole));
        // The blank line inside the fence did not split the code block.
        assert!(streamed.stable_len > text.find("```\n\n").unwrap_or(0));
    }

    #[test]
    fn leaves_the_unfinished_line_out_while_live() {
        let theme = Theme::load("dark", None, true).unwrap();
        let mut md = StreamingMarkdown::default();
        assert_eq!(md.update("done line\nhalf", true, 40, &theme), 10);
        assert_eq!(texts(&md), ["done line"]);
        assert_eq!(md.update("done line\nhalf line", false, 40, &theme), 19);
        assert!(texts(&md).concat().contains("half line"));
    }
}
