//! The content parts a user message with attachments becomes, per API: Chat Completions
//! (`text`, `image_url{url,detail}`, `file{filename,file_data}`) and Responses (`input_text`,
//! `input_image{image_url,detail}`, `input_file{filename,file_data | file_url}`).

use super::attachment::{AttachKind, Attachment};
use crate::api::Api;
use serde_json::{Value, json};

/// The detail level sent with images when none was chosen.
pub const DEFAULT_DETAIL: &str = "auto";

/// A text attachment as the model reads it: its name, then its text.
#[must_use]
pub fn inline_text(a: &Attachment) -> String {
    let text = a.data.as_ref().map(|d| String::from_utf8_lossy(d.bytes())).unwrap_or_default();
    format!("<file name=\"{}\">\n{text}\n</file>", a.name.replace('"', "'"))
}

/// The `content` of a user message: the plain string when nothing is attached (what every
/// provider takes), else a list of parts — the text first, then each attachment.
#[must_use]
pub fn user_content(api: Api, text: &str, atts: &[Attachment], detail: Option<&str>) -> Value {
    if atts.is_empty() {
        return json!(text);
    }
    let detail = detail.unwrap_or(DEFAULT_DETAIL);
    let mut parts = Vec::with_capacity(atts.len() + 1);
    if !text.is_empty() {
        parts.push(text_part(api, text));
    }
    for a in atts {
        parts.push(part(api, a, detail));
    }
    Value::Array(parts)
}

fn text_part(api: Api, text: &str) -> Value {
    match api {
        Api::Chat => json!({"type": "text", "text": text}),
        Api::Responses => json!({"type": "input_text", "text": text}),
    }
}

/// One attachment's part. Bytes the store lost go as a text note rather than an empty image.
#[must_use]
pub fn part(api: Api, a: &Attachment, detail: &str) -> Value {
    let data = a.data.as_ref().map(|d| d.data_uri(&a.media_type).to_owned());
    match (a.kind, data) {
        (AttachKind::Text, _) => text_part(api, &inline_text(a)),
        (AttachKind::Url, _) => {
            let url = a.fetch.as_deref().or(a.url.as_deref()).unwrap_or(&a.name);
            match api {
                Api::Chat => json!({"type": "image_url", "image_url": {"url": url, "detail": detail}}),
                Api::Responses if a.is_image() => json!({"type": "input_image", "image_url": url, "detail": detail}),
                Api::Responses => json!({"type": "input_file", "file_url": url}),
            }
        }
        (AttachKind::Image, Some(uri)) => match api {
            Api::Chat => json!({"type": "image_url", "image_url": {"url": uri, "detail": detail}}),
            Api::Responses => json!({"type": "input_image", "image_url": uri, "detail": detail}),
        },
        (AttachKind::File, Some(uri)) => match api {
            Api::Chat => json!({"type": "file", "file": {"filename": a.name, "file_data": uri}}),
            Api::Responses => json!({"type": "input_file", "filename": a.name, "file_data": uri}),
        },
        (_, None) => text_part(api, &format!("[attachment {} ({}) is no longer available]", a.name, a.media_type)),
    }
}

/// Strings longer than this that start with `data:` are shown abbreviated.
const SHOW_DATA: usize = 160;

/// The body with every long data URI cut to its head and size
/// (`data:image/png;base64,…(1.2 MB)`), for showing; what is sent is never cut.
#[must_use]
pub fn abbreviated(body: &Value) -> std::borrow::Cow<'_, Value> {
    fn has_data(v: &Value) -> bool {
        match v {
            Value::String(s) => s.len() > SHOW_DATA && s.starts_with("data:"),
            Value::Array(a) => a.iter().any(has_data),
            Value::Object(o) => o.values().any(has_data),
            _ => false,
        }
    }
    fn cut(v: &Value) -> Value {
        match v {
            Value::String(s) if s.len() > SHOW_DATA && s.starts_with("data:") => {
                let head = s.find(',').map_or("data:", |i| &s[..=i]);
                Value::String(format!("{head}…({})", crate::text::fmt::size(s.len() - head.len())))
            }
            Value::Array(a) => Value::Array(a.iter().map(cut).collect()),
            Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), cut(v))).collect()),
            other => other.clone(),
        }
    }
    if has_data(body) { std::borrow::Cow::Owned(cut(body)) } else { std::borrow::Cow::Borrowed(body) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png() -> Attachment {
        let mut bytes = Vec::new();
        image::RgbImage::new(2, 3).write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
        Attachment::from_bytes("a.png", bytes).unwrap()
    }

    #[test]
    fn data_is_abbreviated_for_showing() {
        let long = format!("data:image/png;base64,{}", "A".repeat(2000));
        let body = json!({"messages": [{"content": [{"type": "image_url", "image_url": {"url": long}}]}]});
        let shown = abbreviated(&body);
        assert_eq!(shown["messages"][0]["content"][0]["image_url"]["url"], "data:image/png;base64,…(2.0 KB)");
        let plain = json!({"a": "data:short"});
        assert!(matches!(abbreviated(&plain), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn plain_text_stays_a_string() {
        assert_eq!(user_content(Api::Chat, "hi", &[], None), json!("hi"));
    }

    #[test]
    fn chat_and_responses_shapes() {
        let img = png();
        assert_eq!((img.width, img.height), (Some(2), Some(3)));
        let pdf = Attachment::from_bytes("doc.pdf", b"%PDF-1.4\n1 0 obj".to_vec()).unwrap();
        let txt = Attachment::from_bytes("notes.md", b"# hello".to_vec()).unwrap();
        let url = Attachment::from_url("https://example.com/cat.JPG?x=1");
        let atts = [img, pdf, txt, url];
        let c = user_content(Api::Chat, "what", &atts, Some("low"));
        assert_eq!(c[0], json!({"type": "text", "text": "what"}));
        assert_eq!(c[1]["type"], "image_url");
        assert_eq!(c[1]["image_url"]["detail"], "low");
        assert!(c[1]["image_url"]["url"].as_str().unwrap().starts_with("data:image/png;base64,iVBORw0KGgo"));
        assert_eq!(c[2]["file"]["filename"], "doc.pdf");
        assert!(c[2]["file"]["file_data"].as_str().unwrap().starts_with("data:application/pdf;base64,JVBER"));
        assert_eq!(c[3], json!({"type": "text", "text": "<file name=\"notes.md\">\n# hello\n</file>"}));
        assert_eq!(c[4]["image_url"]["url"], "https://example.com/cat.JPG?x=1");
        let r = user_content(Api::Responses, "what", &atts, None);
        assert_eq!(r[0], json!({"type": "input_text", "text": "what"}));
        assert_eq!(r[1]["type"], "input_image");
        assert_eq!(r[1]["detail"], "auto");
        assert!(r[1]["image_url"].as_str().unwrap().starts_with("data:image/png;base64,"));
        assert_eq!(r[2]["type"], "input_file");
        assert_eq!(r[2]["filename"], "doc.pdf");
        assert_eq!(r[3]["type"], "input_text");
        assert_eq!(
            r[4],
            json!({"type": "input_image", "image_url": "https://example.com/cat.JPG?x=1", "detail": "auto"})
        );
        let doc = Attachment::from_url("https://example.com/paper.pdf");
        assert_eq!(
            part(Api::Responses, &doc, "auto"),
            json!({"type": "input_file", "file_url": "https://example.com/paper.pdf"})
        );
    }
}
