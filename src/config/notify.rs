//! `notify` and `notify_command` in `config.toml`: how the chat screen tells a user in another
//! window that a reply finished, a tool call waits for approval or a turn failed.

use serde::Deserialize;

/// How to notify (`notify = "auto"|"osc"|"bell"|"command"|"off"`).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NotifyMode {
    /// OSC 9 (and OSC 777 where the terminal is known to take it), the bell where it is not.
    #[default]
    Auto,
    /// Only the OSC sequences.
    Osc,
    /// Only the terminal bell.
    Bell,
    /// Run `notify_command` with the text as its last argument.
    Command,
    /// Never.
    Off,
}

impl super::Config {
    /// The notification mode (default `auto`).
    #[must_use]
    pub fn notify_mode(&self) -> NotifyMode {
        self.notify.unwrap_or_default()
    }

    /// What is wrong with `notify`/`notify_command`, for `config check`.
    #[must_use]
    pub fn notify_problem(&self) -> Option<String> {
        let empty = self.notify_command.as_ref().is_none_or(|c| c.first().is_none_or(|p| p.trim().is_empty()));
        (self.notify_mode() == NotifyMode::Command && empty).then(|| {
            "notify = \"command\" needs notify_command = [\"program\", \"arg\", …] (the text is added as the last \
             argument)"
                .to_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::NotifyMode;
    use crate::config::Config;
    use std::path::Path;

    fn parse(text: &str) -> Result<Config, crate::config::ConfigError> {
        Config::parse(text, Path::new("config.toml"))
    }

    #[test]
    fn modes_parse_and_a_bad_one_names_its_line() {
        assert_eq!(parse("").unwrap().notify_mode(), NotifyMode::Auto);
        for (text, mode) in [("osc", NotifyMode::Osc), ("bell", NotifyMode::Bell), ("off", NotifyMode::Off)] {
            assert_eq!(parse(&format!("notify = \"{text}\"")).unwrap().notify_mode(), mode);
        }
        let err = parse("theme = \"dark\"\nnotify = \"loud\"").unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(crate::config::check::unknown_keys("notify = \"off\"\nnotify_command = [\"x\"]").is_empty());
    }

    #[test]
    fn command_mode_needs_a_command() {
        assert!(parse("notify = \"command\"").unwrap().notify_problem().is_some());
        let ok = parse("notify = \"command\"\nnotify_command = [\"notify-send\", \"palaver\"]").unwrap();
        assert!(ok.notify_problem().is_none());
    }
}
