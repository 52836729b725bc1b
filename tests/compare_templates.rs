//! Templated prompt sets through the binary: a `vars` table (a CSV file beside the set, and an
//! inline one) makes one prompt per row, each stored with its row, shown in the reports and
//! in the `--json` cell lines; a template whose variables do not fit its table, or a malformed
//! vars file, is a usage error naming the file and line before anything is sent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use serde_json::Value;

use common::cli::{err, lines, run};

#[test]
fn a_vars_file_makes_a_prompt_per_row_stored_and_reported() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sets");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("cases.csv"), "lang,word\nfrench,\"salut, toi\"\ngerman,tschüss\n").unwrap();
    let set = dir.join("set.jsonl");
    std::fs::write(
        &set,
        concat!(
            r#"{"id":"say","prompt":"Say {{word}} in {{lang}}","system":"You speak {{lang}}.","vars":"cases.csv","expect":{"contains":"{{word}}"}}"#,
            "\n",
            r#"{"id":"n-{{n}}","prompt":"Count to {{n}}","vars":[{"n":2},{"n":3}]}"#,
            "\n{\"id\":\"plain\",\"prompt\":\"a {{literal}} brace\"}\n"
        ),
    )
    .unwrap();
    let (md, html) = (home.path().join("r.md"), home.path().join("r.html"));
    let args = ["compare", "--demo", "-m", "demo", "-m", "demo-reasoning", "--prompts", set.to_str().unwrap()];
    let reports = ["--report", md.to_str().unwrap(), "--report", html.to_str().unwrap(), "--json"];
    let out = run(home.path(), &[&args[..], &reports[..]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let cells: Vec<Value> = lines(&out).into_iter().filter(|l| l["type"] == "cell").collect();
    assert_eq!(cells.len(), 5 * 2, "two rows, two rows and a plain line, for two models");
    let say1: Vec<&Value> = cells.iter().filter(|c| c["prompt_id"] == "say.1").collect();
    assert_eq!(say1.len(), 2);
    assert_eq!(say1[0]["vars"], serde_json::json!({"lang": "french", "word": "salut, toi"}));
    // The demo answers by quoting the prompt: the expanded one went out, and the expanded check passed.
    assert!(say1.iter().all(|c| c["text"].as_str().unwrap().contains("Say salut, toi in french")), "{say1:?}");
    assert!(say1.iter().all(|c| c["checks"][0]["pass"] == true), "{say1:?}");
    assert!(cells.iter().any(|c| c["prompt_id"] == "n-3" && c["vars"]["n"] == 3));
    let plain = cells.iter().find(|c| c["prompt_id"] == "plain").unwrap();
    assert!(plain.get("vars").is_none(), "a line without vars is not a template");
    assert!(plain["text"].as_str().unwrap().contains("a {{literal}} brace"));
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("vars: lang = german · word = tschüss"), "{md}");
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("vars: lang = french · word = salut, toi"));
    // The rows are stored with their prompts: `compare show` gives them back.
    let id = lines(&out).last().unwrap()["run"].as_str().unwrap().to_owned();
    let shown = run(home.path(), &["compare", "show", &id, "--json"]);
    let again: Vec<Value> = lines(&shown).into_iter().filter(|l| l["prompt_id"] == "say.2").collect();
    assert_eq!(again[0]["vars"]["word"], "tschüss", "{}", err(&shown));
}

#[test]
fn variables_that_do_not_fit_are_usage_errors_before_anything_is_sent() {
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.jsonl");
    let try_set = |text: &str| {
        std::fs::write(&set, text).unwrap();
        let out = run(home.path(), &["compare", "--demo", "-m", "demo", "--prompts", set.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", err(&out));
        assert!(out.stdout.is_empty(), "nothing ran");
        err(&out)
    };
    let e = try_set("{\"prompt\":\"ok\"}\n{\"prompt\":\"{{a}} {{b}}\",\"vars\":[{\"a\":1}]}\n");
    assert!(e.contains("set.jsonl: line 2: unknown variable `b` (the vars have: a)"), "{e}");
    let e = try_set("{\"prompt\":\"{{a}} {{b}}\",\"vars\":[{\"a\":1,\"b\":2},{\"a\":1}]}\n");
    assert!(e.contains("line 1: vars row 2: missing variable `b`"), "{e}");
    std::fs::write(home.path().join("v.csv"), "a,b\n1,2\n3\n").unwrap();
    let e = try_set("{\"prompt\":\"{{a}}\",\"system\":\"{{b}}\",\"vars\":\"v.csv\"}\n");
    assert!(e.contains("line 1: v.csv line 3: 1 fields, the header has 2"), "{e}");
    std::fs::write(home.path().join("v.jsonl"), "{\"a\":1}\nnot json\n").unwrap();
    let e = try_set("{\"prompt\":\"{{a}}\",\"vars\":\"v.jsonl\"}\n");
    assert!(e.contains("line 1: v.jsonl line 2: not JSON"), "{e}");
    let e = try_set("{\"prompt\":\"{{a}}\",\"vars\":\"gone.csv\"}\n");
    assert!(e.contains("cannot read the vars file") && e.contains("gone.csv"), "{e}");
    let e = try_set("{\"prompt\":\"{{a}}\",\"attach\":\"{{f}}.png\",\"vars\":[{\"a\":1}]}\n");
    assert!(e.contains("unknown variable `f`"), "{e}");
    // No run was stored for any of them.
    let runs = run(home.path(), &["compare", "runs", "--json"]);
    assert!(!String::from_utf8_lossy(&runs.stdout).contains("\"run-"), "{}", String::from_utf8_lossy(&runs.stdout));
}
