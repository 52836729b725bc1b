//! The faces of a run-against-run diff (`diff.rs`): the terminal table (new failures first),
//! a plain sentence per model, `--json` lines, and the Markdown and HTML sections the reports
//! put after their summary.

use super::diff::{Change, Diff, ModelDiff, delta};
use crate::engine::evals::paired::ALPHA;
use crate::text::fmt::money;
use crate::text::sanitize::sanitize;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::Write;

/// Cells whose score alone changed that the terminal lists before "and N more".
const SCORE_ROWS: usize = 20;

/// A p-value as people read them: three decimals near the threshold, never "0".
#[must_use]
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".to_owned()
    } else if p < 0.1 {
        format!("p = {p:.3}")
    } else if p > 0.995 {
        "p = 1".to_owned()
    } else {
        format!("p = {p:.2}")
    }
}

fn prompts(n: u64) -> String {
    if n == 1 { "1 prompt".to_owned() } else { format!("{n} prompts") }
}

/// The sentence saying what changed for a model.
#[must_use]
pub fn sentence(m: &ModelDiff) -> String {
    let t = &m.test;
    let flips = match (t.newly_fail, t.newly_pass) {
        (1, c) => format!("1 prompt newly fails, {c} newly pass"),
        (b, c) => format!("{} newly fail, {c} newly pass", prompts(b)),
    };
    let mcnemar_says = t.mcnemar_p.filter(|p| *p < ALPHA && t.newly_fail != t.newly_pass);
    let why = match (mcnemar_says, t.score) {
        (Some(p), _) => format!("{} (McNemar)", p_value(p)),
        (None, Some(s)) => format!(
            "score {:+.2} (95% interval {:+.2} to {:+.2}), {} (paired bootstrap)",
            s.mean,
            s.low,
            s.high,
            p_value(s.p)
        ),
        (None, None) => String::new(),
    };
    let verdict = if t.worse() {
        format!("worse, {why}")
    } else if t.better() {
        format!("better, {why}")
    } else {
        match (t.mcnemar_p, t.score) {
            (Some(p), _) => format!("no significant change ({})", p_value(p)),
            (None, Some(s)) => format!("no significant change ({}, paired bootstrap)", p_value(s.p)),
            (None, None) => "no checks to compare".to_owned(),
        }
    };
    format!("{}: {flips}; {verdict}", sanitize(&m.model))
}

/// A judge's pairwise verdicts on a model, in one line.
#[must_use]
pub fn judged_line(j: &super::diff::Judged) -> String {
    let mut s = format!(
        "judge {}: B better {}, A better {}, {} tie{} (the pick flipped with the order)",
        sanitize(&j.judge),
        j.b_better,
        j.a_better,
        j.ties,
        if j.ties == 1 { "" } else { "s" }
    );
    if j.unjudged > 0 {
        let _ = write!(s, ", {} not judged", j.unjudged);
    }
    if j.both_orders > 0 {
        let _ = write!(s, "; consistent in both orders {}/{}", j.consistent, j.both_orders);
    }
    if let Some(p) = j.p {
        let _ = write!(s, "; sign test {}", p_value(p));
    }
    s
}

fn judged_of<'a>(d: &'a Diff, m: &ModelDiff) -> Option<&'a super::diff::Judged> {
    d.judged.iter().find(|j| j.model == m.model && j.provider == m.provider)
}

fn signed_money(d: f64) -> String {
    if d < 0.0 { format!("-{}", money(-d)) } else { format!("+{}", money(d)) }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".to_owned(), f)
}

/// A model's figures on one line: score, cost and latency, A → B.
fn figures(m: &ModelDiff) -> String {
    let mut parts = Vec::new();
    if m.score_a.is_some() || m.score_b.is_some() {
        let interval = m.test.score.map_or_else(String::new, |s| {
            format!(" ({:+.2}, 95% interval {:+.2} to {:+.2}, bootstrap {})", s.mean, s.low, s.high, p_value(s.p))
        });
        parts.push(format!(
            "score {} → {}{interval}",
            opt(m.score_a, |v| format!("{v:.2}")),
            opt(m.score_b, |v| format!("{v:.2}"))
        ));
    }
    if m.cost_a.is_some() || m.cost_b.is_some() {
        parts.push(format!("cost {} → {}", opt(m.cost_a, money), opt(m.cost_b, money)));
    }
    if m.latency_a_ms.is_some() || m.latency_b_ms.is_some() {
        let d = delta(m.latency_a_ms, m.latency_b_ms).map_or_else(String::new, |d| format!(" ({d:+.0} ms)"));
        parts.push(format!(
            "latency {} → {} ms mean{d}",
            opt(m.latency_a_ms, |v| format!("{v:.0}")),
            opt(m.latency_b_ms, |v| format!("{v:.0}"))
        ));
    }
    format!("{} pairs · {}", m.pairs, parts.join(" · "))
}

