//! The user's own slash commands: markdown files in `<config dir>/commands/` (the user's) and
//! `.palaver/commands/` in the workspace (someone else's, untrusted). The file name is the
//! command, the body the prompt (`$ARGUMENTS`, `$1`…`$9` filled from what follows the
//! command); simple front matter (`key: value` lines between `---`) may set `description`,
//! `model`, `system`, `tools` and `schema` for that one turn. Loading and parsing only: the
//! chat screen (`app/user_commands.rs`) offers and runs them.

use std::path::{Path, PathBuf};

/// Whose file a command is: a workspace's may come with a repository someone else wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandSource {
    /// `<config dir>/commands/`: the user's own.
    User,
    /// `.palaver/commands/` in the workspace: untrusted.
    Workspace,
}

/// One command file, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserCommand {
    /// The name typed after the slash (the file name without `.md`).
    pub name: String,
    pub description: Option<String>,
    /// A model for this one turn.
    pub model: Option<String>,
    /// A system prompt for this one turn.
    pub system: Option<String>,
    /// A tool mode for this one turn (`auto`, `ask`, `none`).
    pub tools: Option<String>,
    /// A JSON schema (or a saved schema's name) the answer must follow, for this one turn.
    pub schema: Option<String>,
    /// The prompt template.
    pub body: String,
    pub source: CommandSource,
    pub path: PathBuf,
}

impl UserCommand {
    /// Whether running it would offer tools to the model.
    #[must_use]
    pub fn turns_tools_on(&self) -> bool {
        self.tools.as_deref().is_some_and(|t| !matches!(t.trim(), "none" | "off" | ""))
    }

    /// What running it changes that a repository's command must have confirmed first: tools
    /// turned on, another model, another system prompt (each as it will be shown, raw).
    #[must_use]
    pub fn changes(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.turns_tools_on() {
            out.push(("tools", self.tools.clone().unwrap_or_default()));
        }
        if let Some(m) = &self.model {
            out.push(("model", m.clone()));
        }
        if let Some(s) = &self.system {
            out.push(("system prompt", s.clone()));
        }
        out
    }

    /// What the palette and help show beside the name.
    #[must_use]
    pub fn label(&self) -> String {
        let base = self.description.clone().unwrap_or_else(|| first_line(&self.body));
        match self.source {
            CommandSource::User => base,
            CommandSource::Workspace => format!("{base} (workspace)"),
        }
    }
}

fn first_line(body: &str) -> String {
    let line = body.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let short: String = line.chars().take(60).collect();
    if short.len() < line.len() { format!("{short}…") } else { short }
}

/// Whether `name` can be a command: letters, digits, `-`, `_`, `.` (not first).
#[must_use]
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.len() <= 64
}

/// Parses a command file's text. Front matter is `---` lines around `key: value` lines; an
/// unknown key is ignored, a value may be quoted.
#[must_use]
pub fn parse(name: &str, text: &str, source: CommandSource, path: PathBuf) -> UserCommand {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut cmd = UserCommand {
        name: name.to_owned(),
        description: None,
        model: None,
        system: None,
        tools: None,
        schema: None,
        body: text.to_owned(),
        source,
        path,
    };
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return cmd;
    }
    let mut consumed = text.find('\n').map_or(text.len(), |i| i + 1);
    for line in lines {
        consumed += line.len();
        let l = line.trim_end();
        if l == "---" {
            cmd.body = text[consumed..].to_owned();
            return cmd;
        }
        let Some((key, value)) = l.split_once(':') else { continue };
        let value = unquote(value.trim());
        let value = Some(value.to_owned()).filter(|v| !v.is_empty());
        match key.trim() {
            "description" => cmd.description = value,
            "model" => cmd.model = value,
            "system" => cmd.system = value,
            "tools" => cmd.tools = value,
            "schema" => cmd.schema = value,
            _ => {}
        }
    }
    // No closing `---`: not front matter after all; the whole file is the prompt.
    UserCommand {
        body: text.to_owned(),
        description: None,
        model: None,
        system: None,
        tools: None,
        schema: None,
        ..cmd
    }
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

/// Fills the template: `$ARGUMENTS` is everything after the command, `$1`…`$9` its
/// whitespace-separated words (missing ones are empty). `$$` is a literal `$`. A template
/// that mentions no placeholder gets the arguments appended after a blank line.
#[must_use]
pub fn expand(body: &str, args: &str) -> String {
    let args = args.trim();
    let words: Vec<&str> = args.split_whitespace().collect();
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
        } else if let Some(d) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let i = d as usize - '1' as usize;
            out.push_str(words.get(i).copied().unwrap_or(""));
            used = true;
            rest = &after[1..];
        } else if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    let mut out = out.trim().to_owned();
    if !used && !args.is_empty() {
        out.push_str("\n\n");
        out.push_str(args);
    }
    out
}

