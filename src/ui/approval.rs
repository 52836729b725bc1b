//! The approval modal: which tool, what exactly will run (the command, the file and its diff,
//! the MCP server and tool), the pretty-printed arguments, and the options (one a line, the
//! highlighted one marked) with how to choose — or the reason being typed, or the arguments
//! being edited.

use super::sanitize::{reveal, sanitize};
use super::theme::{Role as R, Theme};
use super::tool_card::{diff_lines, patch_lines, pretty_json, shell_lines, shell_quote};
use super::wrap;
use crate::app::State;
use crate::app::approval::{Approval, Choice, Mode};
use crate::engine::diff::{Op, diff_with_budget};
use crate::engine::message::ToolCall;
use crate::tools::{ToolSource, ToolSpec};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use serde_json::Value;

/// What an option says.
fn label(c: Choice, call: &ToolCall) -> String {
    match c {
        Choice::Once => "approve once".to_owned(),
        Choice::Session => format!("approve {} for this session", sanitize(&call.name)),
        Choice::Outside => {
            "run outside the sandbox: network and writes outside the workspace open for this one command".to_owned()
        }
        Choice::Deny => "deny".to_owned(),
        Choice::Reason => "deny with a reason".to_owned(),
        Choice::Edit => "edit the arguments".to_owned(),
    }
}

/// The options, one a line (a long one wrapped under itself): the highlighted one marked,
/// each with its letter if it has one.
fn choices(state: &State, a: &Approval, call: &ToolCall, cols: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let choices = state.approval_choices();
    // Where no option has a letter (a path outside the workspace) there is no letter column.
    let letters = choices.iter().any(|&c| state.approval_letter(c).is_some());
    let mut out = Vec::new();
    for (i, c) in choices.into_iter().enumerate() {
        let on = a.highlight == Some(i);
        let letter = match state.approval_letter(c) {
            Some(l) => format!("{l}  "),
            None if letters => "   ".to_owned(),
            None => String::new(),
        };
        let lead = 3 + wrap::width(&letter);
        for (n, mut line) in
            wrap::plain(&label(c, call), cols.saturating_sub(lead).max(1), theme.style(R::Base)).into_iter().enumerate()
        {
            let (mark, letter) =
                if n == 0 { (if on { " ▸ " } else { "   " }, letter.clone()) } else { ("   ", " ".repeat(lead - 3)) };
            line.spans.insert(0, Span::styled(letter, theme.style(R::Accent).add_modifier(Modifier::BOLD)));
            line.spans.insert(0, Span::styled(mark, theme.style(R::Accent)));
            if on {
                for s in &mut line.spans {
                    s.style = s.style.patch(theme.style(R::Selection));
                }
            }
            out.push(line);
        }
    }
    out
}

/// A short name for each option, for the one-line list of a small screen.
fn short(c: Choice) -> &'static str {
    match c {
        Choice::Once => "approve",
        Choice::Session => "session",
        Choice::Outside => "outside the sandbox",
        Choice::Deny => "deny",
        Choice::Reason => "deny + reason",
        Choice::Edit => "edit",
    }
}

/// The options on one line: each with its letter, the highlighted one marked.
fn one_line_choices(state: &State, a: &Approval) -> Vec<Span<'static>> {
    let theme = &state.theme;
    let mut spans = Vec::new();
    for (i, c) in state.approval_choices().into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", theme.style(R::Dim)));
        }
        let on = a.highlight == Some(i);
        let selected = |st: ratatui::style::Style| if on { st.patch(theme.style(R::Selection)) } else { st };
        if let Some(l) = state.approval_letter(c) {
            spans.push(Span::styled(format!("{l} "), selected(theme.style(R::Accent).add_modifier(Modifier::BOLD))));
        }
        spans.push(Span::styled(short(c), selected(theme.style(R::Base))));
    }
    spans
}

