//! Thin entry point: parse the command line and hand over to `palaver::cli`.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = palaver::cli::args::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("palaver: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    ExitCode::from(runtime.block_on(palaver::cli::run(cli)))
}
