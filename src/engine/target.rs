//! Where a turn goes (provider, endpoint, API, model) and the user's settings for it.

use crate::api::Api;
use crate::api::client::Endpoint;
use crate::config::provider::ToolsSetting;
use crate::demo::DemoServer;
use crate::engine::request::RequestOptions;
use crate::engine::tool_loop::ToolMode;

/// Everything a turn needs to know about where it goes.
#[derive(Debug, Clone)]
pub struct Target {
    pub provider: String,
    pub endpoint: Endpoint,
    pub api: Api,
    pub model: String,
    pub include_usage: bool,
    /// Responses: chain with `previous_response_id` (profile `previous_response_id = true`).
    pub chain_responses: bool,
    /// Profile extras merged into every request.
    pub request_extra: serde_json::Map<String, serde_json::Value>,
    /// Keeps the embedded demo server alive while the target is in use.
    pub demo: Option<std::sync::Arc<DemoServer>>,
    /// The profile's `tools` setting (the demo provider's profile turns them on).
    pub tools: Option<ToolsSetting>,
    /// Why the demo provider answers when nobody asked for it (`--demo` leaves this empty):
    /// what palaver looked for and did not find, for the stderr note and the welcome screen.
    pub fallback: Option<String>,
    /// The profile's `attachments` table: kinds taken and size limits.
    pub attachments: crate::config::attachments::AttachmentPolicy,
    /// Set when this target continues a stored conversation (`--continue`, `--resume`): what
    /// the conversation had before, and what is different now and why.
    pub continued: Option<Continued>,
    /// The profile's `sandbox` and `sandbox_network`: the OS sandbox commands run in.
    pub sandbox: crate::tools::sandbox::Policy,
    /// The profile's `structured_outputs = "json_object"`: the provider takes no schema, so
    /// `--schema` asks for JSON and carries the schema in the system prompt.
    pub json_object_only: bool,
    /// The profile's batch API (`batch = true`) and its discount: `compare --batch` needs one.
    pub batch: Option<crate::config::provider::BatchTerms>,
}

impl Target {
    /// Whether tools are offered, and how their calls run: `--tools` when given, else the
    /// profile's `tools`, else off — a model sees no tool unless the user turned tools on.
    #[must_use]
    pub fn tool_mode(&self, flag: Option<ToolsSetting>) -> ToolMode {
        match flag.or(self.tools) {
            Some(ToolsSetting::Auto) => ToolMode::Auto,
            Some(ToolsSetting::Ask) => ToolMode::Ask,
            Some(ToolsSetting::None) | None => ToolMode::Off,
        }
    }

    /// The base URL as it may be stored with a conversation: none for the embedded demo
    /// (its port changes every run), secrets stripped (see [`storable_url`]).
    #[must_use]
    pub fn storable_base_url(&self) -> Option<String> {
        self.demo.is_none().then(|| storable_url(&self.endpoint.base_url))
    }
}

/// What a stored conversation last talked to. Never a key: the base URL is kept without its
/// user name, password or secret query parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredTarget {
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api: Option<String>,
}

/// One way a continued conversation differs from where it was, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// `provider`, `base_url`, `model` or `api`.
    pub what: &'static str,
    pub before: String,
    pub after: String,
    /// The flag that asked for it, or what palaver found (the provider is gone from the config).
    pub why: String,
}

/// How `--continue` or `--resume` took up a stored conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continued {
    /// The conversation's id.
    pub id: String,
    /// What the conversation had.
    pub before: StoredTarget,
    /// What is different now; empty when it continues exactly where it was.
    pub changes: Vec<Change>,
    /// Anything else worth saying (the profile's base URL moved since, and the conversation
    /// stays where it was).
    pub note: Option<String>,
}

impl Continued {
    /// One line for stderr and the chat screen when anything changed: each change as
    /// `what before → after (why)`.
    #[must_use]
    pub fn notice(&self) -> Option<String> {
        let mut parts: Vec<String> =
            self.changes.iter().map(|c| format!("{} {} → {} ({})", c.what, c.before, c.after, c.why)).collect();
        parts.extend(self.note.clone());
        if parts.is_empty() {
            return None;
        }
        let what = if self.changes.is_empty() { "where it was" } else { "with a change" };
        Some(format!("conversation {} continues {what}: {}", self.id, parts.join("; ")))
    }

    /// The `"continued"` object of the `--json` result line.
    #[must_use]
    pub fn json(&self) -> serde_json::Value {
        let b = &self.before;
        let changes: Vec<serde_json::Value> = self
            .changes
            .iter()
            .map(|c| serde_json::json!({"what": c.what, "before": c.before, "after": c.after, "why": c.why}))
            .collect();
        serde_json::json!({"id": self.id, "provider": b.provider, "base_url": b.base_url, "model": b.model,
            "api": b.api, "changed": changes, "notice": self.notice()})
    }
}

pub use crate::api::redact::storable_url;

/// The model a reply names: the one asked for, and the one the server says answered when it
/// reports another (`asked gpt-4o-mini · served gpt-4o-mini-2024-07-18`). Routers and Azure
/// answer with a dated or routed id as a matter of course: both are shown, neither is an error.
#[must_use]
pub fn model_label(asked: Option<&str>, served: Option<&str>) -> String {
    match (asked, served_differs(asked, served)) {
        (Some(a), Some(s)) => format!("asked {a} · served {s}"),
        (None, Some(s)) => s.to_owned(),
        (Some(a), None) => a.to_owned(),
        (None, None) => "assistant".to_owned(),
    }
}

