//! Markdown to ratatui lines: parsing (pulldown-cmark), block layout, prefixes for
//! quotes and lists, and code blocks. Wrapping lives in `wrap`, tables in `table`,
//! highlighting in `super::highlight`.
//!
//! Guarantees callers rely on: every output line is at most `width` display columns,
//! every piece of text has been through [`sanitize`], and all styles come from the
//! theme. Text that is still streaming renders sensibly (an open code fence is a code
//! block).

mod blocks;
mod code;
mod para;
mod parts;
mod table;
#[cfg(test)]
mod tests;
mod wrap;

pub use blocks::{TopBlock, is_cut, starting_at, top_level};
pub use code::CodeRows;
pub use code::{base as code_base, highlighted as highlighted_rows, plain as plain_rows};
pub use para::Paragraph;
pub use parts::{ListShape, inline_runs, list_item, list_shape, table_of};
pub use table::{Columns as TableColumns, Measure as CellMeasure, Table, head_cells, measure as measure_cell};

use super::sanitize::sanitize;
use super::theme::{Role, Theme};
pub use crate::text::code::{CodeBlock, code_blocks};
use crate::text::code::{lang_token, options};
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;
use wrap::{Run, Spans, clamp};

/// Renders complete markdown text wrapped to `width` columns.
#[must_use]
pub fn render(text: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    if width == 0 {
        return Vec::new();
    }
    // Sanitizing up front removes whole escape sequences before the parser can split
    // them into separate text events; each event is sanitized again because character
    // references (`&#27;`) can still produce controls.
    let text = sanitize(text);
    let mut r = Renderer::new(usize::from(width), theme);
    for event in Parser::new_ext(&text, options()) {
        r.event(event);
    }
    r.flush();
    r.out
}

/// A line of a top-level block as [`render`] emits it for `width` columns (no quote or list
/// prefix): for pieces rendered outside the renderer, such as a streamed code block's rows.
#[must_use]
pub fn top_line(spans: Vec<Span<'static>>, width: u16) -> Line<'static> {
    Line::from(clamp(spans, usize::from(width)))
}

/// A block that prefixes the lines inside it.
enum Container {
    Quote,
    /// A list item; `pending` until its marker has been drawn on a first line.
    Item {
        marker: String,
        width: usize,
        pending: bool,
    },
}

struct Renderer<'t> {
    theme: &'t Theme,
    width: usize,
    out: Vec<Line<'static>>,
    containers: Vec<Container>,
    /// Next number of each open list (`None` for bullet lists).
    lists: Vec<Option<u64>>,
    runs: Vec<Run>,
    styles: Vec<Style>,
    /// Open links/images: destination and the index of their first run.
    links: Vec<(String, usize)>,
    /// A block just ended; the next block starts after a blank line.
    pending_gap: bool,
    /// Rows were drawn before this renderer's (it renders one item of a list on its own), so a
    /// gap is drawn even before its first row.
    earlier: bool,
    code: Option<(String, String)>,
    table: Option<table::Table>,
    row: Vec<Vec<Run>>,
    /// The source was sanitized and holds no character reference (`&#27;`), so its text
    /// events are already clean: a streamed line is then sanitized once, not twice.
    clean_source: bool,
}

impl<'t> Renderer<'t> {
    fn new(width: usize, theme: &'t Theme) -> Self {
        Self {
            theme,
            width,
            out: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            runs: Vec::new(),
            styles: Vec::new(),
            links: Vec::new(),
            pending_gap: false,
            earlier: false,
            code: None,
            table: None,
            row: Vec::new(),
            clean_source: false,
        }
    }

    /// A renderer for `doc`, which was sanitized: its text events are then clean unless a
    /// character reference (`&#27;`) decodes to something the sanitizer must see.
    fn on_sanitized(width: usize, theme: &'t Theme, doc: &str) -> Self {
        Self { clean_source: !doc.contains('&'), ..Self::new(width, theme) }
    }

    fn role(&self, role: Role) -> Style {
        self.theme.style(role)
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_else(|| {
            let base = self.role(Role::Base);
            if self.containers.iter().any(|c| matches!(c, Container::Quote)) {
                base.patch(self.role(Role::Quote))
            } else {
                base
            }
        })
    }

