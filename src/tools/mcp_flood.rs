//! The budget on what an MCP server may ask of palaver: its own requests (`ping`, `roots/list`,
//! `sampling/createMessage`, `elicitation/create`) per tool call and per minute, and its
//! sampling requests per call and per session. A server once sent a million pings during one
//! call and held palaver at 4.1 GB: rmcp starts a task for every request it reads and another for
//! every answer it writes, with no bound, and answers to a server that does not read its stdin
//! wait in memory forever.
//!
//! [`Gate`] sits between the transport and rmcp. Within the budget a request passes; past it
//! palaver answers it with a JSON-RPC error naming the budget, without handing it to rmcp; when
//! the flood goes on past [`MCP_REFUSED_REQUESTS`] refusals, or [`MCP_PENDING_ANSWERS`] answers
//! wait to be written (the server does not read them), the connection is cut with the reason, as
//! at `MCP_MESSAGE_BYTES`, and the running call ends with it. So what one session holds is
//! bounded by these counts, whatever the server sends.

use super::Overflow;
use rmcp::RoleClient;
use rmcp::model::{ErrorCode, ErrorData, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Requests a server may send palaver during one tool call.
pub const MCP_SERVER_REQUESTS_PER_CALL: u32 = 100;

/// Requests a server may send palaver in one minute, calls or not.
pub const MCP_SERVER_REQUESTS_PER_MINUTE: u32 = 300;

/// Requests refused for the budget, in a call or a minute, past which the connection is cut.
pub const MCP_REFUSED_REQUESTS: u32 = 100;

/// Answers to the server's requests waiting to be written, past which the connection is cut (a
/// server that sends requests and does not read the answers).
pub const MCP_PENDING_ANSWERS: usize = 64;

/// Sampling requests a server may make during one tool call.
pub const MCP_SAMPLES_PER_CALL: u32 = 10;

/// Sampling requests a server may make in one palaver session.
pub const MCP_SAMPLES_PER_SERVER: u32 = 100;

const MINUTE: Duration = Duration::from_secs(60);

/// What a server asked of palaver so far.
#[derive(Debug)]
struct Counts {
    /// Requests since the last call started.
    call: u32,
    /// Requests in the current minute, and when it started.
    minute: u32,
    minute_from: Instant,
    /// Requests refused since the last call started or the minute turned.
    refused: u32,
    samples_call: u32,
    samples_total: u32,
}

/// A server's budget, shared by its transport's [`Gate`], its handler and its client.
#[derive(Debug)]
pub struct Budget(Mutex<Counts>);

impl Default for Budget {
    fn default() -> Self {
        let counts =
            Counts { call: 0, minute: 0, minute_from: Instant::now(), refused: 0, samples_call: 0, samples_total: 0 };
        Self(Mutex::new(counts))
    }
}

/// What becomes of one request of the server.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Admit {
    Pass,
    /// Answered with this error, not handed on.
    Refuse(String),
    /// Refused without an answer (answers wait to be written already).
    Drop,
    /// The connection is cut, for this reason.
    Cut(String),
}

impl Budget {
    /// A tool call starts: the per-call counts start again.
    pub fn call_started(&self) {
        let mut c = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        c.call = 0;
        c.refused = 0;
        c.samples_call = 0;
    }

    /// Counts one request of the server, at `now`; `deaf`: [`MCP_PENDING_ANSWERS`] answers
    /// wait to be written, so it cannot pass.
    pub(super) fn admit(&self, now: Instant, deaf: bool) -> Admit {
        let mut c = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if now.duration_since(c.minute_from) >= MINUTE {
            c.minute_from = now;
            c.minute = 0;
            c.refused = 0;
        }
        let over = if deaf {
            format!(
                "requests while {MCP_PENDING_ANSWERS} of palaver's answers waited to be written \
                 (MCP_PENDING_ANSWERS)"
            )
        } else if c.call >= MCP_SERVER_REQUESTS_PER_CALL {
            format!(
                "more than {MCP_SERVER_REQUESTS_PER_CALL} requests during one tool call (MCP_SERVER_REQUESTS_PER_CALL)"
            )
        } else if c.minute >= MCP_SERVER_REQUESTS_PER_MINUTE {
            format!("more than {MCP_SERVER_REQUESTS_PER_MINUTE} requests in a minute (MCP_SERVER_REQUESTS_PER_MINUTE)")
        } else {
            c.call += 1;
            c.minute += 1;
            return Admit::Pass;
        };
        if c.refused >= MCP_REFUSED_REQUESTS {
            return Admit::Cut(format!(
                "it sent {over} and went on after {MCP_REFUSED_REQUESTS} of them were refused \
                 (MCP_REFUSED_REQUESTS); palaver closed the connection"
            ));
        }
        c.refused += 1;
        if deaf {
            return Admit::Drop;
        }
        Admit::Refuse(format!("palaver refused this request: the server sent {over}"))
    }

    /// Counts one sampling request; `Err` says which budget it passed.
    ///
    /// # Errors
    /// The words for the server when a sampling budget is spent.
    pub fn sample(&self) -> Result<(), String> {
        let mut c = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if c.samples_call >= MCP_SAMPLES_PER_CALL {
            return Err(format!(
                "palaver refused this sampling request: the server already made {MCP_SAMPLES_PER_CALL} during this \
                 tool call (MCP_SAMPLES_PER_CALL)"
            ));
        }
        if c.samples_total >= MCP_SAMPLES_PER_SERVER {
            return Err(format!(
                "palaver refused this sampling request: the server already made {MCP_SAMPLES_PER_SERVER} in this \
                 session (MCP_SAMPLES_PER_SERVER)"
            ));
        }
        c.samples_call += 1;
        c.samples_total += 1;
        Ok(())
    }
}

