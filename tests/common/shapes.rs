//! The answer shapes of issue 41, for the criterion appends (benches/markdown.rs) and the
//! per-shape equality tests (tests/ui_shapes.rs), which both include this file with `#[path]`.
//! benches/shapes.py streams the same shapes to the real binary.

/// An answer's shape: what makes its streaming cost different from plain prose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Many paragraphs of prose: lines of ~80 characters, a blank line every 4 lines.
    Paragraphs,
    /// One paragraph: lines of ~70 characters joined by single newlines.
    Paragraph,
    /// One line of base64-like text, no space, no newline.
    Line,
    /// One fenced Rust code block, closed at the end.
    Code,
    /// One GFM table of 6 columns.
    Table,
    /// One tight bullet list.
    List,
    /// Chinese and Japanese without spaces, long lines with punctuation, single newlines.
    Cjk,
    /// Words, emoji sequences (ZWJ, flags, skin tones, variation selectors) and combining marks.
    Emoji,
}

pub const ALL: [Shape; 8] = [
    Shape::Paragraphs,
    Shape::Paragraph,
    Shape::Line,
    Shape::Code,
    Shape::Table,
    Shape::List,
    Shape::Cjk,
    Shape::Emoji,
];

/// Bytes a delta, as the shapes bench streams them (a cut is moved on to the next character).
pub const PER_DELTA: usize = 8;

impl Shape {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Paragraphs => "paragraphs",
            Self::Paragraph => "paragraph",
            Self::Line => "line",
            Self::Code => "code",
            Self::Table => "table",
            Self::List => "list",
            Self::Cjk => "cjk",
            Self::Emoji => "emoji",
        }
    }
}

/// A small deterministic generator (xorshift64*): the same answer on every run.
pub struct Rng(u64);

