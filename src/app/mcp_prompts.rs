//! MCP prompts as slash commands in the chat screen: `/mcp:SERVER:PROMPT arg=value …` (or the
//! values alone, in the prompt's argument order). The prompt is fetched off the UI task
//! (`ToolEffect::GetPrompt`, answered by `ToolMsg::Prompt`) and its text is sent as the user's
//! prompt, its images as attachments. Names and descriptions come from an untrusted server and
//! are sanitised before they are shown.

use super::effect::Effect;
use super::slash_menu::{Entry, Kind, Param, one_line};
use super::state::State;
use super::tools::ToolEffect;
use crate::text::sanitize::sanitize;
#[cfg(test)]
use crate::tools::mcp::prompts::PromptArg;
use crate::tools::mcp::prompts::{PromptInfo, PromptText};
use serde_json::{Map, Value};

/// What every MCP prompt command starts with.
pub const PREFIX: &str = "/mcp:";

/// A typed `/mcp:SERVER:PROMPT …` line, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Typed {
    pub server: String,
    pub prompt: String,
    /// The words after the name (double quotes group words, and are removed).
    pub words: Vec<String>,
}

/// Splits `/mcp:SERVER:PROMPT args`; `None` when `text` is not an MCP prompt command.
///
/// # Errors
/// When the server or prompt name is missing.
pub fn parse(text: &str) -> Option<Result<Typed, String>> {
    let rest = text.trim().strip_prefix(PREFIX)?;
    let (head, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let Some((server, prompt)) = head.split_once(':').filter(|(s, p)| !s.is_empty() && !p.is_empty()) else {
        return Some(Err(format!("write {PREFIX}SERVER:PROMPT, then its arguments")));
    };
    Some(Ok(Typed { server: server.to_owned(), prompt: prompt.to_owned(), words: words(args) }))
}

/// Words split at whitespace outside double quotes.
fn words(text: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in text.chars() {
        match c {
            '"' => (quoted, any) = (!quoted, true),
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => (cur, any) = (cur + c.encode_utf8(&mut [0; 4]), true),
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// The arguments for `info`: `name=value` words by name, the others in argument order.
///
/// # Errors
/// A value with no argument left for it, or a required argument without a value (named).
pub fn bind(info: &PromptInfo, words: &[String]) -> Result<Map<String, Value>, String> {
    let args = assign(info, words)?;
    if let Some(missing) = missing(info, &args).first() {
        return Err(format!("{} needs its argument `{missing}` (write {missing}=…)", info.name));
    }
    Ok(args)
}

/// The required arguments of `info` that `args` has no value for.
fn missing(info: &PromptInfo, args: &Map<String, Value>) -> Vec<String> {
    info.args.iter().filter(|a| a.required && !args.contains_key(&a.name)).map(|a| a.name.clone()).collect()
}

/// `words` given to `info`'s arguments, by name and then in order.
fn assign(info: &PromptInfo, words: &[String]) -> Result<Map<String, Value>, String> {
    let mut args = Map::new();
    let mut loose = Vec::new();
    for w in words {
        match w.split_once('=') {
            Some((k, v)) if info.args.iter().any(|a| a.name == k) => {
                args.insert(k.to_owned(), Value::String(v.to_owned()));
            }
            _ => loose.push(w),
        }
    }
    let mut free = info.args.iter().filter(|a| !args.contains_key(&a.name)).map(|a| a.name.clone()).collect::<Vec<_>>();
    free.reverse();
    for w in loose {
        let Some(name) = free.pop() else {
            return Err(format!("{} takes no more arguments than {}", info.name, info.args.len()));
        };
        args.insert(name, Value::String(w.clone()));
    }
    Ok(args)
}

impl State {
    /// Runs `text` if it is an MCP prompt command; `false` when it is not one.
    pub(crate) fn run_mcp_prompt(&mut self, text: &str, fx: &mut Vec<Effect>) -> bool {
        let typed = match parse(text) {
            None => return false,
            Some(Err(e)) => {
                self.flash_error(e);
                return true;
            }
            Some(Ok(t)) => t,
        };
        let shown = sanitize(&format!("{PREFIX}{}:{}", typed.server, typed.prompt)).into_owned();
        if self.queues_prompt() {
            self.flash_error(format!("{shown} runs when the reply has finished: send it again then"));
            return true;
        }
        let set = self.tools.set.clone();
        let Some(client) = set.0.mcp_clients().iter().find(|c| c.name() == typed.server) else {
            self.flash_error(format!("no MCP server is called {}", sanitize(&typed.server)));
            return true;
        };
        let prompts = client.prompts();
        let Some(info) = prompts.iter().find(|p| p.name == typed.prompt) else {
            self.flash_error(format!(
                "MCP server {} has no prompt {}",
                sanitize(&typed.server),
                sanitize(&typed.prompt)
            ));
            return true;
        };
        match bind(info, &typed.words) {
            Ok(args) => {
                self.composer.remember(text);
                self.flash(format!("getting {shown} …"));
                fx.push(Effect::Tools(ToolEffect::GetPrompt { set, server: typed.server, prompt: typed.prompt, args }));
            }
            Err(e) => self.flash_error(format!("{PREFIX}{}: {}", sanitize(&typed.server), sanitize(&e))),
        }
        true
    }

    /// The prompt arrived: its images become chips, its text is sent as the user's prompt.
    pub(crate) fn on_prompt_got(&mut self, got: Result<PromptText, String>, fx: &mut Vec<Effect>) {
        let got = match got {
            Ok(g) => g,
            Err(e) => return self.flash_error(sanitize(&e).into_owned()),
        };
        for (n, (_, bytes)) in got.images.into_iter().enumerate() {
            match crate::engine::attachment::Attachment::from_bytes(&format!("prompt image {}", n + 1), bytes) {
                Ok(a) => self.attachments.push(a),
                Err(e) => {
                    self.transcript.push_notice(super::transcript::NoticeKind::Error, e.0);
                }
            }
        }
        self.pasted_paths.resize(self.attachments.len(), None);
        if !got.dropped.is_empty() {
            let what = sanitize(&got.dropped.join(", ")).into_owned();
            self.transcript
                .push_notice(super::transcript::NoticeKind::Info, format!("the prompt also had {what}: not sent"));
        }
        if got.text.trim().is_empty() && self.attachments.is_empty() {
            return self.flash_error("the MCP prompt came back empty");
        }
        // A prompt that starts with a slash is sent as text, not run as a command.
        let text = if got.text.starts_with('/') { format!("/{}", got.text) } else { got.text };
        self.end_one_turn();
        self.composer.set_text(&text);
        self.send_prompt(text, fx);
    }

    /// The MCP prompts as command rows: (`/mcp:SERVER:PROMPT`, sanitised description and arguments).
    #[must_use]
    pub fn mcp_prompt_rows(&self) -> Vec<(String, String)> {
        let row = |e: Entry| (e.name, format!("{} {}", e.about, e.args).trim().to_owned());
        self.mcp_prompt_entries().into_iter().map(row).collect()
    }

    /// The MCP prompts (and `/resource`, when a server has resources) as menu entries, every
    /// word from the server sanitised and on one line; optional arguments in brackets.
    #[must_use]
    pub fn mcp_prompt_entries(&self) -> Vec<Entry> {
        let mut rows = Vec::new();
        let clients = self.tools.set.0.mcp_clients();
        if clients.iter().any(|c| !c.resources().is_empty()) {
            rows.push(Entry {
                name: "/resource".to_owned(),
                args: "[URI]".to_owned(),
                about: "list MCP resources; /resource URI attaches one".to_owned(),
                kind: Kind::Mcp,
                params: Vec::new(),
            });
        }
        for c in clients {
            for p in c.prompts().iter() {
                let params: Vec<Param> = p
                    .args
                    .iter()
                    .map(|a| Param { name: one_line(&a.name), required: a.required, about: one_line(&a.description) })
                    .collect();
                let args: Vec<String> =
                    params.iter().map(|a| if a.required { a.name.clone() } else { format!("[{}]", a.name) }).collect();
                rows.push(Entry {
                    // The name is typed back: sanitised, never cut.
                    name: sanitize(&format!("{PREFIX}{}:{}", c.name(), p.name)).into_owned(),
                    args: args.join(" "),
                    about: one_line(&p.description),
                    kind: Kind::Mcp,
                    params,
                });
            }
        }
        rows
    }

    /// The required arguments an MCP prompt line (`/mcp:t:greet mood=warm`) has no value for
    /// yet (sanitised); empty for any other line.
    #[must_use]
    pub fn missing_prompt_args(&self, text: &str) -> Vec<String> {
        let Some(Ok(typed)) = parse(text) else { return Vec::new() };
        let clients = self.tools.set.0.mcp_clients();
        let Some(client) = clients.iter().find(|c| c.name() == typed.server) else { return Vec::new() };
        let prompts = client.prompts();
        let Some(info) = prompts.iter().find(|p| p.name == typed.prompt) else { return Vec::new() };
        let given = assign(info, &typed.words).unwrap_or_default();
        missing(info, &given).iter().map(|n| one_line(n)).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn greet() -> PromptInfo {
        PromptInfo {
            name: "greet".into(),
            description: String::new(),
            args: vec![
                PromptArg { name: "who".into(), required: true, description: String::new() },
                PromptArg { name: "mood".into(), required: false, description: String::new() },
            ],
        }
    }

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_line_splits_into_server_prompt_and_words() {
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("/model x"), None);
        let t = parse("/mcp:fs:greet who=\"Ada L\" warm").unwrap().unwrap();
        assert_eq!(t, Typed { server: "fs".into(), prompt: "greet".into(), words: strs(&["who=Ada L", "warm"]) });
        assert_eq!(parse("/mcp:fs:plain").unwrap().unwrap().words, Vec::<String>::new());
        assert!(parse("/mcp:fs").unwrap().is_err());
        assert!(parse("/mcp::x").unwrap().is_err());
        assert_eq!(words("a \"\" b"), strs(&["a", "", "b"]));
    }

    #[test]
    fn arguments_bind_by_name_then_in_order() {
        let args = bind(&greet(), &strs(&["mood=warm", "Ada"])).unwrap();
        assert_eq!(Value::Object(args), serde_json::json!({"who": "Ada", "mood": "warm"}));
        let args = bind(&greet(), &strs(&["Ada", "grim"])).unwrap();
        assert_eq!(Value::Object(args), serde_json::json!({"who": "Ada", "mood": "grim"}));
        // A word with `=` that names no argument is a value.
        let args = bind(&greet(), &strs(&["a=b"])).unwrap();
        assert_eq!(Value::Object(args), serde_json::json!({"who": "a=b"}));
    }

    #[test]
    fn a_missing_required_argument_is_named_and_extra_ones_refused() {
        let err = bind(&greet(), &strs(&["mood=warm"])).unwrap_err();
        assert_eq!(err, "greet needs its argument `who` (write who=…)");
        let err = bind(&greet(), &strs(&["a", "b", "c"])).unwrap_err();
        assert_eq!(err, "greet takes no more arguments than 2");
    }

    /// A state whose tools include the scripted test server as `t`.
    pub(crate) async fn with_test_server() -> State {
        let script = format!("{}/tests/mcp_server/server.py", env!("CARGO_MANIFEST_DIR"));
        let server = crate::config::McpServer { command: vec!["python3".into(), script], ..Default::default() };
        let mut cfg = crate::config::McpConfig::default();
        cfg.servers.insert("t".into(), server);
        let mut registry = crate::tools::Registry::builtins();
        assert!(registry.add_mcp_servers(&cfg).await.is_empty());
        let mut s = crate::app::test_state();
        s.tools.set = super::super::tools::ToolSet(std::sync::Arc::new(registry));
        s
    }

    #[tokio::test]
    async fn a_prompt_command_asks_the_server_then_sends_its_text() {
        let mut s = with_test_server().await;
        let rows = s.mcp_prompt_rows();
        assert_eq!(rows[0].0, "/resource", "the server lists resources");
        assert_eq!(rows[1], ("/mcp:t:greet".to_owned(), "Greets someone politely. who [mood]".to_owned()));
        let mut fx = Vec::new();
        s.submit("/mcp:t:greet mood=warm".into(), &mut fx);
        assert!(fx.is_empty());
        let f = s.flash.clone().unwrap();
        assert!(f.error && f.text.contains("needs its argument `who`"), "{}", f.text);
        s.submit("/mcp:t:nope".into(), &mut fx);
        assert!(s.flash.clone().unwrap().text.contains("has no prompt nope"));
        s.submit("/mcp:t:greet Ada".into(), &mut fx);
        let Some(Effect::Tools(ToolEffect::GetPrompt { server, prompt, args, .. })) = fx.pop() else {
            panic!("no GetPrompt effect")
        };
        assert_eq!((server.as_str(), prompt.as_str()), ("t", "greet"));
        assert_eq!(Value::Object(args), serde_json::json!({"who": "Ada"}));
        let got = PromptText { text: "Please greet Ada.".into(), ..PromptText::default() };
        s.on_tools_msg(super::super::tools::ToolMsg::Prompt(Ok(got)), &mut fx);
        let body = fx.iter().find_map(|e| match e {
            Effect::StartRequest { body, .. } => Some(body),
            _ => None,
        });
        let last = body.and_then(|b| b["messages"].as_array()).and_then(|m| m.last()).cloned().unwrap_or_default();
        assert_eq!(last["content"], "Please greet Ada.");
    }

    #[test]
    fn an_unknown_server_is_said() {
        let mut s = crate::app::test_state();
        let mut fx = Vec::new();
        s.submit("/mcp:gone:x".into(), &mut fx);
        assert!(fx.is_empty());
        assert_eq!(s.flash.clone().unwrap().text, "no MCP server is called gone");
    }
}
