//! Strips terminal control sequences from model and tool text before it is drawn.
//!
//! Everything the model or a tool says ends up in terminal cells, so a single stray
//! escape could retitle the window, write the clipboard (OSC 52), plant a hyperlink
//! (OSC 8), clear the screen or move the cursor to forge UI. The sanitizer removes:
//!
//! - ESC sequences: CSI (`ESC [` … final byte), OSC (`ESC ]` … BEL/ST), DCS/SOS/PM/APC
//!   (`ESC P`/`X`/`^`/`_` … ST), nF (`ESC (` B …) and two-byte `ESC x` forms;
//! - their C1 equivalents (U+0080–U+009F), including the payload of CSI/OSC/DCS/SOS/PM/APC;
//! - every other C0 control and DEL;
//! - bidi embedding/override/isolate marks, which can make text read differently from
//!   the bytes underneath ("Trojan Source").
//!
//! Tabs become four spaces (a fixed expansion, not tab stops: prose does not care and
//! code keeps its indentation readable). `\r\n` becomes `\n`; a lone `\r` becomes `\n`
//! so progress-bar style output stays legible instead of running lines together.
//! An unterminated OSC/DCS/SOS/PM/APC string swallows the rest of the input, exactly as
//! a terminal would, so a payload cut off mid-stream never leaks through.

use std::borrow::Cow;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
const CAN: u8 = 0x18;
const SUB: u8 = 0x1a;
const TAB_EXPANSION: &str = "    ";

/// Text safe to put in a span: no ESC/CSI/OSC/DCS/C1/bidi controls; tabs become spaces.
///
/// Returns `Cow::Borrowed` when the input needs no change.
#[must_use]
pub fn sanitize(s: &str) -> Cow<'_, str> {
    clean(s, Tabs::Expand)
}

/// Like [`sanitize`] but keeps `\t`, for text copied out verbatim (a Makefile in a code
/// block must keep its tabs) rather than drawn.
#[must_use]
pub fn sanitize_keep_tabs(s: &str) -> Cow<'_, str> {
    clean(s, Tabs::Keep)
}

/// Whether sanitising `s` may depend on text around it: it holds an escape (its sequence can
/// run on), a C1 control (U+0080–U+009F, which can start one) or a CR (which pairs with a
/// following LF). Text without them sanitises a character at a time, so a piece of it
/// sanitised alone is the same as that piece of the whole sanitised.
#[must_use]
pub fn may_reach(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memchr3_iter(ESC, b'\r', 0xc2, b).any(|i| b[i] != 0xc2 || b.get(i + 1).is_some_and(|&n| n < 0xa0))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tabs {
    Expand,
    Keep,
}

/// True for code points that are never allowed through (C1 and bidi controls).
fn is_forbidden_char(c: char) -> bool {
    matches!(c,
        '\u{80}'..='\u{9f}'
        | '\u{061c}'
        | '\u{200e}' | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// Byte offset of the first byte that needs attention, if any.
///
/// Works on bytes so the common case (plain text) never decodes a char: only bytes that
/// can start a control (C0, DEL) or a multi-byte control (lead bytes 0xC2 for C1,
/// 0xD8 for U+061C, 0xE2 for the U+20xx bidi marks) are looked at more closely.
fn first_special(s: &str, from: usize, tabs: Tabs) -> Option<usize> {
    const BLOCK: usize = 32;
    let bytes = s.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        let end = (i + BLOCK).min(bytes.len());
        // A block with no byte that may start a special is passed at once (streamed text is
        // scanned as it grows).
        if let Ok(block) = <&[u8; BLOCK]>::try_from(&bytes[i..end]) {
            if !block_may_start(block) {
                i = end;
                continue;
            }
        }
        for (j, &b) in bytes.iter().enumerate().take(end).skip(i) {
            match b {
                b'\n' => {}
                b'\t' if tabs == Tabs::Keep => {}
                0x00..=0x1f | 0x7f => return Some(j),
                0xc2 | 0xd8 | 0xe2 if s[j..].chars().next().is_some_and(is_forbidden_char) => return Some(j),
                _ => {}
            }
        }
        i = end;
    }
    None
}

/// Whether any byte of `block` may start a special. Written without an early exit or a
/// short-circuit, on an array of known length, so that it compiles to SIMD compares: over a
/// slice with `||` the compiler made it a byte-by-byte loop of branches.
fn block_may_start(block: &[u8; 32]) -> bool {
    let mut any = 0u8;
    for &b in block {
        any |=
            u8::from(b < 0x20) | u8::from(b == 0x7f) | u8::from(b == 0xc2) | u8::from(b == 0xd8) | u8::from(b == 0xe2);
    }
    any != 0
}

fn clean(s: &str, tabs: Tabs) -> Cow<'_, str> {
    let Some(first) = first_special(s, 0, tabs) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len());
    let mut i = first;
    out.push_str(&s[..first]);
    while i < s.len() {
        i = handle(s, i, tabs, &mut out);
        let next = first_special(s, i, tabs).unwrap_or(s.len());
        out.push_str(&s[i..next]);
        i = next;
    }
    Cow::Owned(out)
}

