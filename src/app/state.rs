//! The one interactive state and its only way in: `State::apply(msg) -> effects`. It performs
//! no I/O. Key handling, turns, commands and scrolling live in sibling files as further
//! `impl State` blocks so each stays small.

use super::composer::Composer;
use super::effect::Effect;
use super::keymap::KeyMap;
use super::msg::{Anchor, Msg, ViewReport};
use super::overlay::{Overlay, Picker};
use super::transcript::{NoticeKind, Transcript};
use crate::api::Api;
use crate::config::Config;
use crate::config::theme::Theme;
use crate::engine::request::RequestOptions;
use crate::engine::target::{Target, TurnSettings};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// How long a status-bar flash stays.
pub const FLASH_MS: u64 = 4000;
/// How often the loop ticks while something is live (spinner, elapsed time).
pub const TICK_MS: u64 = 100;

/// Where requests go, as far as the state needs to know (the endpoint stays with the runner).
#[derive(Debug, Clone, PartialEq)]
pub struct TargetInfo {
    pub provider: String,
    pub model: String,
    pub api: Api,
    pub include_usage: bool,
    pub request_extra: Map<String, Value>,
    /// Responses: chain turns with `previous_response_id` (profile option).
    pub chain_responses: bool,
    /// The profile's `attachments` table: kinds taken and size limits.
    pub attachments: crate::config::attachments::AttachmentPolicy,
    /// The base URL stored with each reply (secrets stripped; none for the demo), so
    /// `--continue` goes back to it.
    pub base_url: Option<String>,
    /// Where a copied curl command reads the key: `$GROQ_API_KEY`, `$(sh -c '…')` (never the key).
    pub key_shown: String,
}

impl TargetInfo {
    /// A target as a fresh profile has it: usage asked for, no extra request fields, turns not
    /// chained, the default attachment policy.
    #[must_use]
    pub fn new(provider: impl Into<String>, model: impl Into<String>, api: Api) -> Self {
        Self {
            provider: provider.into(),
            model: model.into(),
            api,
            include_usage: true,
            request_extra: Map::new(),
            chain_responses: false,
            attachments: crate::config::attachments::AttachmentPolicy::default(),
            base_url: None,
            key_shown: "$OPENAI_API_KEY".to_owned(),
        }
    }

    #[must_use]
    pub fn from_target(t: &Target) -> Self {
        Self {
            provider: t.provider.clone(),
            model: t.model.clone(),
            api: t.api,
            include_usage: t.include_usage,
            request_extra: t.request_extra.clone(),
            chain_responses: t.chain_responses,
            attachments: t.attachments,
            base_url: t.storable_base_url(),
            key_shown: t.endpoint.key_source.shell(),
        }
    }
}

/// Which part of the screen gets plain keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Composer,
    /// A message is selected; letters are commands on it.
    Transcript,
}

/// The reply in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Live {
    pub id: u64,
    /// App clock when the request went out (known once the runner reports it).
    pub started_ms: Option<u64>,
    /// The draft that was sent, put back in the composer if the request fails.
    pub draft: Option<SentDraft>,
}

/// What a send took from the composer, given back as the user left it if the request fails:
/// the text with its paste chips, and (from the sent message) the attachment chips.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SentDraft {
    pub composer: super::composer::Draft,
    /// For each attachment chip, the pasted path it was made from (see `State::pasted_paths`).
    pub pasted_paths: Vec<Option<String>>,
}

/// A short status-bar message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    pub text: String,
    pub error: bool,
    /// App clock of the first tick after it was set; it expires `FLASH_MS` later.
    pub since_ms: Option<u64>,
    /// What it speaks of, when that can stop being true before it expires.
    pub about: FlashAbout,
}

/// What a flash is about, so it goes away as soon as it is no longer true (see `stale_flash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlashAbout {
    /// Nothing that changes under it: it just expires.
    #[default]
    Nothing,
    /// A retry of reply `id`: over once the reply streams or ends.
    Retry(u64),
    /// The draft given back after a failure: over once the composer is emptied.
    DraftBack,
    /// The chips waiting above the composer: over once none is left.
    Attachments,
    /// A hint about the approval modal: over once no call waits for a decision.
    Approval,
}

/// Transcript scrolling: follow the bottom, or stay at an anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scroll {
    pub follow: bool,
    pub anchor: Anchor,
}

