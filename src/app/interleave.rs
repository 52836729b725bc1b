//! Another palaver (a headless `--continue` in another window) added turns to the conversation
//! open on the chat screen. The store noticed before saving this screen's next message there,
//! saved this screen's messages after them and read theirs back (`store::others`); here they are
//! put on screen before this screen's own turn, the path's positions renumbered to match the
//! store's, and the store told so (`PersistOp::Adopt`). The next request carries them too.

use super::effect::Effect;
use super::persist::{PersistOp, Slot};
use super::state::State;
use super::transcript::{Notice, NoticeKind};
use crate::store::others::Added;

impl State {
    /// Shows the turns another palaver added, before this screen's messages from `added.from`
    /// on; when they cannot be placed (another conversation is on screen by now, or the store's
    /// positions have gaps) only the store's notice `text` is shown.
    pub(crate) fn on_interleaved(&mut self, added: Added, text: String, fx: &mut Vec<Effect>) {
        let n = added.messages.len();
        let p = &self.persist;
        // The store counts positions from the conversation's start; the path may begin later
        // (a long conversation reopened on its tail, its head still loading).
        let at = added.from.checked_sub(p.offset);
        let anchor = at
            .and_then(|at| p.path.get(at))
            .filter(|_| p.is_current(&added.conv) && p.branch_at(added.from) == Some(added.branch))
            .filter(|_| n > 0 && n == added.by)
            .and_then(|slot| Some((*slot, self.transcript.index_of(slot.id)?, p.conv.clone()?)));
        let (Some(at), Some((slot, cell, conv))) = (at, anchor) else {
            self.transcript.push_notice(NoticeKind::Info, text);
            return;
        };
        let s = if n == 1 { "" } else { "s" };
        let words = format!(
            "another palaver added {n} message{s} to this conversation while it was open here; \
             they follow, your turn comes after them and nothing was overwritten"
        );
        let revisions: Vec<u64> = added.messages.iter().map(|m| m.revision).collect();
        let notice = Notice { id: 0, kind: NoticeKind::Info, text: words };
        let ids = self.transcript.insert_before(cell, notice, added.messages);
        let now = self.now_ms;
        let slots = ids.iter().zip(revisions).map(|(&id, rev)| Slot { id, revision: Some(rev), at_ms: now, ..slot });
        self.persist.path.splice(at..at, slots);
        // A live reply's last save is settled at its new position, should it vanish.
        if let Some(copy) = self.persist.live_copy.as_mut().filter(|c| c.2 >= added.from) {
            copy.2 += n;
        }
        fx.push(Effect::Persist(PersistOp::Adopt { conv, branch: slot.branch, from: added.from, by: n }));
        // The notice sits with their turns, maybe scrolled away: the status line says it too.
        self.flash(format!("another palaver added {n} message{s} above; nothing was overwritten"));
        if self.scroll.follow {
            self.scroll_bottom();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::client::WireEvent;
    use crate::api::event::StreamEvent;
    use crate::app::msg::Msg;
    use crate::app::persist::StoreMsg;
    use crate::app::test_state;
    use crate::app::transcript::Cell;
    use crate::engine::message::{Message, Role};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    fn send(s: &mut State, text: &str) -> Vec<Effect> {
        for c in text.chars() {
            s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
        }
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)))
    }

    fn texts(s: &State) -> Vec<String> {
        s.transcript.cells.iter().filter_map(Cell::message).map(|m| m.text().to_owned()).collect()
    }

    /// A stored conversation on screen with one finished turn, then a new prompt sent.
    fn open_and_send() -> State {
        let mut s = test_state();
        s.apply(Msg::Store(StoreMsg::Ready));
        send(&mut s, "first");
        s.apply(Msg::Store(StoreMsg::Created { local: 1, id: "c1".into() }));
        let id = s.live.as_ref().map(|l| l.id).unwrap_or_default();
        let events = vec![
            StreamEvent::Text { choice: 0, delta: "answer".into() },
            StreamEvent::Finish { choice: 0, reason: "stop".into() },
            StreamEvent::End,
        ];
        let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 };
        s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 10 });
        s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 10 }), now_ms: 10 });
        send(&mut s, "second");
        s
    }

    fn added(from: usize, by: usize) -> Added {
        Added {
            conv: "c1".into(),
            branch: 0,
            from,
            by,
            messages: vec![Message::user("meanwhile"), Message::with_text(Role::Assistant, "their answer")],
        }
    }

    #[test]
    fn the_other_palavers_turns_go_before_this_screens_and_the_store_is_told() {
        let mut s = open_and_send();
        assert_eq!(texts(&s)[2], "second", "{:?}", texts(&s));
        let fx = s.apply(Msg::Store(StoreMsg::Interleaved { added: Box::new(added(2, 2)), text: "t".into() }));
        let t = texts(&s);
        assert_eq!(&t[..5], ["first", t[1].as_str(), "meanwhile", "their answer", "second"]);
        assert!(
            fx.iter().any(|e| matches!(e, Effect::Persist(PersistOp::Adopt { from: 2, by: 2, branch: 0, .. }))),
            "{fx:?}"
        );
        // Nothing of theirs is saved again, and this screen's messages keep their new places.
        assert!(!fx.iter().any(|e| matches!(e, Effect::Persist(PersistOp::Save { position: 2 | 3, .. }))), "{fx:?}");
        let ids: Vec<u64> = s.transcript.cells.iter().filter_map(Cell::message).map(|m| m.id).collect();
        let path: Vec<u64> = s.persist.path.iter().map(|p| p.id).collect();
        assert_eq!(ids, path);
        let notice = s.transcript.cells.iter().find_map(|c| match c {
            Cell::Notice(n) if n.text.contains("another palaver added 2 messages") => Some(n.id),
            _ => None,
        });
        assert!(notice.is_some(), "said in a notice");
        assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("added 2 messages above")), "and on the status line");
        // The next request carries their turns, in order.
        let sent: Vec<String> = s.transcript.request_refs().iter().map(|m| m.text().to_owned()).collect();
        assert_eq!(&sent[2..4], ["meanwhile", "their answer"]);
    }

    #[test]
    fn turns_that_do_not_fit_are_only_said() {
        let mut s = open_and_send();
        let before = texts(&s);
        let mut other = added(2, 2);
        other.conv = "another".into();
        let fx = s.apply(Msg::Store(StoreMsg::Interleaved { added: Box::new(other), text: "words".into() }));
        assert_eq!(texts(&s), before);
        assert!(!fx.iter().any(|e| matches!(e, Effect::Persist(PersistOp::Adopt { .. }))));
        s.apply(Msg::Store(StoreMsg::Interleaved { added: Box::new(added(2, 3)), text: "gaps".into() }));
        assert_eq!(texts(&s), before, "positions with gaps are not renumbered");
    }
}
