//! Structured outputs on the chat screen: `/schema JSON|SHORT|off` sets the schema the next
//! replies must follow (sent as `response_format` / `text.format`, as `--schema` does), and each
//! finished reply is checked: a line under it says ✓ or names the failing path. An answer
//! that parsed as JSON is kept here as a value, which the chat screen draws as highlighted,
//! foldable JSON (`ui::json_view`) with the failing value's line marked.

use super::state::State;
use super::transcript::NoticeKind;
use crate::engine::structured::Structured;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// An answer checked against a schema, as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonView {
    pub value: Value,
    /// The first error: the failing value's JSON pointer (`""` the whole answer) and why.
    pub error: Option<(String, String)>,
}

/// The answers shown as JSON, by message id, and which of them the user folded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonViews {
    views: HashMap<u64, JsonView>,
    folded: HashSet<u64>,
}

impl JsonViews {
    /// Message `id`'s JSON view, if its answer is shown as JSON.
    #[must_use]
    pub fn get(&self, id: u64) -> Option<&JsonView> {
        self.views.get(&id)
    }

    /// Whether message `id`'s nested levels are folded.
    #[must_use]
    pub fn folded(&self, id: u64) -> bool {
        self.folded.contains(&id)
    }

    /// What the render cache keys a message's body on: 0 plain, 1 JSON, 2 JSON folded.
    #[must_use]
    pub fn salt(&self, id: u64) -> u8 {
        match (self.views.contains_key(&id), self.folded(id)) {
            (false, _) => 0,
            (true, false) => 1,
            (true, true) => 2,
        }
    }

    /// Forgets every view (the transcript was cleared or replaced).
    pub fn clear(&mut self) {
        self.views.clear();
        self.folded.clear();
    }
}

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
        if let Some(value) = v.value.clone() {
            let error = v.errors.first().map(|e| (e.path.clone(), e.message.clone()));
            self.json_views.views.insert(id, JsonView { value, error });
        }
        let (kind, text) = match v.first_error() {
            None => (NoticeKind::Info, "✓ the answer follows the schema".to_owned()),
            Some(why) => (NoticeKind::Error, format!("the answer does not follow the schema {why}")),
        };
        self.transcript.push_notice(kind, crate::text::sanitize::sanitize(&text).into_owned());
    }

    /// Folds or unfolds the nested levels of the selected answer, when it is shown as JSON;
    /// false when it is not (the key then does what it does elsewhere).
    pub(crate) fn toggle_json_fold(&mut self) -> bool {
        let Some(id) = self.selected.filter(|id| self.json_views.views.contains_key(id)) else { return false };
        if !self.json_views.folded.remove(&id) {
            self.json_views.folded.insert(id);
        }
        self.dirty = true;
        true
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
                crate::app::effect::Effect::StartRequest { id, body, .. } => {
                    Some((*id, serde_json::Value::clone(body)))
                }
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
        assert!(last_notice(&s).starts_with("the answer does not follow the schema at /age: "), "{}", last_notice(&s));
        s.schema_command(Some("off"));
        let before = s.transcript.cells.len();
        let body = send_and_answer(&mut s, "free");
        assert!(body.get("response_format").is_none());
        s.schema_command(Some("age integr"));
        assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("integr")));
        let free = s.transcript.cells[before..].iter().find_map(Cell::message).map(|m| m.id).unwrap();
        assert_eq!(s.json_views.salt(free), 0, "a free answer is not shown as JSON");
    }

    #[test]
    fn a_checked_answer_is_kept_as_json_and_enter_folds_it() {
        let mut s = crate::app::test_state();
        s.schema_command(Some("name, age int"));
        send_and_answer(&mut s, r#"{"name": "Ada", "age": "old"}"#);
        let id = s.transcript.cells.iter().rev().find_map(Cell::message).map(|m| m.id).unwrap();
        let view = s.json_views.get(id).expect("a JSON view");
        assert_eq!(view.value["name"], "Ada");
        assert_eq!(view.error.as_ref().map(|e| e.0.as_str()), Some("/age"));
        assert_eq!(s.json_views.salt(id), 1);
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)));
        assert_eq!(s.selected, Some(id));
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        assert!(s.json_views.folded(id) && s.json_views.salt(id) == 2);
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        assert_eq!(s.json_views.salt(id), 1, "Enter again unfolds");
    }
}
