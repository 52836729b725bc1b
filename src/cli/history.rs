//! `palaver history list|show|export|import|search|rm` (DESIGN.md §2; in `history_cmd.rs`).
//! The headless runner's recorder is `runs::recorder`.

use super::exit::EXIT_USAGE;
use crate::ui::sanitize::sanitize;

pub use commands::run;

#[path = "history_cmd.rs"]
mod commands;

fn unknown(id: &str) -> u8 {
    say!("no conversation with ID {} (see `palaver history list`)", sanitize(id));
    EXIT_USAGE
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}
