//! Tool-call cards in the transcript: the tool's name, its arguments (raw while they stream,
//! then JSON; commands for shell calls, the diff for patches), its state (streaming, waiting
//! for approval, running with elapsed time, done, failed, denied, cancelled), and its output
//! folded to a few lines until the user expands it. Every text from the wire is sanitized.

use super::sanitize::{reveal, sanitize};
use super::theme::{Role as R, Theme};
use super::{fmt, wrap};
use crate::app::State;
use crate::app::keymap::Action;
use crate::app::tools::Owner;
use crate::app::transcript::Cell;
use crate::engine::message::{Message, ToolCall, ToolStatus};
use crate::sys::spawn::refusal::Refusal;
pub use crate::text::fmt::{pretty_json, size};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// Argument lines a card shows before folding.
const ARG_LINES: usize = 6;
/// Output lines a folded card shows.
const OUTPUT_LINES: usize = 3;
/// Most lines an expanded part shows (the inspector has everything).
const OPEN_LINES: usize = 400;
/// Longest arguments shown beside the name.
const INLINE_ARGS: usize = 60;

/// Mark, label and colour for a call's state.
#[must_use]
pub fn status_mark(status: &ToolStatus) -> (&'static str, &'static str, R) {
    let (mark, label) = status.mark();
    let role = match status {
        ToolStatus::Streaming | ToolStatus::Pending | ToolStatus::Skipped => R::Dim,
        ToolStatus::AwaitingApproval => R::Warning,
        ToolStatus::Running => R::Accent,
        ToolStatus::Done => R::Success,
        ToolStatus::Failed | ToolStatus::Denied => R::Error,
    };
    (mark, label, role)
}

/// Arguments on one line with a space after `:` and `,` (`{"path": "."}`), when they parse.
#[must_use]
pub fn spaced_json(args: &str) -> Option<String> {
    if args.trim().is_empty() {
        return Some("{}".to_owned());
    }
    let v: Value = serde_json::from_str(args).ok()?;
    Some(spaced(&v))
}

/// `v` on one line with a space after `:` and `,`, so long values wrap between fields.
#[must_use]
pub fn spaced(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let parts: Vec<String> =
                m.iter().map(|(k, v)| format!("{}: {}", Value::String(k.clone()), spaced(v))).collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(spaced).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

/// The render-cache salt for a cell of `owner`'s transcript: whatever besides its revision
/// changes how it looks (expanded outputs, the elapsed time of running tools).
#[must_use]
pub fn salt(state: &State, owner: Owner, cell: &Cell) -> u64 {
    let Some(m) = cell.message() else { return 0 };
    let mut s = u64::from(is_open(state, owner, m.id));
    if m.role() == crate::engine::message::Role::User {
        // Long user messages fold to about a screenful: the screen's height shapes them.
        s |= u64::from(state.size.1) << 32;
    }
    if state.tools.turn(owner).is_some_and(|t| t.id == m.id && !t.running.is_empty()) {
        s |= (state.now_ms / 100 + 1) << 1;
        // A progress report changes the card between two ticks of the clock.
        s = s.wrapping_add(state.tools.progress_rev.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
    s
}

/// Whether the user expanded the outputs of message `id` (only chat messages can be selected).
fn is_open(state: &State, owner: Owner, id: u64) -> bool {
    owner == Owner::Chat && state.tools.open.contains(&id)
}

/// Whether a cell is hidden: tool results are shown on their call's card.
#[must_use]
pub fn hidden(m: &Message) -> bool {
    m.role() == crate::engine::message::Role::Tool
}

/// Whether the selected message has cards to expand (tool calls or output items).
#[must_use]
pub fn has_cards(state: &State) -> bool {
    state.selected.and_then(|id| state.transcript.message(id)).is_some_and(|m| {
        !m.main().tool_calls.is_empty()
            || m.items
                .iter()
                .any(|i| !matches!(i.get("type").and_then(Value::as_str), None | Some("message" | "reasoning")))
    })
}

/// The cards of the tool calls of a message of `owner`'s transcript.
#[must_use]
pub fn cards(m: &Message, state: &State, cols: usize, owner: Owner) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (i, call) in m.main().tool_calls.iter().enumerate() {
        out.extend(card(m, i, call, state, cols, owner));
    }
    out
}

fn bar(theme: &Theme) -> Span<'static> {
    Span::styled("│ ", theme.style(R::Border))
}

/// Lines with the card's left bar, wrapped to fit.
fn barred(lines: Vec<Line<'static>>, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    let inner = cols.saturating_sub(2).max(1);
    wrap::fit(lines, inner)
        .into_iter()
        .map(|mut l| {
            l.spans.insert(0, bar(theme));
            l
        })
        .collect()
}

/// Folds `lines` to `keep` unless `open`; the fold line says how to expand.
pub(crate) fn fold(
    mut lines: Vec<Line<'static>>,
    keep: usize,
    open: bool,
    tail: bool,
    state: &State,
) -> Vec<Line<'static>> {
    let limit = if open { OPEN_LINES } else { keep };
    if lines.len() <= limit {
        return lines;
    }
    let hidden = lines.len() - limit;
    let dim = state.theme.style(R::Dim);
    let lines_word = if hidden == 1 { "line" } else { "lines" };
    let note = if open {
        format!("… {hidden} more {lines_word} (the inspector has everything)")
    } else {
        format!("… {hidden} more {lines_word} · select, {} expands", state.keymap.hint(Action::ToggleOutput))
    };
    if tail {
        lines.drain(..hidden);
        lines.insert(0, Line::from(Span::styled(note, dim)));
    } else {
        lines.truncate(limit);
        lines.push(Line::from(Span::styled(note, dim)));
    }
    lines
}

