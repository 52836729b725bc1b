//! Slash commands typed in the composer, and the same commands offered by the palette.

use super::effect::Effect;
use super::overlay::{Overlay, PickItem};
use super::state::State;
use super::transcript::NoticeKind;
use crate::api::Api;
use crate::config::theme::Theme;
use crate::engine::tool_loop::ToolMode;

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/model NAME` switches model; without a name it opens the picker.
    Model(Option<String>),
    /// `/system TEXT` sets the system prompt; without text it clears it.
    System(Option<String>),
    /// `/clear` empties the transcript and keeps the settings.
    Clear,
    /// `/new` starts over with the settings palaver started with.
    New,
    /// `/api chat|responses` switches API.
    Api(Option<String>),
    /// `/theme NAME` switches theme.
    Theme(Option<String>),
    /// `/panels` shows or hides the side panels.
    Panels,
    /// `/help` opens the help overlay.
    Help,
    /// `/history` opens the conversation list.
    History,
    /// `/compare A B …` opens compare mode with 2–4 models; `/compare off` leaves it.
    Compare(Vec<String>),
    /// `/here A [B C]`: compare from the selected (or last) turn: other models answer its prompt.
    Here(Vec<String>),
    /// `/arena A B [C D]`: a blind battle of two to four models, then a vote.
    Arena(Vec<String>),
    /// `/set KEY VALUE` sets a request option by dotted key (`reasoning.summary auto`); `/set`
    /// alone lists them.
    Set(Option<(String, String)>),
    /// `/unset KEY` removes a request option.
    Unset(String),
    /// `/tools auto|ask|none` offers tools (or not); alone it says what the next request offers.
    Tools(Option<String>),
    /// `/attach PATH|URL` attaches a file or image to the next message.
    Attach(Option<String>),
    /// `/mouse [on|off]`: capture the mouse (wheel, clicks) or leave it to the terminal's own
    /// selection; alone it switches.
    Mouse(Option<String>),
    /// `/vim`: vim keys in the composer on or off.
    Vim,
    /// `/compact [instructions]`: summarise the earlier turns with the conversation's model; the
    /// summary is sent in their place from then on (they stay in the transcript and the store).
    Compact(Option<String>),
    /// `/export html [PATH]`: the conversation as one self-contained page.
    Export(Option<String>),
    /// `/paste-image`: attach the image on the system clipboard.
    PasteImage,
    /// `/logprobs [N|off]`: token log probabilities on the next replies, N alternatives each.
    Logprobs(Option<String>),
    /// `/schema JSON|SHORT|off`: the schema the next answers must follow; alone, the current one.
    Schema(Option<String>),
}

/// (command, arguments, description): the one table `/help`, the `/` menu, Tab and the palette
/// read. Arguments in brackets may be left out (Enter in the menu runs the command at once);
/// the others are asked for (Enter completes the name and waits for them).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("/model", "[NAME]", "switch model (no name: pick from a list)"),
    ("/system", "TEXT", "set the system prompt (no text: clear it)"),
    ("/api", "chat|responses", "switch API"),
    ("/theme", "[NAME]", "switch theme"),
    ("/panels", "", "show or hide the usage and safety panels"),
    ("/clear", "", "clear the transcript, keep the settings"),
    ("/new", "", "start over with the starting settings (this conversation stays saved)"),
    ("/history", "", "list, search and open saved conversations"),
    ("/compare", "A B [C D]", "compare 2–4 models side by side (provider/model too); /compare off leaves"),
    ("/here", "A [B C]", "compare from here: other models answer the selected (or last) prompt beside this answer"),
    ("/arena", "A B [C D]", "blind arena: 2–4 hidden models answer, you vote (a · b · … · t · n), then names show"),
    (
        "/set",
        "[KEY VALUE]",
        "set a request option: reasoning.effort, reasoning.summary, text.verbosity, truncation, max_output_tokens, parallel_tool_calls, max_tool_calls, service_tier, metadata.K, prompt_cache_key, safety_identifier, … (no key: list them)",
    ),
    ("/unset", "KEY", "remove a request option"),
    (
        "/tools",
        "[auto|ask|none]",
        "offer tools to the model: auto runs read-only ones, ask asks for every call, none offers none",
    ),
    ("/attach", "PATH|URL", "attach a file or image to the next message (Tab completes the path; alt+x removes)"),
    ("/vim", "", "vim keys in the composer (normal, insert, visual) on or off"),
    ("/mouse", "[on|off]", "capture the mouse (wheel, clicks) or leave it to the terminal, so text can be selected"),
    (
        "/compact",
        "[WHAT TO KEEP]",
        "summarise the earlier turns with this model; the summary is sent in their place (they stay saved)",
    ),
    ("/paste-image", "", "attach the image on the system clipboard (also Ctrl+V)"),
    ("/export", "html [PATH]", "write this conversation as one self-contained HTML page (no script, images inline)"),
    ("/logprobs", "[N|off]", "token probabilities on the next replies, N alternatives (p on a reply: its heatmap)"),
    ("/schema", "[JSON|SHORT|off]", "answers must follow a JSON schema ('name, age int, tags [str]'); each is checked"),
    ("/help", "", "keys and commands"),
];

/// Parses a composer line. `None` when it is not a command (no leading slash, or `//` to send
/// a literal slash); `Err` for an unknown command, so the draft stays.
#[must_use]
pub fn parse(line: &str) -> Option<Result<Command, String>> {
    let line = line.trim();
    if !line.starts_with('/') || line.starts_with("//") {
        return None;
    }
    let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let arg = Some(rest.trim().to_owned()).filter(|a| !a.is_empty());
    let cmd = match name {
        "/model" | "/m" => Command::Model(arg),
        "/system" | "/sys" => Command::System(arg),
        "/clear" => Command::Clear,
        "/new" => Command::New,
        "/api" => Command::Api(arg),
        "/theme" => Command::Theme(arg),
        "/panels" => Command::Panels,
        "/help" | "/?" => Command::Help,
        "/history" | "/h" => Command::History,
        "/compare" | "/cmp" => Command::Compare(rest.split_whitespace().map(str::to_owned).collect()),
        "/here" => Command::Here(rest.split_whitespace().map(str::to_owned).collect()),
        "/arena" => Command::Arena(rest.split_whitespace().map(str::to_owned).collect()),
        "/set" => match rest.trim().split_once(char::is_whitespace) {
            Some((k, v)) => Command::Set(Some((k.to_owned(), v.trim().to_owned()))),
            None if rest.trim().is_empty() => Command::Set(None),
            None => return Some(Err("usage: /set KEY VALUE (e.g. /set reasoning.summary auto)".into())),
        },
        "/tools" => Command::Tools(arg),
        "/mouse" => Command::Mouse(arg),
        "/vim" => Command::Vim,
        "/compact" => Command::Compact(arg),
        "/export" => Command::Export(arg),
        "/paste-image" | "/paste" => Command::PasteImage,
        "/logprobs" => Command::Logprobs(arg),
        "/schema" => Command::Schema(arg),
        // The rest of the line is the path, spaces and all.
        "/attach" | "/a" => Command::Attach(Some(rest.trim().to_owned()).filter(|r| !r.is_empty())),
        "/unset" => match arg {
            Some(k) => Command::Unset(k),
            None => return Some(Err("usage: /unset KEY".into())),
        },
        other => {
            return Some(Err(format!("unknown command {other} — /help lists them; start with // to send a slash")));
        }
    };
    Some(Ok(cmd))
}