fn change_label(c: Change) -> &'static str {
    match c {
        Change::NewlyFails => "newly fails",
        Change::NewlyPasses => "newly passes",
        Change::Score => "score",
        Change::Unchanged => "same",
    }
}

/// The changed cells, new failures first, then new passes, then score changes (largest drop
/// first).
fn changed(d: &Diff) -> Vec<&super::diff::CellDiff> {
    let mut v: Vec<_> = d.cells.iter().filter(|c| c.change() != Change::Unchanged).collect();
    v.sort_by(|x, y| {
        let dx = delta(x.a.score, x.b.score).unwrap_or(0.0);
        let dy = delta(y.a.score, y.b.score).unwrap_or(0.0);
        x.change().cmp(&y.change()).then(dx.total_cmp(&dy))
    });
    v
}

/// One changed cell's row: change, model, prompt, score A → B, Δ cost, Δ latency.
fn cell_row(c: &super::diff::CellDiff) -> [String; 6] {
    let critical = if c.critical { " (critical)" } else { "" };
    [
        format!("{}{critical}", change_label(c.change())),
        sanitize(&c.model).into_owned(),
        sanitize(&c.prompt).into_owned(),
        format!("{} → {}", opt(c.a.score, |v| format!("{v:.2}")), opt(c.b.score, |v| format!("{v:.2}"))),
        opt(delta(c.a.cost, c.b.cost), signed_money),
        opt(delta(c.a.latency_ms, c.b.latency_ms), |v| format!("{v:+.0} ms")),
    ]
}

fn only_lines(d: &Diff) -> Vec<String> {
    let mut out = Vec::new();
    for (run, only) in [(&d.run_a, &d.only_in_a), (&d.run_b, &d.only_in_b)] {
        let mut parts = Vec::new();
        if !only.prompts.is_empty() {
            parts.push(format!("prompts {}", sanitize(&only.prompts.join(", "))));
        }
        if !only.models.is_empty() {
            parts.push(format!("models {}", sanitize(&only.models.join(", "))));
        }
        if !parts.is_empty() {
            out.push(format!("only in {run}: {}", parts.join(" · ")));
        }
    }
    out
}

/// The terminal table and sentences.
#[must_use]
pub fn table(d: &Diff) -> String {
    let mut out = format!("{} against {} (baseline)\n", d.run_b, d.run_a);
    if d.cached != [0, 0] {
        // A cached answer is the earlier answer again: it cannot show the model changed.
        out.push_str(&format!(
            "note: {} of B's cells and {} of A's came from the response cache (an earlier answer \
             again); run with --no-cache to ask the models anew\n",
            d.cached[1], d.cached[0]
        ));
    }
    let rows = changed(d);
    let (flips, scores): (Vec<_>, Vec<_>) = rows.into_iter().partition(|c| c.change() != Change::Score);
    let shown: Vec<[String; 6]> = flips.iter().chain(scores.iter().take(SCORE_ROWS)).map(|c| cell_row(c)).collect();
    if shown.is_empty() {
        out.push_str("no cell changed pass/fail or score\n");
    } else {
        let head = ["change", "model", "prompt", "score", "Δ cost", "Δ latency"].map(str::to_owned);
        let mut widths = [0usize; 6];
        for r in std::iter::once(&head).chain(&shown) {
            for (w, v) in widths.iter_mut().zip(r) {
                *w = (*w).max(v.chars().count());
            }
        }
        for r in std::iter::once(&head).chain(&shown) {
            let line: Vec<String> = r.iter().zip(widths).map(|(v, w)| format!("{v:<w$}")).collect();
            let _ = writeln!(out, "  {}", line.join("  ").trim_end());
        }
        if scores.len() > SCORE_ROWS {
            let _ = writeln!(out, "  … and {} more score changes (--json lists every one)", scores.len() - SCORE_ROWS);
        }
    }
    for m in &d.models {
        let _ = writeln!(out, "{}", sentence(m));
        let _ = writeln!(out, "  {}", figures(m));
        if let Some(j) = judged_of(d, m) {
            let _ = writeln!(out, "  {}", judged_line(j));
        }
        if m.unpaired > 0 {
            let _ = writeln!(out, "  {} prompts have no cell in one of the runs", m.unpaired);
        }
        if !m.critical_broken.is_empty() {
            let _ = writeln!(out, "  critical prompt broke: {}", sanitize(&m.critical_broken.join(", ")));
        }
    }
    for l in only_lines(d) {
        let _ = writeln!(out, "{l}");
    }
    out
}

