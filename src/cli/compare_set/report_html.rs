//! The HTML report: one self-contained page (inline CSS, nothing loaded from outside), the
//! summary table, then each prompt with the answers side by side in a grid, rendered from their
//! markdown (`store::export_html_md`: raw HTML stays text, links only to web addresses, images
//! never loaded, code highlighted with inline styles), and word diffs against the first model.
//! Everything that came from a prompt file or a model is escaped: model output is untrusted and
//! must never become markup.
//!
//! Filters (`report_filter.rs`): by model and by failing check with CSS alone (radio buttons
//! and `:checked` selectors), by text with one small inline script, the only script the page's
//! content security policy allows (by its SHA-256). Without JavaScript the text box stays
//! hidden and the browser's own find does that job.

use super::report::meta_line;
use super::report_filter::{self as filter, Filters};
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
.md { overflow-wrap: anywhere; } .md > :first-child { margin-top: .3rem; }
.md h3, .md h4, .md h5, .md h6 { font-size: 1rem; margin: .6rem 0 .2rem; }
.md table { border-collapse: collapse; margin: .3rem 0; } .md td { border: 1px solid var(--line); padding: .15rem .4rem; }
.md thead td { font-weight: 600; } .md pre.code { padding: .4rem .5rem; border-radius: 4px; overflow-x: auto; }
.md blockquote { margin: .3rem 0; padding-left: .6rem; border-left: 3px solid var(--line); color: var(--dim); }
.raw-html { font-family: ui-monospace, monospace; }
";

