//! Drawing an app state into a `TestBackend` for screen tests.

use palaver::app::{Msg, State};
use palaver::ui::{self, RenderCache};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;

/// Draws `s` at `w`×`h` twice, as the loop does: the first draw reports the viewport back to
/// the state, the second shows the settled view. Returns the screen.
pub fn settle(s: &mut State, w: u16, h: u16, cache: &mut RenderCache) -> Buffer {
    s.apply(Msg::Resize { width: w, height: h });
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    for _ in 0..2 {
        let mut report = None;
        term.draw(|f| report = Some(ui::draw(f, s, cache))).unwrap();
        s.apply(Msg::Viewport(report.unwrap()));
    }
    term.backend().buffer().clone()
}

/// The screen as text, one row a line, trailing spaces trimmed.
pub fn text(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
