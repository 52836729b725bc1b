//! `demo-vision`: answers with what the last user message carried, part by part, read from the
//! wire as a provider would (never from palaver's own types): each part's type, media type,
//! pixel size (images), page count (PDFs), byte length and SHA-256 prefix, so a test can prove
//! the bytes arrived intact.

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

pub const MODEL: &str = "demo-vision";

/// demo-vision's script: what arrived; asked to draw (Responses API), an `image_generation_call`
/// with a picture it made; asked to plot, a `code_interpreter_call` with an image output.
#[must_use]
pub fn script(req: &super::request::Request) -> super::script::Script {
    let prompt = req.last_user_text.as_deref().unwrap_or_default().to_lowercase();
    let mut text = answer(&req.last_user_parts, &req.earlier_parts);
    let mut items = Vec::new();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    if prompt.contains("draw") {
        items.push(serde_json::json!({"type": "image_generation_call", "id": format!("ig_demo_{}", req.user_turns),
            "status": "completed", "result": b64(&drawing(96, 64))}));
        text.push_str("\nI drew a picture for you (an image_generation_call item on the Responses API).\n");
    }
    if prompt.contains("plot") {
        let uri = format!("data:image/png;base64,{}", b64(&drawing(80, 48)));
        items.push(serde_json::json!({"type": "code_interpreter_call", "id": format!("ci_demo_{}", req.user_turns),
            "status": "completed", "code": "plot(x, y)", "container_id": "cntr_demo",
            "outputs": [{"type": "image", "url": uri}]}));
        text.push_str("\nI plotted it (a code_interpreter_call with an image output on the Responses API).\n");
    }
    super::script::Script { items, ..super::script::Script::plain(req, &text, super::script::PACE) }
}

/// A deterministic picture: a gradient with a disc in the middle, as PNG.
#[must_use]
pub fn drawing(w: u32, h: u32) -> Vec<u8> {
    let (cx, cy, r) = (w / 2, h / 2, h / 3);
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        let (dx, dy) = (x.abs_diff(cx), y.abs_diff(cy));
        if dx * dx + dy * dy <= r * r {
            image::Rgb([250, 200, 40])
        } else {
            image::Rgb([
                u8::try_from(x * 255 / w.max(1)).unwrap_or(255),
                60,
                u8::try_from(y * 255 / h.max(1)).unwrap_or(255),
            ])
        }
    });
    let mut out = Vec::new();
    let _ = img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png);
    out
}

/// The answer for the last user message's content parts.
#[must_use]
pub fn answer(parts: &[Value], earlier: &[Value]) -> String {
    let list = |parts: &[Value]| {
        parts.iter().enumerate().map(|(i, p)| format!("{}. {}", i + 1, describe(p))).collect::<Vec<_>>()
    };
    let mut out = if parts.is_empty() {
        "I received only text: attach an image or a file (-a PATH, or /attach in the chat) and I will \
         describe what arrived.\n"
            .to_owned()
    } else {
        format!(
            "I received {} part{}:\n\n{}\n",
            parts.len(),
            if parts.len() == 1 { "" } else { "s" },
            list(parts).join("\n")
        )
    };
    if !earlier.is_empty() {
        // Stateless providers need earlier attachments again with every request: show they came.
        out.push_str(&format!("\nEarlier messages carried again:\n\n{}\n", list(earlier).join("\n")));
    }
    out
}

/// One part, in one line.
fn describe(p: &Value) -> String {
    let kind = p.get("type").and_then(Value::as_str).unwrap_or("?");
    let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    match kind {
        "text" | "input_text" => {
            let text = s(p.get("text")).unwrap_or_default();
            format!("{kind}: {} characters", text.chars().count())
        }
        "image_url" => {
            let url = s(p.get("image_url").and_then(|i| i.get("url"))).unwrap_or_default();
            let detail = s(p.get("image_url").and_then(|i| i.get("detail")));
            data_line(kind, &url, None, detail.as_deref())
        }
        "input_image" => {
            let url = s(p.get("image_url")).unwrap_or_default();
            data_line(kind, &url, None, s(p.get("detail")).as_deref())
        }
        "file" => {
            let f = p.get("file");
            let data = s(f.and_then(|f| f.get("file_data"))).unwrap_or_default();
            data_line(kind, &data, s(f.and_then(|f| f.get("filename"))).as_deref(), None)
        }
        "input_file" => match s(p.get("file_url")) {
            Some(u) => format!("{kind}: file_url {u}"),
            None => data_line(kind, &s(p.get("file_data")).unwrap_or_default(), s(p.get("filename")).as_deref(), None),
        },
        other => format!("{other}: (a part demo-vision does not read)"),
    }
}

/// `image_url: image/png, 64×48 px, 1234 bytes, sha256 0123456789ab` from a data URI (or the
/// URL when it is one).
fn data_line(kind: &str, uri: &str, name: Option<&str>, detail: Option<&str>) -> String {
    let named = name.map(|n| format!(" {n}")).unwrap_or_default();
    let detail = detail.map(|d| format!(", detail {d}")).unwrap_or_default();
    let Some(rest) = uri.strip_prefix("data:") else {
        return format!("{kind}{named}: url {uri}{detail}");
    };
    let Some((media, b64)) = rest.split_once(";base64,") else {
        return format!("{kind}{named}: a data URI that is not base64");
    };
    let bytes = match base64::engine::general_purpose::STANDARD.decode(b64) {
        Ok(b) => b,
        Err(e) => return format!("{kind}{named}: {media}, base64 that does not decode ({e})"),
    };
    let mut facts = vec![media.to_owned()];
    if media.starts_with("image/") {
        match image::ImageReader::new(std::io::Cursor::new(&bytes)).with_guessed_format().map(|r| r.into_dimensions()) {
            Ok(Ok((w, h))) => facts.push(format!("{w}×{h} px")),
            _ => facts.push("not a readable image".to_owned()),
        }
    }
    if media == "application/pdf" {
        facts.push(format!("{} page{}", pdf_pages(&bytes), if pdf_pages(&bytes) == 1 { "" } else { "s" }));
    }
    let hash: String = Sha256::digest(&bytes).iter().take(6).map(|b| format!("{b:02x}")).collect();
    facts.push(format!("{} bytes", bytes.len()));
    facts.push(format!("sha256 {hash}"));
    format!("{kind}{named}: {}{detail}", facts.join(", "))
}

/// Pages in a PDF, by a scan for page objects: `/Type /Page` not followed by `s` (that is the
/// page tree). Good for the uncompressed PDFs tests make; object streams would hide pages, and
/// a demo need not parse them.
#[must_use]
pub fn pdf_pages(bytes: &[u8]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while let Some(at) = find(&bytes[i..], b"/Type") {
        let mut j = i + at + 5;
        while j < bytes.len() && matches!(bytes[j], b' ' | b'\r' | b'\n' | b'\t') {
            j += 1;
        }
        if bytes[j..].starts_with(b"/Page") && !bytes[j + 5..].starts_with(b"s") {
            n += 1;
        }
        i = j;
    }
    n
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_counted_not_the_tree() {
        let pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] >>\n2 0 obj << /Type /Page >>\n3 0 obj <</Type/Page>>";
        assert_eq!(pdf_pages(pdf), 2);
    }

    #[test]
    fn describes_a_data_uri() {
        let p =
            serde_json::json!({"type": "input_file", "filename": "a.txt", "file_data": "data:text/plain;base64,aGk="});
        assert_eq!(describe(&p), "input_file a.txt: text/plain, 2 bytes, sha256 8f434346648f");
    }
}
