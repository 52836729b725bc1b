//! The model catalogue: what palaver knows about models that providers do not tell (context
//! window, max output, prices, input kinds, abilities). Built into the binary from
//! `assets/catalogue/models.tsv` (see `assets/catalogue/SOURCE.md`); a copy the user wrote with
//! `palaver catalogue update` in the data directory wins over it. The built-in is parsed once,
//! on first use, into a map, so a lookup is one hash probe (a few, for ids written another way);
//! the user's copy is an index written at `update` (`catalogue_index`), so a run never parses
//! it: a lookup is a few probes into that file, whatever the copy's size.
//! How it merges with the user's `[models."…"]` is `Config::model_facts`'s business.

use super::catalogue_index::{self, Index};
use crate::sys::read::Budget;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The largest catalogue `update` takes, and the largest copy of an older palaver read
/// (LiteLLM's whole JSON is a few MB).
pub const BUDGET: Budget = Budget::fixed("catalogue_bytes", 64 * 1024 * 1024);

/// The catalogue as built into the binary.
pub const BUILT_IN: &str = include_str!("../../assets/catalogue/models.tsv");
/// The first word of a catalogue file, so a wrong file is told apart from a broken one.
pub const MAGIC: &str = "#palaver-catalogue 1";
/// The name of the user's copy in the data directory as palaver before the index wrote it
/// (still read when there is no index; `update` replaces it with one).
pub const FILE_NAME: &str = "catalogue.tsv";

/// Prices in dollars per million tokens, as the catalogue states them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Prices {
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
    /// Only when reasoning tokens cost other than output tokens.
    pub reasoning: Option<f64>,
}

/// What a model takes and can do; `None` where the source does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Abilities {
    pub image: Option<bool>,
    pub pdf: Option<bool>,
    pub audio: Option<bool>,
    pub tools: Option<bool>,
    pub reasoning: Option<bool>,
    pub structured: Option<bool>,
}

/// One model of the catalogue.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Entry {
    /// `provider/id` as the catalogue files it (`openai/gpt-4o-mini`).
    pub key: String,
    pub context_window: Option<u64>,
    pub max_output: Option<u64>,
    pub prices: Prices,
    pub abilities: Abilities,
}

/// Where the catalogue in use came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The one built into this palaver.
    BuiltIn,
    /// The user's copy (`palaver catalogue update`).
    DataDir(PathBuf),
}

/// A catalogue: parsed (the built-in), or an index on disk (the user's copy).
#[derive(Debug)]
pub struct Catalogue {
    entries: Vec<Entry>,
    /// Every `provider/id`, and each bare id for the first provider that has it.
    index: HashMap<String, usize>,
    /// The user's copy, when it is an index: `entries` is then empty.
    disk: Option<Index>,
    /// How many models it lists.
    models: usize,
    /// What the header says it was made from (`LiteLLM 1.110.2 (MIT)`).
    pub source: String,
    /// The date the header gives.
    pub date: String,
    pub origin: Origin,
}

