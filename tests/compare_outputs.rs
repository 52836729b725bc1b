//! Prompt-set files for CI through the binary: `--output` writes JUnit (read back by the real
//! JUnit reader, PyPI `junitparser`), CSV, JSON and JSON Lines; `$GITHUB_STEP_SUMMARY` gets a
//! Markdown summary; the reports count each kind of check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use common::cli::{err, run_env};
use serde_json::Value;
use std::path::Path;

const SET: &str = r#"{"id":"echo","prompt":"say hello","expect":["you said",{"icontains":"TURN"}]}
{"id":"strict","prompt":"anything","expect":{"equals":"never <this> & \"that\""}}
{"id":"pic","prompt":"look","attach":["missing.png"]}
{"id":"plain","prompt":"no checks here"}
"#;

fn junitparser() -> Option<std::path::PathBuf> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/junit-py/bin/python");
    if py.exists() {
        return Some(py);
    }
    assert!(std::env::var_os("CI").is_none(), "junitparser is not installed (tests/junit/install_junitparser.sh)");
    eprintln!(
        "!!!!!!!! junitparser not installed (tests/junit/install_junitparser.sh): the JUnit file is not read back !!!!!!!!"
    );
    None
}

#[test]
fn junit_csv_json_and_the_step_summary_hold_every_cell() {
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(&set, SET).unwrap();
    let (xml, csv, json, jsonl, md) = (
        home.path().join("r.xml"),
        home.path().join("r.csv"),
        home.path().join("r.json"),
        home.path().join("r.jsonl"),
        home.path().join("r.md"),
    );
    let step = home.path().join("step.md");
    std::fs::write(&step, "earlier step\n").unwrap();
    let mut args = vec!["compare", "--demo", "-m", "demo", "-m", "demo-reasoning", "--prompts", set.to_str().unwrap()];
    for f in [&xml, &csv, &json, &jsonl, &md] {
        args.extend(["--output", f.to_str().unwrap()]);
    }
    let out = run_env(home.path(), &args, &[("GITHUB_STEP_SUMMARY", step.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(1), "a failed cell (the missing attachment): 1\n{}", err(&out));

    // JUnit, as a real consumer reads it: a suite per model, a case per prompt.
    let text = std::fs::read_to_string(&xml).unwrap();
    assert!(text.contains("never &lt;this&gt; &amp; &quot;that&quot;"), "{text}");
    if let Some(py) = junitparser() {
        let script = r#"
import json, sys
from junitparser import JUnitXml, Failure, Error
xml = JUnitXml.fromfile(sys.argv[1])
out = []
for suite in xml:
    for case in suite:
        kinds = [type(r).__name__ for r in case.result]
        msgs = [r.message for r in case.result]
        out.append({"suite": suite.name, "case": case.name, "results": kinds, "messages": msgs})
print(json.dumps({"tests": xml.tests, "failures": xml.failures, "errors": xml.errors, "cases": out}))
"#;
        let read = std::process::Command::new(py).args(["-c", script, xml.to_str().unwrap()]).output().unwrap();
        assert!(read.status.success(), "{}", String::from_utf8_lossy(&read.stderr));
        let v: Value = serde_json::from_slice(&read.stdout).unwrap();
        assert_eq!(
            (v["tests"].as_u64(), v["failures"].as_u64(), v["errors"].as_u64()),
            (Some(8), Some(2), Some(2)),
            "{v}"
        );
        let cases = v["cases"].as_array().unwrap();
        assert_eq!(cases.iter().filter(|c| c["suite"] == "demo/demo").count(), 4);
        let strict = cases.iter().find(|c| c["case"] == "strict").unwrap();
        assert_eq!(strict["results"], serde_json::json!(["Failure"]));
        assert!(strict["messages"][0].as_str().unwrap().starts_with("equals: is not `never <this>"), "{strict}");
        let pic = cases.iter().find(|c| c["case"] == "pic").unwrap();
        assert_eq!(pic["results"], serde_json::json!(["Error"]));
        assert!(
            cases
                .iter()
                .filter(|c| c["case"] == "echo" || c["case"] == "plain")
                .all(|c| c["results"] == serde_json::json!([]))
        );
    }

    // CSV: a header and a row per cell, quoted; the answers whole.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("run,prompt_index,prompt_id,sample,model,provider,ok,passed"));
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("\"run-")).collect();
    assert_eq!(rows.len(), 8, "{text}");
    assert!(text.contains(",true,false,\"equals: is not"), "{text}");

    // JSON and JSON Lines: the cells as --json gives them.
    let all: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 8);
    let lines: Vec<Value> =
        std::fs::read_to_string(&jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 8);
    assert!(lines.iter().all(|l| l["type"] == "cell"));

    // The job's page: what was there, then the summary and the failed cells.
    let page = std::fs::read_to_string(&step).unwrap();
    assert!(page.starts_with("earlier step\n# Compare run"), "{page}");
    assert!(page.contains("### Failed cells") && page.contains("strict: equals: is not"), "{page}");

    // The report counts each kind of check per model.
    let report = std::fs::read_to_string(&md).unwrap();
    assert!(report.contains("| check equals | 0/1 | 0/1 |"), "{report}");
    assert!(report.contains("| check icontains |"), "{report}");
}

#[test]
fn an_unknown_extension_names_the_formats() {
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.txt");
    std::fs::write(&set, "hello\n").unwrap();
    let out = run_env(
        home.path(),
        &["compare", "--demo", "-m", "demo", "--prompts", set.to_str().unwrap(), "--output", "r.txt"],
        &[],
    );
    assert!(err(&out).contains(".xml (JUnit), .csv, .json or .jsonl"), "{}", err(&out));
}
