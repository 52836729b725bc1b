//! Azure OpenAI content-filter annotations, in the exact shapes Azure puts on the wire.

use serde_json::{Value, json};

fn rated(filtered: bool, severity: &str) -> Value {
    json!({ "filtered": filtered, "severity": severity })
}

fn detected(filtered: bool, detected: bool) -> Value {
    json!({ "filtered": filtered, "detected": detected })
}

/// `prompt_filter_results` for a prompt that passed every check.
pub fn prompt_safe() -> Value {
    prompt(detected(false, false))
}

/// `prompt_filter_results` for a prompt that looks like a jailbreak attempt. Azure only
/// annotates it (filtered:false) when the deployment's policy is "annotate"; a blocking
/// policy would reject the request with a 400 instead of streaming.
pub fn prompt_jailbreak() -> Value {
    prompt(detected(false, true))
}

fn prompt(jailbreak: Value) -> Value {
    json!([{
        "prompt_index": 0,
        "content_filter_results": {
            "hate": rated(false, "safe"),
            "jailbreak": jailbreak,
            "self_harm": rated(false, "safe"),
            "sexual": rated(false, "safe"),
            "violence": rated(false, "safe"),
        }
    }])
}

/// `content_filter_results` for a completion chunk where nothing was found.
pub fn content_safe() -> Value {
    content("safe", None)
}

/// `content_filter_results` for a completion chunk. Azure filters from `high` severity
/// under its default policy, so that is where `filtered` turns true.
pub fn content(violence: &str, code_citation: Option<Value>) -> Value {
    let code = match code_citation {
        Some(citation) => json!({ "filtered": false, "detected": true, "citation": citation }),
        None => detected(false, false),
    };
    json!({
        "hate": rated(false, "safe"),
        "protected_material_code": code,
        "protected_material_text": detected(false, false),
        "self_harm": rated(false, "safe"),
        "sexual": rated(false, "safe"),
        "violence": rated(violence == "high", violence),
    })
}

pub fn github_citation() -> Value {
    json!({ "URL": "https://github.com/example/repo", "license": "MIT" })
}
