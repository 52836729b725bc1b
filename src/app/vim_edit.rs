//! The edits of the composer's vim keys (`vim.rs`): `d c y` over a motion or text object,
//! and `p`/`P` of the register.

use super::{Buf, Mode, Register, Span, Vim};

impl Vim {
    /// `d`, `c` or `y` over `span`; true when the text changed.
    pub(super) fn operate(&mut self, b: &mut Buf, op: char, span: Span) -> bool {
        let (mut s, mut e, linewise) = match span {
            Span::To { at, inclusive } => {
                let (lo, hi) = (b.pos.min(at), b.pos.max(at));
                (lo, (hi + usize::from(inclusive)).min(b.text.len()), false)
            }
            Span::Range(s, e) => (s, e.min(b.text.len()), false),
            Span::Lines(at) => (b.line_start(b.pos.min(at)), b.line_end(b.pos.max(at)), true),
        };
        if s >= e && !linewise {
            if op == 'c' {
                self.mode = Mode::Insert;
            }
            return false;
        }
        self.register = Register { text: b.text[s..e].iter().collect(), linewise };
        match op {
            'y' => {
                b.pos = s;
                false
            }
            'c' => {
                b.text.drain(s..e);
                b.pos = s;
                self.mode = Mode::Insert;
                true
            }
            _ => {
                if linewise {
                    // The line's newline goes with it: the one after, or for the last line the one before.
                    if e < b.text.len() {
                        e += 1;
                    } else {
                        s = s.saturating_sub(1);
                    }
                }
                b.text.drain(s..e);
                b.pos = if linewise { b.line_start(s.min(b.text.len())) } else { s };
                b.pos = b.pos.min(b.text.len());
                true
            }
        }
    }

    /// `p` (after) or `P` (before) the register, `n` times.
    pub(super) fn paste(&mut self, b: &mut Buf, after: bool, n: usize) -> bool {
        let r = &self.register;
        if r.text.is_empty() && !r.linewise {
            return false;
        }
        let text: Vec<char> = r.text.repeat(n).chars().collect();
        if r.linewise {
            let lines: Vec<char> =
                std::iter::repeat_n(r.text.as_str(), n).collect::<Vec<_>>().join("\n").chars().collect();
            let at = if after { b.line_end(b.pos) } else { b.line_start(b.pos) };
            let mut ins = lines.clone();
            let start = if after {
                ins.insert(0, '\n');
                at + 1
            } else {
                ins.push('\n');
                at
            };
            b.text.splice(at..at, ins);
            b.pos = start;
        } else {
            let at = if after && b.pos < b.line_end(b.pos) { b.pos + 1 } else { b.pos };
            let len = text.len();
            b.text.splice(at..at, text);
            b.pos = at + len - 1;
        }
        true
    }
}
