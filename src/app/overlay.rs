//! Overlays as a stack: help, command palette, model picker, code-block picker. The top layer
//! gets keys first and answers whether it used them; what it ignores falls through to the
//! global bindings (so Ctrl+Q quits from anywhere).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// One pickable row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickItem {
    pub label: String,
    pub detail: String,
    /// What choosing it does: a command line for the palette, a model id, a block index.
    pub value: String,
}

/// A filterable list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Picker {
    pub query: String,
    pub selected: usize,
    pub items: Vec<PickItem>,
}

impl Picker {
    #[must_use]
    pub fn new(items: Vec<PickItem>) -> Self {
        Self { query: String::new(), selected: 0, items }
    }

    /// Indices of the items matching the query (every query word appears in label or detail).
    #[must_use]
    pub fn visible(&self) -> Vec<usize> {
        let words: Vec<String> = self.query.split_whitespace().map(str::to_lowercase).collect();
        // A word has no spaces, so it cannot straddle label and detail: each is searched alone,
        // without a new string per item (a model list may have 100,000 rows, filtered per key).
        self.items
            .iter()
            .enumerate()
            .filter(|(_, it)| words.iter().all(|w| contains_folded(&it.label, w) || contains_folded(&it.detail, w)))
            .map(|(i, _)| i)
            .collect()
    }

    /// The item under the cursor.
    #[must_use]
    pub fn current(&self) -> Option<&PickItem> {
        let v = self.visible();
        v.get(self.selected.min(v.len().saturating_sub(1))).map(|&i| &self.items[i])
    }

    /// Handles a key; returns what happened.
    pub fn key(&mut self, key: &KeyEvent) -> PickOutcome {
        // Counted only for the keys that move down: a long list is filtered once per key.
        let step = match key.code {
            KeyCode::Down => 1,
            KeyCode::PageDown => 10,
            _ => 0,
        };
        if step > 0 {
            let n = self.visible().len();
            if n == 0 {
                return PickOutcome::Ignored;
            }
            self.selected = (self.selected + step).min(n - 1);
            return PickOutcome::Consumed;
        }
        match key.code {
            KeyCode::Esc => return PickOutcome::Close,
            KeyCode::Enter => {
                return self.current().map_or(PickOutcome::Close, |it| PickOutcome::Chosen(it.value.clone()));
            }
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::Backspace => {
                self.query.pop();
                self.selected = 0;
            }
            KeyCode::Char(c) if !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) => {
                self.query.push(c);
                self.selected = 0;
            }
            _ => return PickOutcome::Ignored,
        }
        PickOutcome::Consumed
    }
}

/// Whether `hay` holds `word` (already lowercase), ignoring case. ASCII text, most of what a
/// picker lists, is compared in place; other text is lowercased first.
fn contains_folded(hay: &str, word: &str) -> bool {
    if word.is_empty() {
        return true;
    }
    if hay.is_ascii() {
        return hay.as_bytes().windows(word.len()).any(|w| w.eq_ignore_ascii_case(word.as_bytes()));
    }
    hay.to_lowercase().contains(word)
}

/// What a picker did with a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickOutcome {
    Consumed,
    Ignored,
    Close,
    Chosen(String),
}

/// One overlay layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    /// Every key binding and command, generated from the keymap.
    Help { scroll: u16 },
    /// The command palette.
    Palette(Picker),
    /// The model picker; `loading` until `GET /models` answers.
    Models { picker: Picker, loading: bool, error: Option<String> },
    /// Which preset to use: no provider configured and several presets' keys set.
    Providers(Picker),
    /// Which code block of message `id` to copy.
    CodeBlocks { id: u64, picker: Picker },
    /// Approve, deny or edit the tool call at the front of the queue (state in `State::tools`).
    Approval,
    /// The flow inspector of the current turn (state in `State::flow`).
    Inspector,
    /// Stored conversations and message search (see `conversations.rs`).
    Conversations(Box<super::conversations::ConversationList>),
    /// The token-probability heatmap of message `id`, the cursor on token `cursor` (`probs.rs`).
    Probs { id: u64, cursor: usize },
    /// A form an MCP server asks the user to fill in (state in `State::tools.forms`, `elicit.rs`).
    Elicit,
    /// An MCP server asks to use the model (state in `State::tools.samples`, `sample.rs`).
    Sample,
}

impl Overlay {
    /// A short title for the frame.
    #[must_use]
    pub fn title(&self) -> &'static str {
        match self {
            Self::Help { .. } => "Help",
            Self::Palette(_) => "Commands",
            Self::Models { .. } => "Models",
            Self::Providers(_) => "Providers: several keys are set",
            Self::CodeBlocks { .. } => "Copy code block",
            Self::Approval => "Approve tool call",
            Self::Inspector => "Flow inspector",
            Self::Conversations(_) => "Conversations",
            Self::Probs { .. } => "Token probabilities",
            Self::Elicit => "An MCP server asks",
            Self::Sample => "An MCP server asks to use the model",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(label: &str, detail: &str) -> PickItem {
        PickItem { label: label.into(), detail: detail.into(), value: label.into() }
    }

    #[test]
    fn every_word_matches_label_or_detail_ignoring_case() {
        let mut p = Picker::new(vec![item("GPT-4o", "current"), item("Ünïcode-Model", "configured"), item("mini", "")]);
        let shown = |p: &Picker| p.visible().iter().map(|&i| p.items[i].label.clone()).collect::<Vec<_>>();
        p.query = "gpt CURRENT".into();
        assert_eq!(shown(&p), ["GPT-4o"]);
        p.query = "ünï".into();
        assert_eq!(shown(&p), ["Ünïcode-Model"]);
        p.query = "i".into();
        assert_eq!(shown(&p), ["Ünïcode-Model", "mini"]);
        p.query = "gpt-4o-long-word-longer-than-any-label".into();
        assert!(shown(&p).is_empty());
        p.query = "  ".into();
        assert_eq!(shown(&p).len(), 3);
    }
}
