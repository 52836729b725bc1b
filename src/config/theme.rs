//! Themes: semantic roles to styles, the built-in theme files and user theme loading.
//!
//! Widgets never name a colour; they ask for a [`Role`]. A theme is a fixed array of
//! styles indexed by role so a lookup is an index, not a string hash, because it
//! happens for every span of every frame.

use ratatui::style::{Color, Modifier, Style};
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;
use toml::de::{DeTable, DeValue};

/// Semantic roles widgets ask the theme for; widgets never name a colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Base,
    Dim,
    Accent,
    Border,
    BorderFocused,
    Selection,
    Title,
    User,
    Assistant,
    Reasoning,
    Tool,
    Notice,
    Error,
    Warning,
    Success,
    Heading,
    Emphasis,
    Strong,
    Link,
    Quote,
    InlineCode,
    CodeBlock,
    Rule,
    TableBorder,
    SeveritySafe,
    SeverityLow,
    SeverityMedium,
    SeverityHigh,
    StatusBar,
    StatusStreaming,
    StatusError,
    GaugeFilled,
    GaugeEmpty,
    DiffAdded,
    DiffRemoved,
}

/// Number of roles; the length of a theme's style table.
pub const ROLE_COUNT: usize = 35;

/// Every role with its theme-file key, in declaration order (checked by a test).
const KEYS: [(Role, &str); ROLE_COUNT] = [
    (Role::Base, "base"),
    (Role::Dim, "dim"),
    (Role::Accent, "accent"),
    (Role::Border, "border"),
    (Role::BorderFocused, "border_focused"),
    (Role::Selection, "selection"),
    (Role::Title, "title"),
    (Role::User, "user"),
    (Role::Assistant, "assistant"),
    (Role::Reasoning, "reasoning"),
    (Role::Tool, "tool"),
    (Role::Notice, "notice"),
    (Role::Error, "error"),
    (Role::Warning, "warning"),
    (Role::Success, "success"),
    (Role::Heading, "heading"),
    (Role::Emphasis, "emphasis"),
    (Role::Strong, "strong"),
    (Role::Link, "link"),
    (Role::Quote, "quote"),
    (Role::InlineCode, "inline_code"),
    (Role::CodeBlock, "code_block"),
    (Role::Rule, "rule"),
    (Role::TableBorder, "table_border"),
    (Role::SeveritySafe, "severity_safe"),
    (Role::SeverityLow, "severity_low"),
    (Role::SeverityMedium, "severity_medium"),
    (Role::SeverityHigh, "severity_high"),
    (Role::StatusBar, "status_bar"),
    (Role::StatusStreaming, "status_streaming"),
    (Role::StatusError, "status_error"),
    (Role::GaugeFilled, "gauge_filled"),
    (Role::GaugeEmpty, "gauge_empty"),
    (Role::DiffAdded, "diff_added"),
    (Role::DiffRemoved, "diff_removed"),
];

impl Role {
    /// Every role, in declaration order (so `ALL[r as usize] == r`).
    pub const ALL: [Role; ROLE_COUNT] = {
        let mut all = [Role::Base; ROLE_COUNT];
        let mut i = 0;
        while i < ROLE_COUNT {
            all[i] = KEYS[i].0;
            i += 1;
        }
        all
    };

    /// The snake_case key used in theme files.
    #[must_use]
    pub const fn key(self) -> &'static str {
        KEYS[self as usize].1
    }

    /// The role a theme-file key names.
    #[must_use]
    pub fn from_key(key: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.key() == key)
    }
}

const BUILTINS: [(&str, &str); 3] = [
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("high-contrast", include_str!("../../themes/high-contrast.toml")),
];

/// Syntect themes bundled by `ThemeSet::load_defaults`; a theme file may name one.
pub const SYNTAX_THEMES: [&str; 7] = [
    "base16-ocean.dark",
    "base16-eighties.dark",
    "base16-mocha.dark",
    "base16-ocean.light",
    "InspiredGitHub",
    "Solarized (dark)",
    "Solarized (light)",
];

const DEFAULT_SYNTAX: &str = "base16-ocean.dark";

#[derive(Debug, Clone)]
pub struct Theme {
    pub name: String,
    styles: [Style; ROLE_COUNT],
    syntax: String,
    no_color: bool,
}

