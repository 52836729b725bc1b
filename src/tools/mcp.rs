//! MCP servers over stdio or streamable HTTP (`mcp_http`), through the `rmcp` client.
//!
//! Each configured server is started as a child process in its own process group, with its
//! stdin and stdout carrying newline-delimited JSON-RPC and its stderr captured (never shown on
//! the terminal, where it would corrupt the TUI; its last lines explain a failed start). The
//! whole start — spawn, `initialize`, `tools/list` — is bounded by [`START_TIMEOUT`]. The child
//! is killed when the [`McpClient`] is dropped. One message and the number of tools are capped
//! (see `mcp_cap`): past either, the server is refused at once with that reason.

use super::mcp_cap::{CappedLines, MCP_MESSAGE_BYTES, MCP_TOOLS, Overflow};
use super::{Approval, ToolOutput, ToolSource, ToolSpec};
use crate::config::McpServer;
use crate::config::mcp_server::Transport;
use crate::sys::secrets;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock, ElicitationCapability,
    FormElicitationCapability, Implementation, PaginatedRequestParams, ProtocolVersion, ResourceContents, Tool,
};
use rmcp::service::{Peer, RunningService};
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::Child;

/// How long spawning, the handshake and listing the tools may take together.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long closing a session may take at exit (a remote server's `DELETE`).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How much of the child's stderr is kept (its end).
const STDERR_KEEP: usize = 4096;

/// How much of that tail goes into an error message.
const STDERR_SHOW: usize = 400;

/// The longest tool name the chat APIs accept.
const MAX_NAME: usize = 64;

/// A running MCP server connection.
pub struct McpClient {
    /// The server's name in `config.toml`.
    name: String,
    /// How the server is reached.
    link: Link,
    /// Tool names offered to the model that differ from the server's names → the server's names
    /// (replaced when the server says its tools changed).
    aliases: RwLock<HashMap<String, String>>,
    /// The session's handle for requests.
    peer: Peer<RoleClient>,
    /// The running session, taken by [`McpClient::close`] (dropping it ends the session
    /// without waiting, so a remote server's `DELETE` may not be sent).
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, live::Handler>>>,
    /// The session's handler, which routes the server's progress reports to running calls.
    handler: live::Handler,
    /// Set when a message passed [`MCP_MESSAGE_BYTES`]: the connection is closed, for that reason.
    over: Overflow,
    /// The prompts it listed at its start, or again after it said they changed.
    prompts: RwLock<Arc<Vec<prompts::PromptInfo>>>,
    /// The resources it listed at its start, or again after it said they changed.
    resources: RwLock<Arc<Vec<resources::ResourceInfo>>>,
    /// Tools it may list (its `max_tools`, else [`MCP_TOOLS`]), for listing them again.
    max_tools: usize,
    /// Whether its `readOnlyHint` is believed (`trust_read_only`), for listing them again.
    trust_read_only: bool,
}

#[path = "mcp_resources.rs"]
pub mod resources;

#[path = "mcp_prompts.rs"]
pub mod prompts;

#[path = "mcp_live.rs"]
pub mod live;

#[path = "mcp_elicit.rs"]
pub mod elicit;

#[path = "mcp_sample.rs"]
pub mod sample;

#[path = "mcp_sse.rs"]
mod legacy;

#[path = "mcp_flood.rs"]
pub mod flood;

/// How a client reaches its server.
enum Link {
    /// A child process.
    Stdio(Box<StdioLink>),
    /// A remote server; the URL without credentials.
    Http(String),
    /// A remote server over the legacy HTTP+SSE transport; the URL without credentials.
    Sse(String),
}

impl Link {
    fn transport(&self) -> Transport {
        match self {
            Self::Stdio(_) => Transport::Stdio,
            Self::Http(_) => Transport::Http,
            Self::Sse(_) => Transport::Sse,
        }
    }
}

/// A stdio server's process.
struct StdioLink {
    /// The command, for messages.
    program: String,
    /// Spawned with `kill_on_drop`: dropping the client kills the server.
    child: Mutex<Child>,
    stderr: StderrTail,
    /// The server's process group, ended with the client or on an exiting Ctrl+C.
    _group: super::process::Group,
}

/// What a successful start hands to [`McpClient::start_within`].
type Started = (RunningService<RoleClient, live::Handler>, Vec<Tool>, Link, Overflow);

