//! The response cache of a prompt set: opened unless `--no-cache`, hung on every model's and
//! judge's endpoint (the client answers identical requests from it), and `compare cache
//! [clear]`, which shows or empties it.

use super::super::args::CacheAction;
use super::super::exit::{EXIT_OK, EXIT_USAGE};
use crate::api::reply_cache::ReplyCache;
use crate::config::{Config, Paths};
use crate::engine::target::Target;
use crate::runs::judge::Judges;
use crate::store::reply_cache::{self, ReplyStore};
use std::io::Write;
use std::sync::Arc;

/// The cache for a run: `None` with `--no-cache`, or when it cannot be opened (said once: the
/// run goes on without it). A `cache_ttl` that cannot be read is a usage error.
///
/// # Errors
/// The configured TTL's message.
pub fn open(cfg: &Config, paths: &Paths, off: bool) -> Result<Option<Arc<ReplyStore>>, String> {
    let ttl = cfg.compare.cache_ttl()?;
    if off {
        return Ok(None);
    }
    let path = paths.reply_cache();
    match ReplyStore::open(&path, ttl, cfg.compare.cache_budget()) {
        Ok(c) => Ok(Some(Arc::new(c))),
        Err(e) => {
            say!("the response cache {} cannot be opened ({e}); every request goes out", path.display());
            Ok(None)
        }
    }
}

/// Hangs `cache` on the endpoints of `targets` and of the judges.
pub fn attach(cache: &Arc<ReplyStore>, targets: &mut [Target], judges: &mut Judges) {
    let handle: Arc<dyn ReplyCache> = cache.clone();
    for t in targets.iter_mut().chain(judges.models.values_mut().map(|(t, _)| t)) {
        t.endpoint.cache = Some(handle.clone());
    }
}

/// `compare cache`: its place, size and entries (most recently used first); `compare cache
/// clear` empties it.
pub fn run(action: Option<CacheAction>, cfg: &Config, paths: &Paths, json: bool) -> u8 {
    let path = paths.reply_cache();
    let ttl = match cfg.compare.cache_ttl() {
        Ok(t) => t,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    let mut out = std::io::stdout().lock();
    if let Some(CacheAction::Clear) = action {
        return match reply_cache::clear(&path) {
            Ok(n) => {
                let _ =
                    writeln!(out, "cleared {n} cached answer{} ({})", if n == 1 { "" } else { "s" }, path.display());
                EXIT_OK
            }
            Err(e) => {
                say!("cannot clear the response cache {}: {e}", path.display());
                EXIT_USAGE
            }
        };
    }
    let (stats, entries) = match reply_cache::stats(&path, ttl) {
        Ok(s) => s,
        Err(e) => {
            say!("cannot read the response cache {}: {e}", path.display());
            return EXIT_USAGE;
        }
    };
    if json {
        for e in &entries {
            let _ = writeln!(
                out,
                "{}",
                serde_json::json!({"type": "entry", "key": e.key, "url": e.url,
                "created_at": crate::store::ids::rfc3339(e.created_at), "used_at": crate::store::ids::rfc3339(e.used_at),
                "bytes": e.bytes})
            );
        }
        let _ = writeln!(
            out,
            "{}",
            serde_json::json!({"type": "cache", "path": path.display().to_string(),
            "entries": stats.entries, "bytes": stats.bytes, "expired": stats.expired,
            "budget_bytes": cfg.compare.cache_budget(), "ttl_s": ttl.as_secs()})
        );
        return EXIT_OK;
    }
    for e in &entries {
        let _ = writeln!(
            out,
            "{}  {}  {:>9}  {}",
            &e.key[..e.key.len().min(12)],
            crate::store::ids::short_date(e.used_at),
            crate::text::fmt::size(usize::try_from(e.bytes).unwrap_or(usize::MAX)),
            crate::text::sanitize::sanitize(&e.url)
        );
    }
    let _ = writeln!(
        out,
        "{}: {} answers, {} of {} ({} past the TTL of {})",
        path.display(),
        stats.entries,
        crate::text::fmt::size(usize::try_from(stats.bytes).unwrap_or(usize::MAX)),
        crate::text::fmt::size(usize::try_from(cfg.compare.cache_budget()).unwrap_or(usize::MAX)),
        stats.expired,
        humantime(ttl)
    );
    EXIT_OK
}

fn humantime(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}
