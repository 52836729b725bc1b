//! A status-bar flash goes away as soon as what it says stops being true.

use super::attach::AttachMsg;
use super::effect::Effect;
use super::msg::Msg;
use super::test_state;
use crate::api::client::WireEvent;
use crate::api::event::StreamEvent;
use crate::engine::message::ErrorInfo;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn send(s: &mut super::state::State, text: &str) -> u64 {
    for c in text.chars() {
        s.apply(key(KeyCode::Char(c)));
    }
    let fx = s.apply(key(KeyCode::Enter));
    fx.iter()
        .find_map(|e| match e {
            Effect::StartRequest { id, .. } => Some(*id),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no request in {fx:?}"))
}

fn flash(s: &super::state::State) -> String {
    s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default()
}

#[test]
fn the_attachment_note_goes_with_the_chip() {
    let mut s = test_state();
    let mut bytes = Vec::new();
    image::RgbImage::new(4, 4).write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
    let png = crate::engine::attachment::Attachment::from_bytes("p.png", bytes).unwrap();
    s.apply(Msg::Attach(AttachMsg::Loaded { spec: "p.png".into(), result: Ok(png), paste: None }));
    assert!(flash(&s).contains("attached p.png"), "{}", flash(&s));
    send(&mut s, "look");
    assert!(s.attachments.is_empty());
    assert_eq!(flash(&s), "", "the chip went with the message: the note about it goes too");
}

#[test]
fn a_retry_note_goes_when_the_reply_streams() {
    let mut s = test_state();
    let id = send(&mut s, "hi");
    let retry = WireEvent::Retrying { attempt: 1, wait_ms: 2000, reason: "HTTP 503: busy".into() };
    s.apply(Msg::Wire { id, event: Box::new(retry), now_ms: 10 });
    assert!(flash(&s).contains("retry 1 in 2.0 s"), "{}", flash(&s));
    s.apply(Msg::Tick { now_ms: 100 });
    assert!(flash(&s).contains("retry 1"), "still true while it waits");
    let events = vec![StreamEvent::Text { choice: 0, delta: "Hello".into() }];
    let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 5 };
    s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 2100 });
    assert_eq!(flash(&s), "", "the retry worked: the note is no longer true");
}

#[test]
fn the_draft_back_note_goes_when_the_draft_is_sent_or_cleared() {
    let mut s = test_state();
    let id = send(&mut s, "try this");
    let err =
        ErrorInfo { status: Some(400), message: "bad".into(), kind: "http".into(), body: serde_json::Value::Null };
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Failed(err)), now_ms: 50 });
    assert!(flash(&s).contains("back in the composer"), "{}", flash(&s));
    s.apply(key(KeyCode::Char('!')));
    assert!(flash(&s).contains("back in the composer"), "still true while the draft is there");
    send(&mut s, "");
    assert_eq!(flash(&s), "");
}
