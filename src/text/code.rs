//! Code blocks in markdown: the fenced blocks a user copies, and the language token after a
//! fence. The chat screen's renderer draws them; the app copies them (`b`).

use super::sanitize::{sanitize, sanitize_keep_tabs};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// The markdown extensions palaver reads everywhere it parses markdown.
#[must_use]
pub fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// The language token of a fence info string: "rust,ignore" → "rust", "{.py}" → "py".
#[must_use]
pub fn lang_token(info: &str) -> &str {
    info.trim()
        .split(|c: char| c.is_whitespace() || c == ',' || c == '{' || c == '}')
        .find(|t| !t.is_empty())
        .map_or("", |t| t.trim_start_matches('.'))
}

/// A fenced code block found in the text (for "copy code block").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    pub lang: String,
    pub code: String,
}

/// The fenced code blocks of `text`, in order, including one still open at the end.
///
/// The code is stripped of terminal controls (tabs kept) and of its final newline, so
/// pasting it into a shell does not run it.
#[must_use]
pub fn code_blocks(text: &str) -> Vec<CodeBlock> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                current = Some((sanitize(lang_token(&info)).into_owned(), String::new()));
            }
            Event::Text(t) => {
                if let Some((_, code)) = &mut current {
                    code.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((lang, code)) = current.take() {
                    let code = code.strip_suffix('\n').unwrap_or(&code);
                    blocks.push(CodeBlock { lang, code: sanitize_keep_tabs(code).into_owned() });
                }
            }
            _ => {}
        }
    }
    blocks
}

/// A markdown fence longer than any run of backticks in `text`, so a block holding `text`
/// cannot be closed early (exports and reports that quote untrusted text).
#[must_use]
pub fn fence(text: &str) -> String {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}