impl Catalogue {
    /// Parses palaver's catalogue format (described in `assets/catalogue/generate.py`).
    ///
    /// # Errors
    /// A missing header, or a line whose numbers or abilities do not read, named by its number.
    pub fn parse(text: &str, origin: Origin) -> Result<Self, String> {
        let mut lines = text.lines();
        let (source, date) = parse_header(lines.next().unwrap_or_default())?;
        // Sized once: a line a model, each under two keys (parsing is what a run's first lookup waits for).
        let lines_hint = text.len() / 64;
        let mut entries = Vec::with_capacity(lines_hint);
        let mut index = HashMap::with_capacity(lines_hint * 2);
        for (n, line) in lines.enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let entry = parse_line(line).map_err(|e| format!("line {}: {e}", n + 2))?;
            let at = entries.len();
            let full = entry.key.to_ascii_lowercase();
            if let Some((_, bare)) = full.split_once('/') {
                if !index.contains_key(bare) {
                    index.insert(bare.to_owned(), at);
                }
            }
            index.entry(full).or_insert(at);
            entries.push(entry);
        }
        if entries.is_empty() {
            return Err("the catalogue lists no model".into());
        }
        Ok(Self { models: entries.len(), entries, index, disk: None, source, date, origin })
    }

    /// The user's copy as an index written by `update` (see `catalogue_index`).
    ///
    /// # Errors
    /// The file is missing or not an index.
    pub fn open_index(path: &Path) -> Result<Self, String> {
        let (ix, facts) = Index::open(path)?;
        Ok(Self {
            entries: Vec::new(),
            index: HashMap::new(),
            disk: Some(ix),
            models: facts.models,
            source: facts.source,
            date: facts.date,
            origin: Origin::DataDir(path.to_path_buf()),
        })
    }

    /// The entry for `model` as users write it: a router's `maker/id` whose maker the
    /// catalogue files under another name (`google/…` is `gemini/…`, before a host's copy of
    /// the same id), then exact (`gpt-4o-mini`, `openai/gpt-4o-mini`) in any case, then the id
    /// after the last `/`, without a `:variant` tag.
    #[must_use]
    pub fn lookup(&self, model: &str) -> Option<Entry> {
        let m = model.trim().to_ascii_lowercase();
        let probe = |k: &str| match &self.disk {
            Some(ix) => ix.get(k),
            None => self.index.get(k).map(|i| self.entries[*i].clone()),
        };
        let untagged = m.split_once(':').map_or(m.as_str(), |(a, _)| a);
        if let Some((maker, id)) = untagged.split_once('/') {
            let alias = match maker {
                "google" => Some("gemini"),
                "x-ai" => Some("xai"),
                "mistralai" => Some("mistral"),
                _ => None,
            };
            if let Some(e) = alias.and_then(|a| probe(&format!("{a}/{id}"))) {
                return Some(e);
            }
        }
        if let Some(e) = probe(&m) {
            return Some(e);
        }
        let last = untagged.rsplit('/').next().unwrap_or(untagged);
        probe(untagged).or_else(|| probe(last))
    }

    /// How many models it lists.
    #[must_use]
    pub fn len(&self) -> usize {
        self.models
    }

    /// Whether it lists none (never, once parsed).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.models == 0
    }

    /// One line for messages: where it came from, its source and date.
    #[must_use]
    pub fn describe(&self) -> String {
        let place = match &self.origin {
            Origin::BuiltIn => "built-in catalogue".to_owned(),
            Origin::DataDir(p) => format!("catalogue copy {}", p.display()),
        };
        format!("{place} ({}, {})", self.source, self.date)
    }
}

/// The header's source and date.
pub(super) fn parse_header(header: &str) -> Result<(String, String), String> {
    let mut fields = header.split('\t');
    if fields.next() != Some(MAGIC) {
        return Err(format!("not a palaver catalogue: the first line should start with `{MAGIC}`"));
    }
    let (mut source, mut date) = (String::new(), String::new());
    for f in fields {
        match f.split_once('=') {
            Some(("source", v)) => v.clone_into(&mut source),
            Some(("date", v)) => v.clone_into(&mut date),
            _ => {}
        }
    }
    Ok((source, date))
}

pub(super) fn parse_line(line: &str) -> Result<Entry, String> {
    let mut f = [""; 9];
    for (slot, field) in f.iter_mut().zip(line.split('\t')) {
        *slot = field;
    }
    let key = f[0].trim();
    if key.is_empty() || !key.contains('/') {
        return Err(format!("`{key}` should be provider/model"));
    }
    let get = |i: usize| f[i].trim();
    let int = |i: usize| -> Result<Option<u64>, String> {
        let s = get(i);
        if s.is_empty() { Ok(None) } else { s.parse().map(Some).map_err(|_| format!("`{s}` is not a token count")) }
    };
    let price = |i: usize| -> Result<Option<f64>, String> {
        let s = get(i);
        if s.is_empty() {
            return Ok(None);
        }
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
            _ => Err(format!("`{s}` is not a price")),
        }
    };
    Ok(Entry {
        key: key.to_owned(),
        context_window: int(1)?,
        max_output: int(2)?,
        prices: Prices {
            input: price(3)?,
            output: price(4)?,
            cache_read: price(5)?,
            cache_write: price(6)?,
            reasoning: price(7)?,
        },
        abilities: abilities(get(8))?,
    })
}

fn abilities(s: &str) -> Result<Abilities, String> {
    let mut a = Abilities::default();
    for c in s.chars() {
        let slot = match c.to_ascii_lowercase() {
            'i' => &mut a.image,
            'p' => &mut a.pdf,
            'a' => &mut a.audio,
            't' => &mut a.tools,
            'r' => &mut a.reasoning,
            's' => &mut a.structured,
            _ => return Err(format!("`{c}` is not an ability letter (i p a t r s)")),
        };
        *slot = Some(c.is_ascii_uppercase());
    }
    Ok(a)
}

static GLOBAL: OnceLock<Catalogue> = OnceLock::new();

