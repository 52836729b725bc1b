//! Opening and leaving a compare, and its turns: one prompt to every column (each with its own
//! history), folding each column's wire events into its own reply and handing a finished reply
//! to the tool loop (each column is its own owner there), cancelling, retrying a column, and
//! keeping one column as the chat.

use super::{Column, Compare, CompareEffect, CompareMsg, DiffView, MAX_COLUMNS, MIN_COLUMNS, split_spec};
use crate::api::Api;
use crate::api::client::WireEvent;
use crate::app::effect::Effect;
use crate::app::state::{Focus, Live, State, TargetInfo};
use crate::app::tools::Owner;
use crate::app::transcript::{Cell, NoticeKind, Transcript};
use crate::engine::body::Body;
use crate::engine::message::{Message, MessageStatus, Role};
use crate::engine::reducer::{self, Ending};
use crate::engine::request::RequestOptions;
use crate::engine::turn::apply_wire;

impl State {
    /// Opens a compare of `targets` (2–4), each column starting from the chat's conversation.
    /// Returns an error for the user when it cannot open.
    ///
    /// # Errors
    /// Too few or too many models, or a reply still streaming.
    pub fn open_compare(&mut self, targets: Vec<TargetInfo>) -> Result<(), String> {
        self.open_compare_from(targets, self.transcript.cells.len())
    }

    /// [`State::open_compare`], each column starting from the conversation's cells before `end`.
    pub(crate) fn open_compare_from(&mut self, targets: Vec<TargetInfo>, end: usize) -> Result<(), String> {
        if !(MIN_COLUMNS..=MAX_COLUMNS).contains(&targets.len()) {
            return Err(format!("compare takes {MIN_COLUMNS} to {MAX_COLUMNS} models, got {}", targets.len()));
        }
        if self.live.is_some() || self.tools.busy() {
            return Err("a reply is still streaming or running tools: Esc cancels it first".into());
        }
        if let Some(old) = self.compare.active.take() {
            self.compare.kept.push(old);
        }
        // Every column starts from the conversation as it stands (without failed turns), shared:
        // no column copies a message of it.
        let history = self.transcript.request_shared_before(end);
        let columns = targets
            .into_iter()
            .enumerate()
            .map(|(i, target)| {
                let mut c = Column::new(i, target);
                c.transcript.push_shared(history.iter().copied().cloned());
                c.seeded = history.len();
                c
            })
            .collect();
        self.compare.generations += 1;
        let group = crate::store::StoreHandle::new_compare_group();
        self.compare.active = Some(Compare::new(self.compare.generations, group, columns));
        self.focus = Focus::Composer;
        self.selected = None;
        self.editing = None;
        self.dirty = true;
        Ok(())
    }

    /// `/compare A B …` inside the chat: models without a provider prefix use the chat's
    /// provider; `provider/model` uses that configured provider.
    pub(crate) fn compare_command(&mut self, args: &[String], fx: &mut Vec<Effect>) {
        self.dirty = true;
        match args.first().map(String::as_str) {
            None if self.compare.is_active() => return self.close_compare(fx),
            Some("off" | "close" | "end") if args.len() == 1 => return self.close_compare(fx),
            None => {
                self.flash_error("/compare takes 2 to 4 models, e.g. /compare demo demo-reasoning");
                return;
            }
            Some(_) => {}
        }
        let targets: Vec<TargetInfo> = args.iter().map(|spec| self.column_target(spec)).collect();
        let names: Vec<String> = targets.iter().map(|t| t.model.clone()).collect();
        match self.open_compare(targets) {
            Ok(()) => self.flash(format!("comparing {} — type once, every model answers", names.join(" · "))),
            Err(e) => self.flash_error(e),
        }
    }

    /// Where a `/compare` model goes.
    pub(crate) fn column_target(&self, spec: &str) -> TargetInfo {
        match split_spec(spec, &self.cfg) {
            Some((p, m)) if p == self.target.provider => TargetInfo { model: m.to_owned(), ..self.target.clone() },
            Some(("demo", m)) => TargetInfo::new("demo", m, Api::Chat),
            Some((p, m)) => {
                let profile = self.cfg.providers.get(p).cloned().unwrap_or_default();
                TargetInfo {
                    provider: p.to_owned(),
                    model: m.to_owned(),
                    api: profile.api(),
                    include_usage: profile.include_usage.unwrap_or(true),
                    request_extra: profile
                        .request
                        .iter()
                        .filter_map(|(k, v)| serde_json::to_value(v).ok().map(|v| (k.clone(), v)))
                        .collect(),
                    chain_responses: profile.previous_response_id.unwrap_or(false),
                    attachments: profile.attachments,
                    base_url: profile.base_url.as_deref().map(crate::engine::target::storable_url),
                    key_shown: profile.key_source().shell(),
                }
            }
            // A bare model goes to the one provider that lists it (as on the command line).
            None => match self.cfg.providers_listing(spec).as_slice() {
                [only] if *only != self.target.provider => self.column_target(&format!("{only}/{spec}")),
                _ => TargetInfo { model: spec.to_owned(), ..self.target.clone() },
            },
        }
    }

