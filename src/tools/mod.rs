//! The tool registry: built-in tools, user command tools from `config.toml` and MCP servers'
//! tools, each with a JSON-schema definition sent to the model and a way to run it. Running a
//! tool never panics and never fails the turn: every problem becomes an error output that is
//! sent back to the model and shown to the user.

pub mod builtin;
mod files;
pub mod items;
pub mod mcp;
pub mod mcp_cap;
pub mod mcp_http;
pub mod mcp_oauth;
pub mod mcp_oauth_client;
pub mod mcp_oauth_login;
pub mod mcp_oauth_store;
pub mod planted;
pub mod process;
pub mod recorded;
/// The sandbox and its seccomp filter live with the one spawn function (`sys::spawn`), which
/// applies them; the paths stay here for callers and tests.
pub use crate::sys::spawn::sandbox;
#[cfg(target_os = "linux")]
pub use crate::sys::spawn::seccomp;
pub mod secret_hold;
pub mod setup;
pub mod user;
pub mod workspace;

use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
pub use workspace::{PathCheck, PathNeed, Verdict, Workspace};

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    Builtin,
    User,
    /// An MCP server, by its name in `config.toml`, and how it is reached.
    Mcp(String, crate::config::mcp_server::Transport),
    /// A prompt-set line's tool, answered from its recorded outputs: nothing runs.
    Recorded,
}

/// When a tool needs the user's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Approval {
    /// Never asks: the tool only reads.
    Never,
    /// Asks unless the user approved it for the session (or passed `--yes`).
    #[default]
    Ask,
    /// Asks for every call; "approve for the session" is not offered.
    Always,
}

impl Approval {
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "never" => Some(Self::Never),
            "ask" => Some(Self::Ask),
            "always" => Some(Self::Always),
            _ => None,
        }
    }
}

/// A tool's definition and policy.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
    pub source: ToolSource,
    pub approval: Approval,
}

impl ToolSpec {
    /// The `{name, description, parameters}` definition both request builders wrap.
    #[must_use]
    pub fn definition(&self) -> Value {
        serde_json::json!({"name": self.name, "description": self.description, "parameters": self.parameters})
    }

    /// Whether running it can change anything outside palaver.
    #[must_use]
    pub fn has_side_effects(&self) -> bool {
        self.approval != Approval::Never
    }
}

/// What a tool produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    /// Images the tool returned (MCP image content), beside the text that names them.
    pub images: Vec<ToolImage>,
    /// The real output, held back because it holds a credential: `text` is then the refusal
    /// the model gets unless the user approves sending it (headless never does).
    pub held: Option<Box<Held>>,
}

/// A tool output withheld for holding secrets, with what the approval must name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The file it came from, or what produced it ("the output of run_command").
    pub source: std::path::PathBuf,
    /// "holds a private key (PEM block)".
    pub why: String,
    pub output: ToolOutput,
}

/// An image a tool returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolImage {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

impl ToolOutput {
    #[must_use]
    pub fn ok(text: impl Into<String>) -> Self {
        Self { text: text.into(), is_error: false, images: Vec::new(), held: None }
    }
    #[must_use]
    pub fn error(text: impl Into<String>) -> Self {
        Self { text: text.into(), is_error: true, images: Vec::new(), held: None }
    }

    /// The output with every secret palaver knows, and its encodings, replaced
    /// ([`crate::sys::secrets`]): what any tool printed never reaches the store, the screen or
    /// a model. A held output is redacted too: approving it sends what the user saw.
    #[must_use]
    pub fn redacted(mut self) -> Self {
        crate::sys::secrets::redact_string(&mut self.text);
        if let Some(held) = self.held.take() {
            let Held { source, why, output } = *held;
            self.held = Some(Box::new(Held { source, why, output: output.redacted() }));
        }
        self
    }

    /// Keeps the images that fit in the reply's image `budget` (`images_per_reply`,
    /// `item_payload_bytes`, shared with the images the reply generated); each one past it is
    /// dropped and said in the text, so the user and the model know (a held output's images
    /// are counted when it is sent).
    pub fn keep_images_within(&mut self, budget: &mut crate::api::limits::ImageBudget) {
        let mut n = 0;
        self.images.retain(|img| {
            n += 1;
            let size = crate::api::limits::ImageBudget::base64_len(img.bytes.len());
            match budget.take(size) {
                Ok(()) => true,
                Err(why) => {
                    self.text.push_str(&format!("\n[image {n} ({}): {why}]", img.media_type));
                    false
                }
            }
        });
    }
}

