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

/// The chat screen on the demo with two of the user's commands: `/review` (a user command
/// whose file is `review`) and `/release-notes` (a workspace one taking `$1`).
pub fn with_user_commands(review: &str) -> State {
    use palaver::config::commands::{CommandSource, parse};
    let cfg = palaver::config::Config::parse("", std::path::Path::new("config.toml")).unwrap();
    let theme = palaver::ui::theme::Theme::load("dark", None, true).unwrap();
    let settings = palaver::engine::target::TurnSettings { stream: true, ..Default::default() };
    let target = palaver::app::TargetInfo::new("demo", "demo", palaver::api::Api::Chat);
    let mut s = State::new(target, settings, cfg, theme, "dark");
    s.mine.commands = vec![
        parse("review", review, CommandSource::User, std::path::PathBuf::from("review.md")),
        parse("release-notes", "Write release notes for $1", CommandSource::Workspace, "r.md".into()),
    ];
    s
}
