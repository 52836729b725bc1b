//! How often a reply that is still streaming is saved. Every checkpoint copies and rewrites the
//! whole reply, so its pace follows the reply's weight: its text and every item payload it holds
//! (generated images are base64 of up to tens of MB each). Without the payloads in the weight,
//! a reply holding 60 MB of images was cloned and serialised four to ten times a second, and
//! its peak memory was a multiple of what it kept. One rule for the chat screen and headless.

use super::images;
use super::message::Message;

/// Bytes a checkpoint of `msg` rewrites: the main choice's text, every tool call's arguments and
/// every item's image payload.
#[must_use]
pub fn weight(msg: &Message) -> usize {
    let main = msg.main();
    let calls: usize = main.tool_calls.iter().map(|c| c.arguments.len()).sum();
    let payloads: usize = msg.items.iter().filter_map(images::payload).map(str::len).sum();
    main.content.len() + main.reasoning.len() + main.refusal.len() + calls + payloads
}

/// The time between two checkpoints of a streaming `msg`, in ms: `floor_ms`, or one ms per KiB
/// of its [`weight`] when that is longer.
#[must_use]
pub fn interval_ms(msg: &Message, floor_ms: u64) -> u64 {
    floor_ms.max(weight(msg) as u64 / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_and_text_both_slow_the_checkpoints() {
        let mut m = Message::default();
        assert_eq!(interval_ms(&m, 100), 100);
        m.main_mut().content = "x".repeat(512 * 1024);
        assert_eq!(interval_ms(&m, 100), 512);
        m.items.push(serde_json::json!({"type": "image_generation_call", "result": "A".repeat(20 << 20)}));
        assert_eq!(interval_ms(&m, 100), 512 + 20 * 1024);
        // An item without a payload weighs nothing here.
        m.items.push(serde_json::json!({"type": "message", "content": []}));
        assert_eq!(interval_ms(&m, 100), 512 + 20 * 1024);
    }
}
