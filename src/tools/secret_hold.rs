//! Secrets by content: a tool's output is scanned for well-known credential shapes
//! ([`crate::text::secrets`]) before it goes to a provider. One that holds any is held back:
//! the model gets a refusal, and the real output rides along in [`ToolOutput::held`] for the
//! chat screen to ask about (naming the file and the kind of secret). Headless never sends it.

use super::{Held, ToolOutput, Workspace};
use crate::text::secrets;
use std::path::PathBuf;

/// Names of the files whose lines are shown when a search result holds a secret.
const NAMED_FILES: usize = 3;

/// `out` as it may go to the provider: unchanged when it holds no credential shape, else the
/// refusal with the real output held.
#[must_use]
pub fn hold(ws: &Workspace, name: &str, arguments: &str, out: ToolOutput) -> ToolOutput {
    let kinds = secrets::find(&out.text);
    if kinds.is_empty() {
        return out;
    }
    let args = super::parse_arguments(arguments).unwrap_or_default();
    let path_arg = args.get("path").and_then(serde_json::Value::as_str);
    let source = match (name, path_arg) {
        ("read_file", Some(p)) => ws.check(p).resolved,
        _ => PathBuf::from(format!("the output of {name}")),
    };
    let mut why = format!("holds {}", secrets::describe(&kinds));
    if name == "search_files" {
        let files = files_with_secrets(&out.text);
        if !files.is_empty() {
            why.push_str(&format!(" (in {})", files.join(", ")));
        }
    }
    let text = format!(
        "refused: {} {why}; it was withheld and not sent. Sending it needs the user's approval, \
         which was not given. Do not try to read it another way.",
        source.display()
    );
    let held = Held { source, why, output: out };
    ToolOutput { text, is_error: true, images: Vec::new(), held: Some(Box::new(held)) }
}

/// The files (`path:line: text` results) whose lines hold a secret, the first few.
fn files_with_secrets(text: &str) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for line in text.lines() {
        if files.len() >= NAMED_FILES {
            break;
        }
        let Some((file, _)) = line.split_once(':') else { continue };
        if !files.iter().any(|f| f == file) && !secrets::find(line).is_empty() {
            files.push(file.to_owned());
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem() -> String {
        format!("-----BEGIN {}-----\nMIIE\n", "OPENSSH PRIVATE KEY")
    }

    #[test]
    fn clean_output_passes_unchanged() {
        let ws = Workspace::current();
        let out = ToolOutput::ok("fn main() {}");
        assert_eq!(hold(&ws, "read_file", r#"{"path":"a.rs"}"#, out.clone()), out);
    }

    #[test]
    fn a_secret_is_held_naming_the_file_and_the_kind() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path(), Vec::new()).unwrap();
        let out = hold(&ws, "read_file", r#"{"path":"notes/key.txt"}"#, ToolOutput::ok(pem()));
        let held = out.held.as_ref().unwrap();
        assert_eq!(held.source, ws.root().join("notes/key.txt"));
        assert_eq!(held.why, "holds a private key (PEM block)");
        assert_eq!(held.output.text, pem());
        assert!(out.is_error && !out.text.contains("MIIE"), "{}", out.text);
        assert!(out.text.contains("key.txt holds a private key (PEM block); it was withheld"), "{}", out.text);
    }

    #[test]
    fn search_results_name_the_files_and_commands_name_the_tool() {
        let ws = Workspace::current();
        let found = format!("a.txt:1: hello\nb.env.txt:2: token=ghp_{}\n", "a".repeat(36));
        let out = hold(&ws, "search_files", r#"{"content":"token"}"#, ToolOutput::ok(found));
        let held = out.held.unwrap();
        assert_eq!(held.why, "holds a GitHub token (in b.env.txt)");
        let out = hold(&ws, "run_command", r#"{"command":"env"}"#, ToolOutput::ok("X=https://u:hunter2@h/"));
        assert_eq!(out.held.unwrap().source, PathBuf::from("the output of run_command"));
    }
}
