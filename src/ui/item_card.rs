//! Cards for Responses API output items: hosted tools the provider ran (web search, file
//! search, code interpreter, image generation, MCP listings and calls, computer actions),
//! compaction, and any item type palaver does not know (type, status and compact raw JSON).
//! Items answered on the user's side (function, custom, shell, patch, MCP approval) are drawn
//! as tool cards instead; a `message` item's annotations become numbered references under
//! the text. No item is ever dropped.

use super::sanitize::sanitize;
use super::theme::{Role as R, Theme};
use super::tool_card::fold;
use super::wrap;
use crate::app::State;
use crate::engine::message::Message;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use serde_json::Value;

/// Body lines an item card shows before folding.
const BODY_LINES: usize = 10;
/// Code lines a code-interpreter card shows before folding.
const CODE_LINES: usize = 12;

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

/// Whether item `item` of `m` is drawn elsewhere (the answer, reasoning, a tool card).
fn drawn_elsewhere(m: &Message, item: &Value) -> bool {
    match s(item, "type") {
        "" => item.is_null(),
        "message" | "reasoning" => true,
        "function_call"
        | "custom_tool_call"
        | "shell_call"
        | "local_shell_call"
        | "apply_patch_call"
        | "mcp_approval_request" => {
            let ids = [s(item, "call_id"), s(item, "id")];
            m.main().tool_calls.iter().any(|c| !c.id.is_empty() && ids.contains(&c.id.as_str()))
        }
        _ => false,
    }
}

/// Where the answer's text sits among the items (the first `message` item).
fn message_at(m: &Message) -> usize {
    m.items.iter().position(|i| s(i, "type") == "message").unwrap_or(m.items.len())
}

/// Cards for the items before the answer's text.
#[must_use]
pub fn leading(m: &Message, state: &State, cols: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let theme = &state.theme;
    if m.main().reasoning.is_empty() {
        let encrypted = m.items.iter().any(|i| s(i, "type") == "reasoning" && !s(i, "encrypted_content").is_empty());
        if encrypted {
            out.push(Line::from(Span::styled(
                "▸ reasoning · encrypted (kept and sent back next turn)",
                theme.style(R::Reasoning),
            )));
        }
    }
    for (i, item) in m.items.iter().enumerate().take(message_at(m)) {
        if !drawn_elsewhere(m, item) {
            out.extend(card(m, i, item, state, cols));
        }
    }
    if !out.is_empty() && !m.main().content.is_empty() {
        out.push(Line::default());
    }
    out
}

/// References under the text, then cards for the items after it.
#[must_use]
pub fn trailing(m: &Message, state: &State, cols: usize) -> Vec<Line<'static>> {
    let mut out = references(m, &state.theme, cols);
    for (i, item) in m.items.iter().enumerate().skip(message_at(m)) {
        if !drawn_elsewhere(m, item) {
            if out.is_empty() && !m.main().content.is_empty() {
                out.push(Line::default());
            }
            out.extend(card(m, i, item, state, cols));
        }
    }
    out
}

/// The answer's annotations as numbered references, each source once.
#[must_use]
pub fn references(m: &Message, theme: &Theme, cols: usize) -> Vec<Line<'static>> {
    let mut seen: Vec<String> = Vec::new();
    let mut rows: Vec<(String, String)> = Vec::new();
    for a in &m.main().annotations {
        let (key, label, target) = match s(a, "type") {
            "url_citation" => {
                let url = s(a, "url");
                let title = if s(a, "title").is_empty() { url } else { s(a, "title") };
                (url.to_owned(), title.to_owned(), url.to_owned())
            }
            "file_citation" | "file_path" => {
                let name = if s(a, "filename").is_empty() { s(a, "file_id") } else { s(a, "filename") };
                (s(a, "file_id").to_owned(), name.to_owned(), format!("file {}", s(a, "file_id")))
            }
            "container_file_citation" => {
                let name = if s(a, "filename").is_empty() { s(a, "file_id") } else { s(a, "filename") };
                (s(a, "file_id").to_owned(), name.to_owned(), format!("container file {}", s(a, "file_id")))
            }
            other => (a.to_string(), other.to_owned(), compact(a, 200)),
        };
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        rows.push((label, target));
    }
    if rows.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        Line::default(),
        Line::from(Span::styled("References", theme.style(R::Heading).add_modifier(Modifier::BOLD))),
    ];
    for (n, (label, target)) in rows.iter().enumerate() {
        let prefix = format!("[{}] ", n + 1);
        let pw = wrap::width(&prefix);
        let text = format!("{} — {}", sanitize(label), sanitize(target));
        for (i, mut l) in
            wrap::plain(&text, cols.saturating_sub(pw).max(1), theme.style(R::Link)).into_iter().enumerate()
        {
            let lead = if i == 0 { prefix.clone() } else { " ".repeat(pw) };
            l.spans.insert(0, Span::styled(lead, theme.style(R::Accent)));
            out.push(l);
        }
    }
    out
}