impl Default for Theme {
    /// The built-in dark theme, with colours.
    fn default() -> Self {
        static DARK: OnceLock<Theme> = OnceLock::new();
        DARK.get_or_init(|| {
            builtin("dark").unwrap_or_else(|_| Theme {
                name: "dark".to_owned(),
                styles: [Style::new(); ROLE_COUNT],
                syntax: DEFAULT_SYNTAX.to_owned(),
                no_color: false,
            })
        })
        .clone()
    }
}

impl Theme {
    #[must_use]
    pub fn style(&self, role: Role) -> Style {
        self.styles[role as usize]
    }

    /// Name of the syntect theme for code blocks (one of [`SYNTAX_THEMES`]).
    #[must_use]
    pub fn syntax_theme(&self) -> &str {
        &self.syntax
    }

    /// True when colours were stripped (`NO_COLOR`); code is then not highlighted.
    #[must_use]
    pub fn no_color(&self) -> bool {
        self.no_color
    }

    /// Built-in themes by name, user themes from `user_dir`; `no_color` strips colours.
    ///
    /// `<user_dir>/<name>.toml`, when it exists, wins over a built-in of the same name;
    /// roles it does not set come from `dark`.
    ///
    /// # Errors
    /// Unknown name, an unreadable file, or a bad theme file (`path:line: message`).
    pub fn load(name: &str, user_dir: Option<&Path>, no_color: bool) -> Result<Self, String> {
        if name.is_empty()
            || name.starts_with('.')
            || !name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(format!("invalid theme name `{name}`"));
        }
        let user_file = user_dir.map(|d| d.join(format!("{name}.toml")));
        let mut theme = match user_file.as_deref().filter(|p| p.is_file()) {
            Some(path) => {
                let label = path.display().to_string();
                let src =
                    crate::sys::read::file_string(path, crate::sys::read::CONFIG_FILE).map_err(|e| e.about(&label))?;
                let parsed = parse(&src, &label)?;
                let mut theme = builtin("dark")?;
                theme.name = name.to_owned();
                parsed.apply_to(&mut theme);
                theme
            }
            None => builtin(name).map_err(|e| match &user_file {
                Some(p) if e.starts_with("unknown") => format!("{e}; no {} either", p.display()),
                _ => e,
            })?,
        };
        if no_color {
            theme.strip_colors();
        }
        Ok(theme)
    }

    #[must_use]
    pub fn builtin_names() -> &'static [&'static str] {
        &["dark", "light", "high-contrast"]
    }

    /// Keeps modifiers, drops every colour. Selection is only a background in the
    /// colour themes, so it falls back to reverse video to stay visible.
    fn strip_colors(&mut self) {
        for (i, style) in self.styles.iter_mut().enumerate() {
            let mut plain = Style::new().add_modifier(style.add_modifier).remove_modifier(style.sub_modifier);
            if i == Role::Selection as usize && style.add_modifier.is_empty() {
                plain = plain.add_modifier(Modifier::REVERSED);
            }
            *style = plain;
        }
        self.no_color = true;
    }
}

fn builtin(name: &str) -> Result<Theme, String> {
    let Some((_, src)) = BUILTINS.iter().find(|(n, _)| *n == name) else {
        return Err(format!("unknown theme `{name}` (built-in: {})", Theme::builtin_names().join(", ")));
    };
    let parsed = parse(src, &format!("themes/{name}.toml"))?;
    let mut theme = Theme {
        name: name.to_owned(),
        styles: [Style::new(); ROLE_COUNT],
        syntax: DEFAULT_SYNTAX.to_owned(),
        no_color: false,
    };
    parsed.apply_to(&mut theme);
    Ok(theme)
}

/// What one theme file says; roles it leaves out are `None`.
struct Parsed {
    styles: [Option<Style>; ROLE_COUNT],
    syntax: Option<String>,
}

impl Parsed {
    fn apply_to(&self, theme: &mut Theme) {
        for (slot, style) in theme.styles.iter_mut().zip(&self.styles) {
            if let Some(s) = style {
                *slot = *s;
            }
        }
        if let Some(s) = &self.syntax {
            s.clone_into(&mut theme.syntax);
        }
    }
}

