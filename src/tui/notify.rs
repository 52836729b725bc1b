//! Writing a notification: OSC 9 (and OSC 777 where the terminal is known to take it), the
//! bell, or the user's `notify_command`. The app decides when; this only knows the terminal.

use crate::config::notify::NotifyMode;

/// Longest notification text written, in characters.
const MAX_CHARS: usize = 200;

/// What the environment says about the terminal, read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermKind {
    /// Inside tmux: sequences must be wrapped to pass through (`allow-passthrough on`).
    pub tmux: bool,
    /// Known to show OSC 9 (iTerm2, WezTerm, ghostty, kitty, Windows Terminal…).
    pub osc9: bool,
    /// Known to show OSC 777 (VTE terminals, foot, urxvt, ghostty, WezTerm).
    pub osc777: bool,
}

impl TermKind {
    /// Reads `TERM`, `TERM_PROGRAM`, `VTE_VERSION`, `WT_SESSION`, `TMUX`.
    #[must_use]
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        Self::from_vars(
            &var("TERM"),
            &var("TERM_PROGRAM"),
            !var("VTE_VERSION").is_empty(),
            !var("WT_SESSION").is_empty(),
            !var("TMUX").is_empty(),
        )
    }

    fn from_vars(term: &str, program: &str, vte: bool, windows_terminal: bool, tmux: bool) -> Self {
        let program = program.to_ascii_lowercase();
        let osc9 = windows_terminal
            || term.contains("kitty")
            || term.contains("ghostty")
            || ["iterm.app", "wezterm", "ghostty"].contains(&program.as_str());
        let osc777 = vte
            || term.starts_with("foot")
            || term.starts_with("rxvt-unicode")
            || term.contains("ghostty")
            || ["wezterm", "ghostty"].contains(&program.as_str());
        Self { tmux, osc9, osc777 }
    }
}

/// The text as it may go inside an escape sequence: no control characters (an ESC or BEL
/// would end the sequence and let the rest reach the terminal), no `;` (OSC 777's separator),
/// at most `MAX_CHARS`.
#[must_use]
pub fn clean(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).map(|c| if c == ';' { ',' } else { c }).take(MAX_CHARS).collect()
}

/// The bytes to write for `mode` (empty for `command` and `off`).
#[must_use]
pub fn sequence(mode: NotifyMode, text: &str, term: &TermKind) -> String {
    let text = clean(text);
    let osc9 = format!("\x1b]9;palaver: {text}\x07");
    let osc777 = format!("\x1b]777;notify;palaver;{text}\x07");
    let wrap = |seq: String| if term.tmux { passthrough(&seq) } else { seq };
    let mut out = String::new();
    match mode {
        NotifyMode::Auto | NotifyMode::Osc => {
            out.push_str(&wrap(osc9));
            if term.osc777 {
                out.push_str(&wrap(osc777));
            }
            // Where nothing says the terminal shows OSC 9 (tmux included: it needs
            // passthrough allowed), the bell is what surely reaches the user.
            if mode == NotifyMode::Auto && (term.tmux || !(term.osc9 || term.osc777)) {
                out.push('\x07');
            }
        }
        NotifyMode::Bell => out.push('\x07'),
        NotifyMode::Command | NotifyMode::Off => {}
    }
    out
}

/// tmux's DCS passthrough: the sequence with every ESC doubled, for the outer terminal.
fn passthrough(seq: &str) -> String {
    format!("\x1bPtmux;{}\x1b\\", seq.replace('\x1b', "\x1b\x1b"))
}

/// Runs `notify_command` with the text as its last argument, without waiting for it.
///
/// # Errors
/// When the command is empty or cannot be started.
pub fn run_command(command: &[String], text: &str) -> std::io::Result<()> {
    let Some((program, args)) = command.split_first() else {
        return Err(std::io::Error::other("notify_command is empty"));
    };
    let mut spawn = crate::sys::spawn::Spawn::helper(program, crate::sys::spawn::Role::Lasting);
    spawn
        .args(args)
        .arg(clean(text))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = spawn.std()?;
    // Reaped in the background so it never lingers as a zombie.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_writes_osc9_and_the_bell_where_unknown() {
        let plain = TermKind::default();
        assert_eq!(sequence(NotifyMode::Auto, "done", &plain), "\x1b]9;palaver: done\x07\x07");
        let iterm = TermKind::from_vars("xterm-256color", "iTerm.app", false, false, false);
        assert_eq!(sequence(NotifyMode::Auto, "done", &iterm), "\x1b]9;palaver: done\x07");
        let vte = TermKind::from_vars("xterm-256color", "", true, false, false);
        assert_eq!(sequence(NotifyMode::Osc, "a", &vte), "\x1b]9;palaver: a\x07\x1b]777;notify;palaver;a\x07");
        assert_eq!(sequence(NotifyMode::Bell, "a", &vte), "\x07");
        assert_eq!(sequence(NotifyMode::Off, "a", &vte), "");
    }

    #[test]
    fn inside_tmux_it_passes_through_and_rings() {
        let t = TermKind { tmux: true, ..TermKind::default() };
        assert_eq!(sequence(NotifyMode::Auto, "x", &t), "\x1bPtmux;\x1b\x1b]9;palaver: x\x07\x1b\\\x07");
    }

    #[test]
    fn text_cannot_end_the_sequence() {
        let s = sequence(NotifyMode::Osc, "a\x1b]0;pwned\x07b;c\u{9b}d", &TermKind::default());
        assert_eq!(s, "\x1b]9;palaver: a]0,pwnedb,cd\x07");
    }
}
