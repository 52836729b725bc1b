//! Key sequences and the text (and cursor) they must leave, starting in normal mode.

use super::{Buf, Mode, Vim};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// `<Esc>`, `<C-r>`, `<CR>` (a new line in insert mode), else characters.
fn keys(s: &str) -> Vec<KeyEvent> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let named = [
            ("<Esc>", KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
            ("<C-r>", KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL)),
            ("<CR>", KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT)),
            ("<BS>", KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)),
        ];
        if let Some((name, k)) = named.iter().find(|(n, _)| rest.starts_with(n)) {
            out.push(*k);
            rest = &rest[name.len()..];
        } else {
            out.push(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Runs `seq` on `text` with the cursor at `pos` (`|` marks it in the result).
fn run(text: &str, pos: usize, seq: &str) -> (String, Mode) {
    let mut vim = Vim::new(Mode::Normal);
    let mut b = Buf::new(text, pos);
    for k in keys(seq) {
        vim.feed(&mut b, k);
    }
    let mut shown = b.text.clone();
    shown.insert(b.pos.min(shown.len()), '|');
    (shown.into_iter().collect(), vim.mode)
}

#[test]
fn key_sequences_leave_the_expected_text() {
    let table: &[(&str, usize, &str, &str)] = &[
        // motions (the cursor is the `|`)
        ("hello world", 0, "w", "hello |world"),
        ("hello world", 0, "e", "hell|o world"),
        ("hello world", 8, "b", "hello |world"),
        ("hello world", 3, "0", "|hello world"),
        ("hello world", 3, "$", "hello worl|d"),
        ("hello world", 0, "3l", "hel|lo world"),
        ("hello world", 5, "2h", "hel|lo world"),
        ("one\ntwo\nthree", 1, "j", "one\nt|wo\nthree"),
        ("one\ntwo\nthree", 1, "G", "one\ntwo\n|three"),
        ("one\ntwo\nthree", 9, "gg", "|one\ntwo\nthree"),
        ("one\ntwo\nthree", 9, "k", "one\nt|wo\nthree"),
        ("foo.bar baz", 0, "w", "foo|.bar baz"),
        ("a b c d", 0, "3w", "a b c |d"),
        // operators with motions
        ("hello world", 0, "dw", "|world"),
        ("hello world again", 0, "2dw", "|again"),
        ("hello world again", 0, "d2w", "|again"),
        ("hello world", 0, "de", "| world"),
        ("hello world", 6, "d$", "hello| "),
        ("hello world", 6, "d0", "|world"),
        ("hello world", 6, "db", "|world"),
        ("hello world", 0, "cwbye<Esc>", "by|e world"),
        ("hello world", 0, "x", "|ello world"),
        ("hello world", 0, "3x", "|lo world"),
        ("hello world", 6, "D", "hello| "),
        ("hello world", 6, "Cthere<Esc>", "hello ther|e"),
        // lines
        ("one\ntwo\nthree", 5, "dd", "one\n|three"),
        ("one\ntwo\nthree", 0, "2dd", "|three"),
        ("one\ntwo\nthree", 9, "dd", "one\n|two"),
        ("one\ntwo\nthree", 5, "ccnew<Esc>", "one\nne|w\nthree"),
        ("one\ntwo", 0, "yyp", "one\n|one\ntwo"),
        ("one\ntwo", 4, "yyP", "one\n|two\ntwo"),
        ("one\ntwo\nthree", 0, "dj", "|three"),
        ("one\ntwo\nthree", 0, "dG", "|"),
        ("one\ntwo\nthree", 9, "dgg", "|"),
        // text objects
        ("say hello there", 6, "ciwbye<Esc>", "say by|e there"),
        ("say hello there", 6, "diw", "say | there"),
        ("say hello there", 6, "daw", "say |there"),
        ("say hello", 6, "daw", "sa|y"),
        ("x = \"a long one\";", 7, "di\"", "x = \"|\";"),
        ("x = \"a long one\";", 0, "ci\"b<Esc>", "x = \"|b\";"),
        ("x = \"a long one\";", 7, "da\"", "x = |;"),
        ("f(a, (b), c)", 3, "di(", "f(|)"),
        ("f(a, (b), c)", 6, "ci)z<Esc>", "f(a, (|z), c)"),
        ("{ x }", 2, "da{", "|"),
        // yank and put
        ("hello world", 0, "ywP", "hello| hello world"),
        ("hello world", 0, "yiw$p", "hello worldhell|o"),
        ("ab", 0, "xp", "b|a"),
        // insert, append, open
        ("world", 0, "ihello <Esc>", "hello| world"),
        ("hello", 4, "a!<Esc>", "hello|!"),
        ("  hi", 3, "I> <Esc>", "  >| hi"),
        ("hi", 0, "A there<Esc>", "hi ther|e"),
        ("one\nthree", 0, "otwo<Esc>", "one\ntw|o\nthree"),
        ("two", 0, "Oone<Esc>", "on|e\ntwo"),
        ("ab", 1, "i<CR><Esc>", "a\n|b"),
        // visual
        ("hello world", 0, "vlld", "|lo world"),
        ("hello world", 0, "vey$p", "hello worldhell|o"),
        ("hello world", 6, "vecthere<Esc>", "hello ther|e"),
        ("hello world", 0, "v<Esc>x", "|ello world"),
        // undo, redo, repeat
        ("hello world", 0, "dwu", "|hello world"),
        ("hello world", 0, "dwu<C-r>", "|world"),
        ("a b c d", 0, "dw..", "|d"),
        ("a b c d", 0, "dwdwuu", "|a b c d"),
        ("one two three", 0, "ciwX<Esc>w.", "X |X three"),
        ("abc", 0, "ix<Esc>u", "|abc"),
        ("abc", 0, "ixy<Esc>uu<C-r>", "x|yabc"),
        ("a\nb\nc", 0, "dd.", "|c"),
        ("one two", 0, "A!<Esc>.", "one two!|!"),
    ];
    let mut failures = Vec::new();
    for (text, pos, seq, want) in table {
        let (got, _) = run(text, *pos, seq);
        if got != *want {
            failures.push(format!("{text:?} @{pos} {seq:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn modes_change_as_vim_does() {
    assert_eq!(run("abc", 0, "i").1, Mode::Insert);
    assert_eq!(run("abc", 0, "i<Esc>").1, Mode::Normal);
    assert_eq!(run("abc", 0, "v").1, Mode::Visual);
    assert_eq!(run("abc", 0, "vd").1, Mode::Normal);
    assert_eq!(run("abc", 0, "cw").1, Mode::Insert);
    assert_eq!(run("abc", 0, "d<Esc>").1, Mode::Normal, "Esc drops a half-typed command");
}

#[test]
fn esc_in_normal_mode_is_left_to_the_chat_screen() {
    let mut vim = Vim::new(Mode::Normal);
    let mut b = Buf::new("abc", 0);
    let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(vim.key(&mut b, esc), super::Outcome::Pass);
    let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(vim.key(&mut b, enter), super::Outcome::Pass, "Enter still sends");
}
