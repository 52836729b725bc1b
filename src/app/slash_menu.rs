//! The `/` menu: typing `/` at the start of an empty draft lists every slash command (the
//! built-in ones from the command table, the user's commands, MCP prompts) with its argument
//! hints and one line about it, filtered as the command is typed. ↑/↓ choose, Tab completes,
//! Enter runs a command that needs no arguments (else completes), Esc closes and keeps the
//! text. Once a command's name is followed by a space, its arguments are hinted instead. The
//! same list serves `/help` and Tab completion, so the three never disagree. ui/ draws it from
//! [`State::slash_menu`] and [`State::argument_hint`].

use super::effect::Effect;
use super::keymap::{Action, Context};
use super::state::State;
use crate::text::sanitize::sanitize;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where a command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    BuiltIn,
    /// The user's own (`commands/*.md`, `.palaver/commands/`).
    User,
    /// An MCP server's prompt, or its resources.
    Mcp,
}

/// One argument of a command, as the hint shows it (sanitised).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub required: bool,
    pub about: String,
}

/// One slash command as the menu, `/help` and Tab show it. Text from files and servers is
/// sanitised and cut to one line here, once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `/model`, `/review`, `/mcp:SERVER:PROMPT`.
    pub name: String,
    /// `NAME`, `[WHAT TO KEEP]`: what follows the name; brackets mark what may be left out.
    pub args: String,
    pub about: String,
    pub kind: Kind,
    /// Each argument spelled out (an MCP prompt's).
    pub params: Vec<Param>,
}

impl Entry {
    /// Whether it must be given arguments to do anything: a hint with a word outside brackets.
    #[must_use]
    pub fn needs_args(&self) -> bool {
        let mut depth = 0usize;
        self.args.chars().any(|c| {
            match c {
                '[' => depth += 1,
                ']' => depth = depth.saturating_sub(1),
                c if depth == 0 && !c.is_whitespace() => return true,
                _ => {}
            }
            false
        })
    }

    /// `/compact [WHAT TO KEEP]`.
    #[must_use]
    pub fn usage(&self) -> String {
        if self.args.is_empty() { self.name.clone() } else { format!("{} {}", self.name, self.args) }
    }
}

/// Whether the menu may show, and which row is chosen for which typed text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Menu {
    /// A `/` was typed into an empty draft, and the draft still starts with it (Esc clears it).
    pub armed: bool,
    /// The chosen row, for the draft as it was when ↑/↓ chose it (other text: the first row).
    pub selected: usize,
    pub chosen_for: String,
}

/// Most characters kept of a name or description from a file or a server (a row shows less).
const MAX_CHARS: usize = 200;

/// One line of untrusted text for the terminal, cut to [`MAX_CHARS`].
pub(crate) fn one_line(text: &str) -> String {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let cut: String = first.chars().take(MAX_CHARS).collect();
    sanitize(&cut).into_owned()
}

/// The entries for typed `query` (`/mo`): those whose name starts with it first, then those
/// that contain it; an exact name leads. Case is ignored.
#[must_use]
pub fn filter(entries: &[Entry], query: &str) -> Vec<Entry> {
    let q = query.to_lowercase();
    let bare = q.trim_start_matches('/');
    let name = |e: &Entry| e.name.to_lowercase();
    let exact = entries.iter().filter(|e| name(e) == q);
    let prefix = entries.iter().filter(|e| name(e) != q && name(e).starts_with(&q));
    let inside = entries.iter().filter(|e| !name(e).starts_with(&q) && name(e)[1..].contains(bare));
    exact.chain(prefix).chain(inside).cloned().collect()
}

/// The draft's text when it is a bare command being typed: one line, a leading `/` (not `//`),
/// no space yet.
fn typed_name(text: &str) -> Option<&str> {
    (text.starts_with('/') && !text.starts_with("//") && !text.contains(char::is_whitespace)).then_some(text)
}

impl State {
    /// Every slash command: the built-in ones, the user's, the MCP servers'.
    #[must_use]
    pub fn command_entries(&self) -> Vec<Entry> {
        let builtin = super::commands::COMMANDS.iter().map(|(name, args, about)| Entry {
            name: (*name).to_owned(),
            args: (*args).to_owned(),
            about: (*about).to_owned(),
            kind: Kind::BuiltIn,
            params: Vec::new(),
        });
        builtin.chain(self.user_command_entries()).chain(self.mcp_prompt_entries()).collect()
    }

    /// The menu's rows and the chosen one, when it shows: armed, keys on the draft, nothing
    /// over it, and some command matches what is typed.
    #[must_use]
    pub fn slash_menu(&self) -> Option<(Vec<Entry>, usize)> {
        if !self.composer.menu.armed || !self.overlays.is_empty() || self.focus != super::state::Focus::Composer {
            return None;
        }
        let text = self.composer.text();
        let rows = filter(&self.command_entries(), typed_name(&text)?);
        if rows.is_empty() {
            return None;
        }
        let m = &self.composer.menu;
        let chosen = if m.chosen_for == text { m.selected.min(rows.len() - 1) } else { 0 };
        Some((rows, chosen))
    }

    /// The command being given its arguments (`/mcp:t:greet Ada`), with the names of the
    /// required arguments still missing; the composer hints them above itself.
    #[must_use]
    pub fn argument_hint(&self) -> Option<(Entry, Vec<String>)> {
        if !self.overlays.is_empty() || self.focus != super::state::Focus::Composer || self.composer.line_count() > 1 {
            return None;
        }
        let text = self.composer.text();
        let (name, _) = text.split_once(char::is_whitespace)?;
        let entry = self.command_entries().into_iter().find(|e| e.name == name)?;
        if entry.args.is_empty() && entry.params.is_empty() {
            return None;
        }
        let missing = self.missing_prompt_args(&text);
        Some((entry, missing))
    }

    /// Keys for the menu while it shows; true when it used the key. Typing goes on into the
    /// draft (and filters); a `/` typed into an empty draft arms it.
    pub(crate) fn slash_menu_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        let text = self.composer.text();
        if !text.starts_with('/') {
            self.composer.menu.armed = false;
        }
        if key.code == KeyCode::Char('/') && key.modifiers.difference(KeyModifiers::SHIFT).is_empty() && text.is_empty()
        {
            self.composer.menu.armed = true;
            return false;
        }
        let Some((rows, chosen)) = self.slash_menu() else { return false };
        let plain = key.modifiers.is_empty();
        match key.code {
            KeyCode::Up | KeyCode::Down if plain => {
                let n = rows.len();
                let next = if key.code == KeyCode::Up { (chosen + n - 1) % n } else { (chosen + 1) % n };
                self.composer.menu.selected = next;
                self.composer.menu.chosen_for = text;
            }
            KeyCode::Tab if plain => self.complete_entry(&rows[chosen]),
            KeyCode::Esc if plain => self.composer.menu.armed = false,
            _ if self.keymap.action(Context::Composer, key) == Some(Action::Send) => {
                let entry = &rows[chosen];
                if entry.needs_args() {
                    self.complete_entry(entry);
                } else {
                    self.composer.set_text(&entry.name);
                    self.submit(entry.name.clone(), fx);
                }
            }
            _ => return false,
        }
        self.dirty = true;
        true
    }

    /// Puts `/name ` in the draft, the cursor after it, ready for the arguments.
    fn complete_entry(&mut self, entry: &Entry) {
        self.composer.set_text(&format!("{} ", entry.name));
    }
}

#[cfg(test)]
#[path = "slash_menu_tests.rs"]
mod tests;
