//! The composer: a ratatui-textarea draft plus prompt history. It edits text and walks history;
//! deciding what Enter means is the key handler's job.

use ratatui_textarea::{CursorMove, TextArea, WrapMode};

/// A paste of at least this many lines (or bytes) shows as one chip rather than as its text.
const CHIP_LINES: usize = 20;
const CHIP_BYTES: usize = 8 * 1024;

/// Sent drafts with chips kept for ↑ (each holds its pastes' text).
const KEEP_CHIPPED: usize = 16;

/// The draft being typed and the prompts sent before.
#[derive(Debug, Clone)]
pub struct Composer {
    pub area: TextArea<'static>,
    history: Vec<String>,
    /// Position in `history` while walking it; `None` when not walking.
    walk: Option<usize>,
    /// Big pastes held out of the text area: (the chip that stands for it in the draft, the
    /// text). The draft's text has them put back.
    pastes: Vec<(String, String)>,
    /// The newest prompts sent with chips: (the text sent, the draft), so ↑ brings one back as
    /// it was typed, as a failed send does.
    chipped: Vec<(String, Draft)>,
    /// The `/` menu over the draft (`app::slash_menu`).
    pub menu: super::slash_menu::Menu,
}

/// A draft as the user left it: its text with the chips in it, and what each chip holds. A
/// failed send gives it back whole (the big pastes as chips, not as thousands of lines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Draft {
    /// The text area's lines joined, chips as their labels.
    shown: String,
    /// (chip, pasted text) for every chip in `shown`.
    pastes: Vec<(String, String)>,
}

/// `[pasted 2,000 lines · 184 KB · ~61k tokens]`: size and a rough token count (as the context
/// meter counts a paste) before anything is sent.
#[must_use]
pub fn chip(n: usize, text: &str) -> String {
    let lines = text.lines().count();
    let tokens = crate::engine::compact::text_bytes_tokens(text.len() as u64);
    let tokens = if tokens >= 1000 { format!("~{}k", (tokens + 500) / 1000) } else { format!("~{tokens}") };
    let number = if n > 1 { format!(" #{n}") } else { String::new() };
    format!(
        "[pasted{number} {} lines · {} · {tokens} tokens]",
        crate::text::fmt::thousands(u64::try_from(lines).unwrap_or(u64::MAX)),
        crate::text::fmt::size(text.len())
    )
}

impl Default for Composer {
    fn default() -> Self {
        Self::new()
    }
}

impl Composer {
    #[must_use]
    pub fn new() -> Self {
        Self {
            area: fresh_area(),
            history: Vec::new(),
            walk: None,
            pastes: Vec::new(),
            chipped: Vec::new(),
            menu: super::slash_menu::Menu::default(),
        }
    }

    /// The draft as one string, big pastes put back in place of their chips.
    #[must_use]
    pub fn text(&self) -> String {
        let mut text = self.area.lines().join("\n");
        // Every copy of a chip stands for its text (vim's `yy` `p` puts a second one).
        for (label, pasted) in &self.pastes {
            if text.contains(label.as_str()) {
                text = text.replace(label.as_str(), pasted);
            }
        }
        text
    }

    /// The chips in the draft, for the composer's title: how many, and their total size.
    #[must_use]
    pub fn pasted(&self) -> Option<(usize, usize)> {
        let draft = self.area.lines().join("\n");
        let shown: Vec<&(String, String)> = self.pastes.iter().filter(|(l, _)| draft.contains(l.as_str())).collect();
        (!shown.is_empty()).then(|| (shown.len(), shown.iter().map(|(_, t)| t.len()).sum()))
    }

    /// The draft as it stands, chips and all, for [`Composer::restore`].
    #[must_use]
    pub fn draft(&self) -> Draft {
        let shown = self.area.lines().join("\n");
        let pastes = self.pastes.iter().filter(|(l, _)| shown.contains(l.as_str())).cloned().collect();
        Draft { shown, pastes }
    }

    /// Puts back a draft taken with [`Composer::draft`], cursor at the end.
    pub fn restore(&mut self, draft: Draft) {
        self.pastes = draft.pastes;
        self.set_text(&draft.shown);
    }

    /// Opens the chips: their text goes into the draft itself.
    pub fn expand_pastes(&mut self) -> bool {
        if self.pasted().is_none() {
            return false;
        }
        let text = self.text();
        self.pastes.clear();
        self.set_text(&text);
        true
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.area.is_empty()
    }

    /// Number of lines in the draft.
    #[must_use]
    pub fn line_count(&self) -> usize {
        self.area.lines().len()
    }

    /// Replaces the draft, cursor at the end. Keeps the area's styling; the chips no longer in
    /// it are let go.
    pub fn set_text(&mut self, text: &str) {
        self.replace_text(text);
        self.pastes.retain(|(label, _)| text.contains(label.as_str()));
    }

