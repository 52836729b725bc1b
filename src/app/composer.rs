//! The composer: a ratatui-textarea draft plus prompt history. It edits text and walks history;
//! deciding what Enter means is the key handler's job.

use ratatui_textarea::{CursorMove, TextArea, WrapMode};

/// The draft being typed and the prompts sent before.
#[derive(Debug, Clone)]
pub struct Composer {
    pub area: TextArea<'static>,
    history: Vec<String>,
    /// Position in `history` while walking it; `None` when not walking.
    walk: Option<usize>,
}

impl Default for Composer {
    fn default() -> Self {
        Self::new()
    }
}

impl Composer {
    #[must_use]
    pub fn new() -> Self {
        Self { area: fresh_area(), history: Vec::new(), walk: None }
    }

    /// The draft as one string.
    #[must_use]
    pub fn text(&self) -> String {
        self.area.lines().join("\n")
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

    /// Replaces the draft, cursor at the end. Keeps the area's styling.
    pub fn set_text(&mut self, text: &str) {
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
        self.area.insert_str(clean);
        self.walk = None;
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

    /// Records a sent prompt (no immediate duplicates).
    pub fn remember(&mut self, text: &str) {
        if !text.trim().is_empty() && self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_owned());
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

    fn show_history(&mut self, i: usize) {
        let text = self.history[i].clone();
        self.set_text(&text);
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
    fn paste_normalises_newlines_and_drops_controls() {
        let mut c = Composer::new();
        c.paste("a\r\nb\x1b[2Jc");
        assert_eq!(c.text(), "a\nb[2Jc");
    }
}
