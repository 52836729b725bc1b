//! Compare mode under load: four columns each streaming 100,000 deltas through `State::apply`,
//! drawn at the frame cap (60 per second) on a 120×40 screen, next to one stream in the chat
//! screen and one compare column.
//!
//! Two ways of feeding it, both printed as a table before the criterion runs:
//! - paced: each stream delivers at a fixed rate (`RATE` deltas per second, faster than any
//!   provider streams), on a virtual clock: every frame applies what arrived in its 16.7 ms, a
//!   key press, then draws. The CPU is the time spent working; "keeps up" means every frame's
//!   work fits in its 16.7 ms, so nothing queues and a key typed at any moment is drawn by the
//!   next frame. CPU of four columns is compared with one.
//! - flood: everything queued at once and drained as the loop does (bursts of 1,024 messages,
//!   a frame whenever the limiter allows): how fast the screen can consume deltas at all.
//!
//! Criterion then times one paced frame (arrivals + a key + a draw) per configuration.

use criterion::Criterion;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::compare::{Column, Compare, CompareMsg};
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::target::TurnSettings;
use palaver::tui::frame::FrameLimiter;
use palaver::ui::{self, RenderCache, theme::Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::time::{Duration, Instant};

const DELTAS: usize = 100_000;
/// Deltas per second per stream in the paced runs (a very fast provider streams 1–2k tokens/s).
const RATE: u64 = 2_400;
const FPS: u64 = 60;
const SIZE: (u16, u16) = (120, 40);

/// One delta of a realistic answer: words, a line end every 12, a blank line (a new paragraph)
/// every 60, so markdown blocks close as they do in real answers.
fn delta_text(i: usize) -> String {
    if i % 60 == 59 {
        "end of paragraph.\n\n".to_owned()
    } else if i % 12 == 11 {
        "end of line.\n".to_owned()
    } else {
        format!("word{} ", i % 100)
    }
}

fn target(model: &str) -> TargetInfo {
    TargetInfo::new("bench", model, Api::Chat)
}

fn fresh_state() -> State {
    let theme = Theme::load("dark", None, true).unwrap_or_else(|e| panic!("{e}"));
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    State::new(target("bench"), settings, Config::default(), theme, "dark")
}

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// What is being measured.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Setup {
    /// The chat screen with one reply streaming.
    Chat,
    /// Compare mode with `n` columns streaming (1 is built by hand: the app asks for 2–4).
    Compare(usize),
}

impl Setup {
    fn streams(self) -> usize {
        match self {
            Self::Chat => 1,
            Self::Compare(n) => n,
        }
    }

    fn name(self) -> String {
        match self {
            Self::Chat => "chat, 1 stream".to_owned(),
            Self::Compare(n) => format!("compare, {n} column{}", if n == 1 { "" } else { "s" }),
        }
    }
}

/// A state with a prompt sent and every reply streaming; returns where each delta goes.
fn started(setup: Setup) -> (State, Vec<(u64, usize, u64)>) {
    let mut s = fresh_state();
    s.apply(Msg::Resize { width: SIZE.0, height: SIZE.1 });
    match setup {
        Setup::Chat => {}
        Setup::Compare(1) => {
            // One column, made directly (the command insists on two).
            s.compare.generations = 1;
            s.compare.active = Some(Compare::new(1, "bench".into(), vec![Column::new(0, target("bench-0"))]));
        }
        Setup::Compare(n) => {
            let targets = (0..n).map(|i| target(&format!("bench-{i}"))).collect();
            s.open_compare(targets).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    for c in "go".chars() {
        s.apply(key(KeyCode::Char(c)));
    }
    let fx = s.apply(key(KeyCode::Enter));
    let mut routes = Vec::new();
    for e in fx {
        match e {
            palaver::app::Effect::StartRequest { id, .. } => routes.push((0, usize::MAX, id)),
            palaver::app::Effect::Compare(palaver::app::compare::CompareEffect::Start {
                generation,
                column,
                id,
                ..
            }) => routes.push((generation, column, id)),
            _ => {}
        }
    }
    for &(generation, column, id) in &routes {
        if column == usize::MAX {
            s.apply(Msg::RequestStarted { id, now_ms: 0 });
        } else {
            s.apply(Msg::Compare(CompareMsg::Started { generation, column, id, now_ms: 0 }));
        }
    }
    assert_eq!(routes.len(), setup.streams());
    (s, routes)
}

/// The message carrying delta `i` of the stream at `route`, at app time `now_ms`.
fn delta(route: (u64, usize, u64), i: usize, now_ms: u64) -> Msg {
    let events = vec![StreamEvent::Text { choice: 0, delta: delta_text(i).into() }];
    let event = Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: now_ms });
    let (generation, column, id) = route;
    if column == usize::MAX {
        Msg::Wire { id, event, now_ms }
    } else {
        Msg::Compare(CompareMsg::Wire { generation, column, id, event, now_ms })
    }
}