    /// Sends the prompt to every column, each with its own history.
    pub(crate) fn compare_send(&mut self, text: String, fx: &mut Vec<Effect>) {
        if self.compare_busy() {
            self.flash("replies are still streaming or running tools: Esc cancels them");
            return;
        }
        // Policies or the history may have changed since the chips were attached: checked again.
        if let Some(Err(e)) = self.compare_attach_check(&[]).filter(|_| !self.attachments.is_empty()) {
            self.flash_error(e);
            return;
        }
        let Some(cmp) = self.compare.active.as_ref() else { return };
        let prompt = if text.starts_with("//") { text[1..].to_owned() } else { text.clone() };
        let n = cmp.columns.len();
        self.arena_before_send(&prompt);
        self.composer.remember(&text);
        self.composer.clear();
        let chips = std::mem::take(&mut self.attachments);
        self.pasted_paths.clear();
        for i in 0..n {
            self.column_prompt(i, &prompt, &chips);
            self.start_column_reply(i, fx);
        }
        if let Some(cmp) = self.compare.active.as_mut() {
            cmp.diff = None;
        }
        self.focus = Focus::Composer;
        self.dirty = true;
    }

    /// Starts column `i`'s reply to its conversation as it stands.
    pub(crate) fn start_column_reply(&mut self, i: usize, fx: &mut Vec<Effect>) {
        let opts = self.compare.active.as_ref().and_then(|c| c.columns.get(i)).map(|c| self.column_options(c));
        let Some(opts) = opts else { return };
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let generation = cmp.generation;
        let Some(col) = cmp.columns.get_mut(i) else { return };
        let messages = col.transcript.request_shared().into_iter().cloned().collect();
        let body = Body::new(col.target.api, messages, opts);
        let mut m = Message::assistant_pending();
        m.model = Some(col.target.model.clone());
        m.provider = Some(col.target.provider.clone());
        m.api = Some(col.target.api.name().to_owned());
        m.base_url.clone_from(&col.target.base_url);
        let id = col.transcript.push_message(m);
        col.live = Some(Live { id, started_ms: None, draft: None });
        col.scroll = None;
        col.unseen = false;
        col.note = None;
        fx.push(Effect::Compare(CompareEffect::Start {
            generation,
            column: i,
            id,
            provider: col.target.provider.clone(),
            api: col.target.api,
            body: std::sync::Arc::new(body),
        }));
    }

    /// The request options of a column: the chat's settings with the column's model and profile.
    fn column_options(&self, c: &Column) -> RequestOptions {
        RequestOptions {
            model: c.target.model.clone(),
            stream: self.settings.stream,
            system: self.settings.system.clone(),
            temperature: self.settings.temperature,
            max_tokens: self.settings.max_tokens,
            reasoning_effort: self.settings.reasoning_effort.clone(),
            include_usage: c.target.include_usage,
            extra: c.target.request_extra.clone(),
            // The same tools as the chat: each column runs its own tool loop.
            tools: self.tools.definitions(),
            send_image_data: c.target.attachments.images == crate::config::attachments::ImagesSetting::Yes,
            logprobs: self.settings.logprobs,
            ..RequestOptions::default()
        }
    }

    /// Whether the open compare has work in flight: a reply streaming, or a column's tool calls
    /// running or waiting for the user.
    #[must_use]
    pub fn compare_busy(&self) -> bool {
        let Some(cmp) = self.compare.active.as_ref() else { return false };
        cmp.is_live() || (0..cmp.columns.len()).any(|i| self.tools.turn(cmp.owner(i)).is_some())
    }

