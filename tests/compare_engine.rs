//! Compare mode against a scripted HTTP server: four columns streaming at once through the real
//! client (`engine::turn::spawn_request`), their wire events folded by `State::apply` as the
//! app's loop would. Two columns answer, one gets a 429 and one stalls into an idle timeout;
//! the failures stay in their own columns, and on the follow-up each model's request carries
//! its own history (its own first answer; a failed turn left out).

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scripted;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::{Endpoint, Secret, endpoint_client};
use palaver::app::compare::{CompareEffect, CompareMsg};
use palaver::app::{Effect, Msg, State, TargetInfo};
use palaver::config::{Config, ProviderProfile};
use palaver::engine::message::MessageStatus;
use palaver::engine::target::TurnSettings;
use palaver::engine::turn::spawn_request;
use palaver::ui::theme::Theme;
use scripted::{Reply, Seen, Server};
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const MODELS: [&str; 4] = ["model-a", "model-b", "model-429", "model-stall"];
const PIECES: usize = 8;
const PAUSE: Duration = Duration::from_millis(40);

fn chunk(model: &str, text: &str) -> String {
    let v = serde_json::json!({"id":"c","object":"chat.completion.chunk","model":model,
        "choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]});
    format!("data: {v}\n\n")
}

fn done(model: &str) -> String {
    let v = serde_json::json!({"id":"c","object":"chat.completion.chunk","model":model,
        "choices":[{"index":0,"delta":{},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":10,"completion_tokens":PIECES,"total_tokens":10 + PIECES}});
    format!("data: {v}\n\ndata: [DONE]\n\n")
}

/// The answer of `model` to turn `turn`: "model-a answers turn 1" in eight pieces.
fn answer(model: &str, turn: usize) -> String {
    format!("{model} answers turn {turn} ")
}

/// Picks the reply from the request: its model, and which turn it is (its user messages).
fn respond(req: &Seen) -> Reply {
    let body: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or("").to_owned();
    let users: Vec<&Value> =
        body["messages"].as_array().map_or(Vec::new(), |m| m.iter().filter(|m| m["role"] == "user").collect());
    let turn = users.len();
    let first = users.last().is_some_and(|m| m["content"] == "first question");
    if model == "model-429" && first {
        return Reply::json(429, r#"{"error":{"message":"Rate limit reached","type":"rate_limit"}}"#)
            .header("Retry-After", "30");
    }
    let text = answer(&model, turn);
    let words: Vec<String> = text.split_inclusive(' ').map(str::to_owned).collect();
    let per = words.len().div_ceil(PIECES).max(1);
    let mut reply = Reply::sse("");
    reply.pieces.clear();
    for (i, part) in words.chunks(per).enumerate() {
        // The stalling model goes quiet after its first piece, past the idle timeout.
        let pause = if model == "model-stall" && first && i == 0 { Duration::from_secs(3) } else { PAUSE };
        reply = reply.then(&chunk(&model, &part.concat()), pause);
    }
    reply.then(&done(&model), Duration::ZERO)
}

fn state() -> State {
    let target = |m: &str| TargetInfo::new("scripted", m, Api::Chat);
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    let theme = Theme::load("dark", None, true).unwrap();
    let mut s = State::new(target(MODELS[0]), settings, Config::default(), theme, "dark");
    s.open_compare(MODELS.iter().map(|m| target(m)).collect()).unwrap();
    s
}

/// Carries out the compare effects as the app's column runner does: one task per request.
struct Harness {
    s: State,
    ep: Endpoint,
    http: reqwest::Client,
    tx: mpsc::UnboundedSender<Msg>,
    rx: mpsc::UnboundedReceiver<Msg>,
    clock: Instant,
    started: usize,
}

impl Harness {
    fn new(base_url: &str) -> Self {
        let mut ep = ProviderProfile::default().endpoint(base_url, Secret::default());
        ep.max_retries = 0;
        ep.timeouts.idle = Duration::from_millis(800);
        let http = endpoint_client(&ep).unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        Self { s: state(), ep, http, tx, rx, clock: Instant::now(), started: 0 }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap()
    }

    fn run(&mut self, fx: Vec<Effect>) {
        for e in fx {
            if let Effect::Compare(CompareEffect::Start { generation, column, id, api, body, .. }) = e {
                self.started += 1;
                let mut rx = spawn_request(self.http.clone(), self.ep.clone(), api, body);
                let tx = self.tx.clone();
                let clock = self.clock;
                let ms = move || u64::try_from(clock.elapsed().as_millis()).unwrap();
                let _ = tx.send(Msg::Compare(CompareMsg::Started { generation, column, id, now_ms: ms() }));
                tokio::spawn(async move {
                    while let Some(event) = rx.recv().await {
                        let msg = CompareMsg::Wire { generation, column, id, event: Box::new(event), now_ms: ms() };
                        if tx.send(Msg::Compare(msg)).is_err() {
                            break;
                        }
                    }
                });
            }
        }
    }

    /// Types a prompt, sends it, and applies messages until every column has settled; returns
    /// how long each column took to settle.
    async fn turn(&mut self, prompt: &str) -> Vec<Duration> {
        let start = Instant::now();
        let mut settled = vec![Duration::ZERO; MODELS.len()];
        for c in prompt.chars() {
            self.s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
        }
        let fx = self.s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        self.run(fx);
        assert!(self.s.compare.is_live());
        while self.s.compare.is_live() {
            let msg = tokio::time::timeout(Duration::from_secs(20), self.rx.recv()).await.unwrap().unwrap();
            let fx = self.s.apply(msg);
            self.run(fx);
            let now = self.now();
            self.s.apply(Msg::Tick { now_ms: now });
            for (i, t) in settled.iter_mut().enumerate() {
                if t.is_zero() && self.column(i).live.is_none() {
                    *t = start.elapsed();
                }
            }
        }
        settled
    }

    fn column(&self, i: usize) -> &palaver::app::compare::Column {
        &self.s.compare.active.as_ref().unwrap().columns[i]
    }
}

fn contents(req: &Seen) -> Vec<String> {
    let body: Value = serde_json::from_str(&req.body).unwrap();
    body["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap_or("").to_owned()).collect()
}

fn requests_of(server: &Server, model: &str) -> Vec<Seen> {
    server
        .requests()
        .into_iter()
        .filter(|r| serde_json::from_str::<Value>(&r.body).is_ok_and(|b| b["model"] == model))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_columns_stream_at_once_and_follow_ups_carry_their_own_history() {
    let server = Server::start_fn(respond);
    let mut h = Harness::new(&server.base_url);

    let settled = h.turn("first question").await;
    // Concurrent, not one after another: each healthy stream takes about PIECES × PAUSE, and
    // both are done well before two of them could have run back to back.
    let one = PAUSE * u32::try_from(PIECES).unwrap();
    let both = settled[0].max(settled[1]);
    assert!(both < one * 2, "the streams ran one after another: {settled:?} for {one:?} each");
    // The 429 answers at once; the stall ends at the idle timeout, after the others finished.
    assert!(settled[2] < one, "{settled:?}");
    assert!(settled[3] > both, "{settled:?}");
    for (i, model) in MODELS.iter().enumerate().take(2) {
        let m = h.column(i).last_reply().unwrap();
        assert_eq!(m.status, MessageStatus::Complete, "{model}");
        assert_eq!(m.text(), answer(model, 1));
        assert!(m.timing.ttft_ms.is_some() && m.usage.is_some());
    }
    // The 429 and the stall stay in their own columns.
    let failed = h.column(2).last_reply().unwrap();
    assert!(matches!(failed.status, MessageStatus::Failed | MessageStatus::Interrupted));
    assert_eq!(failed.error.as_ref().and_then(|e| e.status), Some(429));
    let stalled = h.column(3).last_reply().unwrap();
    assert!(matches!(stalled.status, MessageStatus::Failed | MessageStatus::Interrupted), "{stalled:?}");
    assert!(!stalled.text().is_empty(), "what arrived before the stall is kept");

    h.turn("second question").await;
    for (i, model) in MODELS.iter().enumerate() {
        let reqs = requests_of(&server, model);
        assert_eq!(reqs.len(), 2, "{model}: one request per turn");
        let second = contents(&reqs[1]);
        match i {
            // Each model's follow-up carries its own first answer, not another column's.
            0 | 1 => assert_eq!(second, ["first question", answer(model, 1).as_str(), "second question"]),
            // A failed turn is not part of that model's context.
            _ => assert_eq!(second, ["second question"], "{model}"),
        }
        let m = h.column(i).last_reply().unwrap();
        assert_eq!(m.status, MessageStatus::Complete, "{model} answers the follow-up");
    }
    assert_eq!(h.started, 8);
}
