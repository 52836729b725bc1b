//! Report files: `--report out.md` (Markdown) or `--report out.html` (one self-contained page,
//! `report_html.rs`). Both hold the summary, then every prompt with each model's answer and a
//! word diff against the first model's. Written prompt by prompt from the store, so a report of
//! thousands of cells never holds more than one prompt's answers.

use super::output::CellFormat;
use super::summary::{Summary, report_rows};
use crate::engine::diff::{Change, words};
use crate::store::runs::{CellRow, PromptRow, RunStore, RunSummary};
use crate::text::code::fence;
use std::io::Write;
use std::path::Path;

/// The report formats, and the cell files for CI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Html,
    Cells(super::output::CellFormat),
}

/// The format a report path asks for by its extension.
///
/// # Errors
/// An extension that is neither Markdown nor HTML.
pub fn format_of(path: &Path) -> Result<Format, String> {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("md" | "markdown") => Ok(Format::Markdown),
        Some("html" | "htm") => Ok(Format::Html),
        Some("xml") => Ok(Format::Cells(CellFormat::Junit)),
        Some("csv") => Ok(Format::Cells(CellFormat::Csv)),
        Some("json") => Ok(Format::Cells(CellFormat::Json)),
        Some("jsonl" | "ndjson") => Ok(Format::Cells(CellFormat::Jsonl)),
        _ => Err(format!(
            "--output {}: name it .md (Markdown), .html (a web page), .xml (JUnit), .csv, .json or .jsonl (the cells)",
            crate::text::sanitize::sanitize(&path.display().to_string())
        )),
    }
}

/// Writes the report of `run` to `path`.
///
/// # Errors
/// The file cannot be written, or the store cannot be read.
pub fn write(path: &Path, store: &RunStore, run: &RunSummary, summary: &Summary) -> Result<(), String> {
    write_with(path, store, run, summary, None)
}

/// Writes the report of `run` to `path`, with its diff against a baseline after the summary
/// (Markdown and HTML; the cell files for CI hold cells only).
///
/// # Errors
/// The file cannot be written, or the store cannot be read.
pub fn write_with(
    path: &Path,
    store: &RunStore,
    run: &RunSummary,
    summary: &Summary,
    diff: Option<&super::diff::Diff>,
) -> Result<(), String> {
    let format = format_of(path)?;
    let file = std::fs::File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let prompts = store.prompts(&run.id).map_err(|e| e.to_string())?;
    let io = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    match format {
        Format::Markdown => {
            // Answers, prompts and errors are untrusted text: `cat report.md` must not run the
            // terminal controls in them, so each piece is stripped of them (tabs kept).
            let mut piece = Vec::new();
            markdown_summary(&mut piece, run, summary).map_err(io)?;
            if let Some(d) = diff {
                super::diff_show::markdown(&mut piece, d).map_err(io)?;
            }
            writeln!(piece, "## Prompts\n").map_err(io)?;
            write_clean(&mut out, &mut piece).map_err(io)?;
            for p in &prompts {
                let cells = store.prompt_cells(&run.id, p.idx).map_err(|e| e.to_string())?;
                markdown_prompt(&mut piece, run, p, &cells).map_err(io)?;
                write_clean(&mut out, &mut piece).map_err(io)?;
            }
        }
        Format::Html => {
            // The kinds of check that failed anywhere, for the filter bar at the top: one pass
            // over the cells before the page (still one prompt's cells at a time).
            let mut failing = Vec::new();
            for p in &prompts {
                let cells = store.prompt_cells(&run.id, p.idx).map_err(|e| e.to_string())?;
                failing.extend(super::report_filter::failed_kinds(&cells));
            }
            let mut section = Vec::new();
            if let Some(d) = diff {
                super::diff_show::html(&mut section, d).map_err(io)?;
            }
            super::report_html::head(&mut out, run, summary, &failing, &section).map_err(io)?;
            let mut piece = Vec::new();
            for p in &prompts {
                let cells = store.prompt_cells(&run.id, p.idx).map_err(|e| e.to_string())?;
                super::report_html::prompt(&mut piece, run, p, &cells).map_err(io)?;
                out.write_all(crate::sys::secrets::redact(&String::from_utf8_lossy(&piece)).as_bytes()).map_err(io)?;
                piece.clear();
            }
            super::report_html::foot(&mut out).map_err(io)?;
        }
        Format::Cells(cells) => super::output::write(&mut out, cells, store, run)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
    }
    out.flush().map_err(io)
}

/// Most failed cells a CI job's summary lists.
const STEP_FAILURES: usize = 50;

