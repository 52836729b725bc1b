//! What a prompt-set run shows while its cells run: the progress bar's counters, one `--json`
//! line per finished cell, and notices on stderr (`runs::scheduler` reports them here).

use super::progress::Progress;
use crate::cli::headless::Printer;
use crate::runs::scheduler::CellObserver;
use crate::runs::sink::{RetryHook, TurnSink};
use crate::store::runs::{CellRow, PromptRow};
use std::io::Write;
use std::sync::Arc;

/// The command line's side of a prompt-set run.
pub struct Observer {
    pub progress: Arc<Progress>,
    /// `--json`: one line per finished cell on stdout.
    pub json: bool,
}

impl CellObserver for Observer {
    fn sink(&self, retry: RetryHook) -> Box<dyn TurnSink + Send> {
        Box::new(Printer::quiet(false).on_retry(retry))
    }

    fn retried(&self) {
        self.progress.retried();
    }

    fn finished(&self, run: &str, prompt: &PromptRow, row: &CellRow) {
        self.progress.finished(row.ok);
        if self.json {
            let line = super::json::cell_line(run, prompt, row);
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }

    fn notice(&self, text: &str) {
        // The progress bar holds the terminal's last line without a newline: clear it first
        // so the notice starts a line of its own (the bar is drawn again below it).
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprint!("\r\x1b[2K");
        }
        crate::cli::headless::notice(text);
    }
}
