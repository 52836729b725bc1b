//! The user's own slash commands in the chat screen (loaded by the interactive layer from
//! `config::commands` and handed over as data): running one sends its filled-in prompt with its
//! front matter's model, system prompt, tool mode and schema for that one turn. A workspace
//! command that would turn tools on, or change the model or the system prompt, says what it
//! changes and runs only when sent a second time (once a session).

use super::effect::Effect;
use super::slash_menu::{Entry, Kind, one_line};
use super::state::State;
use crate::api::Api;
use crate::config::commands::{CommandSource, UserCommand, expand};
use crate::engine::tool_loop::ToolMode;
use serde_json::{Value, json};
use std::collections::HashSet;

/// The commands and what one of them set for the turn it started.
#[derive(Debug, Clone, Default)]
pub struct Mine {
    /// Sorted by name (from `config::commands::load`).
    pub commands: Vec<UserCommand>,
    /// What the running turn was started with; cleared when the next prompt is sent.
    pub turn: Option<OneTurn>,
    /// Workspace commands with tools the user has confirmed this session.
    pub trusted: HashSet<String>,
    /// The workspace command whose warning is showing: sending it again runs it.
    pub warned: Option<String>,
}

/// One turn's settings from a command's front matter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OneTurn {
    pub model: Option<String>,
    pub system: Option<String>,
    pub response_format: Option<Value>,
    /// The tool mode to put back when the turn is over.
    pub restore_tools: Option<ToolMode>,
}

impl Mine {
    /// The command named `name` (without the slash).
    #[must_use]
    pub fn find(&self, name: &str) -> Option<&UserCommand> {
        self.commands.iter().find(|c| c.name == name)
    }
}

/// A front matter value on one line of the status: quoted, cut at 60 characters, with no
/// terminal controls.
fn shown(value: &str) -> String {
    let one: String = value.split_whitespace().collect::<Vec<_>>().join(" ");
    let short: String = one.chars().take(60).collect();
    let more = if short.len() < one.len() { "…" } else { "" };
    format!("\"{}{more}\"", crate::text::sanitize::sanitize(&short))
}

/// The shape a schema takes in each API.
fn response_format(api: Api, schema: Value) -> Value {
    match api {
        Api::Chat => json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}),
        Api::Responses => json!({"type": "json_schema", "name": "answer", "schema": schema}),
    }
}