/// The line under the options: wait (the guard), or how to choose — and that typing goes to
/// the composer, which is true while the modal lists its options.
fn choose_hint(state: &State, a: &Approval) -> Vec<Span<'static>> {
    let theme = &state.theme;
    let key = |k: &str| Span::styled(k.to_owned(), theme.style(R::Accent).add_modifier(Modifier::BOLD));
    let dim = |t: &str| Span::styled(t.to_owned(), theme.style(R::Dim));
    if state.approval_guarded() {
        return vec![Span::styled(
            "a moment… keys typed now go to your message, Enter decides nothing".to_owned(),
            theme.style(R::Warning),
        )];
    }
    if let Some(p) = a.pending {
        return vec![key("Enter"), dim(" confirms · any other key makes “"), key(&p.to_string()), dim("” text")];
    }
    let mut spans = vec![key("↑↓"), dim(" then "), key("Enter")];
    let letters: Vec<String> =
        state.approval_choices().into_iter().filter_map(|c| state.approval_letter(c)).map(String::from).collect();
    if letters.is_empty() {
        spans.push(dim(" (no letter decides here)"));
    } else {
        spans.extend([dim(" · or "), key(&letters.join(" ")), dim(" then "), key("Enter")]);
    }
    spans.extend([dim(" · "), key("PgDn"), dim(" more · "), key("Esc"), dim(" cancels the turn")]);
    spans
}

/// Unchanged lines kept around each change in a `write_file` diff.
const CONTEXT: usize = 2;
/// Work the line diff may do before it reports the rest as replaced.
const DIFF_BUDGET: usize = 200_000;

pub fn draw(f: &mut Frame, state: &State) {
    let Some(a) = &state.tools.approval else { return };
    let Some(call) = state.call_at(a.owner, a.id, a.index) else { return };
    let theme = &state.theme;
    let screen = f.area();
    let width = screen.width.saturating_sub(4).min(96).max(20.min(screen.width));
    let inner_w = usize::from(width.saturating_sub(2)).max(1);
    let details = details(state, a, call, inner_w);
    // The details keep at least this many rows (the tool, what runs): where the listed options
    // would leave fewer, they go on one line instead.
    let room = usize::from(screen.height.saturating_sub(4));
    let mut footer = footer(state, a, call, inner_w, false);
    if room.saturating_sub(footer.len()) < details.len().min(DETAIL_ROWS) {
        footer = self::footer(state, a, call, inner_w, true);
    }
    let input_rows: u16 = match &a.mode {
        Mode::Choose => 0,
        Mode::Reason(_) => 1,
        Mode::Edit(c) => u16::try_from(c.line_count()).unwrap_or(u16::MAX).clamp(3, 14),
    };
    let footer_rows = u16::try_from(footer.len()).unwrap_or(0) + input_rows;
    let want = u16::try_from(details.len()).unwrap_or(u16::MAX).saturating_add(footer_rows).saturating_add(2);
    let height = want.min(screen.height.saturating_sub(2)).max(3.min(screen.height));
    let area =
        Rect { x: screen.x + (screen.width - width) / 2, y: screen.y + (screen.height - height) / 2, width, height };
    let waiting = state.tools.waiting();
    let count = if waiting > 1 { format!(" 1 of {waiting} waiting ") } else { String::new() };
    // In compare mode several columns may ask: the title says whose call this is.
    let title = match state.owner_label(a.owner) {
        Some(who) => format!(" Approve tool call? · {} ", sanitize(&who)),
        None => " Approve tool call? ".to_owned(),
    };
    let block = Block::bordered()
        .border_style(theme.style(R::Warning))
        .title(Span::styled(title, theme.style(R::Warning).add_modifier(Modifier::BOLD)))
        .title_top(Line::from(Span::styled(count, theme.style(R::Dim))).right_aligned())
        .style(theme.style(R::Base));
    let inner = block.inner(area);
    f.render_widget(Clear, area);
    f.render_widget(block, area);
    if inner.height == 0 {
        return;
    }
    // The footer (choices, input) keeps its rows; the details scroll above it.
    let foot_h = footer_rows.min(inner.height.saturating_sub(1));
    let detail_h = inner.height - foot_h;
    let max_scroll = u16::try_from(details.len()).unwrap_or(u16::MAX).saturating_sub(detail_h.saturating_sub(1));
    let scroll = a.scroll.min(max_scroll);
    let total = details.len();
    let mut shown: Vec<Line<'static>> =
        details.into_iter().skip(usize::from(scroll)).take(usize::from(detail_h)).collect();
    // What is approved unseen is not approved: say when the details go on below.
    let hidden = total.saturating_sub(usize::from(scroll) + shown.len());
    if hidden > 0 {
        if let Some(last) = shown.last_mut() {
            let note = format!("↓ {} more lines — PgDn scrolls", hidden + 1);
            *last = Line::from(Span::styled(note, theme.style(R::Warning).add_modifier(Modifier::BOLD)));
        }
    }
    f.render_widget(Paragraph::new(shown), Rect { height: detail_h, ..inner });
    let foot = Rect { y: inner.y + detail_h, height: foot_h, ..inner };
    let text_rows = u16::try_from(footer.len()).unwrap_or(0).min(foot.height);
    f.render_widget(Paragraph::new(footer), Rect { height: text_rows, ..foot });
    let input = Rect { y: foot.y + text_rows, height: foot.height - text_rows, ..foot };
    match &a.mode {
        Mode::Choose => {}
        Mode::Reason(c) | Mode::Edit(c) => {
            if input.height > 0 {
                let mut area = c.area.clone();
                area.set_style(theme.style(R::Base));
                area.set_cursor_style(theme.style(R::Base).add_modifier(Modifier::REVERSED));
                area.set_placeholder_style(theme.style(R::Dim));
                f.render_widget(&area, input);
            }
        }
    }
}

