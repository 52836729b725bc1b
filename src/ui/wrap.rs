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

/// [`fit`] of one line whose width (as `fit` measures it) is known to be `width`: a line that
/// fits and holds no control character is kept without being measured again.
#[must_use]
pub fn fit_measured(line: Line<'static>, width: usize, cols: usize) -> Vec<Line<'static>> {
    if width <= cols && !line.spans.iter().any(|s| has_control(&s.content)) {
        return vec![line];
    }
    fit(vec![line], cols)
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
/// the line: each byte is sanitised and measured once, and the greedy wrap places a token
/// once what follows it is known (a word once a space follows; a word wider than the line
/// character by character as it arrives, as it is cut from the row it starts on whatever
/// comes next). Only the row being filled and the last token are laid out again on each
/// update. A line holding an escape sequence, C1 control or CR (which the sanitiser reads
/// with what follows) is wrapped whole each time instead.
#[derive(Debug, Default)]
pub struct GrowingLine {
    /// Where the line starts in its text, and the width and style it is wrapped for.
    key: Option<(usize, usize, Style)>,
    /// Bytes of the line read, and whether they held a sequence that reaches.
    read: usize,
    reaching: bool,
    /// The line read so far, sanitised; the rows it filled, and the row being filled.
    text: String,
    rows: Vec<Line<'static>>,
    row: OneStyle,
    /// The rows after the placed ones (all rows, for a line wrapped whole).
    rest: Vec<Line<'static>>,
}

impl GrowingLine {
    /// Wraps `line` (which starts at byte `start` of its text and has no newline) to `cols`,
    /// then appends `cursor` (if any) to the last row.
    pub fn update(&mut self, start: usize, line: &str, cols: usize, style: Style, cursor: Option<Span<'static>>) {
        let key = Some((start, cols, style));
        if self.key != key || line.len() < self.read || !line.is_char_boundary(self.read) {
            *self = Self { key, row: OneStyle { cols: cols.max(1), ..OneStyle::default() }, ..Self::default() };
        }
        let new = &line[self.read..];
        // Text without a reaching sequence sanitises a character at a time, so the new bytes
        // sanitised alone are what the whole line sanitised would hold there.
        self.reaching |= may_reach(new);
        self.read = line.len();
        if self.reaching {
            self.text = String::new();
            self.rows.clear();
            self.rest = plain(&sanitize(line), cols, style);
        } else {
            let from = self.text.len();
            self.text.push_str(&sanitize(new));
            self.row.feed(&self.text, from, style, &mut self.rows);
            self.rest.clear();
            self.row.clone().finish(&self.text, style, &mut self.rest);
        }
        if let Some((last, cursor)) = self.rest.last_mut().zip(cursor) {
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
        super::stream_block::row_of(&self.rows, &self.rest, i)
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

/// [`spans`]'s greedy wrap for text in one style that arrives in pieces, kept as offsets into
/// the text: a row is a slice, made a line once when it is full (the same lines, without a
/// span per word).
#[derive(Debug, Default, Clone)]
struct OneStyle {
    cols: usize,
    /// Where the row's text starts (`None` while it is empty) and ends, and its width.
    start: Option<usize>,
    end: usize,
    w: usize,
    /// The last token, not placed yet: where it goes depends on how long it gets.
    last: Option<Token>,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    at: usize,
    space: bool,
    /// Columns so far.
    w: usize,
    /// A word wider than the line: its characters are placed as they arrive.
    cutting: bool,
}

impl OneStyle {
    /// Reads `text[from..]` (the text before was read already), placing every token that
    /// is followed by another and pushing the rows they fill to `rows`.
    fn feed(&mut self, text: &str, from: usize, style: Style, rows: &mut Vec<Line<'static>>) {
        for (piece, space) in tokens(&text[from..]) {
            let at = piece.as_ptr() as usize - text.as_ptr() as usize;
            let mut t = match self.last {
                Some(t) if t.space == space => t,
                ended => {
                    if let Some(t) = ended {
                        self.place(t, text, at, style, rows);
                    }
                    Token { at, space, w: 0, cutting: false }
                }
            };
            if t.cutting {
                self.cut(text, at, at + piece.len(), style, rows);
            } else {
                t.w += if space { piece.len() } else { width(piece) };
                if !space && t.w > self.cols {
                    t.cutting = true;
                    self.cut(text, t.at, at + piece.len(), style, rows);
                }
            }
            self.last = Some(t);
        }
    }

    /// Places the token `t`, which ends at `end`, as [`Wrapper::token`] does.
    fn place(&mut self, t: Token, text: &str, end: usize, style: Style, rows: &mut Vec<Line<'static>>) {
        if t.cutting {
            // Placed as it arrived.
        } else if self.w + t.w <= self.cols {
            self.push(t.at, end - t.at, t.w);
        } else if t.space {
            self.flush(text, style, rows);
        } else {
            self.flush(text, style, rows);
            self.push(t.at, end - t.at, t.w);
        }
    }

    /// Places the characters of `text[from..to]`, part of a word wider than the line, cutting
    /// it where it overflows.
    fn cut(&mut self, text: &str, from: usize, to: usize, style: Style, rows: &mut Vec<Line<'static>>) {
        for (i, c) in text[from..to].char_indices() {
            let cw = c.width().unwrap_or(0);
            if self.w + cw > self.cols {
                self.flush(text, style, rows);
            }
            self.push(from + i, c.len_utf8(), cw);
        }
    }

    /// Places the last token as the end of the text and ends the row.
    fn finish(mut self, text: &str, style: Style, rows: &mut Vec<Line<'static>>) {
        if let Some(t) = self.last.take() {
            self.place(t, text, text.len(), style, rows);
        }
        self.flush(text, style, rows);
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
                g.update(5, part, cols, Style::default(), Some(cursor()));
                let mut want = plain(&sanitize(part), cols, Style::default());
                if let Some(last) = want.last_mut() {
                    last.spans.push(cursor());
                }
                let got: Vec<Line<'_>> = (0..g.len()).filter_map(|i| g.get(i)).cloned().collect();
                assert_eq!(got, want, "{cols} cols, {part:?}");
            }
            assert!(!g.rows.is_empty(), "rows were placed once");
            // A new line (a newline arrived) starts over; so does an escape sequence.
            g.update(9, "next", cols, Style::default(), Some(cursor()));
            assert_eq!(text(&(0..g.len()).filter_map(|i| g.get(i)).cloned().collect::<Vec<_>>()).concat(), "next▌");
            g.update(9, "next \u{1b}[31mred", cols, Style::default(), Some(cursor()));
            assert!(
                text(&(0..g.len()).filter_map(|i| g.get(i)).cloned().collect::<Vec<_>>()).concat().ends_with("red▌")
            );
        }
    }

    /// Feeds `line` to a [`GrowingLine`] in the pieces `cuts` makes, checking after each that
    /// it shows what the whole line wrapped shows, and that only the last rows are redone.
    fn grows_as_whole(line: &str, cuts: &[usize], cols: usize) -> Result<(), String> {
        let cursor = || Span::raw("▌");
        let mut g = GrowingLine::default();
        let mut ends: Vec<usize> = cuts.iter().map(|&c| c % (line.len() + 1)).collect();
        ends.push(line.len());
        ends.sort_unstable();
        for end in ends.into_iter().filter(|&e| line.is_char_boundary(e)) {
            let part = &line[..end];
            g.update(3, part, cols, Style::default(), Some(cursor()));
            let mut want = plain(&sanitize(part), cols, Style::default());
            if let Some(last) = want.last_mut() {
                last.spans.push(cursor());
            }
            let got: Vec<Line<'_>> = (0..g.len()).filter_map(|i| g.get(i)).cloned().collect();
            if got != want {
                return Err(format!("{cols} cols, {part:?}:\n got {:?}\nwant {:?}", text(&got), text(&want)));
            }
            if !g.reaching && g.rest.len() > 2 {
                return Err(format!("{} rows redone at {cols} cols, {part:?}", g.rest.len()));
            }
        }
        Ok(())
    }

    #[test]
    fn a_long_line_without_spaces_is_cut_as_it_arrives() {
        let blob: String = (0..900u32)
            .map(|i| {
                char::from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(i * 7 % 64) as usize])
            })
            .collect();
        let cjk = "日本語のテキストは空白なしで続きます。".repeat(12);
        let emoji = "e\u{301}👍🏽👨\u{200d}👩\u{200d}👧a\u{308}\u{323}✋🏿".repeat(16);
        for line in [blob.as_str(), &cjk, &emoji, &format!("{cjk} {blob} {emoji}")] {
            let cuts: Vec<usize> = (0..line.len()).step_by(7).collect();
            for cols in [1, 2, 3, 13, 80] {
                grows_as_whole(line, &cuts, cols).unwrap();
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        #[test]
        fn any_line_grows_as_the_whole_line(
            pieces in proptest::collection::vec(0usize..PIECES.len(), 0..60),
            cuts in proptest::collection::vec(0usize..1000, 0..30),
            cols in 1usize..=40,
        ) {
            let line: String = pieces.iter().map(|&i| PIECES[i]).collect();
            grows_as_whole(&line, &cuts, cols).map_err(proptest::test_runner::TestCaseError::fail)?;
        }
    }

    /// What lines are made of: words, runs of spaces, wide and zero-width characters,
    /// combining marks, emoji sequences, tabs and controls the sanitiser drops or expands.
    const PIECES: &[&str] = &[
        "a",
        "word",
        "b",
        " ",
        "  ",
        "     ",
        "日",
        "本語",
        "\u{301}",
        "e\u{301}\u{302}",
        "👍🏽",
        "👨\u{200d}👩\u{200d}👧",
        "\u{200b}",
        "\u{a0}",
        "\u{3000}",
        "\t",
        "\u{1}",
        "\u{202e}",
        "\u{7f}",
        "x",
        "abcdefghijklmnopqrstuvwxyz0123456789",
        "\u{fe0f}",
        "ｆｕｌｌ",
    ];

    #[test]
    fn controls_never_pass() {
        let l = plain("a\u{1b}]0;PWNED\u{7}b\u{9b}c\td", 40, Style::default());
        assert_eq!(text(&l), ["a]0;PWNEDbc    d"]);
        let g = guard_line(Line::raw("x\u{1b}[2Jy"));
        assert_eq!(text(&[g]), ["x[2Jy"]);
    }
}
