//! Keys `config.toml` does not know: serde ignores them, so a misspelled `defualt_provider` used
//! to vanish without a word. This walks the parsed table against the keys palaver reads and
//! reports each stranger with its line and the closest known key. Values of the wrong type are
//! the parser's business (`Config::parse` names their line).

/// The keys palaver reads at the top of `config.toml`.
pub const TOP: &[&str] = &[
    "default_provider",
    "theme",
    "workspace",
    "prose_width",
    "mouse",
    "auto_compact",
    "compact_prompt",
    "compact_max_tokens",
    "judge_prompt",
    "compare",
    "clipboard_image_cmd",
    "notify",
    "vim_mode",
    "notify_command",
    "providers",
    "models",
    "tools",
    "tool_env",
    "mcp",
    "keys",
];
/// The keys of a `[providers.NAME]` table.
pub const PROVIDER: &[&str] = &[
    "base_url",
    "api_key_env",
    "api_key_cmd",
    "api_key_cmd_timeout",
    "api",
    "models",
    "default_model",
    "headers",
    "auth",
    "query",
    "include_usage",
    "timeouts",
    "max_retries",
    "previous_response_id",
    "request",
    "tools",
    "attachments",
    "limits",
    "sandbox",
    "sandbox_network",
    "catalogue_model",
    "key_optional",
    "structured_outputs",
    "batch",
    "batch_discount",
];
const ATTACHMENTS: &[&str] = &["images", "files", "max_file_mb", "max_request_mb"];
const LIMITS: &[&str] = &[
    "sse_event_bytes",
    "body_bytes",
    "reply_bytes",
    "tool_calls",
    "output_items",
    "tool_output_bytes",
    "round_tool_output_bytes",
    "json_depth",
    "request_bytes",
    "model_list_bytes",
    "model_list_entries",
    "images_per_reply",
    "item_payload_bytes",
    "batch_body_bytes",
    "batch_line_bytes",
    "batch_file_bytes",
    "logprob_alternatives",
    "logprob_tokens",
    "logprob_bytes",
];
const COMPARE: &[&str] = &["cache_ttl", "cache_max_mb"];
const TIMEOUTS: &[&str] = &["connect", "first_byte", "idle"];
const MODEL: &[&str] = &["context_window", "max_output", "price", "catalogue_model"];
const PRICE: &[&str] = &["input", "cached_input", "output", "cache_write", "reasoning"];
const USER_TOOL: &[&str] =
    &["name", "description", "command", "parameters", "approval", "timeout_secs", "sandbox", "env"];
/// The keys of `[tool_env]` and of a `[[tools]]` entry's `env` table.
const TOOL_ENV: &[&str] = &["inherit", "include", "exclude", "set"];
const MCP: &[&str] = &["servers"];
const MCP_SERVER: &[&str] = &[
    "command",
    "env",
    "max_message_bytes",
    "max_tools",
    "url",
    "headers",
    "bearer_token_env",
    "allow_sampling",
    "trust_read_only",
];

/// A key palaver does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// Dotted path of the key (`providers.openai.base_ur`).
    pub path: String,
    /// 1-based line where it was found (0 when it could not be placed).
    pub line: usize,
    pub suggestion: Option<&'static str>,
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        write!(f, "unknown key `{}`", self.path)?;
        match self.suggestion {
            Some(s) => write!(f, " (did you mean `{s}`?)"),
            None => write!(f, " (ignored)"),
        }
    }
}

/// Every unknown key of `text`, in the order of the file. Text that does not parse gives none
/// (the parse error is reported instead).
#[must_use]
pub fn unknown_keys(text: &str) -> Vec<Unknown> {
    let Ok(table) = toml::from_str::<toml::Table>(text) else { return Vec::new() };
    let mut out = Vec::new();
    walk(&table, TOP, "", &mut out);
    for (name, profile) in tables(&table, "providers") {
        let at = format!("providers.{name}.");
        walk(profile, PROVIDER, &at, &mut out);
        if let Some(t) = profile.get("timeouts").and_then(toml::Value::as_table) {
            walk(t, TIMEOUTS, &format!("{at}timeouts."), &mut out);
        }
        if let Some(t) = profile.get("attachments").and_then(toml::Value::as_table) {
            walk(t, ATTACHMENTS, &format!("{at}attachments."), &mut out);
        }
        if let Some(t) = profile.get("limits").and_then(toml::Value::as_table) {
            walk(t, LIMITS, &format!("{at}limits."), &mut out);
        }
    }
    for (name, facts) in tables(&table, "models") {
        let at = format!("models.{name}.");
        walk(facts, MODEL, &at, &mut out);
        if let Some(t) = facts.get("price").and_then(toml::Value::as_table) {
            walk(t, PRICE, &format!("{at}price."), &mut out);
        }
    }
    if let Some(tools) = table.get("tools").and_then(toml::Value::as_array) {
        for tool in tools.iter().filter_map(toml::Value::as_table) {
            walk(tool, USER_TOOL, "tools.", &mut out);
            if let Some(env) = tool.get("env").and_then(toml::Value::as_table) {
                walk(env, TOOL_ENV, "tools.env.", &mut out);
            }
        }
    }
    if let Some(t) = table.get("compare").and_then(toml::Value::as_table) {
        walk(t, COMPARE, "compare.", &mut out);
    }
    if let Some(env) = table.get("tool_env").and_then(toml::Value::as_table) {
        walk(env, TOOL_ENV, "tool_env.", &mut out);
    }
    if let Some(mcp) = table.get("mcp").and_then(toml::Value::as_table) {
        walk(mcp, MCP, "mcp.", &mut out);
        for (name, server) in tables(mcp, "servers") {
            walk(server, MCP_SERVER, &format!("mcp.servers.{name}."), &mut out);
        }
    }
    for u in &mut out {
        u.line = line_of(text, &u.path);
    }
    out.sort_by_key(|u| u.line);
    out
}

