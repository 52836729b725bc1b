//! Images in the transcript: where a cell reserves rows for one (`Slot`), how large it is
//! drawn, and the cache of pictures ready to draw. Decoding and scaling never happen on the
//! draw path: a draw that finds a picture missing queues a `Job` and shows a placeholder; the
//! interactive loop runs the jobs on blocking threads (`render`) and puts the pictures back.
//! Half-blocks are drawn as ordinary styled lines (so they scroll row by row like text); kitty,
//! iTerm2 and sixel pictures come from `ratatui-image` and are drawn only when wholly visible.

use crate::engine::attachment::{Attachment, Blob};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// Most rows an image takes in the transcript.
pub const MAX_ROWS: u16 = 16;
/// Most columns an image takes.
pub const MAX_COLS: u16 = 64;
/// Pictures kept; past it the cache starts over (a resize makes every size new anyway).
const KEEP: usize = 256;

/// How images are drawn, decided once by probing the terminal (`tui::graphics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// A one-line placeholder (name, type, pixel size, bytes): `NO_COLOR`, or no graphics.
    #[default]
    Placeholder,
    HalfBlocks,
    Kitty,
    Iterm2,
    Sixel,
}

/// Where the image's bytes are.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Bytes(Blob),
    /// A file palaver saved (a generated image).
    File(PathBuf),
}

/// Rows a cell body reserves for one image.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// The body row the image starts on.
    pub row: usize,
    pub cols: u16,
    pub rows: u16,
    /// The content address (or the file path): with the size, the picture's cache key.
    pub key: String,
    pub source: Source,
    pub label: String,
}

/// A picture's cache key: (content key, columns, rows).
pub type Key = (String, u16, u16);

/// Work for a blocking thread.
#[derive(Debug, Clone)]
pub struct Job {
    pub key: Key,
    pub source: Source,
    pub mode: Mode,
    /// The terminal's cell size in pixels (for the graphics protocols).
    pub font: (u16, u16),
}

/// A picture ready to draw.
pub enum Picture {
    Lines(Vec<Line<'static>>),
    Protocol(Box<ratatui_image::protocol::Protocol>),
    Failed(String),
}

impl std::fmt::Debug for Picture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Lines(l) => write!(f, "Lines({})", l.len()),
            Self::Protocol(_) => write!(f, "Protocol"),
            Self::Failed(e) => write!(f, "Failed({e})"),
        }
    }
}

/// Pictures ready to draw, and the jobs a draw asked for.
#[derive(Debug, Default)]
pub struct Images {
    pub mode: Mode,
    pub font: (u16, u16),
    ready: HashMap<Key, Picture>,
    pending: HashSet<Key>,
    wanted: Vec<Job>,
}

impl Images {
    /// The picture for `slot`, or `None` (queued) while it is being made.
    pub fn get(&mut self, slot: &Slot) -> Option<&Picture> {
        let key = (slot.key.clone(), slot.cols, slot.rows);
        if !self.ready.contains_key(&key) && self.pending.insert(key.clone()) {
            self.wanted.push(Job { key: key.clone(), source: slot.source.clone(), mode: self.mode, font: self.font });
        }
        self.ready.get(&key)
    }

    /// The jobs queued since the last call (the loop runs them).
    pub fn take_jobs(&mut self) -> Vec<Job> {
        std::mem::take(&mut self.wanted)
    }

    /// A finished job's picture.
    pub fn insert(&mut self, key: Key, picture: Picture) {
        if self.ready.len() >= KEEP {
            self.ready.clear();
        }
        self.pending.remove(&key);
        self.ready.insert(key, picture);
    }

    /// Runs every queued job here and now (tests and benches; the app uses threads).
    pub fn render_queued(&mut self) {
        for job in self.take_jobs() {
            let picture = render(&job);
            self.insert(job.key, picture);
        }
    }
}

/// Columns and rows an image of `px` pixels takes in `cols` columns: scaled down to fit
/// [`MAX_COLS`] and [`MAX_ROWS`], never up. A terminal cell is about twice as tall as wide, so a
/// row holds two pixel rows of the scaled image (as half-blocks do) and pixels stay square.
#[must_use]
pub fn cell_size(px: (u32, u32), cols: u16) -> (u16, u16) {
    let (w, h) = (u64::from(px.0.max(1)), u64::from(px.1.max(1)));
    let mut c = u64::from(cols.clamp(1, MAX_COLS)).min(w);
    let mut rows = (c * h).div_ceil(w * 2);
    if rows > u64::from(MAX_ROWS) {
        rows = u64::from(MAX_ROWS);
        c = (rows * 2 * w / h).max(1);
    }
    (u16::try_from(c).unwrap_or(1).max(1), u16::try_from(rows).unwrap_or(1).max(1))
}

