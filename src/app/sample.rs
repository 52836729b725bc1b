//! The sampling modal: an MCP server allowed to sample (`allow_sampling`) asks to use the
//! conversation's model. The modal (`Overlay::Sample`) names the server, shows what it asks and
//! what it would run on; requests that arrive while one is open wait their turn. Approving is
//! deliberate, as in the approval modal: for `GUARD_MS` after it shows no key is its own, and a
//! button answers only with the Enter right after Tab or an arrow put the focus on it. Esc declines
//! it, Ctrl+C declines it and every request waiting behind it. Approved, the request goes out non-streamed on the current provider and
//! model (`ToolEffect::Sample`); declined, the server gets an error saying so.

use super::approval::GUARD_MS;
use super::effect::Effect;
use super::overlay::Overlay;
use super::state::State;
use super::tools::ToolEffect;
use crate::tools::mcp::sample::{SampleReply, SampleRequest};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The buttons, in order.
pub const SAMPLE_BUTTONS: [&str; 2] = ["Approve", "Decline"];

/// What a declined server is told.
pub const DECLINED: &str = "palaver refused this sampling request: the user declined it";

/// One sampling request waiting for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleAsk {
    pub request: SampleRequest,
    /// The focused button, once Tab or an arrow put the focus on one.
    pub focus: Option<usize>,
    /// Whether Enter answers now: the last key put the focus on a button.
    pub armed: bool,
    /// The app clock when it showed (the guard counts from it).
    pub shown_at: u64,
    pub reply: SampleReply,
}

impl State {
    /// A server asks to sample: the modal opens, or the request waits behind the open one.
    pub(crate) fn on_sample(&mut self, request: SampleRequest, reply: SampleReply) {
        let ask = SampleAsk { request, focus: None, armed: false, shown_at: self.now_ms, reply };
        self.tools.samples.push_back(ask);
        if !self.overlays.iter().any(|o| matches!(o, Overlay::Sample)) {
            self.overlays.push(Overlay::Sample);
        }
    }