#[derive(Clone)]
enum Runner {
    Builtin(builtin::Builtin),
    User(Arc<crate::config::UserTool>),
    Mcp(Arc<mcp::McpClient>, String),
}

/// All tools of a session.
#[derive(Clone, Default)]
pub struct Registry {
    specs: Vec<ToolSpec>,
    runners: HashMap<String, Runner>,
    /// Where the built-in file tools act and user tools run.
    workspace: Workspace,
    /// Longest output one call keeps (`limits.tool_output_bytes`); 0 means the default.
    output_limit: usize,
    /// Every started MCP server, those without tools too (their prompts are offered).
    mcp: Vec<Arc<mcp::McpClient>>,
    /// Set: every call, of any kind, is answered from these recordings and nothing runs.
    recorded: Option<Arc<recorded::Recorded>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.specs.iter().map(|s| &s.name).collect::<Vec<_>>())
            .field("workspace", &self.workspace.root())
            .finish()
    }
}

impl Registry {
    /// The built-in tools.
    #[must_use]
    pub fn builtins() -> Self {
        let mut r = Self::default();
        for b in builtin::Builtin::ALL {
            r.add(b.spec(), Runner::Builtin(b));
        }
        r
    }

    /// A registry offering `specs` whose every call is answered from `recordings`: a
    /// prompt-set cell with recorded tool outputs, where no real tool may run.
    #[must_use]
    pub fn recorded(specs: Vec<ToolSpec>, recordings: recorded::Recorded) -> Self {
        Self { specs, recorded: Some(Arc::new(recordings)), ..Self::default() }
    }

    /// The recordings that answer every call, when this registry runs nothing.
    #[must_use]
    pub fn recordings(&self) -> Option<&recorded::Recorded> {
        self.recorded.as_deref()
    }

    fn add(&mut self, spec: ToolSpec, runner: Runner) {
        // A later definition of the same name replaces the earlier one (user tools can shadow).
        self.specs.retain(|s| s.name != spec.name);
        self.runners.insert(spec.name.clone(), runner);
        self.specs.push(spec);
    }

    /// Adds the `[[tools]]` of `config.toml`; returns notices for tools that cannot be used.
    pub fn add_user_tools(&mut self, tools: &[crate::config::UserTool]) -> Vec<String> {
        let mut notices = Vec::new();
        for t in tools {
            match user::spec(t) {
                Ok(spec) => self.add(spec, Runner::User(Arc::new(t.clone()))),
                Err(e) => notices.push(format!("tool `{}` is not usable: {e}", t.name)),
            }
        }
        notices
    }

    /// Starts the MCP servers of `config.toml` and adds their tools; a server that fails to
    /// start becomes a notice, not an error.
    pub async fn add_mcp_servers(&mut self, cfg: &crate::config::McpConfig) -> Vec<String> {
        let mut notices = Vec::new();
        for (name, server) in &cfg.servers {
            match mcp::McpClient::start(name, server).await {
                Ok((client, specs)) => {
                    let client = Arc::new(client);
                    self.mcp.push(client.clone());
                    self.add_mcp_specs(name, &client, specs);
                }
                Err(e) => notices.push(format!("MCP server `{name}` did not start: {e}")),
            }
        }
        notices
    }

    /// Sampling requests of every MCP server go to `sampler` from now on (a server its config
    /// does not allow to sample is refused all the same).
    pub fn on_mcp_sample(&self, sampler: &mcp::sample::Sampler) {
        for client in &self.mcp {
            client.on_sample(sampler.clone());
        }
    }

    /// Adds the tools of MCP server `name` (a name another tool took gets the server's prefix).
    fn add_mcp_specs(&mut self, name: &str, client: &Arc<mcp::McpClient>, specs: Vec<ToolSpec>) {
        for spec in specs {
            let remote = spec.name.clone();
            let mut spec = spec;
            if self.runners.contains_key(&spec.name) {
                spec.name = format!("{name}__{}", spec.name);
            }
            self.add(spec, Runner::Mcp(client.clone(), remote));
        }
    }

