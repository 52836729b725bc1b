//! A conversation as one self-contained HTML page (`history export --format html`, `/export
//! html`): it reads like the chat screen — markdown rendered, code highlighted, reasoning and
//! tool calls folded with `<details>`, usage and safety per message, images inline as data
//! URIs, branches listed. No script, a content security policy that loads nothing, and every
//! text from a model, a tool or the user escaped (`export_html_md.rs` renders the markdown).

use super::export::{Export, ExportBranch, usage_line};
use super::export_html_md::{escape, render};
use crate::engine::attachment::{Attachment, IMAGE_TYPES};
use crate::engine::message::{Message, MessageStatus, Role, ToolCall};
use base64::Engine as _;
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Forbids every load but inline images and styles: the page runs nothing and fetches nothing.
pub const CSP: &str = "default-src 'none'; img-src data:; style-src 'unsafe-inline'";

const STYLE: &str = "
:root { color-scheme: light dark; --line: #8884; --dim: #888; --user: #3a7bd5; --tool: #b8860b; --bad: #d33; }
body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; padding: 1.5rem; max-width: 60rem; }
h1 { font-size: 1.4rem; margin-bottom: .2rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
.meta { color: var(--dim); font-size: 12.5px; margin: .2rem 0; }
article.msg { border-top: 1px solid var(--line); padding: .6rem 0; }
article.msg > header { font-weight: 600; }
article.user > header { color: var(--user); } article.tool > header, details.tool > summary { color: var(--tool); }
.plain { white-space: pre-wrap; overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.4 ui-monospace, monospace; padding: .5rem; border-radius: 4px; }
pre.code:not([style]), pre.out { background: #8882; }
code { font: 13px ui-monospace, monospace; background: #8882; padding: 0 .2rem; border-radius: 3px; }
pre code { background: none; padding: 0; }
details { margin: .4rem 0; } summary { cursor: pointer; }
details.reasoning { color: var(--dim); font-style: italic; }
.refusal, .error { color: var(--bad); font-weight: 600; }
figure { margin: .4rem 0; } figure img { max-width: 100%; max-height: 30rem; border: 1px solid var(--line); }
.chip { display: inline-block; border: 1px solid var(--line); border-radius: 4px; padding: 0 .4rem; font-size: 13px; }
.safety .flagged { color: var(--bad); font-weight: 600; }
.raw-html { font-family: ui-monospace, monospace; }
table { border-collapse: collapse; } td { border: 1px solid var(--line); padding: .2rem .5rem; }
";

/// The page of one conversation export.
#[must_use]
pub fn to_html(e: &Export) -> String {
    let title = if e.title.is_empty() { "(untitled)" } else { &e.title };
    let mut out = head(title);
    conversation(&mut out, e, 1);
    out.push_str("<p class=\"meta\">Written by palaver.</p>\n</body></html>\n");
    out
}

/// The page of a compare: its columns one after another, each under its model's name.
#[must_use]
pub fn compare_to_html(title: &str, columns: &[Export]) -> String {
    let mut out = head(if title.is_empty() { "(untitled)" } else { title });
    let _ = writeln!(out, "<h1>{}</h1>", escape(title));
    for (i, c) in columns.iter().enumerate() {
        let _ = writeln!(
            out,
            "<section class=\"column\"><h2>Column {} · {}</h2>",
            i + 1,
            escape(c.model.as_deref().unwrap_or("-"))
        );
        conversation(&mut out, c, 2);
        out.push_str("</section>\n");
    }
    out.push_str("<p class=\"meta\">Written by palaver.</p>\n</body></html>\n");
    out
}

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} · palaver</title><style>{STYLE}</style></head><body>\n",
        escape(title)
    )
}

/// One conversation: its title (at `level` 1) and facts, its messages, then its branches.
fn conversation(out: &mut String, e: &Export, level: u8) {
    if level == 1 {
        let title = if e.title.is_empty() { "(untitled)" } else { &e.title };
        let _ = writeln!(out, "<h1>{}</h1>", escape(title));
    }
    let facts: Vec<String> = [Some(e.id.clone()), e.model.clone(), e.provider.clone(), e.api.clone()]
        .into_iter()
        .flatten()
        .chain([format!("created {}", e.created_at), format!("updated {}", e.updated_at)])
        .collect();
    let _ = writeln!(out, "<p class=\"meta conversation\">{}</p>", escape(&facts.join(" · ")));
    out.push_str("<main class=\"transcript\">\n");
    for (i, m) in e.messages.iter().enumerate() {
        message(out, e, m, i);
    }
    out.push_str("</main>\n");
    branches(out, e, &e.branches);
}