fn tables<'t>(table: &'t toml::Table, key: &str) -> Vec<(&'t String, &'t toml::Table)> {
    table
        .get(key)
        .and_then(toml::Value::as_table)
        .map(|t| t.iter().filter_map(|(k, v)| v.as_table().map(|v| (k, v))).collect())
        .unwrap_or_default()
}

fn walk(table: &toml::Table, known: &[&'static str], prefix: &str, out: &mut Vec<Unknown>) {
    for key in table.keys() {
        if !known.contains(&key.as_str()) {
            out.push(Unknown {
                path: format!("{prefix}{key}"),
                line: 0,
                suggestion: suggest(key, known.iter().copied()),
            });
        }
    }
}

/// The line where the last part of `path` is written: `key =`, `"key" =`, or a table header
/// ending in it. Good enough for a hint; 0 when not found.
fn line_of(text: &str, path: &str) -> usize {
    let (parent, key) = path.rsplit_once('.').unwrap_or(("", path));
    let quoted = format!("\"{key}\"");
    // The table the scan is in (`[providers.two]` → "providers.two", quotes dropped), so a key
    // unknown in one table is not pointed at where another table has it.
    let mut table = String::new();
    let mut first = 0;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        // `key = …` at the start of a line or inside an inline table (`{ key = …, key2 = … }`).
        let assigns = |k: &str| {
            t.match_indices(k).any(|(at, _)| {
                let before = t[..at].trim_end();
                (before.is_empty() || before.ends_with(['{', ','])) && t[at + k.len()..].trim_start().starts_with('=')
            })
        };
        if t.starts_with('[') {
            let name = t.trim_end().trim_start_matches('[').trim_end_matches(']').trim().replace('"', "");
            if name == path.replace('"', "") {
                // An unknown table is reported where its header is.
                return i + 1;
            }
            table = name;
            continue;
        }
        if assigns(key) || assigns(&quoted) {
            let inside = table == parent || (!table.is_empty() && parent.starts_with(&format!("{table}.")));
            if inside {
                return i + 1;
            }
            if first == 0 {
                first = i + 1;
            }
        }
    }
    first
}

