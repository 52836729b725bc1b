//! Word wrap for text that arrives in pieces: the reasoning a headless run prints on a terminal,
//! wrapped to the rendered answer's width instead of being cut mid-word by the terminal. A word
//! is held until the space or newline after it arrives (it may still grow); `finish` lets go of
//! the last one.

use unicode_width::UnicodeWidthStr;

/// Wraps streamed text at `width` columns.
#[derive(Debug, Default)]
pub struct StreamWrap {
    width: usize,
    /// Column of the next character on the current line.
    col: usize,
    /// The word not yet placed (no space in it).
    word: String,
    /// The spaces between the last placed word and `word`.
    gap: usize,
}

impl StreamWrap {
    #[must_use]
    pub fn new(width: u16) -> Self {
        Self { width: usize::from(width.max(1)), ..Self::default() }
    }

    /// Takes a piece of text; appends to `out` what can be placed now.
    pub fn push(&mut self, text: &str, out: &mut String) {
        for c in text.chars() {
            match c {
                '\n' => {
                    self.place(out);
                    out.push('\n');
                    (self.col, self.gap) = (0, 0);
                }
                ' ' => {
                    self.place(out);
                    self.gap += 1;
                }
                '\t' => {
                    self.place(out);
                    self.gap += 4;
                }
                c => self.word.push(c),
            }
        }
    }

    /// The text ended: places the last word (trailing spaces are dropped).
    pub fn finish(&mut self, out: &mut String) {
        self.place(out);
        (self.col, self.gap) = (0, 0);
    }

    /// Whether the text placed so far ends a line.
    #[must_use]
    pub fn at_line_start(&self) -> bool {
        self.col == 0 && self.word.is_empty()
    }

    /// Places the held word after its gap, on a new line when it does not fit; a word longer
    /// than a line is cut where the line ends.
    fn place(&mut self, out: &mut String) {
        if self.word.is_empty() {
            return;
        }
        let w = self.word.width();
        if self.col > 0 && self.col + self.gap + w > self.width {
            out.push('\n');
            self.col = 0;
        } else {
            out.extend(std::iter::repeat_n(' ', self.gap));
            self.col += self.gap;
        }
        for c in std::mem::take(&mut self.word).chars() {
            let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if self.col > 0 && self.col + cw > self.width {
                out.push('\n');
                self.col = 0;
            }
            out.push(c);
            self.col += cw;
        }
        self.gap = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrap(text: &str, width: u16, piece: usize) -> String {
        let mut w = StreamWrap::new(width);
        let mut out = String::new();
        let chars: Vec<char> = text.chars().collect();
        for p in chars.chunks(piece) {
            w.push(&p.iter().collect::<String>(), &mut out);
        }
        w.finish(&mut out);
        out
    }

    #[test]
    fn wraps_between_words_whatever_the_pieces() {
        let text = "The user wrote hi. I should show that thinking streams apart.\n\nSecond  paragraph here.";
        let want = "The user wrote hi. I\nshould show that\nthinking streams\napart.\n\nSecond  paragraph\nhere.";
        for piece in [1, 2, 3, 7, 100] {
            assert_eq!(wrap(text, 20, piece), want, "pieces of {piece}");
        }
        for line in want.lines() {
            assert!(line.width() <= 20, "{line}");
        }
    }

    #[test]
    fn cuts_a_word_longer_than_a_line_and_counts_wide_characters() {
        assert_eq!(wrap("ab abcdefghij", 4, 1), "ab\nabcd\nefgh\nij");
        assert_eq!(wrap("日本語の文章", 4, 2), "日本\n語の\n文章");
        let mut w = StreamWrap::new(10);
        let mut out = String::new();
        w.push("one two", &mut out);
        assert_eq!(out, "one", "the last word may still grow");
        assert!(!w.at_line_start());
        w.push("\n", &mut out);
        assert!(w.at_line_start());
    }
}