fn branches(out: &mut String, e: &Export, list: &[ExportBranch]) {
    if list.is_empty() {
        return;
    }
    let _ = writeln!(out, "<section class=\"branches\"><h2>Branches ({})</h2><ul>", list.len());
    for b in list {
        let active = if b.branch == e.active_branch { " · shown above" } else { "" };
        let from = b.parent.map_or_else(
            || "the first branch".to_owned(),
            |p| format!("from branch {p} at message {}", b.fork_position + 1),
        );
        let n = b.messages.len();
        let _ = writeln!(
            out,
            "<li class=\"branch\" data-branch=\"{}\"><details><summary>Branch {} · {} · {n} message{} of its own · created {}{active}</summary>",
            b.branch,
            b.branch,
            escape(&from),
            if n == 1 { "" } else { "s" },
            escape(&b.created_at)
        );
        for r in &b.messages {
            message(out, e, &r.message, r.position);
        }
        out.push_str("</details></li>\n");
    }
    out.push_str("</ul></section>\n");
}

/// Who wrote a message, as a transcript names them: "you", "system", "tool result ID", or the
/// reply's model. One wording for the page and for `history show`.
#[must_use]
pub fn speaker(m: &Message) -> String {
    match m.role() {
        Role::User => "you".to_owned(),
        Role::System => "system".to_owned(),
        Role::Tool => format!("tool result {}", m.tool_call_id.as_deref().unwrap_or("?")),
        Role::Assistant => m.model.clone().unwrap_or_else(|| "assistant".into()),
    }
}

fn who(m: &Message) -> String {
    let base = speaker(m);
    let status = if m.status == MessageStatus::Complete {
        String::new()
    } else {
        format!(" ({})", super::ops::enum_str(&m.status))
    };
    let compacted = m.compaction.as_ref().map(|c| format!(" · summary of the {} turns above", c.turns));
    format!("{base}{}{status}", compacted.unwrap_or_default())
}

fn message(out: &mut String, e: &Export, m: &Message, position: usize) {
    let role = super::ops::enum_str(&m.role());
    let _ = writeln!(out, "<article class=\"msg {role}\" id=\"m-{position}\"><header>{}</header>", escape(&who(m)));
    let main = m.main();
    if !main.reasoning.is_empty() {
        let _ = writeln!(
            out,
            "<details class=\"reasoning\"><summary>reasoning</summary><div class=\"plain\">{}</div></details>",
            escape(main.reasoning.trim_end())
        );
    }
    match m.role() {
        Role::Tool => {
            let lines = main.content.lines().count();
            let _ = writeln!(
                out,
                "<details class=\"tool-result\"><summary>output · {lines} line{}</summary><pre class=\"out\">{}</pre></details>",
                if lines == 1 { "" } else { "s" },
                escape(&main.content)
            );
        }
        Role::Assistant => out.push_str(&render(&main.content)),
        Role::User | Role::System if !main.content.is_empty() => {
            let _ = writeln!(out, "<div class=\"plain\">{}</div>", escape(main.content.trim_end()));
        }
        Role::User | Role::System => {}
    }
    if !main.refusal.is_empty() {
        let _ = writeln!(out, "<p class=\"refusal\">refusal: {}</p>", escape(main.refusal.trim_end()));
    }
    for a in &m.attachments {
        attachment(out, e, a);
    }
    for t in &main.tool_calls {
        tool_call(out, e, t);
    }
    generated_images(out, m);
    if let Some(err) = &m.error {
        let code = err.status.map(|s| format!(" HTTP {s}")).unwrap_or_default();
        let _ = writeln!(out, "<p class=\"error\">error ({}{code}): {}</p>", escape(&err.kind), escape(&err.message));
    }
    if let Some(line) = usage_line(m) {
        let _ = writeln!(out, "<p class=\"meta usage\">{}</p>", escape(&line));
    }
    safety(out, m);
    out.push_str("</article>\n");
}

