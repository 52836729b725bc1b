//! A small vim emulation for the composer: normal, insert and visual modes over the draft as
//! one run of characters with a cursor. Motions (`hjkl w b e 0 $ gg G`), operators (`d c y`,
//! doubled for lines), text objects (`iw aw i" a" i( i{ i[`), `x p P`, counts, undo and redo
//! (`u`, Ctrl+R) and `.`. Pure: `key` takes the text and cursor and gives them back changed;
//! the key handler (`vim_keys.rs`) moves them in and out of the text area.

use super::vim_motion::{next_word, object, prev_word, word_end};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Which mode the composer is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    Normal,
    /// Typing goes into the draft as without vim.
    #[default]
    Insert,
    /// Characters from the anchor to the cursor are selected.
    Visual,
}

/// The draft as vim edits it: characters and a cursor (a character index).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Buf {
    pub text: Vec<char>,
    pub pos: usize,
}

impl Buf {
    #[must_use]
    pub fn new(text: &str, pos: usize) -> Self {
        let text: Vec<char> = text.chars().collect();
        let pos = pos.min(text.len());
        Self { text, pos }
    }

    #[must_use]
    pub fn string(&self) -> String {
        self.text.iter().collect()
    }

    pub(super) fn line_start(&self, at: usize) -> usize {
        self.text[..at.min(self.text.len())].iter().rposition(|c| *c == '\n').map_or(0, |i| i + 1)
    }

    pub(super) fn line_end(&self, at: usize) -> usize {
        let at = at.min(self.text.len());
        self.text[at..].iter().position(|c| *c == '\n').map_or(self.text.len(), |i| at + i)
    }

    /// The last character of the line (where normal mode's cursor may rest).
    fn last_on_line(&self, at: usize) -> usize {
        let (s, e) = (self.line_start(at), self.line_end(at));
        if e > s { e - 1 } else { s }
    }
}

/// What a motion covers for an operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Span {
    /// From the cursor to here; `inclusive` takes the character under the target too.
    To { at: usize, inclusive: bool },
    /// Whole lines, from the cursor's to the target's.
    Lines(usize),
    /// A fixed range (text objects).
    Range(usize, usize),
}

/// Text cut or copied, and whether it was whole lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Register {
    pub text: String,
    pub linewise: bool,
}

/// The last change, for `.`: the normal-mode keys that made it and the keys typed after them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Change {
    keys: Vec<KeyEvent>,
    typed: Option<Vec<KeyEvent>>,
}

/// The emulation's state between keys.
#[derive(Debug, Clone, Default)]
pub struct Vim {
    pub mode: Mode,
    /// Keys of a command not complete yet (`d`, `2d`, `ci`, `g`).
    pending: Vec<KeyEvent>,
    pub register: Register,
    undo: Vec<Buf>,
    redo: Vec<Buf>,
    /// Where visual mode started.
    anchor: usize,
    last: Change,
    /// The change being typed in insert mode, finished by Esc.
    open: Option<Change>,
    /// The draft before the insert began: one undo step for the whole insert.
    insert_before: Option<Buf>,
    /// Replaying `.`: nothing is recorded.
    replaying: bool,
}

/// What a key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The emulation used it (the buffer may have changed).
    Used,
    /// Not a vim key here: the chat screen's own handling gets it.
    Pass,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// 0 whitespace, 1 word characters, 2 punctuation.
pub(super) fn class(c: char) -> u8 {
    if c.is_whitespace() {
        0
    } else if is_word(c) {
        1
    } else {
        2
    }
}

fn plain(k: &KeyEvent) -> Option<char> {
    match k.code {
        KeyCode::Char(c) if !k.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) => Some(c),
        _ => None,
    }
}

/// A count typed before a command: digits (not starting with 0) from `i`; (count, next index).
fn count(chars: &[char], mut i: usize) -> (Option<usize>, usize) {
    let start = i;
    while i < chars.len() && chars[i].is_ascii_digit() && !(i == start && chars[i] == '0') {
        i += 1;
    }
    let n = chars[start..i].iter().collect::<String>().parse().ok();
    (n, i)
}

impl Vim {
    /// A fresh emulation in `mode`.
    #[must_use]
    pub fn new(mode: Mode) -> Self {
        Self { mode, ..Self::default() }
    }

