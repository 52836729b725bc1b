//! Drawing one image slot of a transcript cell: the picture when it is ready (half-block rows as
//! far as they are on screen; a protocol picture only when wholly on screen, as kitty, iTerm2
//! and sixel cannot draw part of an image), else a one-line placeholder. Never decodes.

use super::images::{Images, Picture, Slot};
use super::theme::{Role as R, Theme};
use super::transcript::ImageRows;
use ratatui::Frame;
use ratatui::layout::Rect;

/// Draws `slot` over the rows its cell reserved, as far as they are on screen.
pub fn draw(f: &mut Frame, images: &mut Images, slot: &Slot, rows: &ImageRows, theme: &Theme) {
    let start = rows.header + slot.row;
    let end = start + usize::from(slot.rows);
    let shown_from = rows.from;
    let shown_to = rows.from + usize::from(rows.drawn);
    if end <= shown_from || start >= shown_to {
        return;
    }
    let screen = |r: usize| rows.first + u16::try_from(r - shown_from).unwrap_or(0);
    let width = f.area().width.saturating_sub(rows.x);
    let dim = theme.style(R::Dim);
    match images.get(slot) {
        Some(Picture::Lines(lines)) => {
            let buf = f.buffer_mut();
            let right = buf.area.right();
            for r in start.max(shown_from)..end.min(shown_to) {
                let Some(l) = lines.get(r - start) else { continue };
                // One cell per span, written directly: no grapheme work for a picture's rows.
                let y = screen(r);
                for (x, span) in (rows.x..right.min(rows.x.saturating_add(width))).zip(&l.spans) {
                    buf[(x, y)].set_symbol(&span.content).set_style(span.style);
                }
            }
        }
        Some(Picture::Protocol(p)) if start >= shown_from && end <= shown_to => {
            let area = Rect::new(rows.x, screen(start), slot.cols.min(width), slot.rows);
            f.render_widget(ratatui_image::Image::new(p), area);
        }
        other => {
            // Not drawable here: one line saying why, on the first row of the slot on screen.
            let label = super::sanitize::sanitize(&slot.label);
            let text = match other {
                Some(Picture::Failed(e)) => format!("▣ {label}: {e}"),
                None => format!("◌ drawing {label}…"),
                Some(_) => format!("▣ {label} (scroll to see it whole)"),
            };
            f.buffer_mut().set_stringn(rows.x, screen(start.max(shown_from)), text, usize::from(width), dim);
        }
    }
}
