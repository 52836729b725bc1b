//! Headless answers rendered for a terminal: `palaver -p` on a terminal prints the answer as the
//! chat screen shows it (headings, emphasis, lists, tables, highlighted code, wrapped to the
//! terminal's width) instead of raw markdown, streaming line by line, and a one-line footer
//! (model, tokens, time) on stderr. Stdout that is not a terminal keeps the raw bytes unless
//! `--render always` asks; `--render never` keeps them on a terminal too.
//!
//! The markdown itself is laid out by `ui::markdown::render` (the chat screen's renderer, used
//! through its public function only); this module decides what is safe to print while the
//! answer is still arriving, and turns styled lines into ANSI escapes.
//!
//! Streaming: a blank line outside a code fence closes a block, and a closed block is rendered
//! and printed whole. Of the block still open, every rendered line but the last is printed as
//! soon as its source line completes (appending words only changes the last wrapped line);
//! a block that may be a table waits until it closes, because a table's column widths depend
//! on every row.

use super::args::RenderArg;
use crate::ui::markdown;
use crate::ui::theme::Theme;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use std::io::{IsTerminal, Write};

/// Width used by `--render always` when stdout is not a terminal.
const DEFAULT_WIDTH: u16 = 80;

/// Renders one answer at a time for a terminal.
pub struct TermRender {
    width: u16,
    theme: Theme,
    /// Whether to write colours and styles (false gives plain text with the same layout).
    styled: bool,
    a: Answer,
    /// When the run started, for the footer's time.
    started: std::time::Instant,
}

/// Where the current answer stands.
#[derive(Default)]
struct Answer {
    /// The answer so far.
    text: String,
    /// Where the open block starts.
    block_start: usize,
    /// Lines of the open block already printed.
    printed: usize,
    /// Scanner: bytes of complete lines examined.
    scanned: usize,
    /// Whether anything was printed (blocks after the first are separated by a blank line).
    any: bool,
    /// The code fence being printed, when inside one.
    fence: Option<Fence>,
}

/// A fenced code block is its own block, printed a source line at a time: re-rendering the
/// whole block for every line would cost the square of its length.
struct Fence {
    /// The opening line (with its newline), e.g. "```rust\n".
    opener: String,
    /// What closes it ("```" or "~~~", as long as the opener's).
    closer: String,
    /// Where the code not yet printed starts.
    code_from: usize,
    /// Lines the renderer puts before the code (the language label or a rule) and after it.
    head: usize,
    foot: usize,
}

/// The renderer `--render` and the terminal call for, or `None` for raw output. `--json`
/// output is never rendered.
#[must_use]
pub fn for_stdout(render: Option<RenderArg>, json: bool) -> Option<TermRender> {
    let tty = std::io::stdout().is_terminal();
    let on = match render.unwrap_or(RenderArg::Auto) {
        RenderArg::Never => false,
        RenderArg::Always => true,
        RenderArg::Auto => tty,
    };
    if !on || json {
        return None;
    }
    let paths = crate::config::Paths::from_env();
    let cfg = crate::config::Config::load(&paths).unwrap_or_default();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let wanted = cfg.theme.clone().unwrap_or_else(|| "dark".to_owned());
    let theme = Theme::load(&wanted, Some(&paths.themes_dir()), no_color)
        .or_else(|_| Theme::load("dark", None, no_color))
        .ok()?;
    let term = if tty { crossterm::terminal::size().ok().map(|(w, _)| w).filter(|w| *w > 0) } else { None };
    let cap = cfg.prose_width.unwrap_or(crate::ui::transcript::DEFAULT_PROSE_WIDTH);
    let width = term.unwrap_or(DEFAULT_WIDTH);
    let width = if cap == 0 { width } else { width.min(cap.max(20)) };
    Some(TermRender::new(width, theme, true))
}

impl TermRender {
    #[must_use]
    pub fn new(width: u16, theme: Theme, styled: bool) -> Self {
        Self { width: width.max(1), theme, styled, a: Answer::default(), started: std::time::Instant::now() }
    }

