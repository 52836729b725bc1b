//! `palaver history` on the command line, the real binary with `PALAVER_HOME` in a temporary
//! directory and the embedded demo answering: a headless compare is one entry of `list` (and
//! of `--json`, with its columns), `show`/`export`/`rm` take the compare's id and still a
//! column's; `search` is the chat screen's search; `import` reloads `export --format json`,
//! refuses a malformed file whole (exit 2) and prints nothing unsanitised.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn palaver(home: &Path, args: &[&str]) -> Output {
    palaver_in(home, args, None)
}

fn palaver_in(home: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_palaver"));
    c.args(args)
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "exit {:?}: {}", o.status.code(), err(o));
    out(o)
}

/// A history with a headless compare of two models and, after it, one chat.
fn history() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    ok(&palaver(home.path(), &["--demo", "compare", "-m", "demo", "-m", "demo-reasoning", "-p", "hi pelican"]));
    ok(&palaver(home.path(), &["--demo", "-m", "demo", "-p", "tell me about flamingos"]));
    home
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn a_compare_is_one_entry_with_its_columns_inside() {
    let home = history();
    let listed = ok(&palaver(home.path(), &["history", "list"]));
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(lines[0].contains("tell me about flamingos"), "newest first: {listed}");
    let group = lines[1].split_whitespace().next().unwrap().to_owned();
    assert!(group.starts_with("cmp-"), "{listed}");
    assert!(lines[1].contains("compare · 2 models (demo, demo-reasoning)  4 msgs  hi pelican"), "{listed}");

    let entries = json_lines(&ok(&palaver(home.path(), &["--json", "history", "list"])));
    for e in &entries {
        for key in ["id", "title", "model", "updated_at", "messages"] {
            assert!(e.get(key).is_some(), "{key} missing: {e}");
        }
    }
    let cmp = &entries[1];
    assert_eq!(
        (cmp["id"].as_str(), cmp["model"].is_null(), cmp["messages"].as_u64()),
        (Some(group.as_str()), true, Some(4))
    );
    let columns = cmp["columns"].as_array().unwrap();
    let models: Vec<&str> = columns.iter().map(|c| c["model"].as_str().unwrap()).collect();
    assert_eq!(models, ["demo", "demo-reasoning"]);
    assert!(entries[0].get("columns").is_none(), "a conversation has no columns: {}", entries[0]);

    // show: every column of the compare; a column alone still works and names its compare.
    let shown = ok(&palaver(home.path(), &["history", "show", &group]));
    assert!(shown.contains("compare · 2 models"), "{shown}");
    assert!(shown.contains("══ column 1 · demo · ") && shown.contains("══ column 2 · demo-reasoning · "), "{shown}");
    assert_eq!(shown.matches("── you ──").count(), 2, "{shown}");
    let col = columns[1]["id"].as_str().unwrap();
    let one = ok(&palaver(home.path(), &["history", "show", col]));
    assert!(one.contains(&format!("column 2 of compare {group}")), "{one}");
    assert!(one.contains("I thought it over first"), "the demo-reasoning answer: {one}");
    let md = ok(&palaver(home.path(), &["history", "export", &group]));
    assert!(md.contains("## Column 1 · demo") && md.contains("## Column 2 · demo-reasoning"), "{md}");
    let json: Value =
        serde_json::from_str(&ok(&palaver(home.path(), &["history", "export", col, "--format", "json"]))).unwrap();
    assert_eq!(json["compare_group"].as_str(), Some(group.as_str()));

    // A unique prefix of the group's id works too; rm of the compare removes every column.
    let deleted = ok(&palaver(home.path(), &["history", "rm", &group[..group.len() - 2]]));
    assert!(deleted.contains("deleted compare") && deleted.contains("2 columns, 4 messages"), "{deleted}");
    let left = ok(&palaver(home.path(), &["history", "list"]));
    assert_eq!(left.lines().count(), 1, "{left}");
    assert_eq!(palaver(home.path(), &["history", "show", col]).status.code(), Some(2));
}

#[test]
fn search_prints_one_hit_a_line_its_id_first() {
    let home = history();
    let found = ok(&palaver(home.path(), &["history", "search", "pelican"]));
    let lines: Vec<&str> = found.lines().collect();
    assert_eq!(lines.len(), 4, "the prompt and the demo's echo of it in each column: {found}");
    for l in &lines {
        let id = l.split_whitespace().next().unwrap();
        assert!(ok(&palaver(home.path(), &["history", "show", id])).contains("pelican"), "{l}");
        assert!(l.contains("in compare cmp-"), "{l}");
    }
    // The last word matches the start of a word, as in the chat screen.
    let prefix = ok(&palaver(home.path(), &["history", "search", "flamin"]));
    assert!(!prefix.is_empty() && prefix.lines().all(|l| l.contains("flamingos")), "{prefix}");
    let hits = json_lines(&ok(&palaver(home.path(), &["--json", "history", "search", "flamingos"])));
    assert!(!hits.is_empty());
    for h in &hits {
        let snippet = h["snippet"].as_str().unwrap();
        let [a, b] = [h["ranges"][0][0].as_u64().unwrap() as usize, h["ranges"][0][1].as_u64().unwrap() as usize];
        assert_eq!(snippet[a..b].to_lowercase(), "flamingos", "{h}");
        assert!(h["compare"].is_null());
    }
    let limited = palaver(home.path(), &["history", "search", "pelican", "--limit", "1"]);
    assert_eq!(ok(&limited).lines().count(), 1);
    assert!(err(&limited).contains("--limit N shows more"), "{}", err(&limited));
    // No match: nothing on stdout, a note on stderr, exit 0. Nothing to search for: exit 2.
    let none = palaver(home.path(), &["history", "search", "zebra"]);
    assert_eq!((ok(&none).as_str(), err(&none).contains("no message matches “zebra”")), ("", true));
    assert_eq!(palaver(home.path(), &["history", "search", "?!"]).status.code(), Some(2));
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(ok(&palaver(empty.path(), &["history", "search", "zebra"])), "");
}

