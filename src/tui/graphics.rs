//! Which image protocol the terminal speaks, from the environment: kitty (`KITTY_WINDOW_ID`,
//! `TERM=xterm-kitty`, Ghostty), iTerm2 (`TERM_PROGRAM` iTerm.app or WezTerm), sixel (foot,
//! mlterm, `TERM` naming sixel), else half-blocks. Inside tmux (`TMUX`) half-blocks, since
//! tmux passes graphics through only when configured to, and a wrong guess prints garbage.
//! `PALAVER_IMAGES=none|halfblocks|kitty|iterm2|sixel` overrides; `NO_COLOR` means none.
//! No escape-sequence query: its answer would race the input reader for stdin.

use crate::ui::images::Mode;

/// The mode for this terminal, and its cell size in pixels (for the protocols' scaling).
#[must_use]
pub fn probe(no_color: bool) -> (Mode, (u16, u16)) {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let mode = pick(
        no_color,
        &var("PALAVER_IMAGES"),
        &var("TERM"),
        &var("TERM_PROGRAM"),
        !var("KITTY_WINDOW_ID").is_empty(),
        !var("TMUX").is_empty(),
    );
    (mode, font_size())
}

/// The decision, from the environment's values (kept apart for tests).
#[must_use]
pub fn pick(no_color: bool, forced: &str, term: &str, program: &str, kitty_window: bool, tmux: bool) -> Mode {
    match forced.to_ascii_lowercase().as_str() {
        "none" | "off" | "placeholder" => return Mode::Placeholder,
        "halfblocks" | "half-blocks" => return Mode::HalfBlocks,
        "kitty" => return Mode::Kitty,
        "iterm2" => return Mode::Iterm2,
        "sixel" => return Mode::Sixel,
        _ => {}
    }
    if no_color || term == "dumb" {
        return Mode::Placeholder;
    }
    if tmux || term.starts_with("screen") || term.starts_with("tmux") {
        return Mode::HalfBlocks;
    }
    if kitty_window || term == "xterm-kitty" || term == "xterm-ghostty" || program == "ghostty" {
        return Mode::Kitty;
    }
    if program == "iTerm.app" || program == "WezTerm" {
        return Mode::Iterm2;
    }
    if term.contains("sixel") || term.starts_with("foot") || term.starts_with("mlterm") {
        return Mode::Sixel;
    }
    Mode::HalfBlocks
}

/// The cell size in pixels from the terminal's reported window size; 10×20 when it says none.
fn font_size() -> (u16, u16) {
    match crossterm::terminal::window_size() {
        Ok(w) if w.width > 0 && w.height > 0 && w.columns > 0 && w.rows > 0 => {
            ((w.width / w.columns).max(1), (w.height / w.rows).max(1))
        }
        _ => (10, 20),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmux_gets_half_blocks_and_no_color_a_placeholder() {
        assert_eq!(pick(false, "", "tmux-256color", "", true, true), Mode::HalfBlocks);
        assert_eq!(pick(true, "", "xterm-kitty", "", true, false), Mode::Placeholder);
        assert_eq!(pick(false, "", "xterm-kitty", "", false, false), Mode::Kitty);
        assert_eq!(pick(false, "", "xterm-256color", "iTerm.app", false, false), Mode::Iterm2);
        assert_eq!(pick(false, "", "foot", "", false, false), Mode::Sixel);
        assert_eq!(pick(false, "", "xterm-256color", "", false, false), Mode::HalfBlocks);
        assert_eq!(pick(false, "none", "xterm-kitty", "", true, false), Mode::Placeholder);
    }
}
