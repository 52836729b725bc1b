//! Images a provider generated (`image_generation_call` items carry the PNG as base64, and a
//! `code_interpreter_call` may carry image outputs as data URIs): saved to `<data dir>/images/`
//! so the user can open them and the transcript can draw them; the path is noted beside the item.

use super::message::Message;
use crate::api::limits::ImageBudget;
use base64::Engine as _;
use std::path::Path;

/// Saves every generated image of `msg` not saved yet; returns how many were saved and notices
/// for failures.
pub fn save_generated_images(msg: &mut Message, data_dir: &Path) -> (usize, Vec<String>) {
    let mut notices = Vec::new();
    let mut saved = 0;
    let dir = data_dir.join("images");
    for (i, item) in msg.items.iter().enumerate() {
        let Some(b64) = payload(item) else { continue };
        let index = i as u32;
        if msg.item_notes.get(&index).is_some_and(|n| n.contains_key("saved_path")) {
            continue;
        }
        let id = item.get("id").and_then(|v| v.as_str()).unwrap_or("image");
        // Ids come from the network: keep only characters that are safe in a file name.
        let safe: String =
            id.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_')).take(80).collect();
        let bytes = match base64::engine::general_purpose::STANDARD.decode(b64.trim()) {
            Ok(b) => b,
            Err(e) => {
                notices.push(format!("the generated image {id} is not valid base64: {e}"));
                continue;
            }
        };
        // Named by the bytes (two images never share a file; the same image is saved once),
        // the id after the hash so the user can tell them apart.
        let hash = super::attachment::sha256_hex(&bytes);
        let path = dir.join(format!("{hash}-{}.png", if safe.is_empty() { "image" } else { &safe }));
        match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, bytes)) {
            Ok(()) => {
                let note = msg.item_notes.entry(index).or_default();
                note.insert("saved_path".into(), serde_json::Value::String(path.display().to_string()));
                saved += 1;
            }
            Err(e) => notices.push(format!("cannot save the generated image to {}: {e}", path.display())),
        }
    }
    (saved, notices)
}

/// The image budget left in reply `msg` under `limits`: its generated images and the images
/// its tool calls already hold (but call `skip`'s, about to be replaced) are counted in.
#[must_use]
pub fn reply_image_budget(limits: crate::api::limits::Limits, msg: &Message, skip: Option<usize>) -> ImageBudget {
    let mut budget = ImageBudget::new(limits);
    for b64 in msg.items.iter().filter_map(payload) {
        budget.hold(b64.len());
    }
    let calls = msg.main().tool_calls.iter().enumerate().filter(|(i, _)| Some(*i) != skip);
    for image in calls.flat_map(|(_, call)| &call.images) {
        budget.hold(ImageBudget::base64_len(usize::try_from(image.size).unwrap_or(usize::MAX)));
    }
    budget
}

/// The base64 image an output item carries, if any: an `image_generation_call`'s `result`, or
/// the first image output of a `code_interpreter_call` given as a data URI.
#[must_use]
pub fn payload(item: &serde_json::Value) -> Option<&str> {
    match item.get("type").and_then(|t| t.as_str())? {
        "image_generation_call" => item.get("result").and_then(|r| r.as_str()).filter(|r| !r.is_empty()),
        "code_interpreter_call" => item.get("outputs")?.as_array()?.iter().find_map(|o| {
            let url = o
                .get("url")
                .and_then(|u| u.as_str())
                .filter(|_| o.get("type").and_then(|t| t.as_str()) == Some("image"))?;
            data_uri_base64(url)
        }),
        // A computer-use screenshot (`computer_screenshot` with an `image_url`), as a provider
        // echoes it or a stored conversation holds it.
        "computer_call_output" => data_uri_base64(item.get("output")?.get("image_url")?.as_str()?),
        _ => None,
    }
}

/// The base64 of an image data URI.
fn data_uri_base64(url: &str) -> Option<&str> {
    url.strip_prefix("data:image/").and_then(|rest| rest.split_once(";base64,")).map(|(_, b64)| b64)
}

/// A `saved_path` from a message's notes as a path to read or open: only when it is a file
/// inside `<data dir>/images/` once links and `..` are resolved (the notes come from the
/// message's JSON, which an import can carry from anywhere). `None`: ignore it.
#[must_use]
pub fn saved_image(path: &str) -> Option<std::path::PathBuf> {
    saved_image_in(path, &crate::config::Paths::from_env().data_dir)
}