/// palaver's side of the handshake: it answers forms (elicitation), which the chat screen shows
/// and headless runs decline, and offers sampling only to a server allowed it (`allow_sampling`).
fn client_info(allow_sampling: bool) -> live::Handler {
    let mut caps = ClientCapabilities::default();
    caps.elicitation = Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
    if allow_sampling {
        #[allow(deprecated)] // Sampling is deprecated upstream (SEP-2577), and servers still ask for it.
        let sampling = rmcp::model::SamplingCapability::default();
        caps.sampling = Some(sampling);
    }
    let info = ClientConfig::new(caps, Implementation::new("palaver", env!("CARGO_PKG_VERSION")))
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
    live::Handler::new(info, allow_sampling)
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("McpClient");
        d.field("name", &self.name);
        match &self.link {
            Link::Stdio(s) => {
                let pid = s.child.lock().unwrap_or_else(PoisonError::into_inner).id();
                d.field("program", &s.program).field("pid", &pid)
            }
            Link::Http(url) | Link::Sse(url) => d.field("url", url),
        };
        d.field("closed", &self.peer.is_transport_closed()).finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts `cfg.command` as a child process speaking MCP over stdio, or connects to
    /// `cfg.url` over streamable HTTP, initialises the session and lists all the server's tools.
    ///
    /// # Errors
    /// A readable message naming the command and the cause when the command is empty or cannot
    /// be run, the server exits or breaks the protocol, or it does not finish starting within
    /// [`START_TIMEOUT`].
    pub async fn start(name: &str, cfg: &McpServer) -> Result<(Self, Vec<ToolSpec>), String> {
        Self::start_within(name, cfg, START_TIMEOUT).await
    }

    async fn start_within(name: &str, cfg: &McpServer, limit: Duration) -> Result<(Self, Vec<ToolSpec>), String> {
        let (service, tools, link, over) = match &cfg.url {
            Some(url) => {
                if let Some(problem) = cfg.problems(name).into_iter().next() {
                    return Err(problem);
                }
                Self::start_http(name, cfg, url, limit).await?
            }
            None => Self::start_stdio(cfg, limit).await?,
        };
        let (specs, aliases) = offered_specs(name, link.transport(), tools, cfg.trust_read_only);
        let peer = service.peer().clone();
        let handler = service.service().clone();
        let prompts = RwLock::new(Arc::new(Self::list_prompts(&peer).await));
        let resources = RwLock::new(Arc::new(Self::list_resources(&peer).await));
        let aliases = RwLock::new(aliases);
        let service = tokio::sync::Mutex::new(Some(service));
        let max_tools = cfg.max_tools.unwrap_or(MCP_TOOLS);
        let client = Self {
            name: name.to_owned(),
            link,
            aliases,
            peer,
            service,
            handler,
            over,
            prompts,
            resources,
            max_tools,
            trust_read_only: cfg.trust_read_only,
        };
        Ok((client, specs))
    }

    /// Starts `cfg.command` as a child process, initialises the session and lists its tools.
    async fn start_stdio(cfg: &McpServer, limit: Duration) -> Result<Started, String> {
        // What its table's `env` hands it under a secret's name is a secret palaver knows,
        // before anything it says (its stderr on a failed start too) is shown.
        let secrets = cfg.env.iter().filter(|(k, _)| crate::sys::secrets::is_secret_name(k)).map(|(_, v)| v.clone());
        crate::sys::secrets::register_all(secrets);
        let Some((program, args)) = cfg.command.split_first() else {
            return Err("the command is empty".to_owned());
        };
        if program.trim().is_empty() {
            return Err("the command is empty".to_owned());
        }
        // A minimal base environment plus exactly its table's `env`; its own process group (a
        // Ctrl-C on the terminal is palaver's to handle, not the server's), killed when dropped.
        let mut cmd = crate::sys::spawn::Spawn::server(program, &cfg.env);
        cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.tokio().map_err(|e| format!("`{program}`: {}", start_message(&e)))?;
        // Ended with its group when the client is dropped, and by a Ctrl+C that exits palaver
        // (say while it has not answered `initialize`).
        let group = super::process::Group::server(child.id().unwrap_or(0));
        let stderr = StderrTail::default();
        let drain = child.stderr.take().map(|pipe| tokio::spawn(stderr.clone().drain(pipe)));
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(format!("`{program}`: could not connect to its stdin and stdout"));
        };
        let over = Overflow::default();
        let max_message = cfg.max_message_bytes.unwrap_or(MCP_MESSAGE_BYTES);
        let stdout = CappedLines::new(stdout, max_message, over.clone());

        let handshake = async {
            let handler = client_info(cfg.allow_sampling);
            let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(stdout, stdin);
            let transport = flood::Gate::new(transport, handler.budget.clone(), over.clone());
            let service = handler.serve(transport).await.map_err(|e| format!("the MCP handshake failed: {e}"))?;
            let tools = list_tools(service.peer(), &over, cfg.max_tools.unwrap_or(MCP_TOOLS)).await?;
            Ok::<_, String>((service, tools))
        };
        let (service, tools) = match tokio::time::timeout(limit, handshake).await {
            Ok(Ok(done)) => done,
            Ok(Err(cause)) => {
                // A limit closed the connection: that is the reason, not the close or how the
                // server ended after it.
                if let Some(why) = over.reason() {
                    return Err(format!("`{program}`: {why}"));
                }
                return Err(startup_failure(program, cause, &mut child, drain, &stderr).await);
            }
            Err(_) => {
                let mut msg = format!("`{program}` did not finish starting within {} s", limit.as_secs_f32());
                msg.push_str(&stderr.suffix());
                return Err(msg);
            }
        };
        let link = StdioLink { program: program.clone(), child: Mutex::new(child), stderr, _group: group };
        Ok((service, tools, Link::Stdio(Box::new(link)), over))
    }

    /// Connects to a remote server over streamable HTTP, initialises the session and lists its tools.
    async fn start_http(name: &str, cfg: &McpServer, url: &str, limit: Duration) -> Result<Started, String> {
        let oauth = if super::mcp_oauth_client::may_use_oauth(cfg) {
            let data_dir = crate::config::Paths::from_env().data_dir;
            super::mcp_oauth_client::OAuthSession::open(name, url, data_dir)?
        } else {
            None
        };
        let logged_in = oauth.is_some();
        let remote = super::mcp_http::remote(cfg, url, None, oauth)?;
        let shown = remote.shown;
        let over = Overflow::default();
        let handshake = async {
            let handler = client_info(cfg.allow_sampling);
            let transport = flood::Gate::new(remote.transport, handler.budget.clone(), over.clone());
            let service = handler.serve(transport).await.map_err(|e| {
                unreachable(&e, url).map_or_else(|| Ok(format!("the MCP handshake failed: {}", plain(&e))), Err)
            })?;
            let tools = list_tools(service.peer(), &over, cfg.max_tools.unwrap_or(MCP_TOOLS)).await.map_err(Ok)?;
            Ok::<_, Result<String, String>>((service, tools))
        };
        // `Err(Err(words))`: no HTTP answer at all, worded as a provider's would be.
        let handshake = async {
            match handshake.await {
                Err(Err(unreached)) => Ok(Err(secrets::redact(&unreached).into_owned())),
                Err(Ok(cause)) => Err(cause),
                Ok(done) => Ok(Ok(done)),
            }
        };
        match tokio::time::timeout(limit, handshake).await {
            Ok(Ok(Err(unreached))) => Err(unreached),
            Ok(Ok(Ok((service, tools)))) => Ok((service, tools, Link::Http(shown), over)),
            Ok(Err(cause)) if legacy::refused(&cause) => {
                // Streamable HTTP refused: an older server may speak HTTP+SSE at this URL.
                match legacy::start(cfg, url, limit).await {
                    Ok((service, tools, over)) => Ok((service, tools, Link::Sse(shown), over)),
                    Err(e) => Err(secrets::redact(&format!(
                        "{shown}: {cause}; the legacy HTTP+SSE transport failed too: {e}"
                    ))
                    .into_owned()),
                }
            }
            Ok(Err(cause)) => {
                let refused = cause.contains("401")
                    || cause.contains("Auth required")
                    || cause.contains("authorization required");
                // A 401 with a `WWW-Authenticate` challenge ("Auth required") asks for OAuth, and so
                // does a refusal of stored tokens that could not be refreshed: a login (or a new
                // one) is what it takes. A bare 401 gets the hint about the config's credentials.
                let challenged = cause.contains("Auth required") || logged_in;
                if refused && challenged && super::mcp_oauth_client::may_use_oauth(cfg) {
                    return Err(super::mcp_oauth_client::needs_login(name));
                }
                let hint = if refused {
                    "; the server wants credentials: set bearer_token_env (or headers) in its [mcp.servers] table"
                } else {
                    ""
                };
                Err(secrets::redact(&format!("{shown}: {cause}{hint}")).into_owned())
            }
            Err(_) => Err(format!("{shown} did not finish starting within {} s", limit.as_secs_f32())),
        }
    }

    /// Calls a tool. Never panics: every failure is an error output naming the server.
    pub async fn call(&self, tool: &str, args: Map<String, Value>) -> ToolOutput {
        let alias = self.aliases.read().unwrap_or_else(PoisonError::into_inner).get(tool).cloned();
        let remote = alias.as_deref().unwrap_or(tool);
        self.handler.budget.call_started();
        let mut out = self.call_remote(remote, args).await;
        if let Some(why) = self.over.reason().filter(|_| out.is_error) {
            // The connection was cut at the limit: that is what the user and the model learn.
            if let Link::Stdio(s) = &self.link {
                let _ = s.child.lock().unwrap_or_else(PoisonError::into_inner).start_kill();
            }
            return ToolOutput::error(format!("MCP server `{}` cannot run `{remote}`: {why}", self.name));
        }
        if let std::borrow::Cow::Owned(clean) = secrets::redact(&out.text) {
            out.text = clean;
        }
        out
    }

    async fn call_remote(&self, remote: &str, args: Map<String, Value>) -> ToolOutput {
        if self.peer.is_transport_closed() {
            return ToolOutput::error(format!(
                "MCP server `{}` cannot run `{remote}`: {}",
                self.name,
                self.gone(Duration::from_millis(300)).await
            ));
        }
        let params = CallToolRequestParams::new(remote.to_owned()).with_arguments(args);
        match live::call_tool(&self.peer, &self.handler, &self.over, params).await {
            Ok(result) => output(result),
            Err(ServiceError::McpError(e)) => {
                ToolOutput::error(format!("MCP server `{}` refused `{remote}`: {}", self.name, e.message))
            }
            Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => ToolOutput::error(format!(
                "MCP server `{}` failed to run `{remote}` ({}): {}",
                self.name,
                secrets::redact(&plain(&e)),
                self.gone(Duration::from_millis(300)).await
            )),
            Err(e) => ToolOutput::error(format!(
                "MCP server `{}` failed to run `{remote}`: {}",
                self.name,
                secrets::redact(&plain(&e))
            )),
        }
    }

    /// The server's name in `config.toml`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Ends the session and waits (up to [`CLOSE_TIMEOUT`]) for its end: a remote server gets
    /// the `DELETE` of its session, which a process exiting without this would not send.
    pub async fn close(&self) {
        self.handler.cancels_sent(CLOSE_TIMEOUT).await;
        let taken = self.service.lock().await.take();
        if let Some(mut service) = taken {
            let _ = service.close_with_timeout(CLOSE_TIMEOUT).await;
        }
    }

    /// How many prompts and resources the server offers (`None`: it does not offer that kind),
    /// counted over their pages up to [`MCP_TOOLS`] of each.
    ///
    /// # Errors
    /// When listing either fails.
    pub async fn inventory(&self) -> Result<(Option<usize>, Option<usize>), String> {
        let caps = self.peer.peer_info().map(|i| i.capabilities.clone()).unwrap_or_default();
        let fail = |e: ServiceError| secrets::redact(&plain(&e)).into_owned();
        let mut prompts = None;
        if caps.prompts.is_some() {
            let (mut n, mut cursor) = (0, None);
            loop {
                let page = self.peer.list_prompts(Some(PaginatedRequestParams::default().with_cursor(cursor))).await;
                let page = page.map_err(fail)?;
                n += page.prompts.len();
                cursor = page.next_cursor.filter(|_| n <= MCP_TOOLS);
                if cursor.is_none() {
                    break;
                }
            }
            prompts = Some(n);
        }
        let mut resources = None;
        if caps.resources.is_some() {
            let (mut n, mut cursor) = (0, None);
            loop {
                let page = self.peer.list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor))).await;
                let page = page.map_err(fail)?;
                n += page.resources.len();
                cursor = page.next_cursor.filter(|_| n <= MCP_TOOLS);
                if cursor.is_none() {
                    break;
                }
            }
            resources = Some(n);
        }
        Ok((prompts, resources))
    }

    /// How the server is reached.
    #[must_use]
    pub fn transport(&self) -> Transport {
        self.link.transport()
    }

    /// The command or the URL (without credentials), for messages and listings.
    #[must_use]
    pub fn target(&self) -> &str {
        match &self.link {
            Link::Stdio(s) => &s.program,
            Link::Http(url) | Link::Sse(url) => url,
        }
    }

    /// Whether the connection is still open.
    #[must_use]
    pub fn is_open(&self) -> bool {
        !self.peer.is_transport_closed()
    }

    /// Why the connection is gone: how the child ended (waiting up to `wait` for it to be
    /// reaped) and the end of its stderr; for a remote server, that it stopped answering.
    async fn gone(&self, wait: Duration) -> String {
        let s = match &self.link {
            Link::Stdio(s) => s,
            Link::Http(url) | Link::Sse(url) => {
                return format!("the server at {url} stopped answering (its session is closed)");
            }
        };
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let state = s.child.lock().unwrap_or_else(PoisonError::into_inner).try_wait();
            let reason = match state {
                Ok(Some(status)) => format!("`{}` has exited ({status})", s.program),
                Err(e) => format!("the state of `{}` is unknown ({})", s.program, io_message(&e)),
                Ok(None) if tokio::time::Instant::now() >= deadline => {
                    format!("`{}` closed the connection", s.program)
                }
                Ok(None) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            };
            return format!("{reason}{}", s.stderr.suffix());
        }
    }
}

