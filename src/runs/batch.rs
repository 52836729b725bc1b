//! `compare --prompts … --batch`: each model's missing cells go to its provider's batch API as
//! one JSON Lines file (built on disk, a line at a time), the batch id is stored the moment the
//! provider hands it out, the batches are polled with backoff, and their output and error files
//! are read a line at a time as they stream into stored cells (never written to disk; a line
//! past `batch_line_bytes` is refused and its cell stored failed, a file past
//! `batch_file_bytes` ends the gathering there). `--resume` polls the stored batches again
//! instead of sending their cells twice. Ctrl+C stops the polling (or the reading) only: the
//! batches keep running at the provider. The input file is the one temporary file, removed on
//! every exit path (`sys::temp`).
//!
//! One batch per model is in flight at a time and covers every cell of that model still
//! missing; when it ends, cells it did not answer are stored as failed with why.

use super::batch_cells::{self, CellFacts, cell_id, parse_cell_id};
use super::scheduler::Shared;
use crate::api::batch::{Backoff, BatchClient, BatchError, BatchInfo, endpoint_path, input_line};
use crate::engine::target::Target;
use crate::store::runs_batches::BatchRow;
use crate::sys::read::ReadError;
use crate::sys::temp::TempFile;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

/// Rows stored between waits for the store's writer while a result file is read.
const FLUSH_EVERY: usize = 512;

/// Most requests one batch takes (OpenAI's limit).
pub const MAX_LINES: usize = 50_000;

/// The models whose provider has no batch API, by position and name: such a run is refused.
#[must_use]
pub fn without_batch_api(targets: &[Target]) -> Vec<String> {
    targets.iter().filter(|t| t.batch.is_none()).map(|t| format!("{} ({})", t.model, t.provider)).collect()
}

/// How a batch run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Every batch ended and was gathered (or could not be sent).
    Done,
    /// Ctrl+C during polling: the batches keep running.
    Interrupted,
}

/// Runs `todo` (cells as (position in `prompts`, model index)) through the batch APIs.
pub async fn run(job: Arc<Shared>, todo: &[(usize, usize)]) -> Ended {
    // Per model, its missing cells by position in `prompts`.
    let mut pending: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for &(p, m) in todo {
        pending.entry(m).or_default().insert(p);
    }
    let mut active: BTreeMap<usize, BatchRow> = BTreeMap::new();
    for b in job.store.batches(&job.run).unwrap_or_default().into_iter().filter(|b| !b.gathered) {
        active.insert(b.model_idx as usize, b);
    }
    // Input files a palaver killed with kill -9 left behind.
    crate::sys::temp::sweep("batch");
    let mut stop = job.stop.clone();
    let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(30));
    let mut clients: BTreeMap<usize, BatchClient> = BTreeMap::new();
    loop {
        for (&m, cells) in &pending {
            if cells.is_empty() || active.contains_key(&m) {
                continue;
            }
            let Some(client) = client(&job, &mut clients, m) else { continue };
            // Ctrl+C (or SIGTERM, SIGHUP) during an upload drops it, and its input file with it.
            let sent = tokio::select! {
                sent = submit(&job, &client, m, cells) => sent,
                () = stop.fired() => return Ended::Interrupted,
            };
            match sent {
                Ok(row) => {
                    active.insert(m, row);
                }
                Err(e) => job.observer.notice(&format!("{}: the batch could not be sent: {e}", job.targets[m].model)),
            }
        }
        // A model whose batch could not be sent has no batch in flight: its cells stay missing.
        pending.retain(|m, cells| !cells.is_empty() && active.contains_key(m));
        if active.is_empty() {
            return Ended::Done;
        }
        tokio::select! {
            () = tokio::time::sleep(backoff.next_wait()) => {}
            () = stop.fired() => {}
        }
        if stop.is_set() {
            return Ended::Interrupted;
        }
        let models: Vec<usize> = active.keys().copied().collect();
        for m in models {
            let Some(client) = client(&job, &mut clients, m) else { continue };
            let Some(row) = active.get_mut(&m) else { continue };
            if poll(&job, &client, row, pending.entry(m).or_default()).await {
                active.remove(&m);
            }
        }
    }
}

fn client(job: &Shared, clients: &mut BTreeMap<usize, BatchClient>, m: usize) -> Option<BatchClient> {
    if let Some(c) = clients.get(&m) {
        return Some(c.clone());
    }
    match BatchClient::new(&job.targets[m].endpoint) {
        Ok(c) => Some(clients.entry(m).or_insert(c).clone()),
        Err(e) => {
            job.observer.notice(&format!("{}: cannot start the HTTP client: {e}", job.targets[m].provider));
            None
        }
    }
}