/// Compact JSON of `v`, cut to `n` characters.
fn compact(v: &Value, n: usize) -> String {
    crate::tools::clip(&v.to_string(), n)
}

/// A human name for an item type.
fn label(kind: &str) -> String {
    match kind {
        "web_search_call" => "web search".into(),
        "file_search_call" => "file search".into(),
        "code_interpreter_call" => "code interpreter".into(),
        "image_generation_call" => "image generation".into(),
        "mcp_list_tools" => "MCP tools".into(),
        "mcp_call" => "MCP call".into(),
        "computer_call" => "computer action (shown, not executed)".into(),
        "compaction" => "compaction".into(),
        "" => "item".into(),
        other => sanitize(other).into_owned(),
    }
}

fn card(m: &Message, index: usize, item: &Value, state: &State, cols: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let open = state.tools.open.contains(&m.id);
    let kind = s(item, "type");
    let status = s(item, "status");
    let status_role = match status {
        "completed" => R::Success,
        "failed" | "incomplete" => R::Error,
        "" => R::Dim,
        _ => R::StatusStreaming,
    };
    let mut head = vec![Span::styled(format!("◆ {}", label(kind)), theme.style(R::Tool).add_modifier(Modifier::BOLD))];
    if !status.is_empty() {
        head.push(Span::styled(" · ", theme.style(R::Dim)));
        head.push(Span::styled(sanitize(status).into_owned(), theme.style(status_role)));
    }
    let mut out = wrap::spans(head, cols);
    let inner = cols.saturating_sub(2).max(1);
    let body = match kind {
        "web_search_call" => web_search(item, state),
        "file_search_call" => file_search(item, state, inner),
        "code_interpreter_call" => code_interpreter(item, state, open),
        "image_generation_call" => image_generation(m, index, item, state),
        "mcp_list_tools" => mcp_list_tools(item, state),
        "mcp_call" => mcp_call(item, state, inner, open),
        "computer_call" => computer_call(item, state),
        "compaction" => {
            let n = s(item, "encrypted_content").len();
            vec![dim_line(state, &format!("context compacted · encrypted content kept for the next turn ({n} chars)"))]
        }
        _ => {
            let text = sanitize(&super::tool_card::spaced(item)).into_owned();
            wrap::plain(&text, inner, theme.style(R::Dim))
        }
    };
    let body = if kind == "code_interpreter_call" { body } else { fold(body, BODY_LINES, open, false, state) };
    let bar = Span::styled("│ ", theme.style(R::Border));
    for mut l in wrap::fit(body, inner) {
        l.spans.insert(0, bar.clone());
        out.push(l);
    }
    out
}

fn dim_line(state: &State, text: &str) -> Line<'static> {
    Line::from(Span::styled(sanitize(text).into_owned(), state.theme.style(R::Dim)))
}

fn kv(state: &State, key: &str, value: &str) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{key} "), state.theme.style(R::Dim)),
        Span::styled(sanitize(value).into_owned(), state.theme.style(R::Base)),
    ])
}

