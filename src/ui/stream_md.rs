//! Markdown for an answer that is still arriving, at a cost that does not grow with the answer.
//! Complete lines are rendered as markdown; blocks that a blank line (outside a code fence) has
//! closed are rendered once and kept. A block that can grow without bound is rendered as its
//! lines arrive once it passes a few KB (re-rendered until then), each line sanitized once (a
//! paragraph: `markdown::Paragraph`, a list: `stream_list`, a table: `stream_table`; the kinds
//! are picked in [`choose`]), a top-level code fence too, its lines highlighted once each, when
//! first drawn (`LazyCode`); a one-line block (a heading, a rule) is closed at once; any other
//! open block is re-rendered when a line completes. When the answer is finished, what
//! streaming rendered is kept if a parse of the whole answer shows every cut fell between
//! top-level blocks, every block rendered line by line is one block of its kind there (a
//! paragraph without an inline element across its lines), and nothing needs its neighbours to
//! be sanitized or linked; otherwise it is rendered whole, once. Either way the final lines
//! are those of rendering it whole.
//!
//! Within a frame's [`FrameBudget`](super::frame_budget::FrameBudget) complete lines are laid
//! out only until the layout allowance is spent: the rendering then stops at a line, is
//! [`behind`](StreamingMarkdown::behind) the text, and the next update goes on from there. An
//! answer that finished while its rendering was behind catches up the same way before the
//! final check, so neither a burst nor its end costs one frame more than the allowance. The
//! final check of a long answer (a parse of all of it, and its whole rendering when the check
//! fails) runs on a helper thread meanwhile: the streamed rendering stays on screen, behind,
//! until the verdict comes back.

use super::frame_budget;
use super::markdown::{self, CodeRows, Paragraph};
use super::sanitize::{may_reach, sanitize};
use super::stream_block::{BlockKind, GrowingBlock};
use super::stream_code::LazyCode;
use super::stream_list::ListBlock;
use super::stream_table::TableBlock;
use super::theme::Theme;
use super::wrap;
use ratatui::text::Line;
use std::sync::mpsc::{Receiver, TryRecvError};

/// An answer at least this long is checked at its end on a helper thread (a parse of 32 KB
/// takes well under a millisecond; of the 500 KB answers of the latency bench, about 10).
const CHECK_OFF_THREAD: usize = 32 * 1024;

/// An open block that can grow is re-rendered until it is this long, then taken line by line
/// (tests take every such block line by line from its first lines).
const PROMOTE_AT: usize = if cfg!(test) { 1 } else { 4 * 1024 };

/// Held by the helper thread doing a final check.
static CHECKS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Rendered markdown of one answer.
#[derive(Debug, Default)]
pub struct StreamingMarkdown {
    /// Closed blocks, rendered once (code blocks highlighted when their rows are first read).
    stable: Vec<Piece>,
    /// The first row of each piece of `stable`, and the rows of all of them.
    starts: Vec<usize>,
    stable_rows: usize,
    /// Bytes of the answer the closed blocks cover.
    stable_len: usize,
    /// The open block (from `stable_len` to the last complete line), unless a fence is open or
    /// the block is rendered line by line.
    active: Vec<Line<'static>>,
    /// The open block rendered as its lines arrive.
    growing: Option<OpenBlock>,
    /// A top-level code fence being rendered line by line (then it is the open block).
    fence: Option<OpenFence>,
    /// Bytes of the answer rendered so far (closed and open blocks).
    rendered_len: usize,
    /// Whether the rendering is final (the answer was finished).
    whole: bool,
    /// Scanner state: how far lines were examined, how many, whether that point is inside a
    /// fence the line-by-line path did not take, and the end of the last blank line outside a
    /// fence (where a block has certainly closed) with the number of the line after it.
    scanned: usize,
    /// How much of the text was searched for a newline (an answer that is one long line is
    /// not searched again from its start at every frame).
    searched: usize,
    /// The end of the last complete line found by that search.
    complete: usize,
    /// The last update stopped short of `complete` (the frame's layout allowance was spent).
    short: bool,
    line_no: usize,
    in_fence: bool,
    boundary: (usize, usize),
    /// Lines where one rendered piece ends and the next begins, and the fences rendered line
    /// by line: checked against a parse of the whole answer before it is reused.
    cuts: Vec<usize>,
    fences: Vec<FenceCut>,
    /// The closed blocks rendered line by line, checked the same way.
    grown: Vec<Grown>,
    /// Where an open block began that could not be taken line by line ([`Self::promote`]): it
    /// is not tried again.
    unpromoted: Option<usize>,
    /// Some line holds an escape sequence, C1 control or CR, which the sanitiser may treat
    /// together with the lines after it: lines are then never sanitised one at a time.
    reaching: bool,
    cols: usize,
    /// The final check running on a helper thread, for an answer of this many bytes.
    checking: Option<(usize, Receiver<Verdict>)>,
}