impl State {
    pub(crate) fn run_command(&mut self, cmd: Command, fx: &mut Vec<Effect>) {
        self.dirty = true;
        match cmd {
            Command::Compact(instructions) => self.compact(instructions, false, fx),
            Command::Export(arg) => self.export_page(arg.as_deref(), fx),
            Command::PasteImage => self.paste_image(fx),
            Command::Model(Some(name)) => {
                self.target.model.clone_from(&name);
                self.notice(format!("model: {name}"));
            }
            Command::Model(None) => self.open_models(fx),
            Command::System(Some(text)) => {
                let n = text.chars().count();
                self.settings.system = Some(text);
                self.notice(format!("system prompt set ({n} characters)"));
            }
            Command::System(None) => {
                self.settings.system = None;
                self.notice("system prompt cleared");
            }
            Command::Clear => {
                self.reset(fx);
                self.flash("transcript cleared");
            }
            Command::New => {
                // The model and API the user picked stay: a new conversation is not a new session.
                self.reset(fx);
                self.settings.system = self.initial.2.clone();
                self.flash(format!("new conversation · {}", self.target.model));
            }
            Command::Api(arg) => match arg.as_deref().and_then(Api::parse) {
                Some(api) => {
                    self.target.api = api;
                    self.notice(format!("API: {}", api.name()));
                }
                None => {
                    self.notice_error(format!("the API is {}; use /api chat or /api responses", self.target.api.name()))
                }
            },
            Command::Theme(Some(name)) => fx.push(Effect::LoadTheme(name)),
            Command::Theme(None) => {
                let names = Theme::builtin_names().join(", ");
                self.notice(format!("theme: {} (built in: {names}; or a file in the themes folder)", self.theme_name));
            }
            Command::Panels => self.toggle_panels(),
            Command::Help => self.overlays.push(Overlay::Help { scroll: 0 }),
            Command::History => self.open_conversations(fx),
            Command::Compare(models) => self.compare_command(&models, fx),
            Command::Here(models) => self.compare_here(&models, fx),
            Command::Arena(models) => {
                let targets = models.iter().map(|m| self.column_target(m)).collect();
                let seed = self.now_ms ^ 0xA5A5_5A5A;
                if let Err(e) = self.open_arena(targets, seed) {
                    self.flash_error(e);
                }
            }
            Command::Set(Some((key, value))) => {
                crate::engine::request::set_option(&mut self.target.request_extra, &key, &value);
                self.notice(format!("request option {key} = {value}"));
            }
            Command::Set(None) => {
                let opts = serde_json::Value::Object(self.target.request_extra.clone());
                self.notice(format!("request options: {opts}"));
            }
            Command::Tools(arg) => match arg.as_deref() {
                None => self.notice(self.tools_summary()),
                Some(word) => match ToolMode::parse(word) {
                    Some(mode) => self.set_tool_mode(mode),
                    None => self.notice_error(format!("/tools takes auto, ask or none, not {word}")),
                },
            },
            Command::Attach(spec) => self.attach_command(spec, fx),
            Command::Mouse(arg) => self.mouse_command(arg.as_deref(), fx),
            Command::Vim => self.toggle_vim(),
            Command::Logprobs(arg) => self.logprobs_command(arg.as_deref()),
            Command::Schema(arg) => self.schema_command(arg.as_deref()),
            Command::Unset(key) => {
                if crate::engine::request::unset_option(&mut self.target.request_extra, &key) {
                    self.notice(format!("request option {key} removed"));
                } else {
                    self.notice_error(format!("no request option {key}"));
                }
            }
        }
    }