fn web_search(item: &Value, state: &State) -> Vec<Line<'static>> {
    let action = item.get("action").unwrap_or(&Value::Null);
    let mut out = Vec::new();
    match s(action, "type") {
        "search" | "" if !action.is_null() => {
            let query = s(action, "query");
            if !query.is_empty() {
                out.push(kv(state, "search", &format!("“{query}”")));
            }
            for q in action.get("queries").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                if q != query {
                    out.push(kv(state, "  also", &format!("“{q}”")));
                }
            }
            let sources: Vec<&Value> = action.get("sources").and_then(Value::as_array).into_iter().flatten().collect();
            if !sources.is_empty() {
                out.push(dim_line(state, &format!("{} sources", sources.len())));
                for src in sources {
                    let url = if s(src, "url").is_empty() { s(src, "name") } else { s(src, "url") };
                    out.push(Line::from(Span::styled(format!("  {}", sanitize(url)), state.theme.style(R::Link))));
                }
            }
        }
        "open_page" => out.push(kv(state, "open page", s(action, "url"))),
        "find" | "find_in_page" => {
            out.push(kv(state, "find", &format!("“{}” in {}", s(action, "pattern"), s(action, "url"))));
        }
        other if !other.is_empty() => out.push(kv(state, other, &compact(action, 200))),
        _ => out.push(dim_line(state, "searching…")),
    }
    out
}

fn file_search(item: &Value, state: &State, cols: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for q in item.get("queries").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        out.push(kv(state, "query", &format!("“{q}”")));
    }
    let results: Vec<&Value> = item.get("results").and_then(Value::as_array).into_iter().flatten().collect();
    if results.is_empty() && s(item, "status") == "completed" {
        out.push(dim_line(state, "no results sent (ask for them with include: file_search_call.results)"));
    }
    for r in results {
        let name = if s(r, "filename").is_empty() { s(r, "file_id") } else { s(r, "filename") };
        let score = r.get("score").and_then(Value::as_f64).map(|x| format!(" · score {x:.3}")).unwrap_or_default();
        out.push(Line::from(vec![
            Span::styled(sanitize(name).into_owned(), state.theme.style(R::Strong)),
            Span::styled(score, state.theme.style(R::Dim)),
        ]));
        let text = s(r, "text").replace('\n', " ");
        let lines = wrap::plain(&sanitize(&text), cols.saturating_sub(2).max(1), state.theme.style(R::Quote));
        for mut l in lines.into_iter().take(2) {
            l.spans.insert(0, Span::raw("  "));
            out.push(l);
        }
    }
    out
}

fn code_interpreter(item: &Value, state: &State, open: bool) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let code = sanitize(s(item, "code")).into_owned();
    let mut lines: Vec<Line<'static>> =
        if theme.no_color() { None } else { super::highlight::highlight(&code, "python", theme.syntax_theme()) }
            .map_or_else(
                || code.lines().map(|l| Line::from(Span::styled(l.to_owned(), theme.style(R::CodeBlock)))).collect(),
                |hl| {
                    hl.into_iter()
                        .map(|pieces| {
                            Line::from(pieces.into_iter().map(|(st, t)| Span::styled(t, st)).collect::<Vec<_>>())
                        })
                        .collect()
                },
            );
    let streaming = !matches!(s(item, "status"), "completed" | "failed" | "incomplete");
    lines = fold(lines, CODE_LINES, open, streaming, state);
    let mut logs = String::new();
    let mut images = 0;
    for o in item.get("outputs").and_then(Value::as_array).into_iter().flatten() {
        match s(o, "type") {
            "logs" => logs.push_str(s(o, "logs")),
            "image" => images += 1,
            _ => {}
        }
    }
    if !logs.trim().is_empty() {
        lines.push(dim_line(state, "logs"));
        let log_lines: Vec<Line<'static>> = logs
            .trim_end()
            .lines()
            .map(|l| Line::from(Span::styled(format!("  {}", sanitize(l)), theme.style(R::Base))))
            .collect();
        lines.extend(fold(log_lines, 3, open, false, state));
    }
    if images > 0 {
        lines.push(dim_line(state, &format!("{images} image output{}", if images == 1 { "" } else { "s" })));
    }
    if let Some(c) = item.get("container_id").and_then(Value::as_str) {
        lines.push(dim_line(state, &format!("container {c}")));
    }
    lines
}

