//! Bounds on the work one frame does for text that arrived faster than frames are drawn.
//!
//! - **Highlighting.** A code block that scrolls into view (or a long block that arrived
//!   between two frames) would otherwise have every line above its visible rows highlighted
//!   in that frame, about 0.1 ms a line: a 200-line block is a frame of 20 ms. `LazyCode`
//!   highlights lines only until its allowance is spent; rows not yet reached are drawn plain
//!   for that frame.
//! - **Markdown layout.** Four compare columns streaming at full speed bring tens of kilobytes
//!   each between two frames. `StreamingMarkdown` lays out complete lines only until its
//!   allowance is spent; the column shows the answer as far as it got, and goes on from there
//!   in the next frame (each line still laid out once). The columns share it evenly (see
//!   [`share_layout`]): one column's burst does not hold the others still.
//!
//! Either way the budget reports that it was short, so the frame loop draws again until the
//! screen has caught up. Without a budget (tests, snapshots, headless) the work is unbounded,
//! as before.
//!
//! The budget lives in a thread-local because the rows are read through `&self` getters deep
//! inside the draw; it is set and cleared only by the guard, around one draw.

use std::cell::Cell;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// What one kind of work may still spend this frame.
#[derive(Clone, Copy)]
struct Allowance {
    /// Time left, when bounded by time.
    time: Option<Duration>,
    /// Lines left, when bounded by a count (deterministic, for tests).
    lines: Option<usize>,
}

impl Allowance {
    const UNBOUNDED: Self = Self { time: None, lines: None };

    fn bounded(self) -> bool {
        self.time.is_some() || self.lines.is_some()
    }

    fn left(self) -> bool {
        self.time.is_none_or(|t| !t.is_zero()) && self.lines.is_none_or(|n| n > 0)
    }

    fn spend(&mut self, took: Duration) {
        self.time = self.time.map(|t| t.saturating_sub(took));
        self.lines = self.lines.map(|n| n.saturating_sub(1));
    }
}

#[derive(Clone, Copy)]
struct Budget {
    highlight: Allowance,
    /// The frame's markdown layout, all answers together.
    layout: Allowance,
    /// The part of `layout` the answer being laid out may still spend (see [`layout_start`]).
    call: Allowance,
    /// What `layout` was at the start, and how many answers share it.
    layout_total: Allowance,
    share: u32,
    /// Some work was left for the next frame because an allowance was spent.
    starved: bool,
}

const UNBOUNDED: Budget = Budget {
    highlight: Allowance::UNBOUNDED,
    layout: Allowance::UNBOUNDED,
    call: Allowance::UNBOUNDED,
    layout_total: Allowance::UNBOUNDED,
    share: 1,
    starved: false,
};

thread_local! {
    static BUDGET: Cell<Budget> = const { Cell::new(UNBOUNDED) };
}

/// Bounds highlighting and markdown layout on this thread while held (one frame's draw).
pub struct FrameBudget {
    /// Tied to the thread whose budget it set.
    _thread: PhantomData<*const ()>,
}

impl FrameBudget {
    fn set(highlight: Allowance, layout: Allowance) -> Self {
        BUDGET.set(Budget { highlight, layout, call: layout, layout_total: layout, ..UNBOUNDED });
        Self { _thread: PhantomData }
    }

    /// At most `highlight` of highlighting and `layout` of markdown layout (each at least one
    /// line, so every frame makes progress).
    #[must_use]
    pub fn time(highlight: Duration, layout: Duration) -> Self {
        let by_time = |t| Allowance { time: Some(t), lines: None };
        Self::set(by_time(highlight), by_time(layout))
    }

    /// At most `n` lines highlighted (at least one); layout unbounded.
    #[must_use]
    pub fn lines(n: usize) -> Self {
        Self::set(Allowance { time: None, lines: Some(n.max(1)) }, Allowance::UNBOUNDED)
    }

    /// At most `n` markdown lines laid out (at least one); highlighting unbounded.
    #[must_use]
    pub fn layout_lines(n: usize) -> Self {
        Self::set(Allowance::UNBOUNDED, Allowance { time: None, lines: Some(n.max(1)) })
    }

    /// Whether some work was left for lack of budget: draw again.
    #[must_use]
    pub fn starved(&self) -> bool {
        BUDGET.get().starved
    }
}

