//! Notifications for a user in another window: when a reply finishes, a tool call waits for
//! approval or a turn fails while the terminal is not focused (focus events), the state asks
//! for `Effect::Notify`; the terminal layer writes it as configured (`notify` in config.toml).
//! Never while the window has focus.

use super::effect::Effect;
use super::state::State;
use crate::config::notify::NotifyMode;
use crate::engine::message::{MessageStatus, Role};

/// What the chat was doing before a message was applied, to see what it changed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watch {
    busy: bool,
    approval: bool,
}

impl State {
    /// The facts a notification depends on, taken before applying a message.
    pub(crate) fn watch(&self) -> Watch {
        Watch { busy: self.live.is_some() || self.tools.busy(), approval: self.tools.approval.is_some() }
    }

    /// Asks for a notification when the message just applied ended a turn or made an approval
    /// wait, and the terminal is not focused.
    pub(crate) fn notify_changes(&mut self, before: Watch, fx: &mut Vec<Effect>) {
        if self.focused || self.cfg.notify_mode() == NotifyMode::Off || self.compare.active.is_some() {
            return;
        }
        let now = self.watch();
        let text = if now.approval && !before.approval {
            Some("a tool call waits for your approval".to_owned())
        } else if before.busy && !now.busy {
            self.turn_outcome()
        } else {
            None
        };
        if let Some(text) = text {
            fx.push(Effect::Notify(crate::text::sanitize::sanitize(&text).into_owned()));
        }
    }

    /// How the last turn ended, in words; `None` when the user stopped it (they are here).
    fn turn_outcome(&self) -> Option<String> {
        let m = self.transcript.cells.iter().rev().find_map(|c| c.message().filter(|m| m.role() == Role::Assistant))?;
        let model = m.model.as_deref().unwrap_or("the model");
        match m.status {
            MessageStatus::Failed | MessageStatus::Interrupted => {
                let why = m.error.as_ref().map_or("the request failed", |e| e.message.as_str());
                Some(format!("the turn failed: {why}"))
            }
            MessageStatus::Cancelled => None,
            _ => Some(format!("{model} finished its reply")),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::app::effect::Effect;
    use crate::app::msg::Msg;
    use crate::app::test_state;
    use crate::config::notify::NotifyMode;
    use crate::engine::message::ErrorInfo;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    fn send(s: &mut crate::app::State, text: &str) -> u64 {
        for c in text.chars() {
            s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
        }
        let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        fx.iter()
            .find_map(|e| match e {
                Effect::StartRequest { id, .. } => Some(*id),
                _ => None,
            })
            .unwrap()
    }

    fn end(s: &mut crate::app::State, id: u64) -> Vec<Effect> {
        use crate::api::client::WireEvent;
        use crate::api::event::StreamEvent;
        let events = vec![StreamEvent::Finish { choice: 0, reason: "stop".into() }, StreamEvent::End];
        s.apply(Msg::Wire {
            id,
            event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 5 }),
            now_ms: 5,
        });
        s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 6 }), now_ms: 6 })
    }

    fn notified(fx: &[Effect]) -> Option<String> {
        fx.iter().find_map(|e| match e {
            Effect::Notify(t) => Some(t.clone()),
            _ => None,
        })
    }

    #[test]
    fn a_reply_ending_notifies_only_without_focus() {
        let mut s = test_state();
        let id = send(&mut s, "hi");
        assert!(notified(&end(&mut s, id)).is_none(), "focused: no notification");
        let id = send(&mut s, "again");
        s.apply(Msg::Focus(false));
        let text = notified(&end(&mut s, id)).expect("unfocused: a notification");
        assert!(text.contains("finished"), "{text}");
        s.apply(Msg::Focus(true));
        let id = send(&mut s, "third");
        assert!(notified(&end(&mut s, id)).is_none(), "focus back: quiet again");
    }

    #[test]
    fn a_failure_notifies_with_its_text_sanitised_and_off_means_never() {
        let mut s = test_state();
        let id = send(&mut s, "hi");
        s.apply(Msg::Focus(false));
        let err = ErrorInfo {
            status: Some(500),
            message: "bad\u{1b}]9;evil\u{7} gateway".into(),
            kind: "http".into(),
            body: serde_json::Value::Null,
        };
        use crate::api::client::WireEvent;
        let fx = s.apply(Msg::Wire { id, event: Box::new(WireEvent::Failed(err)), now_ms: 5 });
        let text = notified(&fx).expect("a failed turn notifies");
        assert!(text.starts_with("the turn failed: bad"), "{text}");
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
        s.cfg.notify = Some(NotifyMode::Off);
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)));
        let id = send(&mut s, "x");
        assert!(notified(&end(&mut s, id)).is_none(), "notify = off");
    }

    #[test]
    fn cancelling_does_not_notify() {
        let mut s = test_state();
        send(&mut s, "hi");
        s.apply(Msg::Focus(false));
        let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
        assert!(notified(&fx).is_none());
    }
}
