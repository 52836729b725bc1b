//! Reopening a stored conversation: its branches become the transcript's kept versions, the
//! way a live session would have left them, so `[` and `]` switch between them again.
//!
//! In the store a branch is a parent plus a fork position: its view is the parent's messages
//! before the fork and its own from the fork on. The active branch's view becomes the
//! transcript; every other branch hangs off the first position where its view parts from the
//! view it is compared with — siblings forked at the same position side by side (oldest first,
//! as `switch_version` expects), branches forked inside a kept version nested in it.

use super::effect::Effect;
use super::keymap::Action;
use super::persist::{ConvKey, Loaded, PersistOp};
use super::state::State;
use super::transcript::{NoticeKind, Transcript};
use crate::engine::message::{Message, MessageStatus};
use crate::store::{BranchInfo, StoredConversation};
use std::collections::{BTreeMap, HashMap, HashSet};

/// One branch's view: who owns each position, and the messages.
struct View<'a> {
    branch: i64,
    owners: Vec<i64>,
    msgs: &'a [Message],
}

/// The owning branch of each of the first `len` positions of `branch`'s view.
fn owners(infos: &HashMap<i64, (Option<i64>, usize)>, branch: i64, len: usize) -> Vec<i64> {
    let mut segs = Vec::new();
    let (mut current, mut limit) = (Some(branch), usize::MAX);
    // Bounded: a corrupt parent cycle must not hang the app.
    for _ in 0..10_000 {
        let Some(b) = current else { break };
        let (parent, fork) = infos.get(&b).copied().unwrap_or((None, 0));
        let fork = if parent.is_none() { 0 } else { fork };
        if fork < limit {
            segs.push((b, fork, limit));
        }
        limit = limit.min(fork);
        current = parent;
    }
    (0..len).map(|p| segs.iter().find(|s| p >= s.1 && p < s.2).map_or(branch, |s| s.0)).collect()
}

fn view<'a>(infos: &HashMap<i64, (Option<i64>, usize)>, c: &'a StoredConversation) -> View<'a> {
    View { branch: c.branch, owners: owners(infos, c.branch, c.messages.len()), msgs: &c.messages }
}

/// The first position where two views differ.
fn diverge(a: &[i64], b: &[i64]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Pushes `path` from `from` on into `t` (whose cells already hold `path[..from]`), with the
/// views in `others` (which all share that prefix) as kept branches. Records every pushed
/// message's (id, owner, revision).
fn emit(t: &mut Transcript, seen: &mut Vec<(u64, i64, u64)>, path: &View<'_>, others: Vec<&View<'_>>, from: usize) {
    let mut groups: BTreeMap<usize, Vec<&View<'_>>> = BTreeMap::new();
    for o in others {
        let d = diverge(&path.owners, &o.owners).max(from);
        // A branch with nothing of its own past the shared prefix has no version to show.
        if d < o.msgs.len() {
            groups.entry(d).or_default().push(o);
        }
    }
    let mut at = from;
    let push = |t: &mut Transcript, seen: &mut Vec<(u64, i64, u64)>, v: &View<'_>, range: std::ops::Range<usize>| {
        for p in range {
            let id = t.push_message(v.msgs[p].clone());
            seen.push((id, v.owners[p], v.msgs[p].revision));
        }
    };
    for (d, members) in groups {
        let d = d.min(path.msgs.len());
        push(t, seen, path, at..d);
        at = d;
        // Views sharing their message at `d` are one kept version with nested branches.
        let mut clusters: BTreeMap<i64, Vec<&View<'_>>> = BTreeMap::new();
        for m in members {
            clusters.entry(m.owners[d]).or_default().push(m);
        }
        for (_, mut cluster) in clusters {
            cluster.sort_by_key(|v| v.branch);
            let Some(rep) = cluster.pop() else { continue };
            emit(t, seen, rep, cluster, d);
            t.branch_off(d);
        }
    }
    push(t, seen, path, at..path.msgs.len());
}