/// Appends the run's summary as Markdown to a CI job's page (`$GITHUB_STEP_SUMMARY`): the
/// summary table, then the cells that failed, each with its first failed check.
///
/// # Errors
/// The file cannot be written, or the store cannot be read.
pub fn append_step_summary(path: &Path, store: &RunStore, run: &RunSummary, summary: &Summary) -> Result<(), String> {
    let io = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut piece = Vec::new();
    markdown_head(&mut piece, run, summary).map_err(io)?;
    let mut listed = 0;
    for p in store.prompts(&run.id).map_err(|e| e.to_string())? {
        for c in store.prompt_cells(&run.id, p.idx).map_err(|e| e.to_string())? {
            let Some(why) = super::output::why_failed(&c) else { continue };
            if listed == 0 {
                writeln!(piece, "\n### Failed cells\n").map_err(io)?;
            }
            listed += 1;
            if listed <= STEP_FAILURES {
                let sample = if summary.repeat > 1 { format!(" · sample {}", c.sample) } else { String::new() };
                writeln!(piece, "- {} · {}{sample}: {}", md_cell(&c.model), md_cell(&p.id), md_cell(&why))
                    .map_err(io)?;
            }
        }
    }
    if listed > STEP_FAILURES {
        writeln!(piece, "- … and {} more", listed - STEP_FAILURES).map_err(io)?;
    }
    let file = std::fs::OpenOptions::new().append(true).create(true).open(path).map_err(io)?;
    write_clean(&mut std::io::BufWriter::new(file), &mut piece).map_err(io)
}

/// Writes `piece` without terminal controls or a secret palaver knows (a run stored before
/// it was known), and empties it.
fn write_clean(out: &mut impl Write, piece: &mut Vec<u8>) -> std::io::Result<()> {
    let text = String::from_utf8_lossy(piece);
    let text = crate::text::sanitize::sanitize_keep_tabs(&text);
    out.write_all(crate::sys::secrets::redact(&text).as_bytes())?;
    piece.clear();
    Ok(())
}

/// Untrusted text outside a code block (a prompt's id, a model name, an error, a judge's
/// reason): one line of text, whatever Markdown or HTML it holds, so a viewer rendering the
/// `.md` shows `<img onerror=…>` or a `javascript:` link as text and a table holds. (Prompts
/// and answers go in fences that outgrow their backticks, where HTML is text.)
fn md_cell(s: &str) -> String {
    crate::text::markdown::escape(s, crate::text::markdown::Place::Line)
}

/// The word diff of `new` against `old` in git's word-diff notation: `[-gone-]{+new+}`.
#[must_use]
pub fn word_diff_text(old: &str, new: &str) -> String {
    let mut s = String::new();
    for seg in words(old, new) {
        // The spacing before a changed run stays outside its markers, as git shows it.
        let (space, text) = seg.text.split_at(seg.text.len() - seg.text.trim_start().len());
        s.push_str(space);
        match seg.change {
            Change::Equal => s.push_str(text),
            Change::Removed => s.push_str(&format!("[-{text}-]")),
            Change::Added => s.push_str(&format!("{{+{text}+}}")),
        }
    }
    s
}

fn markdown_head(out: &mut impl Write, run: &RunSummary, s: &Summary) -> std::io::Result<()> {
    markdown_summary(out, run, s)?;
    writeln!(out, "## Prompts\n")
}

/// The title, the run's line and the summary table.
fn markdown_summary(out: &mut impl Write, run: &RunSummary, s: &Summary) -> std::io::Result<()> {
    writeln!(out, "# Compare run {}\n", run.id)?;
    writeln!(
        out,
        "{} prompts × {} models{} · {} · source {} · status {}\n",
        run.prompts,
        run.models.len(),
        if s.repeat > 1 { format!(" × {} samples", s.repeat) } else { String::new() },
        crate::store::ids::rfc3339(run.created_at),
        md_cell(&run.source),
        run.status
    )?;
    writeln!(out, "## Summary\n")?;
    write!(out, "| |")?;
    for m in &s.models {
        write!(out, " {} |", md_cell(&m.model))?;
    }
    writeln!(out)?;
    writeln!(out, "|---|{}", "---:|".repeat(s.models.len()))?;
    for (label, shown, best) in report_rows(s) {
        write!(out, "| {label} |")?;
        for (i, v) in shown.iter().enumerate() {
            if best.contains(&i) {
                write!(out, " **{}** ★ |", md_cell(v))?;
            } else {
                write!(out, " {} |", md_cell(v))?;
            }
        }
        writeln!(out)?;
    }
    writeln!(out, "\n★ best of the row. Diffs: `[-only in the first model-]{{+only in this one+}}`.\n")?;
    markdown_rates(out, s)
}

