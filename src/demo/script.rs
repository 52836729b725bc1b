//! The scripted models: what each one answers, independent of which API carries it.

use std::time::Duration;

use serde_json::{Value, json};

use super::filters;
use super::request::{Request, ToolResult};
use super::texts;

/// Normal models stream at this pace so the whole `demo` answer takes about a second.
pub const PACE: Duration = Duration::from_millis(15);
/// demo-slow is slow enough for a person to read along and cancel.
const SLOW_PACE: Duration = Duration::from_millis(140);

/// Read-only tools demo-tools knows how to call, with the arguments it calls them with.
const KNOWN_TOOLS: &[(&str, &str)] =
    &[("list_directory", r#"{"path":"."}"#), ("read_file", r#"{"path":"Cargo.toml"}"#), ("current_time", "{}")];

/// A streamed piece of answer text, with the Azure filter verdict for it when there is one.
#[derive(Debug, Clone)]
pub struct Piece {
    pub text: String,
    pub filter: Option<Value>,
}

#[derive(Debug, Clone)]
pub struct ToolCall {
    pub name: String,
    pub arguments: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Stop,
    ToolCalls,
    ContentFilter,
    /// The stream breaks off with an error frame instead of finishing.
    ServerError,
}

impl Ending {
    pub fn finish_reason(self) -> &'static str {
        match self {
            Ending::Stop | Ending::ServerError => "stop",
            Ending::ToolCalls => "tool_calls",
            Ending::ContentFilter => "content_filter",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub prompt: u64,
    pub cached: u64,
    pub completion: u64,
    pub reasoning: u64,
    pub accepted_prediction: u64,
    pub rejected_prediction: u64,
}

impl Usage {
    pub fn chat_json(&self) -> Value {
        json!({
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
            "prompt_tokens_details": { "cached_tokens": self.cached, "audio_tokens": 0 },
            "completion_tokens_details": {
                "reasoning_tokens": self.reasoning,
                "audio_tokens": 0,
                "accepted_prediction_tokens": self.accepted_prediction,
                "rejected_prediction_tokens": self.rejected_prediction,
            },
        })
    }

    /// Tokens of this prompt written to the cache for later requests (what was not read from it).
    fn cache_write(&self) -> u64 {
        if self.cached > 0 { self.prompt - self.cached } else { 0 }
    }

    pub fn responses_json(&self) -> Value {
        json!({
            "input_tokens": self.prompt,
            "input_tokens_details": { "cached_tokens": self.cached, "cache_write_tokens": self.cache_write() },
            "output_tokens": self.completion,
            "output_tokens_details": { "reasoning_tokens": self.reasoning },
            "total_tokens": self.prompt + self.completion,
        })
    }
}

#[derive(Debug, Clone)]
pub struct Script {
    pub reasoning: Vec<String>,
    pub text: Vec<Piece>,
    pub tool_calls: Vec<ToolCall>,
    pub ending: Ending,
    /// Azure's `prompt_filter_results`; its presence is what makes a reply Azure-flavoured.
    pub prompt_filter: Option<Value>,
    /// Filter verdict carried by the finish chunk (the one that stopped the reply).
    pub finish_filter: Option<Value>,
    pub pace: Duration,
    pub usage: Usage,
    /// Responses API output items sent before the answer (generated images); Chat has no place
    /// for them.
    pub items: Vec<Value>,
}

impl Script {
    pub fn text(&self) -> String {
        self.text.iter().map(|piece| piece.text.as_str()).collect()
    }

    pub fn reasoning_text(&self) -> String {
        self.reasoning.concat()
    }

    /// Whether replies carry Azure content-filter fields at all.
    pub fn azure(&self) -> bool {
        self.prompt_filter.is_some()
    }

    /// The verdict for the whole answer, as a non-streaming reply reports it.
    pub fn overall_filter(&self) -> Option<Value> {
        self.finish_filter.clone().or_else(|| self.text.iter().rev().find_map(|piece| piece.filter.clone()))
    }

    pub(super) fn plain(req: &Request, text: &str, pace: Duration) -> Script {
        Script {
            reasoning: Vec::new(),
            text: plain_pieces(text),
            tool_calls: Vec::new(),
            ending: Ending::Stop,
            prompt_filter: None,
            finish_filter: None,
            pace,
            usage: usage(req, tokens(text), 0),
            items: Vec::new(),
        }
    }
}

pub fn build(req: &Request) -> Script {
    match req.model.as_str() {
        "demo-tools" => tools(req),
        "demo-safety" => safety(req),
        "demo-reasoning" => reasoning(req),
        "demo-slow" => Script::plain(req, &format!("{}{}", preface(req), texts::SLOW_BODY), SLOW_PACE),
        "demo-error" => error(req),
        super::vision::MODEL => super::vision::script(req),
        // Its real answer is Responses output items (see `hosted`); Chat Completions gets this.
        "demo-hosted" => Script::plain(req, &format!("{}{}", preface(req), texts::HOSTED_ON_CHAT), PACE),
        "demo-future" => Script::plain(req, &format!("{}{}", preface(req), texts::FUTURE_ON_CHAT), PACE),
        _ => demo(req),
    }
}

fn demo(req: &Request) -> Script {
    let text = format!("{}{}", preface(req), texts::DEMO_BODY);
    let hidden_reasoning = 24;
    let mut usage = usage(req, tokens(&text) + hidden_reasoning, hidden_reasoning);
    // Deterministic stand-ins so every usage field has something to show.
    usage.cached = usage.prompt / 2;
    usage.accepted_prediction = 4;
    usage.rejected_prediction = 2;
    Script {
        text: split_words(&text, 2)
            .into_iter()
            .map(|text| Piece { text, filter: Some(filters::content_safe()) })
            .collect(),
        prompt_filter: Some(filters::prompt_safe()),
        usage,
        ..Script::plain(req, "", PACE)
    }
}

fn tools(req: &Request) -> Script {
    if !req.tool_results.is_empty() {
        return Script::plain(req, &tool_answer(req, &req.tool_results), PACE);
    }
    if req.offered_tools.is_empty() {
        return Script::plain(req, &format!("{}{}", preface(req), texts::NO_TOOLS), PACE);
    }
    let calls: Vec<ToolCall> = KNOWN_TOOLS
        .iter()
        .filter(|(name, _)| req.offered_tools.iter().any(|offered| offered == name))
        .map(|(name, arguments)| ToolCall { name: name.to_string(), arguments: arguments.to_string() })
        .collect();
    if calls.is_empty() {
        let offered: Vec<String> = req.offered_tools.iter().map(|name| format!("`{name}`")).collect();
        let text = format!(
            "{}The request offers {}, but this demo model only knows how to call `list_directory`, `read_file` and `current_time`, so I will not call anything.",
            preface(req),
            offered.join(", ")
        );
        return Script::plain(req, &text, PACE);
    }
    let completion = calls.iter().map(|call| 8 + call.arguments.len() as u64 / 3).sum();
    Script {
        ending: Ending::ToolCalls,
        usage: usage(req, completion, 0),
        tool_calls: calls,
        ..Script::plain(req, "", PACE)
    }
}

fn tool_answer(req: &Request, results: &[ToolResult]) -> String {
    let mut text = preface(req);
    text.push_str(&format!(
        "I called {} tool{} and got the results back:\n\n",
        results.len(),
        if results.len() == 1 { "" } else { "s" }
    ));
    for result in results {
        let first = result.output.lines().next().unwrap_or("").replace('`', "'");
        text.push_str(&format!(
            "- `{}` returned {} line{} ({} bytes); first line: `{}`\n",
            result.name,
            result.output.lines().count(),
            if result.output.lines().count() == 1 { "" } else { "s" },
            result.output.len(),
            truncate(first.trim(), 60),
        ));
    }
    text.push('\n');
    text.push_str(texts::TOOLS_OUTRO);
    text
}

fn safety(req: &Request) -> Script {
    let text: Vec<Piece> = texts::SAFETY_PHRASES
        .iter()
        .enumerate()
        .map(|(i, (phrase, violence))| {
            let citation = (i == 1).then(filters::github_citation);
            Piece { text: phrase.to_string(), filter: Some(filters::content(violence, citation)) }
        })
        .collect();
    let completion = text.iter().map(|piece| tokens(&piece.text)).sum();
    Script {
        text,
        ending: Ending::ContentFilter,
        prompt_filter: Some(filters::prompt_jailbreak()),
        finish_filter: Some(filters::content("high", None)),
        usage: usage(req, completion, 0),
        ..Script::plain(req, "", PACE)
    }
}

fn reasoning(req: &Request) -> Script {
    let thought = format!(
        "The user is on turn {} and wrote \u{201c}{}\u{201d}. I should show that thinking streams separately from the answer. First, acknowledge the message. Second, explain where reasoning tokens are counted. Third, keep the final answer short so the difference is easy to see.",
        req.user_turns.max(1),
        quote(req)
    );
    let text = format!("{}{}", preface(req), texts::REASONING_ANSWER);
    let hidden = tokens(&thought);
    Script {
        reasoning: split_words(&thought, 2),
        usage: usage(req, tokens(&text) + hidden, hidden),
        ..Script::plain(req, &text, PACE)
    }
}

fn error(req: &Request) -> Script {
    Script { ending: Ending::ServerError, ..Script::plain(req, texts::ERROR_PREFIX, PACE) }
}

/// The opening line that makes every answer visibly depend on the conversation.
pub fn preface(req: &Request) -> String {
    match req.last_user_text {
        Some(_) => format!("> Turn {} \u{b7} you said: \u{201c}{}\u{201d}\n\n", req.user_turns, quote(req)),
        None => "> Turn 0 \u{b7} I found no user message in this request.\n\n".to_string(),
    }
}

pub fn quote(req: &Request) -> String {
    let text = req.last_user_text.as_deref().unwrap_or("");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate(&flat, 60)
}

fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max_chars).collect();
    cut.push('\u{2026}');
    cut
}

/// Token counts follow the usual rule of thumb (≈ 4 bytes or ¾ word per token) so they
/// scale with the conversation yet stay deterministic.
pub fn usage(req: &Request, completion: u64, reasoning: u64) -> Usage {
    Usage {
        prompt: (req.size_bytes as u64).div_ceil(4).max(1),
        completion: completion.max(1),
        reasoning,
        ..Usage::default()
    }
}

pub fn tokens(text: &str) -> u64 {
    (text.split_whitespace().count() as u64 * 4).div_ceil(3)
}

fn plain_pieces(text: &str) -> Vec<Piece> {
    split_words(text, 2).into_iter().map(|text| Piece { text, filter: None }).collect()
}

/// Splits text into pieces of `words` words each, keeping every character (whitespace and
/// newlines included) so the pieces concatenate back to the exact text.
pub fn split_words(text: &str, words: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut count = 0;
    let mut in_space = false;
    for ch in text.chars() {
        let space = ch.is_whitespace();
        if in_space && !space {
            count += 1;
            if count == words {
                pieces.push(std::mem::take(&mut current));
                count = 0;
            }
        }
        in_space = space;
        current.push(ch);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Splits tool-call arguments the way OpenAI streams them: a few characters per fragment.
pub fn split_arguments(arguments: &str) -> Vec<String> {
    let chars: Vec<char> = arguments.chars().collect();
    chars.chunks(4).map(|chunk| chunk.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_words_round_trips() {
        let text = "## Title\n\n- one two\n```rust\nfn x() {}\n```";
        let pieces = split_words(text, 2);
        assert!(pieces.len() > 3);
        assert_eq!(pieces.concat(), text);
        assert_eq!(split_arguments(r#"{"path":"."}"#).concat(), r#"{"path":"."}"#);
    }

    #[test]
    fn truncate_marks_the_cut() {
        assert_eq!(truncate("abcdef", 3), "abc\u{2026}");
        assert_eq!(truncate("abc", 3), "abc");
    }
}