/// [`saved_image`] with the data dir given.
#[must_use]
pub fn saved_image_in(path: &str, data_dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let dir = data_dir.join("images").canonicalize().ok()?;
    let p = std::path::Path::new(path).canonicalize().ok()?;
    (p.starts_with(&dir) && p != dir && p.is_file()).then_some(p)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read what they wrote
mod tests {
    use super::*;

    #[test]
    fn a_reply_s_image_budget_counts_its_generated_images_and_its_other_calls_images() {
        let limits = crate::api::limits::Limits { images_per_reply: 2, ..Default::default() };
        let mut m = Message::assistant_pending();
        m.items.push(serde_json::json!({"type": "image_generation_call", "id": "ig", "result": "AAAA"}));
        // An item whose image was dropped holds nothing.
        m.items.push(serde_json::json!({"type": "image_generation_call", "id": "ig2", "result": ""}));
        let png = base64::engine::general_purpose::STANDARD
            .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
            .unwrap_or_default();
        let images = super::super::attachment::from_tool_images(
            "t",
            vec![crate::tools::ToolImage { media_type: "image/png".into(), bytes: png }],
        );
        assert_eq!(images.len(), 1);
        m.main_mut().tool_calls.push(super::super::message::ToolCall { images, ..Default::default() });
        // Two images held: the count is full.
        assert!(reply_image_budget(limits, &m, None).take(1).is_err());
        // The call about to be replaced does not count: room for one.
        let mut budget = reply_image_budget(limits, &m, Some(0));
        assert!(budget.take(1).is_ok() && budget.take(1).is_err());
    }

    #[test]
    fn every_kind_of_image_output_is_found() {
        use serde_json::json;
        assert_eq!(payload(&json!({"type": "image_generation_call", "result": "QUJD"})), Some("QUJD"));
        let ci = json!({"type": "code_interpreter_call", "outputs": [{"type": "logs", "logs": "x"}, {"type": "image", "url": "data:image/png;base64,QUJD"}]});
        assert_eq!(payload(&ci), Some("QUJD"));
        let shot = json!({"type": "computer_call_output", "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,QUJD"}});
        assert_eq!(payload(&shot), Some("QUJD"));
        assert_eq!(
            payload(
                &json!({"type": "code_interpreter_call", "outputs": [{"type": "image", "url": "https://x/y.png"}]})
            ),
            None
        );
        assert_eq!(payload(&json!({"type": "message"})), None);
    }

    #[test]
    fn saves_and_notes_the_path() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut m = Message::assistant_pending();
        m.items.push(serde_json::json!({"type": "image_generation_call", "id": "ig_1/../x", "result": "iVBORw0KGgo="}));
        assert_eq!(save_generated_images(&mut m, dir.path()), (1, Vec::new()));
        let p = m.item_notes[&0]["saved_path"].as_str().unwrap_or_default().to_owned();
        let hash = crate::engine::attachment::sha256_hex(b"\x89PNG\r\n\x1a\n");
        assert!(p.ends_with(&format!("images/{hash}-ig_1x.png")), "{p}");
        assert_eq!(std::fs::read(&p).map(|b| b.len()).unwrap_or(0), 8);
    }

    #[test]
    fn images_with_the_same_id_or_none_keep_their_own_files() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut m = Message::assistant_pending();
        for b64 in ["QUJD", "REVG", "R0hJ"] {
            m.items.push(serde_json::json!({"type": "image_generation_call", "id": "ig_1", "result": b64}));
        }
        m.items.push(serde_json::json!({"type": "image_generation_call", "result": "SktM"}));
        assert_eq!(save_generated_images(&mut m, dir.path()).0, 4);
        let paths: std::collections::HashSet<String> =
            m.item_notes.values().map(|n| n["saved_path"].as_str().unwrap_or_default().to_owned()).collect();
        assert_eq!(paths.len(), 4);
        for (i, want) in [(0, "ABC"), (1, "DEF"), (2, "GHI"), (3, "JKL")] {
            let p = m.item_notes[&i]["saved_path"].as_str().unwrap_or_default().to_owned();
            assert_eq!(std::fs::read(&p).unwrap_or_default(), want.as_bytes(), "{p}");
        }
        assert!(m.item_notes[&3]["saved_path"].as_str().unwrap_or_default().ends_with("-image.png"));
    }
}
