//! What an MCP server says while a call runs, and what palaver tells it: `notifications/progress`
//! routed to the running call's card (or the headless event stream), and `notifications/cancelled`
//! sent when palaver stops waiting for a call (the user's Ctrl+C, a timeout), so the server can
//! stop its work too. The session's [`Handler`] is the rmcp client handler that hears the server.
//!
//! Whoever runs a call says where its progress goes with [`with_progress`] (a task-local: the
//! call passes through the registry and the tool loop, which need not know about it); the tool
//! loop names the call with [`for_call`] when one task runs several calls.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification, CancelledNotificationParam,
    ClientConfig, ClientNotification, ClientRequest, ProgressNotificationParam, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions};
use rmcp::{ClientHandler, RoleClient, ServiceError};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

/// Why palaver sent `notifications/cancelled`.
pub const CANCEL_REASON: &str = "palaver stopped the call (the user cancelled it, or it timed out)";

/// Why palaver refuses `sampling/createMessage` of a server not allowed to sample (the server
/// can show it).
pub const SAMPLING_REFUSED: &str = "palaver refused this sampling request: it does not let this MCP server use the \
     conversation's model (sampling is not offered; the user can set allow_sampling = true in its [mcp.servers] table)";

/// One progress report of a running MCP call, as the server sent it (unsanitised).
#[derive(Debug, Clone, PartialEq)]
pub struct McpProgress {
    /// The call it belongs to, as the tool loop named it with [`for_call`] (empty otherwise).
    pub call: String,
    /// How far the call is.
    pub progress: f64,
    /// Of how much, when the server knows.
    pub total: Option<f64>,
    /// What the server says it is doing.
    pub message: Option<String>,
}

impl McpProgress {
    /// `3/5` (or `3` without a total) and the message, on one line, sanitised for a terminal.
    #[must_use]
    pub fn label(&self) -> String {
        let mut s = match self.total {
            Some(t) => format!("{}/{}", number(self.progress), number(t)),
            None => number(self.progress),
        };
        if let Some(m) = self.message.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
            let one_line = m.split_whitespace().collect::<Vec<_>>().join(" ");
            s.push_str(&format!(" {}", crate::text::sanitize::sanitize(&super::super::clip(&one_line, 80))));
        }
        s
    }
}

/// A whole number without its `.0`, another with at most two decimals.
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 { format!("{n:.0}") } else { format!("{n:.2}") }
}

/// Where a call's progress goes.
pub type ProgressSink = Arc<dyn Fn(McpProgress) + Send + Sync>;

tokio::task_local! {
    /// The progress sink of the calls run inside [`with_progress`].
    static SINK: ProgressSink;
    /// The call being run inside [`for_call`].
    static CALL: String;
}

/// Runs `fut` with MCP calls inside it reporting their progress to `sink`.
pub async fn with_progress<F: Future>(sink: ProgressSink, fut: F) -> F::Output {
    SINK.scope(sink, fut).await
}

/// Runs `fut` with its progress reports naming call `id`.
pub async fn for_call<F: Future>(id: String, fut: F) -> F::Output {
    CALL.scope(id, fut).await
}

/// The sink and call name of the running task, if it has a sink.
fn current() -> Option<(ProgressSink, String)> {
    let sink = SINK.try_with(Clone::clone).ok()?;
    Some((sink, CALL.try_with(Clone::clone).unwrap_or_default()))
}

/// Progress tokens of the calls running now → where their reports go.
type Routes = Arc<Mutex<HashMap<ProgressToken, (ProgressSink, String)>>>;

/// The session's client handler: palaver's identity and capabilities, and what it does with
/// what the server sends on its own.
#[derive(Clone)]
pub struct Handler {
    info: ClientConfig,
    routes: Routes,
    /// `notifications/cancelled` being sent: closing the session waits for them, or a run
    /// stopped by Ctrl+C would end the session before the server hears why.
    cancels: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    /// Where the server's list changes go.
    changes: Arc<Mutex<Changes>>,
    /// Who answers the server's forms (none: they are declined).
    pub(super) asker: super::elicit::AskerSlot,
    /// Whether the server may sample (`allow_sampling`): only then was sampling offered.
    allow_sampling: bool,
    /// Who runs the server's sampling requests (none: they are refused).
    pub(super) sampler: super::sample::SamplerSlot,
    /// What the server may ask of palaver (its requests, its sampling), counted.
    pub(super) budget: Arc<super::flood::Budget>,
}

