//! Headless compaction and context: `--continue --compact` summarises the earlier turns through
//! the same request path as a turn (the summary is stored as a marked reply; the turns stay),
//! a warning on stderr before a request that will not fit the window, and the result line's
//! `context`.

use super::headless::Printer;
use super::target::Target;
use crate::config::Config;
use crate::engine::compact::{self, Compaction};
use crate::engine::compact_fit;
use crate::engine::message::Message;
use crate::engine::request::{RequestOptions, build_body};
use crate::runs::recorder::Recorder;
use crate::runs::turn::stream_reply;
use serde_json::{Value, json};

/// Summarises `history` (the reopened turns, then the prompt) with `opts` (the turn's request
/// options, less its tools and its `--max-tokens`: the summary has its own budget,
/// `compact_max_tokens`) before the prompt's turn, its request fitted into `window`: the
/// summary is stored where the prompt was and the prompt after it. Nothing to compact is a
/// note, not a failure. Returns the failed summary when it did not take effect (the prompt is
/// then stored after it, not sent).
///
/// # Errors
/// The summary reply, when it failed, was cancelled or came back empty.
#[allow(clippy::too_many_arguments)]
pub async fn compact_first(
    t: &Target,
    cfg: &Config,
    http: &reqwest::Client,
    history: &mut Vec<Message>,
    rec: &mut Recorder,
    json: bool,
    mut opts: RequestOptions,
    window: Option<u64>,
) -> Result<(), Message> {
    let Some(user) = history.pop() else { return Ok(()) };
    // Failed turns are never sent, so the summary does not stand for them either.
    let turns = compact::turns(&compact::sendable(history.iter()).0);
    if turns == 0 {
        say!("--compact: nothing to compact yet; the prompt goes as it is");
        history.push(user);
        return Ok(());
    }
    let pos = history.len();
    let tokens_before = compact::context_tokens(history, opts.system.as_deref());
    let ask = compact::ask(cfg.compact_prompt(), None);
    // A summary is text: tools would invite a call instead.
    opts.tools.clear();
    let budget = compact_fit::budget(cfg.compact_max_tokens, window);
    let fitted = compact_fit::summary_request(history, &ask, opts.system.as_deref(), window, budget);
    if let Some(n) = fitted.trimmed.notice() {
        say!("{n}");
    }
    opts.max_tokens = Some(fitted.max_tokens);
    let body = build_body(t.api, &fitted.messages, &opts);
    drop(fitted);
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
    let cut = compact::cut(summary);
    if json {
        let line = json!({"type": "compaction", "turns": turns, "tokens_before": tokens_before,
            "tokens_after": after, "summary": summary.text(), "cut": cut});
        let mut p = Printer::new(true);
        p.line(&line.to_string());
        p.flush();
    } else {
        say!(
            "compacted {turns} turn{} ({} → {} tokens){}; the originals stay in the history",
            if turns == 1 { "" } else { "s" },
            crate::text::fmt::thousands(tokens_before),
            crate::text::fmt::thousands(after),
            if cut { ", the summary cut at its token budget (compact_max_tokens) and kept as it is" } else { "" }
        );
    }
    Ok(())
}

/// Says on stderr, in one line, when the request leaves failed turns out: a prompt whose reply
/// failed (over the window, refused) is not sent again with every later prompt.
pub fn note_failed_turns(history: &[Message]) {
    let (_, failed) = compact::sendable(history);
    if failed > 0 {
        say!(
            "{failed} earlier turn{} that failed {} left out of this request (still in the history)",
            if failed == 1 { "" } else { "s" },
            if failed == 1 { "is" } else { "are" }
        );
    }
}

/// Says on stderr when the request about to go (the conversation, the prompt and its
/// attachments, estimated) is larger than the model's window. It still goes: the estimate is
/// rough and the server is the judge; a script that wants it to fit compacts first.
pub fn warn_overflow(history: &[Message], system: Option<&str>, window: Option<u64>) {
    let Some(window) = window else { return };
    let next = compact::context_tokens(history, system);
    let own = history.last().map_or(0, compact::message_tokens);
    // Compacting helps only when the earlier turns are what does not fit.
    let what = if own > window {
        "the prompt alone is over it: shorten it or send less"
    } else {
        "--continue --compact summarises the earlier turns first"
    };
    if next > window {
        say!(
            "this request is about {} tokens, over the model's {} token window: sending it anyway (the server \
             may refuse it or cut it); {what}",
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