    fn push_style(&mut self, patch: Style) {
        let s = self.style().patch(patch);
        self.styles.push(s);
    }

    fn text(&mut self, text: &str, style: Style) {
        let clean = if self.clean_source { text.into() } else { sanitize(text) };
        if !clean.is_empty() {
            self.runs.push((clean.into_owned(), style));
        }
    }

    fn in_item(&self) -> bool {
        matches!(self.containers.last(), Some(Container::Item { .. }))
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => match &mut self.code {
                Some((_, code)) => code.push_str(&t),
                None => self.text(&t, self.style()),
            },
            Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                let style = self.style().patch(self.role(Role::InlineCode));
                if self.theme.no_color() {
                    // Without colour, only the backticks tell code from prose.
                    self.text(&format!("`{t}`"), style);
                } else {
                    self.text(&t, style);
                }
            }
            Event::Html(t) | Event::InlineHtml(t) => self.text(&t, self.style().patch(self.role(Role::Dim))),
            Event::FootnoteReference(t) => self.text(&format!("[^{t}]"), self.role(Role::Link)),
            Event::SoftBreak => self.runs.push((" ".to_owned(), self.style())),
            Event::HardBreak => self.runs.push(("\n".to_owned(), self.style())),
            Event::Rule => {
                self.begin_block();
                let rule = "─".repeat(self.text_width());
                self.emit(vec![Span::styled(rule, self.role(Role::Rule))]);
                self.pending_gap = true;
            }
            Event::TaskListMarker(done) => {
                let (mark, role) = if done { ("[x] ", Role::Success) } else { ("[ ] ", Role::Dim) };
                self.runs.push((mark.to_owned(), self.role(role)));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Emphasis => self.push_style(self.role(Role::Emphasis)),
            Tag::Strong => self.push_style(self.role(Role::Strong)),
            // No role for struck text: dim it and cross it out.
            Tag::Strikethrough => self.push_style(self.role(Role::Dim).add_modifier(Modifier::CROSSED_OUT)),
            Tag::Superscript | Tag::Subscript => self.push_style(Style::new()),
            Tag::Link { dest_url, .. } => {
                self.push_style(self.role(Role::Link));
                self.links.push((sanitize(&dest_url).into_owned(), self.runs.len()));
            }
            Tag::Image { dest_url, .. } => {
                self.push_style(self.role(Role::Link));
                self.runs.push(("[image: ".to_owned(), self.style()));
                self.links.push((sanitize(&dest_url).into_owned(), usize::MAX));
            }
            Tag::Paragraph | Tag::HtmlBlock => self.begin_block(),
            Tag::Heading { level, .. } => {
                // Shown as a heading, not as the `## ` that wrote it: the level is in the style
                // (underlined for the top level, italic below the second).
                self.begin_block();
                let extra = match level {
                    pulldown_cmark::HeadingLevel::H1 => Modifier::UNDERLINED,
                    pulldown_cmark::HeadingLevel::H2 => Modifier::empty(),
                    _ => Modifier::ITALIC,
                };
                self.push_style(self.role(Role::Heading).add_modifier(extra));
            }
            Tag::BlockQuote(_) => {
                self.begin_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.begin_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => sanitize(lang_token(&info)).into_owned(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.in_item() {
                    self.flush();
                } else {
                    self.begin_block();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n = n.saturating_add(1);
                        m
                    }
                    _ => {
                        let depth = self.lists.len().saturating_sub(1);
                        ["• ", "◦ ", "▪ "][depth % 3].to_owned()
                    }
                };
                let width = marker.width();
                self.containers.push(Container::Item { marker, width, pending: true });
            }
            Tag::Table(aligns) => {
                self.begin_block();
                self.table = Some(table::Table { aligns, ..table::Table::default() });
            }
            Tag::TableHead | Tag::TableRow => self.row.clear(),
            Tag::TableCell => self.runs.clear(),
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.begin_block(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Superscript | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => self.end_link(matches!(tag, TagEnd::Image)),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.end_block();
                self.containers.pop();
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.emit_code(&lang, &code);
                }
                self.pending_gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if !self.in_item() {
                    self.pending_gap = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                if matches!(self.containers.last(), Some(Container::Item { pending: true, .. })) {
                    self.emit(Vec::new());
                }
                self.containers.pop();
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.runs);
                self.row.push(cell);
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.head = std::mem::take(&mut self.row);
                }
            }
            TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(std::mem::take(&mut self.row));
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    for line in table::render(&t, self.text_width(), self.theme) {
                        self.emit(line);
                    }
                }
                self.pending_gap = true;
            }
            TagEnd::Paragraph
            | TagEnd::HtmlBlock
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => self.end_block(),
        }
    }

    fn end_link(&mut self, image: bool) {
        self.styles.pop();
        let Some((dest, start)) = self.links.pop() else { return };
        if image {
            self.runs.push(("]".to_owned(), self.style().patch(self.role(Role::Link))));
        }
        let shown: String = self.runs.get(start..).unwrap_or_default().iter().map(|(t, _)| t.as_str()).collect();
        let same = shown == dest || dest.strip_prefix("mailto:") == Some(shown.as_str());
        if !dest.is_empty() && !same {
            self.runs.push((format!(" ({dest})"), self.role(Role::Dim)));
        }
    }

    fn begin_block(&mut self) {
        self.flush();
        if self.pending_gap && (self.earlier || !self.out.is_empty()) {
            // Quote gutters continue through the gap; list indents are just spaces.
            let mut prefix = String::new();
            if self.prefix_width() < self.width {
                for c in &self.containers {
                    match c {
                        Container::Quote => prefix.push_str("│ "),
                        Container::Item { width, .. } => prefix.push_str(&" ".repeat(*width)),
                    }
                }
            }
            let gutter = prefix.trim_end();
            self.out.push(if gutter.is_empty() {
                Line::default()
            } else {
                Line::from(Span::styled(gutter.to_owned(), self.role(Role::Quote)))
            });
        }
        self.pending_gap = false;
    }

    fn end_block(&mut self) {
        self.flush();
        self.pending_gap = true;
    }

    /// Wraps and emits the pending inline runs.
    fn flush(&mut self) {
        if self.runs.is_empty() || self.table.is_some() {
            return;
        }
        let runs = std::mem::take(&mut self.runs);
        for line in wrap::wrap(&runs, self.text_width()) {
            self.emit(line);
        }
        self.pending_gap = false;
    }

    fn prefix_width(&self) -> usize {
        self.containers
            .iter()
            .map(|c| match c {
                Container::Quote => 2,
                Container::Item { width, .. } => *width,
            })
            .sum()
    }

    /// Columns left for content. Prefixes are dropped when they would leave no room.
    fn text_width(&self) -> usize {
        let p = self.prefix_width();
        if p < self.width { self.width - p } else { self.width }
    }

    fn emit(&mut self, content: Spans) {
        let show_prefix = self.prefix_width() < self.width;
        let (quote, accent) = (self.role(Role::Quote), self.role(Role::Accent));
        let mut spans: Spans = Vec::with_capacity(content.len() + self.containers.len());
        for c in &mut self.containers {
            match c {
                Container::Quote => spans.push(Span::styled("│ ", quote)),
                Container::Item { marker, width, pending } => {
                    if *pending {
                        spans.push(Span::styled(marker.clone(), accent));
                    } else {
                        spans.push(Span::raw(" ".repeat(*width)));
                    }
                    *pending = false;
                }
            }
        }
        if !show_prefix {
            spans.clear();
        }
        spans.extend(content);
        self.out.push(Line::from(clamp(spans, self.width)));
    }

    fn emit_code(&mut self, lang: &str, code: &str) {
        let code = sanitize(code);
        let code = code.strip_suffix('\n').unwrap_or(&code);
        let width = self.text_width();
        if let Some(head) = CodeRows::head(lang, self.theme, width) {
            self.emit(head);
        }
        let mut rows = CodeRows::new(lang, self.theme, self.text_width());
        for line in code.split('\n') {
            rows.push(line);
        }
        for row in rows.finish() {
            self.emit(row);
        }
        if let Some(foot) = CodeRows::foot(self.theme, width) {
            self.emit(foot);
        }
    }
}
