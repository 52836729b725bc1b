//! A top-level paragraph rendered as its lines arrive (issue 41): each line's inline runs are
//! what the renderer makes of it, and they go to an incremental word wrap, so a paragraph of
//! many lines costs what its lines cost instead of being parsed and wrapped again from its
//! start at every line.
//!
//! A line's runs are read alone (after a stand-in first line, and before a stand-in next one,
//! which tells whether it continues the paragraph and how it ends). That is the whole render's
//! reading unless an inline element (emphasis, a link, a code span…) runs across a line
//! break: `stream_md`'s final check finds those in its parse of the whole answer.

use super::wrap::{GrowingWrap, Run, Spans, clamp, spans_width};
use super::{Renderer, options};
use crate::ui::stream_block::{BlockKind, GrowingBlock};
use crate::ui::theme::{Role, Theme};
use crate::ui::wrap::{fit, fit_measured};
use pulldown_cmark::{Event, Parser, Tag};
use ratatui::text::Line;
use std::cell::OnceCell;

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
    /// Rows that are final, then the rows of the line being filled: laid out when first read
    /// (a frame reads them once; many lines may arrive in between).
    rows: Vec<Line<'static>>,
    tail: OnceCell<Vec<Line<'static>>>,
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
            tail: OnceCell::new(),
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
        self.tail = OnceCell::new();
    }

    fn tail(&self) -> &[Line<'static>] {
        self.tail.get_or_init(|| {
            let shown = (self.end == Break::Backslash).then(|| ("\\", self.theme.style(Role::Base)));
            self.wrap.tail(shown).into_iter().flat_map(|s| self.fitted(s)).collect()
        })
    }

    /// A wrapped row as `stream_md`'s render emits it: clamped, then fitted and guarded.
    fn fitted(&self, spans: Spans) -> Vec<Line<'static>> {
        // Measured once: a row within the width is its own clamp, and `fit` needs no second
        // measure (`spans_width` is `fit`'s measure).
        let width = spans_width(&spans);
        if width <= self.width {
            return fit_measured(Line::from(spans), width, self.cols);
        }
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
        self.rows.len() + self.tail().len()
    }

    fn get(&self, i: usize) -> Option<&Line<'static>> {
        crate::ui::stream_block::row_of(&self.rows, self.tail(), i)
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
    let spaced = if line.len() - text.len() >= 2 { Break::Hard } else { Break::Soft };
    if Paragraph::plain(line) {
        return Some((vec![(text.to_owned(), theme.style(Role::Base))], spaced));
    }
    if let Some(events) = simple_events(text) {
        let mut r = Renderer::on_sanitized(1, theme, text);
        for event in events {
            r.event(event);
        }
        return Some((r.runs, spaced));
    }
    parsed_runs(before, line, theme)
}

