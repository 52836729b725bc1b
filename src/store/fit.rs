//! The store never refuses a write for size: a message too big for a row (SQLite refuses
//! strings and blobs past its length limit, and a huge row costs its size again in every
//! save) is stored cut, each cut marked with what was dropped. Only the writer's own copy of
//! the message is cut; what the user sees in memory is whole.

use crate::engine::message::Message;
use serde_json::Value;

/// The most of one text field (a reply's content, a tool call's arguments or output, one
/// output item) kept in the store. Far past the default limits on what a reply may hold.
pub const FIELD_BYTES: usize = 16 * 1024 * 1024;

/// Cuts `s` to `max` bytes (on a character boundary) and marks the cut.
fn cut(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let total = s.len();
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push_str(&format!("\n[palaver stored only the first {end} of {total} bytes of this text]"));
}

/// Makes the message fit a row: every text field at most `max` bytes, every output item too.
pub fn fit(msg: &mut Message, max: usize) {
    for c in &mut msg.choices {
        cut(&mut c.content, max);
        cut(&mut c.reasoning, max);
        cut(&mut c.refusal, max);
        for t in &mut c.tool_calls {
            cut(&mut t.arguments, max);
            if let Some(o) = t.output.as_mut() {
                cut(o, max);
            }
        }
    }
    for item in &mut msg.items {
        // Only a large item is measured (serialising every item on every save would cost more
        // than the saving): a string field is the only way an item gets large.
        let big = item.as_object().is_some_and(|o| o.values().any(|v| v.as_str().is_some_and(|s| s.len() > max)));
        if big {
            let size = item.to_string().len();
            let kind = item.get("type").cloned().unwrap_or(Value::Null);
            *item = serde_json::json!({"type": kind, "palaver_not_stored": format!("this item was {size} bytes, more than the store keeps ({max})")});
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_big_fields_are_cut_and_marked() {
        let mut m = Message::user(&"é".repeat(100));
        m.items.push(serde_json::json!({"type": "image_generation_call", "result": "x".repeat(500)}));
        m.items.push(serde_json::json!({"type": "message", "content": []}));
        fit(&mut m, 51);
        let text = m.text();
        assert!(text.starts_with(&"é".repeat(25)) && text.contains("first 50 of 200 bytes"), "{text}");
        assert!(m.items[0]["palaver_not_stored"].as_str().is_some_and(|s| s.contains("bytes")));
        assert_eq!(m.items[1]["type"], "message");
    }
}