/// What the final check of a long answer found.
#[derive(Debug)]
enum Verdict {
    /// The streamed rendering is the whole answer's.
    Exact,
    /// It is not: the whole answer's rendering.
    Whole(Vec<Line<'static>>),
}

/// A fence rendered line by line: where it began and what it was, for the final check.
#[derive(Debug, Clone)]
struct FenceCut {
    first: usize,
    /// The closing fence's line; `None` while it is open.
    last: Option<usize>,
    lang: String,
}

#[derive(Debug)]
struct OpenFence {
    cut: FenceCut,
    /// The fence character and how many opened it.
    marker: u8,
    count: usize,
    /// The gap and language lines above the code.
    head: Vec<Line<'static>>,
    /// The rule below the code (without colour only), drawn once the block is closed.
    foot: Vec<Line<'static>>,
    code: LazyCode,
}

/// A block rendered line by line: what it is and on which lines, for the final check.
#[derive(Debug, Clone, Copy)]
struct Grown {
    kind: BlockKind,
    first: usize,
    /// Its last line; `None` while it is open.
    last: Option<usize>,
}

/// The open block when it is rendered line by line.
#[derive(Debug)]
struct OpenBlock {
    /// The blank line above it, when a block is above.
    gap: Vec<Line<'static>>,
    block: Box<dyn GrowingBlock>,
    first: usize,
    /// Its first line (sanitized) while it is the only one.
    head: Option<String>,
}

/// How a block is rendered, as [`choose`] picks it.
enum Choice {
    /// As its lines arrive.
    Grow(Box<dyn GrowingBlock>),
    /// Closed at once: a block of one line.
    Single,
    /// Again from its start each time a line completes.
    Rerender,
}

/// Closed blocks: rendered lines, a code block's rows, or a block rendered line by line.
#[derive(Debug)]
enum Piece {
    Lines(Vec<Line<'static>>),
    Code(Box<LazyCode>),
    Block(Box<dyn GrowingBlock>),
}

impl Piece {
    fn get(&self, i: usize) -> Option<&Line<'static>> {
        match self {
            Self::Lines(l) => l.get(i),
            Self::Code(c) => c.row(i),
            Self::Block(b) => b.get(i),
        }
    }
}

impl OpenBlock {
    fn len(&self) -> usize {
        self.gap.len() + self.block.len()
    }

    fn get(&self, i: usize) -> Option<&Line<'static>> {
        match i.checked_sub(self.gap.len()) {
            None => self.gap.get(i),
            Some(j) => self.block.get(j),
        }
    }
}

/// Picks how the block whose first line is `head` (sanitized) is rendered; `next` is the
/// second line of a block that began as a one-line paragraph and did not go on as one. Each
/// kind rendered line by line slots in here.
fn choose(head: &str, next: Option<&str>, cols: usize, theme: &Theme) -> Choice {
    use pulldown_cmark::{Event, Parser, Tag};
    let grow = |b: Option<Box<dyn GrowingBlock>>| b.map_or(Choice::Rerender, Choice::Grow);
    let paragraph = || Paragraph::start(head, cols, theme).map(|p| Box::new(p) as Box<dyn GrowingBlock>);
    if let Some(next) = next {
        let is_table = markdown::top_level(&format!("{head}\n{next}"))
            .is_some_and(|b| matches!(b.as_slice(), [t] if t.kind == Some(BlockKind::Table) && t.last == 1));
        if !is_table {
            return Choice::Rerender;
        }
        return grow(TableBlock::start(head, next, cols, theme).map(|t| Box::new(t) as Box<dyn GrowingBlock>));
    }
    if one_line_block(head) {
        return Choice::Single;
    }
    if Paragraph::plain(head) {
        return grow(paragraph());
    }
    match Parser::new_ext(head, crate::text::code::options()).next() {
        Some(Event::Start(Tag::Paragraph)) => grow(paragraph()),
        Some(Event::Start(Tag::List(_))) => {
            grow(ListBlock::start(head, cols, theme).map(|l| Box::new(l) as Box<dyn GrowingBlock>))
        }
        _ => Choice::Rerender,
    }
}

