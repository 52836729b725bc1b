//! Screen snapshots of attachments: the chips above the composer, a sent message with its
//! image as a one-line placeholder (`NO_COLOR`, no graphics) and drawn as half-blocks, and the
//! half-block cells of a tiny image with their colours.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use palaver::api::Api;
use palaver::app::attach::AttachMsg;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::attachment::Attachment;
use palaver::engine::message::Message;
use palaver::engine::target::TurnSettings;
use palaver::ui::RenderCache;
use palaver::ui::images::Mode;
use palaver::ui::theme::Theme;
use ratatui::style::Color;

fn state() -> State {
    let target = TargetInfo::new("demo", "demo-vision", Api::Chat);
    let theme = Theme::load("dark", None, true).unwrap();
    State::new(target, TurnSettings { stream: true, ..TurnSettings::default() }, Config::default(), theme, "dark")
}

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 60) as u8, (y * 60) as u8, 200]));
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
    out
}

const PDF: &[u8] = b"%PDF-1.4\n1 0 obj << /Type /Page >>\n%%EOF\n";

fn loaded(a: Attachment) -> Msg {
    Msg::Attach(AttachMsg::Loaded { spec: a.name.clone(), result: Ok(a), paste: None })
}

#[test]
fn chips_above_the_composer() {
    let mut s = state();
    s.apply(loaded(Attachment::from_bytes("photo.png", png(64, 48)).unwrap()));
    s.apply(loaded(Attachment::from_bytes("report.pdf", PDF.to_vec()).unwrap()));
    let mut cache = RenderCache::default();
    let buf = screen::settle(&mut s, 80, 24, &mut cache);
    insta::assert_snapshot!("chips_80x24", screen::text(&buf));
}

fn with_sent_image(s: &mut State) {
    let mut user = Message::user("what is this?");
    user.attachments.push(Attachment::from_bytes("photo.png", png(8, 6)).unwrap());
    user.attachments.push(Attachment::from_bytes("report.pdf", PDF.to_vec()).unwrap());
    s.transcript.push_message(user);
    let mut reply = Message::with_text(palaver::engine::message::Role::Assistant, "A small gradient.");
    reply.model = Some("demo-vision".into());
    s.transcript.push_message(reply);
}

#[test]
fn a_sent_image_as_a_placeholder_line() {
    let mut s = state();
    with_sent_image(&mut s);
    let mut cache = RenderCache::default();
    assert_eq!(cache.images.mode, Mode::Placeholder);
    let buf = screen::settle(&mut s, 80, 24, &mut cache);
    insta::assert_snapshot!("placeholder_80x24", screen::text(&buf));
}

#[test]
fn a_sent_image_drawn_as_half_blocks() {
    let mut s = state();
    with_sent_image(&mut s);
    let mut cache = RenderCache::default();
    cache.images.mode = Mode::HalfBlocks;
    // The first frame only asks for the picture (and shows that it is coming)…
    let buf = screen::settle(&mut s, 80, 24, &mut cache);
    assert!(screen::text(&buf).contains("◌ drawing photo.png…"), "{}", screen::text(&buf));
    // …made off the draw path; the next frame draws it.
    cache.images.render_queued();
    let buf = screen::settle(&mut s, 80, 24, &mut cache);
    insta::assert_snapshot!("half_blocks_80x24", screen::text(&buf));
}

#[test]
fn half_block_cells_carry_both_pixels() {
    let img = image::load_from_memory(&png(3, 4)).unwrap();
    let lines = palaver::ui::images::half_blocks(&img, 3, 2);
    let hex = |c: Option<Color>| match c {
        Some(Color::Rgb(r, g, b)) => format!("{r:02x}{g:02x}{b:02x}"),
        other => format!("{other:?}"),
    };
    let cells: Vec<String> = lines
        .iter()
        .map(|l| {
            l.spans.iter().map(|s| format!("{}/{}", hex(s.style.fg), hex(s.style.bg))).collect::<Vec<_>>().join(" ")
        })
        .collect();
    insta::assert_snapshot!("half_block_cells_3x4", cells.join("\n"));
}

/// An image sent to a model the catalogue says takes none: the warning above the message, at
/// both sizes (the message is sent all the same).
#[test]
fn an_image_to_a_model_that_takes_none_is_warned_about() {
    for (w, h) in [(80, 24), (120, 40)] {
        let target = TargetInfo::new("openai", "gpt-3.5-turbo", Api::Chat);
        let theme = Theme::load("dark", None, true).unwrap();
        let settings = TurnSettings { stream: true, ..TurnSettings::default() };
        let mut s = State::new(target, settings, Config::default(), theme, "dark");
        s.apply(loaded(Attachment::from_bytes("photo.png", png(8, 6)).unwrap()));
        for c in "what is this?".chars() {
            s.apply(Msg::Key(crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char(c),
                crossterm::event::KeyModifiers::NONE,
            )));
        }
        s.apply(Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Enter,
            crossterm::event::KeyModifiers::NONE,
        )));
        let buf = screen::settle(&mut s, w, h, &mut RenderCache::default());
        let text = screen::text(&buf);
        assert!(text.contains("⚠ an image is attached") && text.contains("(openai/gpt-3.5-turbo)"), "{text}");
        insta::assert_snapshot!(format!("image_to_a_model_without_vision_{w}x{h}"), text);
    }
}

/// The compare screen's composer draws the chips as the chat's does (issue 40).
#[test]
fn chips_above_the_compare_composer() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut s = state();
    for c in "/compare demo demo-reasoning".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    assert!(s.compare.is_active());
    s.apply(loaded(Attachment::from_bytes("photo.png", png(64, 48)).unwrap()));
    let mut cache = RenderCache::default();
    let text = screen::text(&screen::settle(&mut s, 80, 24, &mut cache));
    let composer: Vec<&str> = text.lines().skip_while(|l| !l.contains("message to 2 models")).collect();
    assert!(composer.get(1).is_some_and(|l| l.contains("▣ photo.png 64×48")), "{text}");
    insta::assert_snapshot!("compare_chips_80x24", text);
}
