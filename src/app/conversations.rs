//! The conversation list overlay: stored conversations newest first, full-text search over
//! every message as you type, open, rename (inline), delete (after a confirmation), new.
//!
//! Two focuses: the search field (typing searches; ↑↓ move; Enter opens) and the rows (Tab
//! from the search field), where plain letters are commands: `r` rename, `d` delete, `n` new,
//! `/` back to searching. Ctrl+R, Ctrl+D and Ctrl+N do the same from the search field.
//! A compare is one row (`compare · N models`); → shows its columns under it and ← hides them
//! (`conversations_rows.rs`); Enter on it reopens the compare screen with every column, Enter
//! on a column opens that column as a chat. Renaming or deleting a compare acts on every column.
//! [`ConversationList::key`] is pure and answers with an [`ListAction`]; the state turns
//! actions into store effects.

use crate::store::Hit;
use crate::store::entries::ListEntry;
use crate::store::ids::short_date;
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

/// A listed conversation or compare, ready to draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The conversation's id, or the compare group's.
    pub id: String,
    pub title: String,
    /// The model, or `compare · N models`.
    pub model: String,
    pub date: String,
    /// Messages; a compare's summed over its columns.
    pub messages: u64,
    /// A compare's columns (empty for a conversation).
    pub columns: Vec<ColumnRow>,
}

impl Row {
    /// Whether the row is a compare.
    #[must_use]
    pub fn is_compare(&self) -> bool {
        !self.columns.is_empty()
    }
}

/// One column of a listed compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnRow {
    /// The column's conversation id.
    pub id: String,
    pub title: String,
    pub model: String,
    pub date: String,
    pub messages: u64,
    /// The column's number on screen (1-based).
    pub number: u32,
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
    /// The conversation's model.
    pub model: String,
    /// The compare the hit's conversation is a column of.
    pub group: Option<String>,
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
            model: h.model.unwrap_or_default(),
            group: h.compare_group,
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
    /// Reopen a stored compare on the compare screen, every column side by side.
    OpenCompare {
        group: String,
    },
    /// Retitle conversations (a compare: every column).
    Rename {
        ids: Vec<String>,
        title: String,
    },
    /// Delete conversations (a compare: every column).
    Delete {
        ids: Vec<String>,
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
    /// The compare open on the compare screen (its group), marked in the list.
    pub current_group: Option<String>,
    /// A compare whose models are hidden (an arena before its vote): its columns show no model.
    pub hidden_group: Option<String>,
    /// Compares whose columns are shown under them (by group id).
    pub expanded: std::collections::BTreeSet<String>,
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
            current_group: None,
            hidden_group: None,
            expanded: std::collections::BTreeSet::new(),
            list_seq,
            search_seq: 0,
        }
    }

    /// Whether search results are shown (rather than the list).
    #[must_use]
    pub fn searching_mode(&self) -> bool {
        !self.query.trim().is_empty()
    }

    /// Entries shown (a compare's shown columns count as entries).
    #[must_use]
    pub fn len(&self) -> usize {
        if self.searching_mode() { self.hits.len() } else { self.lines().len() }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (id, title, message count if known) of the selected entry: a conversation, a compare
    /// (its group id) or a compare's column.
    #[must_use]
    pub fn selection(&self) -> Option<(&str, &str, Option<u64>)> {
        match self.selected_entry()? {
            Selected::Hit(h) => Some((h.id.as_str(), h.title.as_str(), None)),
            Selected::Row(r) => Some((r.id.as_str(), r.title.as_str(), Some(r.messages))),
            Selected::Column(_, c) => Some((c.id.as_str(), c.title.as_str(), Some(c.messages))),
        }
    }

    /// The list arrived (`offset` > 0: a further page).
    pub fn listed(&mut self, offset: usize, result: Result<Vec<ListEntry>, String>) {
        self.loading = false;
        match result {
            Ok(list) => {
                self.more = list.len() >= super::storage::PAGE;
                if offset == 0 {
                    self.rows.clear();
                }
                self.rows.extend(list.into_iter().map(Row::from));
                self.hide_models();
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
                self.hide_models();
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
            return ListAction::More { offset: self.rows.len() };
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
        match self.selected_entry() {
            Some(Selected::Row(r)) if r.is_compare() && self.current_group.as_deref() == Some(r.id.as_str()) => {
                ListAction::Close
            }
            Some(Selected::Row(r)) if r.is_compare() => ListAction::OpenCompare { group: r.id.clone() },
            Some(Selected::Row(r)) if self.current.as_deref() == Some(r.id.as_str()) => ListAction::Close,
            Some(Selected::Row(r)) => ListAction::Open { id: r.id.clone(), branch: None, position: None },
            Some(Selected::Column(_, c)) if self.current.as_deref() == Some(c.id.as_str()) => ListAction::Close,
            Some(Selected::Column(_, c)) => ListAction::Open { id: c.id.clone(), branch: None, position: None },
            Some(Selected::Hit(_)) | None => ListAction::Consumed,
        }
    }

    fn start_rename(&mut self) -> ListAction {
        if let Some((_, title, _)) = self.selection() {
            self.mode = Mode::Rename(title.to_owned());
        }
        ListAction::Consumed
    }

    fn start_delete(&mut self) -> ListAction {
        if self.selection().is_none() {
            return ListAction::Consumed;
        }
        if self.in_open_compare() {
            self.error = Some("this compare is open on the compare screen: leave it first (/compare off)".into());
            return ListAction::Consumed;
        }
        self.mode = Mode::ConfirmDelete;
        ListAction::Consumed
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
                    KeyCode::Char('y' | 'Y') => {
                        let ids = self.selected_ids();
                        if ids.is_empty() {
                            return ListAction::Consumed;
                        }
                        if let Some((id, _, _)) = self.selection() {
                            let id = id.to_owned();
                            self.forget(&id);
                        }
                        ListAction::Delete { ids }
                    }
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
            KeyCode::Right => return self.expand(),
            KeyCode::Left => return self.collapse(),
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
                let Some((_, old, _)) = self.selection() else { return ListAction::Consumed };
                if new.is_empty() || new == old {
                    return ListAction::Consumed;
                }
                let ids = self.selected_ids();
                self.retitle(&ids, &new);
                return ListAction::Rename { ids, title: new };
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

#[path = "conversations_rows.rs"]
mod rows;
pub use rows::Selected;

#[path = "conversations_state.rs"]
mod state_impl;

#[path = "conversations_compare.rs"]
pub mod compare;

#[cfg(test)]
#[path = "conversations_tests.rs"]
mod tests;
