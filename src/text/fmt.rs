//! Number and time formatting for panels and the status bar.

/// `1204` → `1,204`.
#[must_use]
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `180` → `180 ms`, `1234` → `1.2 s`, `75000` → `1 m 15 s`.
#[must_use]
pub fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
    } else {
        format!("{} m {:02} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// Dollars with enough digits to show small costs.
#[must_use]
pub fn money(usd: f64) -> String {
    if usd == 0.0 {
        "$0".to_owned()
    } else if usd < 0.01 {
        // Two significant digits at least, however small: $0.0000037, not $0.00000.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let digits = ((-usd.abs().log10()).ceil() as usize + 1).clamp(5, 12);
        format!("${usd:.digits$}")
    } else {
        format!("${usd:.4}")
    }
}

/// `812 B`, `4.2 KB`, `1.3 MB`.
#[must_use]
pub fn size(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", b / 1024.0)
    } else {
        format!("{:.1} MB", b / (1024.0 * 1024.0))
    }
}

/// Arguments as indented JSON when they parse, else as sent.
#[must_use]
pub fn pretty_json(args: &str) -> String {
    if args.trim().is_empty() {
        return "{}".to_owned();
    }
    serde_json::from_str::<serde_json::Value>(args)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| args.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1204), "1,204");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(duration(180), "180 ms");
        assert_eq!(duration(1234), "1.2 s");
        assert_eq!(duration(75_000), "1 m 15 s");
        assert_eq!(money(0.000_123), "$0.00012");
        assert_eq!(money(0.000_003_7), "$0.0000037");
    }
}
