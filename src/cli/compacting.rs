//! Headless compaction and context: `--continue --compact` summarises the earlier turns through
//! the same request path as a turn (the summary is stored as a marked reply; the turns stay),
//! a warning on stderr before a request that will not fit the window, and the result line's
//! `context`.

use super::headless::Printer;
use super::target::Target;
use crate::config::Config;
use crate::engine::compact::{self, Compaction};
use crate::engine::message::Message;
use crate::engine::request::{RequestOptions, build_body};
use crate::runs::recorder::Recorder;
use crate::runs::turn::stream_reply;
use serde_json::{Value, json};

/// Summarises `history` (the reopened turns, then the prompt) with `opts` (the turn's request
/// options) before the prompt's turn: the
/// summary is stored where the prompt was and the prompt after it. Nothing to compact is a
/// note, not a failure. Returns the failed summary when it did not take effect (the prompt is
/// then stored after it, not sent).
///
/// # Errors
/// The summary reply, when it failed, was cancelled or came back cut or empty.
pub async fn compact_first(
    t: &Target,
    cfg: &Config,
    http: &reqwest::Client,
    history: &mut Vec<Message>,
    rec: &mut Recorder,
    json: bool,
    mut opts: RequestOptions,
) -> Result<(), Message> {
    let Some(user) = history.pop() else { return Ok(()) };
    let turns = compact::turns(history);
    if turns == 0 {
        say!("--compact: nothing to compact yet; the prompt goes as it is");
        history.push(user);
        return Ok(());
    }
    let pos = history.len();
    let tokens_before = compact::context_tokens(history, opts.system.as_deref());
    let ask = compact::ask(cfg.compact_prompt(), None);
    // The turn's own options (stream, max tokens, system prompt…), without tools: a summary
    // is text.
    opts.tools.clear();
    let body = build_body(t.api, &compact::request(history, &ask), &opts);
    let mut quiet = Printer::quiet(json);
    let (mut summary, _) = stream_reply(http, t, body, &mut quiet, rec, pos, super::interrupt::stop()).await;
    summary.compaction = Some(Compaction { turns, tokens_before, auto: false, instructions: None });
    rec.done(pos, &summary);
    let ok = compact::effective(&summary);
    history.push(summary);
    history.push(user);
    rec.save_all(pos + 1, &history[pos + 1..]);
    let summary = &history[pos];
    if !ok {
        return Err(summary.clone());
    }
    let after = compact::context_tokens(&history[..=pos], opts.system.as_deref());
    if json {
        let line = json!({"type": "compaction", "turns": turns, "tokens_before": tokens_before,
            "tokens_after": after, "summary": summary.text()});
        let mut p = Printer::new(true);
        p.line(&line.to_string());
        p.flush();
    } else {
        say!(
            "compacted {turns} turn{} ({} → {} tokens); the originals stay in the history",
            if turns == 1 { "" } else { "s" },
            crate::text::fmt::thousands(tokens_before),
            crate::text::fmt::thousands(after)
        );
    }
    Ok(())
}

/// Says on stderr when the request about to go (the conversation, the prompt and its
/// attachments, estimated) is larger than the model's window. It still goes: the estimate is
/// rough and the server is the judge; a script that wants it to fit compacts first.
pub fn warn_overflow(history: &[Message], system: Option<&str>, window: Option<u64>) {
    let Some(window) = window else { return };
    let next = compact::context_tokens(history, system);
    if next > window {
        say!(
            "this request is about {} tokens, over the model's {} token window: sending it anyway (the server \
             may refuse it or cut it); --continue --compact summarises the earlier turns first",
            crate::text::fmt::thousands(next),
            crate::text::fmt::thousands(window)
        );
    }
}

/// The result line's `context`: the next request's tokens (the reply's count as the provider
/// made it, else estimated) against the window; `null` when the window is unknown.
#[must_use]
pub fn context_json(history: &[Message], reply: &Message, system: Option<&str>, window: Option<u64>) -> Value {
    let Some(window) = window else { return Value::Null };
    let mut all: Vec<&Message> = history.iter().collect();
    if !history.last().is_some_and(|m| std::ptr::eq(m, reply)) {
        all.push(reply);
    }
    json!({"used": compact::context_tokens(&all, system), "window": window})
}
