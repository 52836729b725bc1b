//! Cell files for CI (`--output`, by extension): JUnit XML (a testsuite per model, a testcase per
//! prompt, failures carrying the checks' reasons), CSV, JSON and JSON Lines. Written prompt by
//! prompt from the store, like the reports. With `--repeat`, the cell files hold a row per
//! sample and JUnit a test case per prompt per model, decided from its samples. Answers, errors and reasons are untrusted text:
//! terminal controls and characters XML 1.0 cannot hold are dropped, known secrets redacted.

use super::json::cell_line;
use crate::store::runs::{CellRow, PromptRow, RunStore, RunSummary};
use serde_json::Value;
use std::io::Write;

/// The cell formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellFormat {
    Junit,
    Csv,
    Json,
    Jsonl,
}

/// Writes `run`'s cells to `out` in `format`, one prompt's cells read at a time (a JUnit file
/// keeps its test cases, which hold no answers, until the suites' counts are known).
///
/// # Errors
/// The store cannot be read, or the file written.
pub fn write(out: &mut impl Write, format: CellFormat, store: &RunStore, run: &RunSummary) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    let mut suites: Vec<Suite> = run.models.iter().map(|_| Suite::default()).collect();
    match format {
        CellFormat::Csv => writeln!(out, "{CSV_HEAD}").map_err(io)?,
        CellFormat::Json => write!(out, "[").map_err(io)?,
        CellFormat::Junit | CellFormat::Jsonl => {}
    }
    let mut first = true;
    for p in &store.prompts(&run.id).map_err(|e| e.to_string())? {
        let cells = store.prompt_cells(&run.id, p.idx).map_err(|e| e.to_string())?;
        if format == CellFormat::Junit {
            for (m, suite) in suites.iter_mut().enumerate() {
                let samples: Vec<&CellRow> = cells.iter().filter(|c| c.model_idx as usize == m).collect();
                if !samples.is_empty() {
                    suite.add(p, &samples).map_err(io)?;
                }
            }
            continue;
        }
        for c in &cells {
            match format {
                CellFormat::Junit => {}
                CellFormat::Csv => csv_row(out, run, p, c).map_err(io)?,
                CellFormat::Jsonl => writeln!(out, "{}", line(run, p, c)).map_err(io)?,
                CellFormat::Json => write!(out, "{}{}", if first { "" } else { "," }, line(run, p, c)).map_err(io)?,
            }
            first = false;
        }
    }
    match format {
        CellFormat::Junit => junit(out, run, &suites).map_err(io),
        CellFormat::Json => writeln!(out, "]").map_err(io),
        CellFormat::Csv | CellFormat::Jsonl => Ok(()),
    }
}

/// A cell as `--json` gives it, its text stripped of terminal controls and known secrets.
fn line(run: &RunSummary, p: &PromptRow, c: &CellRow) -> Value {
    let text = cell_line(&run.id, p, c).to_string();
    serde_json::from_str(&crate::sys::secrets::redact(&text)).unwrap_or(Value::Null)
}

/// The message of a cell's error (the API's, or why it could not be sent).
fn error_message(c: &CellRow) -> Option<&str> {
    c.error.as_ref().and_then(|e| e.get("message")).and_then(Value::as_str)
}

/// Whether a cell passed its checks (`None`: it has none).
fn passed(c: &CellRow) -> Option<bool> {
    c.checks.as_ref().and_then(Value::as_array).map(|a| crate::engine::evals::expect::cell_passes(a))
}

/// Why a cell failed (its error, or its first failed check), `None` when it did not.
#[must_use]
pub fn why_failed(c: &CellRow) -> Option<String> {
    if !c.ok {
        return Some(error_message(c).unwrap_or("the cell failed").to_owned());
    }
    (passed(c) == Some(false)).then(|| failures(c).into_iter().next().unwrap_or_else(|| "a check failed".into()))
}