/// Everything the screen shows.
pub struct State {
    pub transcript: Transcript,
    pub composer: Composer,
    /// Files attached to the next message (the chips above the composer).
    pub attachments: Vec<crate::engine::attachment::Attachment>,
    /// For chips made from a pasted path: the pasted text, typed instead if the chip is removed.
    pub pasted_paths: Vec<Option<String>>,
    /// The path `/attach` last refused for holding secrets: attaching it again sends it.
    pub attach_warned: Option<String>,
    pub target: TargetInfo,
    pub settings: TurnSettings,
    /// Model, API and system prompt at start, for `/new`.
    pub initial: (String, Api, Option<String>),
    pub cfg: Config,
    pub keymap: KeyMap,
    pub theme: Theme,
    pub theme_name: String,
    /// Whether the mouse is captured (`mouse` in config.toml, `/mouse`).
    pub mouse: bool,
    pub overlays: Vec<Overlay>,
    pub focus: Focus,
    /// The selected cell (by id).
    pub selected: Option<u64>,
    /// The message `m` (compare from here) was pressed on, until `/here` names the models.
    pub here_from: Option<u64>,
    pub scroll: Scroll,
    /// What the last draw showed.
    pub view: ViewReport,
    pub live: Option<Live>,
    /// The app clock as last reported (ticks and wire events carry it).
    pub now_ms: u64,
    pub flash: Option<Flash>,
    /// `None`: panels shown when the screen is wide enough; `Some`: the user's choice.
    pub panels: Option<bool>,
    pub size: (u16, u16),
    /// Messages whose reasoning the user opened.
    pub reasoning_open: HashSet<u64>,
    /// Answers checked against a schema that parsed as JSON, shown as JSON (`app::schema`).
    pub json_views: super::schema::JsonViews,
    /// The provider's model list, once fetched.
    pub fetched_models: Option<Vec<String>>,
    /// The user message being edited (its tail becomes a branch when the edit is sent).
    pub editing: Option<u64>,
    /// Usage summed over the conversation (see `recount`).
    pub totals: super::totals::Totals,
    /// Output arrived below while the user was scrolled up.
    pub unseen: bool,
    /// Set while applying a message when something visible changed.
    pub dirty: bool,
    /// Bumped by every `apply` that changed something visible; the loop redraws when it moves.
    pub version: u64,
    /// Input held while a reopened conversation's head is still loading (see `head.rs`).
    pub(crate) held_input: Vec<Msg>,
    pub quit: bool,
    /// The signal that ended the session (`Msg::Terminated`): a reply cut by it is stored
    /// with that reason rather than as cancelled by the user.
    pub terminated_by: Option<&'static str>,
    /// Compare mode: the open comparison's columns, and those left behind (see `compare/`).
    pub compare: super::compare::CompareMode,
    /// What the history store holds of this conversation (see `persist.rs`).
    pub persist: super::persist::Persist,
    /// The tool loop: registry, approvals, the calls being settled (see `tools.rs`).
    pub tools: super::tools::Tools,
    /// The flow inspector and the request bodies it shows (see `inspector.rs`).
    pub flow: super::inspector::Inspector,
    /// Why the built-in demo answers when nobody asked for it (the welcome screen says so).
    pub demo_fallback: Option<String>,
    /// Ctrl+C (or Ctrl+D) on an empty composer asked to quit; the next one quits.
    pub quit_armed: bool,
    /// What a copy in flight carries ("12 characters"), until the clipboard answers.
    pub copying: Option<String>,
    /// App clock when a key last put text into the composer: a letter typed soon after is
    /// text too, never a choice in the approval modal (see `approval.rs`).
    pub typed_ms: Option<u64>,
    /// The context the next request carries and the compactions that fold turns (see
    /// `compaction.rs`).
    pub context: super::compaction::ContextCount,
    /// The prompt waiting for the automatic compaction before it.
    pub held: Option<super::compaction::Held>,
    /// The user stopped an automatic compaction: the next prompt goes as it is.
    pub auto_declined: bool,
    /// The draft warned about as over the window: sending it again sends it.
    pub overflow_ok: Option<String>,
    /// The user's own slash commands (see `user_commands.rs`).
    pub mine: super::user_commands::Mine,
    /// Messages typed while a turn ran, waiting to go out (see `queue.rs`).
    pub queue: super::queue::Queue,
    /// Whether the terminal has focus (focus events; assumed until one says otherwise).
    pub focused: bool,
    /// Vim keys in the composer, when on (`vim_mode`, `/vim`; see `vim.rs`).
    pub vim: Option<super::vim::Vim>,
}