fn card(m: &Message, index: usize, call: &ToolCall, state: &State, cols: usize, owner: Owner) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let open = is_open(state, owner, m.id);
    let cancelled = call.output.as_deref() == Some(crate::app::tools::CANCELLED);
    let (mut mark, mut label, mut role) = status_mark(&call.status);
    // An approved MCP request ran nothing here: its "output" is the answer sent back.
    let approved_mcp = call.kind == "mcp_approval" && call.status == ToolStatus::Done;
    if cancelled {
        (mark, label, role) = ("■", "cancelled", R::Warning);
    } else if approved_mcp {
        label = "approved · the provider runs it";
    }
    let mut status = String::new();
    if call.status == ToolStatus::Running {
        mark = super::cells::spinner(state.now_ms);
        let elapsed = state.tools.started(owner, m.id, index).map(|s| state.now_ms.saturating_sub(s));
        status.push_str(&format!("{mark} {label}"));
        if let Some(e) = elapsed {
            status.push_str(&format!(" {}", fmt::duration(e)));
        }
        if let Some(p) = state.tools.progress_of(owner, m.id, index) {
            // What the MCP server reported: a bar when it knows the total, then its words.
            status.push_str(&format!(" · {}{}", progress_bar(p.progress, p.total), p.label()));
        }
    } else if approved_mcp {
        status.push_str(&format!("{mark} {label}"));
    } else {
        status.push_str(&format!("{mark} {label}"));
        // What the sandbox refused comes first, even when the command went on and exited 0.
        // Only a command palaver started in the sandbox carries them (not a file that quotes one).
        let finished =
            matches!(call.status, ToolStatus::Done | ToolStatus::Failed) && state.call_sandbox(owner, call).is_some();
        for r in call.output.as_deref().filter(|_| finished).map(Refusal::in_output).unwrap_or_default() {
            status.push_str(&format!(" · {}", r.label()));
            role = if role == R::Success { R::Warning } else { role };
        }
        if let Some(ms) = call.duration_ms {
            status.push_str(&format!(" · {}", fmt::duration(ms)));
        }
        if let Some(o) = call.output.as_ref().filter(|_| matches!(call.status, ToolStatus::Done | ToolStatus::Failed)) {
            let n = o.lines().count();
            status.push_str(&format!(" · {n} line{} · {}", if n == 1 { "" } else { "s" }, size(o.len())));
        }
    }
    let name = title(call);
    let name_span = Span::styled(format!("⚙ {name}"), theme.style(R::Tool).add_modifier(Modifier::BOLD));
    let status_span = Span::styled(status, theme.style(role));
    let (inline, body) = arguments(call, state, cols, open);
    let mut head = vec![name_span];
    let via = mcp_via(state, call);
    if let Some(v) = &via {
        head.push(Span::styled(v.clone(), theme.style(R::Dim)));
    }
    let used = wrap::width(&name) + via.as_deref().map_or(0, wrap::width) + wrap::width(&status_span.content) + 6;
    if let Some(a) = inline.filter(|a| used + wrap::width(a) <= cols) {
        head.push(Span::styled(format!(" {a}"), theme.style(R::Dim)));
        head.push(Span::raw("  "));
        head.push(status_span);
        let mut out = wrap::spans(head, cols);
        out.extend(output(call, state, cols, open));
        return out;
    }
    head.push(Span::raw("  "));
    head.push(status_span);
    let mut out = wrap::spans(head, cols);
    out.extend(barred(body, cols, theme));
    out.extend(output(call, state, cols, open));
    out
}

