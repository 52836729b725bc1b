//! Thin entry point: parse the command line and hand over to `palaver::cli`.

use std::process::ExitCode;

fn main() -> ExitCode {
    // The command sandbox's helper: applies Landlock to this process and execs the command,
    // before anything else starts (one thread, no runtime). Never returns on success.
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == palaver::tools::sandbox::HELPER_ARG) {
        return ExitCode::from(palaver::tools::sandbox::exec_main(&args.collect::<Vec<_>>()));
    }
    // Orphans of what palaver starts (a `setsid` or double-forked escape) re-parent to palaver,
    // which ends them with the call that started them (`sys::spawn::reap`).
    palaver::sys::spawn::adopt_orphans();
    let cli = palaver::cli::args::parse();
    // One thread for everything, the chat screen included: a stream is one task reading the
    // socket and one loop drawing at most 60 frames a second, and handing each network read from
    // a worker thread to the loop cost more (a cross-thread wake-up per read) than the work
    // itself. Blocking work (the store, tools, `$EDITOR`) has its own threads either way.
    let mut builder = tokio::runtime::Builder::new_current_thread();
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("palaver: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    ExitCode::from(runtime.block_on(palaver::cli::run(cli)))
}