impl State {
    /// A fresh state for `target`.
    #[must_use]
    pub fn new(target: TargetInfo, settings: TurnSettings, cfg: Config, theme: Theme, theme_name: &str) -> Self {
        let (keymap, problems) = KeyMap::from_config(&cfg.keys);
        let mut s = Self {
            transcript: Transcript::default(),
            composer: Composer::new(),
            attachments: Vec::new(),
            pasted_paths: Vec::new(),
            attach_warned: None,
            initial: (target.model.clone(), target.api, settings.system.clone()),
            target,
            settings,
            cfg,
            keymap,
            theme,
            theme_name: theme_name.to_owned(),
            mouse: true,
            overlays: Vec::new(),
            focus: Focus::Composer,
            selected: None,
            here_from: None,
            scroll: Scroll { follow: true, anchor: Anchor::default() },
            view: ViewReport::default(),
            live: None,
            now_ms: 0,
            flash: None,
            panels: None,
            size: (80, 24),
            reasoning_open: HashSet::new(),
            json_views: super::schema::JsonViews::default(),
            fetched_models: None,
            editing: None,
            totals: super::totals::Totals::default(),
            unseen: false,
            dirty: false,
            version: 1,
            held_input: Vec::new(),
            quit: false,
            terminated_by: None,
            compare: super::compare::CompareMode::default(),
            persist: super::persist::Persist::default(),
            tools: super::tools::Tools::default(),
            flow: super::inspector::Inspector::default(),
            demo_fallback: None,
            quit_armed: false,
            copying: None,
            typed_ms: None,
            context: super::compaction::ContextCount::default(),
            held: None,
            auto_declined: false,
            overflow_ok: None,
            mine: super::user_commands::Mine::default(),
            queue: super::queue::Queue::default(),
            focused: true,
            vim: None,
        };
        for p in problems {
            s.transcript.push_notice(NoticeKind::Error, format!("config.toml: {p}"));
        }
        for w in s.cfg.warnings.clone() {
            s.transcript.push_notice(NoticeKind::Error, w);
        }
        s.mouse = s.cfg.mouse.unwrap_or(true);
        if s.cfg.vim_mode == Some(true) {
            s.vim = Some(super::vim::Vim::new(super::vim::Mode::Insert));
        }
        s.restyle_composer();
        s.recount_context();
        s
    }

    /// The only mutator: applies one message and returns what the outside world must do.
    pub fn apply(&mut self, msg: Msg) -> Vec<Effect> {
        let Some(msg) = self.hold(msg) else { return Vec::new() };
        let mut fx = Vec::new();
        self.dirty = false;
        let watch = self.watch();
        match msg {
            Msg::Key(k) => {
                self.dirty = true;
                self.on_key(k, &mut fx);
            }
            Msg::Mouse(m) => self.on_mouse(m),
            Msg::Compact(instructions) => {
                self.dirty = true;
                self.compact(instructions, false, &mut fx);
            }
            Msg::Paste(text) => {
                self.dirty = true;
                self.on_paste(&text, &mut fx);
            }
            Msg::Attach(m) => self.on_attach(m),
            Msg::Resize { width, height } => {
                self.dirty = true;
                self.size = (width, height);
            }
            Msg::RequestStarted { id, now_ms } => {
                self.now_ms = self.now_ms.max(now_ms);
                if let Some(live) = self.live.as_mut().filter(|l| l.id == id) {
                    live.started_ms = Some(now_ms);
                }
            }
            Msg::Wire { id, event, now_ms } => self.on_wire_tools(id, *event, now_ms, &mut fx),
            Msg::Tick { now_ms } => self.on_tick(now_ms),
            // No question asked: whoever sent the signal is not at the keyboard. `quit` also
            // makes the save below skip its pacing, so the reply's latest text is kept.
            Msg::Terminated(signal) => {
                self.terminated_by = Some(signal);
                self.quit = true;
                // Running tools stop as on Ctrl+C: an MCP server hears notifications/cancelled
                // (sent before its session closes) instead of working on for no one.
                let owners: Vec<_> = self.tools.turns.iter().map(|t| t.owner).collect();
                for owner in owners {
                    self.cancel_owner_tools(owner, &mut fx);
                }
            }
            Msg::Edited(r) => {
                self.dirty = true;
                match r {
                    Ok(text) => {
                        self.composer.set_text(text.trim_end_matches('\n'));
                        self.focus = super::state::Focus::Composer;
                    }
                    Err(e) => self.flash_error(format!("editor: {e}")),
                }
            }
            Msg::Window { model, window } => {
                self.dirty = true;
                self.cfg.served.insert(model, window);
            }
            Msg::Models(r) => {
                self.dirty = true;
                self.on_models(r);
            }
            Msg::ThemeLoaded { name, theme } => {
                self.dirty = true;
                match theme {
                    Ok(t) => {
                        fx.push(Effect::RememberTheme(name.clone()));
                        self.theme = *t.0;
                        self.theme_name.clone_from(&name);
                        self.restyle_composer();
                        self.transcript.push_notice(NoticeKind::Info, format!("theme: {name}"));
                    }
                    Err(e) => {
                        self.transcript.push_notice(NoticeKind::Error, format!("theme {name}: {e}"));
                    }
                }
            }
            Msg::Viewport(r) => self.on_viewport(r),
            Msg::Compare(m) => fx.extend(self.on_compare(m)),
            Msg::Store(m) => self.on_store(m, &mut fx),
            Msg::Copied(c) => {
                self.dirty = true;
                self.copied(&c);
            }
            Msg::Tools(m) => self.on_tools_msg(m, &mut fx),
            Msg::Focus(focused) => self.focused = focused,
        }
        self.notify_changes(watch, &mut fx);
        self.drain_queue(&mut fx);
        self.stale_flash();
        self.persist_sync(&mut fx);
        self.flow.record(&fx);
        if self.quit && !fx.contains(&Effect::Quit) {
            fx.push(Effect::Quit);
        }
        if std::mem::take(&mut self.dirty) {
            self.version = self.version.wrapping_add(1);
        }
        self.replay_held(&mut fx);
        fx
    }

