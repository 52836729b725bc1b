//! The progress bar of a prompt-set run, on stderr when stderr is a terminal (nothing at all
//! otherwise): cells done of the total, failures, retries, the rate and the time left. Drawn
//! ten times a second by a task of its own from counters the workers bump; one line, redrawn
//! in place.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The counters.
pub struct Progress {
    pub total: u64,
    /// Cells already stored when the run started (a resume).
    pub before: u64,
    done: AtomicU64,
    failed: AtomicU64,
    retries: AtomicU64,
    started: Instant,
}

impl Progress {
    #[must_use]
    pub fn new(total: u64, before: u64) -> Self {
        Self {
            total,
            before,
            done: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            started: Instant::now(),
        }
    }

    /// A cell finished (ok or failed).
    pub fn finished(&self, ok: bool) {
        self.done.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A request is being retried (429, 5xx).
    pub fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// Cells finished in this process.
    #[must_use]
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// The bar as one line for a terminal `width` columns wide.
    #[must_use]
    pub fn line(&self, width: usize, elapsed: Duration) -> String {
        let done = self.done.load(Ordering::Relaxed);
        let failed = self.failed.load(Ordering::Relaxed);
        let retries = self.retries.load(Ordering::Relaxed);
        let all = self.before + done;
        let secs = elapsed.as_secs_f64();
        #[allow(clippy::cast_precision_loss)]
        let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
        let left = self.total.saturating_sub(all);
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let eta = if rate > 0.0 { fmt_secs((left as f64 / rate) as u64) } else { "–".into() };
        let mut tail = format!(" {all}/{} · {failed} failed", self.total);
        if retries > 0 {
            tail.push_str(&format!(" · {retries} retries"));
        }
        tail.push_str(&format!(" · {rate:.1}/s · ETA {eta}"));
        let bar_w = width.saturating_sub(tail.chars().count() + 2).clamp(0, 40);
        #[allow(clippy::cast_possible_truncation)]
        let filled = if self.total == 0 { bar_w } else { (all.min(self.total) as usize * bar_w) / self.total as usize };
        format!("[{}{}]{tail}", "█".repeat(filled), "░".repeat(bar_w - filled))
    }

    /// Draws the bar until `stop` resolves, then clears it.
    pub async fn draw_until(&self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tokio::select! {
                () = &mut stop => break,
                _ = tick.tick() => {
                    let width = crossterm::terminal::size().map_or(80, |(w, _)| usize::from(w));
                    let line = self.line(width.saturating_sub(1), self.started.elapsed());
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[2K{line}");
                    let _ = err.flush();
                }
            }
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
}

fn fmt_secs(s: u64) -> String {
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_done_failed_rate_and_eta() {
        let p = Progress::new(100, 10);
        for ok in [true, true, false, true] {
            p.finished(ok);
        }
        p.retried();
        let line = p.line(100, Duration::from_secs(2));
        assert!(line.contains(" 14/100 · 1 failed · 1 retries · 2.0/s · ETA 43s"), "{line}");
        assert!(line.starts_with('['));
        assert!(line.chars().count() <= 100, "{line}");
    }
}
