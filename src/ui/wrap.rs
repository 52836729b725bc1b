//! Word wrapping for styled text, measured in terminal columns, plus the last guard against
//! control characters: whatever reaches the screen went through here or `guard_line`.

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
    if !line.spans.iter().any(|s| s.content.chars().any(char::is_control)) {
        return line;
    }
    let spans =
        line.spans.into_iter().map(|s| Span::styled(clean(&s.content).into_owned(), s.style)).collect::<Vec<_>>();
    Line { spans, style: line.style, alignment: line.alignment }
}

/// Width of a string in columns (control characters count as nothing).
#[must_use]
pub fn width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
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

/// Re-wraps rendered lines that are wider than `cols` (keeping their styles) and guards them.
#[must_use]
pub fn fit(lines: Vec<Line<'static>>, cols: usize) -> Vec<Line<'static>> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let line = guard_line(line);
        if line.width() <= cols {
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
    fn push(&mut self, s: &str, style: Style) {
        self.cur_w += width(s);
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
            self.push(token, style);
            return;
        }
        if is_space {
            self.flush();
            return;
        }
        if tw <= self.cols {
            self.flush();
            self.push(token, style);
            return;
        }
        // A word wider than the line: cut it where it overflows.
        let mut buf = [0u8; 4];
        for c in token.chars() {
            let cw = c.width().unwrap_or(0);
            if self.cur_w + cw > self.cols {
                self.flush();
            }
            self.push(c.encode_utf8(&mut buf), style);
        }
    }
}

/// Splits text into runs of spaces and runs of non-spaces.
fn tokens(s: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut space = None;
    for (i, c) in s.char_indices() {
        let is = c == ' ';
        match space {
            Some(prev) if prev != is => {
                out.push((&s[start..i], prev));
                start = i;
            }
            _ => {}
        }
        space = Some(is);
    }
    if let Some(prev) = space {
        out.push((&s[start..], prev));
    }
    out
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
    fn controls_never_pass() {
        let l = plain("a\u{1b}]0;PWNED\u{7}b\u{9b}c\td", 40, Style::default());
        assert_eq!(text(&l), ["a]0;PWNEDbc    d"]);
        let g = guard_line(Line::raw("x\u{1b}[2Jy"));
        assert_eq!(text(&[g]), ["x[2Jy"]);
    }
}
