//! Width-aware line breaking for rendered markdown: word wrap for prose, hard wrap
//! for code, and clamping/ellipsis helpers.
//!
//! Widths are measured with `UnicodeWidthStr` on the strings that become spans, the
//! same measure ratatui's `Line::width` uses, so the "no line wider than the area"
//! guarantee holds in ratatui's terms. Text is split into clusters (a char plus any
//! zero-width followers, and the char after a ZWJ) so breaking a word never separates
//! a base from its combining marks or tears an emoji sequence apart.

use ratatui::style::Style;
use ratatui::text::Span;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// A styled piece of inline text; a `\n` inside it is a hard line break.
pub(super) type Run = (String, Style);

/// One output line as spans.
pub(super) type Spans = Vec<Span<'static>>;

const ZWJ: char = '\u{200d}';

/// Display width of `s`; printable ASCII (nearly all text) is one column a byte.
fn cols(s: &str) -> usize {
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) { s.len() } else { s.width() }
}

/// Splits `s` into clusters that must not be separated by a line break.
pub(super) fn clusters(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        let mut chars = rest.char_indices();
        let (_, first) = chars.next()?;
        let mut end = first.len_utf8();
        let mut joined = first == ZWJ;
        for (i, c) in chars {
            if joined || c.width().unwrap_or(0) == 0 {
                joined = c == ZWJ;
                end = i + c.len_utf8();
            } else {
                break;
            }
        }
        let (head, tail) = rest.split_at(end);
        rest = tail;
        Some(head)
    })
}

/// Appends text to a line, merging into the last span when the style matches.
fn push(line: &mut Spans, text: &str, style: Style) {
    if text.is_empty() {
        return;
    }
    match line.last_mut() {
        Some(last) if last.style == style => last.content.to_mut().push_str(text),
        _ => line.push(Span::styled(text.to_owned(), style)),
    }
}

/// Display width of a line of spans.
pub(super) fn spans_width(line: &[Span<'_>]) -> usize {
    line.iter().map(|s| cols(&s.content)).sum()
}

/// Greedy word wrap of `runs` to `width` columns. Words longer than the width are
/// broken; spaces at a break are dropped. Always returns at least one line.
pub(super) fn wrap(runs: &[Run], width: usize) -> Vec<Spans> {
    wrap_runs(runs, width, true)
}

/// How many lines [`wrap`] makes of `runs` at `width`, and the widest of them, without building
/// them (a table measures every streamed cell and counts the lines of those that wrap).
pub(super) fn extent(runs: &[Run], width: usize) -> (usize, usize) {
    if let Some(total) = fits_as_is(runs, width) {
        return (1, total);
    }
    let w = run_wrapper(Wrapper::counting(width), runs, true);
    (w.ended, w.widest)
}

/// The width of `runs` when the wrap would leave them as they are, one line: printable ASCII
/// (a column a byte) no wider than `width`, with no hard break and no space to drop at either
/// end (most list items, table cells and short lines). `None` for any other.
fn fits_as_is(runs: &[Run], width: usize) -> Option<usize> {
    let text = || runs.iter().map(|(t, _)| t.as_str()).filter(|t| !t.is_empty());
    let total: usize = text().map(str::len).sum();
    let trimmed =
        text().next().is_some_and(|t| !t.starts_with(' ')) && text().next_back().is_some_and(|t| !t.ends_with(' '));
    (total <= width && trimmed && text().all(|t| t.bytes().all(|b| (0x20..0x7f).contains(&b)))).then_some(total)
}

/// [`wrap`]; `shortcut` takes runs that fit as they are ([`fits_as_is`]) as one line, and
/// places a word that lies whole in one run, with the gap before it, at once (most of prose),
/// instead of through the lists of pieces a word split across runs needs. The result is the
/// same either way (tested); the shortcut halves a long answer's final layout.
fn wrap_runs(runs: &[Run], width: usize, shortcut: bool) -> Vec<Spans> {
    if shortcut && fits_as_is(runs, width.max(1)).is_some() {
        let mut line = Vec::new();
        for (text, style) in runs {
            push(&mut line, text, *style);
        }
        return vec![line];
    }
    run_wrapper(Wrapper::new(width), runs, shortcut).lines
}

fn run_wrapper(mut w: Wrapper, runs: &[Run], shortcut: bool) -> Wrapper {
    let mut word: Vec<(&str, Style)> = Vec::new();
    let mut spaces: Vec<(&str, Style)> = Vec::new();
    for (text, style) in runs {
        let mut rest = text.as_str();
        while !rest.is_empty() {
            // Words are short: a plain loop finds their end sooner than a SIMD search's set-up.
            let cut = rest.bytes().position(|b| b == b' ' || b == b'\n').unwrap_or(rest.len());
            if cut > 0 {
                let at = text.len() - rest.len();
                if shortcut && cut < rest.len() && word.is_empty() {
                    // The gap before the word, when it is the one just before it in this run.
                    let gap = match spaces.as_slice() {
                        [] => Some(0),
                        [(g, s)] if s == style && g.as_ptr() as usize + g.len() == text.as_ptr() as usize + at => {
                            Some(g.len()).filter(|&n| n <= at)
                        }
                        _ => None,
                    };
                    if let Some(gap) = gap {
                        w.place_word(&text[at - gap..at + cut], gap, *style);
                        spaces.clear();
                        rest = &rest[cut..];
                        continue;
                    }
                }
                word.push((&rest[..cut], *style));
                rest = &rest[cut..];
                continue;
            }
            let gap_len = rest.len() - rest.trim_start_matches(' ').len();
            w.place(&mut word, &mut spaces);
            if gap_len > 0 {
                spaces.push((&rest[..gap_len], *style));
                rest = &rest[gap_len..];
            } else {
                // A hard break.
                spaces.clear();
                w.newline();
                rest = &rest[1..];
            }
        }
    }
    w.place(&mut word, &mut spaces);
    if w.cur_any || w.ended == 0 {
        w.newline();
    }
    w
}

/// Where [`Wrapper::placement`] puts a word.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// On the current line, after its gap.
    AfterGap,
    /// After its gap on the current line, cut where it overflows (too long for any line).
    CutAfterGap,
    /// At the start of a line, its gap dropped (cut there if too long for any line).
    LineStart,
}

