//! Transcript scrolling. The state keeps an anchor (a line within a cell) and whether to follow
//! the bottom; only the view knows cell heights, so it normalises the anchor while drawing and
//! reports back where it settled (`Msg::Viewport`).

use super::msg::{Anchor, ViewReport};
use super::state::State;

impl State {
    /// Scrolls by `delta` lines (negative is up). Scrolling up stops following the bottom.
    pub(crate) fn scroll_by(&mut self, delta: i64) {
        if self.scroll.follow {
            if delta >= 0 {
                return;
            }
            self.scroll.follow = false;
            self.scroll.anchor = self.view.top;
        }
        self.scroll.anchor.line += delta;
    }

    pub(crate) fn scroll_top(&mut self) {
        self.scroll.follow = false;
        self.scroll.anchor = Anchor::default();
    }

    /// Back to the bottom, following new output.
    pub(crate) fn scroll_bottom(&mut self) {
        self.scroll.follow = true;
        self.unseen = false;
    }

    pub(crate) fn scroll_to_cell(&mut self, index: usize) {
        self.scroll.follow = false;
        self.scroll.anchor = Anchor { cell: index, line: 0 };
    }

    /// Lines a page scroll moves: the visible height less two lines of context.
    #[must_use]
    pub fn page(&self) -> i64 {
        i64::from(self.view.height.saturating_sub(2).max(1))
    }

    /// Takes the view's report. Reaching the bottom by scrolling resumes following. Marks the
    /// state dirty only when something visible changes, so a report never causes a redraw loop.
    pub(crate) fn on_viewport(&mut self, r: ViewReport) {
        if !self.scroll.follow {
            self.scroll.anchor = r.top;
            if r.at_bottom {
                self.scroll.follow = true;
                if self.unseen {
                    self.unseen = false;
                    self.dirty = true;
                }
            }
        }
        self.view = r;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_unfollows_and_bottom_refollows() {
        let mut s = crate::app::test_state();
        s.view = ViewReport { top: Anchor { cell: 4, line: 2 }, height: 20, ..ViewReport::default() };
        s.scroll_by(3);
        assert!(s.scroll.follow, "scrolling down while following changes nothing");
        s.scroll_by(-3);
        assert!(!s.scroll.follow);
        assert_eq!(s.scroll.anchor, Anchor { cell: 4, line: -1 });
        s.on_viewport(ViewReport {
            top: Anchor { cell: 3, line: 5 },
            at_bottom: false,
            height: 20,
            ..ViewReport::default()
        });
        assert_eq!(s.scroll.anchor, Anchor { cell: 3, line: 5 });
        s.unseen = true;
        s.on_viewport(ViewReport {
            top: Anchor { cell: 3, line: 9 },
            at_bottom: true,
            height: 20,
            ..ViewReport::default()
        });
        assert!(s.scroll.follow);
        assert!(!s.unseen);
    }
}