/// For a call to an MCP server's tool, ` · SERVER · TRANSPORT`: where the call ran.
fn mcp_via(state: &State, call: &ToolCall) -> Option<String> {
    match crate::engine::tool_loop::spec_for(&state.tools.set.0, call)?.source {
        crate::tools::ToolSource::Mcp(server, via) => Some(format!(" · {} · {}", sanitize(&server), via.label())),
        _ => None,
    }
}

/// `▰▰▰▱▱ ` for a report with a total (empty without one): eight cells filled in proportion.
fn progress_bar(progress: f64, total: Option<f64>) -> String {
    const CELLS: usize = 8;
    let Some(total) = total.filter(|t| *t > 0.0 && t.is_finite()) else { return String::new() };
    let ratio = if progress.is_finite() { (progress / total).clamp(0.0, 1.0) } else { 0.0 };
    // At most CELLS: the ratio is clamped to [0, 1].
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let full = ((ratio * CELLS as f64).round() as usize).min(CELLS);
    format!("{}{} ", "▰".repeat(full), "▱".repeat(CELLS - full))
}

/// The card's title: the tool, or what kind of request it is.
fn title(call: &ToolCall) -> String {
    let name = if call.name.is_empty() { "tool".to_owned() } else { sanitize(&call.name).into_owned() };
    match call.kind.as_str() {
        "mcp_approval" => format!("MCP approval request · {name}"),
        "custom" => format!("{name} (custom)"),
        _ => name,
    }
}

/// The arguments: a short form for the header line when there is one, and the body lines.
fn arguments(call: &ToolCall, state: &State, cols: usize, open: bool) -> (Option<String>, Vec<Line<'static>>) {
    let theme = &state.theme;
    let dim = theme.style(R::Dim);
    if call.status == ToolStatus::Streaming {
        // Raw as it arrives; the end is what is moving, so fold from the top.
        let lines = wrap::plain(&sanitize(&call.arguments), cols.saturating_sub(2).max(1), dim);
        return (None, fold(lines, ARG_LINES, false, true, state));
    }
    match call.kind.as_str() {
        "shell" | "local_shell" => (None, fold(shell_lines(call, theme), ARG_LINES, open, false, state)),
        "apply_patch" => (None, fold(patch_lines(&call.arguments, theme), ARG_LINES + 4, open, false, state)),
        "custom" => {
            let lines = wrap::plain(&sanitize(&call.arguments), cols.saturating_sub(2).max(1), dim);
            (None, fold(lines, ARG_LINES, open, false, state))
        }
        _ => {
            let inline = spaced_json(&call.arguments)
                .filter(|s| wrap::width(s) <= INLINE_ARGS)
                .map(|s| sanitize(&s).into_owned());
            let lines = wrap::plain(&sanitize(&pretty_json(&call.arguments)), cols.saturating_sub(2).max(1), dim);
            (inline, fold(lines, ARG_LINES, open, false, state))
        }
    }
}

/// `$ command` lines of a shell or local shell call.
#[must_use]
pub fn shell_lines(call: &ToolCall, theme: &Theme) -> Vec<Line<'static>> {
    let v: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let strs = |k: &str| -> Vec<String> {
        v.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let cmd_style = theme.style(R::InlineCode);
    let mut out = Vec::new();
    let commands = if call.kind == "local_shell" { vec![shell_quote(&strs("command"))] } else { strs("commands") };
    for c in commands {
        out.push(Line::from(vec![Span::styled("$ ", theme.style(R::Accent)), Span::styled(reveal(&c), cmd_style)]));
    }
    if let Some(dir) = v.get("working_directory").and_then(Value::as_str) {
        out.push(Line::from(Span::styled(format!("in {}", reveal(dir)), theme.style(R::Dim))));
    }
    if out.is_empty() {
        out.push(Line::from(Span::styled(reveal(&call.arguments), theme.style(R::Dim))));
    }
    out
}

