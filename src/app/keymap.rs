//! Key bindings: named actions, their default keys, the user's overrides from `config.toml`
//! (`[keys] palette = "ctrl+k"`), and the text the help overlay shows. Nothing else in the app
//! compares key codes, so a rebinding reaches every screen.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;

/// Where a binding applies. Global bindings work everywhere unless an overlay takes the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Global,
    Composer,
    Transcript,
    /// Compare mode with the keys on the columns (Tab from the composer).
    Compare,
}

/// Something a key can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Quit at once.
    Quit,
    /// Cancel a stream, else clear the composer, else quit.
    Interrupt,
    /// Cancel a streaming reply (or leave selection / editing).
    Cancel,
    /// Open the command palette.
    Palette,
    /// Open the help overlay.
    Help,
    /// Open the model picker.
    Models,
    /// Open the conversation list (history and search).
    History,
    /// Show or hide the usage and safety panels.
    Panels,
    /// Offer tools or not: off → ask → auto.
    ToolsMode,
    /// Scroll the transcript a few lines up.
    ScrollUp,
    /// Scroll the transcript a few lines down.
    ScrollDown,
    /// Scroll the transcript a page up.
    PageUp,
    /// Scroll the transcript a page down.
    PageDown,
    /// Jump to the first message.
    Top,
    /// Jump to the end and follow new output.
    Bottom,
    /// Send the draft.
    Send,
    /// Insert a newline in the draft.
    Newline,
    /// Edit the draft in `$VISUAL`/`$EDITOR`.
    Editor,
    /// Composer: to the start of the line (readline Ctrl+A).
    LineStart,
    /// Composer: to the end of the line (readline Ctrl+E).
    LineEnd,
    /// Composer: delete from the cursor to the start of the line (readline Ctrl+U).
    KillLine,
    /// Composer: delete the word before the cursor (readline Ctrl+W).
    KillWord,
    /// Composer: on an empty draft, quit (asking once, as Ctrl+C does); else delete forward.
    Eof,
    /// Composer: put the text of big pastes (shown as chips) into the draft.
    OpenPaste,
    /// Composer: remove the newest attachment chip.
    Detach,
    /// Composer: complete the path of `/attach PATH`.
    CompletePath,
    /// Composer: attach the image on the system clipboard (as `/paste-image`).
    PasteImage,
    /// Transcript: open the selected message's image in the system viewer.
    OpenImage,
    /// Composer: stop the running turn and send the queued message (and the draft) now.
    SendNow,
    /// Composer: remove the newest queued message.
    Unqueue,
    /// Older prompt from history (on an empty composer).
    HistoryPrev,
    /// Newer prompt from history.
    HistoryNext,
    /// Select messages in the transcript.
    Select,
    /// Select the previous message.
    SelectPrev,
    /// Select the next message.
    SelectNext,
    /// Copy the selected message.
    Copy,
    /// Copy a code block of the selected message.
    CopyCode,
    /// Edit the selected user message and resend it (the old branch is kept).
    Edit,
    /// Regenerate the last reply (the old one is kept).
    Regenerate,
    /// Compare from here: other models answer the selected turn's prompt (`/here`).
    CompareHere,
    /// Show or hide the selected message's reasoning.
    ToggleReasoning,
    /// Switch to the previous version (branch) of the selected message.
    BranchPrev,
    /// Switch to the next version (branch) of the selected message.
    BranchNext,
    /// Back to the composer.
    Leave,
    /// Open or close the flow inspector (requests, frames, tool runs of this turn).
    Inspector,
    /// Expand or fold the selected message's tool outputs and item cards.
    ToggleOutput,
    /// The selected message's token-probability heatmap (`--logprobs`, `/logprobs`).
    Probabilities,
    /// Compare: from the composer, put the keys on the columns.
    CompareColumns,
    /// Compare: focus the next column (with the diff open: the next pair).
    CompareNext,
    /// Compare: focus the previous column.
    ComparePrev,
    /// Compare: the focused column full width, and back.
    CompareFull,
    /// Compare: synchronised scrolling on or off.
    CompareSync,
    /// Compare: word diff of the focused column's answer against the next column's.
    CompareDiff,
    /// Compare: keep the focused column as the chat and leave compare.
    CompareKeep,
    /// Compare: ask the focused column again (after an error, a 429, a cancel).
    CompareRetry,
    /// Compare: copy the focused column's last answer.
    CompareCopy,
    /// Compare: leave compare back to the chat (the columns stay in memory).
    CompareClose,
    /// Compare: scroll the focused column (or the diff) a line up.
    CompareLineUp,
    /// Compare: scroll the focused column (or the diff) a line down.
    CompareLineDown,
    /// Compare: back to the composer.
    CompareLeave,
}