/// Answers being written, counted down when each is written (or dropped).
#[derive(Clone, Default)]
struct Pending(Arc<AtomicUsize>);

struct PendingGuard(Arc<AtomicUsize>);

impl Pending {
    fn enter(&self) -> PendingGuard {
        self.0.fetch_add(1, Ordering::SeqCst);
        PendingGuard(self.0.clone())
    }

    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A transport that counts the server's requests against its [`Budget`] (see the module).
pub(super) struct Gate<T> {
    inner: T,
    budget: Arc<Budget>,
    over: Overflow,
    pending: Pending,
}

impl<T> Gate<T> {
    pub(super) fn new(inner: T, budget: Arc<Budget>, over: Overflow) -> Self {
        Self { inner, budget, over, pending: Pending::default() }
    }
}

/// Whether a message palaver sends answers the server (rather than asking it something).
fn is_answer(m: &TxJsonRpcMessage<RoleClient>) -> bool {
    matches!(m, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_))
}

impl<T: Transport<RoleClient> + 'static> Transport<RoleClient> for Gate<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let guard = is_answer(&item).then(|| self.pending.enter());
        let sending = self.inner.send(item);
        async move {
            let sent = sending.await;
            drop(guard);
            sent
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if self.over.reason().is_some() {
                return None;
            }
            let message = self.inner.receive().await?;
            let JsonRpcMessage::Request(request) = &message else { return Some(message) };
            // Answers the server has not taken yet: the request is dropped unanswered (another answer
            // would wait in memory too), and counted as refused.
            let deaf = self.pending.count() >= MCP_PENDING_ANSWERS;
            match self.budget.admit(Instant::now(), deaf) {
                Admit::Pass => return Some(message),
                Admit::Drop => {}
                Admit::Refuse(why) => {
                    let error = ErrorData::new(ErrorCode(-32000), why, None);
                    let guard = self.pending.enter();
                    let sending = self.inner.send(JsonRpcMessage::error(error, Some(request.id.clone())));
                    // Written beside the session's own answers; counted while it waits.
                    tokio::spawn(async move {
                        let _ = sending.await;
                        drop(guard);
                    });
                }
                Admit::Cut(why) => {
                    self.over.refuse(&why);
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_pass_within_the_call_budget_then_are_refused_then_cut() {
        let b = Budget::default();
        let now = Instant::now();
        for _ in 0..MCP_SERVER_REQUESTS_PER_CALL {
            assert_eq!(b.admit(now, false), Admit::Pass);
        }
        let Admit::Refuse(why) = b.admit(now, false) else { panic!("refused past the budget") };
        assert!(why.contains("MCP_SERVER_REQUESTS_PER_CALL") && why.contains("100 requests"), "{why}");
        for _ in 1..MCP_REFUSED_REQUESTS {
            assert!(matches!(b.admit(now, false), Admit::Refuse(_)));
        }
        let Admit::Cut(why) = b.admit(now, false) else { panic!("cut past the refusals") };
        assert!(why.contains("MCP_REFUSED_REQUESTS") && why.contains("closed the connection"), "{why}");
        // A new call starts its own count.
        b.call_started();
        assert_eq!(b.admit(now, false), Admit::Pass);
        // A server that does not take the answers gets none, and is cut all the same.
        b.call_started();
        for _ in 0..MCP_REFUSED_REQUESTS {
            assert_eq!(b.admit(now, true), Admit::Drop);
        }
        let Admit::Cut(why) = b.admit(now, true) else { panic!("cut past the refusals") };
        assert!(why.contains("MCP_PENDING_ANSWERS"), "{why}");
    }

    #[test]
    fn the_minute_budget_holds_across_calls_and_turns_with_the_minute() {
        let b = Budget::default();
        let now = Instant::now();
        for i in 0..MCP_SERVER_REQUESTS_PER_MINUTE {
            if i % 50 == 0 {
                b.call_started();
            }
            assert_eq!(b.admit(now, false), Admit::Pass);
        }
        b.call_started();
        let Admit::Refuse(why) = b.admit(now, false) else { panic!("refused past the minute's budget") };
        assert!(why.contains("MCP_SERVER_REQUESTS_PER_MINUTE"), "{why}");
        assert_eq!(b.admit(now + MINUTE, false), Admit::Pass);
    }

    #[test]
    fn sampling_is_counted_per_call_and_per_session() {
        let b = Budget::default();
        for _ in 0..MCP_SAMPLES_PER_CALL {
            assert_eq!(b.sample(), Ok(()));
        }
        assert!(b.sample().unwrap_err().contains("MCP_SAMPLES_PER_CALL"));
        let mut total = MCP_SAMPLES_PER_CALL;
        while total < MCP_SAMPLES_PER_SERVER {
            b.call_started();
            for _ in 0..MCP_SAMPLES_PER_CALL.min(MCP_SAMPLES_PER_SERVER - total) {
                assert_eq!(b.sample(), Ok(()));
                total += 1;
            }
        }
        b.call_started();
        assert!(b.sample().unwrap_err().contains("MCP_SAMPLES_PER_SERVER"));
    }
}
