//! The command line: clap definitions (the contract of DESIGN.md §2), target resolution, and
//! the headless runner.

/// `eprintln!` with `palaver: ` in front, the whole line through the sanitiser: whatever a
/// message quotes (a server's error, a file name, a model id) may carry escape codes.
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("palaver: {}", $crate::text::sanitize::sanitize(&format!($($arg)*)))
    };
}

/// `eprintln!` with the whole line through the sanitiser, for lines without the `palaver: `
/// prefix that quote untrusted text (a fallback note naming a provider).
macro_rules! errln {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::text::sanitize::sanitize(&format!($($arg)*)))
    };
}

/// `println!` with the whole line through the sanitiser (and quiet on a closed pipe).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::stdout_line(&$crate::text::sanitize::sanitize(&format!($($arg)*)))
    };
}

/// A line on stdout whose parts were sanitised already (or JSON, which escapes controls).
macro_rules! rawln {
    ($($arg:tt)*) => {
        $crate::cli::stdout_line(&format!($($arg)*))
    };
}

/// Writes one line to stdout. When the reader went away (`palaver models | head`), palaver
/// ends quietly with status 0 as other command-line tools do, instead of `println!`'s panic.
pub fn stdout_line(line: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

pub mod args;
pub mod catalogue_cmd;
pub mod compacting;
pub mod compare;
pub mod compare_set;
pub mod config_cmd;
pub mod continued;
pub mod exit;
pub mod headless;
pub mod headless_sampler;
pub mod history;
pub mod interrupt;
pub mod mcp_cmd;
pub mod mcp_login;
pub mod models;
pub mod reasoning_out;
pub mod render;
pub mod result;
pub mod schema_arg;
pub mod schemas_cmd;
pub mod stopped;
pub mod target;
pub mod wrap_stream;

use args::{ApiArg, Cli, Command};
use exit::{EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use std::io::IsTerminal;

/// Runs the CLI; returns the process exit status.
pub async fn run(cli: Cli) -> u8 {
    // Before anything can print, store or send a tool's output: the values of palaver's own
    // secret-looking variables are redacted wherever they show (keys are added as resolved).
    crate::sys::secrets::register_env();
    let paths = crate::config::Paths::from_env();
    let mut cfg = match crate::config::Config::load(&paths) {
        Ok(c) => c,
        Err(e) => {
            say!("config error: {e}");
            return EXIT_USAGE;
        }
    };
    // A key variable the config names however it likes (`api_key_env = "LLM"`).
    let named = cfg.providers.values().filter_map(|p| p.api_key_env.as_deref());
    crate::sys::secrets::register_all(named.filter_map(|v| std::env::var(v).ok()));
    let g = &cli.global;
    let plain_compare = matches!(&cli.command, Some(Command::Compare(ca)) if ca.action.is_none() && ca.prompts.is_none() && ca.promptfoo.is_none() && g.resume.is_none());
    let screen = (cli.command.is_none() || plain_compare) && g.prompt.is_none() && std::io::stdin().is_terminal();
    // The chat screen shows these as notices; `palaver config` lists them itself.
    if !screen && !matches!(cli.command, Some(Command::Config { .. })) {
        for w in &cfg.warnings {
            say!("{w}");
        }
    }
    // Ctrl+C is heard from here on: before a turn starts (reading attachments or stdin,
    // `api_key_cmd`, starting MCP servers) and before the chat screen opens, the first one exits
    // 130. Once the screen owns the terminal it reads Ctrl+C as a key (the listener stands aside).
    interrupt::install_early();
    if let Some(dir) = &g.workspace {
        cfg.workspace = Some(dir.clone());
    }
    // `--provider groq` with no [providers.groq]: the built-in preset of that name.
    if let Some(name) = &g.provider {
        cfg.adopt_preset(name);
    }
    // Parsed off this thread, so the first cost or window lookup finds it ready.
    crate::config::catalogue::preload();
    // A workspace that does not exist is a usage error before anything starts.
    if let Err(e) = crate::tools::setup::workspace(&cfg, &paths) {
        return usage(&e);
    }
    // A schema that cannot be read or does not compile is a usage error before anything is sent.
    if let Some(Err(e)) = g.schema.as_deref().map(schema_arg::resolve) {
        return usage(&e);
    }
    match &cli.command {
        Some(Command::ServeDemo { addr }) => serve_demo(addr).await,
        Some(Command::Config { action }) => {
            if action.is_none() {
                config_cmd::learn_window(g, &mut cfg).await;
            }
            config_cmd::run(*action, g, &cfg, &paths)
        }
        Some(Command::Schemas { action }) => schemas_cmd::run(action.as_ref(), &paths),
        Some(Command::History { action }) => history::run(action, g.json, &paths),
        Some(Command::Compare(ca)) => {
            if let Some(r) = compare_set::rescore::of(ca.action.as_ref()) {
                let registry = build_registry(&cfg, &paths).await;
                let code = compare_set::rescore::run(g, &cfg, &paths, &registry, ca, &r).await;
                registry.close_mcp().await;
                return code;
            }
            if let Some(action) = &ca.action {
                return compare_set::actions::run(action, g, ca, &paths, &cfg).await;
            }
            if ca.prompts.is_some() || ca.promptfoo.is_some() || g.resume.is_some() {
                if g.prompt.is_some() {
                    return usage("give -p PROMPT or --prompts FILE (or --promptfoo CONFIG), not both");
                }
                let registry = build_registry(&cfg, &paths).await;
                let code = compare_set::run(g, &cfg, &paths, &registry, ca).await;
                registry.close_mcp().await;
                return code;
            }
            if !ca.report.is_empty() || ca.concurrency.is_some() || ca.min_pass.is_some() || ca.retry_failed {
                return usage(
                    "--report, --concurrency and --min-pass go with --prompts FILE (or --resume RUN, compare show RUN)",
                );
            }
            if ca.arena {
                if let Err(code) = screen_possible() {
                    return code;
                }
                if !(2..=4).contains(&g.model.len()) || g.prompt.is_some() {
                    return usage(
                        "the arena takes two to four models and no -p: palaver compare --arena -m A -m B [-m C -m D]",
                    );
                }
                let targets = match target::resolve_columns(g, &cfg, &g.model).await {
                    Ok(t) => t,
                    Err(e) => return usage(&e.0),
                };
                let Some(first) = targets.first() else { return usage("compare needs models") };
                let settings = headless::settings(g, first);
                return crate::interactive::run_arena(targets, cfg, paths, settings).await;
            }
            if g.prompt.is_none() && std::io::stdin().is_terminal() {
                if let Err(code) = screen_possible() {
                    return code;
                }
                // No prompt: the interactive screen in compare mode, one column per model.
                if !(2..=4).contains(&g.model.len()) {
                    return usage(&format!("compare takes 2 to 4 models (-m A -m B …), got {}", g.model.len()));
                }
                let targets = match target::resolve_columns(g, &cfg, &g.model).await {
                    Ok(t) => t,
                    Err(e) => return usage(&e.0),
                };
                let Some(first) = targets.first() else { return usage("compare needs models") };
                let settings = headless::settings(g, first);
                return crate::interactive::run_compare(targets, cfg, paths, settings).await;
            }
            let stdin = if std::io::stdin().is_terminal() {
                None
            } else {
                match read_stdin() {
                    Ok(s) => s,
                    Err(code) => return code,
                }
            };
            if g.prompt.is_none() && stdin.is_none() {
                return usage(
                    "nothing to compare: give -p PROMPT or pipe text on stdin (in a terminal, compare opens the interactive screen)",
                );
            }
            let prompt = headless::prompt_text(g.prompt.as_deref(), stdin);
            let registry = build_registry(&cfg, &paths).await;
            let code = compare::run(g, &cfg, &registry, &prompt).await;
            registry.close_mcp().await;
            code
        }
        Some(Command::Replay { file }) => {
            let api =
                g.api.map(|a| if a == ApiArg::Responses { crate::api::Api::Responses } else { crate::api::Api::Chat });
            headless::replay(g, &cfg, file, api)
        }
        Some(Command::Models) => models::run(g, &cfg).await,
        Some(Command::Providers) => catalogue_cmd::providers(g.json, &cfg),
        Some(Command::Catalogue { action }) => catalogue_cmd::run(action, g.json, &cfg, &paths).await,
        Some(Command::Mcp { action: args::McpAction::List }) => mcp_cmd::list(&cfg, g.json).await,
        Some(Command::Mcp { action: args::McpAction::Tools { name } }) => mcp_cmd::tools(&cfg, name, g.json).await,
        Some(Command::Mcp { action: args::McpAction::Login { name } }) => mcp_login::login(&cfg, name).await,
        Some(Command::Mcp { action: args::McpAction::Logout { name } }) => mcp_login::logout(&cfg, name).await,
        None => {
            if g.prompt.is_none() && std::io::stdin().is_terminal() {
                if let Err(code) = screen_possible() {
                    return code;
                }
                // Several presets' keys and nothing configured: the screen offers them in a picker.
                let found = target::offered_on_screen(g, &mut cfg);
                let mut picked = g.clone();
                picked.provider = picked.provider.or_else(|| found.first().map(|(n, _)| n.clone()));
                let (t, flags) = match continued::resolve(&picked, &cfg, &paths).await {
                    Ok(t) => t,
                    Err(e) => return usage(&e.0),
                };
                // One key found: the screen says so; several: it offers them.
                let found = match target::found_for(g, &cfg, &t) {
                    Some(one) => vec![one],
                    None => found,
                };
                // As `--provider NAME` would: a compare opened from here finds its endpoint.
                if let [(name, _)] = found.as_slice() {
                    cfg.adopt_preset(name);
                }
                // A continued conversation's target is already its own (or what a flag said).
                let reopen = crate::app::persist::Reopen {
                    last: flags.continue_last,
                    id: flags.resume.clone(),
                    keep_model: t.continued.is_some() || !g.model.is_empty(),
                    notice: t.continued.as_ref().and_then(crate::engine::target::Continued::notice),
                    compact: flags.compact,
                };
                let settings = headless::settings(g, &t);
                return crate::interactive::run_with(t, cfg, paths, settings, reopen, found).await;
            }
            // `-a -` takes stdin's bytes as an attachment; otherwise piped text joins the prompt.
            let stdin_attached = g.attach.iter().any(|a| a == "-");
            let piped = !std::io::stdin().is_terminal();
            let stdin = match (piped && !stdin_attached).then(read_stdin).transpose() {
                Ok(s) => s.flatten(),
                Err(code) => return code,
            };
            if g.prompt.is_none() && stdin.is_none() && g.attach.is_empty() {
                say!("nothing to send: give -p PROMPT or pipe text on stdin");
                return EXIT_USAGE;
            }
            let prompt = headless::prompt_text(g.prompt.as_deref(), stdin);
            if prompt.trim().is_empty() && g.attach.is_empty() {
                return usage("the prompt is empty");
            }
            let (t, flags) = match continued::resolve(g, &cfg, &paths).await {
                Ok(t) => t,
                Err(e) => return usage(&e.0),
            };
            if let Some(note) = target::fallback_note(&t) {
                errln!("{note}");
            }
            if let Some(note) = target::found_note_for(g, &cfg, &t) {
                errln!("{note}");
            }
            if let Some(n) = t.continued.as_ref().and_then(crate::engine::target::Continued::notice) {
                say!("{}", crate::text::sanitize::sanitize(&n));
            }
            // Every attachment is read, typed and checked before anything starts or is sent.
            let mut user = crate::engine::Message::user(&prompt);
            // Read up to one byte past the limit: a huge pipe is refused, not swallowed.
            let stdin = |spec: &str| {
                (spec == "-" && piped).then(|| read_stdin_bytes(t.attachments.max_file_bytes() + 1)).flatten()
            };
            match crate::engine::attach_load::load_all(&g.attach, stdin, &t.attachments, t.api) {
                Ok(all) => user.attachments = all,
                Err(e) => return usage(&e),
            }
            // An image to a model the catalogue says takes none: warned about, then sent.
            if let Some(w) = crate::engine::abilities::unsupported_inputs(&cfg, &t.model, &user.attachments) {
                say!("warning: {w}");
            }
            // A file holding secrets goes only when the user confirms it with --yes.
            if !g.yes {
                for (spec, a) in g.attach.iter().zip(&user.attachments) {
                    if let Some(why) = crate::engine::attach_load::secret_in(spec, a) {
                        return usage(&format!(
                            "cannot attach {}: {why}; nothing was sent (add --yes to send it anyway)",
                            crate::text::sanitize::sanitize(spec)
                        ));
                    }
                }
            }
            // Once nothing can stop the run any more: a usage error asks no server anything.
            target::learn_window(&mut cfg, &t).await;
            let registry = build_registry(&cfg, &paths).await;
            if g.yes {
                registry.on_mcp_sample(&headless_sampler::sampler(&t, &cfg));
            }
            let code = headless::run_prompt(&flags, &t, &cfg, &registry, user).await;
            registry.close_mcp().await;
            code
        }
    }
}

/// The chat screen needs a terminal on stdout. Decided before anything touches the terminal:
/// `palaver > out.txt` once took over the terminal anyway, wrote escape codes into the file,
/// failed reading the cursor position and left the shell in raw mode.
fn screen_possible() -> Result<(), u8> {
    if std::io::stdout().is_terminal() {
        return Ok(());
    }
    say!(
        "the chat screen needs a terminal, and stdout is not one; \
         for one answer written to a file or a pipe use -p: palaver -p \"your question\" > out.txt"
    );
    Err(EXIT_USAGE)
}

fn usage(msg: &str) -> u8 {
    say!("{msg}");
    EXIT_USAGE
}

/// Piped text for the prompt, within `input_file_bytes`; past it, the usage error (nothing is
/// sent).
fn read_stdin() -> Result<Option<String>, u8> {
    use crate::sys::read::{INPUT_FILE, ReadError, capped_string};
    match capped_string(std::io::stdin().lock(), INPUT_FILE) {
        Ok(s) => Ok(Some(s).filter(|s| !s.is_empty())),
        Err(e @ ReadError::Over(_)) => Err(usage(&format!("{}; nothing was sent", e.about("the text piped on stdin")))),
        Err(_) => Ok(None),
    }
}

fn read_stdin_bytes(limit: u64) -> Option<Vec<u8>> {
    let b = crate::sys::read::head(std::io::stdin().lock(), usize::try_from(limit).unwrap_or(usize::MAX)).ok()?;
    Some(b).filter(|b| !b.is_empty())
}

async fn serve_demo(addr: &str) -> u8 {
    let Ok(addr) = addr.parse::<std::net::SocketAddr>() else {
        return usage(&format!("--addr {addr} is not an address like 127.0.0.1:8080"));
    };
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            say!("cannot listen on {addr}: {e}");
            return EXIT_PROVIDER;
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    println!("http://{}:{port}/v1", addr.ip());
    if let Err(e) = crate::demo::serve(listener).await {
        say!("demo server stopped: {e}");
        return EXIT_PROVIDER;
    }
    EXIT_OK
}

/// The session's tools: built-ins, user tools and MCP servers; problems are printed as notices.
async fn build_registry(cfg: &crate::config::Config, paths: &crate::config::Paths) -> crate::tools::Registry {
    let (mut registry, notices) = crate::tools::setup::builtins(cfg, paths).unwrap_or_else(|e| {
        say!("{e}");
        (crate::tools::Registry::builtins(), Vec::new())
    });
    for n in notices {
        say!("{n}");
    }
    for n in registry.add_mcp_servers(&cfg.mcp).await {
        say!("{n}");
    }
    registry
}
