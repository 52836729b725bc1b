//! The one redactor: every secret value palaver learns (provider keys, MCP bearer and OAuth
//! tokens, secret configured headers, a password in a URL, the values of its own secret-looking
//! environment variables) is registered here once, and whatever is stored, shown or sent back
//! to a model passes through [`redact`] first. A model that has a tool print a key, or its
//! base64 or hex, finds `[redacted]` in its place.
//!
//! Each secret is searched as it is and in the encodings a command turns it into in one step:
//! hex (lower and upper case), base64 and base64url (padded and not). Inside a longer base64
//! text a secret encodes differently by its byte offset modulo 3, so for each offset the part
//! of its encoding that does not depend on its neighbours is searched too. All of them are
//! exact strings, encoded once at registration: a lookup is one multi-pattern search.
//!
//! Secrets shorter than [`MIN_SECRET`] bytes are ignored: replacing every "1" of a reply is
//! worse than useless; so are those longer than [`MAX_SECRET`]. A secret transformed any other way (reversed, split, compressed,
//! wrapped across lines) is not found; shape scanning ([`crate::text::secrets`]) stays beside it.

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, PoisonError, RwLock};

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";
/// Shorter values are not treated as secrets.
pub const MIN_SECRET: usize = 8;
/// Longer values are not either: a variable holding a document (a certificate bundle, a JSON
/// file) would make every search carry megabytes of patterns. A 4096-bit RSA key in PEM or a
/// cloud service account's JSON is well under it.
pub const MAX_SECRET: usize = 8 * 1024;

/// The searcher for every form of every secret known so far, rebuilt at each registration.
struct Searcher {
    ac: AhoCorasick,
    /// Every form, sorted: whether a text's end may be the start of one (see [`Holdback`]).
    sorted: Vec<String>,
    /// The longest form, in bytes: how much of a read a form split across reads can hide.
    longest: usize,
}

#[derive(Default)]
struct Registry {
    /// The secrets known, raw: registering one again changes nothing.
    known: HashSet<String>,
    /// Every form searched, without duplicates.
    forms: Vec<String>,
    searcher: Option<Arc<Searcher>>,
}

static REGISTRY: RwLock<Option<Registry>> = RwLock::new(None);

/// Registers one secret (ignored when shorter than [`MIN_SECRET`], longer than [`MAX_SECRET`]
/// or already known).
pub fn register(secret: &str) {
    register_all([secret]);
}

/// Registers several secrets at once: the searcher is rebuilt once, and only when one is new.
pub fn register_all<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) {
    let fresh: Vec<String> = {
        let guard = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
        let known = guard.as_ref().map(|r| &r.known);
        secrets
            .into_iter()
            .map(|s| s.as_ref().to_owned())
            .filter(|s| (MIN_SECRET..=MAX_SECRET).contains(&s.len()) && !known.is_some_and(|k| k.contains(s)))
            .collect()
    };
    if fresh.is_empty() {
        return;
    }
    let mut guard = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
    let reg = guard.get_or_insert_with(Registry::default);
    let mut added = false;
    for secret in fresh {
        if reg.known.contains(&secret) {
            continue;
        }
        for form in forms(&secret) {
            if !reg.forms.contains(&form) {
                reg.forms.push(form);
            }
        }
        reg.known.insert(secret);
        added = true;
    }
    if added {
        // Leftmost-longest: a form inside a longer one (an inner base64 part in the whole
        // encoding, a key inside a header value) is replaced whole.
        let built = AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&reg.forms);
        if let Ok(ac) = built {
            let longest = reg.forms.iter().map(String::len).max().unwrap_or(0);
            let mut sorted = reg.forms.clone();
            sorted.sort();
            reg.searcher = Some(Arc::new(Searcher { ac, sorted, longest }));
        }
    }
}