    /// Takes a piece of the answer; prints whatever became safe to print.
    pub fn push(&mut self, delta: &str, out: &mut dyn Write) {
        self.a.text.push_str(delta);
        if !delta.contains('\n') {
            return;
        }
        let committed = self.a.text.rfind('\n').map_or(0, |i| i + 1);
        while self.a.scanned < committed {
            let pos = self.a.scanned;
            let end = self.a.text[pos..committed].find('\n').map_or(committed, |i| pos + i + 1);
            let line = self.a.text[pos..end].trim_end_matches(['\n', '\r']);
            let trimmed = line.trim_start();
            if let Some(f) = &self.a.fence {
                if trimmed.starts_with(f.closer.as_str()) && trimmed.trim_start_matches(['`', '~']).trim().is_empty() {
                    self.end_fence(pos, out);
                    self.a.block_start = end;
                }
            } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                self.close(pos, out);
                self.start_fence(pos, end);
            } else if line.trim().is_empty() {
                self.close(end, out);
            }
            self.a.scanned = end;
        }
        if self.a.fence.is_some() {
            self.fence_lines(committed, out);
        } else {
            self.open(committed, out);
        }
    }

    /// The answer is complete: prints the rest and gets ready for the next one.
    pub fn finish(&mut self, out: &mut dyn Write) {
        let end = self.a.text.len();
        if self.a.fence.is_some() {
            // An unterminated fence: its last line may lack a newline.
            if !self.a.text.ends_with('\n') {
                self.a.text.push('\n');
            }
            self.end_fence(self.a.text.len(), out);
        } else {
            self.close(end, out);
        }
        self.a = Answer::default();
    }

    fn start_fence(&mut self, pos: usize, end: usize) {
        let opener = self.a.text[pos..end].trim_start().to_owned();
        let mark = opener.chars().next().unwrap_or('`');
        let closer: String = opener.chars().take_while(|c| *c == mark).collect();
        // Where the code sits among the rendered lines, found with one line of probe code.
        let probe = self.render(&format!("{opener}\u{2063}\n{closer}\n"));
        let at = probe.iter().position(|l| line_text(l).contains('\u{2063}')).unwrap_or(0);
        let foot = probe.len().saturating_sub(at + 1);
        self.a.fence = Some(Fence { opener, closer, code_from: end, head: at, foot });
        self.a.block_start = pos;
    }

    /// Prints the fence's code lines that completed up to `upto`.
    fn fence_lines(&mut self, upto: usize, out: &mut dyn Write) {
        let Some(f) = &self.a.fence else { return };
        if upto <= f.code_from {
            return;
        }
        let src = format!("{}{}{}\n", f.opener, &self.a.text[f.code_from..upto], f.closer);
        let (head, foot) = (f.head, f.foot);
        let lines = self.render(&src);
        let from = if self.a.printed == 0 { 0 } else { head.min(lines.len()) };
        let to = lines.len().saturating_sub(foot).max(from);
        self.print(&lines[from..to], out);
        if let Some(f) = &mut self.a.fence {
            f.code_from = upto;
        }
    }

    /// The fence closes at `pos` (the closing line's start): prints its last lines and the foot.
    fn end_fence(&mut self, pos: usize, out: &mut dyn Write) {
        self.fence_lines(pos, out);
        let Some(f) = self.a.fence.take() else { return };
        if self.a.printed == 0 {
            // An empty block: render it whole.
            let lines = self.render(&format!("{}{}\n", f.opener, f.closer));
            self.print(&lines, out);
        } else if f.foot > 0 {
            let lines = self.render(&format!("{}\u{2063}\n{}\n", f.opener, f.closer));
            let from = lines.len().saturating_sub(f.foot);
            self.print(&lines[from..], out);
        }
        self.a.printed = 0;
    }

    /// Whether nothing of the current answer has arrived.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.a.text.is_empty()
    }

    /// Milliseconds since the renderer was made (the run's wall time, for the footer).
    #[must_use]
    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The width answers are wrapped to.
    #[must_use]
    pub fn width(&self) -> u16 {
        self.width
    }

    /// Whether colours and styles are written.
    #[must_use]
    pub fn styled(&self) -> bool {
        self.styled
    }

    /// `text` in the theme's `role` (plus `add`) as SGR escapes, spaces kept; the text alone
    /// when unstyled. The text must already be sanitised.
    #[must_use]
    pub fn paint(&self, role: crate::config::theme::Role, add: Modifier, text: &str) -> String {
        let sgr = if self.styled { sgr(self.theme.style(role).add_modifier(add)) } else { String::new() };
        if sgr.is_empty() || text.is_empty() { text.to_owned() } else { format!("\x1b[{sgr}m{text}\x1b[0m") }
    }

    fn render(&self, src: &str) -> Vec<Line<'static>> {
        if src.trim().is_empty() {
            return Vec::new();
        }
        markdown::render(src, self.width, &self.theme)
    }

    /// The block from `block_start` to `end` is closed: prints what is left of it.
    fn close(&mut self, end: usize, out: &mut dyn Write) {
        let lines = self.render(&self.a.text[self.a.block_start..end]);
        let from = self.a.printed.min(lines.len());
        self.print(&lines[from..], out);
        self.a.block_start = end;
        self.a.printed = 0;
    }

    /// The open block up to `committed`: prints its stable lines.
    fn open(&mut self, committed: usize, out: &mut dyn Write) {
        let src = &self.a.text[self.a.block_start..committed];
        if may_be_table(src) {
            return;
        }
        let lines = self.render(src);
        let stable = lines.len().saturating_sub(1);
        if stable > self.a.printed {
            let from = self.a.printed;
            self.print(&lines[from..stable], out);
        }
    }

    fn print(&mut self, lines: &[Line<'static>], out: &mut dyn Write) {
        if lines.is_empty() {
            return;
        }
        if self.a.printed == 0 && self.a.any {
            let _ = out.write_all(b"\n");
        }
        for l in lines {
            let _ = out.write_all(ansi(l, self.styled).as_bytes());
            let _ = out.write_all(b"\n");
        }
        self.a.any = true;
        self.a.printed += lines.len();
    }
}

