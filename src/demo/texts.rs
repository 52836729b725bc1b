//! The fixed prose the scripted models say, kept apart so the scripts stay readable.

pub const DEMO_BODY: &str = r#"## A quick tour

This answer is **scripted**, so it looks the same every time. It streams a few words at a time, just like a real model would.

- **Bold** and *italic* text
- Inline `code` spans
- A table and a fenced code block

| Model | What it shows |
|---|---|
| `demo-tools` | Parallel tool calls |
| `demo-reasoning` | Reasoning before the answer |
| `demo-safety` | Content filtering |
| `demo-slow` | A long reply you can cancel |

```rust
fn main() {
    let turns = ["hello", "again"];
    for (i, turn) in turns.iter().enumerate() {
        println!("turn {}: {turn}", i + 1);
    }
}
```

Ask another question to see the turn counter go up."#;

pub const SLOW_BODY: &str = r#"## Why answers stream

A language model writes one token at a time. Streaming sends each token to you as soon as it exists, instead of making you wait for the whole reply. This reply is deliberately slow, so you have time to watch it arrive and to cancel it.

### What happens on the wire

1. The client sends a request with `"stream": true`.
2. The server answers with `text/event-stream` and keeps the connection open.
3. Every few milliseconds a small JSON frame arrives, carrying a **delta**: the next few characters of the answer.
4. A final frame says why the answer stopped, and `[DONE]` closes the stream.

### Why cancelling matters

Long answers cost time and tokens. If you can see early that an answer is going the wrong way, stopping it right away saves both. A good client drops the connection the moment you cancel, and a good server notices and stops generating.

### Things to try while this streams

- Scroll up and down: the view should stay where you put it.
- Cancel the reply and check that the partial text is kept.
- Resize the terminal and watch the text wrap again.
- Start typing your next message before this one finishes.

### A small table

| Pace | Feels like |
|---|---|
| 5 tokens/s | Reading aloud |
| 20 tokens/s | Skimming |
| 100 tokens/s | A wall of text |

### Closing thoughts

Streaming is not only about speed. It changes how a conversation feels: you read along, you think along, and you can step in. That is why every serious chat client streams, and why this demo model takes its time. If you are still reading, now is a good moment to press the cancel key and see what happens to this half-finished paragraph, which goes on a little longer than it needs to, just so there is something left to cancel."#;

pub const REASONING_ANSWER: &str = "I thought it over first: the reasoning above streamed separately from this answer.\n\n**Short answer:** reasoning arrives before the reply, and its tokens are reported as `reasoning_tokens` in the usage, even though you only pay attention to the answer.";

pub const ERROR_PREFIX: &str = "Let me start on that. Here is the first part of an answer that";

pub const NO_TOOLS: &str = "No tools were offered in this request, so I cannot call any. Enable tools in your client and ask again to see `list_directory`, `read_file` and `current_time` called in parallel.";

pub const TOOLS_OUTRO: &str = "That is the whole loop: I asked for the tools, your client ran them, and this answer was written from their output.";

/// The demo-safety reply, one phrase per chunk, with the violence severity Azure would
/// report for that chunk. The last phrase never arrives: the filter stops it.
pub const SAFETY_PHRASES: &[(&str, &str)] = &[
    ("I can describe the duel. ", "safe"),
    ("Here is the helper from that repository: `fn parry(blade: &Blade) -> Guard`. ", "safe"),
    ("The knight lunges, ", "low"),
    ("the blade strikes hard ", "medium"),
];

pub const HOSTED_ON_CHAT: &str = "`demo-hosted` is a **Responses API** model: its web search, code interpreter run, MCP calls and approval request are Responses output items, which Chat Completions has no way to carry.\n\nSwitch with `/api responses` (or start palaver with `--api responses`) and ask again.";

pub const FUTURE_ON_CHAT: &str = "`demo-future` is a **Responses API** model: its reply holds an output item and an event type that no API defines yet, to show that a client keeps what it does not know. Chat Completions has no place for either.\n\nSwitch with `/api responses` (or start palaver with `--api responses`) and ask again.";