/// With `--repeat`: each prompt × model's pass rate, interval, pass@k and pass^k, and the
/// flaky prompts.
fn markdown_rates(out: &mut impl Write, s: &Summary) -> std::io::Result<()> {
    use super::rates;
    if s.repeat <= 1 {
        return Ok(());
    }
    writeln!(out, "## Pass rates\n")?;
    writeln!(out, "| {} |\n|{}", rates::HEAD.join(" | "), "---|".repeat(rates::HEAD.len()))?;
    for r in rates::rows(s) {
        let cells: Vec<String> = r.iter().map(|v| md_cell(v)).collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    writeln!(out, "\n{}\n", rates::legend(s))?;
    if let Some(f) = rates::flaky_line(s) {
        writeln!(out, "**{}**\n", md_cell(&f))?;
    }
    Ok(())
}

fn markdown_prompt(out: &mut impl Write, run: &RunSummary, p: &PromptRow, cells: &[CellRow]) -> std::io::Result<()> {
    writeln!(out, "### {}\n", md_cell(&p.id))?;
    let f = fence(&p.prompt);
    writeln!(out, "{f}text\n{}\n{f}\n", p.prompt)?;
    if let Some(vars) = crate::engine::evals::template::vars_line(p.vars.as_ref()) {
        writeln!(out, "vars: {}\n", md_cell(&vars))?;
    }
    let first = cells.iter().find(|c| c.model_idx == 0);
    // The prompt at a glance: one row a model, each linking to its full answer below.
    writeln!(out, "| model | result | answer |\n|---|---|---|")?;
    for (i, m) in run.models.iter().enumerate() {
        match cells.iter().find(|c| c.model_idx as usize == i) {
            Some(c) => writeln!(
                out,
                "| {} | {}{} | [full answer](#{}) |",
                md_cell(&m.model),
                md_cell(&meta_line(c)),
                samples_note(cells, i),
                cell_anchor(p.idx, i)
            )?,
            None => writeln!(out, "| {} | not run yet | |", md_cell(&m.model))?,
        }
    }
    writeln!(out)?;
    for (i, m) in run.models.iter().enumerate() {
        let Some(c) = cells.iter().find(|c| c.model_idx as usize == i) else {
            writeln!(out, "#### {}\n\n_not run yet_\n", md_cell(&m.model))?;
            continue;
        };
        writeln!(out, "<a id=\"{}\"></a>\n\n#### {}\n", cell_anchor(p.idx, i), md_cell(&m.model))?;
        writeln!(out, "{}\n", md_cell(&meta_line(c)))?;
        for (kind, detail) in super::judges::verdicts(c.checks.as_ref()) {
            writeln!(out, "> {kind}: {}\n", md_cell(&detail))?;
        }
        // A conversation's failed checks, each naming its turn (`turn 2: missing …`).
        for r in c.checks.as_ref().and_then(|v| v.as_array()).into_iter().flatten() {
            if r.get("turn").is_some() && r.get("pass") != Some(&serde_json::Value::Bool(true)) {
                let kind = r.get("kind").and_then(|v| v.as_str()).unwrap_or("check");
                let detail = r.get("detail").and_then(|v| v.as_str()).unwrap_or_default();
                writeln!(out, "> ✗ {kind}: {}\n", md_cell(detail))?;
            }
        }
        if let Some(e) = c.error.as_ref().and_then(|e| e.get("message")).and_then(|m| m.as_str()) {
            writeln!(out, "> error: {}\n", md_cell(e))?;
        }
        let f = fence(&c.text);
        writeln!(out, "{f}text\n{}\n{f}\n", c.text)?;
        if let (Some(first), true) = (first, i > 0) {
            let d = word_diff_text(&first.text, &c.text);
            let f = fence(&d);
            writeln!(
                out,
                "<details><summary>diff against {}</summary>\n\n{f}text\n{d}\n{f}\n\n</details>\n",
                md_cell(&run.models[0].model)
            )?;
        }
    }
    Ok(())
}

/// With `--repeat`, how many of a model's samples passed (its first sample's answer is the one
/// shown); nothing for a single sample.
pub(super) fn samples_note(cells: &[CellRow], model: usize) -> String {
    let mine: Vec<&CellRow> = cells.iter().filter(|c| c.model_idx as usize == model).collect();
    if mine.len() < 2 {
        return String::new();
    }
    let passed = mine.iter().filter(|c| super::output::why_failed(c).is_none()).count();
    format!(" · samples {passed}/{} passed (answer of sample {})", mine.len(), mine[0].sample)
}

/// The anchor of a cell's full answer in the Markdown report (ids are digits only).
#[must_use]
pub fn cell_anchor(prompt_idx: u32, model_idx: usize) -> String {
    format!("cell-{prompt_idx}-{model_idx}")
}

/// A cell's figures in one line: status, ttft, duration, tokens, finish, checks.
#[must_use]
pub fn meta_line(c: &CellRow) -> String {
    let mut parts = vec![if c.ok { "ok".to_owned() } else { "failed".to_owned() }];
    if c.cached {
        // Its durations are the replay's, not the model's.
        parts.push("cached".into());
    }
    if let Some(v) = c.ttft_ms {
        parts.push(format!("ttft {v} ms"));
    }
    if let Some(v) = c.total_ms {
        parts.push(format!("{v} ms"));
    }
    if let Some(v) = c.tokens_per_s {
        parts.push(format!("{v:.1} tok/s"));
    }
    if let Some(v) = c.completion_tokens {
        parts.push(format!("{v} tokens"));
    }
    if let Some(v) = &c.finish_reason {
        parts.push(format!("finish {v}"));
    }
    if c.safety_flag {
        parts.push("safety flag".into());
    }
    if let Some(checks) = c.checks.as_ref().and_then(|v| v.as_array()) {
        let passed = checks.iter().filter(|r| r.get("pass").and_then(serde_json::Value::as_bool) == Some(true)).count();
        parts.push(format!("checks {passed}/{}", checks.len()));
    }
    match super::summary::schema_verdict(c.checks.as_ref()) {
        Some(true) => parts.push("schema valid".into()),
        Some(false) => parts.push("schema invalid".into()),
        None => {}
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_the_text_and_diffs_use_word_diff_notation() {
        assert_eq!(fence("no ticks"), "```");
        assert_eq!(fence("a ```` b"), "`````");
        assert_eq!(word_diff_text("the cat sat", "the dog sat"), "the [-cat-] {+dog+} sat");
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
        assert_eq!(md_cell("<img src=x onerror=alert(1)>&amp;"), "&lt;img src=x onerror=alert(1)&gt;&amp;amp;");
        assert_eq!(md_cell("</td></tr>\r\n<script>"), "&lt;/td&gt;&lt;/tr&gt;  &lt;script&gt;");
        assert!(format_of(Path::new("r.HTML")).is_ok() && format_of(Path::new("r.txt")).is_err());
    }

    #[test]
    fn the_markdown_report_gives_schema_validity_a_row_and_a_mark() {
        let mut s = super::super::summary::tests::sample();
        (s.models[0].schema_checked, s.models[0].schema_valid) = (3, 3);
        (s.models[1].schema_checked, s.models[1].schema_valid) = (3, 2);
        let run = RunSummary { id: "run-1".into(), prompts: 3, status: "finished".into(), ..test_run() };
        let mut out = Vec::new();
        markdown_head(&mut out, &run, &s).unwrap();
        let md = String::from_utf8(out).unwrap();
        assert!(md.contains("| schema valid | **3/3** ★ | 2/3 |"), "{md}");
        let checks = serde_json::json!([{"kind": "contains", "pass": true}, {"kind": "schema", "pass": false}]);
        let cell = CellRow { ok: true, checks: Some(checks), ..CellRow::default() };
        assert_eq!(meta_line(&cell), "ok · checks 1/2 · schema invalid");
        insta::assert_snapshot!(md);
    }

    #[test]
    fn each_cell_links_its_full_answer() {
        let run = test_run();
        let p = PromptRow { idx: 3, id: "q<3>".into(), prompt: "hi".into(), ..PromptRow::default() };
        let cell = CellRow { model_idx: 1, ok: true, text: "<script>x</script> answer".into(), ..CellRow::default() };
        let mut out = Vec::new();
        markdown_prompt(&mut out, &run, &p, &[cell]).unwrap();
        let md = String::from_utf8(out).unwrap();
        assert!(md.contains("| demo-reasoning | ok | [full answer](#cell-3-1) |"), "{md}");
        assert!(md.contains("| demo | not run yet | |"), "{md}");
        assert!(md.contains("<a id=\"cell-3-1\"></a>\n\n#### demo-reasoning"), "{md}");
        assert!(md.contains("```text\n<script>x</script> answer\n```"), "the answer sits in a fence: {md}");
        assert_eq!(md.matches("](#cell-").count(), 1);
    }

    fn test_run() -> RunSummary {
        RunSummary {
            id: String::new(),
            created_at: 0,
            updated_at: 0,
            models: ["demo", "demo-reasoning"]
                .iter()
                .map(|m| crate::store::runs::RunModel {
                    spec: (*m).into(),
                    model: (*m).into(),
                    provider: "demo".into(),
                })
                .collect(),
            settings: serde_json::Value::Null,
            source: "set.jsonl".into(),
            prompts: 0,
            status: String::new(),
            cells_ok: 0,
            cells_failed: 0,
        }
    }
}