fn line_text(l: &Line<'_>) -> String {
    l.spans.iter().map(|s| s.content.as_ref()).collect()
}

/// A block whose lines start with `|` may be a table once its delimiter row arrives.
fn may_be_table(src: &str) -> bool {
    let mut fence = false;
    src.lines().any(|l| {
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
        }
        !fence && t.starts_with('|')
    })
}

/// One styled line as text with SGR escapes (reset at the end), or plain when `styled` is off.
#[must_use]
pub fn ansi(line: &Line<'_>, styled: bool) -> String {
    let mut s = String::new();
    for span in &line.spans {
        let style = line.style.patch(span.style);
        let sgr = if styled { sgr(style) } else { String::new() };
        if sgr.is_empty() {
            s.push_str(&span.content);
        } else {
            s.push_str(&format!("\x1b[{sgr}m{}\x1b[0m", span.content));
        }
    }
    let trimmed = s.trim_end_matches(' ').len();
    s.truncate(trimmed);
    s
}

fn sgr(style: Style) -> String {
    let mut codes: Vec<String> = Vec::new();
    let m = style.add_modifier;
    for (flag, code) in [
        (Modifier::BOLD, "1"),
        (Modifier::DIM, "2"),
        (Modifier::ITALIC, "3"),
        (Modifier::UNDERLINED, "4"),
        (Modifier::REVERSED, "7"),
        (Modifier::CROSSED_OUT, "9"),
    ] {
        if m.contains(flag) {
            codes.push(code.to_owned());
        }
    }
    if let Some(c) = style.fg.and_then(|c| color(c, false)) {
        codes.push(c);
    }
    if let Some(c) = style.bg.and_then(|c| color(c, true)) {
        codes.push(c);
    }
    codes.join(";")
}

fn color(c: Color, bg: bool) -> Option<String> {
    let base = if bg { 40 } else { 30 };
    let named = |n: u8| Some((base + n).to_string());
    let bright = |n: u8| Some((base + 60 + n).to_string());
    match c {
        Color::Reset => None,
        Color::Black => named(0),
        Color::Red => named(1),
        Color::Green => named(2),
        Color::Yellow => named(3),
        Color::Blue => named(4),
        Color::Magenta => named(5),
        Color::Cyan => named(6),
        Color::Gray => named(7),
        Color::DarkGray => bright(0),
        Color::LightRed => bright(1),
        Color::LightGreen => bright(2),
        Color::LightYellow => bright(3),
        Color::LightBlue => bright(4),
        Color::LightMagenta => bright(5),
        Color::LightCyan => bright(6),
        Color::White => bright(7),
        Color::Rgb(r, g, b) => Some(format!("{};2;{r};{g};{b}", base + 8)),
        Color::Indexed(i) => Some(format!("{};5;{i}", base + 8)),
    }
}