    /// Replaces the draft as an edit of it (vim's `dd`, `u`, `p`): the chips it took out stay
    /// known, so putting one back (`p`, undo) brings back its text, not its label. They go
    /// with the next [`Composer::set_text`] (a send, a cleared draft).
    pub fn edit_text(&mut self, text: &str) {
        self.replace_text(text);
    }

    fn replace_text(&mut self, text: &str) {
        let style = self.area.style();
        let placeholder = self.area.placeholder_text().to_owned();
        let placeholder_style = self.area.placeholder_style();
        let cursor_style = self.area.cursor_style();
        let lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
        self.area = TextArea::new(lines);
        self.area.set_wrap_mode(WrapMode::WordOrGlyph);
        self.area.set_cursor_line_style(ratatui::style::Style::default());
        self.area.set_style(style);
        self.area.set_cursor_style(cursor_style);
        self.area.set_placeholder_text(placeholder);
        if let Some(s) = placeholder_style {
            self.area.set_placeholder_style(s);
        }
        self.area.move_cursor(CursorMove::Bottom);
        self.area.move_cursor(CursorMove::End);
        self.walk = None;
    }

    pub fn clear(&mut self) {
        self.set_text("");
    }

    /// Inserts pasted text at the cursor. Carriage returns become newlines; other control
    /// characters are dropped so a paste cannot smuggle escapes into the draft.
    pub fn paste(&mut self, text: &str) {
        let clean: String = text
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .chars()
            .filter(|c| *c == '\n' || *c == '\t' || !c.is_control())
            .collect();
        self.walk = None;
        if is_big(&clean) {
            // Thousands of lines in the text area would bury the draft and slow every key.
            let label = chip(self.pastes.len() + 1, &clean);
            self.area.insert_str(&label);
            self.pastes.push((label, clean));
            return;
        }
        self.area.insert_str(clean);
    }

    /// Feeds a key to the text area; any edit stops a history walk.
    pub fn input(&mut self, key: crossterm::event::KeyEvent) {
        if self.area.input(key) {
            self.walk = None;
        }
    }

    /// Readline Ctrl+A: to the start of the line.
    pub fn line_start(&mut self) {
        self.area.move_cursor(CursorMove::Head);
    }

    /// Readline Ctrl+E: to the end of the line.
    pub fn line_end(&mut self) {
        self.area.move_cursor(CursorMove::End);
    }

    /// Readline Ctrl+U: deletes from the cursor to the start of the line.
    pub fn kill_line(&mut self) {
        if self.area.delete_line_by_head() {
            self.walk = None;
        }
    }

    /// Readline Ctrl+W: deletes the word before the cursor.
    pub fn kill_word(&mut self) {
        if self.area.delete_word() {
            self.walk = None;
        }
    }

    pub fn newline(&mut self) {
        self.area.insert_newline();
        self.walk = None;
    }

    /// Records a sent prompt (no immediate duplicates); sent from a draft with chips, the
    /// draft is kept so ↑ brings the chips back.
    pub fn remember(&mut self, text: &str) {
        if !text.trim().is_empty() && self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_owned());
        }
        let draft = self.draft();
        if !draft.pastes.is_empty() && self.text() == text {
            self.chipped.retain(|(t, _)| t != text);
            self.chipped.push((text.to_owned(), draft));
            if self.chipped.len() > KEEP_CHIPPED {
                self.chipped.remove(0);
            }
        }
        self.walk = None;
    }

    /// Whether Up/Down should walk history rather than move the cursor: the draft is empty,
    /// or it is an untouched history entry.
    #[must_use]
    pub fn walking(&self) -> bool {
        self.is_empty() || self.walk.is_some()
    }

    /// Shows the previous (older) prompt. Returns false when there is none.
    pub fn history_prev(&mut self) -> bool {
        let next = match self.walk {
            None if self.history.is_empty() => return false,
            None => self.history.len() - 1,
            Some(0) => return false,
            Some(i) => i - 1,
        };
        self.show_history(next);
        true
    }

    /// Shows the next (newer) prompt, or an empty draft past the newest.
    pub fn history_next(&mut self) -> bool {
        match self.walk {
            None => false,
            Some(i) if i + 1 < self.history.len() => {
                self.show_history(i + 1);
                true
            }
            Some(_) => {
                self.clear();
                true
            }
        }
    }

    /// Shows history entry `i` as it was typed: its chips again, and a big prompt from an
    /// earlier session (its chips unknown) as one chip, as a paste of it would be.
    fn show_history(&mut self, i: usize) {
        let text = self.history[i].clone();
        match self.chipped.iter().find(|(t, _)| *t == text) {
            Some((_, draft)) => self.restore(draft.clone()),
            None if is_big(&text) => {
                self.set_text("");
                self.paste(&text);
            }
            None => self.set_text(&text),
        }
        self.walk = Some(i);
    }

    #[must_use]
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Puts prompts from earlier sessions (oldest first) before this session's own; a prompt
    /// that occurs again keeps only its newest place.
    pub fn seed_history(&mut self, older: Vec<String>) {
        let mut all: Vec<String> = older.into_iter().filter(|p| !p.trim().is_empty()).collect();
        all.append(&mut self.history);
        let mut seen = std::collections::HashSet::new();
        let mut kept: Vec<String> = all.into_iter().rev().filter(|p| seen.insert(p.clone())).collect();
        kept.reverse();
        // Indices moved: a walk in progress starts over (the draft keeps its text).
        self.walk = None;
        self.history = kept;
    }
}

