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
/// Widest and tallest picture decoded, in pixels; a larger one is named, not drawn.
pub const MAX_SIDE: u32 = 8192;
/// Most memory one decode may take.
const MAX_ALLOC: u64 = 64 * 1024 * 1024;
/// Most bytes read from a saved file: the default per-file attachment limit.
const MAX_FILE_BYTES: u64 = crate::config::attachments::DEFAULT_MAX_FILE_MB * 1024 * 1024;

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
        Source::File(p) => match read_saved(p) {
            Ok(b) => std::borrow::Cow::Owned(b),
            Err(e) => return Picture::Failed(e),
        },
    };
    let img = match decode(&bytes) {
        Ok(i) => i,
        Err(e) => return Picture::Failed(e),
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

/// A saved image's bytes: only from under `<data dir>/images/`, and at most [`MAX_FILE_BYTES`].
fn read_saved(p: &std::path::Path) -> Result<Vec<u8>, String> {
    let Some(p) = saved_image(&p.to_string_lossy()) else {
        return Err("not a file palaver saved: not drawn".to_owned());
    };
    let bytes = std::fs::File::open(&p)
        .and_then(|f| crate::sys::read::head(f, usize::try_from(MAX_FILE_BYTES + 1).unwrap_or(usize::MAX)))
        .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("over {} MB: not drawn", MAX_FILE_BYTES >> 20));
    }
    Ok(bytes)
}

/// Decodes within limits: at most [`MAX_SIDE`] pixels a side (read from the header first, so a
/// small file claiming a huge picture is refused before anything is allocated) and
/// [`MAX_ALLOC`] bytes of memory.
///
/// # Errors
/// Why the picture is not drawn.
pub fn decode(bytes: &[u8]) -> Result<image::DynamicImage, String> {
    let reader = || {
        image::ImageReader::new(std::io::Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| format!("cannot decode: {e}"))
    };
    let (w, h) = reader()?.into_dimensions().map_err(|e| format!("cannot decode: {e}"))?;
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(format!("{w}×{h} pixels, over {MAX_SIDE} a side: not drawn"));
    }
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    let mut r = reader()?;
    r.limits(limits);
    r.decode().map_err(|e| match e {
        image::ImageError::Limits(_) => format!("{w}×{h} pixels, too large to decode: not drawn"),
        e => format!("cannot decode: {e}"),
    })
}

pub use crate::engine::images::{saved_image, saved_image_in};

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
/// square box, the shape image generation makes by default). `None` too for a path outside
/// `<data dir>/images/` ([`saved_image`]).
#[must_use]
pub fn slot_for_file(path: &str, row: usize, cols: usize, mode: Mode) -> Option<Slot> {
    if mode == Mode::Placeholder {
        return None;
    }
    let path = saved_image(path)?;
    let path = path.to_str()?;
    let (c, r) = cell_size((1024, 1024), u16::try_from(cols).unwrap_or(u16::MAX));
    let name = path.rsplit('/').next().unwrap_or(path);
    // Saved as `<sha256>-<id>.png`: the label is the id's part.
    let label = match name.split_once('-') {
        Some((hash, rest)) if crate::engine::attachment::is_sha256(hash) => rest,
        _ => name,
    }
    .to_owned();
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

    /// A 1×1 PNG whose header claims `side`×`side` pixels (a decompression bomb's shape).
    fn claiming(side: u32) -> Vec<u8> {
        let mut b = png(1, 1).bytes().to_vec();
        b[16..20].copy_from_slice(&side.to_be_bytes());
        b[20..24].copy_from_slice(&side.to_be_bytes());
        // The IHDR chunk's CRC-32 (over its type and data, bytes 12..29).
        let crc = !b[12..29].iter().fold(!0u32, |mut c, &byte| {
            c ^= u32::from(byte);
            for _ in 0..8 {
                c = if c & 1 == 1 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
            }
            c
        });
        b[29..33].copy_from_slice(&crc.to_be_bytes());
        b
    }

    #[test]
    fn huge_pictures_are_named_not_decoded() {
        let bomb = claiming(100_000);
        let e = decode(&bomb).unwrap_err();
        assert!(e.contains("100000×100000") && e.contains("not drawn"), "{e}");
        // Within the sides but over the memory cap (8000×8000 RGB is 192 MB).
        let e = decode(&claiming(8000)).unwrap_err();
        assert!(e.contains("too large to decode"), "{e}");
        assert!(decode(png(40, 30).bytes()).is_ok());
        let job = Job {
            key: ("k".into(), 8, 4),
            source: Source::Bytes(Blob::new(bomb)),
            mode: Mode::HalfBlocks,
            font: (10, 20),
        };
        assert!(matches!(render(&job), Picture::Failed(e) if e.contains("not drawn")));
    }

    #[test]
    fn saved_paths_are_trusted_only_under_the_images_dir() {
        let dir = tempfile::tempdir().unwrap();
        let images = dir.path().join("images");
        std::fs::create_dir(&images).unwrap();
        let inside = images.join("a.png");
        std::fs::write(&inside, png(2, 2).bytes()).unwrap();
        let outside = dir.path().join("secret.txt");
        std::fs::write(&outside, "secret").unwrap();
        let ok = |p: &std::path::Path| saved_image_in(&p.to_string_lossy(), dir.path());
        assert!(ok(&inside).is_some());
        assert!(ok(&outside).is_none());
        assert!(ok(&images.join("../secret.txt")).is_none(), "no way out by ..");
        assert!(ok(&images).is_none(), "the folder itself is no image");
        assert!(ok(std::path::Path::new("/etc/passwd")).is_none());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&outside, images.join("link.png")).unwrap();
            assert!(ok(&images.join("link.png")).is_none(), "no way out by a link");
        }
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
