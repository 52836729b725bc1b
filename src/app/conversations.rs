//! The conversation list overlay: stored conversations newest first, full-text search over
//! every message as you type, open, rename (inline), delete (after a confirmation), new.
//!
//! Two focuses: the search field (typing searches; ↑↓ move; Enter opens) and the rows (Tab
//! from the search field), where plain letters are commands: `r` rename, `d` delete, `n` new,
//! `/` back to searching. Ctrl+R, Ctrl+D and Ctrl+N do the same from the search field.
//! [`ConversationList::key`] is pure and answers with an [`ListAction`]; the state turns
//! actions into store effects.

use crate::store::ids::short_date;
use crate::store::{ConversationSummary, Hit};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Most search hits shown (the newest).
pub const MAX_HITS: usize = super::storage::HITS;

/// Which part of the overlay gets typed letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListFocus {
    Search,
    Rows,
}

/// What the overlay is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Browse,
    /// Renaming the selected conversation: the new title as typed.
    Rename(String),
    /// Asking before deleting the selected conversation.
    ConfirmDelete,
}

/// A listed conversation, ready to draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: String,
    pub title: String,
    pub model: String,
    pub date: String,
    pub messages: u64,
}

/// A search hit, ready to draw. `ranges` are byte ranges of the matches within `snippet`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HitRow {
    pub id: String,
    pub title: String,
    pub role: String,
    pub date: String,
    pub snippet: String,
    pub ranges: Vec<std::ops::Range<usize>>,
    pub branch: i64,
    pub position: usize,
}

impl From<ConversationSummary> for Row {
    fn from(s: ConversationSummary) -> Self {
        Self {
            date: short_date(s.updated_at),
            model: s.model.unwrap_or_default(),
            id: s.id,
            title: s.title,
            messages: s.messages,
        }
    }
}

impl From<Hit> for HitRow {
    fn from(h: Hit) -> Self {
        Self {
            date: short_date(h.updated_at),
            id: h.conversation_id,
            title: h.title,
            role: h.role,
            snippet: h.snippet,
            ranges: h.ranges,
            branch: h.branch,
            position: h.position,
        }
    }
}

/// What a key asks the state to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListAction {
    /// Used the key; nothing else to do.
    Consumed,
    /// Not a key for the overlay (global bindings get it).
    Ignored,
    Close,
    /// The query changed: search for it (`seq` numbers the request).
    Search {
        seq: u64,
        query: String,
    },
    /// The selection is near the end of what is loaded: fetch the next page.
    More {
        offset: usize,
    },
    /// Open a conversation (at a search hit's branch and message).
    Open {
        id: String,
        branch: Option<i64>,
        position: Option<usize>,
    },
    Rename {
        id: String,
        title: String,
    },
    Delete {
        id: String,
    },
    /// Start a new conversation.
    New,
}

/// The overlay's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationList {
    pub query: String,
    pub focus: ListFocus,
    pub mode: Mode,
    pub rows: Vec<Row>,
    /// The last page was full: there may be more.
    pub more: bool,
    pub hits: Vec<HitRow>,
    pub selected: usize,
    /// Waiting for the list (`list_seq`) or a search (`search_seq`).
    pub loading: bool,
    pub searching: bool,
    pub error: Option<String>,
    /// The conversation on screen, marked in the list.
    pub current: Option<String>,
    pub list_seq: u64,
    pub search_seq: u64,
}

impl ConversationList {
    #[must_use]
    pub fn new(list_seq: u64, current: Option<String>) -> Self {
        Self {
            query: String::new(),
            focus: ListFocus::Search,
            mode: Mode::Browse,
            rows: Vec::new(),
            more: false,
            hits: Vec::new(),
            selected: 0,
            loading: true,
            searching: false,
            error: None,
            current,
            list_seq,
            search_seq: 0,
        }
    }

    /// Whether search results are shown (rather than the list).
    #[must_use]
    pub fn searching_mode(&self) -> bool {
        !self.query.trim().is_empty()
    }