    /// Takes a report from the column runner.
    pub(crate) fn on_compare(&mut self, msg: CompareMsg) -> Vec<Effect> {
        match msg {
            CompareMsg::Started { generation, column, id, now_ms } => {
                self.now_ms = self.now_ms.max(now_ms);
                if let Some(live) = self.column_live(generation, column, id) {
                    live.started_ms = Some(now_ms);
                }
                Vec::new()
            }
            CompareMsg::Wire { generation, column, id, event, now_ms } => {
                let mut fx = Vec::new();
                if self.column_wire(generation, column, id, *event, now_ms) {
                    // The reply ended: its tool calls (if any) go round the column's own loop.
                    self.after_reply(Owner::Column { generation, column }, id, &mut fx);
                    self.arena_check();
                }
                fx
            }
            CompareMsg::VoteFailed(why) => {
                self.flash_error(format!("the vote was not saved: {why}"));
                Vec::new()
            }
            CompareMsg::EndpointReady { provider } => {
                if provider == self.target.provider {
                    vec![Effect::Compare(CompareEffect::UseEndpoint { provider })]
                } else {
                    Vec::new()
                }
            }
        }
    }

    fn column_live(&mut self, generation: u64, column: usize, id: u64) -> Option<&mut Live> {
        let cmp = self.compare.active.as_mut().filter(|c| c.generation == generation)?;
        cmp.columns.get_mut(column)?.live.as_mut().filter(|l| l.id == id)
    }

    /// Folds a wire event into column `column`'s reply; true when the reply ended. Events of a
    /// compare that was closed, or of a reply that was cancelled, are dropped.
    fn column_wire(&mut self, generation: u64, column: usize, id: u64, event: WireEvent, now_ms: u64) -> bool {
        self.now_ms = self.now_ms.max(now_ms);
        let Some(cmp) = self.compare.active.as_mut().filter(|c| c.generation == generation) else { return false };
        let Some(col) = cmp.columns.get_mut(column) else { return false };
        let Some(live) = col.live.as_ref().filter(|l| l.id == id) else { return false };
        if let WireEvent::Retrying { attempt, wait_ms, reason } = &event {
            #[allow(clippy::cast_precision_loss)]
            let secs = *wait_ms as f64 / 1000.0;
            col.note = Some(format!("{}; retry {attempt} in {secs:.1} s", crate::text::sanitize::sanitize(reason)));
            self.dirty = true;
            return false;
        }
        let rel = now_ms.saturating_sub(live.started_ms.unwrap_or(now_ms));
        let Some(msg) = col.transcript.message_mut(id) else {
            col.live = None;
            return false;
        };
        let before = msg.revision;
        let done = apply_wire(msg, event, rel, &mut |_| {});
        if msg.revision != before || done {
            self.dirty = true;
            col.note = None;
            if col.scroll.is_some() {
                col.unseen = true;
            }
        }
        if done {
            col.live = None;
        }
        done
    }

    /// Cancels every column's reply and tool calls, keeping what arrived.
    pub(crate) fn compare_cancel_all(&mut self, fx: &mut Vec<Effect>) {
        let now = self.now_ms;
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let generation = cmp.generation;
        let (mut n, mut any) = (0, false);
        for (i, col) in cmp.columns.iter_mut().enumerate() {
            let Some(live) = col.live.take() else { continue };
            let elapsed = live.started_ms.map_or(0, |s| now.saturating_sub(s));
            if let Some(m) = col.transcript.message_mut(live.id) {
                reducer::finish(m, Ending::Cancelled, elapsed);
                any |= m.arrived_any();
            }
            fx.push(Effect::Compare(CompareEffect::Cancel { generation, column: i, id: live.id }));
            n += 1;
        }
        let columns = self.compare.active.as_ref().map_or(0, |c| c.columns.len());
        let mut tools = 0;
        for column in 0..columns {
            if self.cancel_owner_tools(Owner::Column { generation, column }, fx) {
                tools += 1;
            }
        }
        if n + tools > 0 {
            // Only what arrived can be kept.
            let kept = if any { "partial replies are kept" } else { "nothing had arrived" };
            let replies = match n {
                0 => String::new(),
                1 => format!("cancelled 1 reply; {kept}"),
                n => format!("cancelled {n} replies; {kept}"),
            };
            let stopped = match tools {
                0 => String::new(),
                1 => "stopped the tools of 1 column".to_owned(),
                t => format!("stopped the tools of {t} columns"),
            };
            let sep = if replies.is_empty() || stopped.is_empty() { "" } else { "; " };
            self.flash(format!("{replies}{sep}{stopped}"));
        }
    }

