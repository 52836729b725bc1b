//! The terminal guard: enters the alternate screen, raw mode, mouse capture, bracketed paste and
//! (where the terminal supports it) the kitty keyboard protocol, and restores all of it on drop,
//! on error and on panic. Draws are wrapped in synchronized updates so a frame never tears.

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste, EnableFocusChange,
    EnableMouseCapture, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode,
    enable_raw_mode,
};
use crossterm::{cursor, execute};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::{self, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once, PoisonError};

/// Whether the screen is in palaver's modes (so restoring twice is harmless).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether the mouse is captured while the screen is palaver's (`mouse = false` leaves it to the
/// terminal's own selection).
static MOUSE: AtomicBool = AtomicBool::new(true);
/// Whether the kitty keyboard flags were pushed (and must be popped).
static KITTY: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();
/// Whether a guard exists (from `enter` to its drop, `$EDITOR` included): the chat screen owns
/// Ctrl+C then, as a key, so a SIGINT listener set up before the screen opened stands aside.
static OWNED: AtomicBool = AtomicBool::new(false);
/// Panics of background threads while the screen is palaver's: printed once it is restored,
/// since printing them on the alternate screen in raw mode garbles both.
static STASHED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Room for a whole frame's bytes, so a frame is one write to the terminal.
const FRAME_BUFFER: usize = 64 * 1024;

/// A frame's bytes, kept until the frame's flush and then written at once: `Stdout` alone
/// locks, scans for a newline and writes every 1 KB, for each of the thousands of pieces (a
/// cursor move, a colour, a cell's text) a frame is written in. Unlike `BufWriter` it never
/// writes when dropped: bytes left by a panic mid-frame would land on the shell after the
/// terminal was given back.
pub struct FrameWriter {
    buf: Vec<u8>,
    out: Stdout,
}

impl Write for FrameWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.buf.len() + bytes.len() > FRAME_BUFFER {
            self.flush()?;
        }
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut out = self.out.lock();
        out.write_all(&self.buf)?;
        self.buf.clear();
        out.flush()
    }
}

/// Owns the terminal while the app runs.
pub struct TerminalGuard {
    /// Written a frame at a time: everything is flushed at the end of each frame or command.
    pub terminal: Terminal<CrosstermBackend<FrameWriter>>,
}

impl TerminalGuard {
    /// Takes over the terminal, capturing the mouse or not.
    ///
    /// # Errors
    /// When the terminal cannot be put in raw mode or written to.
    pub fn enter(mouse: bool) -> io::Result<Self> {
        install_panic_hook();
        MOUSE.store(mouse, Ordering::SeqCst);
        OWNED.store(true, Ordering::SeqCst);
        if let Err(e) = enter_modes() {
            OWNED.store(false, Ordering::SeqCst);
            return Err(e);
        }
        // Every failure from here on must give the terminal back: an error that returned early
        // once left the shell in raw mode (`-echo -icanon`) until `stty sane`.
        let made = Terminal::new(CrosstermBackend::new(FrameWriter {
            buf: Vec::with_capacity(FRAME_BUFFER),
            out: io::stdout(),
        }))
        .and_then(|mut t| t.clear().map(|()| t));
        match made {
            Ok(terminal) => Ok(Self { terminal }),
            Err(e) => {
                let _ = restore();
                OWNED.store(false, Ordering::SeqCst);
                Err(e)
            }
        }
    }

    /// Whether the chat screen owns the terminal (a guard exists, even while `$EDITOR` has it).
    #[must_use]
    pub fn owned() -> bool {
        OWNED.load(Ordering::SeqCst)
    }

    /// Hands the terminal back (for `$EDITOR`); `resume` takes it again.
    ///
    /// # Errors
    /// When writing to the terminal fails.
    pub fn suspend(&mut self) -> io::Result<()> {
        restore()
    }

    /// Takes the terminal back after `suspend` and forces a full redraw.
    ///
    /// # Errors
    /// When writing to the terminal fails.
    pub fn resume(&mut self) -> io::Result<()> {
        enter_modes()?;
        self.terminal.clear()
    }

    /// Captures the mouse or gives it back to the terminal (kept across `suspend`/`resume`).
    ///
    /// # Errors
    /// When writing to the terminal fails.
    pub fn set_mouse(&mut self, on: bool) -> io::Result<()> {
        MOUSE.store(on, Ordering::SeqCst);
        if on {
            execute!(self.terminal.backend_mut(), EnableMouseCapture)
        } else {
            execute!(self.terminal.backend_mut(), DisableMouseCapture)
        }
    }

    /// Draws one frame inside a synchronized update.
    ///
    /// # Errors
    /// When writing to the terminal fails.
    pub fn draw<F>(&mut self, render: F) -> io::Result<()>
    where
        F: FnOnce(&mut ratatui::Frame),
    {
        execute!(self.terminal.backend_mut(), BeginSynchronizedUpdate)?;
        let drawn = self.terminal.draw(render).map(|_| ());
        let ended = execute!(self.terminal.backend_mut(), EndSynchronizedUpdate);
        drawn.and(ended)
    }

    /// Writes raw bytes to the terminal (OSC 52 clipboard).
    ///
    /// # Errors
    /// When writing fails.
    pub fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        let out = self.terminal.backend_mut();
        out.write_all(bytes)?;
        out.flush()
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = restore();
        OWNED.store(false, Ordering::SeqCst);
    }
}

fn enter_modes() -> io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    // Focus reporting: notifications are only for a window the user is not looking at.
    let mut entered = execute!(out, EnterAlternateScreen, EnableBracketedPaste, EnableFocusChange, cursor::Hide);
    if entered.is_ok() && MOUSE.load(Ordering::SeqCst) {
        entered = execute!(out, EnableMouseCapture);
    }
    if let Err(e) = entered {
        let _ = restore();
        return Err(e);
    }
    // Shift+Enter is only told apart from Enter under the kitty protocol; ask for the least
    // (disambiguation) so every other key keeps its usual encoding.
    if matches!(crossterm::terminal::supports_keyboard_enhancement(), Ok(true))
        && execute!(out, PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)).is_ok()
    {
        KITTY.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// Puts the terminal back as it was. Safe to call more than once, and from the panic hook.
///
/// # Errors
/// When writing to the terminal fails (raw mode is still turned off).
pub fn restore() -> io::Result<()> {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let mut out = io::stdout();
    if KITTY.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let left = execute!(
        out,
        DisableBracketedPaste,
        DisableFocusChange,
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show
    );
    let raw = disable_raw_mode();
    for text in STASHED.lock().unwrap_or_else(PoisonError::into_inner).drain(..) {
        eprintln!("palaver: a background task failed: {text}");
    }
    left.and(raw)
}

/// Restores the terminal before the default hook prints a panic of the main thread (the loop
/// that draws), so the message is readable and the shell usable afterwards. A panic on another
/// thread is a background task's: the task's owner turns it into an error on its turn and the
/// app keeps its screen, so the terminal is left alone and the message kept for the end.
fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let main = std::thread::current().name() == Some("main");
            if ACTIVE.load(Ordering::SeqCst) && !main {
                STASHED.lock().unwrap_or_else(PoisonError::into_inner).push(info.to_string());
                return;
            }
            let _ = restore();
            previous(info);
        }));
    });
}
