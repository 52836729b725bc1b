//! Themes: semantic roles to styles. (Placeholder until the theme module lands.)

use ratatui::style::Style;

/// Semantic roles widgets ask the theme for; widgets never name a colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Base, Dim, Accent, Border, BorderFocused, Selection, Title,
    User, Assistant, Reasoning, Tool, Notice, Error, Warning, Success,
    Heading, Emphasis, Strong, Link, Quote, InlineCode, CodeBlock, Rule, TableBorder,
    SeveritySafe, SeverityLow, SeverityMedium, SeverityHigh,
    StatusBar, StatusStreaming, StatusError, GaugeFilled, GaugeEmpty,
    DiffAdded, DiffRemoved,
}

#[derive(Debug, Clone, Default)]
pub struct Theme {
    pub name: String,
}

impl Theme {
    #[must_use]
    pub fn style(&self, _role: Role) -> Style {
        Style::default()
    }
    /// Built-in themes by name, user themes from `user_dir`; `no_color` strips colours.
    ///
    /// # Errors
    /// Unknown name or a bad theme file.
    pub fn load(name: &str, _user_dir: Option<&std::path::Path>, _no_color: bool) -> Result<Self, String> {
        Ok(Self { name: name.to_owned() })
    }
    #[must_use]
    pub fn builtin_names() -> &'static [&'static str] {
        &["dark", "light", "high-contrast"]
    }
}
