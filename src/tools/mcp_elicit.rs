//! Elicitation: a server asking the user for input in the middle of a call (`elicitation/create`).
//! The chat screen registers an asker ([`super::McpClient::on_elicit`]) that opens a form and
//! answers through a oneshot; with no asker (headless, `palaver mcp …`) the request is declined
//! with a reason in the result's `_meta`. A form is turned into [`Field`]s here, from the
//! requested schema (string, number, integer, boolean, enum); everything in it is the server's
//! words, unsanitised: the screen sanitises what it shows.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, MetaObject};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How long a form waits for the user before it is answered "cancel" (the server's call waits
/// as long).
pub const ELICIT_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a request no one can answer is declined.
pub const HEADLESS_REASON: &str = "palaver is running without a screen here: no one can answer a form";

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Its key in the answer.
    pub name: String,
    /// Its title, else its name (unsanitised).
    pub title: String,
    /// What the server says it is for (unsanitised; may be empty).
    pub description: String,
    pub kind: FieldKind,
    pub required: bool,
    /// The value as typed (text and numbers), `"true"`/`"false"` (booleans), or the chosen
    /// option's value (enums); the schema's default to start with.
    pub value: String,
    /// The schema's bounds: `minimum`/`maximum` of a number, `minLength`/`maxLength` (in
    /// characters) of a text, and a text's `format` (`email`, `uri`, `date`, `date-time`).
    pub bounds: Bounds,
}

/// What the schema allows beyond the type; checked before an answer goes back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bounds {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub format: Option<String>,
}

impl Bounds {
    fn of(p: &Value, kind: &FieldKind) -> Self {
        let n = |k: &str| p.get(k).and_then(Value::as_f64);
        match kind {
            FieldKind::Number { .. } => Self { min: n("minimum"), max: n("maximum"), format: None },
            FieldKind::Text => Self {
                min: n("minLength"),
                max: n("maxLength"),
                format: p.get("format").and_then(Value::as_str).map(str::to_owned),
            },
            _ => Self::default(),
        }
    }

    /// The first way `v` (already typed right) breaks the bounds, naming the field.
    fn check(&self, title: &str, v: &Value) -> Result<(), String> {
        let (size, what) = match v {
            Value::Number(n) => (n.as_f64().unwrap_or(0.0), ""),
            #[allow(clippy::cast_precision_loss)]
            Value::String(s) => (s.chars().count() as f64, " characters"),
            _ => return Ok(()),
        };
        if let Some(min) = self.min.filter(|m| size < *m) {
            return Err(format!("{title} must be at least {min}{what}"));
        }
        if let Some(max) = self.max.filter(|m| size > *m) {
            return Err(format!("{title} must be at most {max}{what}"));
        }
        let text = v.as_str().unwrap_or_default();
        let ok = match self.format.as_deref() {
            Some("email") => text.split_once('@').is_some_and(|(a, b)| !a.is_empty() && b.contains('.')),
            Some("uri") => text.contains("://"),
            Some("date") => is_date(text),
            Some("date-time") => {
                text.len() > 10 && is_date(&text[..10]) && text.as_bytes()[10].eq_ignore_ascii_case(&b't')
            }
            _ => true,
        };
        let want = match self.format.as_deref() {
            Some("email") => "an email address",
            Some("uri") => "a URI (scheme://…)",
            Some("date") => "a date (YYYY-MM-DD)",
            _ => "a date and time (YYYY-MM-DDThh:mm:ss)",
        };
        if ok { Ok(()) } else { Err(format!("{title} must be {want}")) }
    }
}

/// `YYYY-MM-DD`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10 && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
}

/// What a field takes.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text,
    /// A number; `integer` when the schema says so.
    Number {
        integer: bool,
    },
    Bool,
    /// One of these (value, label) options.
    Choice(Vec<(String, String)>),
}

/// A form the server asks to be filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// What the server says it needs (unsanitised).
    pub message: String,
    pub fields: Vec<Field>,
}

/// The user's answer to a form.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The values, by field name.
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

/// The way back to the waiting server request; answered once.
#[derive(Clone, Default)]
pub struct Reply(Arc<Mutex<Option<tokio::sync::oneshot::Sender<Answer>>>>);