/// (action, config name, context, default keys, help text).
const TABLE: &[(Action, &str, Context, &str, &str)] = &[
    (Action::Quit, "quit", Context::Global, "ctrl+q", "quit"),
    (
        Action::Interrupt,
        "interrupt",
        Context::Global,
        "ctrl+c",
        "cancel the reply, else clear the draft (↑ brings it back), else quit (asks once)",
    ),
    (Action::Cancel, "cancel", Context::Global, "esc", "cancel the streaming reply"),
    (Action::Palette, "palette", Context::Global, "ctrl+p", "command palette"),
    (Action::Help, "help", Context::Global, "f1", "this help"),
    (Action::Models, "models", Context::Global, "ctrl+o", "pick a model"),
    (Action::History, "history", Context::Global, "ctrl+l", "conversations: open, search, rename, delete"),
    (Action::Panels, "panels", Context::Global, "ctrl+b f2", "show or hide the usage and safety panels"),
    (Action::ToolsMode, "tools", Context::Global, "f4", "offer tools to the model: off → ask → auto"),
    (Action::PageUp, "page_up", Context::Global, "pageup", "scroll a page up"),
    (Action::PageDown, "page_down", Context::Global, "pagedown", "scroll a page down"),
    (Action::ScrollUp, "scroll_up", Context::Global, "shift+up", "scroll up"),
    (Action::ScrollDown, "scroll_down", Context::Global, "shift+down", "scroll down"),
    (Action::Top, "top", Context::Global, "ctrl+home", "first message"),
    (Action::Bottom, "bottom", Context::Global, "ctrl+end", "last message, follow new output"),
    (Action::Send, "send", Context::Composer, "enter", "send"),
    (Action::Newline, "newline", Context::Composer, "alt+enter shift+enter ctrl+j", "new line"),
    (Action::Editor, "editor", Context::Composer, "ctrl+g", "edit the draft in $VISUAL / $EDITOR"),
    (Action::LineStart, "line_start", Context::Composer, "ctrl+a", "start of the line"),
    (Action::LineEnd, "line_end", Context::Composer, "ctrl+e", "end of the line"),
    (Action::KillLine, "kill_line", Context::Composer, "ctrl+u", "delete to the start of the line"),
    (Action::KillWord, "kill_word", Context::Composer, "ctrl+w", "delete the word before the cursor"),
    (Action::Eof, "eof", Context::Composer, "ctrl+d", "on an empty draft: quit (asks once)"),
    (Action::OpenPaste, "open_paste", Context::Composer, "alt+v", "open a big paste (shown as a chip) in the draft"),
    (Action::Detach, "detach", Context::Composer, "alt+x", "remove the newest attachment chip"),
    (Action::CompletePath, "complete_path", Context::Composer, "tab", "/attach: complete the path"),
    (
        Action::PasteImage,
        "paste_image",
        Context::Composer,
        "ctrl+v",
        "attach the image on the clipboard (/paste-image)",
    ),
    (Action::SendNow, "send_now", Context::Composer, "ctrl+s", "stop the turn, send the queued message now"),
    (Action::Unqueue, "unqueue", Context::Composer, "alt+d", "remove the newest queued message"),
    (
        Action::HistoryPrev,
        "history_prev",
        Context::Composer,
        "up",
        "queued message back, else older prompt (empty draft)",
    ),
    (Action::HistoryNext, "history_next", Context::Composer, "down", "newer prompt"),
    (Action::Select, "select", Context::Composer, "alt+up ctrl+up", "select messages"),
    (Action::SelectPrev, "select_prev", Context::Transcript, "up k alt+up ctrl+up", "previous message"),
    (Action::SelectNext, "select_next", Context::Transcript, "down j alt+down ctrl+down", "next message"),
    (Action::Copy, "copy", Context::Transcript, "y c", "copy the message"),
    (Action::CopyCode, "copy_code", Context::Transcript, "b", "copy a code block"),
    (Action::Edit, "edit", Context::Transcript, "e", "edit and resend this prompt"),
    (Action::Regenerate, "regenerate", Context::Transcript, "r", "regenerate the last reply"),
    (Action::CompareHere, "compare_here", Context::Transcript, "m", "compare from here: other models answer this turn"),
    (Action::ToggleReasoning, "toggle_reasoning", Context::Transcript, "t space", "show or hide reasoning"),
    (Action::BranchPrev, "branch_prev", Context::Transcript, "[", "previous version"),
    (Action::BranchNext, "branch_next", Context::Transcript, "]", "next version"),
    (Action::Leave, "leave", Context::Transcript, "esc tab i", "back to the composer"),
    (Action::OpenImage, "open_image", Context::Transcript, "v", "open the message's image in the system viewer"),
    (
        Action::ToggleOutput,
        "toggle_output",
        Context::Transcript,
        "enter o",
        "expand or fold tool outputs and cards, a JSON answer's nested levels",
    ),
    (
        Action::Probabilities,
        "probabilities",
        Context::Transcript,
        "p",
        "token probabilities: heatmap, ←→ tokens, n unsure",
    ),
    (Action::Inspector, "inspector", Context::Global, "f3 ctrl+t", "flow inspector: this turn's requests"),
    (Action::CompareNext, "compare_next", Context::Compare, "tab right l", "next column (diff: next pair)"),
    (Action::ComparePrev, "compare_prev", Context::Compare, "shift+tab left h", "previous column"),
    (Action::CompareColumns, "compare_columns", Context::Compare, "tab", "from the composer: keys to the columns"),
    (Action::CompareFull, "compare_full", Context::Compare, "f", "focused column full width, and back"),
    (Action::CompareSync, "compare_sync", Context::Compare, "s", "synchronised scrolling on / off"),
    (Action::CompareDiff, "compare_diff", Context::Compare, "d", "word diff: focused column against the next"),
    (Action::CompareKeep, "compare_keep", Context::Compare, "k", "keep this column as the chat, leave compare"),
    (Action::CompareRetry, "compare_retry", Context::Compare, "r", "ask this column again (error, 429, cancel)"),
    (Action::CompareCopy, "compare_copy", Context::Compare, "y c", "copy this column's last answer"),
    (Action::CompareClose, "compare_close", Context::Compare, "x", "leave compare (columns stay in memory)"),
    (Action::CompareLineUp, "compare_line_up", Context::Compare, "up", "scroll up a line"),
    (Action::CompareLineDown, "compare_line_down", Context::Compare, "down", "scroll down a line"),
    (Action::CompareLeave, "compare_leave", Context::Compare, "esc i", "back to the composer"),
];