/// Consumes the special character (and any sequence it starts) at `i`, writing any
/// replacement to `out`; returns the offset just past what was consumed.
fn handle(s: &str, i: usize, tabs: Tabs, out: &mut String) -> usize {
    let bytes = s.as_bytes();
    match bytes[i] {
        ESC => escape(bytes, i + 1),
        b'\t' => {
            if tabs == Tabs::Expand {
                out.push_str(TAB_EXPANSION);
            } else {
                out.push('\t');
            }
            i + 1
        }
        b'\r' => {
            if bytes.get(i + 1) != Some(&b'\n') {
                out.push('\n');
            }
            i + 1
        }
        0x00..=0x7f => i + 1,
        _ => {
            let Some(c) = s[i..].chars().next() else {
                return s.len();
            };
            let after = i + c.len_utf8();
            match c {
                '\u{9b}' => skip_csi(bytes, after),
                '\u{9d}' => skip_string(bytes, after, true),
                '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(bytes, after, false),
                _ if is_forbidden_char(c) => after,
                // Not forbidden after all: keep it.
                _ => {
                    out.push(c);
                    after
                }
            }
        }
    }
}

/// After an ESC at `j - 1`: consume the sequence it introduces.
fn escape(bytes: &[u8], j: usize) -> usize {
    match bytes.get(j) {
        None => j,
        Some(b'[') => skip_csi(bytes, j + 1),
        Some(b']') => skip_string(bytes, j + 1, true),
        Some(b'P' | b'X' | b'^' | b'_') => skip_string(bytes, j + 1, false),
        // nF: intermediates then one final byte (e.g. `ESC ( B` charset selection).
        Some(0x20..=0x2f) => {
            let mut k = j;
            while matches!(bytes.get(k), Some(0x20..=0x2f)) {
                k += 1;
            }
            if matches!(bytes.get(k), Some(0x30..=0x7e)) {
                k += 1;
            }
            k
        }
        Some(0x30..=0x7e) => j + 1,
        // ESC before anything else: drop the ESC, let the next char be judged alone.
        Some(_) => j,
    }
}

/// CSI parameters and intermediates up to the final byte. A byte outside the CSI
/// grammar aborts the sequence and is then processed on its own, as terminals do;
/// this also keeps a stray `ESC [` from eating the rest of a message.
fn skip_csi(bytes: &[u8], mut j: usize) -> usize {
    while let Some(&b) = bytes.get(j) {
        match b {
            0x40..=0x7e => return j + 1,
            0x20..=0x3f => j += 1,
            _ => return j,
        }
    }
    j
}

