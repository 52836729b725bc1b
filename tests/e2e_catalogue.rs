//! End to end: provider presets with no config file, costs from the built-in catalogue (live
//! against a scripted server on 127.0.0.1, and replayed from a recorded stream), and the
//! `providers` and `catalogue` commands.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use scripted::{Reply, Server};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const OR_KEY: &str = "sk-or-test-0123456789abcdef";

fn palaver(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_palaver"));
    cmd.args(args)
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENROUTER_API_KEY")
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn result_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let v: Value = serde_json::from_str(last).unwrap_or(Value::Null);
    assert_eq!(v["type"], "result", "no result line: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    v
}

/// The built-in catalogue's prices for `key` (input, output, cache read, cache write,
/// reasoning), read from the asset itself, not through palaver.
fn catalogue_prices(key: &str) -> [Option<f64>; 5] {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/catalogue/models.tsv")).unwrap();
    let line = text.lines().find(|l| l.split('\t').next() == Some(key)).unwrap();
    let f: Vec<&str> = line.split('\t').collect();
    let p = |i: usize| f.get(i).filter(|s| !s.is_empty()).map(|s| s.parse::<f64>().unwrap());
    [p(3), p(4), p(5), p(6), p(7)]
}

/// Dollars for the usage at those prices, each kind of token at its own price.
fn expected_cost(
    prices: [Option<f64>; 5],
    prompt: u64,
    cached: u64,
    written: u64,
    completion: u64,
    reasoning: u64,
) -> f64 {
    let [input, output, read, write, think] = prices;
    let (input, output) = (input.unwrap(), output.unwrap());
    let m = |n: u64| n as f64 / 1e6;
    m(prompt - cached - written) * input
        + m(cached) * read.unwrap_or(input)
        + m(written) * write.unwrap_or(input)
        + m(completion - reasoning) * output
        + m(reasoning) * think.unwrap_or(output)
}

fn stream(model: &str, usage: &str) -> String {
    format!(
        "data: {{\"id\":\"c\",\"model\":\"{model}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"Hi\"}},\"finish_reason\":null}}]}}\n\n\
         data: {{\"id\":\"c\",\"model\":\"{model}\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n\
         data: {{\"id\":\"c\",\"model\":\"{model}\",\"choices\":[],\"usage\":{usage}}}\n\n\
         data: [DONE]\n\n"
    )
}

#[test]
fn openrouter_preset_with_only_its_key_and_no_config_file() {
    let usage = r#"{"prompt_tokens":120000,"completion_tokens":3000,"total_tokens":123000,"prompt_tokens_details":{"cached_tokens":100000},"completion_tokens_details":{"reasoning_tokens":1000}}"#;
    let s = Server::start(vec![Reply::sse(&stream("openai/gpt-4o-mini", usage))]);
    let home = tempfile::tempdir().unwrap();
    let out = palaver(
        home.path(),
        &["--provider", "openrouter", "--base-url", &s.base_url, "-m", "openai/gpt-4o-mini", "-p", "hi", "--json"],
        &[("OPENROUTER_API_KEY", OR_KEY)],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!home.path().join("config.toml").exists());
    let req = &s.requests()[0];
    let headers = req.headers.to_ascii_lowercase();
    assert!(headers.contains(&format!("authorization: bearer {}", OR_KEY.to_ascii_lowercase())), "{headers}");
    assert!(headers.contains("x-title: palaver"), "the preset's header: {headers}");
    let body: Value = serde_json::from_str(&req.body).unwrap();
    assert_eq!(body["model"], "openai/gpt-4o-mini");
    assert_eq!(body["stream_options"]["include_usage"], true);
    let r = result_of(&out);
    assert_eq!(r["provider"], "openrouter");
    let want = expected_cost(catalogue_prices("openai/gpt-4o-mini"), 120_000, 100_000, 0, 3000, 1000);
    let got = r["cost"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-12, "cost {got}, catalogue says {want}");
    assert_eq!(r["cost_estimated"], true);
    // The existing keys are as they were.
    assert_eq!(r["usage"]["cached_tokens"], 100_000);
}

#[test]
fn a_profile_of_the_presets_name_wins_and_its_price_is_not_an_estimate() {
    let s = Server::start(vec![Reply::sse(&stream(
        "openai/gpt-4o-mini",
        r#"{"prompt_tokens":1000000,"completion_tokens":1000000}"#,
    ))]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[providers.openrouter]\nbase_url = \"{}\"\napi_key_env = \"OPENROUTER_API_KEY\"\nheaders = {{ \"X-Title\" = \"mine\" }}\n\
             [models.\"openai/gpt-4o-mini\"]\nprice = {{ input = 1, output = 2 }}\n",
            s.base_url
        ),
    )
    .unwrap();
    let out = palaver(
        home.path(),
        &["--provider", "openrouter", "-m", "openai/gpt-4o-mini", "-p", "hi", "--json"],
        &[("OPENROUTER_API_KEY", OR_KEY)],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let headers = s.requests()[0].headers.to_ascii_lowercase();
    assert!(headers.contains("x-title: mine") && !headers.contains("x-title: palaver"), "{headers}");
    let r = result_of(&out);
    assert_eq!(r["cost"].as_f64(), Some(3.0));
    assert_eq!(r["cost_estimated"], false);
}

#[test]
fn a_replayed_stream_costs_the_catalogues_prices_times_its_tokens() {
    // Anthropic's prices have a cache write price of their own.
    let usage = r#"{"prompt_tokens":50000,"completion_tokens":4000,"prompt_tokens_details":{"cached_tokens":20000,"cache_write_tokens":10000},"completion_tokens_details":{"reasoning_tokens":1500}}"#;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rec.sse");
    std::fs::write(&file, stream("claude-sonnet-4-5", usage)).unwrap();
    let out = palaver(dir.path(), &["replay", file.to_str().unwrap(), "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = result_of(&out);
    let prices = catalogue_prices("anthropic/claude-sonnet-4-5");
    assert!(prices[3].is_some() && prices[3] != prices[0], "the test wants a distinct cache write price");
    let want = expected_cost(prices, 50_000, 20_000, 10_000, 4000, 1500);
    let got = r["cost"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-12, "cost {got}, catalogue says {want}");
    assert_eq!(r["cost_estimated"], true);
    // A model the catalogue does not know has no cost, and says so with null.
    std::fs::write(&file, stream("my-own-model", usage)).unwrap();
    let r = result_of(&palaver(dir.path(), &["replay", file.to_str().unwrap(), "--json"], &[]));
    assert!(r["cost"].is_null() && r["cost_estimated"] == false, "{r}");
}

#[test]
fn providers_lists_every_preset_and_config_init_writes_one() {
    let home = tempfile::tempdir().unwrap();
    let out = palaver(home.path(), &["providers"], &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().next()).collect();
    for n in [
        "openai",
        "azure",
        "openrouter",
        "groq",
        "together",
        "fireworks",
        "deepseek",
        "mistral",
        "xai",
        "gemini",
        "anthropic",
        "databricks",
        "ollama",
        "lmstudio",
        "vllm",
        "llamacpp",
    ] {
        assert!(names.contains(&n), "{n} missing:\n{text}");
    }
    let out = palaver(home.path(), &["config", "init", "--provider", "groq"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let written = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(written.contains("[providers.groq]") && written.contains("GROQ_API_KEY"), "{written}");
    let out = palaver(home.path(), &["config", "check"], &[("GROQ_API_KEY", "k")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let other = tempfile::tempdir().unwrap();
    let out = palaver(other.path(), &["config", "init", "--provider", "nope"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("palaver providers"));
}

#[test]
fn a_preset_whose_url_needs_the_users_part_says_so() {
    let home = tempfile::tempdir().unwrap();
    let out = palaver(home.path(), &["--provider", "azure", "-p", "hi"], &[("AZURE_OPENAI_API_KEY", "k")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--base-url") && err.contains("<resource>"), "{err}");
}

#[test]
fn catalogue_update_writes_a_copy_that_wins_and_refuses_a_bad_file() {
    let home = tempfile::tempdir().unwrap();
    let show = |home: &Path| palaver(home, &["catalogue", "show", "gpt-4o-mini"], &[]);
    let before = String::from_utf8_lossy(&show(home.path()).stdout).into_owned();
    assert!(before.contains("built-in catalogue") && before.contains("128,000 tokens"), "{before}");
    let bad = home.path().join("bad.tsv");
    std::fs::write(&bad, "<html>not a catalogue</html>").unwrap();
    let out = palaver(home.path(), &["catalogue", "update", bad.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!home.path().join("catalogue.tsv").exists());
    let good = home.path().join("litellm.json");
    std::fs::write(
        &good,
        r#"{"gpt-4o-mini": {"litellm_provider": "openai", "mode": "chat", "max_input_tokens": 99000, "input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06}}"#,
    )
    .unwrap();
    let out = palaver(home.path(), &["catalogue", "update", good.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let after = String::from_utf8_lossy(&show(home.path()).stdout).into_owned();
    assert!(after.contains("catalogue copy") && after.contains("99,000 tokens"), "{after}");
    let out = palaver(home.path(), &["catalogue", "show", "no-such-model"], &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn models_shows_each_models_window_price_and_where_they_came_from() {
    let models = r#"{"data":[{"id":"gpt-4o-mini"},{"id":"my-own-model"},{"id":"priced-by-me"}]}"#;
    let s = Server::start(vec![Reply::json(200, models).on_get(), Reply::json(200, models).on_get()]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "[models.\"priced-by-me\"]\nprice = { input = 1, output = 2 }\n")
        .unwrap();
    let out = palaver(home.path(), &["models", "--base-url", &s.base_url], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |id: &str| text.lines().find(|l| l.split('\t').next() == Some(id)).unwrap_or_default().to_owned();
    assert_eq!(line("gpt-4o-mini"), "gpt-4o-mini\t128,000 context · ~$0.15 in · ~$0.6 out per 1M · catalogue");
    assert_eq!(line("my-own-model"), "my-own-model");
    assert_eq!(line("priced-by-me"), "priced-by-me\t$1 in · $2 out per 1M · config.toml");
    let out = palaver(home.path(), &["models", "--base-url", &s.base_url, "--json"], &[]);
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mini = lines.iter().find(|l| l["model"] == "gpt-4o-mini").unwrap();
    assert_eq!(mini["source"], "listed");
    assert_eq!(mini["context_window"], 128_000);
    assert_eq!(mini["price"]["estimated"], true);
    assert_eq!(mini["facts_from"], "catalogue");
    assert!(lines.iter().find(|l| l["model"] == "my-own-model").unwrap().get("facts_from").is_none());
}

#[test]
fn an_image_to_a_model_the_catalogue_says_takes_none_is_warned_about_then_sent() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("p.png");
    let mut bytes = Vec::new();
    image::RgbImage::new(4, 4).write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
    std::fs::write(&png, bytes).unwrap();
    for (model, warned) in [("gpt-3.5-turbo", true), ("gpt-4o-mini", false)] {
        let s = Server::start(vec![Reply::sse(&stream(model, r#"{"prompt_tokens":1,"completion_tokens":1}"#))]);
        let out = palaver(
            dir.path(),
            &["--base-url", &s.base_url, "-m", model, "-a", png.to_str().unwrap(), "-p", "what is this"],
            &[("OPENAI_API_KEY", "k")],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.contains("takes no images"), warned, "{model}: {err}");
        assert_eq!(s.requests().len(), 1, "{model}: sent either way");
    }
}

#[test]
fn continuing_a_conversation_started_on_a_preset_goes_back_to_the_preset() {
    let usage = r#"{"prompt_tokens":10,"completion_tokens":2}"#;
    let body = stream("openai/gpt-4o-mini", usage);
    let s = Server::start(vec![Reply::sse(&body), Reply::sse(&body)]);
    let home = tempfile::tempdir().unwrap();
    let env = [("OPENROUTER_API_KEY", OR_KEY)];
    let first = palaver(
        home.path(),
        &["--provider", "openrouter", "--base-url", &s.base_url, "-m", "openai/gpt-4o-mini", "-p", "hi", "--json"],
        &env,
    );
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let again = palaver(home.path(), &["--continue", "-p", "and again", "--json"], &env);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let r = result_of(&again);
    assert_eq!(r["provider"], "openrouter", "{r}");
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    let headers = reqs[1].headers.to_ascii_lowercase();
    assert!(headers.contains("x-title: palaver") && headers.contains(&OR_KEY.to_ascii_lowercase()), "{headers}");
}

#[test]
fn catalogue_update_refuses_a_device_and_a_fifo_at_once_and_keeps_the_index_it_had() {
    let home = tempfile::tempdir().unwrap();
    let ours = home.path().join("ours.tsv");
    std::fs::write(&ours, "#palaver-catalogue 1\tsource=mine\tdate=2026-01-01\nacme/rocket-1\t777000\n").unwrap();
    let out = palaver(home.path(), &["catalogue", "update", ours.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(home.path().join("catalogue.db").exists(), "update writes the index");
    let fifo = home.path().join("pipe");
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::RWXU, 0).unwrap();
    for (source, word) in [("/dev/zero", "a device"), (fifo.to_str().unwrap(), "a FIFO")] {
        let start = std::time::Instant::now();
        let out = palaver(home.path(), &["catalogue", "update", source], &[]);
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "{source} is refused at once");
        assert_eq!(out.status.code(), Some(2), "{source}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(word) && err.contains("not a regular file") && err.contains("nothing was written"),
            "{err}"
        );
    }
    let show = palaver(home.path(), &["catalogue", "show", "rocket-1"], &[]);
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(shown.contains("catalogue copy") && shown.contains("777,000 tokens"), "{shown}");
}