/// Parses a theme file. Errors read `file:line: message`.
fn parse(src: &str, file: &str) -> Result<Parsed, String> {
    let err = |span: Option<Range<usize>>, msg: &str| {
        let line = span.map_or(1, |r| src[..r.start.min(src.len())].matches('\n').count() + 1);
        format!("{file}:{line}: {msg}")
    };
    let table = DeTable::parse(src).map_err(|e| err(e.span(), e.message().trim()))?;
    let mut parsed = Parsed { styles: [None; ROLE_COUNT], syntax: None };
    for (key, value) in table.get_ref() {
        let key_str: &str = key.get_ref();
        if key_str == "syntax" {
            match value.get_ref() {
                DeValue::String(s) if SYNTAX_THEMES.contains(&s.as_ref()) => {
                    parsed.syntax = Some(s.to_string());
                }
                _ => {
                    let msg = format!("`syntax` must be one of: {}", SYNTAX_THEMES.join(", "));
                    return Err(err(Some(value.span()), &msg));
                }
            }
            continue;
        }
        let Some(role) = Role::from_key(key_str) else {
            return Err(err(Some(key.span()), &format!("unknown role `{key_str}`")));
        };
        let DeValue::Table(fields) = value.get_ref() else {
            let msg = format!("`{key_str}` must be a table like {{ fg = \"#rrggbb\", bold = true }}");
            return Err(err(Some(value.span()), &msg));
        };
        let mut style = Style::new();
        for (field, v) in fields {
            let name: &str = field.get_ref();
            let bad = |what: &str| err(Some(v.span()), &format!("`{key_str}.{name}`: {what}"));
            match (name, v.get_ref()) {
                ("fg" | "bg", val) => {
                    let color = parse_color(val)
                        .ok_or_else(|| bad("expected \"#rrggbb\", an ANSI colour name or an index 0-255"))?;
                    style = if name == "fg" { style.fg(color) } else { style.bg(color) };
                }
                (_, DeValue::Boolean(on)) => {
                    let m = modifier(name)
                        .ok_or_else(|| err(Some(field.span()), &format!("unknown attribute `{key_str}.{name}`")))?;
                    style = if *on { style.add_modifier(m) } else { style.remove_modifier(m) };
                }
                _ if modifier(name).is_some() => return Err(bad("expected true or false")),
                _ => {
                    let msg = format!("unknown attribute `{key_str}.{name}`");
                    return Err(err(Some(field.span()), &msg));
                }
            }
        }
        parsed.styles[role as usize] = Some(style);
    }
    Ok(parsed)
}

fn modifier(name: &str) -> Option<Modifier> {
    Some(match name {
        "bold" => Modifier::BOLD,
        "italic" => Modifier::ITALIC,
        "dim" => Modifier::DIM,
        "underline" | "underlined" => Modifier::UNDERLINED,
        "reversed" => Modifier::REVERSED,
        "crossed_out" | "strikethrough" => Modifier::CROSSED_OUT,
        _ => return None,
    })
}

fn parse_color(v: &DeValue<'_>) -> Option<Color> {
    match v {
        DeValue::Integer(i) => {
            let digits = i.as_str().replace('_', "");
            u8::from_str_radix(&digits, i.radix()).ok().map(Color::Indexed)
        }
        DeValue::String(s) => color_from_str(s),
        _ => None,
    }
}

