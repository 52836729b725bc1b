//! Attachments: loading a 5 MB image (read, type, hash, base64) as the chat screen does on a
//! blocking thread, and the composer's frame drawn while that runs (it must stay well under
//! 16 ms); building the request body that carries it (on the UI task: a copy of the prepared
//! data URI); and scrolling a transcript of 50 images drawn from the picture cache.

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::config::attachments::AttachmentPolicy;
use palaver::engine::attachment::Attachment;
use palaver::engine::message::{Message, Role};
use palaver::engine::request::{RequestOptions, build_body};
use palaver::engine::target::TurnSettings;
use palaver::ui::images::Mode;
use palaver::ui::{self, RenderCache, theme::Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn state() -> State {
    let target = TargetInfo::new("bench", "bench", Api::Chat);
    let theme = Theme::load("dark", None, true).unwrap_or_else(|e| panic!("{e}"));
    State::new(target, TurnSettings { stream: true, ..TurnSettings::default() }, Config::default(), theme, "dark")
}

/// A PNG of noise (so it does not compress) of about `mb` megabytes.
fn noisy_png(mb: usize) -> Vec<u8> {
    let side = ((mb * 1024 * 1024 / 3) as f64).sqrt() as u32;
    let mut seed = 0x2545_f491_u32;
    let img = image::RgbImage::from_fn(side, side, |_, _| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let b = seed.to_le_bytes();
        image::Rgb([b[0], b[1], b[2]])
    });
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap_or_else(|e| panic!("{e}"));
    out
}

fn small_png(i: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(256, 192, |x, y| image::Rgb([(x + i) as u8, (y * 2) as u8, (i * 7) as u8]));
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap_or_else(|e| panic!("{e}"));
    out
}

fn draw(term: &mut Terminal<TestBackend>, s: &mut State, cache: &mut RenderCache) {
    let mut report = None;
    term.draw(|f| report = Some(ui::draw(f, s, cache))).unwrap_or_else(|e| panic!("{e}"));
    if let Some(r) = report {
        s.apply(Msg::Viewport(r));
    }
}

fn attach_5mb(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("big.png");
    let bytes = noisy_png(5);
    std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("{e}"));
    let spec = path.display().to_string();
    eprintln!("attachment: {} bytes", bytes.len());
    let mut g = c.benchmark_group("attach");
    g.sample_size(10);
    g.bench_function("load_5mb_png (read, type, sha256, base64; a blocking thread)", |b| {
        b.iter(|| black_box(palaver::engine::attach_load::load(&spec, None, &AttachmentPolicy::default())))
    });
    let att =
        palaver::engine::attach_load::load(&spec, None, &AttachmentPolicy::default()).unwrap_or_else(|e| panic!("{e}"));
    let mut user = Message::user("what is this");
    user.attachments.push(att);
    let msgs = vec![user];
    let opts = RequestOptions { model: "m".into(), stream: true, ..RequestOptions::default() };
    g.bench_function("build_body_with_5mb_png (UI task)", |b| {
        b.iter(|| black_box(build_body(Api::Chat, &msgs, &opts)))
    });
    g.finish();

    // The composer's frames while a loader thread encodes the same file over and over.
    let mut s = state();
    for ch in "a draft typed while the image loads".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(ch), KeyModifiers::NONE)));
    }
    let mut cache = RenderCache::default();
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|e| panic!("{e}"));
    // The same frames with nothing loading, for comparison (the machine is shared: a frame can
    // lose the CPU to another process either way).
    let mut frames_alone = Vec::new();
    for _ in 0..300 {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)));
        let t = Instant::now();
        draw(&mut term, &mut s, &mut cache);
        frames_alone.push(t.elapsed());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let loads = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let loader = {
        let (stop, loads, spec) = (stop.clone(), loads.clone(), spec.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                black_box(palaver::engine::attach_load::load(&spec, None, &AttachmentPolicy::default()).ok());
                loads.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut frames_loading = Vec::new();
    let started = Instant::now();
    while (loads.load(Ordering::Relaxed) < 10 || frames_loading.len() < 300)
        && started.elapsed() < Duration::from_secs(30)
    {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)));
        let t = Instant::now();
        draw(&mut term, &mut s, &mut cache);
        frames_loading.push(t.elapsed());
        // A typist's pace, not a busy loop: the loader gets the CPU as it would in the app.
        std::thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = loader.join();
    let stats = |v: &mut Vec<Duration>| {
        v.sort();
        let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
        format!("{} frames: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms", v.len(), at(0.5), at(0.99), at(1.0))
    };
    eprintln!("composer frame, nothing loading: {}", stats(&mut frames_alone));
    eprintln!(
        "composer frame while 5 MB images load on another thread ({} loads): {} (budget 16 ms)",
        loads.load(Ordering::Relaxed),
        stats(&mut frames_loading)
    );
}

fn scroll_50_images(c: &mut Criterion) {
    let mut s = state();
    for i in 0..50u32 {
        let mut user = Message::user(&format!("picture {i}"));
        let att = Attachment::from_bytes(&format!("p{i}.png"), small_png(i)).unwrap_or_else(|e| panic!("{e}"));
        user.attachments.push(att);
        s.transcript.push_message(user);
        let mut reply = Message::with_text(Role::Assistant, &format!("A gradient, number {i}."));
        reply.model = Some("bench".into());
        s.transcript.push_message(reply);
    }
    let mut cache = RenderCache::default();
    cache.images.mode = Mode::HalfBlocks;
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|e| panic!("{e}"));
    // Every picture made once (as the loop's threads would), then frames draw from the cache.
    let page = |s: &mut State, up: bool| {
        let code = if up { KeyCode::PageUp } else { KeyCode::PageDown };
        s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    };
    for _ in 0..60 {
        draw(&mut term, &mut s, &mut cache);
        cache.images.render_queued();
        page(&mut s, true);
    }
    let mut up = false;
    let mut n = 0u32;
    c.bench_function("draw_120x40_scrolling_50_images_from_cache", |b| {
        b.iter(|| {
            n += 1;
            if n % 40 == 0 {
                up = !up;
            }
            page(&mut s, up);
            draw(&mut term, &mut s, &mut cache);
        });
    });
}

criterion_group!(benches, attach_5mb, scroll_50_images);
criterion_main!(benches);
