//! Before a message goes: an image to a model the catalogue says takes none is said so.

use super::attach::AttachMsg;
use super::effect::Effect;
use super::msg::Msg;
use super::test_state;
use super::transcript::{Cell, NoticeKind};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn send_with_png(model: &str) -> (super::state::State, Vec<Effect>) {
    let mut s = test_state();
    s.target.model = model.to_owned();
    let mut bytes = Vec::new();
    image::RgbImage::new(4, 4).write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
    let png = crate::engine::attachment::Attachment::from_bytes("p.png", bytes).unwrap();
    s.apply(Msg::Attach(AttachMsg::Loaded { spec: "p.png".into(), result: Ok(png), paste: None }));
    for c in "look".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    (s, fx)
}

fn warnings(s: &super::state::State) -> Vec<String> {
    s.transcript
        .cells
        .iter()
        .filter_map(|c| match c {
            Cell::Notice(n) if n.kind == NoticeKind::Info && n.text.contains("takes no images") => Some(n.text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_image_to_a_model_that_takes_none_is_warned_about_and_still_sent() {
    let (s, fx) = send_with_png("gpt-3.5-turbo");
    let w = warnings(&s);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("gpt-3.5-turbo") && w[0].contains("openai/gpt-3.5-turbo"), "{w:?}");
    assert!(fx.iter().any(|e| matches!(e, Effect::StartRequest { .. })), "a warning, not a refusal");
    // A model that takes images, or one nobody knows, gets no warning.
    assert!(warnings(&send_with_png("gpt-4o-mini").0).is_empty());
    assert!(warnings(&send_with_png("demo").0).is_empty());
}