/// The specs offered to the model for a server's tools (names made acceptable and unique), and
/// the offered names that differ from the server's → the server's.
fn offered_specs(
    name: &str,
    via: Transport,
    tools: Vec<Tool>,
    trust_read_only: bool,
) -> (Vec<ToolSpec>, HashMap<String, String>) {
    let mut aliases = HashMap::new();
    let mut taken = HashSet::new();
    let specs = tools
        .into_iter()
        .map(|tool| {
            let spec = spec(name, via, tool, trust_read_only);
            let offered = unique_name(&sanitize(&spec.name), &taken);
            taken.insert(offered.clone());
            if offered != spec.name {
                aliases.insert(offered.clone(), spec.name.clone());
            }
            ToolSpec { name: offered, ..spec }
        })
        .collect();
    (specs, aliases)
}

/// Every page of the server's tool list, refused past `max_tools` (its `max_tools`, or
/// [`MCP_TOOLS`]: a server paging forever would otherwise be listed forever); the refusal is
/// kept in `over` as the reason.
async fn list_tools(service: &Peer<RoleClient>, over: &Overflow, max_tools: usize) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    loop {
        let page = service
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|e| format!("listing its tools failed: {}", plain(&e)))?;
        tools.extend(page.tools);
        if tools.len() > max_tools {
            let why = format!(
                "it lists more than {max_tools} tools, the limit for one MCP server (MCP_TOOLS = {MCP_TOOLS} \
                 unless the server's `max_tools` in config.toml sets another)"
            );
            over.refuse(&why);
            return Err(why);
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(tools);
        }
    }
}

