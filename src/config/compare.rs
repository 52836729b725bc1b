//! `[compare]`: settings of prompt sets (`palaver compare --prompts`): how long the response
//! cache serves an answer and how large it may grow.

use serde::Deserialize;
use std::time::Duration;

/// How long an answer is served unless `cache_ttl` says otherwise.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// The cache's size budget unless `cache_max_mb` says otherwise.
pub const DEFAULT_CACHE_MAX_MB: u64 = 200;

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct CompareConfig {
    /// How long a cached answer is served: `7d`, `12h`, `30m`, `90s` (default 7 days; `0`
    /// serves none).
    pub cache_ttl: Option<String>,
    /// The cache's size budget in MB; past it the least recently used answers go (default 200).
    pub cache_max_mb: Option<u64>,
}

impl CompareConfig {
    /// The cache's TTL.
    ///
    /// # Errors
    /// A `cache_ttl` that is not a number with an optional `s`, `m`, `h` or `d`.
    pub fn cache_ttl(&self) -> Result<Duration, String> {
        self.cache_ttl.as_deref().map_or(Ok(DEFAULT_CACHE_TTL), duration)
    }

    /// The cache's size budget in bytes.
    #[must_use]
    pub fn cache_budget(&self) -> u64 {
        self.cache_max_mb.unwrap_or(DEFAULT_CACHE_MAX_MB).saturating_mul(1 << 20)
    }
}

/// `7d`, `12h`, `30m`, `90s` or `90` (seconds).
fn duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (num, unit) = t.find(|c: char| !c.is_ascii_digit()).map_or((t, ""), |i| t.split_at(i));
    let secs = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => 0,
    };
    match num.parse::<u64>() {
        Ok(n) if secs > 0 => Ok(Duration::from_secs(n.saturating_mul(secs))),
        _ => Err(format!("[compare] cache_ttl = {text:?}: give a number with s, m, h or d, e.g. \"7d\" or \"12h\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ttl_reads_with_its_unit() {
        let c = |s: &str| CompareConfig { cache_ttl: Some(s.into()), cache_max_mb: None }.cache_ttl();
        assert_eq!(CompareConfig::default().cache_ttl(), Ok(DEFAULT_CACHE_TTL));
        assert_eq!(c("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(c("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(c("30m"), Ok(Duration::from_secs(1_800)));
        assert_eq!(c("90"), Ok(Duration::from_secs(90)));
        assert_eq!(c("0"), Ok(Duration::ZERO));
        assert!(c("soon").unwrap_err().contains("cache_ttl"));
        assert!(c("3w").is_err());
    }
}
