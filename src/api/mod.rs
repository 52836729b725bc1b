//! Everything that touches HTTP and nothing that draws: wire types, SSE framing, the two
//! mappers into one domain `StreamEvent`, provider errors, retries, the client.

pub mod batch;
pub mod chat_fast;
pub mod chat_mapper;
pub mod client;
pub mod endpoint;
pub mod errors;
pub mod event;
pub mod json_bounded;
pub mod limits;
pub mod redact;
pub mod reply_cache;
pub mod responses_mapper;
pub mod retry;
pub mod sse;
pub mod timings;
pub mod window;
pub mod wire;

use event::StreamEvent;
use serde_json::Value;

/// Which OpenAI-compatible API a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    #[default]
    Chat,
    Responses,
}

impl Api {
    #[must_use]
    pub fn path(self) -> &'static str {
        match self {
            Self::Chat => "chat/completions",
            Self::Responses => "responses",
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Responses => "responses",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "chat" | "chat.completions" | "chat_completions" => Some(Self::Chat),
            "responses" => Some(Self::Responses),
            _ => None,
        }
    }
}

/// The stream mapper for either API, behind one call.
#[derive(Debug)]
pub enum Mapper {
    Chat(chat_mapper::ChatMapper),
    Responses(responses_mapper::ResponsesMapper),
}

impl Mapper {
    #[must_use]
    pub fn new(api: Api) -> Self {
        match api {
            Api::Chat => Self::Chat(chat_mapper::ChatMapper::new()),
            Api::Responses => Self::Responses(responses_mapper::ResponsesMapper::new()),
        }
    }

    /// Maps one SSE event (its `event:` type and data, as received) into domain events.
    pub fn map(&mut self, event: &str, data: &[u8], out: &mut Vec<StreamEvent>) {
        match self {
            Self::Chat(m) => m.map_bytes(data, out),
            Self::Responses(m) => m.map_data(event, &String::from_utf8_lossy(data), out),
        }
    }
}

/// Maps a complete non-streaming response body of `api`.
#[must_use]
pub fn map_full_response(api: Api, body: &Value) -> Vec<StreamEvent> {
    match api {
        Api::Chat => chat_mapper::map_full_response(body),
        Api::Responses => responses_mapper::map_full_response(body),
    }
}
pub mod models;
