//! Word wrapping for styled text, measured in terminal columns, plus the last guard against
//! control characters: whatever reaches the screen went through here or `guard_line`.

use super::sanitize::{may_reach, sanitize};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::borrow::Cow;
use unicode_width::UnicodeWidthChar;

/// Columns a tab becomes.
const TAB: &str = "    ";

/// Text without control characters: tabs become spaces, everything else (ESC, C1, DEL…) goes.
#[must_use]
pub fn clean(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\t' {
            out.push_str(TAB);
        } else if !c.is_control() {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A line with any control characters removed from its spans.
#[must_use]
pub fn guard_line(line: Line<'static>) -> Line<'static> {
    if !line.spans.iter().any(|s| has_control(&s.content)) {
        return line;
    }
    let spans =
        line.spans.into_iter().map(|s| Span::styled(clean(&s.content).into_owned(), s.style)).collect::<Vec<_>>();
    Line { spans, style: line.style, alignment: line.alignment }
}

/// Width of a string in columns (control characters count as nothing).
#[must_use]
pub fn width(s: &str) -> usize {
    // Printable ASCII (nearly all text) is one column a byte.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return s.len();
    }
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `text` cut to `cols` columns, with an ellipsis when cut.
#[must_use]
pub fn ellipsize(text: &str, cols: usize) -> String {
    if width(text) <= cols {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in text.chars() {
        let cw = width(c.encode_utf8(&mut [0; 4]));
        if w + cw + 1 > cols {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// Wraps plain text in one style: each `\n` starts a line, long lines wrap at spaces, words
/// longer than the width are cut.
#[must_use]
pub fn plain(text: &str, cols: usize, style: Style) -> Vec<Line<'static>> {
    text.split('\n').flat_map(|l| spans(vec![Span::styled(clean(l).into_owned(), style)], cols)).collect()
}

/// Wraps `text` after `prefix`, continuing lines indented under the text (a hanging indent),
/// so a long URL after `↳ ` stays beside its arrow instead of leaving it alone on a line.
#[must_use]
pub fn hanging(prefix: &str, text: &str, cols: usize, style: Style) -> Vec<Line<'static>> {
    let pw = width(prefix);
    let inner = cols.saturating_sub(pw).max(1);
    let mut out = Vec::new();
    for (i, line) in plain(text, inner, style).into_iter().enumerate() {
        let lead = if i == 0 { prefix.to_owned() } else { " ".repeat(pw) };
        let mut spans = vec![Span::styled(lead, style)];
        spans.extend(line.spans);
        out.push(Line::from(spans));
    }
    out
}

/// Whether `s` holds a control character (the test is on bytes for ASCII text).
fn has_control(s: &str) -> bool {
    if s.is_ascii() { s.bytes().any(|b| b < 0x20 || b == 0x7f) } else { s.chars().any(char::is_control) }
}

/// What `Line::width` says, without measuring printable ASCII a character at a time.
fn line_width(line: &Line<'_>) -> usize {
    use unicode_width::UnicodeWidthStr;
    let span = |s: &str| if s.bytes().all(|b| (0x20..0x7f).contains(&b)) { s.len() } else { s.width() };
    line.spans.iter().map(|s| span(&s.content)).sum()
}

/// Re-wraps rendered lines that are wider than `cols` (keeping their styles) and guards them.
#[must_use]
pub fn fit(lines: Vec<Line<'static>>, cols: usize) -> Vec<Line<'static>> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let line = guard_line(line);
        if line_width(&line) <= cols {
            out.push(line);
        } else {
            let style = line.style;
            for mut l in spans(line.spans, cols) {
                l.style = style;
                out.push(l);
            }
        }
    }
    out
}

/// Greedy word wrap of styled spans into lines of at most `cols` columns (at least one line).
#[must_use]
pub fn spans(input: Vec<Span<'static>>, cols: usize) -> Vec<Line<'static>> {
    let cols = cols.max(1);
    let mut w = Wrapper { cols, lines: Vec::new(), cur: Vec::new(), cur_w: 0 };
    for span in input {
        let text = clean(&span.content).into_owned();
        for (token, is_space) in tokens(&text) {
            w.token(token, is_space, span.style);
        }
    }
    w.flush();
    if w.lines.is_empty() {
        w.lines.push(Line::default());
    }
    w.lines
}

struct Wrapper {
    cols: usize,
    lines: Vec<Line<'static>>,
    cur: Vec<Span<'static>>,
    cur_w: usize,
}

impl Wrapper {
    /// Adds `s`, `w` columns wide, to the current row.
    fn push(&mut self, s: &str, w: usize, style: Style) {
        self.cur_w += w;
        if let Some(last) = self.cur.last_mut().filter(|l| l.style == style) {
            last.content.to_mut().push_str(s);
        } else {
            self.cur.push(Span::styled(s.to_owned(), style));
        }
    }

    fn flush(&mut self) {
        // Spaces at a break are dropped, as a reader expects.
        while let Some(last) = self.cur.last_mut() {
            let trimmed = last.content.trim_end().len();
            if trimmed == 0 {
                self.cur.pop();
            } else {
                last.content.to_mut().truncate(trimmed);
                break;
            }
        }
        self.lines.push(Line::from(std::mem::take(&mut self.cur)));
        self.cur_w = 0;
    }

    fn token(&mut self, token: &str, is_space: bool, style: Style) {
        let tw = width(token);
        if self.cur_w + tw <= self.cols {
            self.push(token, tw, style);
            return;
        }
        if is_space {
            self.flush();
            return;
        }
        if tw <= self.cols {
            self.flush();
            self.push(token, tw, style);
            return;
        }
        // A word wider than the line: cut it where it overflows.
        let mut buf = [0u8; 4];
        for c in token.chars() {
            let cw = c.width().unwrap_or(0);
            if self.cur_w + cw > self.cols {
                self.flush();
            }
            self.push(c.encode_utf8(&mut buf), cw, style);
        }
    }
}

/// The line still arriving, wrapped as [`plain`] wraps it, for a cost that does not grow with
/// the line: the greedy wrap of words already followed by a space never changes, so they are
/// placed once; only the last word (it may grow) and the row it lands on are redone. A line
/// holding an escape sequence, C1 control or CR (which the sanitiser reads with what follows)
/// is wrapped whole each time instead.
#[derive(Debug, Default)]
pub struct GrowingLine {
    /// Where the line starts in its text, and the width and style it is wrapped for.
    key: Option<(usize, usize, Style)>,
    /// Bytes of the line placed, and checked for sequences that reach.
    done: usize,
    checked: usize,
    reaching: bool,
    /// The placed part sanitised, the rows it filled, and the row being filled.
    text: String,
    rows: Vec<Line<'static>>,
    row: OneStyle,
    /// The rows after the placed ones (all rows, for a line wrapped whole).
    rest: Vec<Line<'static>>,
}

impl GrowingLine {
    /// Wraps `line` (which starts at byte `start` of its text and has no newline) to `cols`,
    /// then appends `cursor` to the last row.
    pub fn update(&mut self, start: usize, line: &str, cols: usize, style: Style, cursor: Span<'static>) {
        let key = Some((start, cols, style));
        if self.key != key || line.len() < self.checked || !line.is_char_boundary(self.checked) {
            *self = Self { key, row: OneStyle { cols: cols.max(1), ..OneStyle::default() }, ..Self::default() };
        }
        self.reaching |= may_reach(&line[self.checked..]);
        self.checked = line.len();
        if self.reaching {
            self.done = 0;
            self.rows.clear();
            self.rest = plain(&sanitize(line), cols, style);
        } else {
            // Place every word now followed by a space: up to the start of the last word.
            if let Some(cut) = last_word(line, self.done) {
                let from = self.text.len();
                self.text.push_str(&sanitize(&line[self.done..cut]));
                self.row.place(&self.text, from, style, &mut self.rows);
                self.done = cut;
            }
            // The row being filled and the last word, on their own.
            let base = self.row.start.unwrap_or(self.text.len());
            let mut text = self.text[base..].to_owned();
            let from = text.len();
            text.push_str(&sanitize(&line[self.done..]));
            let mut row = self.row.clone();
            row.shift(base);
            self.rest.clear();
            row.place(&text, from, style, &mut self.rest);
            row.flush(&text, style, &mut self.rest);
        }
        if let Some(last) = self.rest.last_mut() {
            last.spans.push(cursor);
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.rows.len() + self.rest.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[must_use]
    pub fn get(&self, i: usize) -> Option<&Line<'static>> {
        let n = self.rows.len();
        if i < n { self.rows.get(i) } else { self.rest.get(i - n) }
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

/// [`spans`]'s greedy wrap for text in one style, kept as offsets into the text: a row is a
/// slice, made a line once when it is full (the same lines, without a span per word).
#[derive(Debug, Default, Clone)]
struct OneStyle {
    cols: usize,
    /// Where the row's text starts (`None` while it is empty) and ends, and its width.
    start: Option<usize>,
    end: usize,
    w: usize,
}

impl OneStyle {
    /// Places the tokens of `text[from..]`, pushing the rows they fill to `rows`.
    fn place(&mut self, text: &str, from: usize, style: Style, rows: &mut Vec<Line<'static>>) {
        for (token, is_space) in tokens(&text[from..]) {
            let at = token.as_ptr() as usize - text.as_ptr() as usize;
            let tw = width(token);
            if self.w + tw <= self.cols {
                self.push(at, token.len(), tw);
            } else if is_space {
                self.flush(text, style, rows);
            } else if tw <= self.cols {
                self.flush(text, style, rows);
                self.push(at, token.len(), tw);
            } else {
                // A word wider than the line: cut it where it overflows.
                for (i, c) in token.char_indices() {
                    let cw = c.width().unwrap_or(0);
                    if self.w + cw > self.cols {
                        self.flush(text, style, rows);
                    }
                    self.push(at + i, c.len_utf8(), cw);
                }
            }
        }
    }

    fn push(&mut self, at: usize, len: usize, w: usize) {
        self.start.get_or_insert(at);
        self.end = at + len;
        self.w += w;
    }

    /// Ends the row (spaces at a break are dropped, as a reader expects).
    fn flush(&mut self, text: &str, style: Style, rows: &mut Vec<Line<'static>>) {
        let row = self.start.map_or("", |s| text[s..self.end].trim_end());
        rows.push(if row.is_empty() { Line::default() } else { Line::from(vec![Span::styled(row.to_owned(), style)]) });
        self.start = None;
        self.w = 0;
    }

    /// Moves the row's offsets to a text that starts at `base` of the old one.
    fn shift(&mut self, base: usize) {
        self.start = self.start.map(|s| s - base);
        self.end = self.end.saturating_sub(base);
    }
}

/// The start of the last word of `line` after `from` that a space precedes and that starts
/// with a character the sanitiser keeps: the text before it ends its last token there.
fn last_word(line: &str, from: usize) -> Option<usize> {
    let b = line.as_bytes();
    let mut end = b.len();
    while let Some(i) = memchr::memrchr(b' ', &b[from..end]).map(|i| from + i) {
        let next = line.get(i + 1..).and_then(|s| s.chars().next());
        if next
            .is_some_and(|c| c != ' ' && !c.is_control() && sanitize(c.encode_utf8(&mut [0; 4])).len() == c.len_utf8())
        {
            return Some(i + 1);
        }
        end = i;
    }
    None
}

/// Splits text into runs of spaces and runs of non-spaces. (A space byte is never part of a
/// longer UTF-8 sequence, so the runs are found byte by byte.)
/// They are handed out one by one: a long answer's frame places tens of thousands of them.
fn tokens(s: &str) -> impl Iterator<Item = (&str, bool)> {
    let b = s.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        let space = *b.get(start)? == b' ';
        let end = b[start..].iter().position(|&c| (c == b' ') != space).map_or(b.len(), |i| start + i);
        let token = (&s[start..end], space);
        start = end;
        Some(token)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn wraps_words_and_cuts_long_ones() {
        let l = plain("the quick brown fox", 10, Style::default());
        assert_eq!(text(&l), ["the quick", "brown fox"]);
        let l = plain("abcdefghijkl", 5, Style::default());
        assert_eq!(text(&l), ["abcde", "fghij", "kl"]);
        let l = plain("a\n\nb", 5, Style::default());
        assert_eq!(text(&l), ["a", "", "b"]);
        let l = plain("  indented", 20, Style::default());
        assert_eq!(text(&l), ["  indented"]);
    }

    #[test]
    fn hanging_indent_cuts_long_words_beside_the_prefix() {
        let l = hanging("  ↳ ", "https://example.com/a/long/path", 20, Style::default());
        assert_eq!(text(&l), ["  ↳ https://example.", "    com/a/long/path"]);
    }

    #[test]
    fn wide_characters_count_two() {
        let l = plain("日本語のテキスト", 6, Style::default());
        assert_eq!(text(&l), ["日本語", "のテキ", "スト"]);
    }

    #[test]
    fn a_growing_line_wraps_as_the_whole_line() {
        let line = "the quick  brown fox\tjumps over a_word_much_longer_than_the_width_of_the_screen and 日本語 \
                    テキスト  ok\u{1}x \u{202e}y   spaces   end\u{a0} nbsp\u{a0}\u{a0} x";
        let cursor = || Span::raw("▌");
        for cols in [1, 7, 12, 30] {
            let mut g = GrowingLine::default();
            for (end, _) in line.char_indices().skip(1) {
                let part = &line[..end];
                g.update(5, part, cols, Style::default(), cursor());
                let mut want = plain(&sanitize(part), cols, Style::default());
                if let Some(last) = want.last_mut() {
                    last.spans.push(cursor());
                }
                let got: Vec<Line<'_>> = (0..g.len()).filter_map(|i| g.get(i)).cloned().collect();
                assert_eq!(got, want, "{cols} cols, {part:?}");
            }
            assert!(g.done > 0, "words were placed once");
            // A new line (a newline arrived) starts over; so does an escape sequence.
            g.update(9, "next", cols, Style::default(), cursor());
            assert_eq!(text(&(0..g.len()).filter_map(|i| g.get(i)).cloned().collect::<Vec<_>>()).concat(), "next▌");
            g.update(9, "next \u{1b}[31mred", cols, Style::default(), cursor());
            assert!(
                text(&(0..g.len()).filter_map(|i| g.get(i)).cloned().collect::<Vec<_>>()).concat().ends_with("red▌")
            );
        }
    }

    #[test]
    fn controls_never_pass() {
        let l = plain("a\u{1b}]0;PWNED\u{7}b\u{9b}c\td", 40, Style::default());
        assert_eq!(text(&l), ["a]0;PWNEDbc    d"]);
        let g = guard_line(Line::raw("x\u{1b}[2Jy"));
        assert_eq!(text(&[g]), ["x[2Jy"]);
    }
}