/// The catalogue in use: the user's copy in the data directory when there is a readable one
/// (its index; else a copy an older palaver wrote), else the built-in. Opened on first use;
/// `preload` starts that off the caller's thread.
pub fn global() -> &'static Catalogue {
    GLOBAL.get_or_init(|| {
        let dir = super::Paths::from_env().data_dir;
        Catalogue::open_index(&dir.join(catalogue_index::FILE_NAME))
            .ok()
            .or_else(|| load_copy(&dir.join(FILE_NAME)))
            .unwrap_or_else(built_in)
    })
}

/// Parses the catalogue on a thread of its own, so the first lookup finds it ready.
pub fn preload() {
    if GLOBAL.get().is_none() {
        std::thread::spawn(|| {
            global();
        });
    }
}

/// The built-in catalogue, parsed.
#[must_use]
pub fn built_in() -> Catalogue {
    // The built-in file is checked by a test; an empty catalogue is the harmless fallback.
    Catalogue::parse(BUILT_IN, Origin::BuiltIn).unwrap_or_else(|_| Catalogue {
        entries: Vec::new(),
        index: HashMap::new(),
        disk: None,
        models: 0,
        source: String::new(),
        date: String::new(),
        origin: Origin::BuiltIn,
    })
}

/// The copy an older palaver wrote at `path`, when it exists and parses (a broken copy is
/// passed over: it was checked when written, and the built-in is better than nothing).
fn load_copy(path: &Path) -> Option<Catalogue> {
    let text = crate::sys::read::file_string(path, BUDGET).ok()?;
    Catalogue::parse(&text, Origin::DataDir(path.to_path_buf())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_catalogue_parses_and_knows_common_models() {
        let c = Catalogue::parse(BUILT_IN, Origin::BuiltIn).unwrap();
        assert!(c.len() > 500, "{}", c.len());
        assert!(c.source.contains("LiteLLM") && !c.date.is_empty());
        let e = c.lookup("gpt-4o-mini").unwrap();
        assert_eq!(e.key, "openai/gpt-4o-mini");
        assert_eq!(e.context_window, Some(128_000));
        assert_eq!(e.prices.input, Some(0.15));
        assert_eq!(e.prices.cache_read, Some(0.075));
        assert_eq!(e.abilities.image, Some(true));
        // As a router writes it, in another case, with a variant tag.
        assert_eq!(c.lookup("openai/gpt-4o-mini").unwrap().key, "openai/gpt-4o-mini");
        assert_eq!(c.lookup("OpenAI/GPT-4o-mini:free").unwrap().key, "openai/gpt-4o-mini");
        assert_eq!(c.lookup("google/gemini-2.5-flash").unwrap().key, "gemini/gemini-2.5-flash");
        // A bare id is its maker's, not a host's copy.
        assert_eq!(c.lookup("azure/gpt-4o-mini").map(|e| e.key), Some("azure/gpt-4o-mini".to_owned()));
        assert!(c.lookup("demo").is_none());
        assert!(c.lookup("no-such-model-anywhere").is_none());
    }

    #[test]
    fn a_broken_file_is_named_by_its_line() {
        let e = Catalogue::parse("hello", Origin::BuiltIn).unwrap_err();
        assert!(e.contains("not a palaver catalogue"), "{e}");
        let text = format!("{MAGIC}\tsource=x\tdate=d\na/b\t100\n\nc/d\tmany\n");
        let e = Catalogue::parse(&text, Origin::BuiltIn).unwrap_err();
        assert!(e.starts_with("line 4:") && e.contains("many"), "{e}");
        let text = format!("{MAGIC}\na/b\t1\t2\t-3\n");
        assert!(Catalogue::parse(&text, Origin::BuiltIn).unwrap_err().contains("price"));
        let text = format!("{MAGIC}\na/b\t1\t2\t3\t4\t\t\t\tIz\n");
        assert!(Catalogue::parse(&text, Origin::BuiltIn).unwrap_err().contains("ability"));
    }

    #[test]
    fn abilities_say_yes_no_or_nothing() {
        let text = format!("{MAGIC}\nx/m\t1000\t\t1\t2\t\t\t\tIt\n");
        let c = Catalogue::parse(&text, Origin::BuiltIn).unwrap();
        let e = c.lookup("m").unwrap();
        assert_eq!(e.abilities.image, Some(true));
        assert_eq!(e.abilities.tools, Some(false));
        assert_eq!(e.abilities.pdf, None);
        assert_eq!(e.max_output, None);
    }
}