/// Reads every `*.md` in `user_dir` and `workspace_dir`. A user's command wins over a
/// workspace's of the same name; returns the commands sorted by name, and what was skipped.
#[must_use]
pub fn load(user_dir: &Path, workspace_dir: &Path) -> (Vec<UserCommand>, Vec<String>) {
    let mut notes = Vec::new();
    let mut found = read_dir(user_dir, CommandSource::User, &mut notes);
    for w in read_dir(workspace_dir, CommandSource::Workspace, &mut notes) {
        if found.iter().any(|c| c.name == w.name) {
            notes.push(format!("/{}: your own command is used, not the workspace's {}", w.name, w.path.display()));
        } else {
            found.push(w);
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    (found, notes)
}

/// Command files larger than this are skipped (a prompt, not a document).
const MAX_BYTES: u64 = 256 * 1024;

fn read_dir(dir: &Path, source: CommandSource, notes: &mut Vec<String>) -> Vec<UserCommand> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("md") {
            continue;
        }
        let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else { continue };
        if !valid_name(&name) {
            notes.push(format!("{}: not a command name (letters, digits, - and _)", path.display()));
            continue;
        }
        match std::fs::metadata(&path) {
            Ok(m) if m.len() > MAX_BYTES => {
                notes.push(format!("{}: larger than {MAX_BYTES} bytes, skipped", path.display()));
                continue;
            }
            Err(_) => continue,
            Ok(_) => {}
        }
        match crate::sys::read::file_string(&path, crate::sys::read::CONFIG_FILE) {
            Ok(text) => out.push(parse(&name, &text, source, path)),
            Err(err) => notes.push(format!("{}: {err}", path.display())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(text: &str) -> UserCommand {
        parse("review", text, CommandSource::User, PathBuf::from("review.md"))
    }

    #[test]
    fn front_matter_sets_the_turn_and_the_rest_is_the_prompt() {
        let c = cmd(
            "---\ndescription: Review a file\nmodel: demo-reasoning\nsystem: \"Be terse: very\"\ntools: auto\nschema: '{\"type\":\"object\"}'\nother: x\n---\nReview $ARGUMENTS\n",
        );
        assert_eq!(c.description.as_deref(), Some("Review a file"));
        assert_eq!(c.model.as_deref(), Some("demo-reasoning"));
        assert_eq!(c.system.as_deref(), Some("Be terse: very"));
        assert_eq!(c.tools.as_deref(), Some("auto"));
        assert_eq!(c.schema.as_deref(), Some("{\"type\":\"object\"}"));
        assert_eq!(c.body, "Review $ARGUMENTS\n");
        assert!(c.turns_tools_on());
        assert_eq!(c.label(), "Review a file");
    }

    #[test]
    fn no_or_unclosed_front_matter_is_all_prompt() {
        let c = cmd("Just a prompt\nwith lines");
        assert_eq!((c.body.as_str(), c.model.as_ref()), ("Just a prompt\nwith lines", None));
        assert_eq!(c.label(), "Just a prompt");
        let c = cmd("---\nmodel: x\nno end");
        assert_eq!((c.body.as_str(), c.model.as_ref()), ("---\nmodel: x\nno end", None));
        assert!(!cmd("---\ntools: none\n---\nx").turns_tools_on());
        let w = parse("w", "hi", CommandSource::Workspace, PathBuf::new());
        assert_eq!(w.label(), "hi (workspace)");
    }

    #[test]
    fn arguments_fill_the_placeholders() {
        assert_eq!(expand("Review $ARGUMENTS please", "src/a.rs  fast "), "Review src/a.rs  fast please");
        assert_eq!(expand("$2 then $1, not $3; $$1 stays", "a b"), "b then a, not ; $1 stays");
        assert_eq!(expand("cost $5.00", ""), "cost .00");
        assert_eq!(expand("price in $ and $x", ""), "price in $ and $x");
        assert_eq!(expand("Summarise this:", "the text"), "Summarise this:\n\nthe text");
        assert_eq!(expand("Summarise.", ""), "Summarise.");
    }

    #[test]
    fn loads_both_folders_the_users_own_winning() {
        let root = tempfile::tempdir().unwrap();
        let (u, w) = (root.path().join("u"), root.path().join("w"));
        std::fs::create_dir_all(&u).unwrap();
        std::fs::create_dir_all(&w).unwrap();
        std::fs::write(u.join("review.md"), "mine $ARGUMENTS").unwrap();
        std::fs::write(w.join("review.md"), "theirs").unwrap();
        std::fs::write(w.join("fix-it.md"), "---\ntools: auto\n---\nfix").unwrap();
        std::fs::write(w.join("notes.txt"), "not a command").unwrap();
        std::fs::write(w.join("bad name.md"), "x").unwrap();
        let (cmds, notes) = load(&u, &w);
        let names: Vec<_> = cmds.iter().map(|c| (c.name.as_str(), c.source)).collect();
        assert_eq!(names, [("fix-it", CommandSource::Workspace), ("review", CommandSource::User)]);
        assert_eq!(cmds[1].body, "mine $ARGUMENTS");
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(load(&root.path().join("none"), &root.path().join("none")).0.is_empty());
    }
}