fn heading(theme: &Theme, text: &str) -> Line<'static> {
    Line::from(Span::styled(text.to_owned(), theme.style(R::Heading).add_modifier(Modifier::BOLD)))
}

/// Where the tool comes from, for the header.
fn source(spec: Option<&ToolSpec>, call: &ToolCall) -> String {
    match (call.kind.as_str(), spec.map(|s| &s.source)) {
        ("mcp_approval", _) => "the provider asks before calling an MCP tool".into(),
        ("shell" | "local_shell", _) => "shell commands on this machine".into(),
        ("apply_patch", _) => "a patch to files on this machine".into(),
        (_, Some(ToolSource::Builtin)) => "built-in tool".into(),
        (_, Some(ToolSource::User)) => "your tool from config.toml".into(),
        (_, Some(ToolSource::Recorded)) => "a recorded output (nothing runs)".into(),
        (_, Some(ToolSource::Mcp(server, via))) => format!("MCP server {server} ({})", via.label()),
        (_, None) => "a tool palaver does not have".into(),
    }
}

/// Which sandbox a command this call starts will run in (none for calls that start none).
fn sandbox_text(state: &State, a: &Approval, call: &ToolCall) -> Option<String> {
    Some(state.call_sandbox(a.owner, call)?.describe_on(state.tools.sandbox_support))
}