/// The message for a start that failed before the timeout: if the child exited, how and what it
/// said on stderr; otherwise the protocol failure.
async fn startup_failure(
    program: &str,
    cause: String,
    child: &mut Child,
    drain: Option<tokio::task::JoinHandle<()>>,
    stderr: &StderrTail,
) -> String {
    let status = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
    let mut msg = match status {
        Ok(Ok(status)) => {
            // The pipe closes once the child is gone: let the drain read the last words.
            if let Some(drain) = drain {
                let _ = tokio::time::timeout(Duration::from_millis(500), drain).await;
            }
            format!("`{program}` exited ({status}) before the MCP session started")
        }
        Ok(Err(e)) => format!("`{program}`: {cause} ({})", io_message(&e)),
        Err(_) => format!("`{program}`: {cause}"),
    };
    msg.push_str(&stderr.suffix());
    msg
}

/// The end of the child's stderr.
#[derive(Clone, Default)]
struct StderrTail(Arc<Mutex<Vec<u8>>>);

impl StderrTail {
    async fn drain(self, mut pipe: tokio::process::ChildStderr) {
        let mut buf = [0u8; 4096];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut tail = self.0.lock().unwrap_or_else(PoisonError::into_inner);
                    tail.extend_from_slice(&buf[..n]);
                    let excess = tail.len().saturating_sub(STDERR_KEEP);
                    tail.drain(..excess);
                }
            }
        }
    }

    /// `"; stderr: …"` with its last lines on one line, or nothing if it said nothing.
    fn suffix(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let text = String::from_utf8_lossy(&bytes);
        let joined = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" | ");
        if joined.is_empty() {
            return String::new();
        }
        let count = joined.chars().count();
        let shown: String = if count > STDERR_SHOW {
            let mut s = String::from("…");
            s.extend(joined.chars().skip(count - STDERR_SHOW));
            s
        } else {
            joined
        };
        format!("; stderr: {shown}")
    }
}