    /// Keys for the modal; false for a key it leaves to the screen (during the guard).
    pub(crate) fn sample_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        let now = self.now_ms;
        let Some(ask) = self.tools.samples.front_mut() else {
            self.overlays.retain(|o| !matches!(o, Overlay::Sample));
            return false;
        };
        let ctrl = key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        if ctrl && key.code == KeyCode::Char('c') {
            // Every request waiting goes with it: a server that asked a thousand times must not
            // leave a thousand modals behind the one the user closed.
            while !self.tools.samples.is_empty() {
                self.answer_sample(false, fx);
            }
            return true;
        }
        if key.code == KeyCode::Esc {
            self.answer_sample(false, fx);
            return true;
        }
        if now < ask.shown_at.saturating_add(GUARD_MS) || ctrl {
            // Just shown: what the user was typing is not an answer.
            return false;
        }
        let armed = std::mem::take(&mut ask.armed);
        let n = SAMPLE_BUTTONS.len();
        match key.code {
            KeyCode::Tab | KeyCode::Right | KeyCode::Down => {
                ask.focus = Some(ask.focus.map_or(0, |f| (f + 1) % n));
                ask.armed = true;
            }
            KeyCode::BackTab | KeyCode::Left | KeyCode::Up => {
                ask.focus = Some(ask.focus.map_or(n - 1, |f| (f + n - 1) % n));
                ask.armed = true;
            }
            KeyCode::Enter if armed => {
                let approve = ask.focus == Some(0);
                self.answer_sample(approve, fx);
            }
            _ => {}
        }
        true
    }

    /// Answers the front request (approved: it runs on the current provider and model) and
    /// shows the next one, if any.
    fn answer_sample(&mut self, approve: bool, fx: &mut Vec<Effect>) {
        if let Some(ask) = self.tools.samples.pop_front() {
            let effect = if approve {
                let max_output = self.cfg.model_facts(&self.target.model).and_then(|f| f.max_output);
                let base = crate::engine::request::RequestOptions {
                    model: self.target.model.clone(),
                    include_usage: self.target.include_usage,
                    extra: self.target.request_extra.clone(),
                    ..crate::engine::request::RequestOptions::default()
                };
                ToolEffect::Sample {
                    server: ask.request.server.clone(),
                    api: self.target.api,
                    model: self.target.model.clone(),
                    body: crate::engine::sampling::body(self.target.api, base, max_output, &ask.request),
                    reply: ask.reply,
                }
            } else {
                ToolEffect::SampleAnswer { reply: ask.reply, answer: Err(DECLINED.to_owned()) }
            };
            fx.push(Effect::Tools(effect));
        }
        match self.tools.samples.front_mut() {
            Some(next) => next.shown_at = self.now_ms,
            None => self.overlays.retain(|o| !matches!(o, Overlay::Sample)),
        }
    }

    /// A sampling request ran: a line in the conversation says who used the model and what
    /// it cost, or why it failed.
    pub(crate) fn on_sampled(&mut self, server: &str, result: Result<crate::engine::sampling::SampleRun, String>) {
        use super::transcript::NoticeKind;
        let (kind, text) = match result {
            Ok(run) => (NoticeKind::Info, crate::engine::sampling::notice(server, &run)),
            Err(e) => (NoticeKind::Error, format!("MCP server `{server}`'s sampling request failed: {e}")),
        };
        self.transcript.push_notice(kind, crate::text::sanitize::sanitize(&text).into_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::msg::Msg;
    use crate::app::test_state;
    use crate::app::tools::ToolMsg;
    use crate::tools::mcp::sample::SampleRole;

    fn request() -> SampleRequest {
        SampleRequest {
            server: "ev".into(),
            messages: vec![(SampleRole::User, "hello?".into())],
            system: None,
            max_tokens: 10,
            temperature: None,
            hints: Vec::new(),
        }
    }

    fn key(s: &mut State, code: KeyCode) -> Vec<Effect> {
        s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    fn asked() -> State {
        let mut s = test_state();
        s.apply(Msg::Tick { now_ms: 1000 });
        s.apply(Msg::Tools(ToolMsg::Sample { request: request(), reply: SampleReply::detached() }));
        s
    }

    fn samples(fx: &[Effect]) -> Vec<&ToolEffect> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Tools(t @ (ToolEffect::Sample { .. } | ToolEffect::SampleAnswer { .. })) => Some(t),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn approving_takes_a_focused_button_and_runs_on_the_current_model() {
        let mut s = asked();
        assert!(matches!(s.overlays.last(), Some(Overlay::Sample)));
        s.apply(Msg::Tick { now_ms: 1000 + GUARD_MS + 1 });
        assert!(
            samples(&key(&mut s, KeyCode::Enter)).is_empty(),
            "Enter before a button has the focus answers nothing"
        );
        assert!(samples(&key(&mut s, KeyCode::Tab)).is_empty());
        let fx = key(&mut s, KeyCode::Enter);
        let [ToolEffect::Sample { server, model, body, .. }] = samples(&fx)[..] else { panic!("{fx:?}") };
        assert_eq!((server.as_str(), model.as_str()), ("ev", s.target.model.as_str()));
        assert_eq!(body["stream"], false);
        assert!(s.tools.samples.is_empty() && !matches!(s.overlays.last(), Some(Overlay::Sample)));
    }

    #[test]
    fn esc_declines_with_the_reason_and_keys_during_the_guard_arm_nothing() {
        let mut s = asked();
        assert!(samples(&key(&mut s, KeyCode::Tab)).is_empty());
        s.apply(Msg::Tick { now_ms: 1000 + GUARD_MS + 1 });
        assert!(samples(&key(&mut s, KeyCode::Enter)).is_empty(), "the Tab typed during the guard armed nothing");
        let fx = key(&mut s, KeyCode::Esc);
        assert!(
            matches!(samples(&fx)[..], [ToolEffect::SampleAnswer { answer: Err(e), .. }] if e == DECLINED),
            "{fx:?}"
        );
    }

    #[test]
    fn ctrl_c_declines_every_waiting_request_and_esc_only_the_shown_one() {
        let mut s = asked();
        for _ in 0..4 {
            s.apply(Msg::Tools(ToolMsg::Sample { request: request(), reply: SampleReply::detached() }));
        }
        let fx = key(&mut s, KeyCode::Esc);
        assert_eq!(samples(&fx).len(), 1);
        assert_eq!(s.tools.samples.len(), 4);
        let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)));
        let declined = samples(&fx);
        assert_eq!(declined.len(), 4, "{fx:?}");
        assert!(declined.iter().all(|d| matches!(d, ToolEffect::SampleAnswer { answer: Err(e), .. } if e == DECLINED)));
        assert!(s.tools.samples.is_empty() && !s.overlays.iter().any(|o| matches!(o, Overlay::Sample)));
    }

    #[test]
    fn a_finished_request_leaves_a_notice_with_its_tokens() {
        let mut s = test_state();
        let run = crate::engine::sampling::SampleRun {
            sampled: crate::tools::mcp::sample::Sampled { text: "x".into(), model: "m-9".into(), finish_reason: None },
            usage: Some(serde_json::json!({"prompt_tokens": 3, "completion_tokens": 4})),
        };
        s.apply(Msg::Tools(ToolMsg::Sampled { server: "ev".into(), result: Ok(run) }));
        let text = format!("{:?}", s.transcript);
        assert!(text.contains("MCP server `ev` used m-9 for a sampling request (7 tokens)"), "{text}");
    }
}