    /// Whether the loop should keep ticking (something moves on screen by itself).
    #[must_use]
    pub fn wants_tick(&self) -> bool {
        self.live.is_some()
            || self.compare.is_live()
            || self.tools.ticking()
            || self.flash.is_some()
            || self.overlays.iter().any(|o| matches!(o, Overlay::Models { loading: true, .. }))
            || self.approval_wants_clock()
    }

    fn on_tick(&mut self, now_ms: u64) {
        self.now_ms = self.now_ms.max(now_ms);
        self.approval_tick();
        if self.live.is_some() || self.overlays.iter().any(|o| matches!(o, Overlay::Models { loading: true, .. })) {
            self.dirty = true;
        }
        if self.compare.is_live() {
            self.dirty = true;
        }
        if self.tools.ticking() {
            self.dirty = true;
        }
        if let Some(f) = &mut self.flash {
            match f.since_ms {
                None => f.since_ms = Some(now_ms),
                Some(since) if now_ms.saturating_sub(since) >= FLASH_MS => {
                    self.flash = None;
                    self.dirty = true;
                }
                Some(_) => {}
            }
        }
    }

    /// Recounts the conversation totals: after a reply ends or the transcript changes shape.
    pub(crate) fn recount(&mut self) {
        self.totals = super::totals::Totals::count(&self.transcript, &self.cfg, &self.target.model);
        self.recount_context();
    }