/// [`line_runs`] as pulldown-cmark reads the line, after `before` and before a stand-in line.
fn parsed_runs(before: Option<&str>, line: &str, theme: &Theme) -> Option<(Vec<Run>, Break)> {
    let text = line.trim_end_matches(' ');
    let at = before.map_or(0, |b| b.len() + 1);
    let doc = match before {
        Some(b) => format!("{b}\n{line}\na"),
        None => format!("{line}\na"),
    };
    let mut r = Renderer::on_sanitized(1, theme, &doc);
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

/// The inline events pulldown-cmark reads in `text` (a paragraph line, its trailing spaces
/// cut) when its only markup is `**strong**` and `` `code` `` in forms that leave the parser
/// no choice, else `None`. Such a line starts no block (its first byte is plain, or opens one
/// of those), so it starts or continues any paragraph. A strong span opens after a space (or
/// the line's start) before an alphanumeric, closes after an alphanumeric before a space,
/// the end or punctuation; a code span is one backtick each side of text with no edge space;
/// neither holds any other markup byte. Anything else, a lone `*` or backtick included, is
/// left to the parser.
pub(super) fn simple_events<'a>(text: &'a str) -> Option<Vec<Event<'a>>> {
    use pulldown_cmark::{CowStr, TagEnd};
    let b = text.as_bytes();
    let first = *b.first()?;
    let opens_strong = |i: usize| {
        b.get(i + 1) == Some(&b'*')
            && b.get(i + 2).is_some_and(u8::is_ascii_alphanumeric)
            && (i == 0 || b[i - 1] == b' ')
    };
    let plain_start = !LEADING[usize::from(first)] && first != b'[';
    if !(plain_start || (first == b'*' && opens_strong(0)) || (first == b'`' && b.get(1) != Some(&b'`'))) {
        return None;
    }
    let marked = |s: &[u8]| s.iter().any(|&c| INLINE[usize::from(c)]);
    let mut events = Vec::new();
    let (mut i, mut from) = (0, 0);
    let text_event = |events: &mut Vec<Event<'a>>, from: usize, to: usize| {
        if to > from {
            events.push(Event::Text(CowStr::Borrowed(&text[from..to])));
        }
    };
    while i < b.len() {
        match b[i] {
            b'`' => {
                let len = b[i + 1..].iter().position(|&c| c == b'`' || c == b'*')?;
                let close = i + 1 + len;
                if len == 0 || b[close] != b'`' || b.get(close + 1) == Some(&b'`') {
                    return None;
                }
                if b[i + 1] == b' ' || b[close - 1] == b' ' || marked(&b[i + 1..close]) {
                    return None;
                }
                text_event(&mut events, from, i);
                events.push(Event::Code(CowStr::Borrowed(&text[i + 1..close])));
                i = close + 1;
                from = i;
            }
            b'*' => {
                if !opens_strong(i) {
                    return None;
                }
                let len = b[i + 2..].iter().position(|&c| c == b'`' || c == b'*')?;
                let close = i + 2 + len;
                let after = b.get(close + 2).copied();
                let closes = b.get(close + 1) == Some(&b'*')
                    && b[close - 1].is_ascii_alphanumeric()
                    && after.is_none_or(|c| c == b' ' || (c.is_ascii_punctuation() && !INLINE[usize::from(c)]));
                if !closes || marked(&b[i + 2..close]) {
                    return None;
                }
                text_event(&mut events, from, i);
                events.push(Event::Start(Tag::Strong));
                events.push(Event::Text(CowStr::Borrowed(&text[i + 2..close])));
                events.push(Event::End(TagEnd::Strong));
                i = close + 2;
                from = i;
            }
            c if INLINE[usize::from(c)] => return None,
            _ => i += 1,
        }
    }
    text_event(&mut events, from, b.len());
    Some(events)
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

    const MARKED: [&str; 22] = [
        "**strong**",
        "**two words**",
        "`code`",
        "`two words`",
        "` edge`",
        "``double``",
        "**",
        "*",
        "`",
        "x**y**",
        "**a**b",
        "**a**.",
        "(**a**)",
        "**a.**",
        "**`a`**",
        "`**`",
        "***a***",
        "**a*b**",
        "word",
        "日本",
        "e\u{301}",
        "1.",
    ];

    /// Whenever the line is read without the parser, its runs are the parser's, after a first
    /// line and as a first line.
    #[test]
    fn simple_lines_read_as_the_parser_reads_them() {
        let theme = Theme::load("dark", None, false).unwrap();
        let plain = Theme::load("dark", None, true).unwrap();
        let mut seed = 7u64;
        let mut simple = 0;
        for case in 0..20_000 {
            let mut line = String::new();
            for _ in 0..(seed >> 40) % 6 + 1 {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                line.push_str(MARKED[(seed >> 33) as usize % MARKED.len()]);
                line.push_str(["", " ", " ", ", ", "  "][(seed >> 20) as usize % 5]);
            }
            let text = line.trim_end_matches(' ');
            if simple_events(text).is_none() {
                continue;
            }
            simple += 1;
            let theme = if case % 2 == 0 { &theme } else { &plain };
            for before in [None, Some("a"), Some("first line")] {
                let got = line_runs(before, &line, theme);
                let want = parsed_runs(before, &line, theme);
                assert_eq!(got, want, "{line:?} after {before:?}");
            }
        }
        assert!(simple > 1500, "{simple} simple lines");
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