/// The page's start: title, run line, summary table, `section` (HTML already escaped: the
/// diff against a baseline), the prompt index.
///
/// # Errors
/// A write error.
pub fn head(
    out: &mut impl Write,
    run: &RunSummary,
    s: &Summary,
    failing: &[String],
    section: &[u8],
) -> std::io::Result<()> {
    let filters = Filters::new(run, failing);
    writeln!(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")?;
    writeln!(out, "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">", filter::csp())?;
    writeln!(out, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")?;
    writeln!(
        out,
        "<title>palaver compare {}</title><style>{STYLE}{}</style></head><body>",
        escape(&run.id),
        filters.css()
    )?;
    // The filters' inputs come first: the rules that act on them select what follows them.
    write!(out, "{}<main>", filters.inputs())?;
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
        write!(out, "<tr><td>{}</td>", escape(&label))?;
        for (i, v) in shown.iter().enumerate() {
            let class = if best.contains(&i) { " class=\"best\"" } else { "" };
            let star = if best.contains(&i) { " ★" } else { "" };
            write!(out, "<td{class}>{}{star}</td>", escape(v))?;
        }
        writeln!(out, "</tr>")?;
    }
    writeln!(out, "</tbody></table><p class=\"meta\">★ best of the row</p>")?;
    rates(out, s)?;
    out.write_all(section)?;
    writeln!(out, "<h2>Prompts</h2>")?;
    writeln!(out, "{}", filters.bar())
}

/// With `--repeat`: each prompt × model's pass rate, interval, pass@k and pass^k, and the
/// flaky prompts.
fn rates(out: &mut impl Write, s: &Summary) -> std::io::Result<()> {
    use super::rates::{HEAD, flaky_line, legend, rows};
    if s.repeat <= 1 {
        return Ok(());
    }
    writeln!(out, "<h2 id=\"rates\">Pass rates</h2>\n<table class=\"summary\"><thead><tr>")?;
    for h in HEAD {
        write!(out, "<th>{}</th>", escape(h))?;
    }
    writeln!(out, "</tr></thead><tbody>")?;
    for r in rows(s) {
        write!(out, "<tr>")?;
        for v in &r {
            write!(out, "<td>{}</td>", escape(v))?;
        }
        writeln!(out, "</tr>")?;
    }
    writeln!(out, "</tbody></table><p class=\"meta\">{}</p>", escape(&legend(s)))?;
    if let Some(f) = flaky_line(s) {
        writeln!(out, "<p><strong>{}</strong></p>", escape(&f))?;
    }
    Ok(())
}

/// One prompt: its text, then the answers side by side.
///
/// # Errors
/// A write error.
pub fn prompt(out: &mut impl Write, run: &RunSummary, p: &PromptRow, cells: &[CellRow]) -> std::io::Result<()> {
    let n = run.models.len().max(1);
    let failed = filter::failed_kinds(cells);
    writeln!(
        out,
        "<section class=\"prompt{}\" id=\"p-{}\" data-prompt=\"{}\" data-failed=\"{}\">",
        if failed.is_empty() { "" } else { " has-fail" },
        p.idx,
        escape(&p.id),
        escape(&failed.join(" "))
    )?;
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
                "<article class=\"answer missing m-{i}\" data-model=\"{}\"><h3>{}</h3><p class=\"meta\">not run yet</p></article>",
                escape(&m.model),
                escape(&m.model)
            )?;
            continue;
        };
        let class = if c.ok { "answer" } else { "answer failed" };
        // Each answer has an anchor of its own: `#c-PROMPT-MODEL` links straight to it.
        writeln!(out, "<article class=\"{class} m-{i}\" id=\"c-{}-{i}\" data-model=\"{}\">", p.idx, escape(&m.model))?;
        let note = super::report::samples_note(cells, i);
        writeln!(out, "<h3>{}</h3><p class=\"meta\">{}{}</p>", escape(&m.model), escape(&meta_line(c)), escape(&note))?;
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
        writeln!(
            out,
            "<div class=\"md\">{}</div>",
            crate::store::export_html_md::render_with(&c.text, crate::store::export_html_md::Links::Web)
        )?;
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
    writeln!(out, "<p class=\"meta\">Written by palaver.</p></main><script>{}</script></body></html>", filter::SCRIPT)
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
        let run = run_of(&["a<b", "c"]);
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

    fn two_model_run() -> RunSummary {
        run_of(&["alpha", "beta"])
    }

    /// A finished one-prompt run of `models`.
    fn run_of(models: &[&str]) -> RunSummary {
        RunSummary {
            id: "run-1".into(),
            created_at: 0,
            updated_at: 0,
            models: models
                .iter()
                .map(|m| RunModel { spec: (*m).into(), model: (*m).into(), provider: "p".into() })
                .collect(),
            settings: serde_json::Value::Null,
            source: "x".into(),
            prompts: 1,
            status: "finished".into(),
            cells_ok: 2,
            cells_failed: 0,
        }
    }

    /// A whole page: head, one prompt with hostile and markdown answers, foot.
    fn page() -> String {
        let run = two_model_run();
        let hostile = "# Title\n\n<script>alert(1)</script> <img src=x onerror=alert(2)>\n\n\
            [click](javascript:alert(3)) [web](https://example.com/a) ![pic](https://evil.example/p.png)\n\n\
            red \u{1b}[31mANSI\u{1b}[0m\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nfn main() {}\n```\n";
        let checks = serde_json::json!([{"kind": "contains", "pass": false, "detail": "missing `x`"}]);
        let cells = [
            CellRow { model_idx: 0, ok: true, text: hostile.into(), ..CellRow::default() },
            CellRow {
                model_idx: 1,
                ok: true,
                text: "- one\n- **two**".into(),
                checks: Some(checks),
                ..CellRow::default()
            },
        ];
        let p = PromptRow { idx: 0, id: "p1".into(), prompt: "hi".into(), ..PromptRow::default() };
        let mut out = Vec::new();
        head(&mut out, &run, &super::super::summary::tests::sample(), &filter::failed_kinds(&cells), &[]).unwrap();
        prompt(&mut out, &run, &p, &cells).unwrap();
        foot(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn answers_are_rendered_markdown_with_nothing_active_in_them() {
        let html = page();
        assert!(html.contains("<h3>Title</h3>") || html.contains("<h3>Title</h3>\n"), "a heading: {html}");
        assert!(html.contains("<table><thead><tr><td>a</td>"), "a table: {html}");
        assert!(html.contains("<pre class=\"code\" style="), "highlighted code: {html}");
        assert!(html.contains("<li><strong>two</strong></li>"), "a list: {html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)") && html.contains("&lt;img src=x onerror=alert(2)&gt;"),
            "{html}"
        );
        assert!(html.contains("<a href=\"https://example.com/a\" rel=\"noopener noreferrer\">web</a>"), "{html}");
        assert!(!html.contains("href=\"javascript:"), "no javascript: link: {html}");
        assert!(html.contains("<a>click</a>"), "the link is text without a target: {html}");
        assert!(!html.contains('\u{1b}'), "no terminal escape: {html}");
        assert_eq!(html.matches("<script").count(), 1, "one script, ours: {html}");
        assert!(!html.contains("<img"), "no image is loaded: {html}");
        // Nothing from outside: the only URLs are the links a model wrote, as links.
        for attr in ["src=\"http", "href=\"//", "url(", "@import", "<link", "<iframe", "<object"] {
            assert!(!html.contains(attr), "{attr} in {html}");
        }
        assert!(html.contains("id=\"c-0-1\""), "each answer has an anchor");
        assert!(html.contains("class=\"prompt has-fail\"") && html.contains("data-failed=\"contains\""), "{html}");
    }

    #[test]
    fn the_content_security_policy_allows_exactly_the_page_s_script() {
        use base64::Engine as _;
        use sha2::Digest as _;
        let html = page();
        let start = html.find("<script>").unwrap() + "<script>".len();
        let body = &html[start..start + html[start..].find("</script>").unwrap()];
        let digest = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(body.as_bytes()));
        let meta = format!(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; \
             style-src 'unsafe-inline'; script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'\">"
        );
        assert!(html.contains(&meta), "the policy names the hash of the script as written: {meta}\n{html}");
        // The filters without script: radio buttons before <main>, rules that act on them.
        let main = html.find("<main>").unwrap();
        for id in ["fm-all", "fm-0", "fm-1", "fc-all", "fc-any", "fc-contains"] {
            let at = html.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("{id}"));
            assert!(at < main, "{id} comes before <main>");
            assert!(html.contains(&format!("label for=\"{id}\"")), "{id} has a label");
        }
        assert!(html.contains("#fm-1:checked ~ main article.answer:not(.m-1) { display: none; }"), "{html}");
        assert!(html.contains("#fc-contains:checked ~ main section.prompt:not([data-failed~=\"contains\"])"), "{html}");
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
        head(&mut out, &run, &s, &[], &[]).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert!(html.contains("<tr><td>schema valid</td><td class=\"best\">3/3 ★</td><td>0/3</td></tr>"), "{html}");
    }
}
