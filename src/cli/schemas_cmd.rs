//! `palaver schemas`: named schemas kept for `--schema NAME`, one JSON file each in
//! `<config>/schemas/`. Listing shows each name with its fields; `save` takes anything
//! `--schema` takes (a file, inline JSON, a short form), checks it, and stores the schema.

use super::args::SchemasAction;
use super::exit::{EXIT_OK, EXIT_USAGE};
use crate::config::Paths;
use crate::engine::structured::Structured;
use crate::sys::read;
use std::path::PathBuf;

/// Where saved schemas live.
#[must_use]
pub fn dir(paths: &Paths) -> PathBuf {
    paths.config_dir.join("schemas")
}

/// The saved schema called `name`, if there is one.
#[must_use]
pub fn saved(paths: &Paths, name: &str) -> Option<PathBuf> {
    valid_name(name).then(|| dir(paths).join(format!("{name}.json"))).filter(|p| p.is_file())
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Runs `palaver schemas [save NAME SPEC | show NAME | rm NAME]`.
pub fn run(action: Option<&SchemasAction>, paths: &Paths) -> u8 {
    match action {
        None => list(paths),
        Some(SchemasAction::Save { name, schema }) => {
            if !valid_name(name) {
                say!("a schema's name is letters, digits, _ and - (at most 64): not {name}");
                return EXIT_USAGE;
            }
            let s = match super::schema_arg::resolve(schema) {
                Ok(s) => s,
                Err(e) => {
                    say!("{e}");
                    return EXIT_USAGE;
                }
            };
            let path = dir(paths).join(format!("{name}.json"));
            let text = serde_json::to_string_pretty(&s.schema).unwrap_or_default();
            match std::fs::create_dir_all(dir(paths)).and_then(|()| std::fs::write(&path, text + "\n")) {
                Ok(()) => {
                    outln!("saved {name} ({}): palaver -p … --schema {name}", fields(&s));
                    EXIT_OK
                }
                Err(e) => {
                    say!("cannot write {}: {e}", path.display());
                    EXIT_USAGE
                }
            }
        }
        Some(SchemasAction::Show { name }) => {
            match saved(paths, name).map(|p| read::file_string(&p, read::CONFIG_FILE)) {
                Some(Ok(text)) => {
                    outln!("{}", text.trim_end());
                    EXIT_OK
                }
                _ => missing(paths, name),
            }
        }
        Some(SchemasAction::Rm { name }) => match saved(paths, name).map(std::fs::remove_file) {
            Some(Ok(())) => {
                outln!("removed {name}");
                EXIT_OK
            }
            _ => missing(paths, name),
        },
    }
}

fn missing(paths: &Paths, name: &str) -> u8 {
    say!("no saved schema called {name} in {} (palaver schemas lists them)", dir(paths).display());
    EXIT_USAGE
}

fn list(paths: &Paths) -> u8 {
    let mut names: Vec<String> = std::fs::read_dir(dir(paths))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json").map(str::to_owned))
        .filter(|n| valid_name(n))
        .collect();
    names.sort();
    if names.is_empty() {
        outln!(
            "no saved schemas yet: palaver schemas save NAME 'name, age int, tags [str]' (or a file, or inline JSON)"
        );
        return EXIT_OK;
    }
    for name in names {
        let file = dir(paths).join(format!("{name}.json"));
        let text = read::file_string(&file, read::CONFIG_FILE).unwrap_or_default();
        let about = match Structured::from_text(&text, Some(&name)) {
            Ok(s) => fields(&s),
            Err(e) => format!("does not load: {e}"),
        };
        outln!("{name}  {about}");
    }
    EXIT_OK
}

/// The top-level fields, for one line: `name, age (integer)…`.
fn fields(s: &Structured) -> String {
    let Some(props) = s.schema.get("properties").and_then(|p| p.as_object()) else {
        return format!("a {} schema", s.schema.get("type").and_then(|t| t.as_str()).unwrap_or("JSON"));
    };
    let list: Vec<String> = props
        .iter()
        .map(|(k, v)| match v.get("type").and_then(|t| t.as_str()) {
            Some("string") | None => k.clone(),
            Some(t) => format!("{k} ({t})"),
        })
        .collect();
    list.join(", ")
}