/// Builds the transcript for a loaded conversation; returns the current path and the kept
/// messages as (message id, owning branch, revision). The active branch's messages are moved
/// out of `active` when it is the only branch (the common case: nothing to copy for a long
/// conversation); with other branches they are copied, as the views share them.
#[allow(clippy::type_complexity)]
pub(crate) fn build(
    t: &mut Transcript,
    active: &mut StoredConversation,
    others: &[StoredConversation],
) -> (Vec<(u64, i64, u64)>, Vec<(u64, i64, u64)>) {
    let infos: HashMap<i64, (Option<i64>, usize)> =
        active.branches.iter().map(|b: &BranchInfo| (b.branch, (b.parent, b.fork_position))).collect();
    t.clear();
    if others.iter().all(|o| o.branch == active.branch) {
        let owners = owners(&infos, active.branch, active.messages.len());
        t.cells.reserve(active.messages.len());
        let path = std::mem::take(&mut active.messages)
            .into_iter()
            .zip(owners)
            .map(|(m, owner)| {
                let revision = m.revision;
                (t.push_message(m), owner, revision)
            })
            .collect();
        return (path, Vec::new());
    }
    let path = view(&infos, active);
    let rest: Vec<View<'_>> = others.iter().filter(|o| o.branch != active.branch).map(|o| view(&infos, o)).collect();
    let mut seen = Vec::new();
    emit(t, &mut seen, &path, rest.iter().collect(), 0);
    let on_path: HashSet<u64> = t.cells.iter().filter_map(|c| c.message().map(|m| m.id)).collect();
    let (path, kept): (Vec<_>, Vec<_>) = seen.into_iter().partition(|s| on_path.contains(&s.0));
    (path, kept)
}

impl State {
    /// A stored conversation replaces the transcript (the current one is already saved).
    pub(crate) fn on_opened(&mut self, loaded: Loaded, fx: &mut Vec<Effect>) {
        if self.live.is_some() {
            self.cancel_live(fx);
        }
        // Settle what the old conversation still owes the store before letting it go.
        self.persist_sync(fx);
        let Loaded { mut active, others, switch, focus, adopt_model, notice, older } = loaded;
        let n = older + active.messages.len();
        // Only a reply the store found still streaming at start-up was cut off by palaver
        // stopping; one that could not connect or stalled says so on its own header.
        let cut_off = |m: &crate::engine::Message| {
            m.status == MessageStatus::Interrupted && m.error.as_ref().is_none_or(|e| e.kind == "interrupted")
        };
        let was_cut_off = active.messages.iter().any(cut_off);
        let (path, kept) = build(&mut self.transcript, &mut active, &others);
        let s = &active.summary;
        self.persist.adopt(&s.id, &s.title, active.branch, &path, &kept);
        if older > 0 {
            // Opened on its tail: the head follows (`head.rs`).
            self.persist.offset = older;
            fx.push(Effect::Persist(PersistOp::LoadHead { id: s.id.clone(), branch: active.branch, upto: older }));
        }
        if switch {
            let conv = ConvKey::Stored(s.id.clone());
            fx.push(Effect::Persist(PersistOp::Activate { conv, branch: active.branch }));
        }
        self.selected = None;
        self.editing = None;
        self.reasoning_open.clear();
        self.json_views.clear();
        self.focus = super::state::Focus::Composer;
        let versions = match others.len() {
            0 => String::new(),
            1 => ", 1 other branch".to_owned(),
            n => format!(", {n} other branches"),
        };
        let title = crate::text::sanitize::sanitize(&s.title).into_owned();
        self.transcript.push_notice(
            NoticeKind::Info,
            format!("reopened “{title}” · {n} message{}{versions} · {}", plural(n), s.id),
        );
        if adopt_model {
            self.adopt_model(s.model.as_deref(), s.provider.as_deref(), s.api.as_deref());
        }
        if let Some(n) = notice {
            self.transcript.push_notice(NoticeKind::Info, crate::text::sanitize::sanitize(&n).into_owned());
        }
        if was_cut_off {
            let (select, regenerate) = (self.keymap.hint(Action::Select), self.keymap.hint(Action::Regenerate));
            self.transcript.push_notice(
                NoticeKind::Error,
                format!(
                    "a reply was cut off when palaver stopped; what arrived is kept ({select} then {regenerate} \
                     regenerates the last reply)"
                ),
            );
        }
        self.recount();
        match focus
            .and_then(|p| p.checked_sub(older))
            .and_then(|p| self.transcript.cells.iter().filter_map(|c| c.message()).nth(p).map(|m| m.id))
        {
            Some(id) => {
                self.select(id);
                self.flash(format!("opened “{title}” at the match"));
            }
            None => {
                self.scroll_bottom();
                self.flash(format!("opened “{title}”"));
            }
        }
    }

    /// Takes the conversation's model when it is from the same provider.
    fn adopt_model(&mut self, model: Option<&str>, provider: Option<&str>, api: Option<&str>) {
        let Some(model) = model.filter(|m| *m != self.target.model) else { return };
        if let Some(p) = provider.filter(|p| *p != self.target.provider) {
            let text = format!(
                "this conversation was with {model} on {p}; replies now come from {} on {}",
                self.target.model, self.target.provider
            );
            self.transcript.push_notice(NoticeKind::Info, crate::text::sanitize::sanitize(&text).into_owned());
            return;
        }
        self.target.model = model.to_owned();
        if let Some(api) = api.and_then(crate::api::Api::parse) {
            self.target.api = api;
        }
        self.transcript.push_notice(NoticeKind::Info, format!("model: {model} (as in this conversation)"));
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