    /// A command half typed (the status bar shows it).
    #[must_use]
    pub fn pending(&self) -> String {
        self.pending.iter().filter_map(plain).collect()
    }

    /// Esc in insert mode: back to normal, the cursor one left as vim does; the insert is one
    /// undo step and the change `.` repeats.
    pub fn leave_insert(&mut self, b: &mut Buf) {
        self.mode = Mode::Normal;
        if let Some(before) = self.insert_before.take() {
            if before.text != b.text {
                self.push_undo(before);
            }
        }
        if let Some(mut change) = self.open.take() {
            change.typed.get_or_insert_with(Vec::new);
            self.last = change;
        }
        if b.pos > b.line_start(b.pos) {
            b.pos -= 1;
        }
    }

    /// Notes a key typed in insert mode (the text area inserts it), so `.` types it again.
    pub fn typed(&mut self, key: KeyEvent) {
        if let Some(change) = &mut self.open {
            change.typed.get_or_insert_with(Vec::new).push(key);
        }
    }

    /// Insert mode as the emulation does it on its own (for `.` and for tests): characters,
    /// Backspace, and Alt/Shift+Enter for a new line.
    pub fn insert_key(b: &mut Buf, key: KeyEvent) {
        match key.code {
            KeyCode::Char(c) if plain(&key).is_some() => {
                b.text.insert(b.pos, c);
                b.pos += 1;
            }
            KeyCode::Backspace if b.pos > 0 => {
                b.pos -= 1;
                b.text.remove(b.pos);
            }
            KeyCode::Enter => {
                b.text.insert(b.pos, '\n');
                b.pos += 1;
            }
            _ => {}
        }
    }

    /// Any key, in whichever mode: what the tests drive (the chat screen's insert mode is the
    /// text area's own).
    pub fn feed(&mut self, b: &mut Buf, key: KeyEvent) -> Outcome {
        if self.mode == Mode::Insert {
            if key.code == KeyCode::Esc {
                self.leave_insert(b);
            } else {
                Self::insert_key(b, key);
                self.typed(key);
            }
            return Outcome::Used;
        }
        self.key(b, key)
    }

    fn push_undo(&mut self, before: Buf) {
        self.undo.push(before);
        self.redo.clear();
        if self.undo.len() > 200 {
            self.undo.remove(0);
        }
    }

    /// A key in normal or visual mode (insert mode keys are the text area's, Esc aside).
    pub fn key(&mut self, b: &mut Buf, key: KeyEvent) -> Outcome {
        if key.code == KeyCode::Char('r') && key.modifiers == KeyModifiers::CONTROL {
            self.pending.clear();
            if let Some(next) = self.redo.pop() {
                self.undo.push(b.clone());
                *b = next;
            }
            return Outcome::Used;
        }
        if key.code == KeyCode::Esc {
            if self.pending.is_empty() && self.mode == Mode::Normal {
                return Outcome::Pass;
            }
            self.pending.clear();
            self.mode = Mode::Normal;
            return Outcome::Used;
        }
        if plain(&key).is_none() {
            self.pending.clear();
            // The chat screen takes the key (Enter sends and empties the draft): a selection
            // would outlive its text, and typing after it would go to visual-mode commands.
            if self.mode == Mode::Visual {
                self.mode = Mode::Normal;
            }
            return Outcome::Pass;
        }
        self.pending.push(key);
        let keys = self.pending.clone();
        let chars: Vec<char> = keys.iter().filter_map(plain).collect();
        if chars == ['.'] && self.mode == Mode::Normal {
            self.pending.clear();
            self.repeat(b);
            return Outcome::Used;
        }
        let before = b.clone();
        let was = self.mode;
        match self.run(b, &chars) {
            Some(changed) => {
                self.pending.clear();
                self.record(keys, before, changed, was);
            }
            None if self.pending.len() > 8 => self.pending.clear(),
            None => {}
        }
        if self.mode != Mode::Insert && !b.text.is_empty() {
            b.pos = b.pos.min(b.last_on_line(b.pos));
        }
        Outcome::Used
    }

