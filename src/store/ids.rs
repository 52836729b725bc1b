//! Conversation ids, titles and the UTC timestamps the store shows. Hand-rolled because the
//! store needs only "unix ms ↔ calendar date in UTC", not a date-time library.

use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Titles longer than this are cut at a word boundary and end with `…`.
pub const TITLE_CHARS: usize = 60;

/// Wall clock in unix milliseconds.
#[must_use]
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A new conversation id like `20261122-054512-3f9a`: sortable by creation second, readable,
/// short enough to type. Within one process ids created in the same second get consecutive
/// suffixes from a random start, so they never collide; across processes a collision needs
/// two conversations in the same second with the same 16 random bits.
#[must_use]
pub fn new_id(now_ms: u64) -> String {
    static LAST: Mutex<(u64, u16)> = Mutex::new((u64::MAX, 0));
    let secs = now_ms / 1000;
    let suffix = {
        let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        last.1 = if last.0 == secs { last.1.wrapping_add(1) } else { random_u16() };
        last.0 = secs;
        last.1
    };
    let c = Civil::from_ms(now_ms);
    format!("{:04}{:02}{:02}-{:02}{:02}{:02}-{suffix:04x}", c.year, c.month, c.day, c.hour, c.minute, c.second)
}

/// 16 bits from the standard library's per-process random hash keys, mixed with the clock.
fn random_u16() -> u16 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    (h.finish() & 0xffff) as u16
}

/// A title from the first prompt: its first non-blank line, whitespace collapsed, at most
/// [`TITLE_CHARS`] characters.
#[must_use]
pub fn title_from_prompt(prompt: &str) -> String {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let flat = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= TITLE_CHARS {
        return flat;
    }
    let cut: String = flat.chars().take(TITLE_CHARS - 1).collect();
    // Prefer a word boundary unless it would throw away most of the title.
    let cut = match cut.rfind(' ') {
        Some(i) if i > TITLE_CHARS / 2 => cut[..i].to_owned(),
        _ => cut,
    };
    format!("{}…", cut.trim_end())
}

/// A UTC calendar time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub milli: u32,
}

impl Civil {
    /// Howard Hinnant's `civil_from_days`.
    #[must_use]
    pub fn from_ms(ms: u64) -> Self {
        let ms = i64::try_from(ms).unwrap_or(i64::MAX);
        let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        let rem = rem as u32;
        Self {
            year,
            month,
            day,
            hour: rem / 3_600_000,
            minute: rem / 60_000 % 60,
            second: rem / 1000 % 60,
            milli: rem % 1000,
        }
    }

    /// Howard Hinnant's `days_from_civil`, back to unix ms.
    #[must_use]
    pub fn to_ms(self) -> u64 {
        let y = self.year - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.month);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        let ms = days * 86_400_000
            + i64::from(self.hour) * 3_600_000
            + i64::from(self.minute) * 60_000
            + i64::from(self.second) * 1000
            + i64::from(self.milli);
        u64::try_from(ms).unwrap_or(0)
    }
}

/// `2026-11-22 05:45` (UTC), for one-line listings.
#[must_use]
pub fn short_date(ms: u64) -> String {
    let c = Civil::from_ms(ms);
    format!("{:04}-{:02}-{:02} {:02}:{:02}", c.year, c.month, c.day, c.hour, c.minute)
}

/// RFC 3339 in UTC with milliseconds: `2026-11-22T05:45:12.345Z`.
#[must_use]
pub fn rfc3339(ms: u64) -> String {
    let c = Civil::from_ms(ms);
    format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", c.year, c.month, c.day, c.hour, c.minute, c.second, c.milli)
}

/// Parses what [`rfc3339`] writes (the fraction is optional); `None` for anything else,
/// including fields out of range (month 13, minute 75, a year before 1970).
#[must_use]
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.splitn(3, '-');
    let (year, month, day) = (d.next()?.parse().ok()?, d.next()?.parse().ok()?, d.next()?.parse().ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.splitn(3, ':');
    let (hour, minute, second) = (t.next()?.parse().ok()?, t.next()?.parse().ok()?, t.next()?.parse().ok()?);
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let milli = format!("{frac:0<3}").get(..3)?.parse().ok()?;
    let in_range = (1970..=9999).contains(&year)
        && (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 61;
    if !in_range {
        return None;
    }
    Some(Civil { year, month, day, hour, minute, second, milli }.to_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        for ms in [0, 951_782_400_000, 1_795_326_312_345, 4_102_444_799_999] {
            assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms), "{}", rfc3339(ms));
        }
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(short_date(0), "1970-01-01 00:00");
        for bad in ["2026-13-01T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00:00.x1Z", "1969-12-31T23:59:59Z"] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn ids_are_unique_and_shaped() {
        let a = new_id(1_795_326_312_000);
        let b = new_id(1_795_326_312_500);
        assert_ne!(a, b);
        assert_eq!(a.len(), "20261122-054512-3f9a".len());
        assert!(a.starts_with("20261122-"), "{a}");
    }

    #[test]
    fn titles() {
        assert_eq!(title_from_prompt("\n  hello   world \nsecond"), "hello world");
        let long = "word ".repeat(30);
        let t = title_from_prompt(&long);
        assert!(t.chars().count() <= TITLE_CHARS && t.ends_with('…'), "{t}");
    }
}