impl Rng {
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a, T: ?Sized>(&mut self, from: &[&'a T]) -> &'a T {
        from[self.below(from.len())]
    }
}

const WORDS: [&str; 40] = [
    "the",
    "a",
    "model",
    "answer",
    "of",
    "stream",
    "line",
    "text",
    "that",
    "with",
    "each",
    "word",
    "more",
    "some",
    "long",
    "short",
    "paragraph",
    "render",
    "terminal",
    "screen",
    "cost",
    "shape",
    "every",
    "delta",
    "frame",
    "budget",
    "wrap",
    "width",
    "column",
    "row",
    "cell",
    "table",
    "list",
    "item",
    "code",
    "block",
    "quickly",
    "slowly",
    "carefully",
    "again",
];

/// A line of prose of about `width` characters, with some bold and inline code, no newline.
fn prose(rng: &mut Rng, width: usize) -> String {
    let mut line = String::new();
    while line.chars().count() < width {
        if !line.is_empty() {
            line.push(' ');
        }
        let w = rng.pick(&WORDS);
        match rng.below(25) {
            0 => line.push_str(&format!("**{w}**")),
            1 => line.push_str(&format!("`{w}`")),
            _ => line.push_str(w),
        }
    }
    if rng.below(3) == 0 {
        line.push('.');
    }
    line
}

const CITIES: [&str; 8] = ["Lisbon", "Osaka", "Montréal", "Nairobi", "Reykjavík", "Valparaíso", "Tbilisi", "Hanoi"];
const STATUS: [&str; 5] = ["shipped", "pending", "returned", "on hold", "cancelled"];
const CJK: &str = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后\
小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长\
ひらがなとカタカナの文章はこのように続きますそしてまた新しい行が始まります";
const CJK_PUNCT: &str = "，。、；：！？「」";
const EMOJI: [&str; 12] = [
    "👨\u{200d}👩\u{200d}👧\u{200d}👦",
    "🇫🇷",
    "🇯🇵",
    "❤\u{fe0f}",
    "👍🏽",
    "🧑\u{200d}💻",
    "🏳\u{fe0f}\u{200d}🌈",
    "😀",
    "cafe\u{301}",
    "re\u{301}sume\u{301}",
    "nai\u{308}ve",
    "a\u{301}\u{302}\u{303}",
];
const CODE: [&str; 16] = [
    "fn process_{i}(items: &[Item], limit: usize) -> Result<Vec<String>, Error> {",
    "    // Collect the names of the items that pass the filter, at most `limit` of them.",
    "    let mut out = Vec::with_capacity(limit);",
    "    for (index, item) in items.iter().enumerate() {",
    "        if index >= limit {",
    "            break;",
    "        }",
    "        let name = format!(\"{}-{}\", item.name, index * {i});",
    "        match item.kind {",
    "            Kind::Small => out.push(name.to_lowercase()),",
    "            Kind::Large if item.size > 1024 => out.push(name.to_uppercase()),",
    "            _ => return Err(Error::new(\"unexpected kind in section {i}\")),",
    "        }",
    "    }",
    "    Ok(out)",
    "}",
];

/// The `n`th piece of the answer (a line with its newline, mostly; the table's first two are
/// its head).
fn piece(shape: Shape, rng: &mut Rng, n: usize) -> String {
    match shape {
        Shape::Paragraphs => prose(rng, 80) + if n % 4 == 3 { "\n\n" } else { "\n" },
        Shape::Paragraph => prose(rng, 70) + "\n",
        Shape::Line => {
            const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            (0..64).map(|_| char::from(B64[rng.below(64)])).collect()
        }
        Shape::Code if n == 0 => "```rust\n".to_owned(),
        Shape::Code => CODE[(n - 1) % CODE.len()].replace("{i}", &((n - 1) / CODE.len()).to_string()) + "\n",
        Shape::Table if n == 0 => "| id | customer | city | amount | status | note |\n".to_owned(),
        Shape::Table if n == 1 => "|---:|---|---|---:|---|---|\n".to_owned(),
        Shape::Table => format!(
            "| {n} | {} {} | {} | {}.{:02} | {} | {} |\n",
            rng.pick(&WORDS),
            rng.pick(&WORDS),
            rng.pick(&CITIES),
            rng.below(1000),
            rng.below(100),
            rng.pick(&STATUS),
            prose(rng, 100)
        ),
        Shape::List => format!("- item {n}: {}\n", prose(rng, 46)),
        Shape::Cjk => {
            let (chars, punct): (Vec<char>, Vec<char>) = (CJK.chars().collect(), CJK_PUNCT.chars().collect());
            let len = 150 + rng.below(250);
            let mut line: String = (0..len)
                .map(|k| {
                    if k > 0 && rng.below(14) == 0 {
                        punct[rng.below(punct.len())]
                    } else {
                        chars[rng.below(chars.len())]
                    }
                })
                .collect();
            line.push_str("。\n");
            line
        }
        Shape::Emoji => {
            let mut line = String::new();
            while line.chars().count() < 60 {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(if rng.below(5) < 2 { rng.pick(&EMOJI) } else { rng.pick(&WORDS) });
            }
            line + "\n"
        }
    }
}

/// The whole answer of `shape` for about `deltas` deltas of [`PER_DELTA`] bytes.
#[must_use]
pub fn text(shape: Shape, deltas: usize) -> String {
    let closing = if shape == Shape::Code { "```\n" } else { "" };
    let want = deltas * PER_DELTA - closing.len();
    let mut rng = Rng::new(41);
    let mut out = String::new();
    for n in 0.. {
        let p = piece(shape, &mut rng, n);
        if out.len() + p.len() > want {
            if shape == Shape::Line {
                // Base64 is ASCII: any byte is a character boundary.
                out.push_str(&p[..want - out.len()]);
            }
            break;
        }
        out.push_str(&p);
    }
    out + closing
}

/// `text` cut into deltas of [`PER_DELTA`] bytes, each cut moved on to the next character (a
/// grapheme may be cut, as tokens cut them).
#[must_use]
pub fn deltas(text: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / PER_DELTA + 1);
    let mut start = 0;
    for grid in (PER_DELTA..text.len()).step_by(PER_DELTA).chain([text.len()]) {
        let end = (grid..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
        if end > start {
            out.push(&text[start..end]);
            start = end;
        }
    }
    out
}