    /// Undo steps and the change `.` repeats, after a complete command.
    fn record(&mut self, keys: Vec<KeyEvent>, before: Buf, changed: bool, was: Mode) {
        if self.replaying {
            return;
        }
        if self.mode == Mode::Insert {
            self.insert_before = Some(before);
            self.open = (was == Mode::Normal).then_some(Change { keys, typed: None });
        } else if changed {
            self.push_undo(before);
            if was == Mode::Normal {
                self.last = Change { keys, typed: None };
            }
        }
    }

    /// `.`: the last change again, as one undo step.
    fn repeat(&mut self, b: &mut Buf) {
        let change = self.last.clone();
        if change.keys.is_empty() {
            return;
        }
        let before = b.clone();
        self.replaying = true;
        for k in change.keys {
            self.key(b, k);
        }
        if let Some(typed) = change.typed {
            for k in typed {
                Self::insert_key(b, k);
            }
            self.mode = Mode::Normal;
            self.open = None;
            self.insert_before = None;
            if b.pos > b.line_start(b.pos) {
                b.pos -= 1;
            }
        }
        self.replaying = false;
        if b.text != before.text {
            self.push_undo(before);
        }
    }

    /// Runs a complete command: `None` while it is incomplete, else whether the text changed.
    fn run(&mut self, b: &mut Buf, chars: &[char]) -> Option<bool> {
        let (n1, i) = count(chars, 0);
        let c = *chars.get(i)?;
        let n = n1.unwrap_or(1);
        if self.mode == Mode::Visual {
            return self.visual(b, chars, i, n);
        }
        match c {
            'i' | 'a' | 'I' | 'A' | 'o' | 'O' => return Some(self.insert_at(b, c)),
            'v' => {
                self.mode = Mode::Visual;
                self.anchor = b.pos;
                return Some(false);
            }
            'u' => {
                for _ in 0..n {
                    let Some(prev) = self.undo.pop() else { break };
                    self.redo.push(std::mem::replace(b, prev));
                }
                return Some(false);
            }
            'p' | 'P' => return Some(self.paste(b, c == 'p', n)),
            'x' => {
                return Some(self.operate(
                    b,
                    'd',
                    Span::To { at: (b.pos + n).min(b.line_end(b.pos)), inclusive: false },
                ));
            }
            'D' | 'C' => {
                return Some(self.operate(
                    b,
                    c.to_ascii_lowercase(),
                    Span::To { at: b.line_end(b.pos), inclusive: false },
                ));
            }
            'Y' => return Some(self.operate(b, 'y', Span::Lines(self.down(b, n - 1)))),
            'd' | 'c' | 'y' => {
                let next = *chars.get(i + 1)?;
                if next == c {
                    return Some(self.operate(b, c, Span::Lines(self.down(b, n - 1))));
                }
                let (n2, j) = count(chars, i + 1);
                let span = self.span(b, chars, j, n * n2.unwrap_or(1), Some(c))?;
                return Some(span.is_some_and(|s| self.operate(b, c, s)));
            }
            _ => {}
        }
        let span = self.span(b, chars, i, n, None)?;
        if let Some(s) = span {
            b.pos = match s {
                Span::To { at, .. } | Span::Range(at, _) => at,
                Span::Lines(at) => at,
            };
        }
        Some(false)
    }

    /// Enters insert mode at the place `c` (`i a I A o O`) says; true when a line was opened.
    fn insert_at(&mut self, b: &mut Buf, c: char) -> bool {
        self.mode = Mode::Insert;
        let (s, e) = (b.line_start(b.pos), b.line_end(b.pos));
        match c {
            'a' if b.pos < e => b.pos += 1,
            'I' => b.pos = s + b.text[s..e].iter().take_while(|c| c.is_whitespace()).count(),
            'A' => b.pos = e,
            'o' => {
                b.text.insert(e, '\n');
                b.pos = e + 1;
                return true;
            }
            'O' => {
                b.text.insert(s, '\n');
                b.pos = s;
                return true;
            }
            _ => {}
        }
        false
    }