/// The known word closest to `word` by edit distance, when it is close enough to be a typo.
#[must_use]
pub fn suggest<'a>(word: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1) + 1;
    let word = word.to_lowercase();
    known
        .map(|k| {
            let lower = k.to_lowercase();
            // A key cut short (`context` for `context_window`) is as good as a typo.
            let prefix = word.len() >= 4 && (lower.starts_with(&word) || word.starts_with(&lower));
            (if prefix { 1 } else { distance(&word, &lower) }, k)
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Damerau–Levenshtein distance (adjacent swaps count one, as in `defualt`).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspelled_keys_are_found_with_their_line_and_the_closest_key() {
        let text = "defualt_provider = \"openai\"\ntheme = \"dark\"\n\n[providers.openai]\nbase_ur = \"x\"\napi_key_env = \"K\"\ntimeouts = { conect = 3 }\n\n[models.m]\ncontext = 8000\n[[tools]]\nname = \"t\"\ncomand = [\"x\"]\n[mcp.servers.files]\ncommand = [\"a\"]\nenvv = {}\nsomething_else = 1\n";
        let found: Vec<String> = unknown_keys(text).iter().map(ToString::to_string).collect();
        assert_eq!(
            found,
            [
                "line 1: unknown key `defualt_provider` (did you mean `default_provider`?)",
                "line 5: unknown key `providers.openai.base_ur` (did you mean `base_url`?)",
                "line 7: unknown key `providers.openai.timeouts.conect` (did you mean `connect`?)",
                "line 10: unknown key `models.m.context` (did you mean `context_window`?)",
                "line 13: unknown key `tools.comand` (did you mean `command`?)",
                "line 16: unknown key `mcp.servers.files.envv` (did you mean `env`?)",
                "line 17: unknown key `mcp.servers.files.something_else` (ignored)",
            ]
        );
    }

    #[test]
    fn a_remote_mcp_servers_keys_are_known() {
        let text = "[mcp.servers.r]\nurl = \"http://127.0.0.1:1/mcp\"\nbearer_token_env = \"T\"\nheaders = { X-A = \"b\" }\nbearer_token = \"x\"\n";
        let found: Vec<String> = unknown_keys(text).iter().map(ToString::to_string).collect();
        assert_eq!(found, ["line 5: unknown key `mcp.servers.r.bearer_token` (did you mean `bearer_token_env`?)"]);
    }

    #[test]
    fn a_key_unknown_in_one_table_is_pointed_at_in_that_table() {
        let text =
            "[providers.one]\nbase_url = \"x\"\nmodels = [\"a\"]\n[providers.two]\nbase_url = \"y\"\nmodel = \"b\"\n";
        let found: Vec<String> = unknown_keys(text).iter().map(ToString::to_string).collect();
        assert_eq!(found, ["line 6: unknown key `providers.two.model` (did you mean `models`?)"]);
        let text = "[providers.one]\nmodel = \"a\"\n[providers.two]\nmodel = \"b\"\n";
        let lines: Vec<usize> = unknown_keys(text).iter().map(|u| u.line).collect();
        assert_eq!(lines, [2, 4], "each table's own line");
    }

    #[test]
    fn a_clean_file_and_free_form_tables_report_nothing() {
        let text = "[providers.p]\nbase_url = \"x\"\nheaders = { whatever = \"1\" }\nrequest = { reasoning = { effort = \"high\" } }\n[keys]\npalette = \"ctrl+k\"\n";
        assert!(unknown_keys(text).is_empty());
    }

    #[test]
    fn an_mcp_server_s_limits_are_known_and_read() {
        let text =
            "[mcp.servers.files]\ncommand = [\"x\"]\nmax_message_bytes = 1048576\nmax_tools = 50\nmax_tool = 1\n";
        let unknown: Vec<String> = unknown_keys(text).iter().map(ToString::to_string).collect();
        assert_eq!(unknown, ["line 5: unknown key `mcp.servers.files.max_tool` (did you mean `max_tools`?)"]);
        let cfg = crate::config::Config::parse(text, std::path::Path::new("c.toml")).unwrap_or_default();
        let files = &cfg.mcp.servers["files"];
        assert_eq!((files.max_message_bytes, files.max_tools), (Some(1_048_576), Some(50)));
    }

    #[test]
    fn every_provider_key_palaver_reads_is_known() {
        let text = "[providers.p]\nbase_url = \"x\"\napi_key_cmd = \"pass k\"\napi_key_cmd_timeout = 5\nattachments = { images = \"url-only\", files = false }\n";
        let limits: Vec<String> = LIMITS.iter().map(|k| format!("{k} = 1")).collect();
        let text = format!("{text}limits = {{ {} }}\n", limits.join(", "));
        assert!(unknown_keys(&text).is_empty(), "{:?}", unknown_keys(&text));
        assert!(
            crate::config::Config::parse(&text, std::path::Path::new("c.toml")).is_ok(),
            "palaver reads each of them"
        );
    }

    #[test]
    fn suggestions_only_for_near_misses() {
        assert_eq!(suggest("opnai", ["openai", "azure"].into_iter()), Some("openai"));
        assert_eq!(suggest("local", ["openai", "azure"].into_iter()), None);
    }

    #[test]
    fn tool_env_tables_are_known_and_checked() {
        let text = "[tool_env]\ninherit = \"core\"\nexclud = [\"X\"]\n\n[[tools]]\nname = \"t\"\ncommand = [\"x\"]\n\
                    [tools.env]\ninherit = \"none\"\nsett = {}\n";
        let found: Vec<String> = unknown_keys(text).iter().map(|u| u.path.clone()).collect();
        assert_eq!(found, ["tool_env.exclud", "tools.env.sett"]);
        let cfg = crate::config::Config::parse(text, std::path::Path::new("c")).unwrap_or_default();
        assert_eq!(cfg.tool_env.inherit, crate::sys::spawn::Inherit::Core);
        assert_eq!(cfg.tools[0].env.as_ref().map(|e| e.inherit), Some(crate::sys::spawn::Inherit::None));
    }
}