/// Makes a job's picture: decode, scale, encode for the mode. CPU work: call it off the UI task.
#[must_use]
pub fn render(job: &Job) -> Picture {
    let bytes = match &job.source {
        Source::Bytes(b) => std::borrow::Cow::Borrowed(b.bytes()),
        Source::File(p) => match std::fs::read(p) {
            Ok(b) => std::borrow::Cow::Owned(b),
            Err(e) => return Picture::Failed(format!("cannot read {}: {e}", p.display())),
        },
    };
    let img = match image::load_from_memory(&bytes) {
        Ok(i) => i,
        Err(e) => return Picture::Failed(format!("cannot decode: {e}")),
    };
    let (_, cols, rows) = job.key;
    match job.mode {
        Mode::Placeholder | Mode::HalfBlocks => Picture::Lines(half_blocks(&img, cols, rows)),
        mode => {
            #[allow(deprecated)] // `from_fontsize` is the way to make a picker without querying stdin
            let mut picker = ratatui_image::picker::Picker::from_fontsize(job.font.into());
            picker.set_protocol_type(match mode {
                Mode::Kitty => ratatui_image::picker::ProtocolType::Kitty,
                Mode::Iterm2 => ratatui_image::picker::ProtocolType::Iterm2,
                _ => ratatui_image::picker::ProtocolType::Sixel,
            });
            let size = ratatui::layout::Size::new(cols, rows);
            match picker.new_protocol(img, size, ratatui_image::Resize::Fit(None)) {
                Ok(p) => Picture::Protocol(Box::new(p)),
                Err(e) => Picture::Failed(format!("cannot encode: {e}")),
            }
        }
    }
}

/// The image as at most `rows` lines of at most `cols` upper half blocks (fitted, its shape
/// kept): the top pixel in the foreground, the bottom one in the background.
#[must_use]
pub fn half_blocks(img: &image::DynamicImage, cols: u16, rows: u16) -> Vec<Line<'static>> {
    let small = img
        .resize(u32::from(cols.max(1)), u32::from(rows.max(1)) * 2, image::imageops::FilterType::Triangle)
        .to_rgba8();
    let (w, h) = (small.width(), small.height());
    let rgb = |x: u32, y: u32| {
        // A last odd row has nothing below it: black, like the background.
        let p = small.get_pixel_checked(x, y).map_or([0, 0, 0, 0], |p| p.0);
        // Transparent pixels blend onto black, the usual terminal background.
        let a = u16::from(p[3]);
        let c = |v: u8| u8::try_from(u16::from(v) * a / 255).unwrap_or(v);
        Color::Rgb(c(p[0]), c(p[1]), c(p[2]))
    };
    (0..h.div_ceil(2))
        .map(|row| {
            let spans: Vec<Span<'static>> =
                (0..w).map(|x| Span::styled("▀", Style::new().fg(rgb(x, row * 2)).bg(rgb(x, row * 2 + 1)))).collect();
            Line::from(spans)
        })
        .collect()
}

/// The slot for an attachment shown at body row `row` in `cols` columns, when it is an image
/// with bytes and the mode draws pictures.
#[must_use]
pub fn slot_for(a: &Attachment, row: usize, cols: usize, mode: Mode) -> Option<Slot> {
    if mode == Mode::Placeholder || !a.is_image() {
        return None;
    }
    let data = a.data.clone()?;
    let px = (a.width.unwrap_or(512), a.height.unwrap_or(512));
    let (c, r) = cell_size(px, u16::try_from(cols).unwrap_or(u16::MAX));
    Some(Slot { row, cols: c, rows: r, key: a.sha256.clone(), source: Source::Bytes(data), label: a.name.clone() })
}

/// The slot for a generated image saved at `path` (its size is not known before decoding: a
/// square box, the shape image generation makes by default).
#[must_use]
pub fn slot_for_file(path: &str, row: usize, cols: usize, mode: Mode) -> Option<Slot> {
    if mode == Mode::Placeholder {
        return None;
    }
    let (c, r) = cell_size((1024, 1024), u16::try_from(cols).unwrap_or(u16::MAX));
    let label = path.rsplit('/').next().unwrap_or(path).to_owned();
    Some(Slot { row, cols: c, rows: r, key: path.to_owned(), source: Source::File(path.into()), label })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Blob {
        let mut bytes = Vec::new();
        let img = image::RgbImage::from_fn(w, h, |x, _| image::Rgb([u8::try_from(x).unwrap_or(0), 0, 0]));
        img.write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
        Blob::new(bytes)
    }

    #[test]
    fn every_protocol_makes_a_picture() {
        for mode in [Mode::Kitty, Mode::Iterm2, Mode::Sixel] {
            let job = Job { key: ("k".into(), 8, 4), source: Source::Bytes(png(40, 40)), mode, font: (10, 20) };
            assert!(matches!(render(&job), Picture::Protocol(_)), "{mode:?}");
        }
        let job =
            Job { key: ("k".into(), 8, 4), source: Source::Bytes(png(40, 40)), mode: Mode::HalfBlocks, font: (10, 20) };
        let Picture::Lines(lines) = render(&job) else { panic!("half-blocks are lines") };
        assert_eq!((lines.len(), lines[0].spans.len()), (4, 8));
        let bad = Job { source: Source::Bytes(Blob::new(b"not an image".to_vec())), ..job };
        assert!(matches!(render(&bad), Picture::Failed(_)));
    }

    #[test]
    fn sizes_fit_and_keep_the_shape() {
        assert_eq!(cell_size((64, 48), 80), (42, 16));
        assert_eq!(cell_size((10, 10), 80), (10, 5));
        assert_eq!(cell_size((4000, 1000), 40), (40, 5));
        let (c, r) = cell_size((100, 1000), 80);
        assert!(r == MAX_ROWS && c <= 4, "{c}×{r}");
    }
}
