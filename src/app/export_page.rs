//! `/export html [PATH]`: the conversation on screen as one self-contained page (the page
//! itself is `store::export_html`). The state hands the messages to the runner, which builds
//! and writes the page off the UI task and answers with `ToolMsg::PageExported`.

use super::effect::Effect;
use super::state::State;
use super::tools::ToolEffect;
use crate::store::export::{Export, FORMAT, VERSION};
use crate::store::ids::rfc3339;

impl State {
    /// Starts writing the page; `arg` is `html [PATH]` (html is the only format here: Markdown
    /// and JSON are `palaver history export`).
    pub(crate) fn export_page(&mut self, arg: Option<&str>, fx: &mut Vec<Effect>) {
        let arg = arg.unwrap_or("html").trim();
        let (format, path) = arg.split_once(char::is_whitespace).unwrap_or((arg, ""));
        if format != "html" {
            self.flash_error(not_html(format, self.persist.id.as_deref()));
            return;
        }
        let messages: Vec<_> = self.transcript.cells.iter().filter_map(|c| c.message().cloned()).collect();
        if messages.is_empty() {
            self.flash_error("nothing to export yet");
            return;
        }
        let now = rfc3339(self.now_ms);
        let export = Export {
            format: FORMAT.into(),
            version: VERSION,
            id: self.persist.id.clone().unwrap_or_else(|| "unsaved".into()),
            title: self.persist.title.clone().unwrap_or_default(),
            model: Some(self.target.model.clone()),
            provider: Some(self.target.provider.clone()),
            api: Some(self.target.api.name().to_owned()),
            created_at: now.clone(),
            updated_at: now,
            compare_group: None,
            compare_column: None,
            active_branch: 0,
            messages,
            branches: Vec::new(),
            attachments: std::collections::BTreeMap::new(),
        };
        let path = Some(path.trim().to_owned()).filter(|p| !p.is_empty());
        fx.push(Effect::Tools(ToolEffect::ExportPage { export: Box::new(export), path }));
    }
}

/// Why `/export FORMAT` did nothing: Markdown and JSON are `history export`'s (named with this
/// conversation's id when it is saved), anything else is no format palaver writes.
fn not_html(format: &str, id: Option<&str>) -> String {
    match format {
        "md" | "json" => {
            let id = id.unwrap_or("ID");
            format!("/export writes html only; for {format}: palaver history export {id} --format {format}")
        }
        _ => format!("/export html [PATH] writes the conversation as a page; `{format}` is not a format it knows"),
    }
}

#[cfg(test)]
mod tests {
    use crate::app::effect::Effect;
    use crate::app::tools::ToolEffect;
    use crate::app::transcript::Cell;
    use crate::engine::message::Message;

    #[test]
    fn export_html_hands_the_messages_to_the_runner() {
        let mut s = crate::app::test_state();
        let mut fx = Vec::new();
        s.export_page(Some("html"), &mut fx);
        assert!(fx.is_empty(), "an empty conversation is not exported");
        s.transcript.cells.push(Cell::Message(Message::user("hi <b>").into()));
        s.export_page(Some("html /tmp/x.html"), &mut fx);
        match fx.as_slice() {
            [Effect::Tools(ToolEffect::ExportPage { export, path })] => {
                assert_eq!(export.messages.len(), 1);
                assert_eq!(path.as_deref(), Some("/tmp/x.html"));
            }
            other => panic!("{other:?}"),
        }
        fx.clear();
        s.export_page(Some("pdf"), &mut fx);
        assert!(fx.is_empty());
        // pdf is no format at all: not one `history export` writes either.
        let flash = s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
        assert!(flash.contains("`pdf` is not a format") && !flash.contains("history export"), "{flash}");
        s.export_page(Some("md"), &mut fx);
        assert!(fx.is_empty());
        let flash = s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
        assert!(flash.ends_with("palaver history export ID --format md"), "{flash}");
    }
}
