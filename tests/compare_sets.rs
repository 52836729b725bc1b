//! Prompt sets end to end through the binary: 50 prompts × 3 demo models with a report and a
//! JSON line per cell; `expect` checks and the CI exit status; attachments refused clearly;
//! two scripted providers where one answers 429 + Retry-After and the other's cells are not
//! held up (asserted on the order requests and cells happen in, not on timings); a run killed
//! with SIGKILL and resumed, counting the requests the server saw (no stored cell runs again);
//! Ctrl+C keeps the finished cells and exits 130.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

mod scripted;

use scripted::{Reply, Seen, Server};
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::cli::{err, lines, palaver, run};

/// The last user message of a chat request.
fn prompt_of(seen: &Seen) -> String {
    let v: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
    v["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("").to_owned()
}

fn answer(text: &str) -> String {
    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let stop = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}});
    format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n")
}

#[test]
fn fifty_prompts_three_demo_models_report_and_json() {
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("prompts.txt");
    let text: String = (1..=50).map(|i| format!("Prompt number {i}: explain item {i}\n")).collect();
    std::fs::write(&set, text).unwrap();
    let report = home.path().join("r.html");
    let md = home.path().join("r.md");
    let out = run(
        home.path(),
        &[
            "compare",
            "--demo",
            "-m",
            "demo",
            "-m",
            "demo-reasoning",
            "-m",
            "demo-tools",
            "--prompts",
            set.to_str().unwrap(),
            "--concurrency",
            "16",
            "--report",
            report.to_str().unwrap(),
            "--report",
            md.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    assert!(err(&out).trim().is_empty(), "stderr is not a terminal: nothing but errors: {}", err(&out));
    let ls = lines(&out);
    assert_eq!(ls.len(), 151, "150 cells and a summary");
    assert!(ls[..150].iter().all(|l| l["type"] == "cell" && l["ok"] == true));
    let summary = &ls[150];
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["cells"], 150);
    assert_eq!(summary["models"].as_array().unwrap().len(), 3);
    assert!(ls.iter().any(|l| l["model"] == "demo-tools" && l["tool_calls"].as_array().is_some_and(|a| !a.is_empty())));
    assert!(ls.iter().any(|l| l["model"] == "demo-reasoning" && l["reasoning"].is_string()));
    let html = std::fs::read_to_string(&report).unwrap();
    assert_eq!(html.matches("<section class=\"prompt\"").count(), 50);
    assert_eq!(html.matches("<article class=\"answer").count(), 150);
    assert!(html.contains("Prompt number 50"));
    assert!(std::fs::read_to_string(&md).unwrap().contains("### 50"));

    // The run is kept: listed, and its report printed again from the store.
    let id = summary["run"].as_str().unwrap().to_owned();
    let runs = run(home.path(), &["compare", "runs"]);
    let listed = String::from_utf8_lossy(&runs.stdout).into_owned();
    assert!(listed.starts_with(&id) && listed.contains("finished") && listed.contains("150/150"), "{listed}");
    let show = run(home.path(), &["compare", "show", &id[4..12]]);
    let shown = String::from_utf8_lossy(&show.stdout).into_owned();
    assert_eq!(show.status.code(), Some(0), "{}", err(&show));
    assert!(shown.contains("cells ok") && shown.contains("demo-reasoning") && shown.contains("ttft p95"), "{shown}");
    let again = run(home.path(), &["compare", "show", &id, "--json"]);
    assert_eq!(lines(&again).len(), 151);
}

#[test]
fn expect_checks_give_pass_rates_and_an_exit_status_for_ci() {
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(
        &set,
        r#"{"id":"quote","prompt":"say hello","expect":"you said"}
{"id":"nope","prompt":"anything","expect":{"regex":"^THIS WILL NOT MATCH$"}}
{"id":"pic","prompt":"look","attach":["cat.png"]}
"#,
    )
    .unwrap();
    let out = run(
        home.path(),
        &["compare", "--demo", "-m", "demo", "-m", "demo-reasoning", "--prompts", set.to_str().unwrap(), "--json"],
    );
    let ls = lines(&out);
    let summary = ls.last().unwrap();
    let models = summary["models"].as_array().unwrap();
    assert_eq!(models[0]["checked"], 4 / 2);
    assert_eq!(models[0]["passed"], 1);
    let pic: Vec<&Value> = ls.iter().filter(|l| l["prompt_id"] == "pic").collect();
    assert_eq!(pic.len(), 2);
    // `cat.png` does not exist: both cells fail before sending, saying which file.
    assert!(pic.iter().all(|l| {
        l["ok"] == false
            && l["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("cannot attach {}", home.path().canonicalize().unwrap().join("cat.png").display()))
    }));
    // A failed cell (the missing attachment) outranks failed checks: 1.
    assert_eq!(out.status.code(), Some(1), "{}", err(&out));
    // Resuming runs nothing (every cell is stored); --retry-failed runs the two failed ones again.
    let id = summary["run"].as_str().unwrap().to_owned();
    let again = run(home.path(), &["compare", "--demo", "--resume", &id, "--json"]);
    assert_eq!(lines(&again).iter().filter(|l| l["type"] == "cell").count(), 0);
    let again = run(home.path(), &["compare", "--demo", "--resume", &id, "--retry-failed", "--json"]);
    let cells: Vec<Value> = lines(&again).into_iter().filter(|l| l["type"] == "cell").collect();
    assert_eq!(cells.len(), 2, "{}", err(&again));
    assert!(cells.iter().all(|c| c["prompt_id"] == "pic"));

    std::fs::write(
        &set,
        "{\"prompt\":\"say hello\",\"expect\":\"you said\"}\n{\"prompt\":\"x\",\"expect\":{\"regex\":\"^NO$\"}}\n",
    )
    .unwrap();
    let out = run(home.path(), &["compare", "--demo", "-m", "demo", "--prompts", set.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "checks failed: 3\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("expect passed"));
    let out =
        run(home.path(), &["compare", "--demo", "-m", "demo", "--prompts", set.to_str().unwrap(), "--min-pass", "0.5"]);
    assert_eq!(out.status.code(), Some(0), "half passed, half asked: 0");

    // Mistakes in the set are usage errors naming the line, before anything is sent.
    std::fs::write(&set, "{\"prompt\":\"a\"}\n{\"prompt\":\"b\",\"expect\":{\"regex\":\"(\"}}\n").unwrap();
    let out = run(home.path(), &["compare", "--demo", "-m", "demo", "--prompts", set.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(err(&out).contains("line 2: expect: regex"), "{}", err(&out));
}

/// Tool, token-probability, negated and weighted checks on a demo model that calls tools: the
/// calls stored with the cell are what the tool checks read, a perplexity check makes the
/// request ask for log probabilities, and a check weighing 0 is reported without deciding.
#[test]
fn tool_perplexity_negated_and_weighted_checks_decide_cells() {
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(
        &set,
        r#"{"id":"path","prompt":"look around","expect":[{"tool_called":{"name":"read_file","arguments_schema":{"type":"object","required":["path"]}}},{"trajectory":{"tools":["read_file","list_directory"],"order":"any_order"}},{"tool_f1":{"expected":["read_file","list_directory","current_time"]}},{"not":{"tool_called":"write_file"}}]}
{"id":"probs","prompt":"hello","expect":[{"perplexity":1000},{"equals":"never this","weight":0,"metric":"exact"},{"not":{"is_refusal":true}}]}
{"id":"quiet","prompt":"hello","expect":{"tool_not_called":"*"}}
"#,
    )
    .unwrap();
    let args =
        ["compare", "--demo", "-m", "demo-tools", "--tools", "auto", "--prompts", set.to_str().unwrap(), "--json"];
    let out = run(home.path(), &args);
    let ls = lines(&out);
    let cell = |id: &str| ls.iter().find(|l| l["prompt_id"] == id).unwrap().clone();
    let kinds = |c: &Value| {
        c["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["kind"].as_str().unwrap().to_owned(), r["pass"] == true))
            .collect::<Vec<_>>()
    };
    let path = cell("path");
    assert!(kinds(&path).iter().all(|(_, pass)| *pass), "{path}");
    assert_eq!(kinds(&path).last().unwrap().0, "not_tool_called");
    let probs = cell("probs");
    assert_eq!(
        kinds(&probs),
        [("perplexity".into(), true), ("equals".into(), false), ("not_is_refusal".into(), true)],
        "{probs}"
    );
    assert_eq!(probs["checks"][1]["weight"], 0.0);
    assert_eq!(kinds(&cell("quiet")), [("tool_not_called".into(), false)]);
    let summary = ls.last().unwrap();
    assert_eq!((summary["models"][0]["checked"].as_u64(), summary["models"][0]["passed"].as_u64()), (Some(3), Some(2)));
    assert_eq!(out.status.code(), Some(3), "a failed check: 3\n{}", err(&out));
}

/// A `script` check runs the set's own program on the cell (JSON on stdin, a verdict on its last
/// line), sandboxed with every socket closed and a timeout, and only with --allow-scripts: a
/// set names programs, and a set is often someone else's file.
#[test]
fn script_checks_run_sandboxed_and_only_when_allowed() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("set");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("echo.sh"),
        "input=$(cat)\ncase \"$input\" in\n  *'you said'*) echo 'thinking'; echo '{\"pass\": true, \"score\": 0.9, \"reason\": \"echoes\"}' ;;\n  *) echo '{\"pass\": false, \"reason\": \"no echo\"}' ;;\nesac\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("net.py"),
        "import json, socket\ntry:\n    socket.socket()\n    print(json.dumps({'pass': False, 'reason': 'a socket opened'}))\nexcept OSError as e:\n    print(json.dumps({'pass': True, 'reason': 'no socket'}))\n",
    )
    .unwrap();
    let set = dir.join("set.jsonl");
    std::fs::write(
        &set,
        r#"{"id":"echo","prompt":"hello","expect":{"script":["sh","echo.sh"],"metric":"custom"}}
{"id":"slow","prompt":"hello","expect":{"script":{"command":["sleep","30"],"timeout_s":1}}}
{"id":"net","prompt":"hello","expect":{"script":["python3","net.py"]}}
"#,
    )
    .unwrap();
    let refused = run(home.path(), &["compare", "--demo", "-m", "demo", "--prompts", set.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2), "{}", err(&refused));
    assert!(
        err(&refused).contains("line 1: a `script` check would run `sh`") && err(&refused).contains("--allow-scripts"),
        "{}",
        err(&refused)
    );
    let args = ["compare", "--demo", "-m", "demo", "--prompts", set.to_str().unwrap(), "--allow-scripts", "--json"];
    let out = run(home.path(), &args);
    let ls = lines(&out);
    let check = |id: &str| ls.iter().find(|l| l["prompt_id"] == id).unwrap()["checks"][0].clone();
    let echo = check("echo");
    assert_eq!(
        (echo["kind"].as_str(), echo["pass"].as_bool(), echo["score"].as_f64()),
        (Some("script"), Some(true), Some(0.9)),
        "{echo}"
    );
    assert_eq!(echo["metric"], "custom");
    let slow = check("slow");
    assert!(slow["pass"] == false && slow["detail"].as_str().unwrap().contains("took longer than 1 s"), "{slow}");
    if palaver::tools::sandbox::support().available()
        && std::process::Command::new("python3").arg("-V").output().is_ok()
    {
        assert_eq!(check("net")["pass"], true, "{}", check("net"));
    }
    // A resumed run asks again before it runs a script.
    let id = ls.last().unwrap()["run"].as_str().unwrap().to_owned();
    let again = run(home.path(), &["compare", "--demo", "--resume", &id, "--retry-failed"]);
    assert_eq!(again.status.code(), Some(2), "{}", err(&again));
}

#[test]
fn a_rate_limited_provider_does_not_hold_up_the_other() {
    let seq = Arc::new(AtomicUsize::new(0));
    let (s1, s2) = (seq.clone(), seq.clone());
    // `slow` refuses its first request with 429 and Retry-After: 2; `fast` always answers.
    let slow_seen = Arc::new(std::sync::Mutex::new(Vec::<(usize, u16, String)>::new()));
    let fast_seen = Arc::new(std::sync::Mutex::new(Vec::<usize>::new()));
    let (sl, fl) = (slow_seen.clone(), fast_seen.clone());
    let slow = Server::start_fn(move |seen| {
        let n = s1.fetch_add(1, Ordering::SeqCst);
        let mut log = sl.lock().unwrap();
        let status = if log.is_empty() { 429 } else { 200 };
        log.push((n, status, prompt_of(seen)));
        if status == 429 {
            Reply::json(429, r#"{"error":{"message":"slow down"}}"#).header("Retry-After", "2")
        } else {
            Reply::sse(&answer(&format!("slow: {}", prompt_of(seen))))
        }
    });
    let fast = Server::start_fn(move |seen| {
        fl.lock().unwrap().push(s2.fetch_add(1, Ordering::SeqCst));
        Reply::sse(&answer(&format!("fast: {}", prompt_of(seen))))
    });
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[providers.slow]\nbase_url = \"{}\"\n\n[providers.fast]\nbase_url = \"{}\"\n",
            slow.base_url, fast.base_url
        ),
    )
    .unwrap();
    let set = home.path().join("p.txt");
    std::fs::write(&set, (1..=12).map(|i| format!("q{i}\n")).collect::<String>()).unwrap();
    let out = run(
        home.path(),
        &[
            "compare",
            "-m",
            "slow/m1",
            "-m",
            "fast/m2",
            "--prompts",
            set.to_str().unwrap(),
            "--concurrency",
            "2",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let ls = lines(&out);
    let cells: Vec<&Value> = ls.iter().filter(|l| l["type"] == "cell").collect();
    assert_eq!(cells.len(), 24);
    assert!(cells.iter().all(|c| c["ok"] == true));
    let slow_log = slow_seen.lock().unwrap().clone();
    let fast_log = fast_seen.lock().unwrap().clone();
    // Counts: the fast provider saw each of its cells once; the slow one each once plus the retry.
    assert_eq!(fast_log.len(), 12);
    assert_eq!(slow_log.len(), 13);
    assert_eq!(slow_log.iter().filter(|(_, s, _)| *s == 429).count(), 1);
    // Order, not timing. The 429'd prompt is sent again after Retry-After; between the two,
    // `slow` got at most two new cells per worker — one racing the 429 before the pause took
    // hold, one waking with the retry when it ended — not its other eleven: the queue paused.
    // Without the pause the second worker runs all eleven meanwhile (this fails then).
    let refused = &slow_log[0].2;
    let retry_at = slow_log.iter().skip(1).position(|(_, _, p)| p == refused).unwrap() + 1;
    assert!(retry_at - 1 <= 4, "slow sent {} cells during the pause: {slow_log:?}", retry_at - 1);
    // And the fast provider did not wait for it: every fast request came before the retry.
    assert!(fast_log.iter().all(|&n| n < slow_log[retry_at].0), "fast {fast_log:?} slow {slow_log:?}");
    // And every fast cell finished before the slow provider's last cells.
    let first_slow_done = cells.iter().position(|c| c["provider"] == "slow").unwrap();
    let fast_done_before = cells[..first_slow_done.max(1)].iter().filter(|c| c["provider"] == "fast").count();
    let last_fast = cells.iter().rposition(|c| c["provider"] == "fast").unwrap();
    let last_slow = cells.iter().rposition(|c| c["provider"] == "slow").unwrap();
    assert!(last_fast < last_slow, "fast cells are not held up: {fast_done_before} before the first slow one");
}

/// A server whose every reply takes a while, so a run can be stopped in the middle.
fn slow_server() -> Server {
    Server::start_fn(|seen| {
        Reply::sse(&answer(&format!("answer to {}", prompt_of(seen)))).pause_first(Duration::from_millis(150))
    })
}

fn run_id(home: &Path) -> String {
    let out = run(home, &["compare", "runs", "--json"]);
    let ls = lines(&out);
    ls.first().and_then(|l| l["id"].as_str()).map(str::to_owned).unwrap_or_default()
}

fn stored_cells(home: &Path, id: &str) -> usize {
    let out = run(home, &["compare", "show", id, "--json"]);
    lines(&out).iter().filter(|l| l["type"] == "cell").count()
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(60), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_killed_run_resumes_without_running_finished_cells_again() {
    let server = slow_server();
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("p.txt");
    std::fs::write(&set, (1..=12).map(|i| format!("question {i}\n")).collect::<String>()).unwrap();
    let args = [
        "--base-url",
        &server.base_url,
        "compare",
        "-m",
        "m1",
        "-m",
        "m2",
        "--prompts",
        set.to_str().unwrap(),
        "--concurrency",
        "2",
    ];
    let mut child = palaver(home.path(), &args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_for("some requests", || server.requests().len() >= 7);
    // While it runs, nobody else may run it.
    let busy = run(home.path(), &["--base-url", &server.base_url, "compare", "--resume", &run_id(home.path())]);
    assert_eq!(busy.status.code(), Some(2), "{}", err(&busy));
    assert!(err(&busy).contains("being run by another palaver"), "{}", err(&busy));
    child.kill().unwrap(); // SIGKILL: no chance to tidy up
    let _ = child.wait();
    let id = run_id(home.path());
    assert!(id.starts_with("run-"), "{id}");
    let before = server.requests().len();
    let stored = stored_cells(home.path(), &id);
    assert!((3..24).contains(&stored), "stored {stored} of 24");
    let runs = String::from_utf8_lossy(&run(home.path(), &["compare", "runs"]).stdout).into_owned();
    // Its process is gone: the run is stopped, not running (issue 25 item 7).
    assert!(runs.contains("stopped") && !runs.contains("running"), "{runs}");

    let out = run(home.path(), &["--base-url", &server.base_url, "compare", "--resume", &id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let after = server.requests().len();
    assert_eq!(after - before, 24 - stored, "only the missing cells ran: {stored} were stored");
    assert_eq!(stored_cells(home.path(), &id), 24);
    // Each (prompt, model) was answered exactly once in the store.
    let ls = lines(&run(home.path(), &["compare", "show", &id, "--json"]));
    let mut keys: Vec<(u64, u64)> = ls
        .iter()
        .filter(|l| l["type"] == "cell")
        .map(|l| (l["prompt_index"].as_u64().unwrap(), l["column"].as_u64().unwrap()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 24);
    assert!(String::from_utf8_lossy(&run(home.path(), &["compare", "runs"]).stdout).contains("finished"));
}

#[test]
fn ctrl_c_keeps_finished_cells_and_exits_130() {
    let server = slow_server();
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("p.txt");
    std::fs::write(&set, (1..=20).map(|i| format!("question {i}\n")).collect::<String>()).unwrap();
    let args = [
        "--base-url",
        &server.base_url,
        "compare",
        "-m",
        "m1",
        "--prompts",
        set.to_str().unwrap(),
        "--concurrency",
        "2",
    ];
    let child = palaver(home.path(), &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_for("some requests", || server.requests().len() >= 5);
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", err(&out));
    assert!(err(&out).contains("palaver compare --resume run-"), "{}", err(&out));
    let id = run_id(home.path());
    let stored = stored_cells(home.path(), &id);
    assert!((2..20).contains(&stored), "{stored}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("missing"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_set_attaches_only_its_own_files_unless_allowed() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("set");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ok.txt"), "fine words").unwrap();
    std::fs::write(dir.join(".env"), "API_KEY=1").unwrap();
    std::fs::write(home.path().join("creds.txt"), "x").unwrap();
    let set = dir.join("set.jsonl");
    let s = set.to_str().unwrap();
    let args = ["compare", "--demo", "-m", "demo", "--prompts", s, "--json"];
    // Its own file, named relative to the set's folder, from another working directory.
    std::fs::write(&set, "{\"prompt\":\"read\",\"attach\":\"ok.txt\"}\n").unwrap();
    let out = palaver(home.path(), &args).current_dir("/").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    for (attach, why) in
        [(".env", "usually holds secrets"), ("../creds.txt", "outside"), ("/proc/self/status", "outside")]
    {
        std::fs::write(&set, format!("{{\"prompt\":\"one\"}}\n{{\"prompt\":\"two\",\"attach\":\"{attach}\"}}\n"))
            .unwrap();
        let out = run(home.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{attach}: {}", err(&out));
        let e = err(&out);
        assert!(e.contains(&format!("line 2: attach {attach}: ")) && e.contains(why), "{e}");
        assert!(e.contains("--allow-outside"), "{e}");
        assert!(lines(&out).iter().all(|l| l["type"] != "cell"), "nothing ran");
    }
    // The user's flag lets the last one through; the old name stays an alias.
    for flag in ["--allow-outside", "--allow-attach-outside"] {
        let mut allowed = args.to_vec();
        allowed.push(flag);
        let out = run(home.path(), &allowed);
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", err(&out));
    }
}

#[test]
fn vars_judge_prompt_and_schema_files_resolve_in_the_sets_folder_too() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("set");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(home.path().join("elsewhere")).unwrap();
    std::fs::write(home.path().join("elsewhere/vars.csv"), "word\nOUTSIDE-ROW\n").unwrap();
    std::fs::write(home.path().join("elsewhere/judge.md"), "Rate {{answer}}").unwrap();
    std::fs::write(home.path().join("elsewhere/s.json"), r#"{"type":"object"}"#).unwrap();
    std::fs::write(dir.join("vars.csv"), "word\ninside\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    let set = dir.join("set.jsonl");
    let s = set.to_str().unwrap();
    let args = ["compare", "--demo", "-m", "demo", "--prompts", s, "--json"];
    let outside = home.path().join("elsewhere/vars.csv").display().to_string();
    for (line, said) in [
        (r#"{"prompt":"say {{word}}","vars":"../elsewhere/vars.csv"}"#.to_owned(), "vars"),
        (format!(r#"{{"prompt":"say {{{{word}}}}","vars":"{outside}"}}"#), "vars"),
        (r#"{"prompt":"p","expect":{"judge":"good","prompt":"../elsewhere/judge.md"}}"#.to_owned(), "judge prompt"),
        (r#"{"prompt":"p","schema":"../elsewhere/s.json"}"#.to_owned(), "schema"),
    ] {
        std::fs::write(&set, format!("{{\"prompt\":\"first\"}}\n{line}\n")).unwrap();
        let out = palaver(home.path(), &args).current_dir("/").output().unwrap();
        let e = err(&out);
        assert_eq!(out.status.code(), Some(2), "{line}: {e}");
        assert!(e.contains("line 2: ") && e.contains(said) && e.contains("outside the prompt set's folder"), "{e}");
        assert!(e.contains("--allow-outside"), "{e}");
        assert!(lines(&out).iter().all(|l| l["type"] != "cell"), "nothing ran: {line}");
    }
    // With the flag, the rows outside are read.
    std::fs::write(&set, "{\"prompt\":\"say {{word}}\",\"vars\":\"../elsewhere/vars.csv\"}\n").unwrap();
    let mut allowed = args.to_vec();
    allowed.push("--allow-outside");
    let out = run(home.path(), &allowed);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    // The set's own vars file is read from its folder, from any working directory.
    std::fs::write(&set, "{\"prompt\":\"say {{word}}\",\"vars\":\"vars.csv\"}\n").unwrap();
    let out = palaver(home.path(), &args).current_dir("/").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    // A schema file that is not JSON is refused, not read as a short form.
    std::fs::write(&set, "{\"prompt\":\"p\",\"schema\":\"notes.txt\"}\n").unwrap();
    let out = run(home.path(), &args);
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    assert!(err(&out).contains("line 1: schema: notes.txt: the file is not JSON"), "{}", err(&out));
}