/// An argv as a shell line, quoting words that need it.
#[must_use]
pub fn shell_quote(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) {
                a.clone()
            } else {
                crate::api::endpoint::shell_quote(a)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The operation and its diff, added lines in the added colour, removed in the removed one.
#[must_use]
pub fn patch_lines(operation: &str, theme: &Theme) -> Vec<Line<'static>> {
    let v: Value = serde_json::from_str(operation).unwrap_or(Value::Null);
    let op = v.get("type").and_then(Value::as_str).unwrap_or("patch");
    let path = v.get("path").and_then(Value::as_str).unwrap_or("?");
    let mut out = vec![Line::from(vec![
        Span::styled(format!("{} ", reveal(op)), theme.style(R::Accent)),
        Span::styled(reveal(path), theme.style(R::Strong)),
    ])];
    let diff = v.get("diff").and_then(Value::as_str).unwrap_or_default();
    out.extend(diff_lines(diff, theme));
    out
}

/// A unified-style diff coloured line by line.
#[must_use]
pub fn diff_lines(diff: &str, theme: &Theme) -> Vec<Line<'static>> {
    diff.lines()
        .map(|l| {
            let role = if l.starts_with('+') {
                R::DiffAdded
            } else if l.starts_with('-') {
                R::DiffRemoved
            } else if l.starts_with("@@") {
                R::Accent
            } else {
                R::Dim
            };
            Line::from(Span::styled(sanitize(l).into_owned(), theme.style(role)))
        })
        .collect()
}

/// What a call returned as text: shell runs as their streams and exit status.
#[must_use]
pub fn output_text(call: &ToolCall) -> Option<String> {
    let out = call.output.as_ref()?;
    if matches!(call.kind.as_str(), "shell" | "local_shell") {
        if let Ok(Value::Array(runs)) = serde_json::from_str::<Value>(out) {
            let mut s = String::new();
            for r in &runs {
                let outcome = &r["outcome"];
                if outcome["type"] == "timeout" {
                    s.push_str("[timed out]\n");
                } else if let Some(code) = outcome["exit_code"].as_i64() {
                    s.push_str(&format!("[exit {code}]\n"));
                }
                s.push_str(r["stdout"].as_str().unwrap_or(""));
                s.push_str(r["stderr"].as_str().unwrap_or(""));
            }
            return Some(s);
        }
    }
    Some(out.clone())
}

fn output(call: &ToolCall, state: &State, cols: usize, open: bool) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let Some(text) = output_text(call) else { return Vec::new() };
    if call.kind == "mcp_approval" && call.status == ToolStatus::Done {
        return Vec::new();
    }
    let role = match call.status {
        ToolStatus::Failed => R::Error,
        ToolStatus::Denied | ToolStatus::Skipped => R::Warning,
        _ => R::Base,
    };
    let text = text.trim_end_matches('\n');
    let text = if text.is_empty() { "(no output)" } else { text };
    let inner = cols.saturating_sub(4).max(1);
    let mut lines = wrap::plain(&sanitize(text), inner, theme.style(role));
    lines = fold(lines, OUTPUT_LINES, open, false, state);
    let mut out = Vec::with_capacity(lines.len());
    for (i, mut l) in lines.into_iter().enumerate() {
        let lead = if i == 0 { "↳ " } else { "  " };
        l.spans.insert(0, Span::styled(lead, theme.style(R::Dim)));
        l.spans.insert(0, bar(theme));
        out.push(l);
    }
    out
}

/// The status bar's left part while the chat's tool loop works between requests.
#[must_use]
pub fn status_spans(state: &State) -> Vec<Span<'static>> {
    let theme = &state.theme;
    let Some(t) = state.tools.turn(Owner::Chat) else { return Vec::new() };
    let style: Style = theme.style(R::StatusStreaming);
    let mut out = Vec::new();
    if !t.queue.is_empty() {
        out.push(Span::styled(format!(" ? {} waiting for approval", t.queue.len()), theme.style(R::Warning)));
    }
    if !t.running.is_empty() {
        let n = t.running.len();
        let s = if n == 1 { "" } else { "s" };
        out.push(Span::styled(format!(" {} running {n} tool{s}", super::cells::spinner(state.now_ms)), style));
    }
    out.push(Span::styled(
        format!("  round {}/{}", state.tools.rounds(Owner::Chat), state.tools.step_limit),
        theme.style(R::Dim),
    ));
    out
}
