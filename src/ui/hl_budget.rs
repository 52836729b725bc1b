//! A bound on the syntax highlighting one frame does. A code block that scrolls into view
//! (or a long block that arrived between two frames) would otherwise have every line above
//! its visible rows highlighted in that frame, about 0.1 ms a line: a 200-line block is a
//! frame of 20 ms. While a [`FrameBudget`] is held, `LazyCode` highlights lines only until
//! the budget is spent; rows not yet reached are drawn plain for that frame, and the budget
//! reports that it was short so the frame loop draws again until every row is highlighted.
//! Without a budget (tests, snapshots, headless) highlighting is unbounded, as before.
//!
//! The budget lives in a thread-local because the rows are read through `&self` getters deep
//! inside the draw; it is set and cleared only by the guard, around one draw.

use std::cell::Cell;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

#[derive(Clone, Copy)]
struct Budget {
    /// Highlighting time left this frame, when bounded by time.
    time: Option<Duration>,
    /// Lines left this frame, when bounded by a count (deterministic, for tests).
    lines: Option<usize>,
    /// Some row was drawn plain because the budget was spent.
    starved: bool,
}

const UNBOUNDED: Budget = Budget { time: None, lines: None, starved: false };

thread_local! {
    static BUDGET: Cell<Budget> = const { Cell::new(UNBOUNDED) };
}

/// Bounds highlighting on this thread while held (one frame's draw).
pub struct FrameBudget {
    /// Tied to the thread whose budget it set.
    _thread: PhantomData<*const ()>,
}

impl FrameBudget {
    /// At most `limit` of highlighting (at least one line, so every frame makes progress).
    #[must_use]
    pub fn time(limit: Duration) -> Self {
        BUDGET.set(Budget { time: Some(limit), ..UNBOUNDED });
        Self { _thread: PhantomData }
    }

    /// At most `n` lines highlighted (at least one).
    #[must_use]
    pub fn lines(n: usize) -> Self {
        BUDGET.set(Budget { lines: Some(n.max(1)), ..UNBOUNDED });
        Self { _thread: PhantomData }
    }

    /// Whether some row was drawn plain for lack of budget: draw again.
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

/// Whether one more line may be highlighted now; when not, the frame is marked short.
pub(crate) fn allow() -> bool {
    let mut b = BUDGET.get();
    let left = b.time.is_none_or(|t| !t.is_zero()) && b.lines.is_none_or(|n| n > 0);
    if !left {
        b.starved = true;
        BUDGET.set(b);
    }
    left
}

/// Runs `f` (highlighting one line) and charges it to the budget.
pub(crate) fn charge<T>(f: impl FnOnce() -> T) -> T {
    if BUDGET.get().time.is_none() && BUDGET.get().lines.is_none() {
        return f();
    }
    let start = Instant::now();
    let out = f();
    let mut b = BUDGET.get();
    b.time = b.time.map(|t| t.saturating_sub(start.elapsed()));
    b.lines = b.lines.map(|n| n.saturating_sub(1));
    BUDGET.set(b);
    out
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
        }
        assert!(allow(), "no bound once the guard is dropped");
    }

    #[test]
    fn time_is_charged() {
        let b = FrameBudget::time(Duration::from_millis(1));
        assert!(allow());
        charge(|| std::thread::sleep(Duration::from_millis(2)));
        assert!(!allow());
        assert!(b.starved());
    }
}
