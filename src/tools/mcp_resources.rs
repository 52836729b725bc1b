//! An MCP server's resources: listed once when the server starts (the chat screen's
//! `/resource` shows them) and read with `resources/read` when one is attached. Names, URIs
//! and contents come from an untrusted server: callers sanitise what they show.

use super::McpClient;
use super::plain;
use rmcp::model::{PaginatedRequestParams, ReadResourceRequestParams, ResourceContents};
use std::time::Duration;

/// How long listing a server's resources at its start may take (a slow listing leaves none).
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one `resources/read` may take.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Most resources kept for one server.
const MAX_RESOURCES: usize = 500;

/// One resource a server lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceInfo {
    pub uri: String,
    pub name: String,
}

/// One content of a read resource: its name for the chip and its bytes (text as UTF-8, a blob
/// decoded from base64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePart {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl McpClient {
    /// Lists the server's resources when it says it has some; a failure leaves none.
    pub(super) async fn list_resources(peer: &rmcp::service::Peer<rmcp::RoleClient>) -> Vec<ResourceInfo> {
        let offers = peer.peer_info().is_some_and(|i| i.capabilities.resources.is_some());
        if !offers {
            return Vec::new();
        }
        let listing = async {
            let (mut out, mut cursor) = (Vec::new(), None);
            loop {
                let Ok(page) = peer.list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor))).await
                else {
                    break;
                };
                out.extend(
                    page.resources.into_iter().map(|r| ResourceInfo { uri: r.uri.clone(), name: r.name.clone() }),
                );
                cursor = page.next_cursor.filter(|_| out.len() < MAX_RESOURCES);
                if cursor.is_none() {
                    break;
                }
            }
            out.truncate(MAX_RESOURCES);
            out
        };
        tokio::time::timeout(LIST_TIMEOUT, listing).await.unwrap_or_default()
    }

    /// The server's resources, as listed at its start (or again when it said they changed).
    #[must_use]
    pub fn resources(&self) -> std::sync::Arc<Vec<ResourceInfo>> {
        self.resources.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Reads resource `uri` (`resources/read`): each content as a part named `name`
    /// (numbered when there are several).
    ///
    /// # Errors
    /// A message naming the server when it refuses, fails, does not answer in time, sends a
    /// blob that is not base64, or nothing.
    pub async fn read_resource(&self, uri: &str, name: &str) -> Result<Vec<ResourcePart>, String> {
        use base64::Engine as _;
        let asked = self.peer.read_resource(ReadResourceRequestParams::new(uri));
        let result = match tokio::time::timeout(READ_TIMEOUT, asked).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                return Err(format!(
                    "MCP server `{}` could not read {uri}: {}",
                    self.name,
                    crate::sys::secrets::redact(&plain(&e))
                ));
            }
            Err(_) => {
                return Err(format!(
                    "MCP server `{}` did not read {uri} within {} s",
                    self.name,
                    READ_TIMEOUT.as_secs()
                ));
            }
        };
        let n = result.contents.len();
        let mut parts = Vec::new();
        for (i, content) in result.contents.into_iter().enumerate() {
            let name = if n > 1 { format!("{name} ({})", i + 1) } else { name.to_owned() };
            let bytes = match content {
                ResourceContents::TextResourceContents { text, .. } => {
                    crate::sys::secrets::redact(&text).into_owned().into_bytes()
                }
                ResourceContents::BlobResourceContents { blob, .. } => base64::engine::general_purpose::STANDARD
                    .decode(blob.trim())
                    .map_err(|_| format!("MCP server `{}` sent {uri} as a blob that is not base64", self.name))?,
                _ => continue,
            };
            parts.push(ResourcePart { name, bytes });
        }
        if parts.is_empty() {
            return Err(format!("MCP server `{}` sent nothing for {uri}", self.name));
        }
        Ok(parts)
    }
}
