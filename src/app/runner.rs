//! The effect runner for everything that needs no terminal: requests (one task each, cancelled
//! by dropping its receiver), the model list and theme loading. Results come back as `Msg`s on
//! the app channel, stamped with the app clock.

use super::msg::{LoadedTheme, Msg};
use crate::api::Api;
use crate::api::client::Endpoint;
use crate::config::theme::Theme;
use crate::engine::turn::spawn_request;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;

mod attach_jobs;
pub(crate) mod tool_jobs;

/// Starts and stops background work.
pub struct Runner {
    tx: UnboundedSender<Msg>,
    http: reqwest::Client,
    endpoint: Endpoint,
    clock: Instant,
    requests: HashMap<u64, AbortHandle>,
    themes_dir: PathBuf,
    no_color: bool,
    /// Running tool calls by (owner, message id, call index), so a cancel can drop them.
    tool_tasks: HashMap<(super::tools::Owner, u64, usize), AbortHandle>,
    /// The (base URL, model) pairs whose window was asked for: once each per session.
    windows_asked: std::collections::HashSet<(String, String)>,
}

/// The chat screen's requests: their errors' hints name slash commands, not flags.
#[must_use]
pub fn on_screen(mut endpoint: Endpoint) -> Endpoint {
    endpoint.face = crate::api::errors::Face::Screen;
    endpoint
}

impl Runner {
    #[must_use]
    pub fn new(
        tx: UnboundedSender<Msg>,
        http: reqwest::Client,
        endpoint: Endpoint,
        themes_dir: PathBuf,
        no_color: bool,
    ) -> Self {
        Self {
            tx,
            http,
            endpoint: on_screen(endpoint),
            clock: Instant::now(),
            requests: HashMap::new(),
            themes_dir,
            no_color,
            tool_tasks: HashMap::new(),
            windows_asked: std::collections::HashSet::new(),
        }
    }

    /// Milliseconds since the app started.
    #[must_use]
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The instant the app clock counts from (compare columns stamp their events with it too).
    #[must_use]
    pub fn clock(&self) -> Instant {
        self.clock
    }

    /// Sends later requests to `endpoint` through its own client (a kept compare column carries
    /// on at its provider; a client is built for one endpoint, see `endpoint_client`).
    pub fn set_endpoint(&mut self, endpoint: Endpoint, http: reqwest::Client) {
        self.endpoint = on_screen(endpoint);
        self.http = http;
    }

    /// Sends a request; its wire events arrive as `Msg::Wire` for message `id`.
    pub fn start_request(&mut self, id: u64, api: Api, body: std::sync::Arc<crate::engine::body::Body>) {
        self.requests.retain(|_, h| !h.is_finished());
        let mut rx = spawn_request(self.http.clone(), self.endpoint.clone(), api, body);
        let tx = self.tx.clone();
        let clock = self.clock;
        let ms = move || u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
        let _ = tx.send(Msg::RequestStarted { id, now_ms: ms() });
        let task = tokio::spawn(async move {
            // Dropping `rx` (when this task ends or is aborted) stops the request task.
            while let Some(event) = rx.recv().await {
                if tx.send(Msg::Wire { id, event: Box::new(event), now_ms: ms() }).is_err() {
                    break;
                }
            }
        });
        self.requests.insert(id, task.abort_handle());
    }

    /// Stops the request of message `id`; what arrived stays with the message.
    pub fn cancel(&mut self, id: u64) {
        if let Some(h) = self.requests.remove(&id) {
            h.abort();
        }
    }

    pub fn fetch_models(&self) {
        let tx = self.tx.clone();
        let ep = self.endpoint.clone();
        tokio::spawn(async move {
            let _ = tx.send(Msg::Models(crate::api::models::list(&ep).await));
        });
    }

    /// Asks the server for `model`'s window in the background, once per server and model.
    pub fn learn_window(&mut self, model: String) {
        if !self.windows_asked.insert((self.endpoint.base_url.clone(), model.clone())) {
            return;
        }
        let tx = self.tx.clone();
        let ep = self.endpoint.clone();
        tokio::spawn(async move {
            let within = crate::api::window::LOOKUP_TIMEOUT;
            if let Some(window) = crate::api::window::served_window(&ep, &model, within).await {
                let _ = tx.send(Msg::Window { model, window });
            }
        });
    }

    /// Loads a theme off the UI task (user themes are files).
    pub fn load_theme(&self, name: String) {
        let tx = self.tx.clone();
        let dir = self.themes_dir.clone();
        let no_color = self.no_color;
        tokio::task::spawn_blocking(move || {
            let theme = Theme::load(&name, Some(&dir), no_color).map(|t| LoadedTheme(Box::new(t)));
            let _ = tx.send(Msg::ThemeLoaded { name, theme });
        });
    }
}