/// Writes model `m`'s cells as a JSON Lines file, uploads it, creates the batch and stores its
/// id before anything else happens.
async fn submit(
    job: &Arc<Shared>,
    client: &BatchClient,
    m: usize,
    cells: &BTreeSet<usize>,
) -> Result<BatchRow, String> {
    if cells.len() > MAX_LINES {
        return Err(format!("{} cells, and a batch takes at most {MAX_LINES}", cells.len()));
    }
    let file = TempFile::new("batch", &format!("{}-m{m}.jsonl", job.run));
    let path = file.path().to_path_buf();
    let (j, list) = (job.clone(), cells.iter().copied().collect::<Vec<_>>());
    let written = tokio::task::spawn_blocking(move || write_lines(&j, m, &list, &path)).await;
    let unsent = match written {
        Ok(Ok(unsent)) => unsent,
        Ok(Err(e)) => return Err(e),
        Err(e) => return Err(e.to_string()),
    };
    // Cells that cannot be sent (an unreadable attachment) are stored failed now.
    for (p, why) in &unsent {
        store(job, batch_cells::failed_row(&facts(job, *p, m), why), *p);
    }
    let t = &job.targets[m];
    let name = format!("{}-m{m}.jsonl", job.run);
    let file_id = client.upload(file.path(), &name).await.map_err(|e| e.message)?;
    let metadata = serde_json::json!({"palaver_run": job.run, "model": t.model});
    let info = client.create(&file_id, endpoint_path(t.api, &t.endpoint), metadata).await.map_err(|e| e.message)?;
    let row = BatchRow {
        batch_id: info.id.clone(),
        model_idx: u32::try_from(m).unwrap_or(u32::MAX),
        cells: (cells.len() - unsent.len()) as u64,
        status: info.status.clone(),
        ..BatchRow::default()
    };
    if let Err(e) = job.store.save_batch(&job.run, &row) {
        job.observer.notice(&format!("batch {} could not be stored ({e}); a restart cannot pick it up", info.id));
    }
    job.observer.notice(&format!("batch {} for {}: {} requests, {}", info.id, t.model, row.cells, info.status));
    Ok(row)
}

/// Writes the lines of model `m`'s cells to `path`; returns the cells that could not be
/// built, with why.
fn write_lines(
    job: &Shared,
    m: usize,
    cells: &[usize],
    path: &std::path::Path,
) -> Result<Vec<(usize, String)>, String> {
    let t = &job.targets[m];
    let url = endpoint_path(t.api, &t.endpoint);
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut out = std::io::BufWriter::new(file);
    let mut unsent = Vec::new();
    let mut sent = 0;
    for &p in cells {
        let prompt = &job.prompts[p];
        match batch_cells::request_body(t, &job.settings[m], job.schema_of, prompt, job.expects[p].as_ref()) {
            Ok(body) => {
                // A batch run takes one sample a cell (`--repeat` is refused with `--batch`).
                let id = cell_id(prompt.idx, u32::try_from(m).unwrap_or(u32::MAX), 0);
                writeln!(out, "{}", input_line(&id, url, &body)).map_err(|e| e.to_string())?;
                sent += 1;
            }
            Err(e) => unsent.push((p, e)),
        }
    }
    out.flush().map_err(|e| e.to_string())?;
    if sent == 0 {
        return Err("no cell could be sent".into());
    }
    Ok(unsent)
}

/// Polls one batch, keeps its state in the store, and gathers it once it has ended; true when
/// it is done with (gathered, or gone).
async fn poll(job: &Arc<Shared>, client: &BatchClient, row: &mut BatchRow, pending: &mut BTreeSet<usize>) -> bool {
    let m = row.model_idx as usize;
    let info = match client.retrieve(&row.batch_id).await {
        Ok(info) => info,
        Err(BatchError { status: Some(404), .. }) => {
            // The provider does not know it (the embedded demo restarted): send the cells again.
            job.observer
                .notice(&format!("batch {} is unknown to the provider; its cells are sent again", row.batch_id));
            row.status = "lost".into();
            row.gathered = true;
            let _ = job.store.save_batch(&job.run, row);
            return true;
        }
        Err(e) if e.limit => {
            // Past a budget: asking again gets the same answer. The batch stays stored, its
            // cells missing, for a --resume with the limit raised.
            job.observer
                .notice(&format!("batch {}: {e}; it is no longer polled (--resume polls it again)", row.batch_id));
            pending.clear();
            return true;
        }
        Err(e) => {
            job.observer.notice(&format!("batch {}: {e} (polling again)", row.batch_id));
            return false;
        }
    };
    let changed = info.status != row.status;
    row.status.clone_from(&info.status);
    row.completed = info.completed;
    row.failed = info.failed;
    if changed {
        job.observer.notice(&format!("batch {} for {}: {}", row.batch_id, job.targets[m].model, info.progress()));
    }
    if !info.is_terminal() {
        let _ = job.store.save_batch(&job.run, row);
        return false;
    }
    match gather(job, client, &info, m, pending).await {
        Ok(()) => {
            row.gathered = true;
            let _ = job.store.flush();
            let _ = job.store.save_batch(&job.run, row);
            true
        }
        Err(e) => {
            job.observer.notice(&format!("batch {}: its results could not be read: {e} (trying again)", row.batch_id));
            false
        }
    }
}

