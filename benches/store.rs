//! The session store at scale: 10,000 conversations and 1,000,000 messages. Measures listing
//! the newest 100 conversations (target < 50 ms), full-text searches (target < 100 ms), and
//! the CPU cost of saving a reply streamed at 1,000 deltas per second (target < 1 % of a core).
//!
//! The database is built once (a minute or two) into the temp directory, keyed by schema
//! version and size, and reused by later runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use palaver::engine::message::{Message, MessageStatus, Role};
use palaver::store::ops::{NewRow, Op};
use palaver::store::writer::{Writer, WriterConfig};
use palaver::store::{StoreHandle, StoreOptions, schema};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const CONVERSATIONS: usize = 10_000;
const PER_CONVERSATION: usize = 100;
const DELTAS_PER_SECOND: u64 = 1000;

/// Deterministic words: a Zipf-ish draw from 6,000 made-up words plus a few real ones.
struct Words {
    vocab: Vec<String>,
    state: u64,
}

impl Words {
    fn new() -> Self {
        let syll = ["ka", "lo", "mi", "ru", "sen", "ta", "vo", "xi", "bre", "dun", "fal", "gor", "hep", "jin", "qua"];
        let mut vocab: Vec<String> = ["the", "rust", "async", "tokio", "error", "zebra", "database", "stream", "model"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        'outer: for a in syll {
            for b in syll {
                for c in syll {
                    vocab.push(format!("{a}{b}{c}"));
                    if vocab.len() >= 6000 {
                        break 'outer;
                    }
                }
            }
        }
        Self { vocab, state: 0x9E37_79B9_7F4A_7C15 }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn sentence(&mut self, n: usize) -> String {
        let mut s = String::with_capacity(n * 7);
        for i in 0..n {
            let r = (self.next() % 10_000) as f64 / 10_000.0;
            let idx = ((r * r * r) * self.vocab.len() as f64) as usize;
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&self.vocab[idx.min(self.vocab.len() - 1)]);
        }
        s
    }
}

/// The body column as the writer stores it: the message JSON without its text.
fn body(role: Role) -> String {
    let mut m = Message::with_text(role, "");
    if role == Role::Assistant {
        m.model = Some("gpt-4o-mini".into());
        m.usage = Some(serde_json::json!({"prompt_tokens": 812, "completion_tokens": 96, "total_tokens": 908}));
        m.main_mut().finish_reason = Some("stop".into());
    }
    serde_json::to_string(&m).unwrap()
}

fn build(path: &PathBuf) {
    let started = Instant::now();
    eprintln!("building {} (once)…", path.display());
    let _ = std::fs::remove_file(path);
    let mut c = rusqlite::Connection::open(path).unwrap();
    schema::configure(&c, Duration::from_secs(5)).unwrap();
    schema::migrate(&mut c).unwrap();
    c.execute_batch("PRAGMA synchronous = OFF; PRAGMA cache_size = -262144;").unwrap();
    let tx = c.transaction().unwrap();
    {
        let mut conv = tx
            .prepare(
                "INSERT INTO conversations (id, title, model, provider, api, created_at, updated_at)
                 VALUES (?1, ?2, 'gpt-4o-mini', 'openai', 'chat', ?3, ?4)",
            )
            .unwrap();
        let mut branch = tx
            .prepare("INSERT INTO branches (conversation_id, branch, parent, fork_position, created_at) VALUES (?1, 0, NULL, 0, ?2)")
            .unwrap();
        let mut msg = tx
            .prepare(
                "INSERT INTO messages (conversation_id, branch, position, role, content, model, status, body, created_at, updated_at)
                 VALUES (?1, 0, ?2, ?3, ?4, ?5, 'complete', ?6, ?7, ?7)",
            )
            .unwrap();
        let (user_body, assistant_body) = (body(Role::User), body(Role::Assistant));
        let mut words = Words::new();
        let base: i64 = 1_700_000_000_000;
        for i in 0..CONVERSATIONS {
            let id = format!("20231114-{:06}-{:04x}", i, i & 0xffff);
            let t = base + i as i64 * 600_000;
            conv.execute(rusqlite::params![id, words.sentence(6), t, t + 599_000]).unwrap();
            branch.execute(rusqlite::params![id, t]).unwrap();
            for p in 0..PER_CONVERSATION {
                let user = p % 2 == 0;
                let (role, text, b) = if user {
                    ("user", words.sentence(12), &user_body)
                } else {
                    ("assistant", words.sentence(40), &assistant_body)
                };
                let model = if user { None } else { Some("gpt-4o-mini") };
                msg.execute(rusqlite::params![id, p as i64, role, text, model, b, t + p as i64 * 5000]).unwrap();
            }
        }
    }
    tx.commit().unwrap();
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
    std::fs::write(path.with_extension("complete"), b"ok").unwrap();
    eprintln!("built in {:.0} s", started.elapsed().as_secs_f64());
}