/// Whether `text` is a chip rather than lines in the draft.
fn is_big(text: &str) -> bool {
    text.lines().count() >= CHIP_LINES || text.len() >= CHIP_BYTES
}

fn fresh_area() -> TextArea<'static> {
    let mut a = TextArea::default();
    a.set_wrap_mode(WrapMode::WordOrGlyph);
    a.set_cursor_line_style(ratatui::style::Style::default());
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_walk() {
        let mut c = Composer::new();
        c.remember("one");
        c.remember("two");
        assert!(c.walking());
        assert!(c.history_prev());
        assert_eq!(c.text(), "two");
        assert!(c.history_prev());
        assert_eq!(c.text(), "one");
        assert!(!c.history_prev());
        assert!(c.history_next());
        assert_eq!(c.text(), "two");
        assert!(c.history_next());
        assert_eq!(c.text(), "");
    }

    #[test]
    fn a_big_paste_is_one_chip_that_sends_its_text_and_can_be_opened() {
        let mut c = Composer::new();
        let big: String = (0..2000).map(|i| format!("line {i} of the log with some words in it\n")).collect();
        c.area.insert_str("look at this: ");
        c.paste(&big);
        assert_eq!(c.area.lines().len(), 1, "one chip, not 2,000 lines");
        let shown = c.area.lines().join("");
        assert!(shown.contains("[pasted 2,000 lines · 8"), "{shown}");
        assert!(shown.contains("tokens]"), "{shown}");
        assert_eq!(c.text(), format!("look at this: {big}"));
        assert_eq!(c.pasted(), Some((1, big.len())));
        assert!(c.expand_pastes());
        assert_eq!(c.area.lines().len(), 2001);
        assert_eq!(c.text(), format!("look at this: {big}"));
        assert_eq!(c.pasted(), None);
        // A small paste goes in as text.
        let mut c = Composer::new();
        c.paste("two\nlines");
        assert_eq!(c.area.lines().len(), 2);
        // Clearing drops held pastes.
        c.paste(&big);
        c.clear();
        assert_eq!(c.pasted(), None);
        assert_eq!(c.text(), "");
    }

    #[test]
    fn a_draft_comes_back_with_its_chips() {
        let mut c = Composer::new();
        let big: String = (0..500).map(|i| format!("log line {i}\n")).collect();
        c.area.insert_str("before ");
        c.paste(&big);
        c.area.insert_str(" after");
        let draft = c.draft();
        let sent = c.text();
        c.clear();
        assert_eq!(c.pasted(), None);
        c.restore(draft);
        assert_eq!(c.area.lines().len(), 1, "the paste is a chip again, not 500 lines");
        assert_eq!(c.pasted(), Some((1, big.len())));
        assert_eq!(c.text(), sent);
        // A second paste is numbered after the restored one.
        c.paste(&big);
        assert!(c.area.lines().join("").contains("[pasted #2 "), "{:?}", c.area.lines());
    }

    #[test]
    fn up_brings_a_sent_paste_back_as_its_chip() {
        let mut c = Composer::new();
        let big: String = (0..300).map(|i| format!("log line {i}\n")).collect();
        c.area.insert_str("why does this fail? ");
        c.paste(&big);
        let sent = c.text();
        c.remember(&sent);
        c.clear();
        c.remember("a short one");
        assert!(c.history_prev());
        assert_eq!(c.text(), "a short one");
        assert!(c.history_prev());
        assert_eq!(c.area.lines().len(), 1, "a chip, not 300 lines: {:?}", c.area.lines());
        assert!(c.area.lines()[0].starts_with("why does this fail? [pasted 300 lines"), "{:?}", c.area.lines());
        assert_eq!(c.text(), sent, "the chip still sends the paste");
        assert_eq!(c.pasted(), Some((1, big.len())));
        // Walking on keeps working from the restored chip.
        assert!(c.history_next());
        assert_eq!(c.text(), "a short one");
        // A big prompt from an earlier session (its chips unknown) comes back as one chip.
        let mut c = Composer::new();
        c.seed_history(vec![big.clone()]);
        assert!(c.history_prev());
        assert_eq!(c.area.lines().len(), 1);
        assert_eq!(c.text(), big);
    }

    #[test]
    fn paste_normalises_newlines_and_drops_controls() {
        let mut c = Composer::new();
        c.paste("a\r\nb\x1b[2Jc");
        assert_eq!(c.text(), "a\nb[2Jc");
    }
}
