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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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
    /// A provider profile from config.toml
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
    #[arg(long, global = true)]
    pub temperature: Option<f64>,
    #[arg(long, global = true)]
    pub max_tokens: Option<u64>,
    #[arg(long, value_enum, global = true)]
    pub reasoning_effort: Option<Effort>,
    /// Non-streaming request
    #[arg(long, global = true)]
    pub no_stream: bool,
    /// Use the embedded demo provider (also the default with no key and no config)
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
    /// Headless: JSON Lines of normalized events on stdout; the last line is the result
    #[arg(long, global = true)]
    pub json: bool,
    /// Reopen the last conversation
    #[arg(long = "continue", global = true)]
    pub continue_last: bool,
    /// Reopen a chosen conversation
    #[arg(long, global = true)]
    pub resume: Option<String>,
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
    /// Side by side: the same prompt to 2–4 models (-m A -m B …); with -p, headless
    Compare,
    /// List the provider's models (GET /models) and configured ones
    Models,
    /// Run the embedded demo provider in the foreground; print its base URL first
    ServeDemo {
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: String,
    },
    /// Feed a recorded SSE body through the engine, print as -p does
    Replay { file: std::path::PathBuf },
    /// Stored conversations: list, show ID, export ID [--format md|json], rm ID
    History {
        #[command(subcommand)]
        action: HistoryAction,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum HistoryAction {
    /// One conversation a line, newest first, its ID first (with --json: one object a line)
    List,
    /// Print a conversation as a readable transcript
    Show { id: String },
    /// Export a conversation: Markdown (readable) or JSON (complete, reloadable)
    Export {
        id: String,
        #[arg(long, value_enum, default_value = "md")]
        format: ExportFormat,
    },
    /// Delete a conversation
    Rm { id: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Md,
    Json,
}
