//! What a provider profile says about attachments: which kinds it takes and how large they may
//! be. `attachments = { images = "url-only", files = false, max_file_mb = 20, max_request_mb = 50 }`.
//! Checking a request against it is the engine's (`engine::attachment::check`).

use serde::Deserialize;

/// Default largest single attachment, in MB (MiB, as sizes are shown): what the large providers take per file.
pub const DEFAULT_MAX_FILE_MB: u64 = 20;
/// The largest image a tool may hand back (MCP image content): bigger ones are dropped unread.
pub const MAX_TOOL_IMAGE_BYTES: u64 = DEFAULT_MAX_FILE_MB * 1024 * 1024;
/// Default largest total of attachment bytes in one request (earlier turns' included, as they
/// are re-sent).
pub const DEFAULT_MAX_REQUEST_MB: u64 = 50;

/// Which images a provider takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImagesSetting {
    /// Image data and image URLs.
    #[default]
    Yes,
    /// Only `https://` URLs (the provider fetches them); no image bytes.
    UrlOnly,
    /// No images at all.
    No,
}

/// A profile's `attachments` table; every field optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentPolicy {
    #[serde(default)]
    pub images: ImagesSetting,
    /// Whether documents (PDF, …) go as file parts; `false` refuses them. Text files always go
    /// inline as text.
    pub files: Option<bool>,
    pub max_file_mb: Option<u64>,
    pub max_request_mb: Option<u64>,
    /// The provider's `limits.request_bytes` (set when the target is resolved, not read from
    /// the table): base64 makes attachments a third larger in the request.
    #[serde(skip)]
    pub request_bytes: Option<usize>,
}

impl AttachmentPolicy {
    #[must_use]
    pub fn files_allowed(&self) -> bool {
        self.files.unwrap_or(true)
    }

    #[must_use]
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_mb.unwrap_or(DEFAULT_MAX_FILE_MB).saturating_mul(1024 * 1024)
    }

    #[must_use]
    pub fn max_request_bytes(&self) -> u64 {
        self.max_request_mb.unwrap_or(DEFAULT_MAX_REQUEST_MB).saturating_mul(1024 * 1024)
    }
}
