//! A top-level paragraph rendered as its lines arrive (issue 41): each line's inline runs are
//! what the renderer makes of it, and they go to an incremental word wrap, so a paragraph of
//! many lines costs what its lines cost instead of being parsed and wrapped again from its
//! start at every line.
//!
//! A line's runs are read alone (after a stand-in first line, and before a stand-in next one,
//! which tells whether it continues the paragraph and how it ends). That is the whole render's
//! reading unless an inline element (emphasis, a link, a code span…) runs across a line
//! break: `stream_md`'s final check finds those in its parse of the whole answer.

use super::wrap::{GrowingWrap, Run, Spans, clamp};
use super::{Renderer, options};
use crate::ui::stream_block::{BlockKind, GrowingBlock};
use crate::ui::theme::{Role, Theme};
use crate::ui::wrap::fit;
use pulldown_cmark::{Event, Parser, Tag};
use ratatui::text::Line;

/// How a line ends when another line of the paragraph follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Break {
    /// A space.
    Soft,
    /// A line break, written as two trailing spaces.
    Hard,
    /// A line break written as a trailing backslash, which is shown when no line follows.
    Backslash,
}

/// Bytes that may make a line anything but plain text continuing a paragraph: inline markup
/// anywhere, and (first on the line) the start of a block that can interrupt a paragraph, of
/// a table's delimiter row, or of an ordered list.
const fn table(bytes: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
}
const INLINE: [bool; 256] = table(b"\\`*_~[]<&");
const LEADING: [bool; 256] = table(b" -+=#>|:*_`~<0123456789");

#[derive(Debug)]
pub struct Paragraph {
    wrap: GrowingWrap,
    /// Rows that are final, then the rows of the line being filled.
    rows: Vec<Line<'static>>,
    tail: Vec<Line<'static>>,
    theme: Theme,
    width: usize,
    cols: usize,
    /// How the last line ends if another follows.
    end: Break,
    /// The first line while it is the only one (a delimiter row after it makes a table).
    first: Option<String>,
}

impl Paragraph {
    /// A paragraph whose first line is `line` (sanitized, without its line ending), for `cols`
    /// columns; `None` when the line does not start one.
    #[must_use]
    pub fn start(line: &str, cols: usize, theme: &Theme) -> Option<Self> {
        let width = usize::from(u16::try_from(cols).unwrap_or(u16::MAX));
        if width == 0 {
            return None;
        }
        let (runs, end) = line_runs(None, line, theme)?;
        let mut p = Self {
            wrap: GrowingWrap::new(width),
            rows: Vec::new(),
            tail: Vec::new(),
            theme: theme.clone(),
            width,
            cols,
            end: Break::Soft,
            first: Some(line.to_owned()),
        };
        p.add(&runs, end);
        Some(p)
    }

    /// Whether `line` is plain text: no inline markup, nothing a block could start with. Such a
    /// line starts or continues a paragraph, and its text is its only run.
    #[must_use]
    pub fn plain(line: &str) -> bool {
        let b = line.as_bytes();
        b.first().is_some_and(|&c| !LEADING[usize::from(c)]) && Self::inline_plain(line)
    }

    /// Whether `text` holds no byte that inline markup, an escape or a character reference
    /// could begin with.
    #[must_use]
    pub fn inline_plain(text: &str) -> bool {
        !text.bytes().any(|c| INLINE[usize::from(c)])
    }

    fn add(&mut self, runs: &[Run], end: Break) {
        self.wrap.push(runs);
        if end != Break::Backslash {
            // The next line starts after a break: this line's last word is complete.
            self.wrap.end_word();
        }
        self.end = end;
        for spans in self.wrap.take_done() {
            let rows = self.fitted(spans);
            self.rows.extend(rows);
        }
        let shown = (end == Break::Backslash).then(|| ("\\", self.theme.style(Role::Base)));
        let tail = self.wrap.tail(shown);
        self.tail = tail.into_iter().flat_map(|s| self.fitted(s)).collect();
    }

