//! The interactive app: one `State` owned by the loop, changed only by `State::apply(msg)`, which
//! returns `Effect`s for the runner to carry out. No terminal and no drawing: the loop that ties
//! them together is `crate::interactive`.

pub mod approval;
mod approval_keys;
pub mod attach;
mod cells;
pub mod commands;
pub mod compaction;
pub mod compare;
pub mod composer;
pub mod conversations;
mod copying;
pub mod effect;
pub mod elicit;
mod export_page;
mod head;
pub mod inspector;
mod interleave;
pub mod keymap;
mod keys;
pub mod mcp_prompts;
mod mcp_resources;
pub mod msg;
mod notify;
pub mod overlay;
mod paste_image;
pub mod persist;
mod persist_sync;
mod probs;
mod provider_pick;
pub mod queue;
mod reopen;
pub mod runner;
pub mod sample;
pub mod schema;
mod scroll;
pub mod slash_menu;
pub mod state;
pub mod storage;
mod tool_turns;
pub mod tools;
mod tools_ignored;
pub mod totals;
pub mod transcript;
mod turns;
mod typing;
pub mod user_commands;
pub mod vim;
mod vim_keys;
mod vim_motion;
mod window;

pub use effect::Effect;
pub use msg::Msg;
pub use state::{State, TargetInfo};

/// A state for tests: demo-like target, default settings and config, the dark theme.
#[cfg(test)]
pub(crate) fn test_state() -> State {
    let target = TargetInfo::new("demo", "demo", crate::api::Api::Chat);
    let settings = crate::engine::target::TurnSettings { stream: true, ..Default::default() };
    let theme = crate::config::theme::Theme::load("dark", None, true).unwrap_or_default();
    State::new(target, settings, crate::config::Config::default(), theme, "dark")
}

/// Every store operation among `fx`, for tests.
#[cfg(test)]
pub(crate) fn persist_ops(fx: &[Effect]) -> Vec<&persist::PersistOp> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Persist(op) => Some(op),
            _ => None,
        })
        .collect()
}
#[cfg(test)]
mod abilities_tests;
#[cfg(test)]
mod flash_tests;
#[cfg(test)]
mod tests;