/// Draws a frame; returns whether the composer shows `typed` as its first character.
fn draw(term: &mut Terminal<TestBackend>, s: &mut State, cache: &mut RenderCache, typed: Option<char>) -> bool {
    let mut report = None;
    term.draw(|f| report = Some(ui::draw(f, s, cache))).unwrap_or_else(|e| panic!("{e}"));
    let Some(r) = report else { return false };
    let (x, y, _, _) = r.composer;
    s.apply(Msg::Viewport(r));
    let shown = term.backend().buffer()[(x + 2, y + 1)].symbol().chars().next();
    match typed {
        Some(c) => shown == Some(c),
        None => shown != Some('x'),
    }
}

/// Figures of one paced run.
struct Paced {
    setup: Setup,
    cpu: Duration,
    virtual_secs: f64,
    frames: usize,
    max_frame: Duration,
    p99_frame: Duration,
    max_key: Duration,
    keys_seen: bool,
}

/// Streams `DELTAS` per stream at `RATE` per second on a virtual clock, a frame every 1/60 s:
/// the deltas that arrived, a key press (typing then deleting an `x`) in the middle of them,
/// then a draw. Only the work is timed.
fn paced(setup: Setup) -> Paced {
    let (mut s, routes) = started(setup);
    let mut term = Terminal::new(TestBackend::new(SIZE.0, SIZE.1)).unwrap_or_else(|e| panic!("{e}"));
    let mut cache = RenderCache::default();
    let per_frame = usize::try_from(RATE / FPS).unwrap_or(1);
    let frames = DELTAS.div_ceil(per_frame);
    let mut work = Vec::with_capacity(frames);
    let mut max_key = Duration::ZERO;
    let mut keys_seen = true;
    let mut next = 0usize;
    for f in 0..frames {
        let now_ms = (f as u64 + 1) * 1000 / FPS;
        // Build the frame's arrivals first (the network's work, not the screen's).
        let end = (next + per_frame).min(DELTAS);
        let mut msgs: Vec<Msg> = Vec::with_capacity((end - next) * routes.len());
        for i in next..end {
            for &r in &routes {
                msgs.push(delta(r, i, now_ms));
            }
        }
        next = end;
        let half = msgs.len() / 2;
        let typing = f % 2 == 0;
        let start = Instant::now();
        let mut key_at = start;
        for (k, m) in msgs.into_iter().enumerate() {
            if k == half {
                key_at = Instant::now();
                s.apply(key(if typing { KeyCode::Char('x') } else { KeyCode::Backspace }));
            }
            s.apply(m);
        }
        s.apply(Msg::Tick { now_ms });
        let ok = draw(&mut term, &mut s, &mut cache, typing.then_some('x'));
        let done = Instant::now();
        keys_seen &= ok;
        max_key = max_key.max(done - key_at);
        work.push(done - start);
    }
    let cpu: Duration = work.iter().sum();
    let mut sorted = work.clone();
    sorted.sort();
    Paced {
        setup,
        cpu,
        virtual_secs: frames as f64 / FPS as f64,
        frames,
        max_frame: sorted.last().copied().unwrap_or_default(),
        p99_frame: sorted[sorted.len() * 99 / 100],
        max_key,
        keys_seen,
    }
}

