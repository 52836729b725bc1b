//! Thin entry point: parse the command line and hand over to `palaver::cli`.

use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = palaver::cli::args::parse();
    // Headless work is one stream and a printer: a single thread avoids cross-thread wake-ups
    // and allocator contention per network read. The interactive screen gets worker threads so
    // highlighting and layout never hold up the network.
    let interactive = cli.command.is_none() && cli.global.prompt.is_none() && std::io::stdin().is_terminal();
    let mut builder = if interactive {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("palaver: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    ExitCode::from(runtime.block_on(palaver::cli::run(cli)))
}