#[derive(Debug, Clone)]
struct Wrapper {
    width: usize,
    lines: Vec<Spans>,
    cur: Spans,
    cur_w: usize,
    /// Whether the line being filled holds any text.
    cur_any: bool,
    /// Whether lines are built, or only counted and measured.
    keep: bool,
    /// Lines ended, and the widest of them.
    ended: usize,
    widest: usize,
}

impl Wrapper {
    fn new(width: usize) -> Self {
        Self::with_line(width, Vec::new(), 0)
    }

    /// A wrapper whose line being filled is `cur`, `cur_w` wide.
    fn with_line(width: usize, cur: Spans, cur_w: usize) -> Self {
        let cur_any = !cur.is_empty();
        Self { width: width.max(1), lines: Vec::new(), cur, cur_w, cur_any, keep: true, ended: 0, widest: 0 }
    }

    fn counting(width: usize) -> Self {
        Self { keep: false, ..Self::new(width) }
    }

    fn newline(&mut self) {
        if self.keep {
            self.lines.push(std::mem::take(&mut self.cur));
        }
        self.ended += 1;
        self.widest = self.widest.max(self.cur_w);
        self.cur_w = 0;
        self.cur_any = false;
    }

    /// Appends text to the line being filled. A line's first text gets room for a line of
    /// ASCII at once, so filling the line rarely grows its string again (unless the width is
    /// no screen's).
    fn put(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        self.cur_any = true;
        if !self.keep {
            return;
        }
        if self.cur.is_empty() {
            let room = if self.width <= 512 { self.width } else { 0 };
            let mut first = String::with_capacity(room.max(text.len()));
            first.push_str(text);
            self.cur.push(Span::styled(first, style));
        } else {
            push(&mut self.cur, text, style);
        }
    }

    /// The greedy wrap's one rule, for a word `word_w` wide after a gap `space_w` wide: ends
    /// the current line when the word goes to the next one, and says where the word goes.
    fn placement(&mut self, space_w: usize, word_w: usize) -> Placement {
        if self.cur_w > 0 {
            if self.cur_w + space_w + word_w <= self.width {
                return Placement::AfterGap;
            }
            if word_w > self.width && self.cur_w + space_w < self.width {
                // Too long for any line: start it here rather than waste the rest of
                // this one (this is also what keeps unspaced CJK text flowing).
                return Placement::CutAfterGap;
            }
            self.newline();
        }
        Placement::LineStart
    }

    /// Places the pending word (and the spaces before it), then clears both.
    fn place(&mut self, word: &mut Vec<(&str, Style)>, spaces: &mut Vec<(&str, Style)>) {
        if word.is_empty() {
            return;
        }
        self.place_parts(word, spaces);
        word.clear();
        spaces.clear();
    }

