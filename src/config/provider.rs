//! Provider profiles from `config.toml`, and turning one into an `Endpoint` (key resolved from
//! an environment variable or a command; never stored, never printed).

use crate::api::Api;
use crate::api::client::{AuthStyle, Endpoint, Secret, Timeouts};
use crate::api::endpoint::KeySource;
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
    /// Seconds `api_key_cmd` may run (default 30).
    pub api_key_cmd_timeout: Option<f64>,
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
    /// Limits on what this provider's replies may make palaver hold or send (each one named,
    /// unset ones at their defaults): `limits = { reply_bytes = 16777216 }`.
    pub limits: Option<crate::api::limits::Limits>,
    /// What this provider takes as attachments (images, URLs only, files) and how large.
    #[serde(default)]
    pub attachments: super::attachments::AttachmentPolicy,
    /// The OS sandbox commands run in for this provider's models (default workspace-write).
    pub sandbox: Option<SandboxMode>,
    /// Whether sandboxed commands may open network sockets, TCP, UDP and the rest (default: closed).
    pub sandbox_network: Option<bool>,
    /// The catalogue's id for this profile's models, when the provider names them otherwise
    /// (an Azure deployment called `prod-chat` that runs `gpt-4o-mini`).
    pub catalogue_model: Option<String>,
    /// A local server's preset: no key is needed, so an unset `api_key_env` is no error.
    #[serde(default)]
    pub key_optional: bool,
    /// How `--schema` is asked for: `json_schema` (default, strict) or `json_object` for
    /// providers that take only "answer in JSON" (the schema then goes in the system prompt).
    pub structured_outputs: Option<StructuredOutputs>,
    /// The provider has OpenAI's batch API (`/files` + `/batches`): `compare --batch` may use it.
    pub batch: Option<bool>,
    /// The batch API's discount off the listed prices, a share (0.5 = half price; default 0.5).
    pub batch_discount: Option<f64>,
}

/// What a provider's batch API costs, when it has one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchTerms {
    /// Share taken off the listed prices (0.5: half price).
    pub discount: f64,
}

/// Discount a batch API gets unless its profile says otherwise (OpenAI's, Azure's, Groq's…).
pub const DEFAULT_BATCH_DISCOUNT: f64 = 0.5;

/// `structured_outputs = "json_schema" | "json_object"` in a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutputs {
    /// `response_format`/`text.format` of type `json_schema`, strict.
    #[default]
    JsonSchema,
    /// Only `{"type": "json_object"}`.
    JsonObject,
}

/// `sandbox = …` in a profile or a `[[tools]]` entry; it lives with the sandbox, in `sys`.
pub use crate::sys::spawn::sandbox::SandboxMode;

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

    /// The batch API this profile says its provider has, and its discount.
    #[must_use]
    pub fn batch_terms(&self) -> Option<BatchTerms> {
        let discount = self.batch_discount.unwrap_or(DEFAULT_BATCH_DISCOUNT).clamp(0.0, 1.0);
        (self.batch == Some(true)).then_some(BatchTerms { discount })
    }

    /// The embedded demo provider's profile: it serves the batch API too.
    #[must_use]
    pub fn demo() -> Self {
        Self { batch: Some(true), ..Self::default() }
    }

    /// How long `api_key_cmd` may run.
    #[must_use]
    pub fn key_cmd_timeout(&self) -> Duration {
        self.api_key_cmd_timeout
            .map_or(API_KEY_CMD_TIMEOUT, |s| Duration::try_from_secs_f64(s.max(0.001)).unwrap_or(API_KEY_CMD_TIMEOUT))
    }

    /// Where this profile's key comes from: its command wins over its variable.
    #[must_use]
    pub fn key_source(&self) -> KeySource {
        match (&self.api_key_cmd, &self.api_key_env) {
            (Some(cmd), _) => KeySource::Command(cmd.clone()),
            (None, Some(var)) => KeySource::Env(var.clone()),
            (None, None) => KeySource::Env("OPENAI_API_KEY".to_owned()),
        }
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
            key_source: self.key_source(),
            auth: if self.auth.as_deref() == Some("api-key") { AuthStyle::ApiKeyHeader } else { AuthStyle::Bearer },
            headers: self.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            query: self.query.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            timeouts,
            max_retries: self.max_retries.unwrap_or(3),
            max_retry_wait: Duration::from_secs(60),
            limits: self.limits.unwrap_or_default(),
            face: crate::api::errors::Face::Headless,
            cache: None,
        }
    }
}

/// How long `api_key_cmd` may run unless the profile says otherwise.
pub const API_KEY_CMD_TIMEOUT: Duration = Duration::from_secs(30);
/// After this long a running `api_key_cmd` is announced on stderr (a password manager may be
/// waiting for a passphrase or a touch).
const API_KEY_CMD_NOTICE_AFTER: Duration = Duration::from_secs(1);