    /// Sends the focused column's last prompt again (after an error, a 429 or a cancel); the
    /// old reply is kept as a branch.
    pub(crate) fn compare_retry(&mut self, fx: &mut Vec<Effect>) {
        let Some(cmp) = self.compare.active.as_mut() else { return };
        let i = cmp.focus;
        let owner = cmp.owner(i);
        let Some(col) = cmp.columns.get_mut(i) else { return };
        if col.live.is_some() || self.tools.turn(owner).is_some() {
            self.flash("this column is still streaming or running tools");
            return;
        }
        let cells = &col.transcript.cells;
        let Some(at) = cells.iter().rposition(|c| c.message().is_some_and(|m| m.role() == Role::Assistant)) else {
            self.flash("this column has no reply to retry");
            return;
        };
        if cells[at + 1..].iter().any(|c| c.message().is_some()) {
            self.flash("only the last reply can be retried");
            return;
        }
        col.transcript.branch_off(at);
        self.start_column_reply(i, fx);
        self.flash(format!("column {}: asking again", i + 1));
    }

    /// Keeps the focused column as the chat: its conversation, model and provider carry on as
    /// a normal chat; the other columns stay in memory with the compare group.
    pub(crate) fn compare_keep(&mut self, fx: &mut Vec<Effect>) {
        let Some(cmp) = self.compare.active.as_ref() else { return };
        let i = cmp.focus;
        if cmp.hidden() {
            self.flash("vote first (a · b · t · n): keeping a column would show its name");
            return;
        }
        if cmp.columns.get(i).is_some_and(|c| c.live.is_some()) || self.tools.turn(cmp.owner(i)).is_some() {
            self.flash("this column is still streaming or running tools: wait for it, or Esc cancels");
            return;
        }
        self.compare_cancel_all(fx);
        // The columns' last changes (cancelled replies, answered calls) reach the store before
        // the compare leaves the screen.
        self.persist_columns(fx);
        let Some(mut cmp) = self.compare.active.take() else { return };
        let Some(col) = cmp.columns.get(i).cloned() else { return };
        if let Some(at) = cmp.from_here {
            cmp.diff = None;
            self.compare.kept.push(cmp);
            self.selected = None;
            self.editing = None;
            self.focus = Focus::Composer;
            self.keep_here(at, col, fx);
            self.recount();
            self.scroll_bottom();
            self.dirty = true;
            return;
        }
        let (index, model, provider) = (col.index, col.target.model.clone(), col.target.provider.clone());
        self.transcript = settle(col.transcript);
        // The kept column carries on as a new conversation of its own in the history.
        self.persist.detach();
        self.target = col.target;
        self.live = None;
        self.selected = None;
        self.editing = None;
        self.focus = Focus::Composer;
        self.reasoning_open.clear();
        cmp.diff = None;
        let group = cmp.group.clone();
        let others = cmp.columns.len() - 1;
        self.compare.kept.push(cmp);
        fx.push(Effect::Compare(CompareEffect::UseEndpoint { provider }));
        self.flash(format!("kept column {} ({model}) as the chat", index + 1));
        self.transcript.push_notice(
            NoticeKind::Info,
            format!(
                "kept column {} ({model}) as the chat; {} (compare group {group})",
                index + 1,
                if others == 1 {
                    "the other column stays in memory".to_owned()
                } else {
                    format!("the other {others} columns stay in memory")
                }
            ),
        );
        self.recount();
        self.scroll_bottom();
        self.dirty = true;
    }

    /// Leaves compare mode back to the chat as it was; the columns stay in memory.
    pub(crate) fn close_compare(&mut self, fx: &mut Vec<Effect>) {
        self.compare_cancel_all(fx);
        self.persist_columns(fx);
        if let Some(cmp) = self.compare.active.take() {
            let n = cmp.columns.len();
            self.compare.kept.push(cmp);
            self.flash(format!("left compare; its {n} columns stay in memory"));
        }
        self.focus = Focus::Composer;
        self.dirty = true;
    }

    /// Opens (or closes) the diff of the focused column against the next one.
    pub(crate) fn compare_toggle_diff(&mut self) {
        let Some(cmp) = self.compare.active.as_mut() else { return };
        if cmp.diff.take().is_some() {
            return;
        }
        let n = cmp.columns.len();
        let (a, b) = (cmp.focus, (cmp.focus + 1) % n);
        cmp.diff = Some(DiffView { a, b, scroll: 0 });
        cmp.full = false;
    }
}

/// A column's transcript as the chat takes it over (nothing in it is live any more).
fn settle(mut t: Transcript) -> Transcript {
    for cell in &mut t.cells {
        if let Cell::Message(m) = cell {
            if m.is_live() {
                let m = std::sync::Arc::make_mut(m);
                m.status = MessageStatus::Cancelled;
                m.revision += 1;
            }
        }
    }
    t
}
