//! Ctrl+C for headless runs: one listener for the whole run, installed before the first
//! request and kept until exit, so a signal is heard whatever is running — a fast stream, a
//! tool, a retry wait, the time between two replies. The first Ctrl+C sets a flag the turn
//! watches (it stops, keeps and stores what arrived, and exits 130); a second one exits at once
//! with 130, ending the tools' process groups on the way out.
//!
//! Before a turn starts (reading `-a` files or stdin, running `api_key_cmd`, starting MCP
//! servers) there is nothing to keep: [`install_early`] listens from the first instant, and
//! until [`install`] arms the turn's flag, the first Ctrl+C already exits 130. Without it a
//! run started with SIGINT ignored (a script's background job) could not be stopped at all.
//!
//! The chat screen uses the same listener for the time before it opens (the `api_key_cmd`, the
//! store, `--continue`'s lookups): Ctrl+C there exits 130 on a terminal still in its own modes.
//! Once the screen owns the terminal, Ctrl+C is a key it reads itself, and a SIGINT sent by
//! `kill` is ignored rather than leaving the terminal raw.
//!
//! SIGTERM (a polite kill) and SIGHUP (the terminal went away) are heard the same way: the turn
//! stops and keeps what arrived, stored with the signal as its reason ([`ended_by`]), exit 130.
//!
//! A listener made anew in each turn of a `select!` loop misses a signal that arrives while the
//! loop body runs — and the handler has already replaced the default one, so the signal is
//! lost entirely. Here one handler lives for the whole process.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use tokio::sync::watch;

static FLAG: OnceLock<watch::Receiver<bool>> = OnceLock::new();
/// The first SIGTERM or SIGHUP heard (0: none), named on what it cut short.
static ENDED_BY: AtomicI32 = AtomicI32::new(0);
/// Whether a turn watches the flag: until then the first Ctrl+C exits.
static ARMED: AtomicBool = AtomicBool::new(false);

/// Listens for Ctrl+C for the rest of the run, with the first one ending palaver at once (exit
/// 130) until [`install`] is called: for the work before a turn, which has nothing to keep.
pub fn install_early() {
    listen();
}

/// Starts listening for Ctrl+C (once per process) and arms the flag: from now on the first
/// Ctrl+C is the turn's to handle, the second exits. The listener is an OS thread of its own,
/// not a task: a runtime blocked in a write to a full pipe (`| less`) still hears the second
/// Ctrl+C and exits.
pub fn install() {
    listen();
    ARMED.store(true, Ordering::SeqCst);
}

fn listen() {
    if FLAG.get().is_some() {
        return;
    }
    let (tx, rx) = watch::channel(false);
    if FLAG.set(rx).is_err() {
        return;
    }
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let spawned = std::thread::Builder::new().name("palaver-ctrl-c".into()).spawn(move || {
        let mut count = 0u32;
        for signal in signals.forever() {
            // The chat screen hears its keys and (in its own loop) SIGTERM and SIGHUP.
            if crate::tui::terminal::TerminalGuard::owned() {
                continue;
            }
            if signal != SIGINT {
                let _ = ENDED_BY.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
            }
            count += 1;
            if count >= 2 || !ARMED.load(Ordering::SeqCst) {
                crate::tools::process::kill_all();
                crate::config::provider::kill_key_cmds();
                crate::sys::temp::remove_all();
                eprintln!("\npalaver: interrupted");
                std::process::exit(i32::from(super::exit::EXIT_INTERRUPTED));
            }
            let _ = tx.send(true);
        }
    });
    drop(spawned);
}

/// The signal that asked this run to end, when it was SIGTERM or SIGHUP (`None` for Ctrl+C):
/// a reply it cut short is stored naming it.
#[must_use]
pub fn ended_by() -> Option<&'static str> {
    match ENDED_BY.load(Ordering::SeqCst) {
        signal_hook::consts::SIGTERM => Some("SIGTERM"),
        signal_hook::consts::SIGHUP => Some("SIGHUP"),
        _ => None,
    }
}

pub use crate::runs::stop::Stop;

/// The handle for the current run.
#[must_use]
pub fn stop() -> Stop {
    Stop::new(FLAG.get().cloned(), ended_by)
}
