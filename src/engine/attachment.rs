//! Attachments on a user message: what they are (typed from their bytes, never their name),
//! their content address, and whether a provider takes them. The bytes ride along in memory
//! (shared, never serialized with the message); the store keeps them once per hash, and the
//! wire shapes are in `attach_wire.rs`.

use crate::config::attachments::{AttachmentPolicy, ImagesSetting};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::{Arc, OnceLock};

/// How an attachment goes to a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachKind {
    /// png, jpeg, gif or webp bytes: an image part.
    Image,
    /// A document (PDF, office files…): a file part.
    File,
    /// UTF-8 text: inline, as a text part with its name.
    Text,
    /// An `http(s)://` address the provider fetches itself.
    Url,
}

/// The image types every vision provider takes.
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// An attachment's bytes: shared (messages are cloned for every request) and printed by size.
#[derive(Clone, Default)]
pub struct Blob {
    bytes: Arc<[u8]>,
    /// The base64 data URI, made once (off the UI thread when the loader prepares it).
    uri: Arc<OnceLock<String>>,
}

impl Blob {
    #[must_use]
    pub fn new(bytes: impl Into<Arc<[u8]>>) -> Self {
        Self { bytes: bytes.into(), uri: Arc::default() }
    }

    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// `data:<media type>;base64,…`, encoded on first use and kept.
    #[must_use]
    pub fn data_uri(&self, media_type: &str) -> &str {
        self.uri.get_or_init(|| {
            let mut s = format!("data:{media_type};base64,");
            base64::engine::general_purpose::STANDARD.encode_string(&self.bytes, &mut s);
            s
        })
    }
}

impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Blob({} bytes)", self.bytes.len())
    }
}

impl PartialEq for Blob {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

/// One attachment. Everything but the bytes is stored in the message's JSON; the bytes are
/// stored by `sha256` in the store's blob table and put back when a conversation is loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    /// The file name (no directories), `stdin`, or the URL.
    pub name: String,
    pub media_type: String,
    pub kind: AttachKind,
    /// Byte length (0 for a URL).
    pub size: u64,
    /// Lowercase hex SHA-256 of the bytes (empty for a URL). A stored or imported value that is
    /// not 64 lowercase hex digits reads as empty (the bytes are then not available).
    #[serde(default, deserialize_with = "de_sha256")]
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// The address as stored and shown: no user name, password or secret query parameter
    /// (`api::redact::storable_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The address sent for the provider to fetch, when it differs from `url`: the query's
    /// secrets kept (a signed link needs them), the user name and password still left out.
    /// Never stored: a reopened conversation sends `url`.
    #[serde(skip)]
    pub fetch: Option<String>,
    /// The bytes; `None` for a URL, or when the store had lost them.
    #[serde(skip)]
    pub data: Option<Blob>,
}

/// Why a file cannot be attached. The message names the file and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AttachError(pub String);

/// Whether `s` is a content address: 64 lowercase hex digits.
#[must_use]
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `sha256` from JSON (a message's, an import's): kept only when it is a content address.
fn de_sha256<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    Ok(if is_sha256(&s) { s } else { String::new() })
}

/// Lowercase hex SHA-256.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().fold(String::with_capacity(64), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// What the bytes are: (kind, media type), from their magic numbers; text when they are UTF-8
/// without NULs. `Err` for binary data no provider takes (an executable, a bmp…).
///
/// # Errors
/// A type no provider takes as an attachment.
pub fn sniff(bytes: &[u8]) -> Result<(AttachKind, String), String> {
    if let Some(t) = infer::get(bytes) {
        let mime = t.mime_type();
        if IMAGE_TYPES.contains(&mime) {
            return Ok((AttachKind::Image, mime.to_owned()));
        }
        let document = matches!(t.matcher_type(), infer::MatcherType::Doc | infer::MatcherType::Book)
            || mime == "application/pdf"
            || mime == "application/rtf";
        if document {
            return Ok((AttachKind::File, mime.to_owned()));
        }
        if !matches!(t.matcher_type(), infer::MatcherType::Text) {
            return Err(format!("{mime} is not a type a model takes (images: png, jpeg, gif, webp; documents; text)"));
        }
    }
    if !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok() {
        return Ok((AttachKind::Text, "text/plain".to_owned()));
    }
    Err("binary data of an unknown type (images: png, jpeg, gif, webp; documents such as PDF; text)".to_owned())
}

/// Pixel size from the image's header (no full decode).
#[must_use]
pub fn pixel_size(bytes: &[u8]) -> Option<(u32, u32)> {
    image::ImageReader::new(std::io::Cursor::new(bytes)).with_guessed_format().ok()?.into_dimensions().ok()
}