/// Whether the block whose first line is `head` (sanitized) is a block of that line alone (an
/// ATX heading, a rule): closed at once.
fn one_line_block(head: &str) -> bool {
    use pulldown_cmark::{Event, Parser, Tag};
    !Paragraph::plain(head)
        && matches!(
            Parser::new_ext(head, crate::text::code::options()).next(),
            Some(Event::Start(Tag::Heading { .. }) | Event::Rule)
        )
}

impl StreamingMarkdown {
    #[must_use]
    pub fn len(&self) -> usize {
        let fence = self.fence.as_ref().map_or(0, |f| f.head.len() + f.code.len());
        self.stable_rows + self.active.len() + self.growing.as_ref().map_or(0, OpenBlock::len) + fence
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[must_use]
    pub fn get(&self, i: usize) -> Option<&Line<'static>> {
        if i < self.stable_rows {
            let p = self.starts.partition_point(|&s| s <= i).checked_sub(1)?;
            return self.stable.get(p)?.get(i - self.starts[p]);
        }
        let mut i = i - self.stable_rows;
        if i < self.active.len() {
            return self.active.get(i);
        }
        i -= self.active.len();
        if let Some(open) = &self.growing {
            if i < open.len() {
                return open.get(i);
            }
            i -= open.len();
        }
        let f = self.fence.as_ref()?;
        if i < f.head.len() { f.head.get(i) } else { f.code.row(i - f.head.len()) }
    }

    /// Appends closed lines.
    fn push_lines(&mut self, lines: Vec<Line<'static>>) {
        if lines.is_empty() {
            return;
        }
        self.stable_rows += lines.len();
        if let Some(Piece::Lines(last)) = self.stable.last_mut() {
            last.extend(lines);
        } else {
            self.starts.push(self.stable_rows - lines.len());
            self.stable.push(Piece::Lines(lines));
        }
    }