impl Drop for FrameBudget {
    fn drop(&mut self) {
        BUDGET.set(UNBOUNDED);
    }
}

/// Whether `pick`'s allowance has something left; when not, the frame is marked short.
fn allow_of(pick: fn(&mut Budget) -> &mut Allowance) -> bool {
    let left = pick(&mut BUDGET.get()).left();
    if !left {
        more_to_draw();
    }
    left
}

/// Runs `f` and charges its time to each allowance `picks` names (unbounded ones are not timed).
fn charge_to<T>(picks: &[fn(&mut Budget) -> &mut Allowance], f: impl FnOnce() -> T) -> T {
    if !picks.iter().any(|pick| pick(&mut BUDGET.get()).bounded()) {
        return f();
    }
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    let mut b = BUDGET.get();
    for pick in picks {
        pick(&mut b).spend(took);
    }
    BUDGET.set(b);
    out
}

/// Whether one more line may be highlighted now; when not, the frame is marked short.
pub(crate) fn allow() -> bool {
    allow_of(|b| &mut b.highlight)
}

/// Runs `f` (highlighting one line) and charges it to the budget.
pub(crate) fn charge<T>(f: impl FnOnce() -> T) -> T {
    charge_to(&[|b| &mut b.highlight], f)
}

/// The markdown layout of this frame is shared by `n` answers drawn side by side (compare
/// columns): each may spend at most an `n`th of it.
pub fn share_layout(n: usize) {
    let mut b = BUDGET.get();
    b.share = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
    BUDGET.set(b);
}

/// Some work goes on off this frame (an answer's final check on a helper thread): draw again.
pub(crate) fn more_to_draw() {
    let mut b = BUDGET.get();
    b.starved = true;
    BUDGET.set(b);
}

/// Whether the markdown layout is bounded this frame (it may then stop short).
pub(crate) fn layout_bounded() -> bool {
    BUDGET.get().layout.bounded()
}

/// One answer's layout starts: what it may spend is its share of the frame's, within what is
/// left of it.
pub(crate) fn layout_start() {
    let mut b = BUDGET.get();
    let (total, left) = (b.layout_total, b.layout);
    b.call = Allowance {
        time: total.time.zip(left.time).map(|(t, l)| (t / b.share).min(l)),
        lines: total.lines.zip(left.lines).map(|(t, l)| (t / b.share as usize).max(1).min(l)),
    };
    BUDGET.set(b);
}

/// Whether one more markdown line may be laid out now; when not, the frame is marked short.
pub(crate) fn layout_allow() -> bool {
    allow_of(|b| &mut b.call)
}

/// Runs `f` (laying out one line, or re-rendering an open block) and charges it to the budget.
pub(crate) fn layout_charge<T>(f: impl FnOnce() -> T) -> T {
    charge_to(&[|b| &mut b.layout, |b| &mut b.call], f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_and_the_guard_clears_the_bound() {
        {
            let b = FrameBudget::lines(2);
            assert!(allow());
            charge(|| ());
            assert!(allow());
            charge(|| ());
            assert!(!b.starved());
            assert!(!allow());
            assert!(b.starved());
            assert!(layout_allow() && !layout_bounded(), "layout is not bounded by a highlight count");
        }
        assert!(allow(), "no bound once the guard is dropped");
    }

    #[test]
    fn time_is_charged_to_its_own_allowance() {
        let b = FrameBudget::time(Duration::from_millis(1), Duration::from_millis(50));
        assert!(allow());
        charge(|| std::thread::sleep(Duration::from_millis(2)));
        assert!(!allow());
        assert!(b.starved());
        assert!(layout_allow(), "highlighting spent only its own time");
        layout_charge(|| std::thread::sleep(Duration::from_millis(2)));
        assert!(layout_allow());
    }

    #[test]
    fn answers_side_by_side_share_the_layout_evenly() {
        let b = FrameBudget::layout_lines(8);
        share_layout(4);
        for answer in 0..4 {
            layout_start();
            let mut laid = 0;
            while layout_allow() {
                layout_charge(|| ());
                laid += 1;
            }
            assert_eq!(laid, 2, "answer {answer} laid out {laid} lines");
        }
        layout_start();
        assert!(!layout_allow(), "the frame's layout is spent");
        assert!(b.starved());
    }
}
