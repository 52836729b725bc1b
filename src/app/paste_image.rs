//! `/paste-image` and Ctrl+V: the image on the system clipboard as an attachment chip. The
//! state asks; the interactive loop reads the clipboard off the UI task (with a timeout) and
//! answers through the attachment path (`AttachMsg::Loaded`, or `NoClipboardImage`).

use super::attach::AttachEffect;
use super::effect::Effect;
use super::state::State;

impl State {
    /// Asks for the clipboard's image; the chip (or why there is none) follows.
    pub(crate) fn paste_image(&mut self, fx: &mut Vec<Effect>) {
        self.flash("reading an image from the clipboard…");
        fx.push(Effect::Attach(AttachEffect::PasteImage {
            cmd: self.cfg.clipboard_image_cmd.clone(),
            policy: self.target.attachments,
        }));
    }
}

#[cfg(test)]
mod tests {
    use crate::app::attach::{AttachEffect, AttachMsg};
    use crate::app::{Effect, Msg};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    #[test]
    fn ctrl_v_and_the_command_ask_for_the_clipboard_with_the_configured_tool() {
        let mut s = crate::app::test_state();
        s.cfg.clipboard_image_cmd = Some(vec!["my-paste".into()]);
        let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Char('v'), KeyModifiers::CONTROL)));
        assert!(
            fx.iter().any(
                |e| matches!(e, Effect::Attach(AttachEffect::PasteImage { cmd: Some(c), .. }) if c == &["my-paste"])
            ),
            "{fx:?}"
        );
        s.composer.set_text("/paste-image");
        let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        assert!(fx.iter().any(|e| matches!(e, Effect::Attach(AttachEffect::PasteImage { .. }))), "{fx:?}");
        s.apply(Msg::Attach(AttachMsg::NoClipboardImage("no image on the clipboard (xclip: no image)".into())));
        let f = s.flash.clone().unwrap();
        assert!(f.error && f.text.contains("no image on the clipboard"), "{}", f.text);
        assert!(s.attachments.is_empty());
    }
}