    /// A wrapped row as `stream_md`'s render emits it: clamped, then fitted and guarded.
    fn fitted(&self, spans: Spans) -> Vec<Line<'static>> {
        fit(vec![Line::from(clamp(spans, self.width))], self.cols)
    }
}

impl GrowingBlock for Paragraph {
    fn push(&mut self, line: &str) -> bool {
        if line.bytes().all(|b| b == b' ') {
            // A blank line ends a paragraph.
            return false;
        }
        let before = self.first.as_deref().unwrap_or("a");
        let Some((runs, end)) = line_runs(Some(before), line, &self.theme) else { return false };
        let joint = if self.end == Break::Soft { " " } else { "\n" };
        self.wrap.push_run(joint, self.theme.style(Role::Base));
        self.first = None;
        self.add(&runs, end);
        true
    }

    fn len(&self) -> usize {
        self.rows.len() + self.tail.len()
    }

    fn get(&self, i: usize) -> Option<&Line<'static>> {
        crate::ui::stream_block::row_of(&self.rows, &self.tail, i)
    }

    fn kind(&self) -> BlockKind {
        BlockKind::Paragraph
    }
}

/// The inline runs of `line` in a paragraph (after the line `before` of it, unless it is the
/// first), and how it ends when a line follows; `None` when it does not start or continue a
/// paragraph.
fn line_runs(before: Option<&str>, line: &str, theme: &Theme) -> Option<(Vec<Run>, Break)> {
    let text = line.trim_end_matches(' ');
    if Paragraph::plain(line) {
        let end = if line.len() - text.len() >= 2 { Break::Hard } else { Break::Soft };
        return Some((vec![(text.to_owned(), theme.style(Role::Base))], end));
    }
    let at = before.map_or(0, |b| b.len() + 1);
    let doc = match before {
        Some(b) => format!("{b}\n{line}\na"),
        None => format!("{line}\na"),
    };
    let mut r = Renderer::new(1, theme);
    r.clean_source = !doc.contains('&');
    let (mut from, mut until, mut end) = (before.is_none().then_some(0), None, Break::Soft);
    let mut depth = 0usize;
    for (event, range) in Parser::new_ext(&doc, options()).into_offset_iter() {
        match event {
            // One block, a paragraph from the first line on.
            Event::Start(Tag::Paragraph) if depth == 0 && range.start == 0 => depth += 1,
            _ if depth == 0 => return None,
            Event::End(_) if depth == 1 => depth = 0,
            Event::SoftBreak | Event::HardBreak if depth == 1 && range.start < at => from = Some(r.runs.len()),
            Event::SoftBreak | Event::HardBreak if depth == 1 && until.is_none() => {
                until = Some(r.runs.len());
                if matches!(event, Event::HardBreak) {
                    end = if text.ends_with('\\') && text.len() == line.len() { Break::Backslash } else { Break::Hard };
                }
            }
            event => {
                depth += usize::from(matches!(event, Event::Start(_)));
                depth -= usize::from(matches!(event, Event::End(_)));
                if until.is_none() {
                    r.event(event);
                }
            }
        }
    }
    let (from, until) = (from?, until?);
    let runs = r.runs.drain(from..until).collect();
    Some((runs, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::markdown::{render, top_level};
    use crate::ui::sanitize::sanitize;

    /// `stream_md`'s render of a whole text.
    fn whole(text: &str, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
        fit(render(&sanitize(text), u16::try_from(cols).unwrap_or(u16::MAX), theme), cols)
    }

    fn rows(p: &Paragraph) -> Vec<Line<'static>> {
        (0..p.len()).filter_map(|i| p.get(i)).cloned().collect()
    }

    /// Whether `text` parses as one paragraph with no inline element across a line break.
    fn one_paragraph(text: &str) -> bool {
        let lines = text.split('\n').count();
        top_level(text).is_some_and(|b| {
            b.len() == 1 && b[0].kind == Some(BlockKind::Paragraph) && !b[0].crossing && b[0].last + 1 == lines
        })
    }

    const PIECES: [&str; 30] = [
        "word",
        "a",
        "bb",
        " ",
        "  ",
        "0123456789abcdefghij",
        "日本語のテキスト",
        "e\u{301}x",
        "👨\u{200d}👩\u{200d}👧",
        "❤\u{fe0f}",
        "*em*",
        "**strong**",
        "~~gone~~",
        "`code`",
        "[link](http://x.y)",
        "<b>",
        "&amp;",
        "\\*",
        "-",
        "2.",
        "1.",
        "#",
        "> ",
        "|",
        "---",
        "===",
        "_",
        "\\",
        "[x]",
        "ok.",
    ];

    fn random_line(seed: &mut u64) -> String {
        let mut line = String::new();
        let n = (*seed >> 40) % 7 + 1;
        for _ in 0..n {
            *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            line.push_str(PIECES[(*seed >> 33) as usize % PIECES.len()]);
            if *seed & (1 << 17) != 0 {
                line.push(' ');
            }
        }
        line
    }

    #[test]
    fn rows_are_the_whole_render_of_every_paragraph_so_far() {
        let theme = Theme::load("dark", None, false).unwrap();
        let mut seed = 11u64;
        let (mut checked, mut cases) = (0, 0);
        while cases < 300 {
            let lines: Vec<String> = (0..6).map(|_| random_line(&mut seed)).collect();
            let cols = [1, 2, 3, 5, 8, 13, 21, 34, 40, 80, 120][cases % 11];
            cases += 1;
            let Some(mut p) = Paragraph::start(&lines[0], cols, &theme) else { continue };
            let mut text = lines[0].clone();
            for (i, line) in lines.iter().enumerate() {
                if i > 0 {
                    let joined = format!("{text}\n{line}");
                    if !p.push(line) {
                        assert!(!one_paragraph(&joined), "refused a line that continues it: {joined:?}");
                        break;
                    }
                    text = joined;
                }
                if one_paragraph(&text) {
                    checked += 1;
                    assert_eq!(rows(&p), whole(&text, cols, &theme), "{text:?} at {cols}");
                }
            }
        }
        assert!(checked > 400, "{checked} paragraphs checked");
    }

    #[test]
    fn plain_lines_of_every_width() {
        let theme = Theme::load("dark", None, true).unwrap();
        let lines = [
            "Plain words flowing on",
            "a verylongwordthatneverendsandgoesonandon",
            "日本語のテキストが続きます、折り返し",
            "emoji 👨\u{200d}👩\u{200d}👧 and e\u{301} marks  ",
            "after a hard break, tabs\tbecome spaces",
            "the end.",
        ];
        for cols in (1..41).chain([80, 120]) {
            let mut p = Paragraph::start(lines[0], cols, &theme).unwrap();
            for (i, line) in lines.iter().enumerate().skip(1) {
                let clean = sanitize(line);
                assert!(p.push(&clean));
                let text = lines[..=i].join("\n");
                assert_eq!(rows(&p), whole(&text, cols, &theme), "{i} lines at {cols}");
            }
        }
    }

    #[test]
    fn lines_that_start_other_blocks_are_refused() {
        let theme = Theme::load("dark", None, false).unwrap();
        for line in ["# head", "- item", "1. one", "> quote", "```", "---", "===", "<div>", "|--|--|", "", "    "] {
            let mut p = Paragraph::start("a | b", 40, &theme).unwrap();
            assert!(!p.push(line), "{line:?}");
            assert_eq!(rows(&p), whole("a | b", 40, &theme));
        }
        let mut p = Paragraph::start("text", 40, &theme).unwrap();
        for line in ["2. not a list", "+1 agreed", "a | b", "    indented"] {
            assert!(p.push(line), "{line:?}");
        }
        assert!(Paragraph::start("- item", 40, &theme).is_none());
        assert!(Paragraph::start("[a]: http://x", 40, &theme).is_none());
    }
}