    /// [`Self::place`] without clearing, for a word held as borrowed or owned pieces.
    fn place_parts<S: AsRef<str>>(&mut self, word: &[(S, Style)], spaces: &[(S, Style)]) {
        if word.is_empty() {
            return;
        }
        let word_w: usize = word.iter().map(|(t, _)| cols(t.as_ref())).sum();
        let space_w: usize = spaces.iter().map(|(t, _)| cols(t.as_ref())).sum();
        let placement = self.placement(space_w, word_w);
        if placement != Placement::LineStart {
            for (t, s) in spaces {
                self.put(t.as_ref(), *s);
            }
            self.cur_w += space_w;
        }
        if placement == Placement::CutAfterGap || word_w > self.width {
            for (t, s) in word {
                self.break_text(t.as_ref(), *s);
            }
        } else {
            for (t, s) in word {
                self.put(t.as_ref(), *s);
            }
            self.cur_w += word_w;
        }
    }

    /// [`Self::place`] for one word after a gap of spaces, in one style, lying side by side:
    /// `joined` is the gap (`gap` bytes) and the word.
    fn place_word(&mut self, joined: &str, gap: usize, style: Style) {
        let word_w = cols(&joined[gap..]);
        let placement = self.placement(gap, word_w);
        // The gap goes on the line unless the word starts one.
        let from = if placement == Placement::LineStart { gap } else { 0 };
        self.cur_w += gap - from;
        if placement == Placement::CutAfterGap || word_w > self.width {
            self.put(&joined[from..gap], style);
            self.break_text(&joined[gap..], style);
        } else {
            self.put(&joined[from..], style);
            self.cur_w += word_w;
        }
    }

    /// Adds text cluster by cluster, breaking lines whenever the next one would not fit.
    fn break_text(&mut self, text: &str, style: Style) {
        for c in clusters(text) {
            let cw = c.width();
            if self.cur_w + cw > self.width && self.cur_w > 0 {
                self.newline();
            }
            self.put(c, style);
            self.cur_w += cw;
        }
    }
}

/// [`wrap`] of runs that arrive a few at a time (a paragraph streaming line by line): lines
/// already ended are final, and only the line being filled and the word being read are redone
/// as runs arrive, so the cost grows with the new runs rather than with all of them.
#[derive(Debug, Clone)]
pub(super) struct GrowingWrap {
    w: Wrapper,
    /// The word being read and the spaces before it, when they did not lie whole in one run.
    word: Vec<(String, Style)>,
    spaces: Vec<(String, Style)>,
    /// Lines taken out as final.
    taken: usize,
}

impl GrowingWrap {
    pub(super) fn new(width: usize) -> Self {
        let w = Wrapper::new(width);
        Self { w, word: Vec::new(), spaces: Vec::new(), taken: 0 }
    }

    /// Wraps more runs, as [`wrap`] would after those before them; a word at the end of the last
    /// run stays open for the runs after it.
    pub(super) fn push(&mut self, runs: &[Run]) {
        for (text, style) in runs {
            self.push_run(text, *style);
        }
    }

    /// [`wrap_runs`]'s loop over one run; `gap` is where the spaces just read in it began.
    pub(super) fn push_run(&mut self, text: &str, style: Style) {
        let mut gap: Option<usize> = None;
        let mut at = 0;
        while at < text.len() {
            let rest = &text[at..];
            let cut = rest.bytes().position(|b| b == b' ' || b == b'\n').unwrap_or(rest.len());
            if cut > 0 {
                if cut < rest.len() && self.word.is_empty() && self.spaces.is_empty() {
                    // The word and its gap lie whole in this run: placed at once.
                    let from = gap.take().unwrap_or(at);
                    self.w.place_word(&text[from..at + cut], at - from, style);
                } else {
                    if let Some(g) = gap.take() {
                        self.spaces.push((text[g..at].to_owned(), style));
                    }
                    self.word.push((rest[..cut].to_owned(), style));
                }
                at += cut;
                continue;
            }
            if !self.word.is_empty() {
                self.end_word();
            }
            let gap_len = rest.len() - rest.trim_start_matches(' ').len();
            if gap_len > 0 {
                if let Some(g) = gap.take() {
                    // Spaces pending before a word piece that went to the lists.
                    self.spaces.push((text[g..at].to_owned(), style));
                }
                gap = Some(at);
                at += gap_len;
            } else {
                // A hard break.
                gap = None;
                self.spaces.clear();
                self.w.newline();
                at += 1;
            }
        }
        if let Some(g) = gap {
            self.spaces.push((text[g..].to_owned(), style));
        }
    }

