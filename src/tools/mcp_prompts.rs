//! An MCP server's prompts: listed once when the server starts (the chat screen offers them as
//! `/mcp:SERVER:PROMPT` commands) and fetched with `prompts/get` when one is run. Everything
//! here comes from an untrusted server: callers sanitise it before it reaches a terminal.

use super::McpClient;
use super::plain;
use rmcp::model::{ContentBlock, GetPromptRequestParams, PaginatedRequestParams, ResourceContents};
use serde_json::{Map, Value};
use std::time::Duration;

/// How long listing a server's prompts at its start may take (a slow listing leaves none).
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one `prompts/get` may take.
const GET_TIMEOUT: Duration = Duration::from_secs(30);

/// Most prompts kept for one server.
const MAX_PROMPTS: usize = 500;

/// One prompt a server offers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptInfo {
    pub name: String,
    /// As the server wrote it (unsanitised).
    pub description: String,
    /// Its arguments in the server's order.
    pub args: Vec<PromptArg>,
}

/// One argument of a prompt (unsanitised, as the server wrote it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptArg {
    pub name: String,
    pub required: bool,
    pub description: String,
}

/// What `prompts/get` returned, flattened for the composer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptText {
    /// The messages' text, one paragraph each.
    pub text: String,
    /// Image content: (media type, bytes).
    pub images: Vec<(String, Vec<u8>)>,
    /// Content that could not be carried (audio, blobs), said to the user.
    pub dropped: Vec<String>,
}

impl McpClient {
    /// Lists the server's prompts when it says it has some; a failure leaves none.
    pub(super) async fn list_prompts(peer: &rmcp::service::Peer<rmcp::RoleClient>) -> Vec<PromptInfo> {
        let offers = peer.peer_info().is_some_and(|i| i.capabilities.prompts.is_some());
        if !offers {
            return Vec::new();
        }
        let listing = async {
            let (mut out, mut cursor) = (Vec::new(), None);
            loop {
                let Ok(page) = peer.list_prompts(Some(PaginatedRequestParams::default().with_cursor(cursor))).await
                else {
                    break;
                };
                out.extend(page.prompts.into_iter().map(|p| {
                    PromptInfo {
                        name: p.name,
                        description: p.description.unwrap_or_default(),
                        args: p
                            .arguments
                            .unwrap_or_default()
                            .into_iter()
                            .map(|a| PromptArg {
                                name: a.name,
                                required: a.required == Some(true),
                                description: a.description.unwrap_or_default(),
                            })
                            .collect(),
                    }
                }));
                cursor = page.next_cursor.filter(|_| out.len() < MAX_PROMPTS);
                if cursor.is_none() {
                    break;
                }
            }
            out.truncate(MAX_PROMPTS);
            out
        };
        tokio::time::timeout(LIST_TIMEOUT, listing).await.unwrap_or_default()
    }

    /// The server's prompts, as listed at its start (or again when it said they changed).
    #[must_use]
    pub fn prompts(&self) -> std::sync::Arc<Vec<PromptInfo>> {
        self.prompts.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Gets prompt `name` with `args` (`prompts/get`).
    ///
    /// # Errors
    /// A message naming the server when it refuses, fails or does not answer in time.
    pub async fn get_prompt(&self, name: &str, args: Map<String, Value>) -> Result<PromptText, String> {
        let params = GetPromptRequestParams::new(name).with_arguments(args);
        match tokio::time::timeout(GET_TIMEOUT, self.peer.get_prompt(params)).await {
            Ok(Ok(result)) => {
                let mut out = flatten(result.messages.into_iter().map(|m| m.content));
                if let std::borrow::Cow::Owned(clean) = crate::sys::secrets::redact(&out.text) {
                    out.text = clean;
                }
                Ok(out)
            }
            Ok(Err(e)) => Err(format!(
                "MCP server `{}` could not give prompt `{name}`: {}",
                self.name,
                crate::sys::secrets::redact(&plain(&e))
            )),
            Err(_) => Err(format!(
                "MCP server `{}` did not give prompt `{name}` within {} s",
                self.name,
                GET_TIMEOUT.as_secs()
            )),
        }
    }
}

/// The messages' content as text, images and what was left out.
fn flatten(blocks: impl Iterator<Item = ContentBlock>) -> PromptText {
    use base64::Engine as _;
    let mut out = PromptText::default();
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(i) => match base64::engine::general_purpose::STANDARD.decode(i.data.trim()) {
                Ok(bytes) => out.images.push((i.mime_type.clone(), bytes)),
                Err(_) => out.dropped.push(format!("an image ({}) that is not valid base64", i.mime_type)),
            },
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => parts.push(text.clone()),
                ResourceContents::BlobResourceContents { uri, .. } => out.dropped.push(format!("the blob {uri}")),
                _ => out.dropped.push("a resource".to_owned()),
            },
            ContentBlock::Audio(a) => out.dropped.push(format!("audio ({})", a.mime_type)),
            ContentBlock::ResourceLink(l) => parts.push(format!("[resource link: {}]", l.uri)),
            _ => out.dropped.push("content palaver does not know".to_owned()),
        }
    }
    out.text = parts.join("\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_become_text_images_and_what_was_dropped() {
        let blocks: Vec<ContentBlock> = serde_json::from_value(serde_json::json!([
            {"type": "text", "text": "one"},
            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///x", "text": "two"}},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
        ]))
        .unwrap();
        let out = flatten(blocks.into_iter());
        assert_eq!(out.text, "one\n\ntwo");
        assert_eq!(out.images, vec![("image/png".to_owned(), b"hello".to_vec())]);
        assert_eq!(out.dropped, vec!["audio (audio/wav)".to_owned()]);
    }

    #[tokio::test]
    async fn the_test_server_s_prompts_are_listed_and_got() {
        let script = format!("{}/tests/mcp_server/server.py", env!("CARGO_MANIFEST_DIR"));
        let cfg = crate::config::McpServer { command: vec!["python3".into(), script], ..Default::default() };
        let (client, _) = McpClient::start("t", &cfg).await.unwrap();
        let prompts = client.prompts();
        let names: Vec<_> = prompts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["greet", "plain"]);
        let args: Vec<_> =
            client.prompts()[0].args.iter().map(|a| (a.name.clone(), a.required, a.description.clone())).collect();
        assert_eq!(args, [("who".into(), true, "whom to greet".into()), ("mood".into(), false, "how".into())]);
        let args = serde_json::json!({"who": "Ada"}).as_object().cloned().unwrap();
        let got = client.get_prompt("greet", args).await.unwrap();
        assert_eq!(got.text, "Please greet Ada in a plain way.");
        let err = client.get_prompt("nope", Map::new()).await.unwrap_err();
        assert!(err.contains("`t` could not give prompt `nope`"), "{err}");
    }
}