fn details(state: &State, a: &Approval, call: &ToolCall, cols: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let spec = crate::engine::tool_loop::spec_for(&state.tools.set.0, call);
    let mut out = vec![Line::from(vec![
        Span::styled(format!("⚙ {}", reveal(&call.name)), theme.style(R::Tool).add_modifier(Modifier::BOLD)),
        Span::styled(format!("  {}", reveal(&source(spec.as_ref(), call))), theme.style(R::Dim)),
    ])];
    // Paths outside the workspace (or holding secrets) come first: approving grants exactly these.
    let turn = state.tools.turn(a.owner).filter(|t| t.id == a.id);
    let paths = turn.and_then(|t| t.paths.get(&a.index));
    // A held output already ran: approving sends what it found to the provider.
    let held = turn.is_some_and(|t| t.held.contains_key(&a.index));
    for need in paths.into_iter().flatten() {
        let verb = match (held, need.write) {
            (true, _) => "sends to the provider",
            (false, true) => "writes",
            (false, false) => "reads",
        };
        let text = format!("⚠ {verb} {} — {}", reveal(&need.path.display().to_string()), reveal(&need.why));
        out.extend(wrap::plain(&text, cols, theme.style(R::Warning).add_modifier(Modifier::BOLD)));
    }
    out.push(Line::default());
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut show_args = true;
    match (call.kind.as_str(), call.name.as_str()) {
        ("shell" | "local_shell", _) => {
            out.push(heading(theme, "Will run"));
            out.extend(shell_lines(call, theme));
            show_args = call.kind == "local_shell"
                && args.get("env").is_some_and(|e| e.as_object().is_some_and(|o| !o.is_empty()));
        }
        ("apply_patch", _) => {
            out.push(heading(theme, "Will change"));
            out.extend(patch_lines(&call.arguments, theme));
            show_args = false;
        }
        ("mcp_approval", _) => {
            let (server, tool) = call.name.split_once('.').unwrap_or(("?", call.name.as_str()));
            out.push(heading(theme, "Will allow"));
            out.push(Line::from(vec![
                Span::styled("MCP server ", theme.style(R::Dim)),
                Span::styled(reveal(server), theme.style(R::Strong)),
                Span::styled(" · tool ", theme.style(R::Dim)),
                Span::styled(reveal(tool), theme.style(R::Strong)),
            ]));
            out.extend(wrap::plain(
                "The provider calls it after you approve; palaver runs nothing here.",
                cols,
                theme.style(R::Dim),
            ));
        }
        ("", "run_command") => {
            out.push(heading(theme, "Will run (sh -c)"));
            out.extend(wrap::plain(&format!("$ {}", reveal(&arg("command"))), cols, theme.style(R::InlineCode)));
            show_args = false;
        }
        ("", "write_file") => {
            out.push(heading(theme, "Will write"));
            out.push(Line::from(Span::styled(reveal(&arg("path")), theme.style(R::Strong))));
            out.extend(write_diff(a, &arg("content"), theme));
            show_args = false;
        }
        _ => {
            if let Some(ToolSource::User) = spec.as_ref().map(|s| &s.source) {
                if let Some(t) = state.cfg.tools.iter().find(|t| t.name == call.name) {
                    out.push(heading(theme, "Will run"));
                    let line = format!("$ {}  (arguments as JSON on stdin)", shell_quote(&t.command));
                    out.extend(wrap::plain(&reveal(&line), cols, theme.style(R::InlineCode)));
                }
            }
        }
    }
    if let Some(text) = sandbox_text(state, a, call) {
        let role = if text.starts_with("sandbox") { R::Dim } else { R::Warning };
        out.extend(wrap::plain(&text, cols, theme.style(role)));
    }
    if show_args {
        if out.last().is_some_and(|l| l.width() > 0) {
            out.push(Line::default());
        }
        out.push(heading(theme, if call.kind == "custom" { "Input" } else { "Arguments" }));
        let text = if call.kind == "custom" { call.arguments.clone() } else { pretty_json(&call.arguments) };
        out.extend(wrap::plain(&reveal(&text), cols, theme.style(R::Base)));
    }
    // What runs comes before what the tool says of itself: on a small screen a long
    // description would push the command out of sight. The pseudo-specs of MCP approvals,
    // shell and patch calls only repeat the source line.
    let described = call.kind.is_empty() || call.kind == "custom";
    if let Some(d) = spec.as_ref().map(|s| s.description.as_str()).filter(|d| described && !d.is_empty()) {
        out.push(Line::default());
        out.extend(wrap::plain(&reveal(d), cols, theme.style(R::Dim)));
    }
    wrap::fit(out, cols)
}

/// The `write_file` change as a line diff against the file as it is now.
fn write_diff(a: &Approval, new: &str, theme: &Theme) -> Vec<Line<'static>> {
    let dim = theme.style(R::Dim);
    match &a.before {
        None => vec![Line::from(Span::styled("reading the current file…", dim))],
        Some(Err(e)) => {
            let mut out =
                vec![Line::from(Span::styled(format!("cannot read it: {}", sanitize(e)), theme.style(R::Warning)))];
            out.extend(diff_lines(&added(new), theme));
            out
        }
        Some(Ok(None)) => {
            let mut out = vec![Line::from(Span::styled("a new file", dim))];
            out.extend(diff_lines(&added(new), theme));
            out
        }
        Some(Ok(Some(old))) if old == new => {
            vec![Line::from(Span::styled("no change: the file already says this", dim))]
        }
        Some(Ok(Some(old))) => {
            let mut out = vec![Line::from(Span::styled("replaces the file:", dim))];
            out.extend(diff_lines(&line_diff(old, new), theme));
            out
        }
    }
}

