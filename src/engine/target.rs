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
}

impl TurnSettings {
    /// The request options for `model` on `target`.
    #[must_use]
    pub fn request_options(&self, target: &Target, model: &str) -> RequestOptions {
        RequestOptions {
            model: model.to_owned(),
            stream: self.stream,
            system: self.system.clone(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            reasoning_effort: self.reasoning_effort.clone(),
            include_usage: target.include_usage,
            extra: target.request_extra.clone(),
            chain_responses: target.chain_responses,
            detail: self.detail.clone(),
            send_image_data: target.attachments.images == crate::config::attachments::ImagesSetting::Yes,
            ..RequestOptions::default()
        }
    }
}