    /// Visual mode: motions move the cursor, `d x c y` act on the selection, `v` leaves.
    fn visual(&mut self, b: &mut Buf, chars: &[char], i: usize, n: usize) -> Option<bool> {
        let c = chars[i];
        let (s, e) = (self.anchor.min(b.pos), (self.anchor.max(b.pos) + 1).min(b.text.len()));
        match c {
            'v' => self.mode = Mode::Normal,
            'd' | 'x' | 'c' | 'y' => {
                self.mode = Mode::Normal;
                let op = if c == 'x' { 'd' } else { c };
                return Some(self.operate(b, op, Span::Range(s, e)));
            }
            _ => {
                if let Some(Span::To { at, .. } | Span::Range(at, _) | Span::Lines(at)) =
                    self.span(b, chars, i, n, None)?
                {
                    b.pos = at;
                }
            }
        }
        Some(false)
    }

    /// The position `n` lines down from the cursor, in the same column where it can be.
    fn down(&self, b: &Buf, n: usize) -> usize {
        self.vertical(b, i64::try_from(n).unwrap_or(i64::MAX))
    }

    fn vertical(&self, b: &Buf, n: i64) -> usize {
        let col = b.pos - b.line_start(b.pos);
        let mut s = b.line_start(b.pos);
        for _ in 0..n.unsigned_abs() {
            if n > 0 {
                let e = b.line_end(s);
                if e >= b.text.len() {
                    break;
                }
                s = e + 1;
            } else {
                if s == 0 {
                    break;
                }
                s = b.line_start(s - 1);
            }
        }
        (s + col).min(b.line_end(s))
    }

    /// The motion or text object at `chars[i..]`: `None` while incomplete, `Some(None)` when
    /// it is no motion.
    fn span(&self, b: &Buf, chars: &[char], i: usize, n: usize, op: Option<char>) -> Option<Option<Span>> {
        let c = *chars.get(i)?;
        let repeat = |f: &dyn Fn(usize) -> usize| (0..n).fold(b.pos, |p, _| f(p));
        let s = match c {
            'h' => Span::To { at: b.pos.saturating_sub(n).max(b.line_start(b.pos)), inclusive: false },
            'l' => {
                let end = if op.is_some() { b.line_end(b.pos) } else { b.last_on_line(b.pos) };
                Span::To { at: (b.pos + n).min(end), inclusive: false }
            }
            'j' | 'k' => {
                let n = i64::try_from(n).unwrap_or(i64::MAX);
                let at = self.vertical(b, if c == 'j' { n } else { -n });
                if op.is_some() { Span::Lines(at) } else { Span::To { at, inclusive: false } }
            }
            // `cw` on a word changes to its end, as vim does.
            'w' if op == Some('c') && b.text.get(b.pos).is_some_and(|c| !c.is_whitespace()) => {
                Span::To { at: repeat(&|p| word_end(b, p, true)), inclusive: true }
            }
            'w' => {
                let at = repeat(&|p| next_word(b, p));
                // An operator stops at the end of the line, not on the next one.
                let at = if op.is_some() { at.min(b.line_end(b.pos)).max(b.pos.min(at)) } else { at };
                Span::To { at, inclusive: false }
            }
            'b' => Span::To { at: repeat(&|p| prev_word(b, p)), inclusive: false },
            'e' => Span::To { at: repeat(&|p| word_end(b, p, false)), inclusive: true },
            '0' => Span::To { at: b.line_start(b.pos), inclusive: false },
            '$' => {
                let at = if op.is_some() { b.line_end(b.pos) } else { b.last_on_line(b.pos) };
                Span::To { at, inclusive: false }
            }
            'G' => {
                let at = if chars[..i].iter().any(char::is_ascii_digit) {
                    self.vertical(&Buf { text: b.text.clone(), pos: 0 }, i64::try_from(n).unwrap_or(1) - 1)
                } else {
                    b.line_start(b.text.len())
                };
                if op.is_some() { Span::Lines(at) } else { Span::To { at, inclusive: false } }
            }
            'g' => {
                if *chars.get(i + 1)? != 'g' {
                    return Some(None);
                }
                if op.is_some() { Span::Lines(0) } else { Span::To { at: 0, inclusive: false } }
            }
            'i' | 'a' if op.is_some() || self.mode == Mode::Visual => {
                let kind = *chars.get(i + 1)?;
                return Some(object(b, c == 'a', kind).map(|(s, e)| Span::Range(s, e)));
            }
            _ => return Some(None),
        };
        Some(Some(s))
    }
}

#[path = "vim_edit.rs"]
mod edit;

#[cfg(test)]
#[path = "vim_tests.rs"]
mod vim_tests;
