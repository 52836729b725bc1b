//! Whether the server ignored the tools it was sent. llama.cpp with a chat template that has
//! no tool support takes `tools` and drops them without a word; the model then never calls one,
//! and nothing else tells the user why. What gives it away is the prompt's size: the server's
//! count (`usage.prompt_tokens`) comes out below what the tool definitions alone would take.
//!
//! The rule: tools were sent whose definitions come to at least [`MIN_TOOL_TOKENS`] (estimated
//! at four bytes a token, as everywhere else), and the server counted fewer than half of that
//! for the whole prompt. Half, because a server that renders the tools more tersely than JSON
//! (OpenAI's own counts run below the JSON's) must not be accused; the smaller definitions are
//! left alone, their estimate too rough to tell a dropped list from a short one. A prompt count
//! of zero is no count (some servers send zeros); a long conversation can hide the drop (its
//! messages alone outweigh the tools), which only delays the notice to a shorter one. The rule
//! trusts the count to cover the whole prompt, cached part included, as llama.cpp, vLLM, OpenAI
//! and current Ollama do; a server counting only what it had not cached could be misread.

use super::usage::UsageView;
use serde_json::Value;

/// Definitions estimated below this many tokens are too small to judge by.
pub const MIN_TOOL_TOKENS: u64 = 150;

/// A server that seems to have ignored the tools: how many were sent, the prompt it counted,
/// and what the definitions alone come to (estimated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolsIgnored {
    pub tools: usize,
    pub prompt_tokens: u64,
    pub tool_tokens: u64,
}

/// The finding for one request that sent `definitions` and got `usage` back, if the rule says so.
#[must_use]
pub fn check(definitions: &[Value], usage: Option<&Value>) -> Option<ToolsIgnored> {
    if definitions.is_empty() {
        return None;
    }
    let tool_tokens = super::compact::definitions_tokens(definitions);
    let prompt_tokens = UsageView::from_raw(usage?).prompt.filter(|&p| p > 0)?;
    (tool_tokens >= MIN_TOOL_TOKENS && prompt_tokens < tool_tokens / 2).then_some(ToolsIgnored {
        tools: definitions.len(),
        prompt_tokens,
        tool_tokens,
    })
}

impl ToolsIgnored {
    /// The notice, said once: what was seen and the likely cause.
    #[must_use]
    pub fn notice(&self) -> String {
        let s = if self.tools == 1 { "" } else { "s" };
        format!(
            "the server seems to have ignored the {} tool{s} it was sent (the prompt counted {} tokens, the tool \
             definitions alone are about {}): llama.cpp does this with a chat template without tool support \
             (start it with --jinja and a tool-aware template)",
            self.tools, self.prompt_tokens, self.tool_tokens
        )
    }

    /// The `tools_ignored` object of the headless result line.
    #[must_use]
    pub fn json(&self) -> Value {
        serde_json::json!({"tools": self.tools, "prompt_tokens": self.prompt_tokens, "tool_tokens": self.tool_tokens})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn builtins() -> Vec<Value> {
        crate::tools::Registry::builtins().definitions()
    }

    #[test]
    fn a_prompt_smaller_than_the_tools_means_they_were_dropped() {
        let defs = builtins();
        let found = check(&defs, Some(&json!({"prompt_tokens": 31, "completion_tokens": 10}))).unwrap();
        assert_eq!((found.tools, found.prompt_tokens), (defs.len(), 31));
        assert!(found.tool_tokens >= MIN_TOOL_TOKENS, "{found:?}");
        let notice = found.notice();
        assert!(notice.contains(&format!("ignored the {} tools", defs.len())) && notice.contains("31 tokens"));
        assert!(notice.contains("chat template without tool support"), "{notice}");
        // Responses' name for the count reads the same.
        assert!(check(&defs, Some(&json!({"input_tokens": 31}))).is_some());
    }

    #[test]
    fn a_prompt_that_holds_the_tools_or_no_count_says_nothing() {
        let defs = builtins();
        let tools = check(&defs, Some(&json!({"prompt_tokens": 1}))).unwrap().tool_tokens;
        // Rendered tersely (half the JSON's estimate) still counts as sent.
        assert_eq!(check(&defs, Some(&json!({"prompt_tokens": tools / 2 + 30}))), None);
        assert_eq!(check(&defs, Some(&json!({"prompt_tokens": tools * 2}))), None);
        assert_eq!(check(&defs, Some(&json!({"prompt_tokens": 0}))), None);
        assert_eq!(check(&defs, Some(&json!({"completion_tokens": 5}))), None);
        assert_eq!(check(&defs, None), None);
        assert_eq!(check(&[], Some(&json!({"prompt_tokens": 3}))), None);
        // One small tool is too little to tell by.
        let small = [json!({"name": "now", "description": "the time", "parameters": {"type": "object"}})];
        assert_eq!(check(&small, Some(&json!({"prompt_tokens": 3}))), None);
    }
}
