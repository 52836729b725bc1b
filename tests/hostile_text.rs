//! Hostile model/tool output: nothing that reaches the terminal may carry a control
//! sequence, through `sanitize` directly or through markdown rendering.

use palaver::ui::markdown::render;
use palaver::ui::sanitize::sanitize;
use palaver::ui::theme::Theme;

/// The invariants every sanitized string must hold.
fn assert_clean(out: &str, context: &str) {
    for (i, c) in out.char_indices() {
        let bad = (c < ' ' && c != '\n')
            || c == '\u{7f}'
            || ('\u{80}'..='\u{9f}').contains(&c)
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}');
        assert!(!bad, "{context}: forbidden {c:?} at byte {i} in {:?}", truncate(out));
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(120).collect()
}

/// (name, attack, words that must stay visible)
fn corpus() -> Vec<(&'static str, String, Vec<&'static str>)> {
    vec![
        ("osc0 title bel", "before \x1b]0;pwned title\x07 after".into(), vec!["before", "after"]),
        ("osc2 title st", "before \x1b]2;pwned\x1b\\ after".into(), vec!["before", "after"]),
        (
            "osc8 link",
            "see \x1b]8;;https://evil.example\x1b\\this link\x1b]8;;\x1b\\ now".into(),
            vec!["see", "this link", "now"],
        ),
        ("osc52 clipboard", "copy \x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07 done".into(), vec!["copy", "done"]),
        ("csi clear", "hello \x1b[2J\x1b[H\x1b[3J world".into(), vec!["hello", "world"]),
        (
            "cursor moves",
            "line\x1b[1A\x1b[2K\x1b[10;20H\x1b[5D\x1b[s\x1b[u\x1b7\x1b8 fake prompt".into(),
            vec!["line", "fake prompt"],
        ),
        ("scroll region", "a \x1b[1;5r b \x1b[r c".into(), vec!["a", "b", "c"]),
        ("private modes", "x \x1b[?1049h\x1b[?25l\x1b[?1000h y".into(), vec!["x", "y"]),
        ("sgr colours", "\x1b[38;2;255;0;0mred\x1b[0m \x1b[5mblink\x1b[m".into(), vec!["red", "blink"]),
        ("dcs sixel", "pic \x1bPq#0;2;0;0;0#0~~@@vv@@~~\x1b\\ end".into(), vec!["pic", "end"]),
        ("dcs decrqss", "q \x1bP$qm\x1b\\ r".into(), vec!["q", "r"]),
        (
            "apc pm sos",
            "a \x1b_Gf=100;kittyimg\x1b\\ b \x1b^pm\x1b\\ c \x1bXsos\x1b\\ d".into(),
            vec!["a", "b", "c", "d"],
        ),
        ("c1 csi", "one \u{9b}2J two \u{9b}1;1H three".into(), vec!["one", "two", "three"]),
        ("c1 osc", "one \u{9d}0;title\u{9c} two \u{9d}52;c;ZXZpbA==\u{7} three".into(), vec!["one", "two", "three"]),
        ("c1 dcs", "one \u{90}payload\u{9c} two".into(), vec!["one", "two"]),
        ("c1 misc", "a\u{84}b\u{85}c\u{8d}d\u{8e}e\u{8f}f".into(), vec!["a", "b", "c", "d", "e", "f"]),
        (
            "bidi override",
            "access \u{202e}nimda\u{202c} level \u{2066}x\u{2069}\u{2067}y\u{2068}z\u{2069}".into(),
            vec!["access", "nimda", "level", "x", "y", "z"],
        ),
        ("bidi marks", "\u{200e}left\u{200f}right\u{061c}arabic".into(), vec!["left", "right", "arabic"]),
        ("c0 soup", "a\x00b\x01c\x07d\x08e\x0bf\x0cg\x0eh\x0fi\x7fj\x1ck".into(), vec!["a", "b", "k"]),
        ("backspace overwrite", "safe\x08\x08\x08\x08evil".into(), vec!["safe", "evil"]),
        ("carriage return overwrite", "rm -rf /\r# harmless comment".into(), vec!["rm -rf /", "# harmless comment"]),
        ("nested and broken", "x\x1b[\x1b]0;\x1b[31m\x1bP\x1b\\y".into(), vec!["x"]),
        ("unterminated osc", "visible \x1b]0;swallowed forever".into(), vec!["visible"]),
        ("unterminated dcs", "visible \x1bPswallowed".into(), vec!["visible"]),
        ("long line", format!("{} tail", "A".repeat(100_000)), vec!["tail"]),
        (
            "long line with escapes",
            format!("{}\x1b[2J{}", "B".repeat(50_000), "C".repeat(50_000)),
            vec!["BBBB", "CCCC"],
        ),
    ]
}

