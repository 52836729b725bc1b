//! Provider profiles from `config.toml`, and turning one into an `Endpoint` (key resolved from
//! an environment variable or a command; never stored, never printed).

use crate::api::Api;
use crate::api::client::{AuthStyle, Endpoint, Secret, Timeouts};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct TimeoutSecs {
    pub connect: Option<f64>,
    pub first_byte: Option<f64>,
    pub idle: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
pub struct ProviderProfile {
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    /// A command whose stdout is the key (`pass show openai`).
    pub api_key_cmd: Option<String>,
    pub api: Option<String>,
    #[serde(default)]
    pub models: Vec<String>,
    pub default_model: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `bearer` (default) or `api-key` (Azure).
    pub auth: Option<String>,
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    /// Send `stream_options.include_usage` (default true; some providers reject it).
    pub include_usage: Option<bool>,
    pub timeouts: Option<TimeoutSecs>,
    pub max_retries: Option<u32>,
    /// Responses API: chain turns with `previous_response_id` (providers that store responses).
    pub previous_response_id: Option<bool>,
    /// Extra top-level request fields for every request to this provider.
    #[serde(default)]
    pub request: BTreeMap<String, toml::Value>,
    /// Whether tools are offered to this provider's models (default: not offered).
    pub tools: Option<ToolsSetting>,
}

/// `tools = "auto" | "ask" | "none"` in a profile, and `--tools`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolsSetting {
    /// Offer tools; run read-only ones without asking.
    Auto,
    /// Offer tools; ask for every call.
    Ask,
    /// Offer none.
    None,
}

impl ProviderProfile {
    #[must_use]
    pub fn api(&self) -> Api {
        self.api.as_deref().and_then(Api::parse).unwrap_or_default()
    }

    /// The endpoint for this profile, with `key` already resolved.
    #[must_use]
    pub fn endpoint(&self, base_url: &str, key: Secret) -> Endpoint {
        let mut timeouts = Timeouts::default();
        if let Some(t) = &self.timeouts {
            let secs = |v: Option<f64>, d: Duration| v.map_or(d, |s| Duration::from_secs_f64(s.max(0.001)));
            timeouts.connect = secs(t.connect, timeouts.connect);
            timeouts.first_byte = secs(t.first_byte, timeouts.first_byte);
            timeouts.idle = secs(t.idle, timeouts.idle);
        }
        Endpoint {
            base_url: base_url.to_owned(),
            key,
            auth: if self.auth.as_deref() == Some("api-key") { AuthStyle::ApiKeyHeader } else { AuthStyle::Bearer },
            headers: self.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            query: self.query.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            timeouts,
            max_retries: self.max_retries.unwrap_or(3),
            max_retry_wait: Duration::from_secs(60),
        }
    }
}

/// Resolves a key: `api_key_cmd` first, else the named variable. A missing key is empty (local
/// servers need none); a failing command is an error that does not echo its output.
///
/// # Errors
/// When `api_key_cmd` cannot be run or exits non-zero.
pub fn resolve_key(env_var: &str, cmd: Option<&str>) -> Result<Secret, String> {
    if let Some(cmd) = cmd {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stderr(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("api_key_cmd could not be run: {e}"))?;
        if !out.status.success() {
            return Err(format!("api_key_cmd exited with {}", out.status));
        }
        return Ok(Secret::new(String::from_utf8_lossy(&out.stdout).trim().to_owned()));
    }
    Ok(Secret::new(std::env::var(env_var).unwrap_or_default()))
}