#[test]
fn import_reloads_an_export_and_keeps_what_is_there() {
    let home = history();
    let group =
        ok(&palaver(home.path(), &["history", "list"])).lines().nth(1).unwrap().split(' ').next().unwrap().to_owned();
    let exported = ok(&palaver(home.path(), &["history", "export", &group, "--format", "json"]));
    let file = home.path().join("compare.json");
    std::fs::write(&file, &exported).unwrap();

    // Into another history: the same ids, and the same file when exported again.
    let other = tempfile::tempdir().unwrap();
    let done = ok(&palaver(other.path(), &["history", "import", file.to_str().unwrap()]));
    assert!(done.starts_with(&format!("{group}  imported compare “hi pelican” · 2 columns")), "{done}");
    assert_eq!(ok(&palaver(other.path(), &["history", "export", &group, "--format", "json"])), exported);
    assert!(ok(&palaver(other.path(), &["history", "search", "pelican"])).contains(&group));

    // Into the history it came from, from stdin: new ids, said on stderr; the original stays.
    let again = palaver_in(home.path(), &["--json", "history", "import", "-"], Some(exported.as_bytes()));
    let v: Value = serde_json::from_str(ok(&again).trim()).unwrap();
    assert_ne!(v["id"].as_str(), Some(group.as_str()));
    assert!(err(&again).contains(&format!("already has a compare {group}")), "{}", err(&again));
    assert_eq!(ok(&palaver(home.path(), &["history", "list"])).lines().count(), 3);
}

#[test]
fn a_malformed_file_is_refused_whole_and_named() {
    let home = history();
    let id = ok(&palaver(home.path(), &["history", "list"])).split(' ').next().unwrap().to_owned();
    let good = ok(&palaver(home.path(), &["history", "export", &id, "--format", "json"]));
    let fresh = tempfile::tempdir().unwrap();
    let refuse = |bytes: &[u8], want: &str| {
        let o = palaver_in(fresh.path(), &["history", "import", "-"], Some(bytes));
        assert_eq!(o.status.code(), Some(2), "{want}: {}", err(&o));
        assert!(err(&o).contains(want), "{want}: {}", err(&o));
        assert!(err(&o).contains("nothing was imported"), "{}", err(&o));
        assert!(!err(&o).contains('\u{1b}'), "{:?}", err(&o));
        assert_eq!(out(&o), "");
    };
    refuse(b"not json", "not JSON");
    refuse(&[0xff, 0xfe, b'{'], "not UTF-8");
    refuse(br#"{"format":"palaver.conversation","version":7}"#, "newer palaver");
    let mut v: Value = serde_json::from_str(&good).unwrap();
    v["messages"][1]["role"] = "wizard".into();
    refuse(v.to_string().as_bytes(), "messages[1]: unknown variant `wizard`");
    let mut v: Value = serde_json::from_str(&good).unwrap();
    v["id"] = "../../\u{1b}[2J".into();
    refuse(v.to_string().as_bytes(), "is not a conversation id");
    let missing = palaver(fresh.path(), &["history", "import", "/no/such/file.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(err(&missing).contains("cannot read it"), "{}", err(&missing));
    assert_eq!(ok(&palaver(fresh.path(), &["history", "list"])), "", "nothing was imported");

    // A title with escape sequences is imported as it is and printed sanitised.
    let mut v: Value = serde_json::from_str(&good).unwrap();
    v["title"] = "evil \u{1b}]52;c;aGk=\u{7} title \u{1b}[2J".into();
    ok(&palaver_in(fresh.path(), &["history", "import", "-"], Some(v.to_string().as_bytes())));
    let listed = ok(&palaver(fresh.path(), &["history", "list"]));
    assert!(listed.contains("evil") && !listed.contains('\u{1b}') && !listed.contains('\u{7}'), "{listed:?}");
    let exported: Value =
        serde_json::from_str(&ok(&palaver(fresh.path(), &["history", "export", &id, "--format", "json"]))).unwrap();
    assert_eq!(exported["title"], v["title"], "the JSON keeps every byte");
}

#[test]
fn help_names_search_and_import() {
    let home = tempfile::tempdir().unwrap();
    let help = ok(&palaver(home.path(), &["history", "--help"]));
    for want in ["search", "import", "reloadable", "compare"] {
        assert!(help.contains(want), "{want}: {help}");
    }
    let import = ok(&palaver(home.path(), &["history", "import", "--help"]));
    assert!(import.contains("export --format json") && import.contains("exit 2"), "{import}");
}
