//! A server that ignored the tools it was sent (the rule is the engine's,
//! `engine::tools_ignored`): the chat screen says so once per target — the chat's provider and
//! model, or a compare column — and the status bar's tools segment reads `ignored?` while the
//! chat talks to one that did.

use super::state::State;
use super::tools::Owner;
use super::transcript::NoticeKind;
use crate::engine::tools_ignored::ToolsIgnored;

impl State {
    /// What the notice is said once for: the chat's target, or one column of one comparison.
    #[must_use]
    pub fn tools_ignored_key(&self, owner: Owner) -> String {
        match owner {
            Owner::Chat => format!("chat {} {}", self.target.provider, self.target.model),
            Owner::Column { generation, column } => format!("column {generation} {column}"),
        }
    }

    /// The turn engine found `owner`'s server ignoring its tools: the first time for this
    /// target, a notice in `owner`'s transcript.
    pub(crate) fn on_tools_ignored(&mut self, owner: Owner, found: ToolsIgnored) {
        if self.tools.ignored.insert(self.tools_ignored_key(owner)) {
            self.owner_notice(owner, NoticeKind::Error, found.notice());
        }
    }

    /// Whether the chat's server seemed to ignore the tools it was sent.
    #[must_use]
    pub fn tools_ignored_here(&self) -> bool {
        self.tools.ignored.contains(&self.tools_ignored_key(Owner::Chat))
    }
}