impl Attachment {
    /// An attachment from bytes already read, typed from the bytes.
    ///
    /// # Errors
    /// A type no provider takes.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Self, AttachError> {
        let (kind, media_type) = sniff(&bytes).map_err(|why| AttachError(format!("cannot attach {name}: {why}")))?;
        let (width, height) = match kind {
            AttachKind::Image => pixel_size(&bytes).map_or((None, None), |(w, h)| (Some(w), Some(h))),
            _ => (None, None),
        };
        Ok(Self {
            name: name.to_owned(),
            media_type,
            kind,
            size: bytes.len() as u64,
            sha256: sha256_hex(&bytes),
            width,
            height,
            url: None,
            fetch: None,
            data: Some(Blob::new(bytes)),
        })
    }

    /// An attachment the provider fetches: an image when the path ends like one, else a file.
    /// A user name and password in the URL go nowhere; secrets in its query only to the provider.
    #[must_use]
    pub fn from_url(given: &str) -> Self {
        let url = &crate::api::redact::storable_url(given);
        let fetch = crate::api::redact::without_userinfo(given);
        let path = url.split(['?', '#']).next().unwrap_or(url).to_ascii_lowercase();
        let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
        let image = match ext {
            "png" => Some("image/png"),
            "jpg" | "jpeg" => Some("image/jpeg"),
            "gif" => Some("image/gif"),
            "webp" => Some("image/webp"),
            _ => None,
        };
        Self {
            name: url.to_owned(),
            media_type: image.unwrap_or(if ext == "pdf" { "application/pdf" } else { "" }).to_owned(),
            kind: AttachKind::Url,
            size: 0,
            sha256: String::new(),
            width: None,
            height: None,
            url: Some(url.to_owned()),
            fetch: (fetch != *url).then_some(fetch),
            data: None,
        }
    }

    /// Whether it goes as an image part.
    #[must_use]
    pub fn is_image(&self) -> bool {
        self.kind == AttachKind::Image || (self.kind == AttachKind::Url && self.media_type.starts_with("image/"))
    }

    /// The first 12 hex digits of the hash: enough to tell files apart in a listing.
    #[must_use]
    pub fn short_hash(&self) -> &str {
        self.sha256.get(..12).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit())).unwrap_or("")
    }

    /// `photo.png · image/png · 640×480 · 1.2 MB`: the one-line description chips and
    /// placeholders show.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut s = format!("{} · {}", self.name, if self.media_type.is_empty() { "url" } else { &self.media_type });
        if let (Some(w), Some(h)) = (self.width, self.height) {
            s.push_str(&format!(" · {w}×{h}"));
        }
        if self.kind != AttachKind::Url {
            s.push_str(&format!(" · {}", crate::text::fmt::size(self.size as usize)));
        }
        s
    }

    /// The line a `--json` result lists for it.
    #[must_use]
    pub fn summary_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({"name": self.name, "media_type": self.media_type, "kind": self.kind,
            "bytes": self.size, "sha256": self.short_hash()});
        if let (Some(w), Some(h)) = (self.width, self.height) {
            v["width"] = w.into();
            v["height"] = h.into();
        }
        if let Some(u) = &self.url {
            v["url"] = u.clone().into();
        }
        v
    }
}

/// Checks a request's attachments before anything is sent: `new` are this turn's, `earlier`
/// the ones re-sent from history. Sizes per file and per request, and the provider's policy.
///
/// # Errors
/// The first problem, in words a user can act on.
pub fn check(new: &[Attachment], earlier: u64, policy: &AttachmentPolicy, api: crate::api::Api) -> Result<(), String> {
    let per_file = policy.max_file_bytes();
    let mut total = earlier;
    for a in new {
        if a.size > per_file {
            return Err(too_large(&a.name, a.size, per_file, "max_file_mb"));
        }
        total += a.size;
        allowed(a, policy, api)?;
    }
    let per_request = policy.max_request_bytes();
    // Base64 makes the bytes a third larger; the request must stay within its own limit too.
    let encoded = total.div_ceil(3) * 4;
    // Without attachments the request's own check (in the client) is the one that speaks.
    if let Some(limit) = policy.request_bytes.filter(|&l| total > 0 && encoded + REQUEST_ROOM > l as u64) {
        return Err(format!(
            "the attachments of this request add up to {} ({} as base64, earlier turns' included), over the \
             request limit of {}; nothing was sent (raise it in the provider's profile: limits = {{ request_bytes = … }})",
            crate::text::fmt::size(total as usize),
            crate::text::fmt::size(encoded as usize),
            crate::text::fmt::size(limit)
        ));
    }
    if total > per_request {
        return Err(format!(
            "the attachments of this request add up to {} (earlier turns' included, as they are re-sent), over the \
             limit of {}; nothing was sent (raise it in the provider's profile: attachments = {{ max_request_mb = … }})",
            crate::text::fmt::size(total as usize),
            crate::text::fmt::size(per_request as usize)
        ));
    }
    Ok(())
}