    /// Empties the transcript, stopping any reply first.
    fn reset(&mut self, fx: &mut Vec<Effect>) {
        self.cancel_tools(fx);
        self.tools.open.clear();
        if let Some(live) = self.live.take() {
            fx.push(Effect::CancelRequest { id: live.id });
        }
        self.transcript.clear();
        self.selected = None;
        self.editing = None;
        self.reasoning_open.clear();
        self.json_views.clear();
        self.recount();
        self.scroll_bottom();
    }

    /// What the next request offers, in words.
    #[must_use]
    pub fn tools_summary(&self) -> String {
        let n = self.tools.definitions().len();
        match self.tools.flags.mode {
            ToolMode::Off => "tools are off: the model is offered none (/tools auto or F4 turns them on)".to_owned(),
            ToolMode::Auto => {
                format!("{n} tools offered; read-only ones run without asking, the rest are asked for")
            }
            ToolMode::Ask => format!("{n} tools offered; every call is asked for"),
        }
    }

    /// Turns tools on or off for the next requests (the chat's and compare columns').
    pub(crate) fn set_tool_mode(&mut self, mode: ToolMode) {
        self.tools.flags.mode = mode;
        self.settings.tools = mode;
        self.dirty = true;
        self.flash(self.tools_summary());
    }

    /// F4: off → ask → auto → off.
    pub(crate) fn cycle_tool_mode(&mut self) {
        let next = match self.tools.flags.mode {
            ToolMode::Off => ToolMode::Ask,
            ToolMode::Ask => ToolMode::Auto,
            ToolMode::Auto => ToolMode::Off,
        };
        self.set_tool_mode(next);
    }

