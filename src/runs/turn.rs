//! The headless turn loop: one prompt's turn driven as a plain loop over the turn engine —
//! stream a reply, let the engine decide its tool calls, run the approved ones, answer them,
//! ask again — for `palaver -p`, the headless compare's columns and the prompt-set cells alike.
//! What happens is reported to a [`TurnSink`]; every message is saved through the
//! [`Recorder`] as it goes.

use super::recorder::Recorder;
use super::sink::TurnSink;
use super::stop::Stop;
use crate::api::client::WireEvent;
use crate::engine::message::{Message, ToolCall, ToolStatus};
use crate::engine::reducer::{self, Ending};
use crate::engine::request::{RequestOptions, build_body};
use crate::engine::target::{Target, TurnSettings};
use crate::engine::tool_loop::{DEFAULT_STEP_LIMIT, DEFAULT_TOOL_TIMEOUT, ToolMode, run_calls_until};
use crate::engine::turn::{apply_wire, spawn_request};
use crate::engine::turn_engine::{Decision, Next, TurnAccount, TurnPolicy, TurnStop, answers, offered, settle_unrun};
use crate::tools::Registry;
use std::time::Instant;

/// What a turn needs, built by the command line from its flags: where it goes, how it asks,
/// the tools it may call, the HTTP client, and the run's Ctrl+C.
pub struct Turn<'a> {
    pub target: &'a Target,
    pub settings: TurnSettings,
    pub registry: &'a Registry,
    pub http: &'a reqwest::Client,
    pub stop: Stop,
}

/// What a turn produced: the final reply, every tool call of the turn in order, a notice when
/// the loop was cut short, and the turn's account (requests, rounds, usage, how it stopped).
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    pub msg: Message,
    pub calls: Vec<ToolCall>,
    pub notice: Option<String>,
    pub account: TurnAccount,
    /// Whether the conversation reached the store (`None`: not a stored run). The result line
    /// says `"stored": false` when it did not, so a script knows `--continue` will not find it.
    pub stored: Option<bool>,
    /// What was attached to the prompt (`--json` lists it: name, type, bytes, hash, size).
    pub attachments: Vec<serde_json::Value>,
}

impl TurnOutcome {
    /// Whether every reply of the turn (`history`: its conversation) was answered from the
    /// response cache, so it cost nothing.
    #[must_use]
    pub fn from_cache(&self, history: &[Message]) -> bool {
        let hit = |m: &Message| m.response_headers.iter().any(|(k, _)| k == crate::api::reply_cache::CACHE_HEADER);
        hit(&self.msg) && history.iter().filter(|m| m.role() == crate::engine::Role::Assistant).all(hit)
    }

    fn ended(msg: Message, calls: Vec<ToolCall>, notice: Option<String>, account: TurnAccount) -> Self {
        Self { msg, calls, notice, account, stored: None, attachments: Vec::new() }
    }
}

/// The turn's policy, its request options and its registry (limited and sandboxed as the
/// endpoint says). Where the sandbox cannot be had, it is said before any command runs.
fn prepare<S: TurnSink + ?Sized>(turn: &Turn<'_>, sink: &mut S) -> (TurnPolicy, RequestOptions, Registry) {
    let t = turn.target;
    let settings = &turn.settings;
    let policy =
        TurnPolicy { mode: settings.tools, yes: settings.yes, step_limit: DEFAULT_STEP_LIMIT, interactive: false };
    let mut opts = settings.request_options(t, &t.model);
    opts.tools = offered(policy.mode, turn.registry);
    let mut registry = turn.registry.clone();
    registry.set_output_limit(t.endpoint.limits.tool_output_bytes);
    registry.set_sandbox(t.sandbox.clone());
    if policy.mode != ToolMode::Off {
        if let Some(n) = crate::tools::sandbox::notice_once(&t.sandbox) {
            sink.notice(&n);
        }
    }
    (policy, opts, registry)
}