/// Reads an ended batch's output and error files and stores a cell per line; cells it left
/// unanswered are stored failed, saying how the batch ended (and which budget a refused line or
/// file passed).
async fn gather(
    job: &Arc<Shared>,
    client: &BatchClient,
    info: &BatchInfo,
    m: usize,
    pending: &mut BTreeSet<usize>,
) -> Result<(), String> {
    let mut refused = None;
    for file_id in [&info.output_file_id, &info.error_file_id].into_iter().flatten() {
        let lines = client.lines(file_id).await.map_err(|e| e.message)?;
        if let Some(why) = read_results(job, m, pending, lines, file_id).await? {
            job.observer.notice(&format!("batch {}: {why}", info.id));
            refused = Some(why);
        }
    }
    let mut why = match &info.errors {
        Some(errors) => format!("the batch {} failed: {errors}", info.id),
        None => format!("the batch {} ended {} without an answer for this cell", info.id, info.status),
    };
    if let Some(r) = refused {
        why.push_str(&format!(" ({r})"));
    }
    for p in std::mem::take(pending) {
        store(job, batch_cells::failed_row(&facts(job, p, m), &why), p);
    }
    Ok(())
}

/// Reads a result file a line at a time as it streams, storing each line's cell once and taking
/// it out of `pending` (a broken download tried again stores only the rest). `Ok(Some(why))`:
/// a line or the file passed its budget (the lines before, and after a refused line, are
/// stored); `Err`: the download broke or Ctrl+C stopped it.
async fn read_results(
    job: &Arc<Shared>,
    m: usize,
    pending: &mut BTreeSet<usize>,
    mut lines: crate::sys::read::BodyLines,
    file_id: &str,
) -> Result<Option<String>, String> {
    let by_idx: BTreeMap<u32, usize> = pending.iter().map(|&p| (job.prompts[p].idx, p)).collect();
    let (mut stop, mut stored, mut refused) = (job.stop.clone(), 0usize, None);
    loop {
        let line = tokio::select! {
            line = lines.next() => line,
            () = stop.fired() => return Err("stopped by Ctrl+C".into()),
        };
        let line = match line {
            None => return Ok(refused),
            Some(Ok(line)) => line,
            Some(Err(ReadError::Io(e))) => return Err(format!("the download of {file_id} broke off: {e}")),
            Some(Err(e @ ReadError::Over(b))) if b.name == "batch_line_bytes" => {
                refused = Some(e.about(&format!("a line of {file_id}")));
                continue;
            }
            Some(Err(e)) => return Ok(Some(e.about(&format!("{file_id} after {} bytes", lines.read())))),
        };
        let Some(result) = crate::api::batch::parse_result_line(&String::from_utf8_lossy(&line)) else { continue };
        let Some((idx, model, 0)) = parse_cell_id(&result.custom_id) else { continue };
        // A line seen twice (a provider retrying) is stored once.
        let Some(&p) = by_idx.get(&idx).filter(|p| model as usize == m && pending.contains(p)) else { continue };
        pending.remove(&p);
        store(job, batch_cells::row_of(&facts(job, p, m), result.outcome.as_ref()), p);
        stored += 1;
        // The store's writer takes rows slower than a file is read: waiting for it now and
        // then keeps the rows queued for it (and so memory) bounded, whatever the batch's size.
        if stored % FLUSH_EVERY == 0 {
            let j = job.clone();
            let _ = tokio::task::spawn_blocking(move || j.store.flush()).await;
        }
    }
}

fn facts(job: &Shared, p: usize, m: usize) -> CellFacts<'_> {
    CellFacts {
        cfg: &job.cfg,
        target: &job.targets[m],
        prompt: &job.prompts[p],
        expect: job.expects[p].as_ref(),
        model_idx: u32::try_from(m).unwrap_or(u32::MAX),
        discount: job.targets[m].batch.map_or(0.0, |b| b.discount),
    }
}

/// Stores a finished cell (the observer counts it and prints its `--json` line).
fn store(job: &Shared, row: crate::store::runs::CellRow, p: usize) {
    job.observer.finished(&job.run, &job.prompts[p], &row);
    job.store.save_cell(&job.run, row);
}