/// The served model when it is not the one asked for (a server that names none, or the same
/// one, gives `None`).
#[must_use]
pub fn served_differs<'a>(asked: Option<&str>, served: Option<&'a str>) -> Option<&'a str> {
    served.filter(|s| !s.is_empty() && Some(*s) != asked)
}

/// The user's per-conversation request settings (flags, `/system`, `/set`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnSettings {
    pub stream: bool,
    pub system: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub reasoning_effort: Option<String>,
    /// `--tools` (or the profile's): whether tools are offered and which calls run without asking.
    pub tools: ToolMode,
    /// `--yes`: approve every tool call.
    pub yes: bool,
    /// `--detail`: how closely the model looks at attached images (`auto`, `low`, `high`).
    pub detail: Option<String>,
    /// `--schema` / `/schema`: the schema the answer must follow.
    pub schema: Option<super::structured::Structured>,
    /// `--logprobs [N]` / `/logprobs [N]`: token log probabilities, N alternatives per token.
    pub logprobs: Option<u8>,
    /// The `seed` sent where the API takes one (a prompt set's repeated samples).
    pub seed: Option<u64>,
}

impl TurnSettings {
    /// The request options for `model` on `target`.
    #[must_use]
    pub fn request_options(&self, target: &Target, model: &str) -> RequestOptions {
        let mut system = self.system.clone();
        if let Some(s) = self.schema.as_ref().filter(|_| target.json_object_only) {
            // `json_object` alone says nothing of the shape: the schema goes in the prompt.
            let line = s.instruction();
            system = Some(system.map_or_else(|| line.clone(), |sys| format!("{sys}\n\n{line}")));
        }
        RequestOptions {
            model: model.to_owned(),
            stream: self.stream,
            system,
            response_format: self.schema.as_ref().map(|s| s.format(target.api, target.json_object_only)),
            logprobs: self.logprobs,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            reasoning_effort: self.reasoning_effort.clone(),
            include_usage: target.include_usage,
            extra: target.request_extra.clone(),
            chain_responses: target.chain_responses,
            detail: self.detail.clone(),
            send_image_data: target.attachments.images == crate::config::attachments::ImagesSetting::Yes,
            seed: self.seed,
            ..RequestOptions::default()
        }
    }
}

/// A target on the demo profile at an address nothing answers, for unit tests that only
/// build requests or read replies.
#[cfg(test)]
#[must_use]
pub fn test_target(api: Api, model: &str) -> Target {
    let profile = crate::config::ProviderProfile::demo();
    Target {
        provider: "demo".into(),
        endpoint: profile.endpoint("http://127.0.0.1:9/v1", crate::api::client::Secret::default()),
        api,
        model: model.into(),
        include_usage: true,
        chain_responses: false,
        request_extra: serde_json::Map::new(),
        demo: None,
        tools: None,
        fallback: None,
        attachments: crate::config::attachments::AttachmentPolicy::default(),
        continued: None,
        sandbox: crate::tools::sandbox::Policy::configured(None, None),
        json_object_only: false,
        batch: profile.batch_terms(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storable_urls_keep_no_secret() {
        assert_eq!(storable_url("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
        assert_eq!(storable_url("https://user:pa55@host.example/v1"), "https://host.example/v1");
        assert_eq!(storable_url("https://tok@host.example:8443/v1/"), "https://host.example:8443/v1/");
        assert_eq!(
            storable_url("https://h/v1?api-version=2024-10-21&key=AIza-secret&access_token=t#frag"),
            "https://h/v1?api-version=2024-10-21"
        );
        assert_eq!(storable_url("https://h/v1?key=s"), "https://h/v1");
        // An @ in the path is not user info.
        assert_eq!(storable_url("http://h/v1/@models"), "http://h/v1/@models");
    }

    #[test]
    fn the_served_model_shows_beside_the_asked_one_only_when_it_differs() {
        assert_eq!(model_label(Some("gpt-4o-mini"), Some("gpt-4o-mini")), "gpt-4o-mini");
        assert_eq!(model_label(Some("gpt-4o-mini"), None), "gpt-4o-mini");
        assert_eq!(
            model_label(Some("gpt-4o-mini"), Some("gpt-4o-mini-2024-07-18")),
            "asked gpt-4o-mini · served gpt-4o-mini-2024-07-18"
        );
        assert_eq!(model_label(None, Some("x")), "x");
        assert_eq!(model_label(None, None), "assistant");
        assert_eq!(served_differs(Some("a"), Some("")), None);
    }

    #[test]
    fn a_continued_conversation_names_each_change_once_in_one_line() {
        let c = Continued {
            id: "c1".into(),
            before: StoredTarget::default(),
            changes: vec![Change { what: "provider", before: "a".into(), after: "b".into(), why: "--provider".into() }],
            note: None,
        };
        assert_eq!(c.notice().as_deref(), Some("conversation c1 continues with a change: provider a → b (--provider)"));
        let j = c.json();
        assert_eq!(j["changed"][0]["after"], "b");
        assert_eq!(j["id"], "c1");
        let same = Continued { changes: Vec::new(), ..c };
        assert_eq!(same.notice(), None);
        assert!(same.json()["changed"].as_array().is_some_and(Vec::is_empty));
    }
}