    /// Shows a short message in the status bar.
    pub fn flash(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash { text: text.into(), error: false, since_ms: None, about: FlashAbout::Nothing });
        self.dirty = true;
    }

    pub fn flash_error(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash { text: text.into(), error: true, since_ms: None, about: FlashAbout::Nothing });
        self.dirty = true;
    }

    /// A flash about something that may stop being true before it expires.
    pub fn flash_about(&mut self, text: impl Into<String>, error: bool, about: FlashAbout) {
        self.flash = Some(Flash { text: text.into(), error, since_ms: None, about });
        self.dirty = true;
    }

    /// Takes away a flash that is no longer true (the one rule for all of them).
    fn stale_flash(&mut self) {
        let Some(about) = self.flash.as_ref().map(|f| f.about) else { return };
        let over = match about {
            FlashAbout::Nothing => false,
            FlashAbout::Retry(id) => {
                self.live.as_ref().is_none_or(|l| l.id != id)
                    || self.transcript.message(id).is_some_and(|m| m.status != crate::engine::MessageStatus::Waiting)
            }
            FlashAbout::DraftBack => self.composer.is_empty(),
            FlashAbout::Attachments => self.attachments.is_empty(),
            FlashAbout::Approval => self.tools.approval.is_none(),
        };
        if over {
            self.flash = None;
            self.dirty = true;
        }
    }

    /// The request options for the current model, as the headless runner builds them.
    #[must_use]
    pub fn request_options(&self) -> RequestOptions {
        RequestOptions {
            model: self.target.model.clone(),
            stream: self.settings.stream,
            system: self.settings.system.clone(),
            temperature: self.settings.temperature,
            max_tokens: self.settings.max_tokens,
            reasoning_effort: self.settings.reasoning_effort.clone(),
            include_usage: self.target.include_usage,
            extra: self.target.request_extra.clone(),
            chain_responses: self.target.chain_responses,
            detail: self.settings.detail.clone(),
            tools: self.tools.definitions(),
            send_image_data: self.target.attachments.images == crate::config::attachments::ImagesSetting::Yes,
            logprobs: self.settings.logprobs,
            // The profile's `json_object` fallback is the headless runner's; the chat asks for the schema.
            response_format: self.settings.schema.as_ref().map(|s| s.format(self.target.api, false)),
            ..RequestOptions::default()
        }
    }

    /// Whether the side panels are shown at the current size.
    #[must_use]
    pub fn panels_shown(&self) -> bool {
        self.panels.unwrap_or(self.size.0 >= 100)
    }

    /// Whether a message's reasoning is expanded: the user opened it, or it is streaming and
    /// no answer has started yet (so thinking is visible as it happens).
    #[must_use]
    pub fn reasoning_expanded(&self, m: &crate::engine::Message) -> bool {
        self.reasoning_open.contains(&m.id) || (m.is_live() && m.main().content.is_empty())
    }

    /// Models to offer in the picker: the provider's list, then configured ones it did not name.
    #[must_use]
    pub fn model_choices(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        // A set for the duplicates: a provider may list 100,000 models, and a scan of `out`
        // for each one was quadratic (seconds before the picker showed).
        let mut seen = std::collections::HashSet::new();
        let mut push = |id: &str, detail: &str| {
            if seen.insert(id.to_owned()) {
                out.push((id.to_owned(), detail.to_owned()));
            }
        };
        for m in self.fetched_models.iter().flatten() {
            push(m, "");
        }
        if let Some(p) = self.cfg.providers.get(&self.target.provider) {
            for m in &p.models {
                push(m, "configured");
            }
        }
        for m in self.cfg.models.keys() {
            push(m, "configured");
        }
        push(&self.target.model.clone(), "current");
        out.into_iter()
            .map(|(m, d)| {
                let d = if m == self.target.model { "current".to_owned() } else { d };
                (m, d)
            })
            .collect()
    }

    fn on_models(&mut self, r: Result<Vec<String>, String>) {
        let err = match r {
            Ok(list) => {
                self.fetched_models = Some(list);
                None
            }
            Err(e) => Some(e),
        };
        let items = self.model_items();
        for o in &mut self.overlays {
            if let Overlay::Models { picker, loading, error } = o {
                // Keep the user's query and the row under the cursor (by value) across the refresh.
                let query = std::mem::take(&mut picker.query);
                let current = picker.current().map(|i| i.value.clone());
                *picker = Picker::new(items.clone());
                picker.query = query;
                let visible = picker.visible();
                picker.selected =
                    visible.iter().position(|&i| Some(&picker.items[i].value) == current.as_ref()).unwrap_or(0);
                *loading = false;
                error.clone_from(&err);
            }
        }
    }

    pub(crate) fn model_items(&self) -> Vec<super::overlay::PickItem> {
        self.model_choices()
            .into_iter()
            .map(|(m, d)| super::overlay::PickItem { label: m.clone(), detail: d, value: m })
            .collect()
    }

    /// Applies the theme to the composer (the text area keeps its own styles).
    pub(crate) fn restyle_composer(&mut self) {
        use crate::config::theme::Role;
        let base = self.theme.style(Role::Base);
        self.composer.area.set_style(base);
        self.composer.area.set_placeholder_style(self.theme.style(Role::Dim));
        self.composer.area.set_cursor_style(base.add_modifier(ratatui::style::Modifier::REVERSED));
        let hint = format!(
            "type a message… (Enter send · {} newline · {} $EDITOR · {} help)",
            self.keymap.hint(super::keymap::Action::Newline),
            self.keymap.hint(super::keymap::Action::Editor),
            self.keymap.hint(super::keymap::Action::Help)
        );
        self.composer.area.set_placeholder_text(hint);
    }
}