/// An rmcp error without the transport's Rust type name (`Transport [rmcp::…<…>] error: `),
/// which says nothing to a user.
fn plain(e: &impl std::fmt::Display) -> String {
    let text = e.to_string();
    match (text.find("Transport ["), text.find("] error: ")) {
        (Some(start), Some(end)) if start < end => format!("{}{}", &text[..start], &text[end + 9..]),
        _ => text,
    }
}

/// A request that got no HTTP answer (refused, no such host, TLS, a timeout), in the words a
/// provider's gets (`api::errors::describe_reqwest`). rmcp keeps the reqwest error two
/// wrappers down, neither of which names it as its `source`.
fn unreachable(e: &rmcp::service::ClientInitializeError, url: &str) -> Option<String> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let rmcp::service::ClientInitializeError::TransportError { error, .. } = e else { return None };
    let Some(StreamableHttpError::Client(r)) = error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>() else {
        return None;
    };
    r.status().is_none().then(|| crate::api::errors::describe_reqwest(r, url))
}

/// Why a command could not be started, in plain words: not found, not executable, or the
/// system's own.
fn start_message(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such command (is it installed, and on PATH?)".to_owned(),
        std::io::ErrorKind::PermissionDenied => "not executable (permission denied)".to_owned(),
        _ => io_message(e),
    }
}