impl Reply {
    /// Answers the request (a second answer is dropped).
    pub fn send(&self, answer: Answer) {
        if let Some(tx) = self.0.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = tx.send(answer);
        }
    }
}

impl PartialEq for Reply {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reply")
    }
}

/// Where forms go to be answered.
pub type Asker = Arc<dyn Fn(Form, Reply) + Send + Sync>;

/// The asker of a session, if it has one.
pub(super) type AskerSlot = Arc<Mutex<Option<Asker>>>;

impl super::McpClient {
    /// From now on, forms this server asks for go to `asker` (else they are declined).
    pub fn on_elicit(&self, asker: Asker) {
        *self.handler.asker.lock().unwrap_or_else(PoisonError::into_inner) = Some(asker);
    }
}

/// A declined result saying why.
fn declined(reason: &str) -> ElicitResult {
    let mut meta = Map::new();
    meta.insert("reason".into(), Value::String(reason.to_owned()));
    ElicitResult::new(ElicitationAction::Decline).with_meta(MetaObject(meta))
}

/// Answers `elicitation/create`: through the asker, or declined.
pub(super) async fn answer(slot: &AskerSlot, params: ElicitRequestParams) -> ElicitResult {
    let (message, schema) = match params {
        ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
            (message, serde_json::to_value(requested_schema).unwrap_or_default())
        }
        _ => return declined("palaver answers form elicitation only, not URL elicitation"),
    };
    let Some(asker) = slot.lock().unwrap_or_else(PoisonError::into_inner).clone() else {
        return declined(HEADLESS_REASON);
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let reply = Reply(Arc::new(Mutex::new(Some(tx))));
    asker(Form { message, fields: fields(&schema) }, reply);
    match tokio::time::timeout(ELICIT_TIMEOUT, rx).await {
        Ok(Ok(Answer::Accept(values))) => {
            ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(values))
        }
        Ok(Ok(Answer::Decline)) => ElicitResult::new(ElicitationAction::Decline),
        Ok(Ok(Answer::Cancel)) => ElicitResult::new(ElicitationAction::Cancel),
        Ok(Err(_)) => declined("the form was closed without an answer"),
        Err(_) => declined("no answer within the time palaver waits for a form"),
    }
}

/// The fields of a requested schema, in its order; properties of other types are skipped.
#[must_use]
pub fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    props
        .iter()
        .filter_map(|(name, p)| {
            let kind = kind(p)?;
            let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            let title = Some(text("title")).filter(|t| !t.is_empty()).unwrap_or_else(|| name.clone());
            let value = match (&kind, p.get("default")) {
                (_, Some(Value::String(s))) => s.clone(),
                (_, Some(v @ (Value::Number(_) | Value::Bool(_)))) => v.to_string(),
                (FieldKind::Bool, _) => "false".to_owned(),
                (FieldKind::Choice(options), _) if required.contains(&name.as_str()) => {
                    options.first().map(|o| o.0.clone()).unwrap_or_default()
                }
                _ => String::new(),
            };
            let required = required.contains(&name.as_str());
            let bounds = Bounds::of(p, &kind);
            Some(Field { name: name.clone(), title, description: text("description"), kind, required, value, bounds })
        })
        .collect()
}

/// What a property takes, or `None` for a type a form cannot carry.
fn kind(p: &Value) -> Option<FieldKind> {
    let strs = |v: &Value| -> Vec<String> {
        v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
    };
    if let Some(values) = p.get("enum") {
        let values = strs(values);
        let names = p.get("enumNames").map(strs).unwrap_or_default();
        let options = values.iter().enumerate().map(|(i, v)| (v.clone(), names.get(i).unwrap_or(v).clone())).collect();
        return Some(FieldKind::Choice(options));
    }
    if let Some(one_of) = p.get("oneOf").or_else(|| p.get("anyOf")).and_then(Value::as_array) {
        let options: Vec<(String, String)> = one_of
            .iter()
            .filter_map(|o| {
                let v = o.get("const")?.as_str()?.to_owned();
                let label = o.get("title").and_then(Value::as_str).unwrap_or(&v).to_owned();
                Some((v, label))
            })
            .collect();
        return (!options.is_empty()).then_some(FieldKind::Choice(options));
    }
    match p.get("type")?.as_str()? {
        "string" => Some(FieldKind::Text),
        "number" => Some(FieldKind::Number { integer: false }),
        "integer" => Some(FieldKind::Number { integer: true }),
        "boolean" => Some(FieldKind::Bool),
        _ => None,
    }
}

