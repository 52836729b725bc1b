//! Issue 14's first hour on the command line: the demo says when it stands in for a provider,
//! configuration problems are named before anything is sent, `palaver config` explains what is
//! in effect, and `--help` names the files and variables that matter.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::process::{Command, Output, Stdio};

const KEY: &str = "sk-test-0123456789abcdefSECRET";

fn palaver(home: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_palaver"));
    c.args(args)
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn home_with(config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    if !config.is_empty() {
        std::fs::write(home.path().join("config.toml"), config).unwrap();
    }
    home
}

#[test]
fn a_run_that_falls_back_to_the_demo_says_so_in_one_line_and_demo_is_quiet() {
    let home = home_with("");
    let o = palaver(home.path(), &["-p", "hello"], &[]);
    assert_eq!(o.status.code(), Some(0));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("built-in demo provider") && e.contains("OPENAI_API_KEY is not set"), "{e}");
    assert!(e.contains(&home.path().join("config.toml").display().to_string()), "names the file looked for: {e}");
    assert!(out(&o).contains("A quick tour"));
    // --demo: the same answer, no note.
    let o = palaver(home.path(), &["--demo", "-p", "hello"], &[]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(err(&o), "");
    // --json runs say it too (on stderr: stdout stays JSON).
    let o = palaver(home.path(), &["-p", "hello", "--json"], &[]);
    assert!(err(&o).contains("built-in demo provider"));
}

#[test]
fn a_default_provider_that_does_not_exist_is_a_configuration_error() {
    let home = home_with("default_provider = \"nope\"\n");
    let o = palaver(home.path(), &["-p", "hello"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("default_provider in config.toml names `nope`"), "{}", err(&o));
    assert_eq!(out(&o), "");
    let home = home_with("default_provider = \"opnai\"\n[providers.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n");
    let o = palaver(home.path(), &["-p", "hello"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("did you mean `openai`?"), "{}", err(&o));
}

#[test]
fn an_unset_key_variable_is_named_before_anything_is_sent() {
    let home = home_with(
        "default_provider = \"p\"\n[providers.p]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"PALAVER_TEST_UNSET_KEY\"\n",
    );
    let o = palaver(home.path(), &["-p", "hello"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(e.contains("PALAVER_TEST_UNSET_KEY, which is not set"), "{e}");
    assert!(!e.contains("connect"), "nothing was sent: {e}");
    let o = palaver(home.path(), &["--api-key-env", "PALAVER_TEST_UNSET_TOO", "-p", "hi"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--api-key-env names the environment variable PALAVER_TEST_UNSET_TOO"), "{}", err(&o));
}

#[test]
fn misspelled_keys_are_reported_with_the_closest_one_and_wrong_types_with_their_line() {
    let home = home_with("defualt_provider = \"openai\"\n");
    let o = palaver(home.path(), &["-p", "hello"], &[]);
    let e = err(&o);
    assert!(e.contains("line 1: unknown key `defualt_provider` (did you mean `default_provider`?)"), "{e}");
    let o = palaver(home.path(), &["config", "check"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("did you mean `default_provider`?"), "{}", err(&o));
    let home = home_with("theme = \"dark\"\n[providers.p]\nbase_url = 3\n");
    let o = palaver(home.path(), &["config"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("line 3"), "{}", err(&o));
}

#[test]
fn config_shows_what_is_in_effect_without_keys_and_init_writes_a_template_that_checks() {
    let home = home_with(
        "default_provider = \"p\"\n[providers.p]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"PALAVER_TEST_KEY\"\nmodels = [\"m1\"]\n[models.m1]\ncontext_window = 8000\n",
    );
    let o = palaver(home.path(), &["config"], &[("PALAVER_TEST_KEY", KEY)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let s = out(&o);
    assert!(!s.contains(KEY) && !s.contains("SECRET"), "a key was shown:\n{s}");
    for want in [
        "config file",
        "(read)",
        "data directory",
        "default_provider in config.toml",
        "providers.p.base_url",
        "providers.p.models[0]",
        "$PALAVER_TEST_KEY (set,",
        "context 8000",
        "no price set",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    let fresh = tempfile::tempdir().unwrap();
    let o = palaver(fresh.path(), &["config", "init"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let written = std::fs::read_to_string(fresh.path().join("config.toml")).unwrap();
    assert!(written.contains("# [providers.openai]"));
    let o = palaver(fresh.path(), &["config", "check"], &[]);
    assert_eq!(o.status.code(), Some(0), "the template checks clean: {}", err(&o));
    let o = palaver(fresh.path(), &["config", "init"], &[]);
    assert_eq!(o.status.code(), Some(2), "an existing file is never overwritten");
    // With no file, `config` says every setting is a default and that the demo stands in.
    let empty = tempfile::tempdir().unwrap();
    let s = out(&palaver(empty.path(), &["config"], &[]));
    assert!(s.contains("not found") && s.contains("fallback: OPENAI_API_KEY is not set"), "{s}");
}

#[test]
fn help_names_the_files_and_variables_and_subcommands_list_only_their_flags() {
    let home = home_with("");
    let s = out(&palaver(home.path(), &["--help"], &[]));
    for want in ["config.toml", "PALAVER_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL", "--render", "palaver config init"]
    {
        assert!(s.contains(want), "--help lacks {want}:\n{s}");
    }
    assert!(s.contains(&home.path().join("config.toml").display().to_string()), "{s}");
    // Every flag has a help line.
    let lines: Vec<&str> = s.lines().collect();
    for (i, l) in lines.iter().enumerate().filter(|(_, l)| l.trim_start().starts_with("--")) {
        let same = l.split_whitespace().count() > 2;
        let next = lines.get(i + 1).is_some_and(|n| n.trim().len() > 10 && !n.trim_start().starts_with('-'));
        assert!(same || next, "no help line for {l}:\n{s}");
    }
    assert!(s.contains("Sampling temperature") && s.contains("Most tokens the reply may have"), "{s}");
    for sub in [&["serve-demo", "--help"][..], &["replay", "--help"], &["history", "export", "--help"]] {
        let h = out(&palaver(home.path(), sub, &[]));
        let lines: Vec<&str> = h.lines().collect();
        for (i, l) in lines.iter().enumerate().filter(|(_, l)| l.trim_start().starts_with(['-', '<'])) {
            let next = lines.get(i + 1).map_or("", |n| n.trim());
            let same = l.split_whitespace().count() > 2;
            assert!(same || (next.len() > 10 && !next.starts_with('[')), "no help line for {l} in {sub:?}:\n{h}");
        }
    }
    let h = out(&palaver(home.path(), &["history", "--help"], &[]));
    assert!(!h.contains("--temperature") && !h.contains("--tools"), "history lists chat flags:\n{h}");
    assert!(h.contains("--json"), "{h}");
    let m = out(&palaver(home.path(), &["models", "--help"], &[]));
    assert!(m.contains("--base-url") && !m.contains("--system"), "{m}");
    let c = out(&palaver(home.path(), &["compare", "--help"], &[]));
    assert!(c.contains("--model") && c.contains("--temperature"), "{c}");
    // Hidden is not refused: a global flag still parses after any subcommand.
    let o = palaver(home.path(), &["history", "list", "--json", "--temperature", "0.5"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

#[test]
fn models_marks_the_demo_models_as_such() {
    let home = home_with("");
    let o = palaver(home.path(), &["--demo", "models"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let s = out(&o);
    assert!(s.lines().any(|l| l.starts_with("demo-slow\t(demo: ")), "{s}");
}

#[test]
fn json_writes_a_safety_result_only_when_it_changes() {
    let home = home_with("");
    let o = palaver(home.path(), &["--demo", "-p", "hello", "--json"], &[]);
    assert_eq!(o.status.code(), Some(0));
    let s = out(&o);
    let text = s.lines().filter(|l| l.contains("\"type\":\"text\"")).count();
    let filters = s.lines().filter(|l| l.contains("\"type\":\"content_filter\"")).count();
    assert!(text > 10, "{s}");
    assert_eq!(filters, 1, "the demo repeats the same results on every chunk:\n{s}");
}

#[test]
fn a_headless_call_nobody_could_approve_says_so() {
    let home = home_with("");
    let cwd = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--demo", "-m", "demo-tools", "--tools", "ask", "-p", "what files are here?"])
        .current_dir(cwd.path())
        .env("PALAVER_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let e = err(&o);
    assert!(e.contains("was not run: it needs an approval and no one could give it"), "{e}");
    assert!(e.contains("--tools auto"), "{e}");
}

/// `palaver providers | head -1` and `palaver models | head -1`: a reader that goes away ends
/// palaver quietly with status 0, not with a panic about a broken pipe.
#[test]
fn a_closed_pipe_on_stdout_ends_listings_quietly() {
    let home = home_with("");
    for args in [&["providers"][..], &["--demo", "models"][..], &["catalogue", "show", "gpt-4o-mini"][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(args)
            .env("PALAVER_HOME", home.path())
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the reading end before palaver writes: every line it prints meets a closed pipe.
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert!(!err(&o).contains("panicked"), "{args:?}: {}", err(&o));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", err(&o));
    }
}

/// `--provider groq` with no config file and no key: the message names the built-in preset,
/// not a `[providers.groq]` table the user never wrote.
#[test]
fn a_presets_missing_key_names_the_preset() {
    let home = home_with("");
    let o = palaver(home.path(), &["--provider", "groq", "-p", "hi"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("built-in `groq` preset") && err(&o).contains("GROQ_API_KEY"), "{}", err(&o));
    assert!(!err(&o).contains("[providers.groq]"), "{}", err(&o));
}