/// An I/O error without the "(os error N)" tail.
fn io_message(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// The spec of one of the server's tools (under the server's name for it). Its `readOnlyHint`
/// lets it run unasked only when the user said to believe this server (`trust_read_only`).
fn spec(server: &str, via: Transport, tool: Tool, trust_read_only: bool) -> ToolSpec {
    let read_only = trust_read_only && tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
    ToolSpec {
        name: tool.name.into_owned(),
        description: tool.description.map(std::borrow::Cow::into_owned).unwrap_or_default(),
        parameters: Value::Object(Arc::unwrap_or_clone(tool.input_schema)),
        source: ToolSource::Mcp(server.to_owned(), via),
        approval: if read_only { Approval::Never } else { Approval::Ask },
    }
}

/// A name the chat APIs accept (`[A-Za-z0-9_-]{1,64}`).
fn sanitize(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(MAX_NAME)
        .collect();
    if out.is_empty() {
        out.push_str("tool");
    }
    out
}

/// `name`, or `name_2`, `name_3`… if an earlier tool of the server took it.
fn unique_name(name: &str, taken: &HashSet<String>) -> String {
    if !taken.contains(name) {
        return name.to_owned();
    }
    (2..)
        .map(|i| {
            let suffix = format!("_{i}");
            let keep = MAX_NAME.saturating_sub(suffix.len());
            format!("{}{suffix}", name.chars().take(keep).collect::<String>())
        })
        .find(|n| !taken.contains(n))
        .unwrap_or_else(|| name.to_owned())
}

/// The text of a tool result for the model.
fn output(result: CallToolResult) -> ToolOutput {
    use base64::Engine as _;
    let mut parts = Vec::new();
    let mut images = Vec::new();
    let mut has_text = false;
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => {
                has_text = true;
                parts.push(t.text.clone());
            }
            ContentBlock::Image(i) => {
                let mime = &i.mime_type;
                // Over the per-file limit it is not even decoded: named in the text, then dropped.
                let cap = crate::config::attachments::MAX_TOOL_IMAGE_BYTES;
                if i.data.trim().len() as u64 > cap.div_ceil(3) * 4 {
                    parts.push(format!(
                        "[image: {mime}, {} bytes base64, over the {} MB limit: dropped]",
                        i.data.len(),
                        cap >> 20
                    ));
                    continue;
                }
                parts.push(format!("[image: {mime}, {} bytes base64]", i.data.len()));
                // Kept as bytes too, so the transcript can draw it and the model can see it.
                if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(i.data.trim()) {
                    images.push(super::ToolImage { media_type: i.mime_type.clone(), bytes });
                }
            }
            ContentBlock::Audio(a) => parts.push(format!("[audio: {}, {} bytes base64]", a.mime_type, a.data.len())),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    has_text = true;
                    parts.push(format!("[resource: {uri}]\n{text}"));
                }
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => parts.push(format!(
                    "[resource: {uri}, {}, {} bytes base64]",
                    mime_type.as_deref().unwrap_or("binary"),
                    blob.len()
                )),
                _ => parts.push("[resource]".to_owned()),
            },
            ContentBlock::ResourceLink(link) => parts.push(format!("[resource link: {} ({})]", link.uri, link.name)),
            _ => parts.push("[unsupported content]".to_owned()),
        }
    }
    if let (false, Some(structured)) = (has_text, &result.structured_content) {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    let mut out = if result.is_error == Some(true) {
        ToolOutput::error(if text.is_empty() { "the tool reported an error without details".to_owned() } else { text })
    } else {
        ToolOutput::ok(text)
    };
    out.images = images;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(mode: &str) -> McpServer {
        let script = format!("{}/tests/mcp_server/server.py", env!("CARGO_MANIFEST_DIR"));
        let mut command = vec!["python3".to_owned(), script];
        if !mode.is_empty() {
            command.push(mode.to_owned());
        }
        McpServer { command, ..McpServer::default() }
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let started = std::time::Instant::now();
        let err = McpClient::start_within("hang", &server("--hang"), Duration::from_millis(1500)).await.unwrap_err();
        assert!(err.contains("did not finish starting within 1.5 s"), "{err}");
        assert!(err.contains("must not reach the terminal"), "stderr is reported: {err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn names_are_made_acceptable() {
        assert_eq!(sanitize("fs.read/file"), "fs_read_file");
        assert_eq!(sanitize(""), "tool");
        assert_eq!(sanitize(&"x".repeat(100)).len(), MAX_NAME);
        let taken = HashSet::from(["a_b".to_owned()]);
        assert_eq!(unique_name("a_b", &taken), "a_b_2");
        assert_eq!(unique_name("c", &taken), "c");
    }

    #[test]
    fn an_image_over_the_limit_is_dropped_undecoded() {
        let cap = crate::config::attachments::MAX_TOOL_IMAGE_BYTES;
        let data = "A".repeat(usize::try_from(cap.div_ceil(3) * 4 + 4).unwrap());
        let r: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "image", "data": data, "mimeType": "image/png"}]
        }))
        .unwrap();
        let out = output(r);
        assert!(out.images.is_empty());
        assert!(out.text.contains("over the 20 MB limit: dropped"), "{}", out.text);
    }

    #[test]
    fn results_become_text() {
        let r: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///x", "text": "body"}},
                {"type": "resource", "resource": {"uri": "file:///y", "blob": "AAAA", "mimeType": "application/zip"}},
                {"type": "resource_link", "uri": "file:///z", "name": "z"}
            ],
            "structuredContent": {"ignored": true}
        }))
        .unwrap();
        let out = output(r);
        assert!(!out.is_error);
        assert_eq!(
            out.images,
            vec![super::super::ToolImage { media_type: "image/png".into(), bytes: b"hello".to_vec() }]
        );
        assert_eq!(
            out.text,
            "a\n[image: image/png, 8 bytes base64]\n[resource: file:///x]\nbody\n\
             [resource: file:///y, application/zip, 4 bytes base64]\n[resource link: file:///z (z)]"
        );
        let r: CallToolResult =
            serde_json::from_value(serde_json::json!({"content": [], "structuredContent": {"n": 1}, "isError": true}))
                .unwrap();
        assert_eq!(output(r), ToolOutput::error("{\"n\":1}"));
    }
}