/// A key with its modifiers, normalised so that `shift+a` and `A` compare equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Combo {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl Combo {
    #[must_use]
    pub fn new(code: KeyCode, mods: KeyModifiers) -> Self {
        let mut mods = mods & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match code {
            // The character already says whether shift was held; terminals disagree on the flag.
            KeyCode::Char(c) => {
                mods.remove(KeyModifiers::SHIFT);
                if mods.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) {
                    KeyCode::Char(c.to_ascii_lowercase())
                } else {
                    KeyCode::Char(c)
                }
            }
            KeyCode::BackTab => {
                mods.insert(KeyModifiers::SHIFT);
                KeyCode::Tab
            }
            other => other,
        };
        Self { code, mods }
    }

    #[must_use]
    pub fn from_event(k: &KeyEvent) -> Self {
        Self::new(k.code, k.modifiers)
    }

    /// Parses `ctrl+p`, `alt+enter`, `f1`, `pageup`, `?`, `space`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if s.is_empty() {
            return None;
        }
        let mut mods = KeyModifiers::NONE;
        let parts: Vec<&str> = if s == "+" { vec!["+"] } else { s.split('+').collect() };
        let (last, prefix) = parts.split_last()?;
        for m in prefix {
            match m.to_ascii_lowercase().as_str() {
                "ctrl" | "control" | "c" => mods |= KeyModifiers::CONTROL,
                "alt" | "meta" | "option" | "m" => mods |= KeyModifiers::ALT,
                "shift" | "s" => mods |= KeyModifiers::SHIFT,
                _ => return None,
            }
        }
        let lower = last.to_ascii_lowercase();
        let code = match lower.as_str() {
            "enter" | "return" | "ret" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "space" => KeyCode::Char(' '),
            "backspace" | "bs" => KeyCode::Backspace,
            "delete" | "del" => KeyCode::Delete,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" | "pgup" => KeyCode::PageUp,
            "pagedown" | "pgdown" | "pgdn" => KeyCode::PageDown,
            f if f.len() > 1 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => KeyCode::F(f[1..].parse().ok()?),
            _ => {
                let mut chars = last.chars();
                let c = chars.next()?;
                if chars.next().is_some() {
                    return None;
                }
                KeyCode::Char(c)
            }
        };
        Some(Self::new(code, mods))
    }

    /// How the help overlay writes the key: `Ctrl+P`, `Alt+Enter`, `PgUp`.
    #[must_use]
    pub fn label(&self) -> String {
        let mut s = String::new();
        if self.mods.contains(KeyModifiers::CONTROL) {
            s.push_str("Ctrl+");
        }
        if self.mods.contains(KeyModifiers::ALT) {
            s.push_str("Alt+");
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            s.push_str("Shift+");
        }
        let key = match self.code {
            KeyCode::Enter => "Enter".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::Backspace => "Backspace".into(),
            KeyCode::Delete => "Del".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::F(n) => format!("F{n}"),
            KeyCode::Char(' ') => "Space".into(),
            KeyCode::Char(c) if self.mods.is_empty() => c.to_string(),
            KeyCode::Char(c) => c.to_ascii_uppercase().to_string(),
            other => format!("{other:?}"),
        };
        s.push_str(&key);
        s
    }
}

