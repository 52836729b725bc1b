//! An answer's style, as LMArena's style control counts it: its length in tokens and its
//! markdown headers, list items and bold spans (outside code blocks, where `#` and `**` are
//! code, not style). Stored with each arena vote so ratings can control for style later.

use serde::{Deserialize, Serialize};

/// The style figures of one answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Style {
    /// Tokens: the provider's count when it gave one, else estimated from the bytes.
    pub tokens: u64,
    pub headers: u64,
    pub lists: u64,
    pub bold: u64,
}

impl Style {
    /// The figures in the order of `FEATURES`.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn values(&self) -> [f64; 4] {
        [self.tokens as f64, self.headers as f64, self.lists as f64, self.bold as f64]
    }
}

/// The style covariates' names, in the order of `Style::values`.
pub const FEATURES: [&str; 4] = ["length", "headers", "lists", "bold"];

/// The style of `text`; `tokens` is the provider's completion count when known.
#[must_use]
pub fn style_of(text: &str, tokens: Option<u64>) -> Style {
    let mut s = Style { tokens: tokens.unwrap_or_else(|| crate::engine::compact::estimate(text)), ..Style::default() };
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = Some(&t[..3]);
            continue;
        }
        if is_header(t) {
            s.headers += 1;
        } else if is_list_item(t) {
            s.lists += 1;
        }
        s.bold += bold_spans(t);
    }
    s
}

/// `# x` … `###### x`.
fn is_header(t: &str) -> bool {
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes) && t[hashes..].starts_with(' ')
}

/// `- x`, `* x`, `+ x`, `1. x`, `1) x`.
fn is_list_item(t: &str) -> bool {
    if ["- ", "* ", "+ "].iter().any(|p| t.starts_with(p)) {
        return true;
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
}

/// `**x**` and `__x__` spans on one line (non-empty, closed).
fn bold_spans(t: &str) -> u64 {
    let mut n = 0;
    for mark in ["**", "__"] {
        let mut rest = t;
        while let Some(open) = rest.find(mark) {
            let after = &rest[open + 2..];
            match after.find(mark) {
                Some(close) if close > 0 => {
                    n += 1;
                    rest = &after[close + 2..];
                }
                _ => break,
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_counted_outside_code_only() {
        let text = "# Title\n\nSome **bold** and __more__ and **x**.\n\n- one\n* two\n1. three\n\n```md\n# not a header\n- not a list **nor bold**\n```\n#nospace\n";
        let s = style_of(text, Some(42));
        assert_eq!(s, Style { tokens: 42, headers: 1, lists: 3, bold: 3 });
        assert_eq!(style_of("abcdefgh", None).tokens, 3, "estimated from the characters");
        assert_eq!(style_of("** not closed", None).bold, 0);
    }
}
