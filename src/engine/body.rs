//! A request's body as the chat screen hands it out: the messages it carries, shared with the
//! transcript (`Arc`), and the JSON, built from them on first use. The request task asks first,
//! on a blocking thread, so a prompt sent after 10,000 messages copies and serialises none of
//! them on the UI task; the flow inspector reads the same JSON later, built once.

use super::message::Message;
use super::request::{RequestOptions, build_body};
use crate::api::Api;
use serde_json::Value;
use std::sync::{Arc, OnceLock};

/// What a request body is made of, until its JSON is asked for.
struct Parts {
    api: Api,
    messages: Vec<Arc<Message>>,
    opts: RequestOptions,
}

/// A request's body, built lazily (see the module header). Reads as its JSON (`Deref`, as
/// `LazyLock` does): the first read builds it, so a read on the UI task before the request
/// task's would put the work back there; only tests and the inspector read it.
pub struct Body {
    parts: Option<Parts>,
    json: OnceLock<Value>,
}

impl Body {
    /// The body of a request on `api` carrying `messages` (what [`build_body`] makes of them:
    /// `compact::sendable` still decides what goes), built when first read.
    #[must_use]
    pub fn new(api: Api, messages: Vec<Arc<Message>>, opts: RequestOptions) -> Self {
        Self { parts: Some(Parts { api, messages, opts }), json: OnceLock::new() }
    }

    /// The JSON that is sent, built on the first call.
    #[must_use]
    pub fn json(&self) -> &Value {
        self.json.get_or_init(|| match &self.parts {
            Some(p) => build_body(p.api, &p.messages, &p.opts),
            None => Value::Null,
        })
    }

    /// The messages the body is built from (none for a body made from JSON).
    #[must_use]
    pub fn messages(&self) -> &[Arc<Message>] {
        self.parts.as_ref().map_or(&[], |p| &p.messages)
    }
}

/// A body already built (sampling, headless runs, tests).
impl From<Value> for Body {
    fn from(json: Value) -> Self {
        Self { parts: None, json: OnceLock::from(json) }
    }
}

impl std::ops::Deref for Body {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.json()
    }
}

/// Printed as its JSON when built; a debug print never builds it.
impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.json.get() {
            Some(json) => json.fmt(f),
            None => write!(f, "Body(not built yet, {} messages)", self.messages().len()),
        }
    }
}

/// Two bodies are equal when they send the same JSON.
impl PartialEq for Body {
    fn eq(&self, other: &Self) -> bool {
        self.json() == other.json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_once_on_first_read_from_the_shared_messages() {
        let msgs = vec![Arc::new(Message::user("hello"))];
        let opts = RequestOptions { model: "m".into(), ..RequestOptions::default() };
        let body = Body::new(Api::Chat, msgs.clone(), opts.clone());
        assert!(body.json.get().is_none(), "nothing is built before it is read");
        assert!(format!("{body:?}").contains("not built"), "a debug print builds nothing");
        assert!(Arc::ptr_eq(&body.messages()[0], &msgs[0]), "the messages are shared, not copied");
        assert_eq!(*body, build_body(Api::Chat, &msgs, &opts));
        assert!(std::ptr::eq(body.json(), body.json()), "built once");
        assert_eq!(Body::from(serde_json::json!({"a": 1}))["a"], 1);
    }
}