#[test]
fn corpus_is_neutralised() {
    for (name, attack, words) in corpus() {
        let out = sanitize(&attack);
        assert_clean(&out, name);
        for w in words {
            assert!(out.contains(w), "{name}: lost {w:?} in {:?}", truncate(&out));
        }
        for payload in ["pwned", "evil.example", "Y3VybC", "ZXZpbA", "payload", "swallowed", "kittyimg"] {
            assert!(!out.contains(payload), "{name}: payload {payload:?} leaked: {:?}", truncate(&out));
        }
    }
}

#[test]
fn corpus_through_markdown_is_neutralised() {
    let theme = Theme::default();
    for (name, attack, _) in corpus() {
        for doc in [
            attack.clone(),
            format!("# {attack}\n\n> {attack}\n\n```sh\n{attack}\n```\n\n| a |\n|---|\n| {attack} |\n"),
        ] {
            for width in [1, 20, 80] {
                for line in render(&doc, width, &theme) {
                    assert!(line.width() <= usize::from(width), "{name}: line too wide");
                    for span in &line.spans {
                        assert_clean(&span.content, name);
                        assert!(!span.content.contains('\n'), "{name}: newline inside a span");
                    }
                }
            }
        }
    }
}

#[test]
fn character_references_cannot_smuggle_controls() {
    let theme = Theme::default();
    let doc = "a &#27;]0;title&#7; b &#x9b;2J c &#x202e; d `&#27;` [x](&#27;[2J)";
    for line in render(doc, 80, &theme) {
        for span in &line.spans {
            assert_clean(&span.content, "entities");
        }
    }
}

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Byte strings biased towards the interesting bytes: ESC, sequence introducers,
/// C1 lead bytes and UTF-8 fragments, so sequences actually form.
fn random_bytes(rng: &mut Rng) -> Vec<u8> {
    const INTERESTING: &[u8] = b"\x1b\x1b\x1b[]P_^X\\\x07\x9b\x9c\x9d\xc2\xe2\x80\xae\xa6\xd8\x9c\n\r\t\x7f;0123 m";
    let len = (rng.next() % 200) as usize;
    (0..len)
        .map(|_| {
            let r = rng.next();
            if r % 3 == 0 { INTERESTING[(r >> 8) as usize % INTERESTING.len()] } else { (r >> 16) as u8 }
        })
        .collect()
}

#[test]
fn random_bytes_keep_the_invariants() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let theme = Theme::default();
    for i in 0..20_000 {
        let bytes = random_bytes(&mut rng);
        let text = String::from_utf8_lossy(&bytes);
        let out = sanitize(&text);
        assert_clean(&out, &format!("case {i}"));
        // Idempotent: sanitizing clean text changes nothing (tabs are already gone).
        assert_eq!(sanitize(&out), out, "case {i} not idempotent");
        if i % 20 == 0 {
            for line in render(&text, 40, &theme) {
                assert!(line.width() <= 40);
                for span in &line.spans {
                    assert_clean(&span.content, &format!("markdown case {i}"));
                }
            }
        }
    }
}