/// One binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub action: Action,
    pub context: Context,
    pub keys: Vec<Combo>,
}

/// All bindings, defaults with the user's overrides applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMap {
    pub bindings: Vec<Binding>,
}

impl Default for KeyMap {
    fn default() -> Self {
        let bindings = TABLE
            .iter()
            .map(|(action, _, context, keys, _)| Binding {
                action: *action,
                context: *context,
                keys: keys.split_whitespace().filter_map(Combo::parse).collect(),
            })
            .collect();
        Self { bindings }
    }
}

impl KeyMap {
    /// The defaults with `config.toml`'s `[keys]` applied. A user binding replaces the action's
    /// default keys and takes the key away from any other action in the same context. Returns
    /// the problems found (unknown action, unreadable key) so the app can say so.
    #[must_use]
    pub fn from_config(keys: &BTreeMap<String, String>) -> (Self, Vec<String>) {
        let mut map = Self::default();
        let mut problems = Vec::new();
        for (name, spec) in keys {
            let Some(&(action, _, context, _, _)) = TABLE.iter().find(|t| t.1 == name.as_str()) else {
                problems.push(format!("[keys] {name}: no such action"));
                continue;
            };
            let mut combos = Vec::new();
            for k in spec.split_whitespace() {
                match Combo::parse(k) {
                    Some(c) => combos.push(c),
                    None => problems.push(format!("[keys] {name}: cannot read the key `{k}`")),
                }
            }
            if combos.is_empty() {
                continue;
            }
            for b in &mut map.bindings {
                if b.context == context || context == Context::Global || b.context == Context::Global {
                    b.keys.retain(|k| !combos.contains(k));
                }
            }
            if let Some(b) = map.bindings.iter_mut().find(|b| b.action == action) {
                b.keys = combos;
            }
        }
        (map, problems)
    }

