//! The frame scheduler: redraw requests are coalesced and capped at a frame rate, and nothing
//! is drawn when nothing asked. What the user typed is drawn sooner: a key does not wait for
//! the stream's next frame slot (up to 16.7 ms at 60 a second, on top of the frame's own work),
//! only for a quarter of it, which still bounds a flood of terminal events.
//! Pure over the `Instant`s it is given, so it is unit-tested.

use std::time::{Duration, Instant};

/// At most 60 frames a second.
pub const MAX_FPS: u32 = 60;

/// Coalesces redraw requests.
#[derive(Debug, Clone)]
pub struct FrameLimiter {
    interval: Duration,
    last: Option<Instant>,
    pending: bool,
    /// The pending frame shows input (see the module's comment).
    typed: bool,
}

impl Default for FrameLimiter {
    fn default() -> Self {
        Self::new(MAX_FPS)
    }
}

impl FrameLimiter {
    #[must_use]
    pub fn new(fps: u32) -> Self {
        Self { interval: Duration::from_secs(1) / fps.max(1), last: None, pending: false, typed: false }
    }

    /// Something changed: draw when allowed.
    pub fn request(&mut self) {
        self.pending = true;
    }

    /// What the user typed changed the screen: draw it as soon as the typed floor allows.
    pub fn request_typed(&mut self) {
        self.pending = true;
        self.typed = true;
    }

    /// The least time between the start of one frame and the next one's.
    fn gap(&self) -> Duration {
        if self.typed { self.interval / 4 } else { self.interval }
    }

    #[must_use]
    pub fn pending(&self) -> bool {
        self.pending
    }

    /// When the pending frame may be drawn; `None` when nothing is pending (stay idle).
    #[must_use]
    pub fn deadline(&self, now: Instant) -> Option<Instant> {
        if !self.pending {
            return None;
        }
        Some(self.last.map_or(now, |l| (l + self.gap()).max(now)))
    }

    /// Whether to draw now.
    #[must_use]
    pub fn ready(&self, now: Instant) -> bool {
        self.pending && self.last.is_none_or(|l| now >= l + self.gap())
    }

    /// A frame was drawn at `now`.
    pub fn drew(&mut self, now: Instant) {
        self.pending = false;
        self.typed = false;
        self.last = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_draws_nothing_and_bursts_coalesce() {
        let t0 = Instant::now();
        let mut f = FrameLimiter::new(60);
        assert!(!f.ready(t0));
        assert_eq!(f.deadline(t0), None);
        f.request();
        assert!(f.ready(t0), "the first frame is immediate");
        f.drew(t0);
        // A burst of requests inside one frame interval waits for the interval and draws once.
        let mut draws = 0;
        for ms in 1..=100u64 {
            let now = t0 + Duration::from_millis(ms);
            f.request();
            if f.ready(now) {
                f.drew(now);
                draws += 1;
            }
        }
        assert!(draws <= 6, "100 ms of constant requests drew {draws} frames");
        assert!(draws >= 5);
        // The last request is still owed a frame, then the limiter goes quiet.
        let later = t0 + Duration::from_secs(5);
        assert!(f.ready(later));
        f.drew(later);
        assert!(!f.ready(later + Duration::from_secs(5)), "nothing requested, nothing drawn");
        assert_eq!(f.deadline(later), None);
    }

    #[test]
    fn deadline_is_the_next_slot() {
        let t0 = Instant::now();
        let mut f = FrameLimiter::new(50);
        f.drew(t0);
        f.request();
        assert_eq!(f.deadline(t0 + Duration::from_millis(5)), Some(t0 + Duration::from_millis(20)));
        assert_eq!(f.deadline(t0 + Duration::from_millis(30)), Some(t0 + Duration::from_millis(30)));
    }

    #[test]
    fn typed_input_does_not_wait_for_the_streams_slot_but_a_flood_is_still_capped() {
        let t0 = Instant::now();
        let mut f = FrameLimiter::new(60);
        f.drew(t0);
        f.request();
        let at = t0 + Duration::from_millis(5);
        assert!(!f.ready(at), "a stream's frame waits for its slot");
        f.request_typed();
        assert!(f.ready(at), "a key is drawn at once");
        assert_eq!(f.deadline(t0 + Duration::from_millis(1)), Some(t0 + Duration::from_secs(1) / 240));
        f.drew(at);
        // Keys arriving without pause draw at most 240 frames a second.
        let mut draws = 0;
        for ms in 6..=105u64 {
            let now = t0 + Duration::from_millis(ms);
            f.request_typed();
            if f.ready(now) {
                f.drew(now);
                draws += 1;
            }
        }
        assert!((20..=25).contains(&draws), "100 ms of keys drew {draws} frames");
        // Once drawn, the next stream frame waits for a whole slot again.
        f.request();
        assert!(!f.ready(t0 + Duration::from_millis(110)));
    }
}
