//! Word motions and text objects for the composer's vim keys (`vim.rs`): where `w`, `b` and
//! `e` land, and what `iw aw i" a" i( a{ …` cover.

use super::vim::{Buf, class};

/// The start of the next word after `p` (words of letters, or of punctuation).
pub(super) fn next_word(b: &Buf, mut p: usize) -> usize {
    let t = &b.text;
    if p >= t.len() {
        return p;
    }
    let c = class(t[p]);
    if c != 0 {
        while p < t.len() && class(t[p]) == c {
            p += 1;
        }
    }
    while p < t.len() && t[p].is_whitespace() {
        p += 1;
    }
    p
}

/// The start of the word before `p`.
pub(super) fn prev_word(b: &Buf, mut p: usize) -> usize {
    let t = &b.text;
    while p > 0 && t[p - 1].is_whitespace() {
        p -= 1;
    }
    if p == 0 {
        return 0;
    }
    let c = class(t[p - 1]);
    while p > 0 && class(t[p - 1]) == c {
        p -= 1;
    }
    p
}

/// The end of the word at or after `p` (`stay`: the cursor's own word when it is on one).
pub(super) fn word_end(b: &Buf, p: usize, stay: bool) -> usize {
    let t = &b.text;
    let mut p = if stay { p } else { p + 1 };
    while p < t.len() && t[p].is_whitespace() {
        p += 1;
    }
    if p >= t.len() {
        return t.len().saturating_sub(1);
    }
    let c = class(t[p]);
    while p + 1 < t.len() && class(t[p + 1]) == c {
        p += 1;
    }
    p
}

/// A text object around the cursor: `w`, a quote, or a bracket pair; (start, end) exclusive.
pub(super) fn object(b: &Buf, around: bool, kind: char) -> Option<(usize, usize)> {
    let t = &b.text;
    match kind {
        'w' => {
            let c = class(*t.get(b.pos)?);
            let mut s = b.pos;
            while s > 0 && class(t[s - 1]) == c && t[s - 1] != '\n' {
                s -= 1;
            }
            let mut e = b.pos;
            while e < t.len() && class(t[e]) == c && t[e] != '\n' {
                e += 1;
            }
            if around {
                let word_end = e;
                while e < t.len() && matches!(t[e], ' ' | '\t') {
                    e += 1;
                }
                // No space after the word: the space before it goes instead, as in vim.
                if e == word_end {
                    while s > 0 && matches!(t[s - 1], ' ' | '\t') {
                        s -= 1;
                    }
                }
            }
            Some((s, e))
        }
        '"' | '\'' | '`' => {
            let (ls, le) = (b.line_start(b.pos), b.line_end(b.pos));
            let quotes: Vec<usize> = (ls..le).filter(|&i| t[i] == kind).collect();
            let pair = quotes.chunks(2).find(|q| q.len() == 2 && b.pos <= q[1])?;
            let (l, r) = (pair[0], pair[1]);
            Some(if around { (l, r + 1) } else { (l + 1, r) })
        }
        _ => {
            let (open, close) = match kind {
                '(' | ')' | 'b' => ('(', ')'),
                '{' | '}' | 'B' => ('{', '}'),
                '[' | ']' => ('[', ']'),
                '<' | '>' => ('<', '>'),
                _ => return None,
            };
            let mut depth = 0usize;
            let mut l = None;
            for i in (0..=b.pos.min(t.len().saturating_sub(1))).rev() {
                if t[i] == close && i != b.pos {
                    depth += 1;
                } else if t[i] == open {
                    if depth == 0 {
                        l = Some(i);
                        break;
                    }
                    depth -= 1;
                }
            }
            let l = l?;
            let mut depth = 0usize;
            let r = (l + 1..t.len()).find(|&i| {
                if t[i] == open {
                    depth += 1;
                } else if t[i] == close {
                    if depth == 0 {
                        return true;
                    }
                    depth -= 1;
                }
                false
            })?;
            Some(if around { (l, r + 1) } else { (l + 1, r) })
        }
    }
}