    /// `/mouse on|off` (alone: the other one). Off, the terminal selects text itself; the wheel
    /// then scrolls the terminal, not the transcript, so the keys that scroll are named.
    fn mouse_command(&mut self, arg: Option<&str>, fx: &mut Vec<Effect>) {
        let on = match arg {
            None => !self.mouse,
            Some("on") => true,
            Some("off") => false,
            Some(other) => {
                self.notice_error(format!("/mouse takes on or off, not {other}"));
                return;
            }
        };
        self.mouse = on;
        fx.push(Effect::Mouse(on));
        if on {
            self.flash("mouse on: the wheel scrolls, a click selects · /mouse off to select text");
        } else {
            let keys = format!(
                "{}/{}",
                self.keymap.hint(super::keymap::Action::PageUp),
                self.keymap.hint(super::keymap::Action::PageDown)
            );
            self.flash(format!("mouse off: select text with the mouse · {keys} scroll · /mouse on"));
        }
    }

    fn notice(&mut self, text: impl Into<String>) {
        self.transcript.push_notice(NoticeKind::Info, text);
        self.scroll_bottom();
    }

    fn notice_error(&mut self, text: impl Into<String>) {
        self.transcript.push_notice(NoticeKind::Error, text);
        self.scroll_bottom();
    }

    /// The palette's rows: every command (with its common arguments spelled out) and actions.
    #[must_use]
    pub fn palette_items(&self) -> Vec<PickItem> {
        let mut items = Vec::new();
        let mut add = |label: String, detail: &str, value: String| {
            items.push(PickItem { label, detail: detail.to_owned(), value })
        };
        add("/model".into(), "pick a model", "/model".into());
        add("/system".into(), "edit the system prompt", "prefill:/system ".into());
        for api in ["chat", "responses"] {
            add(format!("/api {api}"), "switch API", format!("/api {api}"));
        }
        for name in Theme::builtin_names() {
            add(format!("/theme {name}"), "switch theme", format!("/theme {name}"));
        }
        for mode in ["auto", "ask", "none"] {
            add(format!("/tools {mode}"), "offer tools to the model (or not)", format!("/tools {mode}"));
        }
        let listed = ["/panels", "/mouse", "/clear", "/new", "/history", "/help"];
        for (cmd, _, desc) in COMMANDS.iter().filter(|c| listed.contains(&c.0)) {
            add((*cmd).to_owned(), desc, (*cmd).to_owned());
        }
        for (name, label) in self.user_command_rows().into_iter().chain(self.mcp_prompt_rows()) {
            // Their prompt usually wants arguments: the palette puts the name in the composer.
            add(name.clone(), &label, format!("prefill:{name} "));
        }
        add("copy last reply".into(), "to the clipboard (OSC 52)", "action:copy".into());
        add("regenerate".into(), "the last reply (the old one is kept)", "action:regenerate".into());
        add("edit draft in $EDITOR".into(), "", "action:editor".into());
        add("quit".into(), "", "action:quit".into());
        items
    }

    /// Runs what a palette row stands for.
    pub(crate) fn run_palette(&mut self, value: &str, fx: &mut Vec<Effect>) {
        if let Some(text) = value.strip_prefix("prefill:") {
            let current =
                if text.trim() == "/system" { self.settings.system.clone().unwrap_or_default() } else { String::new() };
            self.composer.set_text(&format!("{text}{current}"));
            self.leave_selection();
            return;
        }
        match value {
            "action:copy" => {
                let last = self
                    .transcript
                    .cells
                    .iter()
                    .rev()
                    .find_map(|c| c.message().filter(|m| m.role() == crate::engine::Role::Assistant));
                if let Some(id) = last.map(|m| m.id) {
                    self.selected = Some(id);
                    self.copy_selected(fx);
                    self.selected = None;
                } else {
                    self.flash("there is no reply to copy");
                }
            }
            "action:regenerate" => self.regenerate(fx),
            "action:editor" => fx.push(Effect::OpenEditor(self.composer.text())),
            "action:quit" => self.quit = true,
            line => match parse(line) {
                Some(Ok(cmd)) => self.run_command(cmd, fx),
                Some(Err(e)) => self.flash_error(e),
                None => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands() {
        assert_eq!(parse("/model demo-slow"), Some(Ok(Command::Model(Some("demo-slow".into())))));
        assert_eq!(parse("/model"), Some(Ok(Command::Model(None))));
        assert_eq!(parse("/system be brief  "), Some(Ok(Command::System(Some("be brief".into())))));
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("//etc/passwd is a file"), None);
        assert!(matches!(parse("/nope"), Some(Err(_))));
    }
}
