//! The effect runner of compare mode: one request task per column, each to its own provider's
//! endpoint. Endpoints are known up front for `palaver compare` (resolved by the CLI) and for
//! the chat's own provider; any other `provider/model` of `/compare` is resolved from the
//! config the first time a request needs it (a key command, or starting the demo provider),
//! inside the request's task, so the UI never waits.

use super::{CompareEffect, CompareMsg};
use crate::api::Api;
use crate::api::client::{Endpoint, Secret, WireEvent, endpoint_client};
use crate::app::msg::Msg;
use crate::app::runner::Runner;
use crate::config::{Config, ProviderProfile, resolve_key};
use crate::demo::DemoServer;
use crate::engine::message::ErrorInfo;
use crate::engine::target::Target;
use crate::engine::turn::spawn_request;
use crate::store::runs::BattleRow;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Mutex;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;

/// A provider ready to take requests.
#[derive(Clone)]
struct Resolved {
    endpoint: Endpoint,
    http: reqwest::Client,
    /// Keeps an embedded demo server alive while columns use it.
    _demo: Option<Arc<DemoServer>>,
}

/// Starts and stops column requests.
pub struct ColumnRunner {
    tx: UnboundedSender<Msg>,
    http: reqwest::Client,
    clock: Instant,
    cfg: Arc<Config>,
    endpoints: Arc<Mutex<HashMap<String, Resolved>>>,
    requests: HashMap<(u64, usize, u64), AbortHandle>,
    /// Where arena votes go (`None`: not kept).
    votes: Option<Arc<Votes>>,
}

/// Where the session's arena battles go: the store, opened with the first vote. A vote is
/// final, so each battle is written once.
struct Votes {
    path: std::path::PathBuf,
    store: std::sync::Mutex<Option<crate::store::runs::RunStore>>,
}

impl Votes {
    /// Stores a battle and its vote; returns why it failed.
    fn write(&self, battle: BattleRow) -> Result<(), String> {
        use crate::store::runs::RunStore;
        let mut store = self.store.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if store.is_none() {
            *store = Some(RunStore::open(&self.path).map_err(|e| e.to_string())?);
        }
        let Some(store) = store.as_ref() else { return Ok(()) };
        store.write_battle(battle).map_err(|e| e.to_string())
    }
}

impl ColumnRunner {
    /// A runner that knows the chat's target and the CLI's column targets; `clock` is the app
    /// clock of the main runner, so timings agree.
    #[must_use]
    pub fn new(
        tx: UnboundedSender<Msg>,
        http: reqwest::Client,
        clock: Instant,
        cfg: Config,
        main: &Target,
        columns: &[Target],
    ) -> Self {
        let mut known = HashMap::new();
        for (i, t) in std::iter::once(main).chain(columns).enumerate() {
            known.entry(t.provider.clone()).or_insert_with(|| Resolved {
                endpoint: t.endpoint.clone(),
                // The chat's client was built for the main target already (building one for an
                // https endpoint loads the system's certificates: most of the chat screen's start-up).
                http: if i == 0 { http.clone() } else { endpoint_client(&t.endpoint).unwrap_or_else(|_| http.clone()) },
                _demo: t.demo.clone(),
            });
        }
        Self {
            tx,
            http,
            clock,
            cfg: Arc::new(cfg),
            endpoints: Arc::new(Mutex::new(known)),
            requests: HashMap::new(),
            votes: None,
        }
    }

    /// Keeps arena votes in the database at `path`.
    #[must_use]
    pub fn with_votes(mut self, path: std::path::PathBuf) -> Self {
        self.votes = Some(Arc::new(Votes { path, store: std::sync::Mutex::new(None) }));
        self
    }

