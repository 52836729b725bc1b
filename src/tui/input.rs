//! The input task: reads crossterm's `EventStream` on its own task and turns terminal events into
//! `Msg`s on the app channel. It is stopped while `$EDITOR` owns the terminal, so the two never
//! compete for keystrokes.

use crate::app::Msg;
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures_util::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

/// A running input task.
pub struct Input {
    task: JoinHandle<()>,
}

impl Input {
    /// Starts reading terminal events into `tx`.
    #[must_use]
    pub fn spawn(tx: UnboundedSender<Msg>) -> Self {
        let task = tokio::spawn(async move {
            let mut events = EventStream::new();
            while let Some(ev) = events.next().await {
                let Ok(ev) = ev else { break };
                let msg = match ev {
                    Event::Key(k) if k.kind != KeyEventKind::Release => Msg::Key(k),
                    Event::Mouse(m) => Msg::Mouse(m),
                    Event::Paste(s) => Msg::Paste(s),
                    Event::Resize(width, height) => Msg::Resize { width, height },
                    _ => continue,
                };
                if tx.send(msg).is_err() {
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
