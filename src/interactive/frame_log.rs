//! The opt-in frame log (`PALAVER_FRAME_LOG=path`): one line a frame, appended as it is drawn,
//! with when it was drawn and how long the loop worked for it, for the latency bench
//! (`benches/latency.py`). Off by default: without the variable nothing is timed or written.
//!
//! A line is `frame UNIX_US DRAW_US APPLY_US LIVE RUN_US WAIT_US`: the wall clock at the frame's
//! start (comparable with the bench's own clock), the frame's draw (layout, render, diff, write),
//! the messages applied since the previous frame, keys included (the work a key waited for),
//! 1 while a reply streams (the first frame with 0 after it lays out the finished answer), and
//! of the draw's wall time, how long the thread ran and how long it waited for a CPU (Linux's
//! `/proc/thread-self/schedstat`; both 0 elsewhere). The last two tell palaver's own work from
//! a busy machine's: a draw that took 40 ms of which 35 waited for a core is not slow code.

use std::fs::File;
use std::io::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The log, when asked for.
#[derive(Default)]
pub struct FrameLog {
    file: Option<File>,
    /// Time spent applying messages since the last frame.
    applied: Duration,
}

impl FrameLog {
    /// Opens the file `PALAVER_FRAME_LOG` names (appending); off when unset or unopenable.
    #[must_use]
    pub fn from_env() -> Self {
        let file = std::env::var_os("PALAVER_FRAME_LOG")
            .filter(|p| !p.is_empty())
            .and_then(|p| std::fs::OpenOptions::new().create(true).append(true).open(p).ok());
        Self { file, applied: Duration::ZERO }
    }

    /// Whether frames are timed at all.
    #[must_use]
    pub fn on(&self) -> bool {
        self.file.is_some()
    }

    /// Messages were applied for `d`.
    pub fn applied(&mut self, d: Duration) {
        self.applied += d;
    }

    /// The thread's scheduler figures now, to be given back to [`Self::frame`]; nothing when off.
    #[must_use]
    pub fn before_draw(&self) -> Option<SchedStat> {
        self.file.as_ref().map(|_| SchedStat::now())
    }

    /// A frame started at `start` was drawn in `draw`; `live` while a reply streams; `before`
    /// is what [`Self::before_draw`] said just before it.
    pub fn frame(&mut self, start: Instant, draw: Duration, live: bool, before: Option<SchedStat>) {
        let Some(file) = &mut self.file else { return };
        let after = SchedStat::now();
        let (run_us, wait_us) = before.map_or((0, 0), |b| {
            (after.run_ns.saturating_sub(b.run_ns) / 1000, after.wait_ns.saturating_sub(b.wait_ns) / 1000)
        });
        let back = start.elapsed();
        let wall = SystemTime::now().checked_sub(back).unwrap_or_else(SystemTime::now);
        let unix_us = wall.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros());
        let line = format!(
            "frame {unix_us} {} {} {} {run_us} {wait_us}\n",
            draw.as_micros(),
            self.applied.as_micros(),
            u8::from(live)
        );
        self.applied = Duration::ZERO;
        // A log that cannot be written is no reason to stop the chat screen.
        let _ = file.write_all(line.as_bytes());
    }
}

/// How long this thread has run and waited for a CPU, in nanoseconds since it started.
#[derive(Debug, Clone, Copy, Default)]
pub struct SchedStat {
    run_ns: u64,
    wait_ns: u64,
}

impl SchedStat {
    /// Read from `/proc/thread-self/schedstat` ("run wait slices"); zeros where there is none.
    fn now() -> Self {
        let stat = std::fs::File::open("/proc/thread-self/schedstat").and_then(|f| crate::sys::read::head(f, 256));
        let text = String::from_utf8_lossy(&stat.unwrap_or_default()).into_owned();
        let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().unwrap_or(0));
        Self { run_ns: fields.next().unwrap_or(0), wait_ns: fields.next().unwrap_or(0) }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read what they wrote
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_one_line_with_its_times() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("frames.log");
        let mut log = FrameLog { file: Some(File::create(&path).unwrap()), applied: Duration::ZERO };
        assert!(log.on());
        log.applied(Duration::from_micros(300));
        log.applied(Duration::from_micros(200));
        log.frame(Instant::now(), Duration::from_micros(1234), true, None);
        let before = log.before_draw();
        assert!(before.is_some());
        log.frame(Instant::now(), Duration::from_micros(7), false, before);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0][0], "frame");
        assert!(lines[0][1].parse::<u128>().unwrap() > 1_600_000_000_000_000, "a wall-clock time in µs");
        assert_eq!(&lines[0][2..], ["1234", "500", "1", "0", "0"]);
        assert_eq!(&lines[1][2..5], ["7", "0", "0"], "the applied time starts over after each frame");
        assert_eq!(lines[1].len(), 7);
        // Off: nothing timed, nothing written.
        let mut off = FrameLog::default();
        assert!(!off.on());
        assert!(off.before_draw().is_none());
        off.frame(Instant::now(), Duration::from_micros(1), false, None);
    }
}