/// Runs a turn on `history` (which ends with the user's message): stream a reply, let the
/// engine decide its calls, run the approved ones, answer them, ask again, until the engine
/// says the turn is over. `history` grows with every message; each is saved as it goes.
pub async fn run_turn<S: TurnSink + ?Sized>(
    turn: &Turn<'_>,
    history: &mut Vec<Message>,
    rec: &mut Recorder,
    sink: &mut S,
) -> TurnOutcome {
    let t = turn.target;
    let (policy, mut opts, mut registry) = prepare(turn, sink);
    let mut account = TurnAccount::default();
    let mut all_calls: Vec<ToolCall> = Vec::new();
    loop {
        // A server that said its tools changed (during the last round) is listed again.
        if relist_changed(&mut registry, sink).await && policy.mode != ToolMode::Off {
            opts.tools = offered(policy.mode, &registry);
        }
        let registry = &registry;
        let body = build_body(t.api, history, &opts);
        let (mut msg, _) = stream_reply(turn.http, t, body, sink, rec, history.len(), turn.stop.clone()).await;
        let data_dir = crate::config::Paths::from_env().data_dir;
        let (saved, notices) = crate::engine::images::save_generated_images(&mut msg, &data_dir);
        for n in notices {
            sink.notice(&n);
        }
        dropped_images_notice(&msg, sink);
        let known = account.tools_ignored.is_some();
        let next = account.after_reply(&policy, &mut msg, registry, &|_| false);
        if let Some(found) = account.tools_ignored.filter(|_| !known) {
            sink.notice(&found.notice());
        }
        let decisions = match next {
            Next::Stop { notice, stop } => {
                let notice = match stop {
                    TurnStop::Cancelled => {
                        let by = turn.stop.ended_by().map_or_else(|| "the user (Ctrl+C)".to_owned(), str::to_owned);
                        Some(format!("stopped by {by}; {}", msg.kept_when_stopped()))
                    }
                    _ => notice,
                };
                if saved > 0 || !msg.main().tool_calls.is_empty() {
                    rec.save_all(history.len(), std::slice::from_ref(&msg));
                }
                all_calls.extend(msg.main().tool_calls.iter().cloned());
                return TurnOutcome::ended(msg, all_calls, notice, account);
            }
            Next::Settle(d) => d,
        };
        let progress = sink.progress_hook();
        if !run_round(turn, registry, &mut msg, &decisions, progress).await {
            // Every call is answered, so the stored conversation continues (`--continue`).
            settle_unrun(&mut msg, ToolStatus::Failed, "The user stopped this call (Ctrl+C) before it finished.");
            all_calls.extend(msg.main().tool_calls.iter().cloned());
            answered(history, rec, msg.clone());
            account.cancel();
            let by = turn.stop.ended_by().map_or_else(|| "the user (Ctrl+C)".to_owned(), |signal| signal.to_string());
            let notice = Some(format!("stopped by {by} while tools ran; what finished is kept"));
            return TurnOutcome::ended(msg, all_calls, notice, account);
        }
        for call in &msg.main().tool_calls {
            sink.tool_result(call);
        }
        all_calls.extend(msg.main().tool_calls.iter().cloned());
        answered(history, rec, msg);
    }
}

/// Runs the calls `decisions` approve, in place in `msg`. False when Ctrl+C stopped them:
/// the running calls are dropped (their process groups end) and the turn ends.
async fn run_round(
    turn: &Turn<'_>,
    registry: &Registry,
    msg: &mut Message,
    decisions: &[Decision],
    progress: Option<crate::tools::mcp::live::ProgressSink>,
) -> bool {
    let limits = turn.target.endpoint.limits;
    let runnable: Vec<usize> = (0..decisions.len()).filter(|&i| decisions[i] == Decision::Run).collect();
    let mut calls = msg.main().tool_calls.clone();
    let mut to_run: Vec<ToolCall> = runnable.iter().map(|&i| calls[i].clone()).collect();
    let round = limits.round_tool_output_bytes;
    // The images the calls return share the reply's image limits with what it generated.
    let images = &mut crate::engine::images::reply_image_budget(limits, msg, None);
    let mut stop = turn.stop.clone();
    let run = run_calls_until(registry, &mut to_run, DEFAULT_TOOL_TIMEOUT, round, images, stop.fired());
    let finished = match progress {
        Some(hook) => crate::tools::mcp::live::with_progress(hook, run).await,
        None => run.await,
    };
    for (&i, done) in runnable.iter().zip(to_run) {
        calls[i] = done;
    }
    msg.main_mut().tool_calls = calls;
    finished && !turn.stop.is_set()
}