/// Resolves a key: `api_key_cmd` first, else the named variable. A missing variable is an empty
/// key (local servers need none); a command that fails, prints nothing or outlives `timeout` is
/// an error naming it, that does not echo its output. With `announce`, a command still running
/// after a second is said so on stderr (not under the chat screen: it would garble it).
///
/// # Errors
/// When `api_key_cmd` cannot be run, exits non-zero, times out or prints nothing.
pub fn resolve_key(env_var: &str, cmd: Option<&str>, timeout: Duration, announce: bool) -> Result<Secret, String> {
    let Some(cmd) = cmd else {
        return Ok(Secret::new(std::env::var(env_var).unwrap_or_default()));
    };
    let key = run_key_cmd(cmd, timeout, announce)?;
    if key.is_empty() {
        return Err(format!("api_key_cmd `{cmd}` printed nothing; it should print the API key on stdout"));
    }
    Ok(Secret::new(key))
}

/// Runs the key command in its own process group (so a timeout ends whatever it started),
/// reading its stdout on a thread so a full pipe never stalls it.
fn run_key_cmd(cmd: &str, timeout: Duration, announce: bool) -> Result<String, String> {
    use crate::sys::spawn::{EnvPolicy, Role, Spawn};
    // palaver's whole environment: the user's credential helper may need its own tokens
    // (`VAULT_TOKEN`, `OP_SERVICE_ACCOUNT_TOKEN`) or agent sockets, and its output is the key,
    // never shown to anyone. Still its own group, ended with what it started.
    let mut spawn = Spawn::new("sh", Role::Contained, &EnvPolicy::all());
    spawn
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = spawn.std().map_err(|e| format!("api_key_cmd `{cmd}` could not be run: {e}"))?;
    let _running = KeyCmd::new(child.id());
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        // A key is short; a command that prints megabytes is not printing a key.
        stdout.as_mut().and_then(|out| crate::sys::read::head(out, 64 * 1024).ok()).unwrap_or_default()
    });
    let started = std::time::Instant::now();
    let mut announced = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(format!("api_key_cmd `{cmd}` could not be waited for: {e}")),
        }
        let waited = started.elapsed();
        if waited >= timeout {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "api_key_cmd `{cmd}` did not finish within {} s; raise api_key_cmd_timeout in the profile if it needs longer",
                timeout.as_secs_f32()
            ));
        }
        if announce && !announced && waited >= API_KEY_CMD_NOTICE_AFTER {
            announced = true;
            eprintln!("palaver: waiting for api_key_cmd `{cmd}` (up to {} s)…", timeout.as_secs_f32());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Whatever the command left running holds the pipe open: end it so the read finishes.
    kill_group(child.id());
    let out = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("api_key_cmd `{cmd}` exited with {status}"));
    }
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

/// Process groups of key commands running now: a Ctrl+C that ends palaver ends them too (in
/// their own group, they do not hear the terminal's Ctrl+C; a password prompt would outlive us).
static KEY_CMDS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Keeps a key command in [`KEY_CMDS`] while it runs.
struct KeyCmd(u32);

impl KeyCmd {
    fn new(pid: u32) -> Self {
        KEY_CMDS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(pid);
        Self(pid)
    }
}

impl Drop for KeyCmd {
    fn drop(&mut self) {
        KEY_CMDS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|p| *p != self.0);
    }
}

/// Ends every key command still running (palaver is about to exit at once).
pub fn kill_key_cmds() {
    let pids = KEY_CMDS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    for pid in pids {
        kill_group(pid);
    }
}

/// Ends a process group palaver started; it lives with the one spawn function.
pub use crate::sys::spawn::kill_group;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_command_timeout_empty_and_failure() {
        let t = Duration::from_millis(300);
        let started = std::time::Instant::now();
        let e = resolve_key("X", Some("sleep 1000"), t, false).err().unwrap_or_default();
        assert!(e.contains("did not finish") && e.contains("sleep 1000"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let e = resolve_key("X", Some("true"), t, false).err().unwrap_or_default();
        assert!(e.contains("printed nothing") && e.contains("`true`"), "{e}");
        let e = resolve_key("X", Some("echo $((6*7)); exit 3"), t, false).err().unwrap_or_default();
        assert!(e.contains("exited") && !e.contains("42"), "{e}");
        let ok = resolve_key("X", Some("echo ' k-1 '"), t, false).map(|s| s.expose().to_owned());
        assert_eq!(ok.as_deref(), Ok("k-1"));
        // A command that leaves a child holding stdout still returns.
        let ok = resolve_key("X", Some("echo k2; sleep 1000 &"), Duration::from_secs(5), false);
        assert_eq!(ok.map(|s| s.expose().to_owned()).as_deref(), Ok("k2"));
    }
}
