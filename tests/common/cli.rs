//! palaver run headless by the compare tests: a command in its own home with a test key,
//! its JSON Lines, its stderr.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// palaver with `args` in `home` (a test key, no base URL from the environment, no stdin).
pub fn palaver(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_palaver"));
    c.args(args)
        .env("PALAVER_HOME", home)
        .env("OPENAI_API_KEY", "sk-test")
        .env_remove("OPENAI_BASE_URL")
        // A CI job's page is the job's, not the tests'.
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null());
    c
}

pub fn run(home: &Path, args: &[&str]) -> Output {
    palaver(home, args).output().unwrap()
}

/// [`run`] with more variables set.
#[allow(dead_code)]
pub fn run_env(home: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    palaver(home, args).envs(vars.iter().copied()).output().unwrap()
}

/// stdout's JSON lines (others skipped).
pub fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

pub fn err(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