/// Lists again the tools of every MCP server that said they changed, saying so; whether any did.
async fn relist_changed<S: TurnSink + ?Sized>(registry: &mut Registry, sink: &mut S) -> bool {
    use crate::tools::mcp::live::ListKind;
    let clients: Vec<_> = registry.mcp_clients().to_vec();
    let mut changed = false;
    for client in clients {
        if !client.take_list_changes().contains(&ListKind::Tools) {
            continue;
        }
        match client.relist(ListKind::Tools).await {
            Ok(listed) => {
                sink.notice(&format!("MCP server `{}` changed its tools: {} now", client.name(), listed.count));
                registry.replace_mcp_tools(client.name(), listed.tools.unwrap_or_default());
                changed = true;
            }
            Err(e) => {
                sink.notice(&format!("MCP server `{}` changed its tools; listing them failed: {e}", client.name()))
            }
        }
    }
    changed
}

/// Adds a reply and the answers to its calls to `history`, and saves them.
fn answered(history: &mut Vec<Message>, rec: &mut Recorder, msg: Message) {
    let first = history.len();
    let answers = answers(&msg);
    history.push(msg);
    history.extend(answers);
    rec.save_all(first, &history[first..]);
}

/// Streams one reply, reporting as it goes. Returns the message and whether the user interrupted.
pub async fn stream_reply<S: TurnSink + ?Sized>(
    http: &reqwest::Client,
    t: &Target,
    body: serde_json::Value,
    sink: &mut S,
    rec: &mut Recorder,
    pos: usize,
    mut stop: Stop,
) -> (Message, bool) {
    let mut msg = Message::assistant_pending();
    (msg.model, msg.provider, msg.api) = (Some(t.model.clone()), Some(t.provider.clone()), Some(t.api.name().into()));
    msg.base_url = t.storable_base_url();
    msg.timing.started_at_ms = crate::store::ids::now_ms();
    let start = Instant::now();
    let mut rx = spawn_request(http.clone(), t.endpoint.clone(), t.api, std::sync::Arc::new(body.into()));
    let mut interrupted = false;
    // One checkpoint timer, moved only when the save it waits for moves (arming a new one
    // after every read was a timer insert and removal per read).
    let mut checkpoint = std::pin::pin!(tokio::time::sleep(std::time::Duration::ZERO));
    let handle = |ev: WireEvent, msg: &mut Message, sink: &mut S| {
        if let WireEvent::Retrying { attempt, wait_ms, reason } = &ev {
            sink.retry(*attempt, *wait_ms, reason);
        }
        let now = start.elapsed().as_millis() as u64;
        apply_wire(msg, ev, now, &mut |e| sink.event(e))
    };
    loop {
        if rec.is_dirty() {
            let due = tokio::time::Instant::from_std(rec.save_due());
            if checkpoint.deadline() != due {
                checkpoint.as_mut().reset(due);
            }
        }
        tokio::select! {
            biased;
            () = stop.fired() => {
                interrupted = true;
                break;
            }
            ev = rx.recv() => {
                let Some(ev) = ev else { break };
                let mut done = handle(ev, &mut msg, sink);
                // Whatever else already arrived goes out with it: one write per burst, not per delta.
                while !done {
                    let Ok(ev) = rx.try_recv() else { break };
                    done = handle(ev, &mut msg, sink);
                }
                sink.flush();
                rec.streaming(pos, &mut msg);
                if done {
                    break;
                }
            }
            // A reply that stopped changing is still saved within the pacing interval.
            () = &mut checkpoint, if rec.is_dirty() => rec.streaming(pos, &mut msg),
        }
    }
    drop(rx);
    let now = start.elapsed().as_millis() as u64;
    if interrupted {
        reducer::finish(&mut msg, Ending::Cancelled, now);
        if let Some(signal) = stop.ended_by() {
            msg.error = Some(reducer::signal_reason(signal));
        }
    } else if msg.is_live() {
        reducer::finish(&mut msg, Ending::Eof, now);
    }
    rec.done(pos, &msg);
    (msg, interrupted)
}

/// Says how many generated images the reply's image limits dropped, and why.
fn dropped_images_notice<S: TurnSink + ?Sized>(msg: &Message, sink: &mut S) {
    let mut why = msg.item_notes.values().filter_map(|n| n.get("dropped").and_then(serde_json::Value::as_str));
    if let Some(first) = why.next() {
        let n = 1 + why.count();
        sink.notice(&format!("{n} generated image{} not kept: {first}", if n == 1 { "" } else { "s" }));
    }
}