impl State {
    /// Runs `text` if it names one of the user's commands; `false` when it does not.
    pub(crate) fn run_user_command(&mut self, text: &str, fx: &mut Vec<Effect>) -> bool {
        let line = text.trim();
        let (head, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let Some(cmd) = head.strip_prefix('/').and_then(|n| self.mine.find(n)).cloned() else { return false };
        // While a turn runs the command waits in the queue as typed; it is expanded, and its
        // one-turn settings taken, when it goes out (never mid-way through the running turn).
        if self.queues_prompt() {
            self.enqueue(text.to_owned());
            return true;
        }
        // A repository's command that turns tools on, or swaps the model or the system prompt,
        // is someone else's say over the next turn: shown, and run when sent again.
        let changes = cmd.changes();
        if cmd.source == CommandSource::Workspace && !changes.is_empty() && !self.mine.trusted.contains(&cmd.name) {
            if self.mine.warned.as_deref() != Some(cmd.name.as_str()) {
                self.mine.warned = Some(cmd.name.clone());
                let path = crate::text::sanitize::sanitize(&cmd.path.display().to_string()).into_owned();
                let said: Vec<String> =
                    changes.iter().map(|(what, value)| format!("{what} {}", shown(value))).collect();
                // The warning first: the path may be long, and the status line cuts at the right.
                self.flash_error(format!(
                    "workspace command /{} changes {}: Enter again runs it · {path}",
                    cmd.name,
                    said.join(", ")
                ));
                return true;
            }
            self.mine.trusted.insert(cmd.name.clone());
        }
        self.mine.warned = None;
        let prompt = expand(&cmd.body, args);
        if prompt.is_empty() {
            self.flash_error(format!("/{} has an empty prompt", cmd.name));
            return true;
        }
        let schema = match cmd.schema.as_deref().map(serde_json::from_str::<Value>) {
            None => None,
            Some(Ok(v)) => Some(response_format(self.target.api, v)),
            Some(Err(e)) => {
                self.flash_error(format!("/{}: its schema is not JSON ({e})", cmd.name));
                return true;
            }
        };
        let tools = match cmd.tools.as_deref().map(|t| (t, ToolMode::parse(t))) {
            None => None,
            Some((_, Some(mode))) => Some(mode),
            Some((t, None)) => {
                let t = crate::text::sanitize::sanitize(t).into_owned();
                self.flash_error(format!("/{}: tools must be auto, ask or none, not {t}", cmd.name));
                return true;
            }
        };
        self.end_one_turn();
        let restore_tools = tools.map(|mode| std::mem::replace(&mut self.tools.flags.mode, mode));
        self.mine.turn = Some(OneTurn {
            model: cmd.model.clone(),
            system: cmd.system.clone(),
            response_format: schema,
            restore_tools,
        });
        self.composer.remember(text);
        // A prompt that starts with a slash is sent as text, not run as a command.
        let prompt = if prompt.starts_with('/') { format!("/{prompt}") } else { prompt };
        self.composer.set_text(&prompt);
        self.send_prompt(prompt, fx);
        true
    }

    /// Puts back what a command set for its turn (called before the next prompt is sent).
    pub(crate) fn end_one_turn(&mut self) {
        if let Some(t) = self.mine.turn.take() {
            if let Some(mode) = t.restore_tools {
                self.tools.flags.mode = mode;
            }
        }
    }

    /// The model the next request goes to: a command's for its turn, else the chat's.
    #[must_use]
    pub fn turn_model(&self) -> String {
        self.mine.turn.as_ref().and_then(|t| t.model.clone()).unwrap_or_else(|| self.target.model.clone())
    }

    /// The request options with what a command set for its turn.
    pub(crate) fn with_one_turn(
        &self,
        mut o: crate::engine::request::RequestOptions,
    ) -> crate::engine::request::RequestOptions {
        if let Some(t) = &self.mine.turn {
            if let Some(m) = &t.model {
                o.model.clone_from(m);
            }
            if let Some(s) = &t.system {
                o.system = Some(s.clone());
            }
            if let Some(rf) = &t.response_format {
                o.response_format = Some(rf.clone());
            }
        }
        o
    }

    /// Tab on `/na`: completes a command name (built in, the user's, an MCP prompt) when one
    /// fits, else opens the `/` menu on the candidates; false when the draft is not a bare
    /// `/name`.
    pub(crate) fn complete_command_name(&mut self) -> bool {
        let typed = self.composer.text();
        if !typed.starts_with('/') || typed.starts_with("//") || typed.contains(char::is_whitespace) {
            return false;
        }
        let found: Vec<Entry> = self.command_entries().into_iter().filter(|e| e.name.starts_with(&typed)).collect();
        match found.as_slice() {
            [] => self.flash(format!("no command starts with {}", crate::text::sanitize::sanitize(&typed))),
            [one] => self.composer.set_text(&format!("{} ", one.name)),
            _ => self.composer.menu.armed = true,
        }
        true
    }

    /// The user's commands as palette rows.
    #[must_use]
    pub fn user_command_rows(&self) -> Vec<(String, String)> {
        self.user_command_entries().into_iter().map(|e| (e.name, e.about)).collect()
    }

    /// The user's commands as menu entries: a prompt with placeholders wants what fills them.
    #[must_use]
    pub fn user_command_entries(&self) -> Vec<Entry> {
        let entry = |c: &UserCommand| Entry {
            name: format!("/{}", c.name),
            args: placeholders(&c.body),
            // Someone else's file: its description is untrusted text for the terminal.
            about: one_line(&c.label()),
            kind: Kind::User,
            params: Vec::new(),
        };
        self.mine.commands.iter().map(entry).collect()
    }
}

/// The argument hint for a prompt template: `ARGUMENTS` for `$ARGUMENTS`, else `$1 $2` for
/// the numbered ones it uses; empty when it takes none.
fn placeholders(body: &str) -> String {
    if body.contains("$ARGUMENTS") {
        return "ARGUMENTS".to_owned();
    }
    let used: Vec<String> = (1..=9).map(|n| format!("${n}")).filter(|p| body.contains(p.as_str())).collect();
    used.join(" ")
}

#[cfg(test)]
#[path = "user_commands_tests.rs"]
mod tests;
