//! Everything that can happen to the app, as one message type. Input, the network, timers and
//! finished background jobs all arrive as a `Msg`; `State::apply` is the only thing that reads them.

use crate::api::client::WireEvent;
use crate::config::theme::Theme;
use crossterm::event::{KeyEvent, MouseEvent};

/// One thing that happened.
#[derive(Debug)]
pub enum Msg {
    /// A key press (or repeat) from the terminal.
    Key(KeyEvent),
    /// Compact the conversation as `/compact` does (`--continue --compact` once the screen is up).
    Compact(Option<String>),
    /// A mouse event (wheel, click).
    Mouse(MouseEvent),
    /// Text pasted with bracketed paste.
    Paste(String),
    /// The terminal changed size.
    Resize { width: u16, height: u16 },
    /// The request for assistant message `id` is on its way; `now_ms` is the app clock.
    RequestStarted { id: u64, now_ms: u64 },
    /// A wire event of the request for assistant message `id`, stamped with the app clock.
    Wire { id: u64, event: Box<WireEvent>, now_ms: u64 },
    /// A timer tick (spinner, elapsed time, flash expiry); only sent while something is live.
    Tick { now_ms: u64 },
    /// The external editor finished: the new draft, or why it could not run.
    Edited(Result<String, String>),
    /// `GET /models` finished.
    Models(Result<Vec<String>, String>),
    /// The server stated `model`'s context window (`Effect::LearnWindow`); it says nothing else.
    Window { model: String, window: crate::api::window::ServedWindow },
    /// A theme finished loading (`/theme NAME`).
    ThemeLoaded { name: String, theme: Result<LoadedTheme, String> },
    /// What the last draw showed: the scroll position it settled on and where cells are.
    Viewport(ViewReport),
    /// The tool loop heard back: a tool finished, MCP servers started, a file was read (see `tools.rs`).
    Tools(super::tools::ToolMsg),
    /// An attachment was loaded, a path completed, or the image viewer failed.
    Attach(super::attach::AttachMsg),
    /// A compare column's request reported something (see `compare/`).
    Compare(super::compare::CompareMsg),
    /// The store answered or reported something (history list, search, load, write notices).
    Store(super::persist::StoreMsg),
    /// A copy to the clipboard was tried (see `Copied`).
    Copied(Copied),
    /// The terminal gained (true) or lost (false) focus.
    Focus(bool),
    /// The process was told to end (SIGTERM, or SIGHUP when its terminal went away): quit now,
    /// saving what is on screen at once, the partial reply included and stopped for that
    /// signal (its name: "SIGTERM", "SIGHUP").
    Terminated(&'static str),
}

/// How a copy went: OSC 52 is always written but nothing confirms it arrived; a system
/// clipboard tool (`wl-copy`, `xclip`, `xsel`, `pbcopy`) does confirm.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Copied {
    /// The clipboard tool that took the text.
    pub tool: Option<String>,
    /// Why no tool took it (none installed, or it failed).
    pub tool_error: Option<String>,
    /// Running inside tmux with `set-clipboard off`: tmux drops OSC 52.
    pub tmux_drops_osc52: bool,
}

/// A loaded theme; its `Debug` stays short so message logs do not dump style tables.
pub struct LoadedTheme(pub Box<Theme>);

impl std::fmt::Debug for LoadedTheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoadedTheme")
    }
}

/// A scroll position: a line within a cell. `line` may be out of the cell's range; the view
/// normalises it against the rendered heights, which only the view knows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Anchor {
    pub cell: usize,
    pub line: i64,
}

/// Where a visible cell was drawn, for mouse hit-testing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellRows {
    pub id: u64,
    /// First and one-past-last screen row.
    pub top: u16,
    pub bottom: u16,
    /// Every row of the cell is on screen (its top is not scrolled off, its end not cut off).
    pub whole: bool,
}

/// What the view reports back after each draw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ViewReport {
    /// The top line shown, normalised.
    pub top: Anchor,
    /// The last line of the transcript is visible.
    pub at_bottom: bool,
    /// Rows the transcript has on screen.
    pub height: u16,
    pub cells: Vec<CellRows>,
    /// Screen areas as (x, y, width, height).
    pub transcript: (u16, u16, u16, u16),
    pub composer: (u16, u16, u16, u16),
    /// The compare screen's columns and diff as drawn (empty outside compare mode).
    pub compare: super::compare::CompareView,
}

impl ViewReport {
    /// The cell drawn at screen position (`col`, `row`), if any.
    #[must_use]
    pub fn cell_at(&self, col: u16, row: u16) -> Option<u64> {
        let (x, _, w, _) = self.transcript;
        if col < x || col >= x.saturating_add(w) {
            return None;
        }
        self.cells.iter().find(|c| row >= c.top && row < c.bottom).map(|c| c.id)
    }

    /// Whether (`col`, `row`) is inside the composer.
    #[must_use]
    pub fn in_composer(&self, col: u16, row: u16) -> bool {
        let (x, y, w, h) = self.composer;
        col >= x && col < x.saturating_add(w) && row >= y && row < y.saturating_add(h)
    }
}
