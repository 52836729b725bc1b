//! Running a run's missing cells: one queue per provider with `concurrency` workers each, so
//! a provider that rate-limits slows only its own cells. A retry the client is about to wait
//! out (429 + Retry-After, 5xx) pauses that provider's queue for as long as the server asked:
//! its other workers do not send meanwhile, and the other providers' queues never notice.
//! Each finished cell goes to the store at once and its row is dropped.

use super::cell::{self, CellJob, SchemaOf};
use super::sink::{RetryHook, TurnSink};
use super::stop::Stop;
use crate::config::Config;
use crate::engine::evals::expect::Expect;
use crate::engine::target::{Target, TurnSettings};
use crate::store::runs::{CellRow, PromptRow, RunStore};
use crate::tools::Registry;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// A provider's pause: no new request goes out before `until`.
#[derive(Default)]
pub struct Gate {
    until: Mutex<Option<Instant>>,
}

impl Gate {
    /// Pauses the queue for `wait` from now (a longer pause already set stays).
    pub fn pause(&self, wait: Duration) {
        let at = Instant::now() + wait;
        let mut u = self.until.lock().unwrap_or_else(PoisonError::into_inner);
        if u.is_none_or(|old| old < at) {
            *u = Some(at);
        }
    }

    /// Waits while the queue is paused.
    pub async fn wait(&self) {
        loop {
            let until = *self.until.lock().unwrap_or_else(PoisonError::into_inner);
            match until {
                Some(at) if at > Instant::now() => tokio::time::sleep_until(at).await,
                _ => return,
            }
        }
    }
}

/// What the command line is told while cells run (it draws the progress bar, prints `--json`
/// lines and notices).
pub trait CellObserver: Send + Sync {
    /// The quiet sink a cell's turn reports to, its retries told to `retry`.
    fn sink(&self, retry: RetryHook) -> Box<dyn TurnSink + Send>;
    /// A provider asked for a retry.
    fn retried(&self);
    /// A cell of run `run` finished, just before it is stored.
    fn finished(&self, run: &str, prompt: &PromptRow, row: &CellRow);
    /// A note for the user (not sanitised yet).
    fn notice(&self, text: &str);
}

/// Everything the workers share.
pub struct Shared {
    pub cfg: Config,
    pub targets: Vec<Target>,
    /// The run's turn settings, one per target.
    pub settings: Vec<TurnSettings>,
    pub schema_of: SchemaOf,
    pub registry: Registry,
    pub prompts: Vec<PromptRow>,
    pub expects: Vec<Option<Expect>>,
    /// Each prompt's conversation, when it has turns or recorded tool outputs.
    pub conversations: Vec<Option<crate::engine::evals::turns::Conversation>>,
    pub store: Arc<RunStore>,
    pub run: String,
    pub observer: Arc<dyn CellObserver>,
    pub stop: Stop,
    pub judges: super::judge::Judges,
}

/// A cell to run: (position in `prompts`, model index, sample).
pub type Todo = (usize, usize, u32);

/// One provider's queue: its cells.
struct Queue {
    gate: Arc<Gate>,
    cells: Vec<Todo>,
    next: AtomicUsize,
    http: reqwest::Client,
}

/// Runs `todo` (cells as (position in `prompts`, model index, sample)) with `concurrency`
/// workers per provider. Returns when every cell is done or the user pressed Ctrl+C (the cells
/// in flight then stop and are not stored).
pub async fn run(shared: Arc<Shared>, todo: Vec<Todo>, concurrency: usize) {
    let mut by_provider: BTreeMap<String, Vec<Todo>> = BTreeMap::new();
    for cell in todo {
        let p = shared.targets[cell.1].provider.clone();
        by_provider.entry(p).or_default().push(cell);
    }
    let mut tasks = Vec::new();
    for (provider, cells) in by_provider {
        let t = &shared.targets[cells[0].1];
        let http = match crate::api::client::endpoint_client(&t.endpoint) {
            Ok(h) => h,
            Err(e) => {
                shared.observer.notice(&format!("{provider}: cannot start the HTTP client: {e}"));
                continue;
            }
        };
        let workers = concurrency.clamp(1, cells.len().max(1));
        let queue = Arc::new(Queue { gate: Arc::default(), cells, next: AtomicUsize::new(0), http });
        for _ in 0..workers {
            tasks.push(tokio::spawn(worker(shared.clone(), queue.clone())));
        }
    }
    for t in tasks {
        let _ = t.await;
    }
}

async fn worker(shared: Arc<Shared>, queue: Arc<Queue>) {
    let mut stop = shared.stop.clone();
    let gate = queue.gate.clone();
    let observer = shared.observer.clone();
    let retry: RetryHook = Arc::new(move |_attempt, wait_ms| {
        gate.pause(Duration::from_millis(wait_ms));
        observer.retried();
    });
    loop {
        // Ctrl+C is heard during a pause too (a Retry-After can be a minute).
        tokio::select! {
            () = queue.gate.wait() => {}
            () = stop.fired() => return,
        }
        if stop.is_set() {
            return;
        }
        let i = queue.next.fetch_add(1, Ordering::SeqCst);
        let Some(&(p, m, sample)) = queue.cells.get(i) else { return };
        let mut sink = shared.observer.sink(retry.clone());
        let job = CellJob {
            cfg: &shared.cfg,
            target: &shared.targets[m],
            settings: &shared.settings[m],
            schema_of: shared.schema_of,
            registry: &shared.registry,
            http: &queue.http,
            prompt: &shared.prompts[p],
            expect: shared.expects[p].as_ref(),
            model_idx: u32::try_from(m).unwrap_or(u32::MAX),
            sample,
            sink: sink.as_mut(),
            stop: shared.stop.clone(),
            judges: &shared.judges,
            conversation: shared.conversations[p].as_ref(),
        };
        let Some(row) = cell::run(job).await else { return };
        shared.observer.finished(&shared.run, &shared.prompts[p], &row);
        shared.store.save_cell(&shared.run, row);
    }
}