impl Handler {
    pub(super) fn new(info: ClientConfig, allow_sampling: bool) -> Self {
        Self {
            info,
            routes: Routes::default(),
            cancels: Arc::default(),
            changes: Arc::default(),
            asker: Arc::default(),
            allow_sampling,
            sampler: Arc::default(),
            budget: Arc::default(),
        }
    }

    /// Waits (up to `limit`) until every `notifications/cancelled` on its way is sent.
    pub(super) async fn cancels_sent(&self, limit: std::time::Duration) {
        // A call aborted a moment ago (SIGTERM on the chat screen) is dropped on another thread,
        // and only then starts its cancellation: wait for the running calls to be gone first.
        let deadline = tokio::time::Instant::now() + limit;
        while !self.routes.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let pending: Vec<_> = std::mem::take(&mut *self.cancels.lock().unwrap_or_else(PoisonError::into_inner));
        let _ = tokio::time::timeout(limit, futures_util::future::join_all(pending)).await;
    }
}

impl ClientHandler for Handler {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let route = self.routes.lock().unwrap_or_else(PoisonError::into_inner).get(&params.progress_token).cloned();
        if let Some((sink, call)) = route {
            sink(McpProgress { call, progress: params.progress, total: params.total, message: params.message });
        }
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(super::elicit::answer(&self.asker, request).await)
    }

    // Sampling is deprecated upstream (SEP-2577), and servers still ask for it.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        super::sample::answer(self.allow_sampling, &self.sampler, &self.budget, params).await
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed(ListKind::Tools);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed(ListKind::Prompts);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed(ListKind::Resources);
    }

    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }
}

/// Sends `notifications/cancelled` for a request when dropped armed: the call's future was
/// dropped (Ctrl+C aborts the call's task; a timeout drops it) before its answer came.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    routes: Routes,
    token: ProgressToken,
    cancels: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.token);
        let Some(id) = self.id.take() else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let peer = self.peer.clone();
        let sending = rt.spawn(async move {
            let params = CancelledNotificationParam::new(Some(id), Some(CANCEL_REASON.to_owned()));
            let note = CancelledNotification::new(params);
            let _ = peer.send_notification(ClientNotification::CancelledNotification(note)).await;
        });
        let mut cancels = self.cancels.lock().unwrap_or_else(PoisonError::into_inner);
        cancels.retain(|c| !c.is_finished());
        cancels.push(sending);
    }
}

/// A list a server said changed (`notifications/*/list_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Tools,
    Prompts,
    Resources,
}

impl ListKind {
    /// The word for messages: "tools", "prompts", "resources".
    #[must_use]
    pub fn word(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Prompts => "prompts",
            Self::Resources => "resources",
        }
    }
}

/// Where a server's list changes are told.
pub type ChangeSink = Arc<dyn Fn(ListKind) + Send + Sync>;

/// The change sink, and the changes heard before there was one.
#[derive(Default)]
struct Changes {
    sink: Option<ChangeSink>,
    pending: Vec<ListKind>,
}

impl Handler {
    /// Tells the sink that the server's `kind` list changed, or keeps it until there is one.
    fn changed(&self, kind: ListKind) {
        let sink = {
            let mut c = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
            if c.sink.is_none() && !c.pending.contains(&kind) {
                c.pending.push(kind);
            }
            c.sink.clone()
        };
        if let Some(sink) = sink {
            sink(kind);
        }
    }
}

/// What listing a changed list again found.
#[derive(Debug, Clone, PartialEq)]
pub struct Relisted {
    /// How many there are now.
    pub count: usize,
    /// For the tools, their specs as the model is to be offered them.
    pub tools: Option<Vec<crate::tools::ToolSpec>>,
}

impl super::McpClient {
    /// From now on, tells `sink` when the server says one of its lists changed (and at once
    /// about changes it announced before).
    pub fn on_list_changed(&self, sink: ChangeSink) {
        let pending = {
            let mut c = self.handler.changes.lock().unwrap_or_else(PoisonError::into_inner);
            c.sink = Some(sink.clone());
            std::mem::take(&mut c.pending)
        };
        for kind in pending {
            sink(kind);
        }
    }

