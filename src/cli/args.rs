//! The command line, exactly as DESIGN.md §2 states it: tools and users script against it.

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "palaver", version, about = "A terminal chat client for OpenAI-compatible LLM APIs")]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiArg {
    Chat,
    Responses,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToolsArg {
    Auto,
    Ask,
    None,
}

impl From<ToolsArg> for crate::config::provider::ToolsSetting {
    fn from(a: ToolsArg) -> Self {
        match a {
            ToolsArg::Auto => Self::Auto,
            ToolsArg::Ask => Self::Ask,
            ToolsArg::None => Self::None,
        }
    }
}

/// `--render`: whether headless output is rendered markdown or the raw text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderArg {
    /// Rendered when stdout is a terminal, raw otherwise.
    Auto,
    /// Always rendered (wrapped to the terminal's width, or 80 columns).
    Always,
    /// Always the raw text.
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DetailArg {
    Auto,
    Low,
    High,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Effort {
    Minimal,
    Low,
    Medium,
    High,
}

#[derive(Debug, Clone, Default, Args)]
pub struct Global {
    /// One shot: stream the answer to stdout, then exit (text piped on stdin is appended)
    #[arg(short = 'p', long = "prompt", global = true)]
    pub prompt: Option<String>,
    /// A provider profile from config.toml, else a built-in preset (`palaver providers`)
    #[arg(long, global = true)]
    pub provider: Option<String>,
    /// OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (overrides the profile)
    #[arg(long, global = true)]
    pub base_url: Option<String>,
    /// Environment variable holding the key (default OPENAI_API_KEY)
    #[arg(long, global = true)]
    pub api_key_env: Option<String>,
    /// Which API (default: the profile's, else chat)
    #[arg(long, value_enum, global = true)]
    pub api: Option<ApiArg>,
    /// Model (repeat with `compare`)
    #[arg(short = 'm', long = "model", global = true)]
    pub model: Vec<String>,
    /// System prompt (chat) / instructions (responses)
    #[arg(long, global = true)]
    pub system: Option<String>,
    /// Sampling temperature sent with the request (the provider's default when not given)
    #[arg(long, global = true, value_name = "F")]
    pub temperature: Option<f64>,
    /// Most tokens the reply may have (max_tokens / max_output_tokens)
    #[arg(long, global = true, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// How hard a reasoning model thinks (reasoning_effort / reasoning.effort)
    #[arg(long, value_enum, global = true)]
    pub reasoning_effort: Option<Effort>,
    /// Non-streaming request
    #[arg(long, global = true)]
    pub no_stream: bool,
    /// Use the embedded demo provider (scripted answers); without --demo it is also used when
    /// there is no key and no config, with a note on stderr
    #[arg(long, global = true)]
    pub demo: bool,
    /// Offer tools to the model: auto runs read-only ones and asks for the rest (headless: refuses
    /// them unless --yes); ask asks for every call; none offers none. Default: none, except on the
    /// demo provider and profiles with tools = "auto"|"ask"
    #[arg(long, value_enum, global = true)]
    pub tools: Option<ToolsArg>,
    /// Where the built-in file tools may act (default: the working directory); paths outside it
    /// and files that usually hold secrets need an approval naming them (headless: refused)
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<std::path::PathBuf>,
    /// Approve every tool call (headless)
    #[arg(long, global = true)]
    pub yes: bool,
    /// Attach a file or image to the prompt: a path, an http(s) URL, or - for stdin's bytes
    /// (repeatable; the type comes from the bytes)
    #[arg(short = 'a', long = "attach", global = true, value_name = "PATH|URL|-")]
    pub attach: Vec<String>,
    /// How closely the model looks at attached images
    #[arg(long, value_enum, global = true, value_name = "LEVEL")]
    pub detail: Option<DetailArg>,
    /// Headless: JSON Lines of normalized events on stdout; the last line is the result
    #[arg(long, global = true)]
    pub json: bool,
    /// Headless: render the answer's markdown for the terminal (auto: when stdout is a terminal;
    /// never: the raw text, as written to a file or a pipe)
    #[arg(long, value_enum, global = true, value_name = "WHEN")]
    pub render: Option<RenderArg>,
    /// Structured output: the answer must follow this JSON schema, given as a file, inline JSON
    /// or a short form ('name, age int, tags [str]: the tags'); checked on arrival (exit 3 when
    /// it does not follow it)
    #[arg(long, global = true, value_name = "FILE|JSON|SHORT")]
    pub schema: Option<String>,
    /// Ask for token log probabilities, and N alternatives per token (0–20; none when N is left out)
    #[arg(long, global = true, value_name = "N", num_args = 0..=1, default_missing_value = "0",
        value_parser = clap::value_parser!(u8).range(0..=20))]
    pub logprobs: Option<u8>,
    /// Reopen the last conversation
    #[arg(long = "continue", global = true)]
    pub continue_last: bool,
    /// Reopen a chosen conversation (with `compare`: finish a stored prompt-set run)
    #[arg(long, global = true)]
    pub resume: Option<String>,
    /// With --continue/--resume: summarise the earlier turns first (they stay in the store)
    #[arg(long, global = true)]
    pub compact: bool,
    /// Seconds to wait for a connection
    #[arg(long, global = true, hide = true)]
    pub connect_timeout: Option<f64>,
    /// Seconds to wait for the first byte of a response
    #[arg(long, global = true, hide = true)]
    pub first_byte_timeout: Option<f64>,
    /// Seconds of silence after which a stream counts as stalled
    #[arg(long, global = true, hide = true)]
    pub idle_timeout: Option<f64>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Side by side: the same prompt to 2–4 models (-m A -m B …); with -p, headless; with
    /// --prompts, every prompt of a set against every model, kept as a resumable run
    Compare(Box<CompareArgs>),
    /// List the provider's models (GET /models) and configured ones
    Models,
    /// Run the embedded demo provider in the foreground; print its base URL first
    ServeDemo {
        /// Where to listen (port 0: a free port, printed as the first line)
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: String,
    },
    /// Feed a recorded SSE body through the engine, print as -p does
    Replay {
        /// A recorded `text/event-stream` body (chat or Responses; the API is guessed)
        file: std::path::PathBuf,
    },
    /// Stored conversations: list, show ID, export ID [--format md|json], import FILE,
    /// search TEXT, rm ID (a compare is one entry, its columns inside it)
    History {
        #[command(subcommand)]
        action: HistoryAction,
    },
    /// The built-in provider presets (assets/): base URL, key variable, API, quirks
    Providers,
    /// What the built-in model catalogue (assets/) knows: window, prices, abilities
    Catalogue {
        #[command(subcommand)]
        action: CatalogueAction,
    },
    /// Saved schemas for --schema NAME: list them; save NAME FILE|JSON|SHORT; show NAME; rm NAME
    Schemas {
        #[command(subcommand)]
        action: Option<SchemasAction>,
    },
    /// The configuration in effect; `config init` writes a template, `config check` checks it
    ///
    /// Shows the paths, providers, models and the next run's provider, model and key, each with
    /// where it came from (keys are never shown).
    Config {
        #[command(subcommand)]
        action: Option<ConfigAction>,
    },
    /// The MCP servers of config.toml: `mcp list` (each server's transport, state, tools,
    /// prompts, resources, auth), `mcp tools NAME`, `mcp login NAME`, `mcp logout NAME`
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum McpAction {
    /// Start (or connect to) every configured server and say what each offers; exit 1 when one
    /// fails
    List,
    /// The tools one server offers the model, with whether each asks first
    Tools {
        /// The server's name in [mcp.servers.NAME]
        name: String,
    },
    /// Log in to a remote server with OAuth: the authorization URL is printed (and opened in a
    /// browser where there is one); the tokens are kept in the data directory
    Login {
        /// The server's name in [mcp.servers.NAME]
        name: String,
    },
    /// Forget a remote server's OAuth tokens (revoked first where the server can)
    Logout {
        /// The server's name in [mcp.servers.NAME]
        name: String,
    },
}

/// `palaver schemas …`.
#[derive(Debug, Clone, Subcommand)]
pub enum SchemasAction {
    /// Check a schema (a file, inline JSON, or a short form) and keep it under NAME
    Save { name: String, schema: String },
    /// Print a saved schema
    Show { name: String },
    /// Remove a saved schema
    Rm { name: String },
}

/// `palaver compare`'s own flags (the models, the system prompt, `--json`… are global).
#[derive(Debug, Clone, Default, Args)]
pub struct CompareArgs {
    #[command(subcommand)]
    pub action: Option<CompareAction>,
    /// A prompt set: plain lines, or JSON Lines {"prompt","system","id","attach","expect"};
    /// `-` reads it from stdin. Every prompt runs against every model, kept as a run
    #[arg(long, value_name = "FILE", conflicts_with = "promptfoo")]
    pub prompts: Option<std::path::PathBuf>,
    /// A promptfoo config (promptfooconfig.yaml) run as it is: its prompts × tests become the
    /// set, its providers the models; an assert palaver cannot run is named and refused
    #[arg(long, value_name = "FILE")]
    pub promptfoo: Option<std::path::PathBuf>,
    /// With --promptfoo: run the config without the asserts and test options palaver cannot
    /// run (each named on stderr) instead of refusing it
    #[arg(long, requires = "promptfoo")]
    pub skip_unsupported: bool,
    /// Requests in flight at once per provider (a 429 pauses only that provider)
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// Write the run's report (out.md: Markdown, out.html: one self-contained page) or its
    /// cells for CI (out.xml: JUnit, a testsuite per model and a testcase per prompt; out.csv,
    /// out.json, out.jsonl), by the extension; repeatable
    #[arg(long, visible_alias = "output", value_name = "FILE", global = true)]
    pub report: Vec<std::path::PathBuf>,
    /// Lowest share of passed `expect` checks per model (0–1, default 1: every check) under
    /// which the run exits 3
    #[arg(long, value_name = "RATE", global = true)]
    pub min_pass: Option<f64>,
    /// With --resume: run the run's failed cells again too (a 429 quota, a server that was down)
    #[arg(long)]
    pub retry_failed: bool,
    /// The blind arena: two to four models answer each prompt under the names A, B, … in random
    /// order; vote with a/b/c/d (that one better), t (tie), n (all bad); names show after
    #[arg(long)]
    pub arena: bool,
    /// Let a prompt set name files (attach, vars, judge prompt, schema) outside its own folder,
    /// or files that hold secrets (by name or by content); without it such a line is refused
    /// and nothing is sent
    #[arg(long, alias = "allow-attach-outside")]
    pub allow_outside: bool,
    /// Run the programs a prompt set's `script` checks name (each gets the cell as JSON on
    /// stdin), sandboxed: writes only in the temporary directory, the network closed, a
    /// timeout; without it such a line is refused and nothing is sent
    #[arg(long)]
    pub allow_scripts: bool,
    /// Send each model's cells through its provider's batch API (files + batches: slower, at
    /// the batch discount); the provider's profile must say `batch = true`
    #[arg(long)]
    pub batch: bool,
    /// Run each prompt × model cell N times (1–100), each sample with its own `seed`; reports
    /// give pass rates with intervals, and a line's `threshold` decides its cell
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: Option<u32>,
    /// The `seed` each request sends where the API takes one (Chat Completions): sample i of
    /// --repeat sends SEED + i (default 0 with --repeat; without either flag, none is sent)
    #[arg(long, value_name = "SEED")]
    pub seed: Option<u64>,
    /// A stored run to compare this new one against: the diff (as `compare diff` prints it)
    /// follows the summary and goes into the reports
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// With --baseline or `compare diff`: exit 3 when a model got significantly worse (McNemar
    /// p < 0.05 with more new failures than new passes, or a score interval below 0)
    #[arg(long, global = true)]
    pub fail_on_regression: bool,
    /// With --baseline or `compare diff`: prompts (by id) that must not break; one that passed
    /// in the baseline and fails now exits 3, whatever the statistics
    #[arg(long, value_name = "ID,…", value_delimiter = ',', global = true)]
    pub critical: Vec<String>,
    /// Send every request of the set even when the response cache holds its answer (it is
    /// still not written to); by default identical requests are answered from the cache
    #[arg(long, global = true)]
    pub no_cache: bool,
}

/// `palaver compare runs | show RUN | diff RUN_A RUN_B | stats`.
#[derive(Debug, Clone, Subcommand)]
pub enum CompareAction {
    /// The stored prompt-set runs, newest first, their ID the first word
    Runs,
    /// Print a run's report again (with --report, write it; with --json, its cells)
    Show {
        /// The run's ID (as `compare runs` prints it) or a unique prefix
        run: String,
    },
    /// Run B against run A (the baseline): what newly fails and passes for each prompt × model,
    /// the change in score, cost and latency, and a paired test per model (McNemar, bootstrap)
    Diff {
        /// The baseline run's ID (or a unique prefix)
        run_a: String,
        /// The new run's ID (or a unique prefix)
        run_b: String,
        /// Also have this model compare each model's answers in A and B, in both orders (a pick
        /// that flips with the order is a tie)
        #[arg(long, value_name = "MODEL")]
        judge: Option<String>,
        /// The judge's criterion (with --judge)
        #[arg(long, value_name = "TEXT", requires = "judge")]
        rubric: Option<String>,
    },
    /// Each model's arena record: votes, win rate and a Bradley–Terry rating with a 95% interval,
    /// raw and with style control (answer length and markdown held equal, as LMArena does)
    Stats,
    /// The response cache of prompt sets: its size and entries (`clear` empties it)
    Cache {
        #[command(subcommand)]
        action: Option<CacheAction>,
    },
    /// Grade a stored run's answers again, as a new run, with the checks of --prompts FILE
    /// (matched by line id, else by position) or the stored ones; no model is called, only
    /// judges (through the cache)
    Rescore {
        /// The run's ID (as `compare runs` prints it) or a unique prefix
        run: String,
        /// A prompt set whose checks replace the stored ones
        #[arg(long, value_name = "FILE")]
        prompts: Option<std::path::PathBuf>,
        /// Run the programs its `script` checks name (as `compare --allow-scripts`)
        #[arg(long)]
        allow_scripts: bool,
        /// Let it name files outside its own folder (as `compare --allow-outside`)
        #[arg(long)]
        allow_outside: bool,
    },
}

/// `palaver compare cache [clear]`.
#[derive(Debug, Clone, Copy, Subcommand)]
pub enum CacheAction {
    /// Empty the response cache
    Clear,
}

/// `palaver catalogue show MODEL | update FILE|URL`.
#[derive(Debug, Clone, Subcommand)]
pub enum CatalogueAction {
    /// What is known about MODEL and from where: the catalogue (built-in, or the copy
    /// `update` wrote) and config.toml's [models."…"], which wins
    Show {
        /// A model id as you would pass it to -m (`gpt-4o-mini`, `openai/gpt-4o-mini`)
        model: String,
    },
    /// Check a catalogue (palaver's format, or LiteLLM's model_prices_and_context_window.json)
    /// and keep a copy in the data directory that wins over the built-in one; a URL is fetched
    /// only now, when you ask
    Update {
        /// A file, or an http(s) URL
        source: String,
    },
}

#[derive(Debug, Clone, Copy, Subcommand)]
pub enum ConfigAction {
    /// Write a commented config.toml template (refuses to overwrite an existing file); with
    /// --provider NAME, the built-in preset NAME as its provider (`palaver providers` lists them)
    Init,
    /// Check config.toml: syntax, unknown keys, the default provider, key variables, keys, theme;
    /// exit 2 on a problem
    Check,
}

/// The global flags each subcommand reads; `--help` of a subcommand lists only these.
const APPLIES: &[(&str, &[&str])] = &[
    (
        "compare",
        &[
            "prompt",
            "provider",
            "base_url",
            "api_key_env",
            "api",
            "model",
            "system",
            "temperature",
            "max_tokens",
            "reasoning_effort",
            "no_stream",
            "demo",
            "tools",
            "workspace",
            "yes",
            "json",
            "resume",
            // compare's own, global so that `compare show` takes them too.
            "report",
            "min_pass",
            "fail_on_regression",
            "critical",
        ],
    ),
    ("models", &["provider", "base_url", "api_key_env", "demo"]),
    ("serve-demo", &[]),
    ("replay", &["api", "json", "render"]),
    ("history", &["json"]),
    ("providers", &["json"]),
    ("catalogue", &["json"]),
    ("config", &["provider", "base_url", "api_key_env", "api", "model", "demo"]),
    ("mcp", &["json"]),
];

/// The command line with help that names palaver's files and environment, and subcommand help
/// that lists only the flags each subcommand reads (the flags are still accepted anywhere, as
/// the contract's `palaver [GLOBAL] SUBCOMMAND` needs).
#[must_use]
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = Cli::command().after_help(environment_help());
    cmd.build();
    for (name, keep) in APPLIES {
        cmd = cmd.mut_subcommand(name, |sc| hide_others(sc, keep));
    }
    cmd
}