    /// Appends a closed code block (and the lines above it); returns where it began.
    fn push_fence(&mut self, f: OpenFence) -> FenceCut {
        self.push_lines(f.head);
        self.starts.push(self.stable_rows);
        self.stable_rows += f.code.len();
        self.stable.push(Piece::Code(Box::new(f.code)));
        self.push_lines(f.foot);
        f.cut
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Whether the rendering stopped short of the text's complete lines for lack of budget:
    /// update again (in the next frame) to go on.
    #[must_use]
    pub fn behind(&self) -> bool {
        self.short
    }

    /// Brings the rendering up to date with `content`. While `live`, the unfinished last line is
    /// left out (the caller shows it plain); once finished, everything is rendered.
    /// Returns the number of bytes covered (short of the complete lines when [`Self::behind`]).
    pub fn update(&mut self, content: &str, live: bool, cols: usize, theme: &Theme) -> usize {
        let replaced = content.len() < self.rendered_len || !content.is_char_boundary(self.rendered_len);
        // A finished rendering that goes live again starts over too (it keeps no scanner state).
        if replaced || cols != self.cols || (live && self.whole) {
            // The text was replaced rather than extended: start over.
            self.clear();
            self.cols = cols;
        }
        self.short = false;
        if !live {
            if self.whole && self.rendered_len == content.len() {
                return content.len();
            }
            // A rendering left behind by the stream catches up within the frame's budget, and a
            // long one is checked off the UI task.
            if !self.whole && self.rendered_len > 0 && frame_budget::layout_bounded() {
                self.catch_up(content, cols, theme);
                if self.short {
                    return self.rendered_len;
                }
                if content.len() >= CHECK_OFF_THREAD {
                    return self.finish_off_thread(content, cols, theme);
                }
            }
            return self.finish_here(content, cols, theme);
        }
        self.catch_up(content, cols, theme);
        self.rendered_len
    }

    /// Renders the complete lines not rendered yet, within the frame's layout budget.
    fn catch_up(&mut self, content: &str, cols: usize, theme: &Theme) {
        let from = self.searched.clamp(self.scanned, content.len());
        if let Some(i) = memchr::memrchr(b'\n', &content.as_bytes()[from..]) {
            self.complete = from + i + 1;
        }
        self.complete = self.complete.max(self.scanned);
        self.searched = content.len();
        if self.complete != self.rendered_len {
            frame_budget::layout_start();
            self.advance(content, self.complete, cols, theme, true);
        }
    }

    /// Renders the complete lines from `scanned` up to `upto`; `bounded` stops at a line when
    /// the frame's layout allowance is spent.
    fn advance(&mut self, content: &str, upto: usize, cols: usize, theme: &Theme, bounded: bool) {
        let mut pos = self.scanned;
        while pos < upto {
            if bounded && !frame_budget::layout_allow() {
                self.short = true;
                break;
            }
            let end = memchr::memchr(b'\n', &content.as_bytes()[pos..upto]).map_or(upto, |i| pos + i + 1);
            frame_budget::layout_charge(|| {
                self.reaching |= may_reach(&content[pos..end]);
                self.line(content, pos, end, cols, theme);
            });
            pos = end;
            self.line_no += 1;
        }
        if pos == self.scanned && pos != upto {
            // Nothing laid out this time: the open block stands as it was.
            return;
        }
        self.scanned = pos;
        self.rendered_len = pos;
        if self.fence.is_some() || self.growing.is_some() {
            return;
        }
        let (boundary, line) = self.boundary;
        frame_budget::layout_charge(|| {
            if boundary > self.stable_len {
                self.close_piece(content, boundary, line, cols, theme);
            }
            // A block past the threshold is taken line by line before it is ever rendered
            // whole: the first frame of a fast stream may find a 150 KB table already there.
            self.promote(content, pos, cols, theme);
            if self.growing.is_some() {
                return;
            }
            self.active = render(&content[self.stable_len..pos], cols, theme);
            if self.stable_rows > 0 && !self.active.is_empty() {
                self.active.insert(0, Line::default());
            }
        });
    }

    /// One complete line, `content[start..end]`; `line_no` is its number.
    fn line(&mut self, content: &str, start: usize, end: usize, cols: usize, theme: &Theme) {
        let line = content[start..end].trim_end_matches(['\n', '\r']);
        if let Some(f) = &mut self.fence {
            if f.closes(line) {
                self.close_fence(end);
            } else if self.reaching {
                // This line cannot be sanitised alone: the fence goes back to being re-rendered
                // with the open block, as any other block.
                self.fence = None;
                self.in_fence = true;
            } else {
                f.code.push(&sanitize(line));
            }
            return;
        }
        if self.growing.is_some() && !self.grow(start, line, cols, theme) {
            return;
        }
        let trimmed = line.trim_start();
        let marker = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        if self.in_fence {
            self.in_fence = !marker;
        } else if marker {
            self.in_fence = !self.open_fence(content, start, end, cols, theme);
        } else if line.trim().is_empty() {
            self.boundary = (end, self.line_no + 1);
        } else if start == self.stable_len || start == self.boundary.0 {
            self.start_block(content, end, line, cols, theme);
        }
    }

    /// Offers the line at `start` to the block rendered line by line. Returns whether the line
    /// is still to be read as any other: the block ended before it, or went back to being
    /// re-rendered whole with it.
    fn grow(&mut self, start: usize, line: &str, cols: usize, theme: &Theme) -> bool {
        let Some(open) = &mut self.growing else { return true };
        if self.reaching {
            // The block's lines cannot be sanitised one at a time: re-rendered from its start.
            self.growing = None;
            return true;
        }
        let clean = sanitize(line);
        if open.block.push(&clean) {
            open.head = None;
            return false;
        }
        if open.block.kind() != BlockKind::Paragraph || line.trim().is_empty() {
            // A line the block refuses starts the next one.
            self.end_growing(start);
            return true;
        }
        // Whether the line starts a block of its own after the paragraph's last line (any of
        // its lines stands for the others), or changes what the paragraph is.
        let before = open.head.as_deref().unwrap_or("a");
        let split = markdown::top_level(&format!("{before}\n{clean}"))
            .is_some_and(|b| matches!(b.as_slice(), [a, b] if a.last == 0 && b.first == 1));
        if split {
            self.end_growing(start);
            return true;
        }
        if let Some(head) = open.head.take() {
            if let Choice::Grow(block) = choose(&head, Some(&clean), cols, theme) {
                open.block = block;
                return false;
            }
        }
        // Anything else (a setext heading's underline…): the block is rendered whole again.
        self.growing = None;
        true
    }

    /// The block rendered line by line ends before the line at `at`: it joins the closed ones.
    fn end_growing(&mut self, at: usize) {
        let Some(open) = self.growing.take() else { return };
        let last = Some(self.line_no.saturating_sub(1));
        self.grown.push(Grown { kind: open.block.kind(), first: open.first, last });
        self.push_block(open);
        self.stable_len = at;
        self.cuts.push(self.line_no);
    }

    /// Appends a block rendered line by line (and the gap above it) to the closed blocks.
    fn push_block(&mut self, open: OpenBlock) {
        self.push_lines(open.gap);
        self.starts.push(self.stable_rows);
        self.stable_rows += open.block.len();
        self.stable.push(Piece::Block(open.block));
    }

    /// The line at `content[start..end]` starts a block: a kind rendered line by line starts
    /// here, a one-line block is closed at once, else the block is re-rendered as lines arrive.
    fn start_block(&mut self, content: &str, end: usize, line: &str, cols: usize, theme: &Theme) {
        if self.reaching || cols == 0 || line.starts_with(' ') {
            return;
        }
        let clean = sanitize(line);
        // A block that can grow is re-rendered while it is small (most paragraphs and lists
        // are: re-rendering a few lines costs less than taking them one by one) and taken line
        // by line once it passes `PROMOTE_AT` bytes (`promote`).
        if !one_line_block(&clean) {
            return;
        }
        let (boundary, boundary_line) = self.boundary;
        if boundary > self.stable_len {
            self.close_piece(content, boundary, boundary_line, cols, theme);
        }
        self.active.clear();
        self.close_piece(content, end, self.line_no + 1, cols, theme);
    }

    /// The open block `content[stable_len..pos]` (complete lines, re-rendered so far) is taken
    /// line by line from here on when it has grown past `PROMOTE_AT` bytes and its kind can be:
    /// its lines are pushed once now, as they would have been as they arrived. A block that
    /// refuses one of them stays re-rendered (and is not tried again).
    fn promote(&mut self, content: &str, pos: usize, cols: usize, theme: &Theme) {
        let from = self.stable_len;
        if pos - from < PROMOTE_AT || self.unpromoted == Some(from) || self.reaching || cols == 0 {
            return;
        }
        self.unpromoted = Some(from);
        let text = &content[from..pos];
        if !text.ends_with('\n') || text.starts_with([' ', '\n']) {
            return;
        }
        let mut lines = text.split_inclusive('\n').map(|l| sanitize(l.trim_end_matches(['\n', '\r'])));
        let (Some(head), second) = (lines.next(), lines.next()) else { return };
        let table = second.as_deref().and_then(|next| match choose(&head, Some(next), cols, theme) {
            Choice::Grow(block) => Some(block),
            _ => None,
        });
        let (mut block, rest) = match table {
            Some(block) => (block, None),
            None => match choose(&head, None, cols, theme) {
                Choice::Grow(block) => (block, second),
                _ => return,
            },
        };
        if !rest.into_iter().chain(lines).all(|line| !line.trim().is_empty() && block.push(&line)) {
            return;
        }
        let count = memchr::memchr_iter(b'\n', text.as_bytes()).count();
        let first = self.line_no - count;
        self.cuts.push(first);
        let gap = if self.stable_rows > 0 { vec![Line::default()] } else { Vec::new() };
        let head = (count == 1).then(|| head.into_owned());
        self.growing = Some(OpenBlock { gap, block, first, head });
        self.active.clear();
    }

    /// Renders `content[stable_len..at]` as closed blocks; `line` is the number of the line at `at`.
    fn close_piece(&mut self, content: &str, at: usize, line: usize, cols: usize, theme: &Theme) {
        let mut block = render(&content[self.stable_len..at], cols, theme);
        if self.stable_rows > 0 && !block.is_empty() {
            block.insert(0, Line::default());
        }
        self.push_lines(block);
        self.stable_len = at;
        self.cuts.push(line);
    }

    /// A fence line at `content[start..end]`: when it starts a top-level code block, what is
    /// before it is closed and its code is rendered line by line from here on.
    fn open_fence(&mut self, content: &str, start: usize, end: usize, cols: usize, theme: &Theme) -> bool {
        let line = &content[start..end];
        let width = u16::try_from(cols).unwrap_or(u16::MAX);
        if self.reaching || width == 0 || !(line.starts_with("```") || line.starts_with("~~~")) {
            return false;
        }
        let (boundary, boundary_line) = self.boundary;
        if boundary > self.stable_len {
            self.close_piece(content, boundary, boundary_line, cols, theme);
        }
        // The open block with this line: its last top-level block must be a fence on this line.
        let before = sanitize(&content[self.stable_len..start]);
        let fence_line = memchr::memchr_iter(b'\n', before.as_bytes()).count();
        let text = format!("{before}{}", sanitize(line));
        let Some(lang) = markdown::top_level(&text)
            .and_then(|blocks| blocks.into_iter().last())
            .filter(|b| b.first == fence_line)
            .and_then(|b| b.fence)
        else {
            return false;
        };
        if start > self.stable_len {
            self.close_piece(content, start, self.line_no, cols, theme);
        }
        self.cuts.push(self.line_no);
        let mut head = Vec::new();
        if self.stable_rows > 0 {
            head.push(Line::default());
        }
        if let Some(spans) = CodeRows::head(&lang, theme, cols) {
            head.extend(wrap::fit(vec![markdown::top_line(spans, width)], cols));
        }
        let foot = CodeRows::foot(theme, cols)
            .map(|spans| wrap::fit(vec![markdown::top_line(spans, width)], cols))
            .unwrap_or_default();
        let marker = line.as_bytes()[0];
        self.fence = Some(OpenFence {
            marker,
            count: line.bytes().take_while(|&b| b == marker).count(),
            code: LazyCode::new(&lang, theme, cols),
            cut: FenceCut { first: self.line_no, last: None, lang },
            head,
            foot,
        });
        self.active.clear();
        self.stable_len = start;
        true
    }

    /// The fence closed on the line ending at `end`: its rows join the closed blocks.
    fn close_fence(&mut self, end: usize) {
        let Some(f) = self.fence.take() else { return };
        let mut cut = self.push_fence(f);
        cut.last = Some(self.line_no);
        self.fences.push(cut);
        self.stable_len = end;
        self.cuts.push(self.line_no + 1);
    }

    /// The answer is finished: renders what is left as streaming would, and keeps the result if
    /// it is exactly the whole answer's rendering. Returns false when it must be rendered whole.
    fn finish(&mut self, content: &str, cols: usize, theme: &Theme) -> bool {
        self.advance_to_end(content, cols, theme);
        if self.reaching || !self.cut_points().exact(content) {
            return false;
        }
        self.settle(content);
        true
    }

    /// Lays out what is left of a finished answer (its last line, when it has no newline).
    fn advance_to_end(&mut self, content: &str, cols: usize, theme: &Theme) {
        if self.scanned < content.len() {
            self.advance(content, content.len(), cols, theme, false);
        }
    }

    /// The streamed rendering was found exact: the open block and fence join the closed ones.
    fn settle(&mut self, content: &str) {
        if let Some(f) = self.fence.take() {
            let cut = self.push_fence(f);
            self.fences.push(cut);
        }
        let active = std::mem::take(&mut self.active);
        self.push_lines(active);
        if let Some(open) = self.growing.take() {
            self.push_block(open);
        }
        self.stable_len = content.len();
        self.whole = true;
    }

    /// [`Self::finish`] for a long answer: the check (and the whole rendering, when it fails)
    /// runs on a helper thread; until its verdict is in, the rendering stays behind. Returns the
    /// bytes covered.
    fn finish_off_thread(&mut self, content: &str, cols: usize, theme: &Theme) -> usize {
        if self.checking.as_ref().is_some_and(|(len, _)| *len != content.len()) {
            self.checking = None;
        }
        let Some((_, rx)) = &self.checking else {
            self.advance_to_end(content, cols, theme);
            let (text, cuts, reaching, owned) = (content.to_owned(), self.cut_points(), self.reaching, theme.clone());
            let (tx, rx) = std::sync::mpsc::channel();
            let spawned = std::thread::Builder::new().name("palaver-md-check".into()).spawn(move || {
                // One check at a time: four columns ending together queue here rather than
                // take every core from the screen.
                let _turn = CHECKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let verdict = if !reaching && cuts.exact(&text) {
                    Verdict::Exact
                } else {
                    Verdict::Whole(render(&text, cols, &owned))
                };
                let _ = tx.send(verdict);
            });
            if spawned.is_err() {
                // No thread to be had: checked here, as a short answer is.
                return self.finish_here(content, cols, theme);
            }
            self.checking = Some((content.len(), rx));
            return self.still_checking();
        };
        let verdict = rx.try_recv();
        if !matches!(verdict, Err(TryRecvError::Empty)) {
            self.checking = None;
        }
        match verdict {
            Ok(Verdict::Exact) => self.settle(content),
            Ok(Verdict::Whole(lines)) => self.replace_with_whole(lines, content.len(), cols),
            Err(TryRecvError::Empty) => return self.still_checking(),
            Err(TryRecvError::Disconnected) => return self.finish_here(content, cols, theme),
        }
        content.len()
    }

    /// The check's verdict is not in: shown as streamed, and drawn again.
    fn still_checking(&mut self) -> usize {
        self.short = true;
        frame_budget::more_to_draw();
        self.rendered_len
    }

    /// The final check on this thread: the streamed rendering kept when it is exact, else the
    /// whole answer rendered (also what a helper thread that could not be had or died leaves).
    fn finish_here(&mut self, content: &str, cols: usize, theme: &Theme) -> usize {
        self.checking = None;
        let reused = !self.whole && self.rendered_len > 0 && self.finish(content, cols, theme);
        if !reused {
            self.replace_with_whole(render(content, cols, theme), content.len(), cols);
        }
        content.len()
    }

    /// The whole answer's rendering (of `len` bytes) replaces what streaming built.
    fn replace_with_whole(&mut self, lines: Vec<Line<'static>>, len: usize, cols: usize) {
        self.clear();
        self.cols = cols;
        self.push_lines(lines);
        self.stable_len = len;
        self.rendered_len = len;
        self.whole = true;
    }

    /// Where the streamed rendering was cut, for the final check.
    fn cut_points(&self) -> CutPoints {
        let open = self.growing.as_ref().map(|o| Grown { kind: o.block.kind(), first: o.first, last: None });
        CutPoints {
            cuts: self.cuts.clone(),
            fences: self.fences.iter().chain(self.fence.as_ref().map(|f| &f.cut)).cloned().collect(),
            grown: self.grown.iter().copied().chain(open).collect(),
            last_line: self.line_no.saturating_sub(1),
        }
    }
}

/// Where a streamed rendering was cut: lines between pieces, and fences and other blocks
/// rendered line by line (the last one perhaps still open at `last_line`).
struct CutPoints {
    cuts: Vec<usize>,
    fences: Vec<FenceCut>,
    grown: Vec<Grown>,
    last_line: usize,
}

impl CutPoints {
    /// Whether every cut falls between top-level blocks of the whole answer, every fence
    /// rendered line by line is one of its code blocks, whole, and every other block rendered
    /// line by line is one of its blocks of that kind, whole (a paragraph, with no inline
    /// element across its lines).
    fn exact(&self, content: &str) -> bool {
        let Some(blocks) = markdown::top_level(&sanitize(content)) else { return false };
        let on = |first: usize, last: Option<usize>| {
            markdown::starting_at(&blocks, first).filter(|b| b.last == last.unwrap_or(self.last_line))
        };
        self.cuts.iter().all(|&l| markdown::is_cut(&blocks, l))
            && self.fences.iter().all(|f| on(f.first, f.last).is_some_and(|b| b.fence.as_ref() == Some(&f.lang)))
            && self.grown.iter().all(|g| {
                let read_alone = |b: &markdown::TopBlock| g.kind != BlockKind::Paragraph || !b.crossing;
                on(g.first, g.last).is_some_and(|b| b.kind == Some(g.kind) && read_alone(b))
            })
    }
}

impl OpenFence {
    /// Whether `line` closes this fence: the same character, at least as many, indented at most
    /// three spaces, nothing after but spaces.
    fn closes(&self, line: &str) -> bool {
        let t = line.trim_start_matches(' ');
        let n = t.bytes().take_while(|&b| b == self.marker).count();
        line.len() - t.len() <= 3 && n >= self.count && t[n..].trim_matches([' ', '\t']).is_empty()
    }
}

fn render(text: &str, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    let text = sanitize(text);
    if text.trim().is_empty() {
        return Vec::new();
    }
    wrap::fit(markdown::render(&text, u16::try_from(cols).unwrap_or(u16::MAX), theme), cols)
}

#[cfg(test)]
#[path = "stream_md_tests.rs"]
mod tests;
