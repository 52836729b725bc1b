//! What palaver says when a server refuses or fails: an HTTP error status described with the
//! URL it came from and a hint (a 404 usually means the server does not offer that API, or the
//! base URL lacks its `/v1`), FastAPI-style `{"detail": …}` bodies turned into text, transport
//! failures by their root cause, and a complete 200 reply that holds no choices.
//!
//! It also reads what a refusal says about the request itself ([`Problem`]): a conversation
//! longer than the context window or an image for a model without vision cannot get better by
//! sending it again (`retry.rs` asks), and each comes with what to do.

use super::Api;
use super::endpoint::KeySource;
use super::event::ProviderError;
use serde_json::Value;

/// Said of a non-streamed chat reply whose `choices` list is empty or missing: the server
/// answered, so this is not a stream that ended early.
pub const NO_CHOICES: &str = "the server answered with no choices (its response's `choices` list is empty)";

/// At most this many FastAPI validation errors are listed; the rest are counted.
const MAX_DETAILS: usize = 5;

/// What an error says about the request, when the user can do something about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The conversation (and the room asked for the reply) does not fit the context window.
    ContextOverflow,
    /// The model or the server takes no images.
    NoVision,
    /// The account is out of credit: not a rate limit, waiting does not help.
    Quota,
    /// The key is missing, wrong or refused (401).
    Auth,
    /// The request is larger than the server accepts (413).
    TooLarge,
    /// The server could not read or accept the request as sent (400, 422, or a 5xx that says it
    /// failed to parse what it was given, as llama.cpp does for a tool call's broken arguments).
    BadRequest,
}

/// Codes and types servers give a context overflow: OpenAI and Azure (`code`), llama.cpp
/// (`type`).
const CONTEXT_CODES: &[&str] = &["context_length_exceeded", "exceed_context_size_error", "context_window_exceeded"];

/// How servers word a context overflow in the message (lowercase): OpenAI and vLLM ("This
/// model's maximum context length is 4096 tokens…"), llama.cpp ("request (2009 tokens) exceeds
/// the available context size (512 tokens)", older "input is too large to process"), Ollama,
/// LM Studio and Anthropic-style proxies.
const CONTEXT_WORDS: &[&str] = &[
    "maximum context length",
    "context length exceeded",
    "exceeds the available context size",
    "exceeds the context window",
    "exceeds the context size",
    "context window exceeded",
    "input is too large to process",
    "prompt is too long",
    "too many tokens in the prompt",
    "reduce the length of the messages",
];

/// How servers word "this model takes no images" (lowercase): llama.cpp without an mmproj
/// ("image input is not supported"), vLLM ("… is not a multimodal model"), OpenAI ("image_url
/// is only supported by certain models"), LM Studio and Ollama ("does not support images").
const VISION_WORDS: &[&str] = &[
    "image input is not supported",
    "is not a multimodal model",
    "multimodal is not supported",
    "multimodal input is not supported",
    "image_url is only supported by certain models",
    "does not support image",
    "does not support vision",
    "doesn't support image",
    "images are not supported",
    "image inputs are not supported",
    "vision is not supported",
];

/// How servers word "I could not read what you sent" in a 5xx (lowercase): llama.cpp
/// ("Failed to parse tool call arguments as JSON", "failed to parse messages").
const UNREADABLE_WORDS: &[&str] = &["failed to parse", "invalid request", "could not parse", "cannot parse"];

/// What `err` (with HTTP `status`) says about the request, if it is one of the [`Problem`]s.
#[must_use]
pub fn problem(status: u16, err: &ProviderError) -> Option<Problem> {
    let code = |list: &[&str]| [&err.code, &err.kind].into_iter().flatten().any(|c| list.contains(&c.as_str()));
    let lower = err.message.to_ascii_lowercase();
    let says = |list: &[&str]| list.iter().any(|w| lower.contains(w));
    if code(CONTEXT_CODES) || says(CONTEXT_WORDS) {
        Some(Problem::ContextOverflow)
    } else if says(VISION_WORDS) {
        Some(Problem::NoVision)
    } else if code(&["insufficient_quota"]) {
        Some(Problem::Quota)
    } else if status == 401 {
        Some(Problem::Auth)
    } else if status == 413 {
        Some(Problem::TooLarge)
    } else if matches!(status, 400 | 422) || (status >= 500 && says(UNREADABLE_WORDS)) {
        Some(Problem::BadRequest)
    } else {
        None
    }
}

/// Where a message is shown, so that its hint names a knob that exists there: a flag for a
/// headless run, a slash command on the chat screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Face {
    #[default]
    Headless,
    Screen,
}