/// The failed checks of a cell, one a line: `kind: reason`.
fn failures(c: &CellRow) -> Vec<String> {
    let all = c.checks.as_ref().and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    all.iter()
        .filter(|r| r.get("pass").and_then(Value::as_bool) != Some(true))
        .map(|r| {
            let kind = r.get("kind").and_then(Value::as_str).unwrap_or("check");
            let weight = r.get("weight").and_then(Value::as_f64).filter(|w| *w == 0.0).map_or("", |_| " (weight 0)");
            match r.get("detail").and_then(Value::as_str) {
                Some(d) => format!("{kind}{weight}: {d}"),
                None => format!("{kind}{weight}"),
            }
        })
        .collect()
}

/// One model's test cases, written as they are read, and their counts.
#[derive(Default)]
struct Suite {
    cases: Vec<u8>,
    tests: usize,
    failures: usize,
    errors: usize,
    time_ms: u64,
}

impl Suite {
    /// A prompt's test case from its samples (one without `--repeat`).
    fn add(&mut self, p: &PromptRow, samples: &[&CellRow]) -> std::io::Result<()> {
        self.tests += 1;
        self.time_ms += samples.iter().map(|c| c.total_ms.unwrap_or(0)).sum::<u64>();
        let verdict = match samples {
            [c] if p.threshold.is_none() => Verdict::of(c),
            _ => Verdict::decided(p, samples),
        };
        self.failures += usize::from(matches!(verdict, Verdict::Failure(..)));
        self.errors += usize::from(matches!(verdict, Verdict::Error(_)));
        testcase(&mut self.cases, p, samples, &verdict)
    }
}

/// A test case's outcome.
enum Verdict {
    Pass,
    /// A request that failed: its message.
    Error(String),
    /// Checks that failed: the message, and the reasons one a line.
    Failure(String, String),
}

impl Verdict {
    fn of(c: &CellRow) -> Self {
        if !c.ok {
            return Self::Error(error_message(c).unwrap_or("the cell failed").to_owned());
        }
        if passed(c) != Some(false) {
            return Self::Pass;
        }
        let failed = failures(c);
        Self::Failure(failed.first().map_or("a check failed", String::as_str).to_owned(), failed.join("\n"))
    }

    /// Several samples (or a `threshold`): decided by `rates::decided`, the one rule; a sample
    /// whose request failed makes the case an error, as a cell's does.
    fn decided(p: &PromptRow, samples: &[&CellRow]) -> Self {
        let n = samples.len();
        if let Some(c) = samples.iter().find(|c| !c.ok) {
            let failed = samples.iter().filter(|c| !c.ok).count();
            let why = error_message(c).unwrap_or("the cell failed");
            return Self::Error(format!("{failed}/{n} samples failed: {why}"));
        }
        if samples.iter().all(|c| passed(c).is_none()) {
            return Self::Pass;
        }
        let passes: Vec<bool> = samples.iter().map(|c| passed(c) == Some(true)).collect();
        let threshold = p.threshold.unwrap_or(crate::engine::evals::rates::DEFAULT_THRESHOLD);
        if crate::engine::evals::rates::decided(&passes, threshold) {
            return Self::Pass;
        }
        let c = passes.iter().filter(|p| **p).count();
        let message = format!("{c}/{n} passed (needs {:.0}%)", threshold * 100.0);
        let reasons: Vec<String> = samples
            .iter()
            .filter(|c| passed(c) == Some(false))
            .map(|c| format!("sample {}: {}", c.sample, failures(c).join("; ")))
            .collect();
        Self::Failure(message, reasons.join("\n"))
    }
}

fn junit(out: &mut impl Write, run: &RunSummary, suites: &[Suite]) -> std::io::Result<()> {
    let total = |f: fn(&Suite) -> usize| suites.iter().map(f).sum::<usize>();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="palaver {}" tests="{}" failures="{}" errors="{}">"#,
        xml(&run.id),
        total(|s| s.tests),
        total(|s| s.failures),
        total(|s| s.errors)
    )?;
    for (m, suite) in run.models.iter().zip(suites) {
        #[allow(clippy::cast_precision_loss)]
        let time = suite.time_ms as f64 / 1000.0;
        writeln!(
            out,
            r#"  <testsuite name="{}" tests="{}" failures="{}" errors="{}" time="{time:.3}">"#,
            xml(&format!("{}/{}", m.provider, m.model)),
            suite.tests,
            suite.failures,
            suite.errors
        )?;
        out.write_all(&suite.cases)?;
        writeln!(out, "  </testsuite>")?;
    }
    writeln!(out, "</testsuites>")
}