/// The `--json` lines: one per changed cell, one per model, and a closing `diff` line.
#[must_use]
pub fn json_lines(d: &Diff, regression: bool, status: u8) -> Vec<Value> {
    let mut out: Vec<Value> = changed(d)
        .into_iter()
        .map(|c| {
            json!({"type": "diff_cell", "run_a": d.run_a, "run_b": d.run_b, "prompt_id": c.prompt, "model": c.model,
                "provider": c.provider, "change": c.change(), "critical": c.critical, "a": c.a, "b": c.b,
                "delta": {"score": delta(c.a.score, c.b.score), "cost": delta(c.a.cost, c.b.cost),
                    "latency_ms": delta(c.a.latency_ms, c.b.latency_ms)}})
        })
        .collect();
    for m in &d.models {
        let mut line = json!({"type": "diff_model", "run_a": d.run_a, "run_b": d.run_b});
        if let (Some(obj), Ok(Value::Object(fields))) = (line.as_object_mut(), serde_json::to_value(m)) {
            obj.extend(fields);
            let verdict = if m.test.worse() {
                "worse"
            } else if m.test.better() {
                "better"
            } else {
                "same"
            };
            obj.insert("verdict".into(), verdict.into());
            obj.insert("sentence".into(), sentence(m).into());
        }
        out.push(line);
    }
    for j in &d.judged {
        let mut line = json!({"type": "diff_judge", "run_a": d.run_a, "run_b": d.run_b});
        if let (Some(obj), Ok(Value::Object(fields))) = (line.as_object_mut(), serde_json::to_value(j)) {
            obj.extend(fields);
        }
        out.push(line);
    }
    out.push(json!({"type": "diff", "run_a": d.run_a, "run_b": d.run_b, "only_in_a": d.only_in_a,
        "only_in_b": d.only_in_b, "regression": regression, "exit_status": status}));
    out
}

/// Prints the diff on stdout: the table, or with `json` its lines.
pub fn print(d: &Diff, json: bool, regression: bool, status: u8) {
    let mut out = std::io::stdout().lock();
    if json {
        for l in json_lines(d, regression, status) {
            let _ = writeln!(out, "{l}");
        }
    } else {
        let _ = write!(out, "{}", table(d));
        if regression {
            let _ = writeln!(
                out,
                "regression: a model got significantly worse, or a critical prompt broke (exit {status})"
            );
        }
    }
    let _ = out.flush();
}

fn md(s: &str) -> String {
    crate::text::markdown::escape(s, crate::text::markdown::Place::Line)
}

/// The Markdown section.
///
/// # Errors
/// A write error.
pub fn markdown(out: &mut impl Write, d: &Diff) -> std::io::Result<()> {
    writeln!(out, "## Against {} (baseline)\n", md(&d.run_a))?;
    for m in &d.models {
        writeln!(out, "- **{}**  \n  {}", md(&sentence(m)), md(&figures(m)))?;
        if let Some(j) = judged_of(d, m) {
            writeln!(out, "  \n  {}", md(&judged_line(j)))?;
        }
        if !m.critical_broken.is_empty() {
            writeln!(out, "  critical prompt broke: {}", md(&m.critical_broken.join(", ")))?;
        }
    }
    for l in only_lines(d) {
        writeln!(out, "- {}", md(&l))?;
    }
    let rows = changed(d);
    if rows.is_empty() {
        return writeln!(out, "\nNo cell changed pass/fail or score.\n");
    }
    writeln!(out, "\n| change | model | prompt | score | Δ cost | Δ latency |\n|---|---|---|---|---:|---:|")?;
    for c in rows {
        writeln!(out, "| {} |", cell_row(c).map(|v| md(&v)).join(" | "))?;
    }
    writeln!(out)
}

