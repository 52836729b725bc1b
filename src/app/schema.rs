//! Structured outputs on the chat screen: `/schema JSON|SHORT|off` sets the schema the next
//! replies must follow (sent as `response_format` / `text.format`, as `--schema` does), and each
//! finished reply is checked: a line under it says ✓ or names the failing path.

use super::state::State;
use super::transcript::NoticeKind;
use crate::engine::structured::Structured;

impl State {
    /// `/schema JSON|SHORT|off`; alone, says which schema is in use.
    pub(crate) fn schema_command(&mut self, arg: Option<&str>) {
        match arg {
            None => {
                let text = match &self.settings.schema {
                    Some(s) => format!("schema: {}", s.schema),
                    None => "no schema: /schema 'name, age int, tags [str]' (or inline JSON) sets one".to_owned(),
                };
                self.transcript.push_notice(NoticeKind::Info, crate::text::sanitize::sanitize(&text).into_owned());
            }
            Some("off" | "none") => {
                self.settings.schema = None;
                self.flash("schema off: answers are free text again");
            }
            Some(spec) => match Structured::from_text(spec, None) {
                Ok(s) => {
                    let fields = s.schema.get("required").map(ToString::to_string).unwrap_or_default();
                    self.settings.schema = Some(s);
                    self.flash(format!("schema on {fields}: the next answers must follow it"));
                }
                Err(e) => self.flash_error(format!("/schema: {e}")),
            },
        }
        self.dirty = true;
    }

    /// After reply `id` finished: a line saying whether it follows the schema, and where not.
    pub(crate) fn schema_verdict(&mut self, id: u64) {
        let Some(schema) = &self.settings.schema else { return };
        let Some(m) = self.transcript.message(id) else { return };
        if !m.main().tool_calls.is_empty() {
            return;
        }
        let v = schema.check(&m.main().content);
        let (kind, text) = match v.first_error() {
            None => (NoticeKind::Info, "✓ the answer follows the schema".to_owned()),
            Some(why) => (NoticeKind::Error, format!("✗ the answer does not follow the schema {why}")),
        };
        self.transcript.push_notice(kind, crate::text::sanitize::sanitize(&text).into_owned());
    }
}

#[cfg(test)]
mod tests {
    use crate::api::client::WireEvent;
    use crate::api::event::StreamEvent;
    use crate::app::msg::Msg;
    use crate::app::transcript::Cell;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    fn send_and_answer(s: &mut crate::app::State, answer: &str) -> serde_json::Value {
        for c in "a person".chars() {
            s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
        }
        let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        let (id, body) = fx
            .iter()
            .find_map(|e| match e {
                crate::app::effect::Effect::StartRequest { id, body, .. } => Some((*id, body.clone())),
                _ => None,
            })
            .unwrap();
        let events = vec![
            StreamEvent::Text { choice: 0, delta: answer.into() },
            StreamEvent::Finish { choice: 0, reason: "stop".into() },
            StreamEvent::End,
        ];
        let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 };
        s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 110 });
        s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 21 }), now_ms: 121 });
        body
    }

    fn last_notice(s: &crate::app::State) -> String {
        s.transcript
            .cells
            .iter()
            .rev()
            .find_map(|c| match c {
                Cell::Notice(n) => Some(n.text.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_schema_is_sent_and_each_answer_checked() {
        let mut s = crate::app::test_state();
        s.schema_command(Some("name, age int"));
        let body = send_and_answer(&mut s, r#"{"name": "Ada", "age": 36}"#);
        assert_eq!(body["response_format"]["json_schema"]["schema"]["required"], serde_json::json!(["name", "age"]));
        assert_eq!(last_notice(&s), "✓ the answer follows the schema");
        send_and_answer(&mut s, r#"{"name": "Ada", "age": "old"}"#);
        assert!(
            last_notice(&s).starts_with("✗ the answer does not follow the schema at /age: "),
            "{}",
            last_notice(&s)
        );
        s.schema_command(Some("off"));
        let body = send_and_answer(&mut s, "free");
        assert!(body.get("response_format").is_none());
        s.schema_command(Some("age integr"));
        assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("integr")));
    }
}