fn image_generation(m: &Message, index: usize, item: &Value, state: &State) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let prompt = s(item, "revised_prompt");
    if !prompt.is_empty() {
        out.push(kv(state, "prompt", prompt));
    }
    let facts: Vec<String> = ["size", "quality", "output_format", "background"]
        .iter()
        .map(|k| s(item, k))
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect();
    if !facts.is_empty() {
        out.push(dim_line(state, &facts.join(" · ")));
    }
    let note = u32::try_from(index).ok().and_then(|i| m.item_notes.get(&i));
    if let Some(n) = note.and_then(|n| n.get("partial_images")).and_then(Value::as_u64) {
        out.push(dim_line(state, &format!("{n} partial image{} received", if n == 1 { "" } else { "s" })));
    }
    // Dropped at the reply's image limits: said where the image would have been.
    if let Some(why) = note.and_then(|n| n.get("dropped")).and_then(Value::as_str) {
        out.push(Line::from(Span::styled(sanitize(why).into_owned(), state.theme.style(R::Warning))));
    }
    match note.and_then(|n| n.get("saved_path")).and_then(Value::as_str) {
        Some(path) => out.push(Line::from(vec![
            Span::styled("saved to ", state.theme.style(R::Dim)),
            Span::styled(sanitize(path).into_owned(), state.theme.style(R::Link)),
        ])),
        None => {
            let n = s(item, "result").len();
            if n > 0 {
                out.push(dim_line(
                    state,
                    &format!("image received ({} of base64), saving…", super::tool_card::size(n)),
                ));
            }
        }
    }
    out
}

fn mcp_list_tools(item: &Value, state: &State) -> Vec<Line<'static>> {
    let mut out = vec![kv(state, "server", s(item, "server_label"))];
    let names: Vec<&str> =
        item.get("tools").and_then(Value::as_array).into_iter().flatten().map(|t| s(t, "name")).collect();
    if !names.is_empty() {
        out.push(kv(state, "tools", &names.join(", ")));
    }
    if let Some(e) = item.get("error").filter(|e| !e.is_null()) {
        out.push(Line::from(Span::styled(format!("error: {}", sanitize(&e.to_string())), state.theme.style(R::Error))));
    }
    out
}

fn mcp_call(item: &Value, state: &State, cols: usize, open: bool) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let mut out = vec![kv(state, "server", &format!("{} · tool {}", s(item, "server_label"), s(item, "name")))];
    let args = super::tool_card::spaced_json(s(item, "arguments")).unwrap_or_else(|| s(item, "arguments").to_owned());
    out.extend(wrap::plain(&sanitize(&args), cols, theme.style(R::Dim)));
    if let Some(e) = item.get("error").filter(|e| !e.is_null()) {
        let text = e.as_str().map_or_else(|| e.to_string(), str::to_owned);
        out.extend(wrap::plain(&format!("✗ {}", sanitize(&text)), cols, theme.style(R::Error)));
    }
    if let Some(o) = item.get("output").and_then(Value::as_str) {
        let lines = wrap::plain(&sanitize(o.trim_end()), cols.saturating_sub(2).max(1), theme.style(R::Base));
        for (i, mut l) in fold(lines, 3, open, false, state).into_iter().enumerate() {
            l.spans.insert(0, Span::styled(if i == 0 { "↳ " } else { "  " }, theme.style(R::Dim)));
            out.push(l);
        }
    }
    out
}

fn computer_call(item: &Value, state: &State) -> Vec<Line<'static>> {
    let action = item.get("action").unwrap_or(&Value::Null);
    let mut parts = vec![s(action, "type").to_owned()];
    if let Some(obj) = action.as_object() {
        for (k, v) in obj.iter().filter(|(k, _)| k.as_str() != "type") {
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            parts.push(format!("{k}={v}"));
        }
    }
    let mut out = vec![kv(state, "action", &parts.join(" "))];
    for c in item.get("pending_safety_checks").and_then(Value::as_array).into_iter().flatten() {
        out.push(Line::from(Span::styled(
            format!("⚠ safety check {}: {}", sanitize(s(c, "code")), sanitize(s(c, "message"))),
            state.theme.style(R::Warning),
        )));
    }
    out
}