    /// Offers `specs` as the tools of MCP server `name` in place of those it listed before
    /// (it said its tools changed). Nothing happens for a server that is not running.
    pub fn replace_mcp_tools(&mut self, name: &str, specs: Vec<ToolSpec>) {
        let Some(client) = self.mcp.iter().find(|c| c.name() == name).cloned() else { return };
        let theirs = |r: &Runner| matches!(r, Runner::Mcp(c, _) if Arc::ptr_eq(c, &client));
        let gone: HashSet<String> = self.runners.iter().filter(|(_, r)| theirs(r)).map(|(n, _)| n.clone()).collect();
        self.runners.retain(|n, _| !gone.contains(n));
        self.specs.retain(|s| !gone.contains(&s.name));
        self.add_mcp_specs(name, &client, specs);
    }

    /// Ends the sessions of every MCP server, waiting briefly for each (a remote server's
    /// session is deleted); the clients stay, answering later calls with an error.
    pub async fn close_mcp(&self) {
        let mut seen: Vec<&Arc<mcp::McpClient>> = Vec::new();
        for runner in self.runners.values() {
            if let Runner::Mcp(client, _) = runner {
                if !seen.iter().any(|c| Arc::ptr_eq(c, client)) {
                    seen.push(client);
                    client.close().await;
                }
            }
        }
    }

    /// The started MCP servers.
    #[must_use]
    pub fn mcp_clients(&self) -> &[Arc<mcp::McpClient>] {
        &self.mcp
    }

    #[must_use]
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    #[must_use]
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.specs.iter().find(|s| s.name == name)
    }

    /// Definitions for the request: every tool but those of an MCP server whose connection is
    /// gone (it exited, or stopped answering), so the conversation goes on without them.
    #[must_use]
    pub fn definitions(&self) -> Vec<Value> {
        let gone = |s: &&ToolSpec| matches!(self.runners.get(&s.name), Some(Runner::Mcp(c, _)) if !c.is_open());
        self.specs.iter().filter(|s| !gone(s)).map(ToolSpec::definition).collect()
    }

    /// Confines the built-in tools (and user tools' working directory) to `ws`.
    pub fn set_workspace(&mut self, ws: Workspace) {
        self.workspace = ws;
    }

    /// Runs commands (`run_command`, shell calls, user tools) under `policy`.
    pub fn set_sandbox(&mut self, policy: sandbox::Policy) {
        self.workspace.set_sandbox(policy);
    }

    #[must_use]
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// Keeps at most `bytes` of one call's output (`limits.tool_output_bytes` of the profile).
    pub fn set_output_limit(&mut self, bytes: usize) {
        self.output_limit = bytes;
    }

    /// The longest output one call keeps.
    #[must_use]
    pub fn output_limit(&self) -> usize {
        if self.output_limit == 0 { crate::api::limits::Limits::default().tool_output_bytes } else { self.output_limit }
    }

    /// The paths a call would touch that need the user's approval: outside the workspace, or
    /// files that usually hold secrets. `kind` is the call's kind (`""` for function calls,
    /// `"custom"`, `"shell"`, `"local_shell"`, `"apply_patch"`, `"mcp_approval"`). Empty for
    /// user and MCP tools, unknown tools and arguments that do not parse (those fail anyway).
    #[must_use]
    pub fn paths_needing_approval(&self, kind: &str, name: &str, arguments: &str) -> Vec<PathNeed> {
        match kind {
            "" | "custom" => {
                let Some(Runner::Builtin(b)) = self.runners.get(name) else { return Vec::new() };
                let arguments = if kind == "custom" { custom_arguments(arguments) } else { arguments.to_owned() };
                parse_arguments(&arguments).map(|a| b.paths_needing_approval(&self.workspace, &a)).unwrap_or_default()
            }
            _ => items::paths_needing_approval(&self.workspace, kind, arguments),
        }
    }

    /// Runs a tool with the arguments text the model sent, approving no path outside the
    /// workspace. Invalid JSON, an unknown name, a timeout or a failure all come back as error
    /// outputs for the model.
    pub async fn execute(&self, name: &str, arguments: &str, timeout: Duration) -> ToolOutput {
        self.execute_with(name, arguments, timeout, &[]).await
    }

    /// [`Registry::execute`], where the built-in tools may also reach the resolved paths in
    /// `approved`; any other path needing an approval is refused with an error naming it.
    pub async fn execute_with(
        &self,
        name: &str,
        arguments: &str,
        timeout: Duration,
        approved: &[PathBuf],
    ) -> ToolOutput {
        let Some(runner) = self.runners.get(name).cloned() else {
            let known: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
            return ToolOutput::error(format!("unknown tool `{name}`; available tools: {}", known.join(", ")));
        };
        let args = match parse_arguments(arguments) {
            Ok(a) => a,
            Err(e) => return ToolOutput::error(e),
        };
        let ws = &self.workspace;
        let cap = self.output_limit();
        let run = async move {
            match runner {
                Runner::Builtin(b) => b.run_capped(ws, &args, approved, cap).await,
                Runner::User(t) => user::run_sandboxed(&t, &args, ws, cap).await,
                Runner::Mcp(client, remote) => client.call(&remote, args).await,
            }
        };
        // Dropping the run on a timeout ends a command's whole process group.
        match tokio::time::timeout(timeout, run).await {
            Ok(out) => cap_output(out.redacted(), cap),
            Err(_) => ToolOutput::error(format!("the tool `{name}` timed out after {} s", timeout.as_secs_f32())),
        }
    }
}