    /// Places the word being read: the next run starts another (a line's last word, before
    /// the break that follows it).
    pub(super) fn end_word(&mut self) {
        self.w.place_parts(&self.word, &self.spaces);
        if !self.word.is_empty() {
            self.word.clear();
            self.spaces.clear();
        }
    }

    /// Moves the lines that are final out, in order.
    pub(super) fn take_done(&mut self) -> Vec<Spans> {
        self.taken += self.w.lines.len();
        std::mem::take(&mut self.w.lines)
    }

    /// The lines after the final ones, as [`wrap`] ends them, with `extra` read after the
    /// word being read (without changing what is pending).
    pub(super) fn tail(&self, extra: Option<(&str, Style)>) -> Vec<Spans> {
        let mut w = Wrapper::with_line(self.w.width, self.w.cur.clone(), self.w.cur_w);
        let mut word: Vec<(&str, Style)> = self.word.iter().map(|(t, s)| (t.as_str(), *s)).collect();
        let mut spaces: Vec<(&str, Style)> = self.spaces.iter().map(|(t, s)| (t.as_str(), *s)).collect();
        word.extend(extra);
        w.place(&mut word, &mut spaces);
        // The whole wrap ends with the line being filled, and has one line at least.
        if w.cur_any || (w.lines.is_empty() && self.w.lines.is_empty() && self.taken == 0) {
            w.newline();
        }
        w.lines
    }
}

/// Hard wrap of one code line (no word boundaries). Always returns at least one line.
pub(super) fn hard_wrap(pieces: &[(Style, String)], width: usize) -> Vec<Spans> {
    let mut w = Wrapper::new(width);
    for (style, text) in pieces {
        w.break_text(text, *style);
    }
    w.newline();
    w.lines
}

/// Cuts a line to at most `width` columns. A no-op for lines that fit, which is all of
/// them unless the width is too small for a single wide char or a prefix.
pub(super) fn clamp(line: Spans, width: usize) -> Spans {
    if spans_width(&line) <= width {
        return line;
    }
    cut(&line, width).0
}