    /// Stores a battle's vote off the UI task: a blocking task, which the runtime finishes
    /// before the process ends, so a vote right before Ctrl+Q is kept.
    fn vote(&mut self, battle: BattleRow) {
        let Some(votes) = self.votes.clone() else { return };
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = votes.write(battle) {
                let _ = tx.send(Msg::Compare(CompareMsg::VoteFailed(e)));
            }
        });
    }

    /// A `curl` command for a request a column sent to `provider`, once its endpoint is known.
    #[must_use]
    pub fn curl(&self, provider: &str, api: Api, body: &Value) -> Option<String> {
        let map = self.endpoints.try_lock().ok()?;
        map.get(provider).map(|r| crate::app::runner::tool_jobs::curl_for(&r.endpoint, api, body))
    }

    /// Carries out one compare effect.
    pub fn run(&mut self, effect: CompareEffect, runner: &mut Runner) {
        match effect {
            CompareEffect::Start { generation, column, id, provider, api, body } => {
                self.start(generation, column, id, provider, api, body);
            }
            CompareEffect::Cancel { generation, column, id } => {
                if let Some(h) = self.requests.remove(&(generation, column, id)) {
                    h.abort();
                }
            }
            CompareEffect::UseEndpoint { provider } => self.use_endpoint(provider, runner),
            CompareEffect::Vote(battle) => self.vote(*battle),
        }
    }

    fn start(
        &mut self,
        generation: u64,
        column: usize,
        id: u64,
        provider: String,
        api: Api,
        body: Arc<crate::engine::body::Body>,
    ) {
        self.requests.retain(|_, h| !h.is_finished());
        let tx = self.tx.clone();
        let clock = self.clock;
        let ms = move || u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
        let endpoints = self.endpoints.clone();
        let cfg = self.cfg.clone();
        let fallback = self.http.clone();
        let task = tokio::spawn(async move {
            let resolved = lookup(&endpoints, &cfg, &provider, &fallback).await;
            let _ = tx.send(Msg::Compare(CompareMsg::Started { generation, column, id, now_ms: ms() }));
            let r = match resolved {
                Ok(r) => r,
                Err(message) => {
                    let err = ErrorInfo { status: None, message, kind: "config".into(), body: Value::Null };
                    let event = Box::new(WireEvent::Failed(err));
                    let _ = tx.send(Msg::Compare(CompareMsg::Wire { generation, column, id, event, now_ms: ms() }));
                    return;
                }
            };
            // Dropping `rx` (when this task ends or is aborted) stops the request task.
            let mut rx = spawn_request(r.http, crate::app::runner::on_screen(r.endpoint), api, body);
            while let Some(event) = rx.recv().await {
                let msg = CompareMsg::Wire { generation, column, id, event: Box::new(event), now_ms: ms() };
                if tx.send(Msg::Compare(msg)).is_err() {
                    break;
                }
            }
        });
        self.requests.insert((generation, column, id), task.abort_handle());
    }

    /// Points the chat's runner at `provider`'s endpoint (a kept column carries on there).
    fn use_endpoint(&mut self, provider: String, runner: &mut Runner) {
        if let Ok(map) = self.endpoints.try_lock() {
            if let Some(r) = map.get(&provider) {
                runner.set_endpoint(r.endpoint.clone(), r.http.clone());
                return;
            }
        }
        // Not known yet (no column of it has sent a request): resolve it, then ask again.
        let (endpoints, cfg, tx, http) = (self.endpoints.clone(), self.cfg.clone(), self.tx.clone(), self.http.clone());
        tokio::spawn(async move {
            if lookup(&endpoints, &cfg, &provider, &http).await.is_ok() {
                let _ = tx.send(Msg::Compare(CompareMsg::EndpointReady { provider }));
            }
        });
    }
}

/// The provider's endpoint, resolving it from the config the first time.
async fn lookup(
    endpoints: &Mutex<HashMap<String, Resolved>>,
    cfg: &Config,
    provider: &str,
    fallback: &reqwest::Client,
) -> Result<Resolved, String> {
    // Held while resolving, so two columns of one new provider resolve it once.
    let mut map = endpoints.lock().await;
    if let Some(r) = map.get(provider) {
        return Ok(r.clone());
    }
    let r = resolve(cfg, provider, fallback).await?;
    map.insert(provider.to_owned(), r.clone());
    Ok(r)
}

/// Resolves a configured provider (or `demo`) as `palaver --provider NAME` would.
async fn resolve(cfg: &Config, provider: &str, fallback: &reqwest::Client) -> Result<Resolved, String> {
    let (endpoint, demo) = if provider == "demo" && !cfg.providers.contains_key("demo") {
        let server = crate::demo::spawn_local().await.map_err(|e| format!("cannot start the demo provider: {e}"))?;
        let ep = ProviderProfile::default().endpoint(&server.base_url, Secret::default());
        (ep, Some(Arc::new(server)))
    } else {
        let profile = cfg
            .providers
            .get(provider)
            .cloned()
            .ok_or_else(|| format!("no provider named `{provider}` in config.toml"))?;
        let url =
            profile.base_url.clone().ok_or_else(|| format!("provider `{provider}` has no base_url in config.toml"))?;
        let var = profile.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into());
        let cmd = profile.api_key_cmd.clone();
        let timeout = profile.key_cmd_timeout();
        // A key command may take a while (a password manager): off the async threads.
        let key = tokio::task::spawn_blocking(move || resolve_key(&var, cmd.as_deref(), timeout, false))
            .await
            .map_err(|e| e.to_string())??;
        (profile.endpoint(&url, key), None)
    };
    let http = endpoint_client(&endpoint).unwrap_or_else(|_| fallback.clone());
    Ok(Resolved { endpoint, http, _demo: demo })
}