/// One call's output within `cap` bytes, cut on a character boundary and marked with the limit.
#[must_use]
pub fn cap_output(mut out: ToolOutput, cap: usize) -> ToolOutput {
    if out.text.len() > cap + 512 {
        let mut end = cap;
        while !out.text.is_char_boundary(end) {
            end -= 1;
        }
        out.text.truncate(end);
        out.text.push_str(&process::cut_note(cap));
    }
    out
}

/// A custom call's text as registry arguments: a JSON object as is, anything else as
/// `{"input": text}` (what the tool loop sends).
fn custom_arguments(text: &str) -> String {
    if serde_json::from_str::<serde_json::Map<String, Value>>(text).is_ok() {
        text.to_owned()
    } else {
        serde_json::json!({ "input": text }).to_string()
    }
}

/// Parses the arguments text: empty means `{}`; anything but a JSON object is an error.
///
/// # Errors
/// A message for the model naming what was wrong.
pub fn parse_arguments(arguments: &str) -> Result<serde_json::Map<String, Value>, String> {
    if arguments.trim().is_empty() {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!("the arguments must be a JSON object, got {}", kind_of(&other))),
        Err(e) => Err(format!("the arguments are not valid JSON ({e}): {}", clip(arguments, 200))),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The first `n` characters of `s`, marked when cut.
#[must_use]
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(n).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_past_the_reply_s_budget_are_dropped_and_said() {
        let limits = crate::api::limits::Limits { images_per_reply: 2, ..Default::default() };
        let mut budget = crate::api::limits::ImageBudget::new(limits);
        // The reply already holds one image (one it generated).
        budget.hold(8);
        let image = |n| ToolImage { media_type: "image/png".into(), bytes: vec![0; n] };
        let mut out = ToolOutput::ok("two images");
        out.images = vec![image(3), image(6)];
        out.keep_images_within(&mut budget);
        assert_eq!(out.images, [image(3)]);
        assert!(
            out.text.starts_with(
                "two images\n[image 2 (image/png): image dropped: this reply passed the limit \
                                  images_per_reply = 2"
            ),
            "{}",
            out.text
        );
        // Within the budget, nothing changes.
        let mut out = ToolOutput::ok("one");
        out.images = vec![image(3)];
        out.keep_images_within(&mut crate::api::limits::ImageBudget::new(limits));
        assert_eq!((out.images.len(), out.text.as_str()), (1, "one"));
    }

    #[test]
    fn an_output_and_the_output_it_holds_are_redacted() {
        crate::sys::secrets::register("tool-out-key-0123456789");
        let mut out = ToolOutput::error("refused: holds a key");
        let held = ToolOutput::ok("KEY=tool-out-key-0123456789");
        out.held = Some(Box::new(Held { source: "f".into(), why: "w".into(), output: held }));
        out.text.push_str(" (tool-out-key-0123456789)");
        let out = out.redacted();
        assert_eq!(out.text, "refused: holds a key ([redacted])");
        assert_eq!(out.held.map(|h| h.output.text), Some("KEY=[redacted]".to_owned()));
    }

    #[tokio::test]
    async fn bad_input_becomes_an_error_output() {
        let r = Registry::builtins();
        let t = Duration::from_secs(5);
        assert!(r.execute("nope", "{}", t).await.text.contains("unknown tool"));
        assert!(r.execute("read_file", "{\"path\":", t).await.is_error);
        assert!(r.execute("read_file", "[1]", t).await.text.contains("JSON object"));
        assert!(!r.execute("current_time", "", t).await.is_error);
    }
}