    /// Entries shown.
    #[must_use]
    pub fn len(&self) -> usize {
        if self.searching_mode() { self.hits.len() } else { self.rows.len() }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (conversation id, title, message count if known) of the selected entry.
    #[must_use]
    pub fn selection(&self) -> Option<(&str, &str, Option<u64>)> {
        if self.searching_mode() {
            self.hits.get(self.selected).map(|h| (h.id.as_str(), h.title.as_str(), None))
        } else {
            self.rows.get(self.selected).map(|r| (r.id.as_str(), r.title.as_str(), Some(r.messages)))
        }
    }

    /// The list arrived (`offset` > 0: a further page).
    pub fn listed(&mut self, offset: usize, result: Result<Vec<ConversationSummary>, String>) {
        self.loading = false;
        match result {
            Ok(list) => {
                self.more = list.len() >= super::storage::PAGE;
                if offset == 0 {
                    self.rows.clear();
                }
                self.rows.extend(list.into_iter().map(Row::from));
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
        self.clamp();
    }

    /// Search results arrived for the current query.
    pub fn found(&mut self, result: Result<Vec<Hit>, String>) {
        self.searching = false;
        match result {
            Ok(hits) => {
                self.hits = hits.into_iter().map(HitRow::from).collect();
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
        self.clamp();
    }

    fn clamp(&mut self) {
        self.selected = self.selected.min(self.len().saturating_sub(1));
    }

    fn query_changed(&mut self) -> ListAction {
        self.selected = 0;
        if !self.searching_mode() {
            self.hits.clear();
            self.searching = false;
            return ListAction::Consumed;
        }
        self.search_seq += 1;
        self.searching = true;
        ListAction::Search { seq: self.search_seq, query: self.query.clone() }
    }

    fn step(&mut self, by: isize) -> ListAction {
        let n = self.len();
        if n == 0 {
            return ListAction::Consumed;
        }
        self.selected = self.selected.saturating_add_signed(by).min(n - 1);
        if !self.searching_mode() && self.more && !self.loading && self.selected + 10 >= n {
            self.loading = true;
            return ListAction::More { offset: n };
        }
        ListAction::Consumed
    }

    fn open(&self) -> ListAction {
        if self.searching_mode() {
            return self.hits.get(self.selected).map_or(ListAction::Consumed, |h| ListAction::Open {
                id: h.id.clone(),
                branch: Some(h.branch),
                position: Some(h.position),
            });
        }
        match self.rows.get(self.selected) {
            Some(r) if self.current.as_deref() == Some(r.id.as_str()) => ListAction::Close,
            Some(r) => ListAction::Open { id: r.id.clone(), branch: None, position: None },
            None => ListAction::Consumed,
        }
    }

    fn start_rename(&mut self) -> ListAction {
        if let Some((_, title, _)) = self.selection() {
            self.mode = Mode::Rename(title.to_owned());
        }
        ListAction::Consumed
    }

    fn start_delete(&mut self) -> ListAction {
        if self.selection().is_some() {
            self.mode = Mode::ConfirmDelete;
        }
        ListAction::Consumed
    }

    /// Removes a deleted conversation from the rows and hits.
    pub fn forget(&mut self, id: &str) {
        self.rows.retain(|r| r.id != id);
        self.hits.retain(|h| h.id != id);
        if self.current.as_deref() == Some(id) {
            self.current = None;
        }
        self.clamp();
    }

    /// Handles a key.
    pub fn key(&mut self, key: &KeyEvent) -> ListAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match std::mem::replace(&mut self.mode, Mode::Browse) {
            Mode::Rename(mut title) => return self.rename_key(key, &mut title),
            Mode::ConfirmDelete => {
                return match key.code {
                    // Only `y` deletes; Enter, Esc or any other letter keeps it.
                    KeyCode::Char('y' | 'Y') => match self.selection() {
                        Some((id, _, _)) => {
                            let id = id.to_owned();
                            self.forget(&id);
                            ListAction::Delete { id }
                        }
                        None => ListAction::Consumed,
                    },
                    KeyCode::Char(_) | KeyCode::Esc | KeyCode::Enter => ListAction::Consumed,
                    _ => {
                        self.mode = Mode::ConfirmDelete;
                        if ctrl || alt { ListAction::Ignored } else { ListAction::Consumed }
                    }
                };
            }
            Mode::Browse => {}
        }
        match key.code {
            KeyCode::Esc => return ListAction::Close,
            KeyCode::Enter => return self.open(),
            KeyCode::Up => return self.step(-1),
            KeyCode::Down => return self.step(1),
            KeyCode::PageUp => return self.step(-10),
            KeyCode::PageDown => return self.step(10),
            KeyCode::Tab | KeyCode::BackTab => {
                self.focus = if self.focus == ListFocus::Search { ListFocus::Rows } else { ListFocus::Search };
                return ListAction::Consumed;
            }
            _ => {}
        }
        if ctrl && !alt {
            return match key.code {
                KeyCode::Char('r') => self.start_rename(),
                KeyCode::Char('d') => self.start_delete(),
                KeyCode::Char('n') => ListAction::New,
                KeyCode::Char('u') if self.focus == ListFocus::Search => {
                    self.query.clear();
                    self.query_changed()
                }
                _ => ListAction::Ignored,
            };
        }
        if alt {
            return ListAction::Ignored;
        }
        match self.focus {
            ListFocus::Search => self.search_key(key),
            ListFocus::Rows => self.rows_key(key),
        }
    }

    fn search_key(&mut self, key: &KeyEvent) -> ListAction {
        match key.code {
            KeyCode::Backspace => {
                if self.query.pop().is_none() {
                    return ListAction::Consumed;
                }
                self.query_changed()
            }
            KeyCode::Char(c) => {
                self.query.push(c);
                self.query_changed()
            }
            KeyCode::Home => self.step(isize::MIN),
            KeyCode::End => self.step(isize::MAX),
            _ => ListAction::Consumed,
        }
    }

    fn rows_key(&mut self, key: &KeyEvent) -> ListAction {
        match key.code {
            KeyCode::Char('k') => self.step(-1),
            KeyCode::Char('j') => self.step(1),
            KeyCode::Home | KeyCode::Char('g') => self.step(isize::MIN),
            KeyCode::End | KeyCode::Char('G') => self.step(isize::MAX),
            KeyCode::Char('r') => self.start_rename(),
            KeyCode::Char('d') | KeyCode::Delete => self.start_delete(),
            KeyCode::Char('n') => ListAction::New,
            KeyCode::Char('q') => ListAction::Close,
            KeyCode::Char('/') => {
                self.focus = ListFocus::Search;
                ListAction::Consumed
            }
            KeyCode::Backspace => {
                self.focus = ListFocus::Search;
                self.search_key(key)
            }
            // Any other letter starts a search with it.
            KeyCode::Char(_) => {
                self.focus = ListFocus::Search;
                self.search_key(key)
            }
            _ => ListAction::Consumed,
        }
    }

    fn rename_key(&mut self, key: &KeyEvent, title: &mut String) -> ListAction {
        let plain = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match key.code {
            KeyCode::Esc => return ListAction::Consumed,
            KeyCode::Enter => {
                let new = title.split_whitespace().collect::<Vec<_>>().join(" ");
                let Some((id, old, _)) = self.selection() else { return ListAction::Consumed };
                if new.is_empty() || new == old {
                    return ListAction::Consumed;
                }
                let id = id.to_owned();
                for r in self.rows.iter_mut().filter(|r| r.id == id) {
                    r.title.clone_from(&new);
                }
                for h in self.hits.iter_mut().filter(|h| h.id == id) {
                    h.title.clone_from(&new);
                }
                return ListAction::Rename { id, title: new };
            }
            KeyCode::Backspace => {
                title.pop();
            }
            KeyCode::Char('u') if !plain && key.modifiers.contains(KeyModifiers::CONTROL) => title.clear(),
            KeyCode::Char(c) if plain => title.push(c),
            _ if !plain => {
                self.mode = Mode::Rename(std::mem::take(title));
                return ListAction::Ignored;
            }
            _ => {}
        }
        self.mode = Mode::Rename(std::mem::take(title));
        ListAction::Consumed
    }
}

#[path = "conversations_state.rs"]
mod state_impl;

#[cfg(test)]
#[path = "conversations_tests.rs"]
mod tests;