/// A control string (OSC/DCS/SOS/PM/APC) up to ST (`ESC \` or U+009C), or BEL for OSC.
/// Another ESC ends the string and starts a new sequence; CAN/SUB cancel it.
fn skip_string(bytes: &[u8], mut j: usize, bel_ends: bool) -> usize {
    while let Some(&b) = bytes.get(j) {
        match b {
            BEL if bel_ends => return j + 1,
            CAN | SUB => return j + 1,
            ESC => {
                return if bytes.get(j + 1) == Some(&b'\\') { j + 2 } else { j };
            }
            // 0xC2 is only ever a lead byte, so C2 9C is really U+009C.
            0xc2 if bytes.get(j + 1) == Some(&0x9c) => return j + 2,
            _ => j += 1,
        }
    }
    j
}

/// Text where every control character is made visible instead of removed: for what the user
/// approves (a command, a path, a diff), where a hidden byte still runs. ESC, BEL and the other
/// C0 controls become their Unicode control pictures (`␛`, `␇`, …), DEL `␡`, C1 and bidi
/// controls `⟨U+XXXX⟩`; newlines stay line breaks and tabs become `⇥`.
#[must_use]
pub fn reveal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push('⇥'),
            c if (c as u32) < 0x20 => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('�')),
            '\u{7f}' => out.push('␡'),
            c if ('\u{80}'..='\u{9f}').contains(&c)
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}') =>
            {
                out.push_str(&format!("⟨U+{:04X}⟩", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_special_is_found_at_any_offset_past_blocks_of_plain_text() {
        for special in ["\u{1b}", "\u{7f}", "\u{85}", "\u{202e}", "\u{61c}", "\r"] {
            for off in 0..100 {
                let s = format!("{}{special}{}", "a".repeat(off), "b".repeat(40));
                assert_eq!(first_special(&s, 0, Tabs::Keep), Some(off), "{special:?} at {off}");
            }
        }
        // The block check flags exactly the bytes that may start a special, wherever they are.
        for b in 0..=255u8 {
            let starts = b < 0x20 || b == 0x7f || b == 0xc2 || b == 0xd8 || b == 0xe2;
            for at in 0..32 {
                let mut block = [b'a'; 32];
                block[at] = b;
                assert_eq!(block_may_start(&block), starts, "byte {b:#x} at {at}");
            }
        }
        let allowed = "it\u{2019}s \u{2014} fine\n\t".repeat(20);
        assert_eq!(first_special(&allowed, 0, Tabs::Keep), None);
        assert_eq!(first_special(&allowed, 0, Tabs::Expand), Some(allowed.find('\t').unwrap_or(0)));
    }

    #[test]
    fn reveal_shows_every_control() {
        let shown = reveal("echo hi \u{1b}]0;\nrm -rf x\u{7}\u{9b}\u{202e}\t\u{7f}");
        assert_eq!(shown, "echo hi ␛]0;\nrm -rf x␇⟨U+009B⟩⟨U+202E⟩⇥␡");
        assert_eq!(sanitize(&shown), shown.as_str(), "revealed text is safe to draw");
    }

    fn s(x: &str) -> String {
        sanitize(x).into_owned()
    }

    #[test]
    fn plain_text_is_borrowed() {
        for t in ["", "hello", "multi\nline", "héllo wörld 日本語 🎉", "a\u{200d}b"] {
            assert!(matches!(sanitize(t), Cow::Borrowed(_)), "{t:?}");
        }
    }

    #[test]
    fn csi_sequences() {
        assert_eq!(s("a\x1b[2Jb"), "ab");
        assert_eq!(s("\x1b[31mred\x1b[0m"), "red");
        assert_eq!(s("x\x1b[1;5ry"), "xy");
        assert_eq!(s("x\x1b[10;20Hy"), "xy");
        assert_eq!(s("x\x1b[?1049hy"), "xy");
        // Unfinished CSI at the end.
        assert_eq!(s("x\x1b[12;"), "x");
        // A non-CSI byte aborts the sequence and is judged alone.
        assert_eq!(s("x\x1b[1\ny"), "x\ny");
    }

    #[test]
    fn osc_sequences() {
        assert_eq!(s("a\x1b]0;pwned\x07b"), "ab");
        assert_eq!(s("a\x1b]2;pwned\x1b\\b"), "ab");
        assert_eq!(s("\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\"), "click");
        assert_eq!(s("a\x1b]52;c;ZXZpbA==\x07b"), "ab");
        assert_eq!(s("a\x1b]0;title\u{9c}b"), "ab");
        // Unterminated: swallow the rest.
        assert_eq!(s("a\x1b]0;never ends and more text"), "a");
        // ESC inside ends the string and starts a new sequence.
        assert_eq!(s("a\x1b]0;t\x1b[2Jb"), "ab");
    }

    #[test]
    fn dcs_sos_pm_apc() {
        assert_eq!(s("a\x1bPq#0;2;0;0;0\x1b\\b"), "ab");
        assert_eq!(s("a\x1bXsos\x1b\\b"), "ab");
        assert_eq!(s("a\x1b^pm\x1b\\b"), "ab");
        assert_eq!(s("a\x1b_apc\x1b\\b"), "ab");
        // BEL does not end DCS; it is part of the swallowed payload.
        assert_eq!(s("a\x1bPx\x07y"), "a");
        assert_eq!(s("a\x1bPx\x18b"), "ab");
    }

    #[test]
    fn two_byte_and_nf_escapes() {
        assert_eq!(s("a\x1bcb"), "ab");
        assert_eq!(s("a\x1b7b\x1b8"), "ab");
        assert_eq!(s("a\x1b(Bb"), "ab");
        assert_eq!(s("a\x1b#8b"), "ab");
        assert_eq!(s("trailing\x1b"), "trailing");
        assert_eq!(s("a\x1b\x1b[2Jb"), "ab");
        assert_eq!(s("a\x1bé"), "aé");
    }

    #[test]
    fn c1_controls() {
        assert_eq!(s("a\u{9b}2Jb"), "ab");
        assert_eq!(s("a\u{9d}0;title\u{7}b"), "ab");
        assert_eq!(s("a\u{9d}0;title\u{9c}b"), "ab");
        assert_eq!(s("a\u{90}payload\u{9c}b"), "ab");
        assert_eq!(s("a\u{98}x\u{9c}b\u{9e}y\u{9c}c\u{9f}z\u{9c}d"), "abcd");
        assert_eq!(s("a\u{85}b\u{8d}c\u{9c}d"), "abcd");
        assert_eq!(s("a\u{90}unterminated"), "a");
    }

    #[test]
    fn c0_del_tab_cr() {
        assert_eq!(s("a\x00b\x07c\x08d\x0be\x0cf\x7fg"), "abcdefg");
        assert_eq!(s("a\tb"), "a    b");
        assert_eq!(s("a\r\nb"), "a\nb");
        assert_eq!(s("10%\r20%"), "10%\n20%");
        assert_eq!(sanitize_keep_tabs("a\tb\x1b[1mc"), "a\tbc");
        assert!(matches!(sanitize_keep_tabs("a\tb"), Cow::Borrowed(_)));
    }

    #[test]
    fn bidi_controls() {
        assert_eq!(s("a\u{202e}b\u{202c}c"), "abc");
        assert_eq!(s("\u{2066}x\u{2069}\u{2067}\u{2068}"), "x");
        assert_eq!(s("\u{200e}\u{200f}\u{061c}ok\u{202a}\u{202b}\u{202d}"), "ok");
        // Neighbours of the forbidden ranges survive.
        assert_eq!(s("\u{2065}\u{200d}\u{2030}\u{a0}"), "\u{2065}\u{200d}\u{2030}\u{a0}");
    }

    #[test]
    fn visible_text_survives_around_sequences() {
        let out = s("Hello \x1b[1mworld\x1b[0m, \u{202e}ecnis\u{202c} 日本\x1b]0;x\x07語");
        assert_eq!(out, "Hello world, ecnis 日本語");
    }
}
