//! What `State::apply` asks the outside world to do. The loop and its effect runner carry these
//! out and report back with `Msg`s; the state itself never touches the network, disk or terminal.

use crate::api::Api;
use std::sync::Arc;

/// One thing to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send a request whose reply streams into assistant message `id`. The body is shared with
    /// the inspector, which keeps it to show what was sent: one copy, however long the history.
    StartRequest { id: u64, api: Api, body: Arc<crate::engine::body::Body> },
    /// Stop the request of message `id` (its task ends when its receiver is dropped).
    CancelRequest { id: u64 },
    /// Put text on the system clipboard with OSC 52 (works over SSH).
    Copy(String),
    /// Suspend the screen and edit this draft in `$VISUAL`/`$EDITOR`; answer with `Msg::Edited`.
    OpenEditor(String),
    /// Ask the provider for its models (`GET /models`); answer with `Msg::Models`.
    FetchModels,
    /// Ask the server for this model's context window, once per server and model; answer with
    /// `Msg::Window` when it states one (silence otherwise: the catalogue stands).
    LearnWindow(String),
    /// Load a theme by name (built in or from the user's themes folder); answer with `Msg::ThemeLoaded`.
    LoadTheme(String),
    /// Leave the app.
    Quit,
    /// Capture the mouse (true) or leave it to the terminal's own selection (false).
    Mouse(bool),
    /// Remember the theme chosen with `/theme` for the next start (a file in the data directory).
    RememberTheme(String),
    /// Run or stop a tool, or do the tool loop's disk and terminal work (see `tools.rs`).
    Tools(super::tools::ToolEffect),
    /// Start or stop a compare column's request, or switch the chat to a kept column's endpoint.
    Compare(super::compare::CompareEffect),
    /// Save, fork, list, search or load through the history store (see `persist.rs`).
    Persist(super::persist::PersistOp),
    /// Read a file to attach, complete a path, or open an image (see `attach.rs`).
    Attach(super::attach::AttachEffect),
    /// Tell a user in another window (sanitised text): as `notify` in config.toml says.
    Notify(String),
}