/// The HTML section.
///
/// # Errors
/// A write error.
pub fn html(out: &mut impl Write, d: &Diff) -> std::io::Result<()> {
    use super::report_html::escape;
    writeln!(out, "<h2 id=\"baseline\">Against <code>{}</code> (baseline)</h2><ul>", escape(&d.run_a))?;
    for m in &d.models {
        let class = if m.test.worse() { " class=\"error\"" } else { "" };
        writeln!(
            out,
            "<li{class}><strong>{}</strong><br><span class=\"meta\">{}</span>",
            escape(&sentence(m)),
            escape(&figures(m))
        )?;
        if let Some(j) = judged_of(d, m) {
            writeln!(out, "<br><span class=\"meta\">{}</span>", escape(&judged_line(j)))?;
        }
        if !m.critical_broken.is_empty() {
            writeln!(out, "<br>critical prompt broke: {}", escape(&m.critical_broken.join(", ")))?;
        }
        writeln!(out, "</li>")?;
    }
    for l in only_lines(d) {
        writeln!(out, "<li>{}</li>", escape(&l))?;
    }
    writeln!(out, "</ul>")?;
    let rows = changed(d);
    if rows.is_empty() {
        return writeln!(out, "<p class=\"meta\">No cell changed pass/fail or score.</p>");
    }
    writeln!(
        out,
        "<table class=\"summary\"><thead><tr><th>change</th><th>model</th><th>prompt</th><th>score</th><th>Δ cost</th><th>Δ latency</th></tr></thead><tbody>"
    )?;
    for c in rows {
        let cells: String = cell_row(c).iter().map(|v| format!("<td>{}</td>", escape(v))).collect();
        writeln!(out, "<tr>{cells}</tr>")?;
    }
    writeln!(out, "</tbody></table>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::compare_set::diff::{CellDiff, Only};
    use crate::engine::evals::outcome::Outcome;
    use crate::engine::evals::paired::Paired;

    fn model(b: u64, c: u64, pairs: u64) -> ModelDiff {
        let test = Paired::test(
            [(true, false)]
                .repeat(b as usize)
                .into_iter()
                .chain([(false, true)].repeat(c as usize))
                .chain([(true, true)].repeat((pairs - b - c) as usize)),
            &[],
        );
        ModelDiff {
            model: "gpt-x".into(),
            provider: "p".into(),
            pairs,
            unpaired: 0,
            test,
            score_a: Some(1.0),
            score_b: Some(0.5),
            cost_a: Some(0.002),
            cost_b: Some(0.001),
            latency_a_ms: Some(100.0),
            latency_b_ms: Some(130.0),
            critical_broken: Vec::new(),
        }
    }

    #[test]
    fn the_sentence_says_what_changed() {
        assert_eq!(sentence(&model(8, 0, 12)), "gpt-x: 8 prompts newly fail, 0 newly pass; worse, p = 0.008 (McNemar)");
        assert_eq!(
            sentence(&model(1, 0, 12)),
            "gpt-x: 1 prompt newly fails, 0 newly pass; no significant change (p = 1)"
        );
        assert_eq!(
            sentence(&model(0, 6, 12)),
            "gpt-x: 0 prompts newly fail, 6 newly pass; better, p = 0.031 (McNemar)"
        );
        assert_eq!(p_value(0.000_01), "p < 0.001");
        assert_eq!(p_value(0.62), "p = 0.62");
    }

    #[test]
    fn the_table_lists_new_failures_first_and_json_every_change() {
        let o = |pass: bool, score: f64| Outcome {
            pass: Some(pass),
            score: Some(score),
            cost: Some(0.001),
            latency_ms: Some(100.0),
        };
        let cell = |prompt: &str, a, b| CellDiff {
            prompt: prompt.into(),
            model: "gpt-x".into(),
            provider: "p".into(),
            critical: false,
            a,
            b,
            at: [(0, 0); 2],
        };
        let d = Diff {
            run_a: "run-a".into(),
            run_b: "run-b".into(),
            models: vec![model(1, 1, 3)],
            cells: vec![
                cell("fixed", o(false, 0.0), o(true, 1.0)),
                cell("same", o(true, 1.0), o(true, 1.0)),
                cell("broke", o(true, 1.0), o(false, 0.0)),
            ],
            only_in_a: Only { prompts: vec!["gone".into()], models: vec![] },
            only_in_b: Only::default(),
            judged: Vec::new(),
            cached: [0, 0],
        };
        let t = table(&d);
        let broke = t.find("newly fails").unwrap();
        assert!(broke < t.find("newly passes").unwrap() && !t.contains(" same "), "{t}");
        assert!(t.contains("only in run-a: prompts gone"), "{t}");
        assert!(!t.contains("response cache"), "{t}");
        let replayed = table(&Diff { cached: [0, 3], ..d.clone() });
        assert!(replayed.contains("3 of B's cells and 0 of A's came from the response cache"), "{replayed}");
        let lines = json_lines(&d, false, 0);
        assert_eq!(lines.iter().filter(|l| l["type"] == "diff_cell").count(), 2);
        assert_eq!(lines[0]["change"], "newly_fails");
        let m = lines.iter().find(|l| l["type"] == "diff_model").unwrap();
        assert_eq!((m["newly_fail"].as_u64(), m["verdict"].as_str()), (Some(1), Some("same")));
        let mut md = Vec::new();
        markdown(&mut md, &d).unwrap();
        let md = String::from_utf8(md).unwrap();
        assert!(md.contains("| newly fails | gpt-x | broke | 1.00 → 0.00 | +$0 | +0 ms |"), "{md}");
    }
}