/// Room left in a request for everything that is not an attachment (text, history, tools).
const REQUEST_ROOM: u64 = 1024 * 1024;

/// The size check for a file not read yet (its length from the file system).
#[must_use]
pub fn too_large(name: &str, size: u64, limit: u64, key: &str) -> String {
    format!(
        "cannot attach {name}: it is {}, over the limit of {} per file; nothing was sent (raise it in the \
         provider's profile: attachments = {{ {key} = … }})",
        crate::text::fmt::size(size as usize),
        crate::text::fmt::size(limit as usize)
    )
}

/// Whether the provider takes this attachment on this API.
///
/// # Errors
/// Why not.
pub fn allowed(a: &Attachment, policy: &AttachmentPolicy, api: crate::api::Api) -> Result<(), String> {
    let name = &a.name;
    match (a.is_image(), a.kind) {
        (true, _) if policy.images == ImagesSetting::No => {
            Err(format!("cannot attach {name}: this provider's profile takes no images (attachments.images = \"no\")"))
        }
        (true, AttachKind::Image) if policy.images == ImagesSetting::UrlOnly => Err(format!(
            "cannot attach {name}: this provider's profile takes images by URL only (attachments.images = \"url-only\"); \
             give an https:// address instead"
        )),
        (false, AttachKind::File) if !policy.files_allowed() => {
            Err(format!("cannot attach {name}: this provider's profile takes no files (attachments.files = false)"))
        }
        (false, AttachKind::Url) if api == crate::api::Api::Chat => Err(format!(
            "cannot attach {name}: Chat Completions takes image URLs only (png, jpeg, gif, webp); \
             a document by URL needs --api responses"
        )),
        (false, AttachKind::Url) if !policy.files_allowed() => {
            Err(format!("cannot attach {name}: this provider's profile takes no files (attachments.files = false)"))
        }
        _ => Ok(()),
    }
}

pub use crate::config::attachments::MAX_TOOL_IMAGE_BYTES;

/// A tool's images as attachments (typed from their bytes; data that is no image, or an image
/// over [`MAX_TOOL_IMAGE_BYTES`], is dropped).
#[must_use]
pub fn from_tool_images(tool: &str, images: Vec<crate::tools::ToolImage>) -> Vec<Attachment> {
    images
        .into_iter()
        .enumerate()
        .filter(|(_, img)| img.bytes.len() as u64 <= MAX_TOOL_IMAGE_BYTES)
        .filter_map(|(i, img)| {
            // The name's extension comes from the bytes, never the tool's `mime_type`.
            let a =
                Attachment::from_bytes(&format!("{tool}-{}", i + 1), img.bytes).ok().filter(Attachment::is_image)?;
            let ext = match a.media_type.as_str() {
                "image/jpeg" => "jpg",
                m => m.trim_start_matches("image/"),
            };
            Some(Attachment { name: format!("{}.{ext}", a.name), ..a })
        })
        .collect()
}

