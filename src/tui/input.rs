//! The input task: reads crossterm's `EventStream` on its own task and turns terminal events into
//! [`TermEvent`]s, which the caller maps onto its own channel. It is stopped while `$EDITOR` owns
//! the terminal, so the two never compete for keystrokes.

use crossterm::event::{Event, EventStream, KeyEvent, KeyEventKind, MouseEvent};
use futures_util::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

/// What the terminal said that a screen cares about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermEvent {
    /// A key press or repeat (releases are dropped).
    Key(KeyEvent),
    Mouse(MouseEvent),
    /// Bracketed paste.
    Paste(String),
    Resize {
        width: u16,
        height: u16,
    },
    /// The terminal gained (true) or lost (false) focus.
    Focus(bool),
}

/// A running input task.
pub struct Input {
    task: JoinHandle<()>,
}

impl Input {
    /// Starts reading terminal events into `tx`, each mapped by `wrap`.
    #[must_use]
    pub fn spawn<T: Send + 'static>(tx: UnboundedSender<T>, wrap: fn(TermEvent) -> T) -> Self {
        let task = tokio::spawn(async move {
            let mut events = EventStream::new();
            while let Some(ev) = events.next().await {
                let Ok(ev) = ev else { break };
                let ev = match ev {
                    Event::Key(k) if k.kind != KeyEventKind::Release => TermEvent::Key(k),
                    Event::Mouse(m) => TermEvent::Mouse(m),
                    Event::Paste(s) => TermEvent::Paste(s),
                    Event::Resize(width, height) => TermEvent::Resize { width, height },
                    Event::FocusGained => TermEvent::Focus(true),
                    Event::FocusLost => TermEvent::Focus(false),
                    _ => continue,
                };
                if tx.send(wrap(ev)).is_err() {
                    break;
                }
            }
        });
        Self { task }
    }

    /// Stops reading (dropping the event stream) and waits until it has.
    pub async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}
