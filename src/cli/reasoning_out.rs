//! Reasoning printed by a headless run. It goes to stderr so stdout stays the answer. Raw, it is
//! the text alone, as it arrived (sanitised); rendered for a terminal, it comes under a
//! `─ reasoning` label, dimmed in the theme's reasoning style, wrapped to the answer's width and
//! ended with a blank line, apart from the answer that follows.

use super::render::TermRender;
use super::wrap_stream::StreamWrap;
use crate::config::theme::Role;
use crate::text::sanitize::sanitize;
use ratatui::style::Modifier;
use std::io::IsTerminal;

/// The reasoning being printed.
#[derive(Debug, Default)]
pub struct ReasoningOut {
    /// Whether reasoning was printed since the answer (or anything else) last was.
    open: bool,
    /// Wraps it when rendered.
    wrap: Option<StreamWrap>,
}

impl ReasoningOut {
    /// Prints a piece of reasoning; `render` is the answer's renderer when rendering.
    pub fn push(&mut self, delta: &str, render: Option<&TermRender>) {
        let text = sanitize(delta);
        let Some(r) = render else {
            eprint!("{text}");
            self.open = true;
            return;
        };
        if !self.open {
            eprintln!("{}", paint(r, "─ reasoning", Modifier::DIM | Modifier::BOLD));
            self.open = true;
        }
        let wrap = self.wrap.get_or_insert_with(|| StreamWrap::new(r.width()));
        let mut placed = String::new();
        wrap.push(&text, &mut placed);
        eprint!("{}", paint(r, &placed, Modifier::DIM));
    }

    /// Ends the reasoning being printed, if any, before the answer or anything else on stderr.
    pub fn end(&mut self, render: Option<&TermRender>) {
        if !std::mem::take(&mut self.open) {
            return;
        }
        match (self.wrap.take(), render) {
            (Some(mut wrap), Some(r)) => {
                let ended = wrap.at_line_start();
                let mut rest = String::new();
                wrap.finish(&mut rest);
                // A blank line between the reasoning and the answer.
                eprint!("{}{}", paint(r, &rest, Modifier::DIM), if ended { "\n" } else { "\n\n" });
            }
            _ => eprintln!(),
        }
    }
}

/// `text` in the reasoning style when stderr is a terminal, else as it is.
fn paint(r: &TermRender, text: &str, add: Modifier) -> String {
    if std::io::stderr().is_terminal() { r.paint(Role::Reasoning, add, text) } else { text.to_owned() }
}