/// Bytes of attachments already in `messages` (they go again with every request).
#[must_use]
pub fn history_bytes<M: std::borrow::Borrow<super::message::Message>>(messages: &[M]) -> u64 {
    messages.iter().flat_map(|m| &m.borrow().attachments).map(|a| a.size).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Api;

    #[test]
    fn a_urls_user_and_password_are_kept_nowhere() {
        let a = Attachment::from_url("https://me:pa55word@x.test/a.png?token=t0k&w=2");
        assert_eq!(a.url.as_deref(), Some("https://x.test/a.png?w=2"));
        assert_eq!(a.name, "https://x.test/a.png?w=2");
        assert_eq!(a.fetch.as_deref(), Some("https://x.test/a.png?token=t0k&w=2"), "the provider gets the query");
        assert_eq!(a.media_type, "image/png");
        let stored = serde_json::to_string(&a).unwrap_or_default();
        assert!(!stored.contains("pa55word") && !stored.contains("t0k"), "{stored}");
        assert_eq!(Attachment::from_url("https://x.test/a.png").fetch, None);
    }

    #[test]
    fn plain_urls_are_unchanged() {
        let a = Attachment::from_url("https://x.test/a.pdf?v=1");
        assert_eq!(a.url.as_deref(), Some("https://x.test/a.pdf?v=1"));
        assert_eq!(a.fetch, None);
    }

    fn sized(kind: AttachKind, size: u64) -> Attachment {
        let mut a = Attachment::from_url("https://x.test/a.png");
        (a.kind, a.size, a.media_type) = (kind, size, "application/pdf".into());
        a
    }

    #[test]
    fn hashes_from_json_are_checked() {
        let json =
            |h: &str| format!(r#"{{"name":"a","media_type":"image/png","kind":"image","size":1,"sha256":"{h}"}}"#);
        let good = "ab".repeat(32);
        let a: Attachment = serde_json::from_str(&json(&good)).unwrap();
        assert_eq!((a.sha256.as_str(), a.short_hash()), (good.as_str(), "abababababab"));
        for bad in ["é".repeat(32), "AB".repeat(32), "../etc".into(), "ab".repeat(33)] {
            let a: Attachment = serde_json::from_str(&json(&bad)).unwrap();
            assert_eq!((a.sha256.as_str(), a.short_hash()), ("", ""), "{bad}");
        }
        // Built in code (not read back), a bad hash still never panics or prints.
        let a = Attachment { sha256: "ééééééé\x1b[2J".into(), ..Attachment::from_url("a") };
        assert_eq!(a.short_hash(), "");
    }

    #[test]
    fn tool_images_are_typed_by_bytes_and_capped() {
        use crate::tools::ToolImage;
        let mut png = Vec::new();
        image::RgbImage::new(2, 2).write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).unwrap();
        let lying = ToolImage { media_type: "image/../../x.sh".into(), bytes: png.clone() };
        let huge = ToolImage { media_type: "image/png".into(), bytes: vec![0; MAX_TOOL_IMAGE_BYTES as usize + 1] };
        let text = ToolImage { media_type: "image/png".into(), bytes: b"hello".to_vec() };
        let got = from_tool_images("shot", vec![lying, huge, text]);
        assert_eq!(got.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["shot-1.png"]);
    }

    #[test]
    fn sniffing_goes_by_bytes() {
        assert_eq!(sniff(b"GIF89a\x01\x00\x01\x00").unwrap(), (AttachKind::Image, "image/gif".into()));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0\0\x10JFIF").unwrap().0, AttachKind::Image);
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 ").unwrap(), (AttachKind::Image, "image/webp".into()));
        assert_eq!(sniff(b"%PDF-1.7").unwrap(), (AttachKind::File, "application/pdf".into()));
        assert_eq!(sniff("héllo\n".as_bytes()).unwrap(), (AttachKind::Text, "text/plain".into()));
        assert!(sniff(b"BM\x3a\0\0\0\0\0\0\0\x36\0\0\0\x28\0").is_err(), "bmp is no provider's image type");
        assert!(sniff(b"text with a \0 nul").is_err());
    }

    #[test]
    fn limits_per_file_per_request_and_encoded() {
        let policy = AttachmentPolicy::default();
        let mb = 1024 * 1024;
        assert!(check(&[sized(AttachKind::File, 20 * mb)], 0, &policy, Api::Chat).is_ok());
        assert!(check(&[sized(AttachKind::File, 21 * mb)], 0, &policy, Api::Chat).unwrap_err().contains("per file"));
        let two = [sized(AttachKind::File, 20 * mb), sized(AttachKind::File, 20 * mb)];
        assert!(check(&two, 11 * mb, &policy, Api::Chat).unwrap_err().contains("max_request_mb"));
        let tight = AttachmentPolicy { request_bytes: Some(32 * mb as usize), ..policy };
        let tiny = AttachmentPolicy { request_bytes: Some(1000), ..policy };
        assert!(check(&[], 0, &tiny, Api::Chat).is_ok(), "no attachments: the client's own check speaks");
        let e = check(&[sized(AttachKind::File, 20 * mb), sized(AttachKind::File, 5 * mb)], 0, &tight, Api::Chat)
            .unwrap_err();
        assert!(e.contains("as base64") && e.contains("request_bytes"), "{e}");
    }

    #[test]
    fn the_profile_decides_what_goes() {
        use crate::config::attachments::ImagesSetting;
        let png = Attachment { kind: AttachKind::Image, media_type: "image/png".into(), ..Attachment::from_url("a") };
        let url = Attachment::from_url("https://x.test/a.png");
        let doc = Attachment::from_url("https://x.test/a.pdf");
        let url_only = AttachmentPolicy { images: ImagesSetting::UrlOnly, ..AttachmentPolicy::default() };
        assert!(allowed(&png, &url_only, Api::Chat).unwrap_err().contains("URL only"));
        assert!(allowed(&url, &url_only, Api::Chat).is_ok());
        let none = AttachmentPolicy { images: ImagesSetting::No, files: Some(false), ..AttachmentPolicy::default() };
        assert!(allowed(&url, &none, Api::Responses).is_err());
        assert!(allowed(&doc, &AttachmentPolicy::default(), Api::Chat).unwrap_err().contains("--api responses"));
        assert!(allowed(&doc, &AttachmentPolicy::default(), Api::Responses).is_ok());
        assert!(allowed(&doc, &none, Api::Responses).unwrap_err().contains("no files"));
    }
}