/// The longest prefix of `line` fitting `width` columns, and whether anything was cut.
fn cut(line: &[Span<'static>], width: usize) -> (Spans, bool) {
    let mut out = Vec::new();
    let mut used = 0;
    for span in line {
        for c in clusters(&span.content) {
            let cw = c.width();
            if used + cw > width {
                return (out, true);
            }
            push(&mut out, c, span.style);
            used += cw;
        }
    }
    (out, false)
}

/// Fits a line into `width` columns, marking any cut (or `force`d mark) with `…`.
pub(super) fn ellipsize(line: &[Span<'static>], width: usize, force: bool) -> Spans {
    if width == 0 {
        return Vec::new();
    }
    if !force && spans_width(line) <= width {
        return line.to_vec();
    }
    let (mut out, _) = cut(line, width - 1);
    let style = out.last().or(line.last()).map_or_else(Style::new, |s| s.style);
    push(&mut out, "…", style);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Spans]) -> Vec<String> {
        lines.iter().map(|l| l.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    fn plain(s: &str) -> Vec<Run> {
        vec![(s.to_owned(), Style::new())]
    }

    #[test]
    fn wraps_words_and_drops_break_spaces() {
        let out = wrap(&plain("the quick brown fox jumps"), 10);
        assert_eq!(text(&out), ["the quick", "brown fox", "jumps"]);
    }

    #[test]
    fn words_span_runs_and_keep_styles() {
        let bold = Style::new().bold();
        let runs = vec![("ab".to_owned(), Style::new()), ("cd ef".to_owned(), bold)];
        let out = wrap(&runs, 4);
        assert_eq!(text(&out), ["abcd", "ef"]);
        assert_eq!(out[0].len(), 2);
        assert_eq!(out[1][0].style, bold);
    }

    #[test]
    fn breaks_long_words_and_cjk() {
        assert_eq!(text(&wrap(&plain("abcdefghij"), 4)), ["abcd", "efgh", "ij"]);
        assert_eq!(text(&wrap(&plain("日本語のテキスト"), 5)), ["日本", "語の", "テキ", "スト"]);
        // A long word starts on the current line instead of leaving it half empty.
        assert_eq!(text(&wrap(&plain("ab 0123456789"), 6)), ["ab 012", "345678", "9"]);
    }

    /// `count` runs of up to `pieces` random pieces each (words, gaps of one to three spaces,
    /// hard breaks, long and wide words, combining marks), in two styles.
    fn random_runs(seed: &mut u64, count: usize, pieces: u64) -> Vec<Run> {
        let bold = Style::new().bold();
        let from = ["a", "bb", "ccc ", " ", "  ", "   dd", "\n", "0123456789abc", "日本語", "é\u{301}x", "e ", " f"];
        let mut runs = Vec::new();
        for _ in 0..count {
            let mut text = String::new();
            for _ in 0..(*seed % pieces + 1) {
                *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                text.push_str(from[(*seed >> 33) as usize % from.len()]);
            }
            runs.push((text, if *seed & (1 << 20) == 0 { Style::new() } else { bold }));
        }
        runs
    }

    /// Counting lines without building them counts what [`wrap`] builds, and the widest line
    /// is what the spans measure wherever merging same-styled text cannot change a width.
    #[test]
    fn extent_counts_the_lines_wrap_makes() {
        let mut seed = 11u64;
        for case in 0..400 {
            let runs = random_runs(&mut seed, case % 9 + 1, 6);
            for width in (1..25).chain([usize::MAX / 2]) {
                let lines = wrap(&runs, width);
                let (count, widest) = extent(&runs, width);
                assert_eq!(count, lines.len(), "{runs:?} at {width}");
                assert_eq!(widest, lines.iter().map(|l| spans_width(l)).max().unwrap_or(0), "{runs:?} at {width}");
            }
        }
    }

    #[test]
    fn the_shortcut_wraps_as_the_lists_do() {
        // Runs of words, gaps of one to three spaces, hard breaks, long and wide words, in
        // two styles, at every width from 1 to 24: the same lines, spans and styles.
        let mut seed = 7u64;
        for case in 0..400 {
            let runs = random_runs(&mut seed, case % 9 + 1, 6);
            for width in 1..25 {
                assert_eq!(wrap_runs(&runs, width, true), wrap_runs(&runs, width, false), "{runs:?} at {width}");
            }
        }
    }

    #[test]
    fn a_growing_wrap_is_the_wrap_of_all_its_runs_so_far() {
        // The same random runs as above, arriving a few at a time, at every width: the lines
        // already final plus the tail are the whole wrap at every step, and final lines stay.
        let mut seed = 3u64;
        for case in 0..300 {
            let runs = random_runs(&mut seed, case % 11 + 1, 5);
            for width in [1, 2, 3, 4, 7, 10, 16, 24] {
                let mut g = GrowingWrap::new(width);
                let mut done: Vec<Spans> = Vec::new();
                let mut at = 0;
                while at < runs.len() {
                    let n = (seed as usize >> (at % 13)) % 3 + 1;
                    let next = (at + n).min(runs.len());
                    g.push(&runs[at..next]);
                    at = next;
                    if runs.get(at).is_some_and(|(t, _)| t.starts_with([' ', '\n'])) {
                        // A word ends where the next run starts with a break.
                        g.end_word();
                    }
                    done.extend(g.take_done());
                    let mut got = done.clone();
                    got.extend(g.tail(None));
                    assert_eq!(got, wrap(&runs[..at], width), "{runs:?} to {at} at {width}");
                }
            }
        }
    }

    #[test]
    fn hard_breaks_and_empty_input() {
        assert_eq!(text(&wrap(&plain("a\nb"), 10)), ["a", "b"]);
        assert_eq!(text(&wrap(&plain("a\n\nb"), 10)), ["a", "", "b"]);
        assert_eq!(text(&wrap(&[], 10)), [""]);
    }

    #[test]
    fn clusters_keep_marks_and_emoji_sequences() {
        let parts: Vec<_> = clusters("e\u{301}x👨\u{200d}👩\u{200d}👧❤\u{fe0f}").collect();
        assert_eq!(parts, ["e\u{301}", "x", "👨\u{200d}👩\u{200d}👧", "❤\u{fe0f}"]);
    }

    #[test]
    fn hard_wrap_keeps_indentation() {
        let out = hard_wrap(&[(Style::new(), "    let x = 12345;".to_owned())], 8);
        assert_eq!(text(&out), ["    let ", "x = 1234", "5;"]);
        assert_eq!(text(&hard_wrap(&[], 8)), [""]);
    }

    #[test]
    fn clamp_and_ellipsize() {
        let line = vec![Span::raw("hello"), Span::raw("世界")];
        assert_eq!(text(&[clamp(line.clone(), 6)]), ["hello"]);
        assert_eq!(text(&[clamp(line.clone(), 9)]), ["hello世界"]);
        assert_eq!(text(&[ellipsize(&line, 7, false)]), ["hello…"]);
        assert_eq!(text(&[ellipsize(&line, 9, false)]), ["hello世界"]);
        assert_eq!(text(&[ellipsize(&line, 3, true)]), ["he…"]);
        assert!(ellipsize(&line, 0, true).is_empty());
    }
}