fn database() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir()
            .join(format!("palaver-bench-store-v{}-{CONVERSATIONS}x{PER_CONVERSATION}", schema::SCHEMA_VERSION));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("palaver.sqlite3");
        if !path.with_extension("complete").exists() {
            build(&path);
        }
        path
    })
}

fn quiet() -> StoreOptions {
    StoreOptions { on_notice: Some(Arc::new(|n| eprintln!("notice: {}", n.message))), ..StoreOptions::default() }
}

fn reads(c: &mut Criterion) {
    let path = database();
    let store = StoreHandle::open(path, quiet()).unwrap();
    assert_eq!(store.list(100, 0).unwrap().len(), 100);
    c.bench_function("store/list newest 100 of 10k", |b| b.iter(|| store.list(100, 0).unwrap()));
    c.bench_function("store/open + list newest 100", |b| {
        b.iter(|| StoreHandle::open(path, quiet()).unwrap().list(100, 0).unwrap())
    });
    for q in ["zebra database", "tokio", "rust async error", "kalomi", "stre"] {
        let n = store.search(q, 50).unwrap().len();
        eprintln!("search {q:?}: {n} hits (limit 50)");
        c.bench_function(&format!("store/search {q:?} over 1M messages"), |b| b.iter(|| store.search(q, 50).unwrap()));
    }
    c.bench_function("store/load one conversation (100 messages)", |b| {
        let id = format!("20231114-{:06}-{:04x}", 4242, 4242);
        b.iter(|| store.load(&id).unwrap().unwrap())
    });
}

/// One simulated second of a reply streamed at 1,000 deltas per second into the big store:
/// every delta is copied and handed to the writer (as `save_streaming` does); the writer
/// coalesces to one disk write per 250 ms. Time per iteration is CPU time per second of
/// streaming.
fn streaming(c: &mut Criterion) {
    let mut conn = rusqlite::Connection::open(database()).unwrap();
    schema::configure(&conn, Duration::from_secs(5)).unwrap();
    schema::migrate(&mut conn).unwrap();
    let cfg = WriterConfig {
        coalesce: Duration::from_millis(250),
        retry: Duration::from_secs(1),
        store_frames: false,
        frames_cap: 0,
    };
    let mut w = Writer::new(conn, cfg, Arc::new(|n| eprintln!("notice: {}", n.message)));
    let conv = "bench-stream".to_owned();
    let mut clock = Instant::now();
    w.submit(Op::Delete { conv: conv.clone() }, clock);
    let row = NewRow {
        id: conv.clone(),
        title: "stream".into(),
        model: None,
        provider: None,
        api: None,
        compare: None,
        created_at: 1,
    };
    w.submit(Op::Create(row), clock);
    w.tick(clock);
    let mut words = Words::new();
    // A reply already 2,000 words long, so each save writes a realistic amount.
    let prefix = words.sentence(2000);
    let deltas: Vec<String> = (0..DELTAS_PER_SECOND).map(|_| format!(" {}", words.sentence(1))).collect();
    let second = |w: &mut Writer, clock: &mut Instant| {
        let mut msg = Message::with_text(Role::Assistant, &prefix);
        msg.status = MessageStatus::Streaming;
        msg.model = Some("gpt-4o-mini".into());
        for d in &deltas {
            *clock += Duration::from_micros(1_000_000 / DELTAS_PER_SECOND);
            msg.main_mut().content.push_str(d);
            let op = Op::Save { conv: conv.clone(), branch: None, position: 0, msg: msg.clone().into() };
            w.submit(op, *clock);
            w.tick(*clock);
        }
    };
    c.bench_function("store/one second of streaming at 1000 deltas/s", |b| b.iter(|| second(&mut w, &mut clock)));
    let (before, t) = (w.batches, Instant::now());
    let seconds: u32 = 10;
    for _ in 0..seconds {
        second(&mut w, &mut clock);
    }
    let per_second = t.elapsed().as_secs_f64() / f64::from(seconds);
    eprintln!(
        "streaming at {DELTAS_PER_SECOND} deltas/s: {:.3} ms CPU per second = {:.2} % of a core ({} disk writes per second)",
        per_second * 1000.0,
        per_second * 100.0,
        (w.batches - before) / u64::from(seconds)
    );
    w.submit(Op::Delete { conv }, clock);
    w.flush(clock).unwrap();
}

criterion_group!(benches, reads, streaming);
criterion_main!(benches);