fn testcase(out: &mut impl Write, p: &PromptRow, samples: &[&CellRow], verdict: &Verdict) -> std::io::Result<()> {
    #[allow(clippy::cast_precision_loss)]
    let time = samples.iter().map(|c| c.total_ms.unwrap_or(0)).sum::<u64>() as f64 / 1000.0;
    let name = if p.id.is_empty() { format!("prompt {}", p.idx + 1) } else { p.id.clone() };
    let model = samples.first().map_or("", |c| c.model.as_str());
    write!(out, r#"    <testcase name="{}" classname="{}" time="{time:.3}""#, xml(&name), xml(model))?;
    let cached = !samples.is_empty() && samples.iter().all(|c| c.cached);
    if matches!(verdict, Verdict::Pass) && !cached {
        return writeln!(out, "/>");
    }
    writeln!(out, ">")?;
    match verdict {
        Verdict::Pass => {}
        Verdict::Error(message) => writeln!(out, r#"      <error message="{}"/>"#, xml(message))?,
        Verdict::Failure(message, reasons) => {
            writeln!(out, r#"      <failure message="{}" type="expect">{}</failure>"#, xml(message), xml(reasons))?;
        }
    }
    if cached {
        writeln!(out, "      <system-out>answered from the response cache</system-out>")?;
    }
    writeln!(out, "    </testcase>")
}

/// Text as XML 1.0 holds it: terminal controls and characters it cannot hold dropped, known
/// secrets redacted, markup escaped.
fn xml(text: &str) -> String {
    let clean = crate::text::sanitize::sanitize(text);
    let text = crate::sys::secrets::redact(&clean);
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push('\t'),
            c if c < ' ' || matches!(c, '\u{fffe}' | '\u{ffff}') => {}
            c => out.push(c),
        }
    }
    out
}

const CSV_HEAD: &str = "run,prompt_index,prompt_id,sample,model,provider,ok,passed,failed_checks,finish_reason,prompt_tokens,completion_tokens,cost,ttft_ms,total_ms,tokens_per_s,error,answer,cached";

fn csv_row(out: &mut impl Write, run: &RunSummary, p: &PromptRow, c: &CellRow) -> std::io::Result<()> {
    let num = |v: Option<String>| v.unwrap_or_default();
    let error = error_message(c).unwrap_or("");
    let fields = [
        text_field(&run.id),
        c.prompt_idx.to_string(),
        text_field(&p.id),
        c.sample.to_string(),
        text_field(&c.model),
        text_field(&c.provider),
        c.ok.to_string(),
        passed(c).map(|p| p.to_string()).unwrap_or_default(),
        text_field(&failures(c).join("; ")),
        text_field(c.finish_reason.as_deref().unwrap_or("")),
        num(c.prompt_tokens.map(|v| v.to_string())),
        num(c.completion_tokens.map(|v| v.to_string())),
        num(c.cost.map(|v| v.to_string())),
        num(c.ttft_ms.map(|v| v.to_string())),
        num(c.total_ms.map(|v| v.to_string())),
        num(c.tokens_per_s.map(|v| format!("{v:.2}"))),
        text_field(error),
        text_field(&c.text),
        c.cached.to_string(),
    ];
    writeln!(out, "{}", fields.join(","))
}

/// A text field of the CSV (RFC 4180): terminal controls and known secrets dropped, quoted, and
/// a leading `=`, `+`, `-` or `@` kept as text, so a spreadsheet opening the file never runs an
/// answer as a formula.
fn text_field(text: &str) -> String {
    let clean = crate::text::sanitize::sanitize_keep_tabs(text);
    let text = crate::sys::secrets::redact(&clean);
    let guard = if text.starts_with(['=', '+', '-', '@']) { "'" } else { "" };
    format!("\"{guard}{}\"", text.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_and_csv_text_is_escaped() {
        assert_eq!(xml("a<b & \"c\"\u{1b}[31m\u{7}\nd"), "a&lt;b &amp; &quot;c&quot;&#10;d");
        assert_eq!(text_field("say \"hi\", =1+1"), "\"say \"\"hi\"\", =1+1\"");
        assert_eq!(text_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
    }
}