    /// The action bound to `key` in `context` (global bindings are looked up separately).
    #[must_use]
    pub fn action(&self, context: Context, key: &KeyEvent) -> Option<Action> {
        let combo = Combo::from_event(key);
        self.bindings.iter().find(|b| b.context == context && b.keys.contains(&combo)).map(|b| b.action)
    }

    /// Whether `key` is bound to `action`.
    #[must_use]
    pub fn is(&self, action: Action, key: &KeyEvent) -> bool {
        let combo = Combo::from_event(key);
        self.bindings.iter().any(|b| b.action == action && b.keys.contains(&combo))
    }

    /// The first key of `action`, for hints ("Ctrl+P palette").
    #[must_use]
    pub fn hint(&self, action: Action) -> String {
        self.bindings
            .iter()
            .find(|b| b.action == action)
            .and_then(|b| b.keys.first())
            .map(Combo::label)
            .unwrap_or_default()
    }

    /// Rows for the help overlay: (context title, [(keys, description)]).
    #[must_use]
    pub fn help(&self) -> Vec<(&'static str, Vec<(String, &'static str)>)> {
        let groups = [
            (Context::Global, "Everywhere"),
            (Context::Composer, "Composer"),
            (Context::Transcript, "Selected message"),
            (Context::Compare, "Compare (/compare A B, or palaver compare -m A -m B)"),
        ];
        groups
            .iter()
            .map(|(ctx, title)| {
                let rows = self
                    .bindings
                    .iter()
                    .filter(|b| b.context == *ctx && !b.keys.is_empty())
                    .map(|b| {
                        let keys: Vec<String> = b.keys.iter().map(Combo::label).collect();
                        let desc = TABLE.iter().find(|t| t.0 == b.action).map_or("", |t| t.4);
                        (keys.join(" "), desc)
                    })
                    .collect();
                (*title, rows)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn parses_and_labels() {
        let c = Combo::parse("ctrl+p").unwrap();
        assert_eq!(c.label(), "Ctrl+P");
        assert_eq!(Combo::parse("alt+enter").unwrap().label(), "Alt+Enter");
        assert_eq!(Combo::parse("f1").unwrap().code, KeyCode::F(1));
        assert_eq!(Combo::parse("?").unwrap().code, KeyCode::Char('?'));
        assert!(Combo::parse("hyper+x").is_none());
        // Shift on a character is carried by the character itself.
        assert_eq!(Combo::new(KeyCode::Char('?'), KeyModifiers::SHIFT), Combo::parse("?").unwrap());
        assert_eq!(Combo::new(KeyCode::Char('P'), KeyModifiers::CONTROL | KeyModifiers::SHIFT), c);
    }

    #[test]
    fn user_binding_replaces_default_and_steals_the_key() {
        let mut keys = BTreeMap::new();
        keys.insert("palette".to_owned(), "ctrl+k".to_owned());
        keys.insert("help".to_owned(), "ctrl+p".to_owned());
        keys.insert("nonsense".to_owned(), "x".to_owned());
        let (map, problems) = KeyMap::from_config(&keys);
        assert_eq!(problems.len(), 1);
        assert!(map.is(Action::Palette, &key(KeyCode::Char('k'), KeyModifiers::CONTROL)));
        assert!(!map.is(Action::Palette, &key(KeyCode::Char('p'), KeyModifiers::CONTROL)));
        assert_eq!(map.action(Context::Global, &key(KeyCode::Char('p'), KeyModifiers::CONTROL)), Some(Action::Help));
    }

    #[test]
    fn enter_variants() {
        let map = KeyMap::default();
        assert_eq!(map.action(Context::Composer, &key(KeyCode::Enter, KeyModifiers::NONE)), Some(Action::Send));
        assert_eq!(map.action(Context::Composer, &key(KeyCode::Enter, KeyModifiers::ALT)), Some(Action::Newline));
        assert_eq!(map.action(Context::Composer, &key(KeyCode::Enter, KeyModifiers::SHIFT)), Some(Action::Newline));
    }
}