/// `#rrggbb` or one of the 16 ANSI names (snake_case, `bright_` = `light_`).
fn color_from_str(s: &str) -> Option<Color> {
    if let Some(hex) = s.strip_prefix('#') {
        if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let n = u32::from_str_radix(hex, 16).ok()?;
        let [_, r, g, b] = n.to_be_bytes();
        return Some(Color::Rgb(r, g, b));
    }
    let name = s.to_ascii_lowercase().replace(['-', ' '], "_").replace("bright_", "light_");
    Some(match name.as_str() {
        "reset" | "default" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "dark_gray" | "dark_grey" | "light_black" => Color::DarkGray,
        "light_red" => Color::LightRed,
        "light_green" => Color::LightGreen,
        "light_yellow" => Color::LightYellow,
        "light_blue" => Color::LightBlue,
        "light_magenta" => Color::LightMagenta,
        "light_cyan" => Color::LightCyan,
        "white" | "light_white" => Color::White,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_through_keys() {
        for (i, role) in Role::ALL.into_iter().enumerate() {
            assert_eq!(role as usize, i);
            assert_eq!(Role::from_key(role.key()), Some(role));
        }
    }

    #[test]
    fn builtins_define_every_role() {
        for (name, src) in BUILTINS {
            let parsed = parse(src, name).unwrap();
            for role in Role::ALL {
                assert!(parsed.styles[role as usize].is_some(), "{name} lacks {}", role.key());
            }
            assert!(parsed.syntax.is_some(), "{name} lacks syntax");
        }
        assert_eq!(BUILTINS.map(|(n, _)| n).as_slice(), Theme::builtin_names(), "builtin_names out of sync");
    }

    #[test]
    fn default_is_dark() {
        let d = Theme::default();
        let dark = Theme::load("dark", None, false).unwrap();
        assert_eq!(d.name, "dark");
        assert_eq!(d.styles, dark.styles);
        assert_eq!(d.style(Role::SeverityHigh).fg, Some(Color::Rgb(0xff, 0x5f, 0x5f)));
        assert!(d.style(Role::SeverityHigh).add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn all_builtins_load_and_differ() {
        let themes: Vec<_> = Theme::builtin_names().iter().map(|n| Theme::load(n, None, false).unwrap()).collect();
        assert_ne!(themes[0].styles, themes[1].styles);
        assert_ne!(themes[0].styles, themes[2].styles);
        assert_eq!(themes[1].syntax_theme(), "InspiredGitHub");
    }

    #[test]
    fn no_color_keeps_modifiers_only() {
        let t = Theme::load("dark", None, true).unwrap();
        assert!(t.no_color());
        for role in Role::ALL {
            let s = t.style(role);
            assert_eq!((s.fg, s.bg), (None, None), "{role:?}");
        }
        assert!(t.style(Role::Heading).add_modifier.contains(Modifier::BOLD));
        assert!(t.style(Role::Selection).add_modifier.contains(Modifier::REVERSED));
    }

    #[test]
    fn user_theme_overrides_and_falls_back_to_dark() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mine.toml"),
            "syntax = \"Solarized (dark)\"\nheading = { fg = \"red\", underline = true }\naccent = { fg = 33 }\n",
        )
        .unwrap();
        let t = Theme::load("mine", Some(dir.path()), false).unwrap();
        let dark = Theme::default();
        assert_eq!(t.name, "mine");
        assert_eq!(t.style(Role::Heading), Style::new().fg(Color::Red).add_modifier(Modifier::UNDERLINED));
        assert_eq!(t.style(Role::Accent).fg, Some(Color::Indexed(33)));
        assert_eq!(t.style(Role::Link), dark.style(Role::Link));
        assert_eq!(t.syntax_theme(), "Solarized (dark)");
        // A user file shadows the built-in of the same name.
        std::fs::write(dir.path().join("light.toml"), "base = { fg = \"#010203\" }\n").unwrap();
        let l = Theme::load("light", Some(dir.path()), false).unwrap();
        assert_eq!(l.style(Role::Base).fg, Some(Color::Rgb(1, 2, 3)));
        // Built-ins still load when the user dir lacks the file.
        assert!(Theme::load("high-contrast", Some(dir.path()), false).is_ok());
    }

    #[test]
    fn errors_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("a = \"#zzzzzz\"\n", ":1: unknown role `a`"),
            ("base = {}\nlink = { fg = \"#12345\" }\n", ":2: `link.fg`"),
            ("\n\nlink = { blink = true }\n", ":3: unknown attribute `link.blink`"),
            ("\nlink = { bold = 1 }\n", ":2: `link.bold`: expected true or false"),
            ("link = \"red\"\n", ":1: `link` must be a table"),
            ("\n\n\nlink = { fg = \n", ":4:"),
            ("syntax = \"nope\"\n", ":1: `syntax` must be one of"),
        ];
        for (src, want) in cases {
            std::fs::write(dir.path().join("bad.toml"), src).unwrap();
            let e = Theme::load("bad", Some(dir.path()), false).unwrap_err();
            assert!(e.contains("bad.toml"), "{e}");
            assert!(e.contains(want), "{src:?}: {e}");
        }
    }

    #[test]
    fn unknown_and_invalid_names() {
        assert!(Theme::load("nope", None, false).unwrap_err().contains("unknown theme `nope`"));
        assert!(Theme::load("../etc/passwd", None, false).is_err());
        assert!(Theme::load("", None, false).is_err());
    }

    #[test]
    fn colour_names() {
        assert_eq!(color_from_str("#00ff7F"), Some(Color::Rgb(0, 255, 127)));
        assert_eq!(color_from_str("bright-red"), Some(Color::LightRed));
        assert_eq!(color_from_str("Dark Gray"), Some(Color::DarkGray));
        assert_eq!(color_from_str("#fff"), None);
        assert_eq!(color_from_str("chartreuse"), None);
    }
}
