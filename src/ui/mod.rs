//! Pure drawing from `&State` plus a render cache; nothing here touches the network or disk.

pub mod highlight;
pub mod images;
pub mod images_draw;
pub mod json_view;
pub mod markdown;

pub mod cache;
pub mod cells;
pub mod compaction;
pub mod compare;
pub mod composer;
pub mod conversations;
pub mod frame_budget;
pub mod overlays;
pub mod panels;
pub mod probs;
pub mod queue;
pub mod safety;
pub mod slash_menu;
pub mod status;
pub mod stream_block;
pub mod stream_code;
pub mod stream_list;
pub mod stream_md;
pub mod stream_table;
pub mod transcript;
pub mod usage;
pub mod wrap;

pub mod approval;
pub mod elicit;
pub mod inspector;
pub mod item_card;
pub mod sample;
pub mod tool_card;

pub use cache::RenderCache;
// Moved below `app` (issue 15); drawing code keeps reaching them by their old names.
pub use crate::config::theme;
pub use crate::text::{fmt, sanitize};

use crate::app::State;
use crate::app::msg::ViewReport;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

/// Narrowest transcript the side panels may leave.
const MIN_TRANSCRIPT: u16 = 30;

/// The smallest screen the chat draws on (columns, rows): a frame, two transcript rows, the
/// composer and the status bar.
pub const MIN_SCREEN: (u16, u16) = (20, 8);

/// Paints `style` (the theme's base) on every cell of the frame, as a `Block` over the whole
/// area would, but straight over the cells: the block looks each one up by position, which
/// made this fill a large part of each frame's work.
pub fn fill(f: &mut Frame, style: ratatui::style::Style) {
    for cell in &mut f.buffer_mut().content {
        cell.set_style(style);
    }
}

/// Says the terminal is too small rather than drawing a transcript nobody can read.
fn too_small(f: &mut Frame, state: &State) {
    let area = f.area();
    let text = format!(
        "The terminal is too small for palaver ({}×{}); it needs {}×{} at least. Ctrl+Q quits.",
        area.width, area.height, MIN_SCREEN.0, MIN_SCREEN.1
    );
    let lines = wrap::plain(&text, usize::from(area.width.max(1)), state.theme.style(theme::Role::Warning));
    f.render_widget(ratatui::widgets::Paragraph::new(lines), area);
}

/// Where each part of the screen goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub transcript: Rect,
    pub panels: Option<Rect>,
    pub composer: Rect,
    pub status: Rect,
}

/// Splits the screen: transcript (and panels) above the composer, status bar at the bottom.
#[must_use]
pub fn areas(area: Rect, state: &State) -> Areas {
    let composer_h = composer::height(state, area.width, area.height);
    let [main, composer, status] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(composer_h), Constraint::Length(1)]).areas(area);
    let panel_w = (area.width * 3 / 10).clamp(28, 44);
    if state.panels_shown() && main.width >= panel_w + MIN_TRANSCRIPT {
        let [transcript, panels] =
            Layout::horizontal([Constraint::Min(MIN_TRANSCRIPT), Constraint::Length(panel_w)]).areas(main);
        return Areas { transcript, panels: Some(panels), composer, status };
    }
    Areas { transcript: main, panels: None, composer, status }
}

/// Draws the whole screen; returns what the transcript showed, for scrolling and the mouse.
pub fn draw(f: &mut Frame, state: &State, cache: &mut RenderCache) -> ViewReport {
    if state.compare.is_active() {
        return compare::draw(f, state, cache);
    }
    fill(f, state.theme.style(theme::Role::Base));
    if f.area().width < MIN_SCREEN.0 || f.area().height < MIN_SCREEN.1 {
        too_small(f, state);
        return ViewReport::default();
    }
    let a = areas(f.area(), state);
    let (transcript_area, queue_area) = queue::split(a.transcript, state);
    let mut report = transcript::draw(f, transcript_area, state, cache);
    queue::draw(f, queue_area, state);
    if let Some(p) = a.panels {
        panels::draw(f, p, state);
    }
    composer::draw(f, a.composer, state);
    slash_menu::draw(f, a.composer, state);
    status::draw(f, a.status, state);
    overlays::draw(f, state);
    report.composer = (a.composer.x, a.composer.y, a.composer.width, a.composer.height);
    report
}
