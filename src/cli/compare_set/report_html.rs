//! The HTML report: one self-contained page (inline CSS, no script, no external resource), the
//! summary table, then each prompt with the answers side by side in a grid and word diffs
//! against the first model. Everything that came from a prompt file or a model is escaped:
//! model output is untrusted and must never become markup.

use super::report::meta_line;
use super::summary::{Summary, report_rows};
use crate::engine::diff::{Change, words};
use crate::store::runs::{CellRow, PromptRow, RunSummary};
use std::io::Write;

pub use crate::text::html::escape;

const STYLE: &str = "
:root { color-scheme: light dark; --line: #8884; --dim: #888; --ins: #2a63; --del: #d333; --best: #2a6; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; border-top: 1px solid var(--line); padding-top: 1rem; }
table.summary { border-collapse: collapse; } table.summary td, table.summary th { border: 1px solid var(--line); padding: .25rem .6rem; text-align: right; }
table.summary th:first-child, table.summary td:first-child { text-align: left; }
td.best { font-weight: 700; color: var(--best); }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .3rem 0; font: 12.5px/1.4 ui-monospace, monospace; }
.prompt-text { background: #8881; padding: .5rem; border-radius: 4px; }
.answers { display: grid; gap: .8rem; align-items: start; }
.answer { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .7rem; min-width: 0; }
.answer h3 { font-size: 1rem; margin: 0 0 .2rem; }
.meta { color: var(--dim); font-size: 12px; margin: 0; }
.failed { border-color: #d33; } .error { color: #d33; }
.check.pass { color: var(--best); } .check.fail { color: #d33; }
ins { background: var(--ins); text-decoration: none; } del { background: var(--del); }
nav a { margin-right: .5rem; }
";

/// The page's start: title, run line, summary table, the prompt index.
///
/// # Errors
/// A write error.
pub fn head(out: &mut impl Write, run: &RunSummary, s: &Summary) -> std::io::Result<()> {
    writeln!(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")?;
    writeln!(out, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")?;
    writeln!(out, "<title>palaver compare {}</title><style>{STYLE}</style></head><body>", escape(&run.id))?;
    writeln!(out, "<h1>Compare run <code>{}</code></h1>", escape(&run.id))?;
    writeln!(
        out,
        "<p class=\"meta\">{} prompts × {} models · {} · source <code>{}</code> · status {}</p>",
        run.prompts,
        run.models.len(),
        escape(&crate::store::ids::rfc3339(run.created_at)),
        escape(&run.source),
        escape(&run.status)
    )?;
    writeln!(out, "<h2 id=\"summary\">Summary</h2>\n<table class=\"summary\"><thead><tr><th></th>")?;
    for m in &s.models {
        writeln!(out, "<th>{}<br><span class=\"meta\">{}</span></th>", escape(&m.model), escape(&m.provider))?;
    }
    writeln!(out, "</tr></thead><tbody>")?;
    for (label, shown, best) in report_rows(s) {
        write!(out, "<tr><td>{}</td>", escape(label))?;
        for (i, v) in shown.iter().enumerate() {
            let class = if best.contains(&i) { " class=\"best\"" } else { "" };
            let star = if best.contains(&i) { " ★" } else { "" };
            write!(out, "<td{class}>{}{star}</td>", escape(v))?;
        }
        writeln!(out, "</tr>")?;
    }
    writeln!(out, "</tbody></table><p class=\"meta\">★ best of the row</p>")?;
    writeln!(out, "<h2>Prompts</h2>")
}

/// One prompt: its text, then the answers side by side.
///
/// # Errors
/// A write error.
pub fn prompt(out: &mut impl Write, run: &RunSummary, p: &PromptRow, cells: &[CellRow]) -> std::io::Result<()> {
    let n = run.models.len().max(1);
    writeln!(out, "<section class=\"prompt\" id=\"p-{}\" data-prompt=\"{}\">", p.idx, escape(&p.id))?;
    writeln!(out, "<h3>Prompt {}</h3>", escape(&p.id))?;
    if let Some(system) = &p.system {
        writeln!(out, "<p class=\"meta\">system: {}</p>", escape(system))?;
    }
    if let Some(vars) = crate::engine::evals::template::vars_line(p.vars.as_ref()) {
        writeln!(out, "<p class=\"meta\">vars: {}</p>", escape(&vars))?;
    }
    writeln!(out, "<pre class=\"prompt-text\">{}</pre>", escape(&p.prompt))?;
    writeln!(out, "<div class=\"answers\" style=\"grid-template-columns: repeat({n}, minmax(0, 1fr))\">")?;
    let first = cells.iter().find(|c| c.model_idx == 0);
    for (i, m) in run.models.iter().enumerate() {
        let Some(c) = cells.iter().find(|c| c.model_idx as usize == i) else {
            writeln!(
                out,
                "<article class=\"answer missing\" data-model=\"{}\"><h3>{}</h3><p class=\"meta\">not run yet</p></article>",
                escape(&m.model),
                escape(&m.model)
            )?;
            continue;
        };
        let class = if c.ok { "answer" } else { "answer failed" };
        writeln!(out, "<article class=\"{class}\" data-model=\"{}\">", escape(&m.model))?;
        writeln!(out, "<h3>{}</h3><p class=\"meta\">{}</p>", escape(&m.model), escape(&meta_line(c)))?;
        if let Some(e) = c.error.as_ref().and_then(|e| e.get("message")).and_then(|m| m.as_str()) {
            writeln!(out, "<p class=\"error\">error: {}</p>", escape(e))?;
        }
        if let Some(checks) = c.checks.as_ref().and_then(|v| v.as_array()) {
            for r in checks {
                let pass = r.get("pass").and_then(serde_json::Value::as_bool) == Some(true);
                let kind = r.get("kind").and_then(|v| v.as_str()).unwrap_or("check");
                let detail = r.get("detail").and_then(|v| v.as_str()).unwrap_or("");
                let (class, mark) = if pass { ("pass", "✓") } else { ("fail", "✗") };
                writeln!(out, "<span class=\"check {class}\">{mark} {} {}</span> ", escape(kind), escape(detail))?;
            }
        }
        if !c.reasoning.is_empty() {
            writeln!(
                out,
                "<details class=\"reasoning\"><summary>reasoning</summary><pre>{}</pre></details>",
                escape(&c.reasoning)
            )?;
        }
        writeln!(out, "<pre class=\"text\">{}</pre>", escape(&c.text))?;
        if let (Some(first), true) = (first, i > 0) {
            write!(
                out,
                "<details class=\"diff\"><summary>diff against {}</summary><pre>",
                escape(&run.models[0].model)
            )?;
            for seg in words(&first.text, &c.text) {
                match seg.change {
                    Change::Equal => write!(out, "{}", escape(&seg.text))?,
                    Change::Removed => write!(out, "<del>{}</del>", escape(&seg.text))?,
                    Change::Added => write!(out, "<ins>{}</ins>", escape(&seg.text))?,
                }
            }
            writeln!(out, "</pre></details>")?;
        }
        writeln!(out, "</article>")?;
    }
    writeln!(out, "</div></section>")
}

/// The page's end.
///
/// # Errors
/// A write error.
pub fn foot(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "<p class=\"meta\">Written by palaver.</p></body></html>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::runs::RunModel;

    #[test]
    fn model_output_never_becomes_markup() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(escape("a\u{1b}[31mb\n"), "a\u{FFFD}[31mb\n");
        let run = RunSummary {
            id: "run-1".into(),
            created_at: 0,
            updated_at: 0,
            models: ["a<b", "c"]
                .iter()
                .map(|m| RunModel { spec: (*m).into(), model: (*m).into(), provider: "p".into() })
                .collect(),
            settings: serde_json::Value::Null,
            source: "x".into(),
            prompts: 1,
            status: "finished".into(),
            cells_ok: 2,
            cells_failed: 0,
        };
        let p = PromptRow {
            idx: 0,
            id: "\"><img src=x onerror=alert(1)>".into(),
            prompt: "<b>hi</b>".into(),
            ..PromptRow::default()
        };
        let cell = |m: u32, text: &str| CellRow { model_idx: m, ok: true, text: text.into(), ..CellRow::default() };
        let mut out = Vec::new();
        prompt(&mut out, &run, &p, &[cell(0, "<iframe src=evil>"), cell(1, "</pre><script>x()</script>")]).unwrap();
        let html = String::from_utf8(out).unwrap();
        for bad in ["<script", "<iframe", "<img", "<b>"] {
            assert!(!html.contains(bad), "{bad} leaked: {html}");
        }
        assert_eq!(html.matches("<article").count(), 2);
        assert!(html.contains("&lt;/pre&gt;&lt;script&gt;"));
        insta::assert_snapshot!(html);
    }

    #[test]
    fn the_summary_table_has_a_schema_valid_row() {
        let mut s = super::super::summary::tests::sample();
        (s.models[0].schema_checked, s.models[0].schema_valid) = (3, 3);
        (s.models[1].schema_checked, s.models[1].schema_valid) = (3, 0);
        let run = RunSummary {
            id: "run-1".into(),
            created_at: 0,
            updated_at: 0,
            models: vec![],
            settings: serde_json::Value::Null,
            source: "x".into(),
            prompts: 3,
            status: "finished".into(),
            cells_ok: 6,
            cells_failed: 0,
        };
        let mut out = Vec::new();
        head(&mut out, &run, &s).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert!(html.contains("<tr><td>schema valid</td><td class=\"best\">3/3 ★</td><td>0/3</td></tr>"), "{html}");
    }
}