/// The answer's values from the fields, or the first problem (naming the field's title).
///
/// # Errors
/// A required field left empty, or a number that does not parse.
pub fn values(fields: &[Field]) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for f in fields {
        let v = f.value.trim();
        if v.is_empty() {
            if f.required {
                return Err(format!("{} is required", f.title));
            }
            continue;
        }
        let value = match &f.kind {
            FieldKind::Text | FieldKind::Choice(_) => Value::String(f.value.clone()),
            FieldKind::Bool => Value::Bool(v == "true"),
            FieldKind::Number { integer: true } => {
                Value::from(v.parse::<i64>().map_err(|_| format!("{} must be a whole number", f.title))?)
            }
            FieldKind::Number { integer: false } => {
                let n = v.parse::<f64>().ok().and_then(serde_json::Number::from_f64);
                Value::Number(n.ok_or_else(|| format!("{} must be a number", f.title))?)
            }
        };
        f.bounds.check(&f.title, &value)?;
        out.insert(f.name.clone(), value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "required": ["name", "age"], "properties": {
            "name": {"type": "string", "title": "Name", "description": "Your name"},
            "age": {"type": "integer"},
            "ok": {"type": "boolean", "default": true},
            "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l"}]},
            "nested": {"type": "object"}
        }})
    }

    #[test]
    fn a_schema_becomes_fields_with_defaults() {
        let f = fields(&schema());
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["age", "color", "name", "ok", "size"], "serde_json keeps keys sorted; objects are skipped");
        assert_eq!(f[2].title, "Name");
        assert!(f[2].required && f[0].required && !f[3].required);
        assert_eq!(f[0].kind, FieldKind::Number { integer: true });
        assert_eq!(f[1].kind, FieldKind::Choice(vec![("r".into(), "Red".into()), ("g".into(), "Green".into())]));
        assert_eq!(f[4].kind, FieldKind::Choice(vec![("s".into(), "Small".into()), ("l".into(), "l".into())]));
        assert_eq!(f[3].value, "true");
    }

    #[test]
    fn values_are_checked_and_typed() {
        let mut f = fields(&schema());
        assert_eq!(values(&f), Err("age is required".to_owned()));
        f[0].value = "4.5".into();
        assert_eq!(values(&f), Err("age must be a whole number".to_owned()));
        f[0].value = "42".into();
        f[2].value = "Ada".into();
        f[1].value = "g".into();
        assert_eq!(
            values(&f),
            Ok(json!({"age": 42, "color": "g", "name": "Ada", "ok": true}).as_object().unwrap().clone())
        );
    }

    #[tokio::test]
    async fn without_an_asker_a_form_is_declined_with_the_reason() {
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form", "message": "who?", "requestedSchema": {"type": "object", "properties": {}}
        }))
        .unwrap();
        let r = answer(&AskerSlot::default(), params).await;
        assert_eq!(r.action, ElicitationAction::Decline);
        assert_eq!(r.meta.unwrap().0["reason"], HEADLESS_REASON);
    }

    #[test]
    fn bounds_and_formats_are_checked_before_an_answer_goes() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "number", "title": "Number in range", "minimum": 1, "maximum": 1000},
            "mail": {"type": "string", "title": "Email", "format": "email", "maxLength": 20}}});
        let mut f = fields(&schema);
        let set = |f: &mut Vec<Field>, n: &str, mail: &str| {
            for x in f.iter_mut() {
                x.value = if x.name == "n" { n.to_owned() } else { mail.to_owned() };
            }
        };
        set(&mut f, "5000", "a@b.io");
        assert_eq!(values(&f), Err("Number in range must be at most 1000".to_owned()));
        set(&mut f, "0", "a@b.io");
        assert_eq!(values(&f), Err("Number in range must be at least 1".to_owned()));
        set(&mut f, "7", "not an address");
        assert_eq!(values(&f), Err("Email must be an email address".to_owned()));
        set(&mut f, "7", "someone.long@example.org");
        assert_eq!(values(&f), Err("Email must be at most 20 characters".to_owned()));
        set(&mut f, "7", "a@b.io");
        assert!(values(&f).is_ok());
    }
}