/// Whether a variable of this name holds a secret: its name says so (`KEY`, `SECRET`, `TOKEN`,
/// `PASSWORD`, `CREDENTIAL`, any case) or it is one of AWS's, but for the AWS settings that
/// are not (`AWS_REGION`, `AWS_PROFILE`…).
#[must_use]
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    let named = name_says_secret(&n);
    let aws_setting = ["REGION", "PROFILE", "OUTPUT", "PAGER"].iter().any(|w| n.ends_with(w));
    named || (n.starts_with("AWS_") && !aws_setting)
}

/// Words that make a variable's name say it holds a secret: the one list for what a child is
/// not given ([`super::spawn::env`]) and for whose values are redacted ([`is_secret_name`]).
pub const SECRET_WORDS: [&str; 6] = ["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Whether `name` holds one of [`SECRET_WORDS`], in any case.
#[must_use]
pub fn name_says_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|w| upper.contains(w))
}

/// Registers the values of palaver's own secret-looking environment variables. A value that
/// names an existing file or folder (`GOOGLE_APPLICATION_CREDENTIALS=/path/key.json`) or is
/// a plain number is a setting, not the secret itself, and is left out.
pub fn register_env() {
    register_all(std::env::vars_os().filter_map(|(name, value)| {
        let (name, value) = (name.into_string().ok()?, value.into_string().ok()?);
        let number = value.bytes().all(|b| b.is_ascii_digit());
        let path = value.contains('/') && std::path::Path::new(&value).exists();
        (is_secret_name(&name) && !number && !path).then_some(value)
    }));
}

/// The forms searched for one secret: itself, its JSON-escaped text when that differs, its hex,
/// its whole base64 encodings, and for each byte offset modulo 3 the part of its base64 that
/// stays the same whatever surrounds it.
fn forms(secret: &str) -> Vec<String> {
    let b = secret.as_bytes();
    let mut out = vec![secret.to_owned()];
    if let Ok(quoted) = serde_json::to_string(secret) {
        out.push(quoted[1..quoted.len() - 1].to_owned());
    }
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    out.push(hex.to_ascii_uppercase());
    out.push(hex);
    for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(b));
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for offset in 0..3 {
            out.push(inner_base64(engine, b, offset));
        }
    }
    out.sort();
    out.dedup();
    out.retain(|f| f.len() >= MIN_SECRET);
    out
}

/// The characters of the base64 of `secret` placed `offset` bytes into a group of three that
/// hold only its own bits: each character carries 6 bits, the secret's run from bit
/// `8 * offset` to `8 * (offset + len)`.
fn inner_base64(engine: &impl base64::Engine, secret: &[u8], offset: usize) -> String {
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(secret);
    let all = engine.encode(&padded);
    let first = (8 * offset).div_ceil(6);
    let end = (8 * (offset + secret.len()) / 6).min(all.len());
    all.get(first..end).unwrap_or_default().to_owned()
}

fn searcher() -> Option<Arc<Searcher>> {
    REGISTRY.read().unwrap_or_else(PoisonError::into_inner).as_ref().and_then(|r| r.searcher.clone())
}

/// Whether no secret is known yet.
#[must_use]
pub fn is_empty() -> bool {
    searcher().is_none()
}

/// Whether `bytes` hold a secret, in any of its forms.
#[must_use]
pub fn holds(bytes: &[u8]) -> bool {
    searcher().is_some_and(|s| s.ac.is_match(bytes))
}

/// `text` with every secret, in every form, replaced by [`REDACTED`]; borrowed when it held none.
#[must_use]
pub fn redact(text: &str) -> Cow<'_, str> {
    let Some(s) = searcher() else { return Cow::Borrowed(text) };
    if !s.ac.is_match(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    s.ac.replace_all_with(text, &mut out, |_, _, dst| {
        dst.push_str(REDACTED);
        true
    });
    Cow::Owned(out)
}

/// Redacts a string in place (nothing is copied when it holds no secret).
pub fn redact_string(s: &mut String) {
    if let Cow::Owned(clean) = redact(s) {
        *s = clean;
    }
}