/// A request parameter a server may name in a refusal, and the knob that sets it: (words in
/// the message, headless flag, chat-screen command; none: `/set` with the parameter's name).
/// The first match wins.
const KNOBS: &[(&[&str], &str, Option<&str>)] = &[
    (&["logprobs"], "--logprobs", Some("/logprobs")),
    (&["max_output_tokens", "max_completion_tokens", "max_tokens"], "--max-tokens", None),
    (&["temperature"], "--temperature", None),
    (&["reasoning_effort"], "--reasoning-effort", None),
    (&["response_format", "json_schema"], "--schema", Some("/schema")),
    (&["tool_choice", "tools"], "--tools", Some("/tools")),
];

/// The knob for the request parameter the server's `message` names, if any.
fn named_knob(message: &str, face: Face) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    KNOBS.iter().find_map(|(words, flag, cmd)| {
        let word = words.iter().find(|w| lower.contains(**w))?;
        Some(match (face, cmd) {
            (Face::Headless, _) => (*flag).to_owned(),
            (Face::Screen, Some(cmd)) => (*cmd).to_owned(),
            (Face::Screen, None) => format!("/set {word} (or /unset {word})"),
        })
    })
}

/// What the user can do about `p` (the server said `message`), in the knobs of `face`.
#[must_use]
pub fn what_to_do(p: Problem, message: &str, key: &KeySource, key_sent: bool, face: Face) -> String {
    let pick = |headless: &str, screen: &str| match face {
        Face::Headless => headless.to_owned(),
        Face::Screen => screen.to_owned(),
    };
    match p {
        Problem::ContextOverflow => pick(
            "the conversation does not fit the model's context window: send a shorter prompt or fewer \
             attachments, lower --max-tokens, start a new conversation (leave out --continue), or summarise \
             the earlier turns (--continue --compact)",
            "the conversation does not fit the model's context window: send a shorter prompt or fewer \
             attachments, lower max_tokens (/set max_tokens N), summarise the earlier turns (/compact), or \
             start a new conversation (/new)",
        ),
        Problem::NoVision => pick(
            "this model (or server) cannot read images: remove the image, or send it to a model that can (-m)",
            "this model (or server) cannot read images: remove the image, or send it to a model that can (/model)",
        ),
        Problem::Quota => "the account is out of quota: check its plan and billing (retrying will not help)".to_owned(),
        Problem::TooLarge => "the request is larger than the server accepts: attach fewer or smaller files".to_owned(),
        Problem::BadRequest => match named_knob(message, face) {
            Some(knob) => format!(
                "the server refused the request as it was sent, so sending it again will not help: change or \
                 leave out what it names ({knob})"
            ),
            None => pick(
                "the server refused the request as it was sent, so sending it again will not help: check the \
                 model (-m), the request options (--max-tokens, --temperature, the profile's [request] in \
                 config.toml) and the last turn (a tool call's arguments, an attachment)",
                "the server refused the request as it was sent, so sending it again will not help: check the \
                 model (/model), the request options (/set lists them) and the last turn (a tool call's \
                 arguments, an attachment)",
            ),
        },
        Problem::Auth => auth_hint(key, key_sent, face),
    }
}

fn auth_hint(key: &KeySource, key_sent: bool, face: Face) -> String {
    // The chat screen cannot change where the key comes from: that takes a new start.
    let other = match face {
        Face::Headless => "name another variable with --api-key-env",
        Face::Screen => "start palaver again with --api-key-env naming another variable",
    };
    match (key, key_sent) {
        (KeySource::Env(var), false) => format!("no API key was sent: export {var}=… (or {other})"),
        (KeySource::Env(var), true) => format!("the key in {var} was refused: check it, or {other}"),
        (KeySource::Command(_), _) => "the key printed by api_key_cmd was refused: check what it prints".to_owned(),
        (KeySource::Unknown, _) => "the API key was refused: check it".to_owned(),
    }
}