/// Everything queued at once, drained in bursts of 1,024 with frames at the limiter's pace.
/// Returns (wall time, frames drawn).
fn flood(setup: Setup) -> (Duration, usize) {
    let (mut s, routes) = started(setup);
    let mut term = Terminal::new(TestBackend::new(SIZE.0, SIZE.1)).unwrap_or_else(|e| panic!("{e}"));
    let mut cache = RenderCache::default();
    let mut msgs = Vec::with_capacity(DELTAS * routes.len());
    for i in 0..DELTAS {
        for &r in &routes {
            msgs.push(delta(r, i, 1));
        }
    }
    let mut frames = FrameLimiter::default();
    let mut drawn = 0;
    let start = Instant::now();
    let mut it = msgs.into_iter().peekable();
    while it.peek().is_some() {
        for m in it.by_ref().take(1024) {
            s.apply(m);
        }
        frames.request();
        if frames.ready(Instant::now()) {
            draw(&mut term, &mut s, &mut cache, None);
            frames.drew(Instant::now());
            drawn += 1;
        }
    }
    draw(&mut term, &mut s, &mut cache, None);
    (start.elapsed(), drawn + 1)
}

fn report() {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let budget = Duration::from_micros(1_000_000 / FPS);
    eprintln!(
        "\npaced: {DELTAS} deltas per stream at {RATE}/s each, a frame every {:.1} ms at {}×{}, a key press every frame",
        ms(budget),
        SIZE.0,
        SIZE.1
    );
    eprintln!(
        "{:<20} {:>9} {:>8} {:>7} {:>10} {:>10} {:>10} {:>6} {:>8}",
        "setup", "cpu ms", "cpu %", "frames", "p99 frame", "max frame", "max key", "keys", "×1 col"
    );
    let runs: Vec<Paced> = [Setup::Chat, Setup::Compare(1), Setup::Compare(2), Setup::Compare(4)].map(paced).into();
    let one = runs.iter().find(|r| r.setup == Setup::Compare(1)).map_or(1.0, |r| ms(r.cpu));
    for r in &runs {
        eprintln!(
            "{:<20} {:>9.0} {:>7.1}% {:>7} {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>6} {:>7.2}×",
            r.setup.name(),
            ms(r.cpu),
            r.cpu.as_secs_f64() / r.virtual_secs * 100.0,
            r.frames,
            ms(r.p99_frame),
            ms(r.max_frame),
            ms(r.max_key),
            if r.keys_seen { "drawn" } else { "LATE" },
            ms(r.cpu) / one
        );
        if r.max_frame > budget {
            eprintln!("  note: a frame took longer than {:.1} ms: input would wait", ms(budget));
        }
    }
    eprintln!("\nflood: every delta queued at once, bursts of 1,024, frames capped at {FPS}/s");
    for setup in [Setup::Chat, Setup::Compare(1), Setup::Compare(4)] {
        let (took, frames) = flood(setup);
        let n = DELTAS * setup.streams();
        eprintln!(
            "{:<20} {n:>7} deltas in {:>7.0} ms = {:>5.2} M deltas/s, {frames} frames",
            setup.name(),
            ms(took),
            n as f64 / took.as_secs_f64() / 1e6
        );
    }
    eprintln!();
}

/// Criterion: one paced frame (a frame's arrivals on every stream, a key, a draw), the
/// transcript growing as it goes.
fn frames(c: &mut Criterion) {
    let mut g = c.benchmark_group("compare_frame_120x40");
    for setup in [Setup::Chat, Setup::Compare(1), Setup::Compare(4)] {
        let (mut s, routes) = started(setup);
        let mut term = Terminal::new(TestBackend::new(SIZE.0, SIZE.1)).unwrap_or_else(|e| panic!("{e}"));
        let mut cache = RenderCache::default();
        let per_frame = usize::try_from(RATE / FPS).unwrap_or(1);
        let mut i = 0usize;
        let mut typing = false;
        g.bench_function(setup.name().replace([' ', ','], "_"), |b| {
            b.iter(|| {
                typing = !typing;
                for k in 0..per_frame {
                    for &r in &routes {
                        s.apply(delta(r, (i + k) % DELTAS, 1));
                    }
                }
                i += per_frame;
                s.apply(key(if typing { KeyCode::Char('x') } else { KeyCode::Backspace }));
                black_box(draw(&mut term, &mut s, &mut cache, typing.then_some('x')));
            });
        });
    }
    g.finish();
}

fn main() {
    report();
    let mut c = Criterion::default().configure_from_args();
    frames(&mut c);
    c.final_summary();
}