fn tool_call(out: &mut String, e: &Export, t: &ToolCall) {
    let ms = t.duration_ms.map(|d| format!(" · {d} ms")).unwrap_or_default();
    let status = super::ops::enum_str(&t.status);
    let _ = writeln!(out, "<details class=\"tool\"><summary>⚙ {} · {}{ms}</summary>", escape(&t.name), escape(&status));
    let args = serde_json::from_str::<Value>(&t.arguments)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| t.arguments.clone());
    let _ = writeln!(
        out,
        "<p class=\"meta\">arguments · {}</p><pre class=\"out args\">{}</pre>",
        escape(&t.id),
        escape(&args)
    );
    if let Some(o) = &t.output {
        let _ = writeln!(out, "<p class=\"meta\">output</p><pre class=\"out output\">{}</pre>", escape(o));
    }
    for a in &t.images {
        attachment(out, e, a);
    }
    out.push_str("</details>\n");
}

/// An attachment: an image inline (its bytes as a data URI), anything else as a chip.
fn attachment(out: &mut String, e: &Export, a: &Attachment) {
    let bytes = e.attachments.get(&a.sha256).filter(|b| IMAGE_TYPES.contains(&b.media_type.as_str()));
    match bytes {
        Some(b) if a.is_image() => {
            // The base64 was written by the export itself; escaping keeps it inert regardless.
            let _ = writeln!(
                out,
                "<figure class=\"attachment\"><img alt=\"{}\" src=\"data:{};base64,{}\"><figcaption class=\"meta\">{}</figcaption></figure>",
                escape(&a.name),
                b.media_type,
                escape(&b.data),
                escape(&a.describe())
            );
        }
        _ => {
            let _ = writeln!(out, "<p><span class=\"chip attachment\">▣ {}</span></p>", escape(&a.describe()));
        }
    }
}

/// Images the provider generated (`image_generation_call` items and the like), re-encoded so
/// only base64 reaches the attribute.
fn generated_images(out: &mut String, m: &Message) {
    for item in &m.items {
        let Some(b64) = crate::engine::images::payload(item) else { continue };
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(b64.trim()) else { continue };
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let _ = writeln!(
            out,
            "<figure class=\"generated\"><img alt=\"generated image\" src=\"data:image/png;base64,{data}\"><figcaption class=\"meta\">generated image</figcaption></figure>"
        );
    }
}

/// The provider's safety results for this message: prompt filters, then the reply's filter.
fn safety(out: &mut String, m: &Message) {
    let mut parts = Vec::new();
    if let Some(pf) = m.prompt_filter.as_ref().and_then(Value::as_array) {
        for p in pf {
            let idx = p.get("prompt_index").and_then(Value::as_u64).unwrap_or(0);
            if let Some(r) = p.get("content_filter_results").and_then(Value::as_object) {
                parts.push(format!("prompt {idx}: {}", categories(r)));
            }
        }
    }
    if let Some(r) = &m.main().content_filter {
        parts.push(format!("reply: {}", categories(r)));
    }
    if !parts.is_empty() {
        let _ = writeln!(out, "<p class=\"meta safety\">safety · {}</p>", parts.join(" · "));
    }
}

/// `hate safe, jailbreak <b>detected</b>…`: each category escaped, flagged ones marked.
fn categories(r: &Map<String, Value>) -> String {
    let mut shown = Vec::new();
    for (cat, v) in r {
        let flag = |k: &str| v.get(k).and_then(Value::as_bool) == Some(true);
        let sev = v.get("severity").and_then(Value::as_str);
        let word = match (flag("filtered"), flag("detected"), sev) {
            (true, _, s) => format!("filtered{}", s.map(|s| format!(" ({s})")).unwrap_or_default()),
            (false, true, _) => "detected".into(),
            (false, false, Some(s)) => s.to_owned(),
            (false, false, None) => "no".into(),
        };
        let bad = flag("filtered") || flag("detected") || sev.is_some_and(|s| s != "safe");
        let class = if bad { " class=\"flagged\"" } else { "" };
        shown.push(format!("{} <span{class}>{}</span>", escape(cat), escape(&word)));
    }
    shown.join(", ")
}

#[cfg(test)]
#[path = "export_html_tests.rs"]
mod tests;