/// Every hint [`what_to_do`] and [`describe_http`] can give on `face`, for the test that each
/// names a knob that exists there.
#[must_use]
pub fn every_hint(face: Face) -> Vec<String> {
    let problems = [
        Problem::ContextOverflow,
        Problem::NoVision,
        Problem::Quota,
        Problem::Auth,
        Problem::TooLarge,
        Problem::BadRequest,
    ];
    let keys = [KeySource::Unknown, KeySource::Env("K".into()), KeySource::Command("pass show k".into())];
    let messages = KNOBS.iter().flat_map(|(words, _, _)| words.iter().copied()).chain(["bad"]);
    let mut out: Vec<String> = Vec::new();
    for message in messages {
        for p in problems {
            for key in &keys {
                for sent in [false, true] {
                    out.push(what_to_do(p, message, key, sent, face));
                }
            }
        }
    }
    let not_found = |code: Option<&str>| ProviderError {
        status: Some(404),
        message: "File Not Found".into(),
        kind: None,
        code: code.map(str::to_owned),
        param: None,
        body: Value::Null,
    };
    for api in [Api::Chat, Api::Responses] {
        for code in [None, Some("model_not_found")] {
            out.push(describe_status(404, "http://h/v1", api, &not_found(code), face));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The message for an HTTP error `status` from `url` (the endpoint of `api`), from the error
/// the body held, with what to do when the error says it (see [`problem`]), in the knobs of
/// `face`.
#[must_use]
pub fn describe_http(
    status: u16,
    url: &str,
    api: Api,
    err: &ProviderError,
    key: &KeySource,
    key_sent: bool,
    face: Face,
) -> String {
    let base = describe_status(status, url, api, err, face);
    match problem(status, err) {
        Some(p) => format!("{} — {}", base.trim_end(), what_to_do(p, &err.message, key, key_sent, face)),
        None => base,
    }
}

fn describe_status(status: u16, url: &str, api: Api, err: &ProviderError, face: Face) -> String {
    if status != 404 {
        return err.message.clone();
    }
    if names_a_model(err) {
        // OpenAI, vLLM and Ollama answer 404 for an unknown model (Azure for an unknown
        // deployment): the API itself is there. Which names the server knows is one command away.
        let lists = match face {
            Face::Headless => "`palaver models` lists the models it offers",
            Face::Screen => "/model lists the models it offers",
        };
        return format!("{} ({url}); {lists}", err.message);
    }
    let other = match api {
        Api::Chat => Api::Responses,
        Api::Responses => Api::Chat,
    };
    let knob = match face {
        Face::Headless => "--api",
        Face::Screen => "/api",
    };
    format!(
        "{url}: {}. The server may not offer the {} API: try {knob} {} (or check the base URL)",
        err.message.trim_end_matches('.'),
        title(api),
        other.name()
    )
}

fn title(api: Api) -> &'static str {
    match api {
        Api::Chat => "Chat Completions",
        Api::Responses => "Responses",
    }
}

fn names_a_model(err: &ProviderError) -> bool {
    matches!(err.code.as_deref(), Some("model_not_found" | "DeploymentNotFound"))
        || err.message.to_ascii_lowercase().contains("model")
}

/// FastAPI's `detail`: a string, an object, or a list of validation errors
/// `{loc: [...], msg, type}`, shown as `body.messages.0.content: Field required; …`.
#[must_use]
pub fn detail_text(detail: &Value) -> Option<String> {
    let text = match detail {
        Value::String(s) => s.trim().to_owned(),
        Value::Array(items) => {
            let mut parts: Vec<String> = items.iter().take(MAX_DETAILS).map(one_detail).collect();
            if items.len() > MAX_DETAILS {
                parts.push(format!("and {} more", items.len() - MAX_DETAILS));
            }
            parts.join("; ")
        }
        Value::Null => String::new(),
        other => one_detail(other),
    };
    (!text.is_empty()).then_some(text)
}

fn one_detail(item: &Value) -> String {
    let msg = item.get("msg").or_else(|| item.get("message")).and_then(Value::as_str);
    let Some(msg) = msg else {
        return match item {
            Value::String(s) => s.clone(),
            other => other.to_string().chars().take(300).collect(),
        };
    };
    let loc: Vec<String> = item
        .get("loc")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|part| match part {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    if loc.is_empty() { msg.to_owned() } else { format!("{}: {msg}", loc.join(".")) }
}

/// The error for a complete chat reply with no choices.
#[must_use]
pub fn no_choices(body: &Value) -> ProviderError {
    ProviderError {
        status: None,
        message: NO_CHOICES.to_owned(),
        kind: None,
        code: None,
        param: None,
        body: body.clone(),
    }
}

/// The innermost cause of an error chain: the part that says what actually happened.
#[must_use]
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &dyn std::error::Error = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// Whether a request failed because the pooled connection it went out on was already closed by
/// the server, before any answer: safe to send once more on a new connection.
#[must_use]
pub fn is_stale_connection(e: &reqwest::Error) -> bool {
    if e.is_connect() || e.is_timeout() || e.is_builder() || e.status().is_some() {
        return false;
    }
    let cause = root_cause(e).to_ascii_lowercase();
    ["connection closed before message completed", "connection reset", "broken pipe"].iter().any(|s| cause.contains(s))
}

/// A request that got no HTTP answer at all.
#[must_use]
pub fn describe_reqwest(e: &reqwest::Error, base_url: &str) -> String {
    // A password in the base URL (`http://user:pass@host`) is never part of a message.
    let shown = super::redact::storable_url(base_url);
    let cause = root_cause(e).replace(base_url, &shown);
    let base_url = shown.as_str();
    if e.is_builder() {
        return format!("{base_url} is not a usable base URL ({cause}); it should look like http://HOST:PORT/v1");
    }
    let mut out = if e.is_connect() {
        format!("could not connect to {base_url}: {cause}")
    } else {
        format!("the request to {base_url} failed: {cause}")
    };
    let lower = cause.to_ascii_lowercase();
    // rustls meeting a plain-HTTP server reads its answer as a corrupt TLS record, or waits for
    // a handshake that never comes (llama.cpp); local servers seldom speak TLS at all.
    let plain_http_likely = lower.contains("corrupt message")
        || lower.contains("invalidcontenttype")
        || (super::endpoint::is_local(base_url) && (e.is_connect() || e.is_timeout()));
    if base_url.starts_with("https://") && plain_http_likely {
        out.push_str(" (is the server plain HTTP? try http://)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::wire::{error_from_body, error_from_value};
    use serde_json::json;

    const URL: &str = "http://127.0.0.1:8080/v1/responses";

    #[test]
    fn a_404_names_the_url_and_suggests_the_other_api() {
        let e = error_from_body(404, br#"{"error":{"message":"File Not Found","type":"not_found_error","code":404}}"#);
        let m = describe_http(404, URL, Api::Responses, &e, &KeySource::Unknown, true, Face::Headless);
        assert_eq!(
            m,
            "http://127.0.0.1:8080/v1/responses: File Not Found. The server may not offer the Responses API: \
             try --api chat (or check the base URL)"
        );
        let e = error_from_body(404, b"<html><body><h1>404 Not Found</h1><hr>nginx</body></html>");
        let m = describe_http(
            404,
            "http://h/v1/chat/completions",
            Api::Chat,
            &e,
            &KeySource::Unknown,
            true,
            Face::Headless,
        );
        assert!(m.starts_with("http://h/v1/chat/completions: 404 Not Found nginx."), "{m}");
        assert!(m.contains("Chat Completions API: try --api responses"), "{m}");
    }

    #[test]
    fn a_404_for_an_unknown_model_is_not_blamed_on_the_api() {
        let e = error_from_value(
            Some(404),
            &json!({"error":{"message":"The model `x` does not exist","code":"model_not_found"}}),
        );
        assert_eq!(
            describe_http(404, URL, Api::Responses, &e, &KeySource::Unknown, true, Face::Headless),
            format!("The model `x` does not exist ({URL}); `palaver models` lists the models it offers")
        );
        // A 400 is the server's own word first, then why sending it again will not help.
        let e = error_from_body(400, br#"{"detail":"bad"}"#);
        let m = describe_http(400, URL, Api::Responses, &e, &KeySource::Unknown, true, Face::Headless);
        assert!(m.starts_with("bad — the server refused the request as it was sent"), "{m}");
    }

    #[test]
    fn errors_that_say_what_is_wrong_say_what_to_do() {
        let ctx = error_from_body(
            400,
            br#"{"error":{"code":400,"message":"request (2009 tokens) exceeds the available context size (512 tokens), try increasing it","type":"exceed_context_size_error"}}"#,
        );
        assert_eq!(problem(400, &ctx), Some(Problem::ContextOverflow));
        let m = describe_http(400, URL, Api::Chat, &ctx, &KeySource::Unknown, true, Face::Headless);
        assert!(m.starts_with("request (2009 tokens) exceeds the available context size"), "{m}");
        assert!(m.contains(" — the conversation does not fit the model's context window"), "{m}");
        assert!(m.contains("leave out --continue") && m.contains("(--continue --compact)"), "{m}");
        assert!(!m.contains("/new"), "headless: flags only: {m}");
        let chat = describe_http(400, URL, Api::Chat, &ctx, &KeySource::Unknown, true, Face::Screen);
        assert!(chat.contains("(/new)") && chat.contains("(/compact)") && chat.contains("/set max_tokens"), "{chat}");
        assert!(!chat.contains("--"), "no flag is suggested on the chat screen: {chat}");
        let img = error_from_body(500, br#"{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}"#);
        let m = describe_http(500, URL, Api::Chat, &img, &KeySource::Unknown, true, Face::Headless);
        assert!(m.ends_with("cannot read images: remove the image, or send it to a model that can (-m)"), "{m}");
        let bad_key = error_from_body(401, br#"{"error":{"message":"Incorrect API key provided"}}"#);
        let env = KeySource::Env("MY_KEY".into());
        let m = describe_http(401, URL, Api::Chat, &bad_key, &env, true, Face::Headless);
        assert_eq!(
            m,
            "Incorrect API key provided — the key in MY_KEY was refused: check it, or name another variable with --api-key-env"
        );
        let m = describe_http(401, URL, Api::Chat, &bad_key, &env, false, Face::Headless);
        assert!(
            m.ends_with("no API key was sent: export MY_KEY=… (or name another variable with --api-key-env)"),
            "{m}"
        );
        let m = describe_http(
            401,
            URL,
            Api::Chat,
            &bad_key,
            &KeySource::Command("pass show k".into()),
            true,
            Face::Headless,
        );
        assert!(m.contains("api_key_cmd"), "{m}");
        // Nothing to add to an error that says nothing palaver can act on.
        let plain = error_from_body(500, br#"{"error":{"message":"The server is overloaded"}}"#);
        assert_eq!(describe_http(500, URL, Api::Chat, &plain, &env, true, Face::Headless), "The server is overloaded");
    }

    #[test]
    fn fastapi_details_are_shown_with_their_location() {
        let body = json!({"detail":[
            {"loc":["body","messages",0,"content"],"msg":"Field required","type":"missing"},
            {"loc":["body","model"],"msg":"Input should be a valid string","type":"string_type"}]});
        let e = error_from_value(Some(422), &body);
        assert_eq!(e.message, "body.messages.0.content: Field required; body.model: Input should be a valid string");
        assert_eq!(error_from_value(Some(400), &json!({"detail":"Model not loaded"})).message, "Model not loaded");
        let many: Vec<Value> = (0..7).map(|i| json!({"loc":["body",i],"msg":"bad"})).collect();
        let t = detail_text(&Value::Array(many)).unwrap_or_default();
        assert!(t.ends_with("body.4: bad; and 2 more"), "{t}");
        assert_eq!(detail_text(&json!({"msg":"x"})).as_deref(), Some("x"));
        assert_eq!(detail_text(&json!("")), None);
    }

    #[test]
    fn a_refusal_naming_a_parameter_names_its_knob_where_it_is_shown() {
        // llama.cpp's Responses API refuses `palaver --logprobs 3` so.
        let e = error_from_body(
            400,
            br#"{"error":{"code":400,"message":"top_logprobs requires logprobs to be set to true","type":"invalid_request_error"}}"#,
        );
        let headless = describe_http(400, URL, Api::Responses, &e, &KeySource::Unknown, true, Face::Headless);
        assert!(headless.ends_with("change or leave out what it names (--logprobs)"), "{headless}");
        assert!(!headless.contains("/set"), "{headless}");
        let screen = describe_http(400, URL, Api::Responses, &e, &KeySource::Unknown, true, Face::Screen);
        assert!(screen.ends_with("(/logprobs)"), "{screen}");
        let e = error_from_body(400, br#"{"error":{"message":"max_output_tokens must be at least 16"}}"#);
        let screen = describe_http(400, URL, Api::Responses, &e, &KeySource::Unknown, true, Face::Screen);
        assert!(screen.ends_with("(/set max_output_tokens (or /unset max_output_tokens))"), "{screen}");
        // Nothing named: the general knobs of each face.
        let e = error_from_body(400, br#"{"error":{"message":"bad"}}"#);
        let headless = describe_http(400, URL, Api::Chat, &e, &KeySource::Unknown, true, Face::Headless);
        assert!(headless.contains("(-m)") && !headless.contains('/'), "{headless}");
        let screen = describe_http(400, URL, Api::Chat, &e, &KeySource::Unknown, true, Face::Screen);
        assert!(screen.contains("(/model)") && screen.contains("/set lists them"), "{screen}");
    }

    #[test]
    fn the_chat_screen_is_pointed_at_its_commands() {
        let ctx = error_from_body(400, br#"{"error":{"message":"x","type":"exceed_context_size_error"}}"#);
        let m = describe_http(400, URL, Api::Chat, &ctx, &KeySource::Unknown, true, Face::Screen);
        assert!(m.contains("/compact") && m.contains("/new") && !m.contains("--"), "{m}");
        let e = error_from_body(404, br#"{"error":{"message":"File Not Found"}}"#);
        let m = describe_http(404, URL, Api::Responses, &e, &KeySource::Unknown, true, Face::Screen);
        assert!(m.contains("try /api chat"), "{m}");
    }
}
