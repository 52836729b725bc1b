//! The HTML report's filters. By model and by failing check they work without JavaScript:
//! hidden radio buttons sit before the page's `<main>`, the filter bar's labels check them, and
//! CSS rules like `#fm-1:checked ~ main article:not(.m-1) { display: none }` do the hiding. By
//! text it takes one small inline script, the only one the page's content security policy
//! allows (`script-src 'sha256-…'` of exactly that script); without JavaScript the text box
//! stays hidden and a note points to the browser's find.

use crate::store::runs::{CellRow, RunSummary};
use crate::text::html::escape;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// The text filter: shows the box, then hides the prompts whose text lacks what is typed.
pub const SCRIPT: &str = "(function(){var q=document.getElementById(\"q\");if(!q)return;q.hidden=false;\
var n=document.getElementById(\"q-note\");if(n)n.hidden=true;\
q.addEventListener(\"input\",function(){var t=q.value.toLowerCase();\
document.querySelectorAll(\"section.prompt\").forEach(function(s){\
s.classList.toggle(\"nomatch\",t!==\"\"&&s.textContent.toLowerCase().indexOf(t)<0);});});})();";

/// `sha256-…` of `SCRIPT`, as a content security policy names it.
#[must_use]
pub fn script_hash() -> String {
    format!("sha256-{}", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT.as_bytes())))
}

/// The page's content security policy: nothing from outside, inline styles (syntect's
/// highlighting is inline), images only from the page itself, and no script but ours.
#[must_use]
pub fn csp() -> String {
    format!(
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src '{}'; base-uri 'none'; form-action 'none'",
        script_hash()
    )
}

/// A check kind as a CSS token and id part: letters, digits, `_` and `-` only.
fn token(kind: &str) -> String {
    kind.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The kinds of check that failed in a prompt's cells (`error` for a cell that failed
/// outright), sorted, once each.
#[must_use]
pub fn failed_kinds(cells: &[CellRow]) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    for c in cells {
        if !c.ok {
            kinds.push("error".into());
        }
        for r in c.checks.as_ref().and_then(|v| v.as_array()).into_iter().flatten() {
            if r.get("pass").and_then(serde_json::Value::as_bool) != Some(true) {
                kinds.push(token(r.get("kind").and_then(|v| v.as_str()).unwrap_or("check")));
            }
        }
    }
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The filters of one report: its models and the kinds of check that failed somewhere.
pub struct Filters {
    models: Vec<String>,
    kinds: Vec<String>,
}

impl Filters {
    #[must_use]
    pub fn new(run: &RunSummary, failing: &[String]) -> Self {
        let mut kinds: Vec<String> = failing.iter().map(|k| token(k)).collect();
        kinds.sort();
        kinds.dedup();
        Self { models: run.models.iter().map(|m| m.model.clone()).collect(), kinds }
    }

    /// The hidden radio buttons, before `<main>`.
    #[must_use]
    pub fn inputs(&self) -> String {
        let mut s = String::from("<input type=\"radio\" class=\"fi\" name=\"fm\" id=\"fm-all\" checked>");
        for i in 0..self.models.len() {
            let _ = write!(s, "<input type=\"radio\" class=\"fi\" name=\"fm\" id=\"fm-{i}\">");
        }
        s.push_str("<input type=\"radio\" class=\"fi\" name=\"fc\" id=\"fc-all\" checked>");
        s.push_str("<input type=\"radio\" class=\"fi\" name=\"fc\" id=\"fc-any\">");
        for k in &self.kinds {
            let _ = write!(s, "<input type=\"radio\" class=\"fi\" name=\"fc\" id=\"fc-{k}\">");
        }
        s.push('\n');
        s
    }

    /// The rules that make the radio buttons filter.
    #[must_use]
    pub fn css(&self) -> String {
        let mut s = String::from(
            "\n.fi { position: absolute; opacity: 0; pointer-events: none; }\n\
             .filters { position: sticky; top: 0; background: Canvas; padding: .4rem 0; border-bottom: 1px solid var(--line); z-index: 1; }\n\
             .filters label { border: 1px solid var(--line); border-radius: 4px; padding: .05rem .45rem; margin: 0 .15rem; cursor: pointer; white-space: nowrap; }\n\
             .nomatch { display: none; }\n\
             #fm-all:checked ~ main label[for=fm-all], #fc-all:checked ~ main label[for=fc-all] { background: var(--best); color: Canvas; }\n\
             #fc-any:checked ~ main label[for=fc-any] { background: var(--best); color: Canvas; }\n\
             #fc-any:checked ~ main section.prompt:not(.has-fail) { display: none; }\n",
        );
        for i in 0..self.models.len() {
            let _ = writeln!(
                s,
                "#fm-{i}:checked ~ main article.answer:not(.m-{i}) {{ display: none; }}\n\
                 #fm-{i}:checked ~ main .answers {{ grid-template-columns: minmax(0, 1fr) !important; }}\n\
                 #fm-{i}:checked ~ main label[for=fm-{i}] {{ background: var(--best); color: Canvas; }}"
            );
        }
        for k in &self.kinds {
            let _ = writeln!(
                s,
                "#fc-{k}:checked ~ main section.prompt:not([data-failed~=\"{k}\"]) {{ display: none; }}\n\
                 #fc-{k}:checked ~ main label[for=fc-{k}] {{ background: var(--best); color: Canvas; }}"
            );
        }
        s
    }

    /// The filter bar: labels for the radio buttons, and the text box the script shows.
    #[must_use]
    pub fn bar(&self) -> String {
        let mut s =
            String::from("<nav class=\"filters\" aria-label=\"filters\">model: <label for=\"fm-all\">all</label>");
        for (i, m) in self.models.iter().enumerate() {
            let _ = write!(s, "<label for=\"fm-{i}\">{}</label>", escape(m));
        }
        s.push_str(" · checks: <label for=\"fc-all\">all</label><label for=\"fc-any\">any failing</label>");
        for k in &self.kinds {
            let _ = write!(s, "<label for=\"fc-{k}\">{k} failing</label>");
        }
        s.push_str(
            " · <input type=\"search\" id=\"q\" placeholder=\"text…\" aria-label=\"filter by text\" hidden>\
             <span class=\"meta\" id=\"q-note\">(text: the browser's find; the text box needs JavaScript)</span></nav>",
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn failing_kinds_are_tokens_once_each() {
        let cells = [
            CellRow { ok: true, checks: Some(json!([{"kind": "contains", "pass": false}])), ..CellRow::default() },
            CellRow {
                ok: false,
                checks: Some(json!([{"kind": "x\"><b", "pass": false}, {"kind": "contains", "pass": false}])),
                ..CellRow::default()
            },
            CellRow { ok: true, checks: Some(json!([{"kind": "regex", "pass": true}])), ..CellRow::default() },
        ];
        assert_eq!(failed_kinds(&cells), ["contains", "error", "x___b"]);
    }

    #[test]
    fn the_policy_allows_exactly_the_script_by_its_hash() {
        let hash = script_hash();
        assert!(hash.starts_with("sha256-") && hash.len() == 7 + 44, "{hash}");
        assert!(csp().contains(&format!("script-src '{hash}';")), "{}", csp());
        assert!(csp().starts_with("default-src 'none';"));
        // Only the hash: no 'unsafe-inline' or host source that would let other script run.
        let script_src =
            csp().split(';').find(|d| d.trim().starts_with("script-src")).map(str::trim).map(str::to_owned);
        assert_eq!(script_src, Some(format!("script-src '{hash}'")));
    }
}