    /// The list changes heard while no sink was set (a headless run asks between rounds).
    pub fn take_list_changes(&self) -> Vec<ListKind> {
        std::mem::take(&mut self.handler.changes.lock().unwrap_or_else(PoisonError::into_inner).pending)
    }

    /// Lists `kind` again (the server said it changed) and keeps what it found.
    ///
    /// # Errors
    /// When the listing fails, or lists more tools than the server may have.
    pub async fn relist(&self, kind: ListKind) -> Result<Relisted, String> {
        match kind {
            ListKind::Tools => {
                // A fresh overflow: a listing refused here must not close the session.
                let over = super::Overflow::default();
                let tools = super::list_tools(&self.peer, &over, self.max_tools).await?;
                let (specs, aliases) =
                    super::offered_specs(&self.name, self.link.transport(), tools, self.trust_read_only);
                *self.aliases.write().unwrap_or_else(PoisonError::into_inner) = aliases;
                Ok(Relisted { count: specs.len(), tools: Some(specs) })
            }
            ListKind::Prompts => {
                let listed = Arc::new(Self::list_prompts(&self.peer).await);
                let count = listed.len();
                *self.prompts.write().unwrap_or_else(PoisonError::into_inner) = listed;
                Ok(Relisted { count, tools: None })
            }
            ListKind::Resources => {
                let listed = Arc::new(Self::list_resources(&self.peer).await);
                let count = listed.len();
                *self.resources.write().unwrap_or_else(PoisonError::into_inner) = listed;
                Ok(Relisted { count, tools: None })
            }
        }
    }
}

/// Calls a tool with a progress token routed to the running task's sink, and cancels the
/// request on the server if this future is dropped before the answer.
/// Resolves once the server is gone: its transport closed, or a `ping` sent while the call
/// waits cannot reach it. A remote server that dies mid-call leaves the call's stream waiting
/// for a reconnection; only a new request finds the server missing. A ping that is merely
/// slow (a busy server) is not taken for death.
async fn server_gone(peer: &Peer<RoleClient>, over: &super::Overflow) {
    use std::time::Duration;
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        // A limit cut the connection: closing it may take rmcp a while, the call ends now.
        if peer.is_transport_closed() || over.reason().is_some() {
            return;
        }
        let ping = rmcp::model::PingRequest { method: Default::default(), extensions: Default::default() };
        let sent = tokio::time::timeout(Duration::from_secs(10), peer.send_request(ClientRequest::PingRequest(ping)));
        if let Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) = sent.await {
            return;
        }
    }
}

pub(super) async fn call_tool(
    peer: &Peer<RoleClient>,
    handler: &Handler,
    over: &super::Overflow,
    params: CallToolRequestParams,
) -> Result<CallToolResult, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
    let token = handle.progress_token.clone();
    if let Some(route) = current() {
        handler.routes.lock().unwrap_or_else(PoisonError::into_inner).insert(token.clone(), route);
    }
    let mut guard = CancelOnDrop {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
        routes: handler.routes.clone(),
        token,
        cancels: handler.cancels.clone(),
    };
    // A server that dies mid-call never answers: its closed transport ends the wait, so the
    // call fails now, naming the server, instead of at the tool timeout.
    let answer = tokio::select! {
        answer = handle.await_response() => answer,
        () = server_gone(peer, over) => Err(ServiceError::TransportClosed),
    };
    guard.id = None;
    match answer? {
        ServerResult::CallToolResult(r) => Ok(r),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_as_a_fraction_and_a_clean_message() {
        let p = |progress, total, message: Option<&str>| McpProgress {
            call: String::new(),
            progress,
            total,
            message: message.map(str::to_owned),
        };
        assert_eq!(p(3.0, Some(5.0), None).label(), "3/5");
        assert_eq!(p(0.25, None, Some("  ")).label(), "0.25");
        assert_eq!(p(1.0, Some(4.0), Some("copying\n\x1b[31mfiles\x1b[0m")).label(), "1/4 copying files");
        assert!(p(1.0, None, Some(&"x".repeat(200))).label().chars().count() < 90);
    }
}
