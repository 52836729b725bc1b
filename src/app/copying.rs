//! What the status bar says about a copy: "copied" only when something confirmed it received
//! the text (a system clipboard tool); OSC 52 alone is "sent to the terminal", and inside a
//! tmux that drops OSC 52 the flash says how to turn it on.

use super::msg::Copied;
use super::state::State;

impl State {
    /// A copy of `what` ("12 characters") is on its way; the clipboard's answer finishes the note.
    pub(crate) fn copying(&mut self, what: String) {
        self.flash(format!("copying {what}…"));
        self.copying = Some(what);
    }

    /// The clipboard answered.
    pub(crate) fn copied(&mut self, c: &Copied) {
        let what = self.copying.take().unwrap_or_else(|| "the text".to_owned());
        // Short: the status bar cuts a flash to the room beside the reply's state.
        match (&c.tool, c.tmux_drops_osc52) {
            (Some(tool), _) => self.flash(format!("copied {what} ({tool})")),
            (None, true) => self.flash_error("not copied: tmux drops OSC 52 (set -g set-clipboard on)"),
            (None, false) => self.flash(format!("sent {what} by OSC 52 (unconfirmed: no clipboard tool)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copied_only_when_a_tool_took_it() {
        let mut s = crate::app::test_state();
        s.copying("5 characters".into());
        assert!(s.flash.as_ref().is_some_and(|f| f.text.starts_with("copying")));
        s.copied(&Copied { tool: Some("wl-copy".into()), ..Copied::default() });
        assert_eq!(s.flash.as_ref().map(|f| f.text.as_str()), Some("copied 5 characters (wl-copy)"));
        s.copying("5 characters".into());
        s.copied(&Copied {
            tool_error: Some("no clipboard tool found (wl-copy, xclip, xsel, pbcopy)".into()),
            ..Copied::default()
        });
        let text = s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
        assert_eq!(text, "sent 5 characters by OSC 52 (unconfirmed: no clipboard tool)");
        s.copying("5 characters".into());
        s.copied(&Copied { tmux_drops_osc52: true, ..Copied::default() });
        assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("set -g set-clipboard on")));
    }
}