/// Redacts every string (and key) of a JSON value.
pub fn redact_json(v: &mut serde_json::Value) {
    use serde_json::Value;
    let Some(s) = searcher() else { return };
    match v {
        Value::String(text) => redact_string(text),
        Value::Array(a) => a.iter_mut().for_each(redact_json),
        Value::Object(o) => {
            if o.keys().any(|k| s.ac.is_match(k.as_str())) {
                let taken = std::mem::take(o);
                *o = taken.into_iter().map(|(k, v)| (redact(&k).into_owned(), v)).collect();
            }
            o.values_mut().for_each(redact_json);
        }
        _ => {}
    }
}

/// Text printed as it streams, delta by delta: a secret spelled across two deltas is whole
/// in neither. What may be the start of a secret is held back until the next delta shows
/// whether it is one (usually a character or two, never more than the longest form).
#[derive(Debug, Default)]
pub struct Holdback {
    pending: String,
}

impl Holdback {
    /// What can be printed now of what was held and `delta`, redacted; `None` when that is
    /// `delta` as it is (nearly every delta: nothing held, nothing to hold, nothing to redact).
    pub fn push(&mut self, delta: &str) -> Option<String> {
        // The registry never shrinks: without a searcher nothing was ever held.
        let s = searcher()?;
        if self.pending.is_empty() && held_tail(&s, delta, 0) == delta.len() && !s.ac.is_match(delta) {
            return None;
        }
        self.pending.push_str(delta);
        // Held: from where the text's end may be the start of a form (a longer form may yet
        // begin where a shorter one ended). A form found whole across that point is printed.
        let mut at = held_tail(&s, &self.pending, 0);
        while let Some(m) = s.ac.find_iter(self.pending.as_str()).find(|m| m.start() < at && at < m.end()) {
            at = held_tail(&s, &self.pending, m.end());
        }
        let rest = self.pending.split_off(at);
        let out = redact(&self.pending).into_owned();
        self.pending = rest;
        Some(out)
    }

    /// Everything held, redacted: the stream is over (or something else is printed next).
    pub fn take(&mut self) -> String {
        let held = std::mem::take(&mut self.pending);
        redact(&held).into_owned()
    }
}

/// Where the tail of `text` that may start a form begins, at `min` or after (`text.len()`
/// when none).
fn held_tail(s: &Searcher, text: &str, min: usize) -> usize {
    let from = text.len().saturating_sub(s.longest.saturating_sub(1)).max(min);
    for at in (from..text.len()).filter(|&i| text.is_char_boundary(i)) {
        let tail = &text[at..];
        let i = s.sorted.partition_point(|f| f.as_str() < tail);
        if s.sorted.get(i).is_some_and(|f| f.starts_with(tail)) {
            return at;
        }
    }
    text.len()
}

/// What [`seen_in`] keeps between reads of one body.
#[derive(Debug, Default)]
pub struct Watch {
    /// The last bytes of the body so far, shorter than the longest form.
    tail: Vec<u8>,
    seen: bool,
}

/// Watches a body read by read: true from the read in which a secret shows (whole, or split
/// across the end of the read before) on. Until then nothing decoded from the body can hold
/// one, so its parts need no search of their own.
pub fn seen_in(watch: &mut Watch, read: &[u8]) -> bool {
    if watch.seen {
        return true;
    }
    let Some(s) = searcher() else { return false };
    // A split form has at most this many bytes on each side of the seam.
    let k = s.longest.saturating_sub(1);
    let mut seam = std::mem::take(&mut watch.tail);
    seam.extend_from_slice(&read[..read.len().min(k)]);
    watch.seen = s.ac.is_match(&seam[..]) || s.ac.is_match(read);
    // The new tail: the body's last `k` bytes.
    if read.len() >= k {
        seam.clear();
        seam.extend_from_slice(&read[read.len() - k..]);
    } else {
        seam.drain(..seam.len().saturating_sub(k));
    }
    watch.tail = seam;
    watch.seen
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;