/// The footer a rendered answer gets on stderr: model, tokens, time, and what stopped the
/// reply when it did not simply end (`stop`: "⚠ cut by the token limit", painted by the caller).
#[must_use]
pub fn footer(
    model: &str,
    usage: Option<&serde_json::Value>,
    total_ms: Option<u64>,
    stop: Option<&str>,
    styled: bool,
) -> String {
    // The model's name comes from the wire or the user: no escapes reach the terminal.
    use crate::ui::fmt::{duration, thousands};
    let mut parts = vec![crate::ui::sanitize::sanitize(model).into_owned()];
    let view = usage.map(crate::engine::usage::UsageView::from_raw);
    match view.as_ref().map(|u| (u.prompt, u.completion)) {
        Some((Some(p), Some(c))) => parts.push(format!("{} in · {} out tokens", thousands(p), thousands(c))),
        Some((_, Some(c))) => parts.push(format!("{} tokens", thousands(c))),
        _ => parts.push("no token counts".to_owned()),
    }
    if let Some(ms) = total_ms {
        parts.push(duration(ms));
    }
    let text = format!("─ {}", parts.join(" · "));
    let text = if styled { format!("\x1b[2m{text}\x1b[0m") } else { text };
    match stop {
        Some(mark) => format!("{text} · {mark}"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str, pieces: usize) -> String {
        let theme = Theme::load("dark", None, true).unwrap();
        let mut r = TermRender::new(60, theme, false);
        let mut out = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        for chunk in chars.chunks(pieces.max(1)) {
            r.push(&chunk.iter().collect::<String>(), &mut out);
        }
        r.finish(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    const DOC: &str = "## A quick tour\n\nThis answer is **scripted**, so it looks the same every time.\n\n- **Bold** and *italic* text\n- Inline `code` spans\n\n| Model | What it shows |\n|---|---|\n| `demo-tools` | Parallel tool calls |\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nAsk another question.";

    #[test]
    fn renders_markdown_as_the_screen_does_whatever_the_pieces() {
        let whole = plain(DOC, usize::MAX);
        assert!(!whole.contains("**") && !whole.contains("```") && !whole.contains("|---"), "{whole}");
        assert!(whole.contains("A quick tour") && whole.contains("• Bold and italic text"), "{whole}");
        assert!(whole.contains("│ `demo-tools` │"), "{whole}");
        for n in [1, 2, 3, 7, 40] {
            assert_eq!(plain(DOC, n), whole, "split every {n} characters");
        }
    }

    #[test]
    fn prints_a_line_as_soon_as_it_is_safe_and_holds_tables() {
        let theme = Theme::load("dark", None, true).unwrap();
        let mut r = TermRender::new(60, theme, false);
        let mut out = Vec::new();
        r.push("# Title\n\nFirst paragraph.\n\n", &mut out);
        let s = String::from_utf8_lossy(&out).into_owned();
        assert!(s.contains("Title") && s.contains("First paragraph."), "{s}");
        r.push("| a | b |\n|---|---|\n| 1 | 2 |\n", &mut out);
        assert!(!String::from_utf8_lossy(&out).contains("│ a"), "a table waits for its end");
        r.push("\nafter\n", &mut out);
        assert!(String::from_utf8_lossy(&out).contains("│ a"));
        r.push("```\nline one\nline two\n", &mut out);
        assert!(String::from_utf8_lossy(&out).contains("line one"), "code lines stream");
    }

    #[test]
    fn escapes_from_the_wire_never_reach_the_terminal() {
        let out = plain("hi \x1b]52;c;ZXZpbA==\x07there \x1b[2J\u{9b}31m\n\n```\ncode\x1b[1m\n```\n", 3);
        assert!(!out.contains('\x1b') && !out.contains('\u{9b}') && !out.contains('\x07'), "{out:?}");
        assert!(out.contains("hi") && out.contains("there"), "{out}");
    }

    #[test]
    fn a_long_code_block_streams_in_reasonable_time() {
        let code: String = (0..600).map(|i| format!("    let x{i} = \"{i}\"; // line {i}\n")).collect();
        let doc = format!("```rust\nfn main() {{\n{code}}}\n```\n");
        let started = std::time::Instant::now();
        let out = plain(&doc, 16);
        assert!(out.contains("line 599"));
        eprintln!("600 code lines streamed in {:?}", started.elapsed());
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    }

    #[test]
    fn ansi_styles_and_no_trailing_blanks() {
        let line = Line::from(vec![
            ratatui::text::Span::styled("bold", Style::new().add_modifier(Modifier::BOLD).fg(Color::Rgb(1, 2, 3))),
            ratatui::text::Span::raw("  "),
        ]);
        assert_eq!(ansi(&line, true), "\x1b[1;38;2;1;2;3mbold\x1b[0m");
        assert_eq!(ansi(&line, false), "bold");
    }
}