fn hide_others(sc: clap::Command, keep: &[&str]) -> clap::Command {
    let mut sc = sc.mut_args(|a| {
        let id = a.get_id().as_str().to_owned();
        if a.is_global_set() && !keep.contains(&id.as_str()) { a.hide(true) } else { a }
    });
    let names: Vec<String> = sc.get_subcommands().map(|c| c.get_name().to_owned()).collect();
    for n in names {
        sc = sc.mut_subcommand(n, |c| hide_others(c, keep));
    }
    sc
}

/// Parses the process's arguments (exits with clap's message on a usage error).
#[must_use]
pub fn parse() -> Cli {
    use clap::FromArgMatches;
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// The end of `palaver --help`: where the files are and what the environment changes.
fn environment_help() -> String {
    let paths = crate::config::Paths::from_env();
    let home = match std::env::var_os("PALAVER_HOME").filter(|h| !h.is_empty()) {
        Some(h) => format!("set: {}", std::path::Path::new(&h).display()),
        None => "not set".to_owned(),
    };
    format!(
        "Files:\n  config file      {}\n                   `palaver config` shows what is in effect, `palaver config init` writes a template\n  data             {}\n\n\
         Environment:\n  PALAVER_HOME     one directory for config.toml and all data ({home})\n  \
         OPENAI_API_KEY   the API key, unless a provider profile names another variable (api_key_env)\n  \
         OPENAI_BASE_URL  the server, unless --base-url or a provider profile names one\n  \
         NO_COLOR         no colours\n\n\
         With no key and no config.toml, palaver answers with its built-in demo provider (scripted text);\n\
         --demo asks for it.\n\n\
         Exit status:\n  0    ok (a reply cut by the token limit is 0, with a notice on stderr)\n  \
         1    provider/API error\n  \
         2    usage or config error (including the chat screen asked for with stdout not a terminal)\n  \
         3    a check failed (compare --min-pass; an answer that does not validate against --schema)\n  \
         4    the provider's content filter stopped the reply\n  \
         130  interrupted",
        paths.config_file().display(),
        paths.data_dir.display()
    )
}

#[derive(Debug, Clone, Subcommand)]
pub enum HistoryAction {
    /// One entry a line, newest first, its ID first; a compare is one entry
    ///
    /// With --json: one object a line ({"id","title","model","updated_at","messages"}). A compare
    /// (`compare · N models`) has its group's ID (`cmp-…`), the sum of its columns' messages,
    /// `model: null`, and `columns` in --json.
    List,
    /// Print a conversation as a readable transcript (a compare: every column in turn)
    Show {
        /// A conversation's or a compare's ID (as `history list` prints it), or a unique prefix
        id: String,
    },
    /// Export a conversation: Markdown (readable), JSON (complete, reloadable with `import`) or HTML (a page)
    Export {
        /// A conversation's or a compare's ID (as `history list` prints it), or a unique prefix
        id: String,
        /// md: a readable transcript; json: everything, reloadable with `history import`;
        /// html: one self-contained page (no script, loads nothing), images inline
        #[arg(long, value_enum, default_value = "md")]
        format: ExportFormat,
    },
    /// Load what `export --format json` wrote (a conversation or a compare)
    ///
    /// Keeps the file's IDs unless this history already has them (then new ones, said on stderr;
    /// nothing is overwritten). The file is checked whole first: a malformed one is refused,
    /// naming what is wrong and where (exit 2), and nothing is imported; an import is one
    /// transaction. Prints the new ID first.
    Import {
        /// The JSON export, or - for stdin
        file: std::path::PathBuf,
    },
    /// Search every message as the chat screen's list (Ctrl+L) does; one hit a line, ID first
    ///
    /// Every word must match, the last also as the start of a word; newest first. A line is
    /// `ID  date  who  “title”: snippet` (with --json: one object a line). No match: nothing on
    /// stdout, a note on stderr, exit 0; no word to search for: exit 2.
    Search {
        /// The words to find
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
        /// At most this many hits (the newest)
        #[arg(long, value_name = "N", default_value_t = 100)]
        limit: usize,
    },
    /// Delete a conversation (a compare: every column)
    Rm {
        /// A conversation's or a compare's ID (as `history list` prints it), or a unique prefix
        id: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Md,
    Json,
    Html,
}