fn added(text: &str) -> String {
    text.lines().map(|l| format!("+{l}\n")).collect()
}

/// A unified-style diff of two texts, long unchanged stretches folded.
#[must_use]
pub fn line_diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    for op in diff_with_budget(&a, &b, DIFF_BUDGET) {
        match op {
            Op::Equal(n) => {
                let run = &a[i..i + n];
                if n > CONTEXT * 2 + 1 {
                    let head = if i == 0 { 0 } else { CONTEXT };
                    let tail = if i + n == a.len() { 0 } else { CONTEXT };
                    for l in &run[..head] {
                        out.push_str(&format!(" {l}\n"));
                    }
                    out.push_str(&format!("@@ {} unchanged lines\n", n - head - tail));
                    for l in &run[n - tail..] {
                        out.push_str(&format!(" {l}\n"));
                    }
                } else {
                    for l in run {
                        out.push_str(&format!(" {l}\n"));
                    }
                }
                i += n;
                j += n;
            }
            Op::Delete(n) => {
                for l in &a[i..i + n] {
                    out.push_str(&format!("-{l}\n"));
                }
                i += n;
            }
            Op::Insert(n) => {
                for l in &b[j..j + n] {
                    out.push_str(&format!("+{l}\n"));
                }
                j += n;
            }
        }
    }
    out
}

/// Rows the details keep before the options are put on one line.
const DETAIL_ROWS: usize = 6;

/// The options, a line each — or `compact`, all on one (wrapped) line with short names, the
/// highlighted one's full label under them.
fn footer(state: &State, a: &Approval, call: &ToolCall, cols: usize, compact: bool) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let key = |k: &str| Span::styled(k.to_owned(), theme.style(R::Accent).add_modifier(Modifier::BOLD));
    let text = |t: &str| Span::styled(t.to_owned(), theme.style(R::Base));
    let sep = || Span::styled(" · ", theme.style(R::Dim));
    let mut out = if compact { Vec::new() } else { vec![Line::default()] };
    match &a.mode {
        Mode::Choose if compact => {
            out.extend(wrap::spans(one_line_choices(state, a), cols));
            match state.approval_choices().get(a.highlight.unwrap_or(usize::MAX)) {
                Some(&c) if a.pending.is_none() => {
                    out.extend(wrap::plain(&format!("▸ {}", label(c, call)), cols, theme.style(R::Accent)));
                }
                // The letters are on the options' line already.
                _ if state.approval_guarded() || a.pending.is_some() => {
                    out.extend(wrap::spans(choose_hint(state, a), cols));
                }
                _ => out.extend(wrap::spans(
                    vec![
                        key("↑↓"),
                        Span::styled(" then ", theme.style(R::Dim)),
                        key("Enter"),
                        sep(),
                        key("PgDn"),
                        Span::styled(" more", theme.style(R::Dim)),
                        sep(),
                        key("Esc"),
                        Span::styled(" cancels", theme.style(R::Dim)),
                    ],
                    cols,
                )),
            }
        }
        Mode::Choose => {
            out.extend(choices(state, a, call, cols));
            out.extend(wrap::spans(choose_hint(state, a), cols));
        }
        Mode::Reason(_) => {
            out.push(Line::from(vec![
                Span::styled("Why not? ", theme.style(R::Heading)),
                Span::styled("(sent to the model) ", theme.style(R::Dim)),
                key("Enter"),
                text(" deny"),
                sep(),
                key("Esc"),
                text(" back"),
            ]));
        }
        Mode::Edit(_) => {
            if let Some(e) = &a.error {
                out.extend(wrap::plain(&format!("✗ {}", sanitize(e)), cols, theme.style(R::Error)));
            }
            let editor = state.keymap.hint(crate::app::keymap::Action::Editor);
            out.extend(wrap::spans(
                vec![
                    Span::styled("Edit the arguments: ", theme.style(R::Heading)),
                    key("Ctrl+S"),
                    text(" approve with these"),
                    sep(),
                    key(&editor),
                    text(" $EDITOR"),
                    sep(),
                    key("Esc"),
                    text(" back"),
                ],
                cols,
            ));
        }
    }
    out
}
