//! `/resource`: lists the MCP servers' resources; `/resource URI` reads one off the UI task
//! (`ToolEffect::ReadResource`) and attaches it as a chip through the attachment path (text as
//! a text part, an image blob as an image part), within the attachment limits.

use super::effect::Effect;
use super::state::State;
use super::tools::ToolEffect;
use super::transcript::NoticeKind;
use crate::text::sanitize::sanitize;

/// The command.
const RESOURCE: &str = "/resource";

impl State {
    /// Tab after `/resource `: the first listed URI starting with what is typed, then the next
    /// one on each Tab (back to the first after the last); false when the draft is not that.
    pub(crate) fn complete_resource_uri(&mut self) -> bool {
        let draft = self.composer.text();
        let Some(typed) = draft.strip_prefix(RESOURCE).and_then(|r| r.strip_prefix(' ')) else { return false };
        if draft.contains('\n') {
            return false;
        }
        // Going on from the candidate shown last, or starting from what was typed.
        let (prefix, next) = match self.tools.resource_tab.take() {
            Some((prefix, at, shown)) if shown == draft => (prefix, at + 1),
            _ => (typed.trim().to_owned(), 0),
        };
        let mut uris: Vec<String> = Vec::new();
        for c in self.tools.set.0.mcp_clients() {
            // A URI that needs sanitising for the screen is not put in the draft.
            let fit = |r: &&crate::tools::mcp::resources::ResourceInfo| {
                r.uri.starts_with(&prefix) && sanitize(&r.uri) == r.uri.as_str()
            };
            uris.extend(c.resources().iter().filter(fit).map(|r| r.uri.clone()));
        }
        if uris.is_empty() {
            self.flash_error(format!("no MCP resource URI starts with {}", sanitize(&prefix)));
            return true;
        }
        let at = next % uris.len();
        let shown = format!("{RESOURCE} {}", uris[at]);
        self.composer.set_text(&shown);
        if uris.len() > 1 {
            self.flash(format!("resource {} of {} · Tab for the next", at + 1, uris.len()));
        }
        self.tools.resource_tab = Some((prefix, at, shown));
        true
    }

    /// Runs `text` if it is `/resource [URI]`; `false` when it is not.
    pub(crate) fn run_resource(&mut self, text: &str, fx: &mut Vec<Effect>) -> bool {
        let line = text.trim();
        let Some(rest) = line.strip_prefix(RESOURCE) else { return false };
        if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
            return false;
        }
        let uri = rest.trim();
        let set = self.tools.set.clone();
        let listed: Vec<(String, String, String)> = set
            .0
            .mcp_clients()
            .iter()
            .flat_map(|c| {
                let listed = c.resources();
                listed.iter().map(|r| (c.name().to_owned(), r.uri.clone(), r.name.clone())).collect::<Vec<_>>()
            })
            .collect();
        self.composer.remember(text);
        self.composer.clear();
        if uri.is_empty() {
            if listed.is_empty() {
                self.flash_error("no MCP server lists resources");
                return true;
            }
            let mut lines = vec![format!("MCP resources ({}; /resource URI attaches one):", listed.len())];
            lines.extend(listed.iter().map(|(s, u, n)| format!("  {s}  {u}  {n}")));
            self.transcript.push_notice(NoticeKind::Info, sanitize(&lines.join("\n")).into_owned());
            return true;
        }
        let Some((server, _, name)) = listed.into_iter().find(|(_, u, _)| u == uri) else {
            self.flash_error(format!("no MCP server lists {} (/resource lists them)", sanitize(uri)));
            return true;
        };
        self.flash(format!("reading {} …", sanitize(uri)));
        let name = if name.trim().is_empty() { uri.to_owned() } else { name };
        fx.push(Effect::Tools(ToolEffect::ReadResource { set, server, uri: uri.to_owned(), name }));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn resource_lists_and_asks_for_a_listed_uri() {
        let mut s = crate::app::mcp_prompts::tests::with_test_server().await;
        let mut fx = Vec::new();
        s.submit("/resource".into(), &mut fx);
        assert!(fx.is_empty());
        let shown = format!("{:?}", s.transcript.cells.last());
        assert!(shown.contains("t  test://notes.txt  notes") && shown.contains("test://dot.png"), "{shown}");
        s.submit("/resource test://nope".into(), &mut fx);
        assert!(s.flash.clone().unwrap().text.contains("no MCP server lists test://nope"));
        s.submit("/resource test://notes.txt".into(), &mut fx);
        let Some(Effect::Tools(ToolEffect::ReadResource { server, uri, name, .. })) = fx.pop() else {
            panic!("no ReadResource effect")
        };
        assert_eq!((server.as_str(), uri.as_str(), name.as_str()), ("t", "test://notes.txt", "notes"));
    }

    #[tokio::test]
    async fn a_read_resource_comes_back_as_text_and_image_parts() {
        let s = crate::app::mcp_prompts::tests::with_test_server().await;
        let client = s.tools.set.0.mcp_clients()[0].clone();
        let text = client.read_resource("test://notes.txt", "notes").await.unwrap();
        assert_eq!(text[0].bytes, b"The secret word is pineapple.");
        let png = client.read_resource("test://dot.png", "dot").await.unwrap();
        let a = crate::engine::attachment::Attachment::from_bytes(&png[0].name, png[0].bytes.clone()).unwrap();
        assert!(a.is_image());
        let err = client.read_resource("test://nope", "x").await.unwrap_err();
        assert!(err.contains("could not read test://nope"), "{err}");
    }
}
