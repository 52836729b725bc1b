//! Templated prompts: `{{name}}` placeholders filled from a `vars` table, one test per row; a
//! placeholder may also be an expression with Nunjucks' filters (`{{ user.name | upper }}`,
//! `{{ x | default("y") }}`: see `jinja.rs`). A
//! table is inline (a list of objects), or a CSV file (a header row names the variables) or a
//! JSON Lines file (one object a line). Mistakes name the row's line in its file: a malformed
//! row, a row without a variable the template uses, a placeholder no column provides.

use serde_json::{Map, Value};

/// One row of a table: its variables (in column order) and where it came from, for messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// "row 2" of an inline table, "line 5" of a file.
    pub at: String,
    pub vars: Map<String, Value>,
}

/// A placeholder's name: letters, digits, `_`, `-` and `.`.
fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The variables the placeholders of `s` need, in order (repeats kept): a plain name as it is
/// written (`{{first-name}}`, `{{a.b}}`: a column of that name), else the expression's root
/// variable (`user` of `{{ user.name | upper }}`); one with a `default` filter needs none.
///
/// # Errors
/// A `{{` without its `}}`, or a placeholder that is neither a name nor an expression on one.
pub fn placeholders(s: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(at) = rest.find("{{") {
        let tail = &rest[at + 2..];
        let Some(end) = tail.find("}}") else { return Err(format!("`{{{{` without `}}}}` in {s:?}")) };
        let name = tail[..end].trim();
        if is_name(name) {
            out.push(name);
        } else {
            let root = expression_root(name)?;
            if !super::jinja::has_default(name) {
                out.push(root);
            }
        }
        rest = &tail[end + 2..];
    }
    Ok(out)
}

/// The variable an expression starts from (`user` of `user.name | upper`), the expression
/// checked to parse.
fn expression_root(expr: &str) -> Result<&str, String> {
    let end = expr.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(expr.len());
    let (root, after) = expr.split_at(end);
    let starts_well = root.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !starts_well || !(after.is_empty() || after.trim_start().starts_with(['.', '[', '|'])) {
        return Err(format!(
            "`{{{{{expr}}}}}` is not a variable name (letters, digits, _ - .) nor an expression on one (`{{{{ user.name | upper }}}}`)"
        ));
    }
    super::jinja::check(expr)?;
    Ok(root)
}

/// A variable's value as text: a string as it is, anything else as its JSON.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A row's variables on one line for a report, `name = value · name = value` (`None` for a
/// prompt that was not templated).
#[must_use]
pub fn vars_line(vars: Option<&Value>) -> Option<String> {
    let Value::Object(o) = vars? else { return None };
    Some(o.iter().map(|(k, v)| format!("{k} = {}", text_of(v))).collect::<Vec<_>>().join(" · "))
}

/// `s` with each placeholder replaced by its row's value (an expression's by its value).
///
/// # Errors
/// A placeholder the row has no value for (absent or null), named with the row; an expression
/// that does not evaluate.
pub fn expand(s: &str, row: &Row) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        let Some(end) = tail.find("}}") else { return Err(format!("`{{{{` without `}}}}` in {s:?}")) };
        let name = tail[..end].trim();
        let nested = |n: &str| n.split_once('.').is_some_and(|(root, _)| row.vars.contains_key(root));
        if is_name(name) && (row.vars.contains_key(name) || !nested(name)) {
            match row.vars.get(name).filter(|v| !v.is_null()) {
                Some(v) => out.push_str(&text_of(v)),
                None => return Err(format!("{}: missing variable `{name}`", row.at)),
            }
        } else {
            let root = expression_root(name)?;
            if !super::jinja::has_default(name) && row.vars.get(root).is_none_or(Value::is_null) {
                return Err(format!("{}: missing variable `{root}`", row.at));
            }
            out.push_str(&super::jinja::eval(name, &row.vars).map_err(|e| format!("{}: {e}", row.at))?);
        }
        rest = &tail[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Every string inside `v` (not the keys) expanded with `row`.
///
/// # Errors
/// As [`expand`].
pub fn expand_json(v: &Value, row: &Row) -> Result<Value, String> {
    Ok(match v {
        Value::String(s) => Value::String(expand(s, row)?),
        Value::Array(a) => Value::Array(a.iter().map(|x| expand_json(x, row)).collect::<Result<_, _>>()?),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| Ok((k.clone(), expand_json(x, row)?))).collect::<Result<_, String>>()?)
        }
        other => other.clone(),
    })
}

/// An inline table: a list of objects.
///
/// # Errors
/// Anything but a non-empty list of objects.
pub fn inline(v: &Value) -> Result<Vec<Row>, String> {
    let Value::Array(rows) = v else {
        return Err("`vars` must be a list of objects, or the name of a CSV or JSON Lines file".into());
    };
    if rows.is_empty() {
        return Err("`vars` has no rows".into());
    }
    rows.iter()
        .enumerate()
        .map(|(i, r)| match r {
            Value::Object(o) => Ok(Row { at: format!("vars row {}", i + 1), vars: o.clone() }),
            _ => Err(format!("vars row {}: not an object", i + 1)),
        })
        .collect()
}

/// A table read from a file named `name`: JSON Lines when its name ends in `.jsonl`, `.ndjson`
/// or `.json`, else CSV.
///
/// # Errors
/// A malformed row, named by its line in `name`; a file without rows.
pub fn from_file(name: &str, text: &str) -> Result<Vec<Row>, String> {
    let lower = name.to_ascii_lowercase();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rows = if [".jsonl", ".ndjson", ".json"].iter().any(|e| lower.ends_with(e)) {
        json_lines(name, text)?
    } else {
        csv(name, text)?
    };
    if rows.is_empty() {
        return Err(format!("{name}: no rows"));
    }
    Ok(rows)
}

fn json_lines(name: &str, text: &str) -> Result<Vec<Row>, String> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let l = l.trim_end_matches('\r');
        if l.trim().is_empty() {
            continue;
        }
        let at = format!("{name} line {}", i + 1);
        match serde_json::from_str::<Value>(l) {
            Ok(Value::Object(vars)) => out.push(Row { at, vars }),
            Ok(_) => return Err(format!("{at}: not a JSON object")),
            Err(e) => return Err(format!("{at}: not JSON ({e})")),
        }
    }
    Ok(out)
}

/// CSV as RFC 4180 has it: commas, fields in double quotes (`""` a quote inside, line breaks
/// allowed); the first record names the columns, each later one is a row of as many fields.
fn csv(name: &str, text: &str) -> Result<Vec<Row>, String> {
    let records = csv_records(name, text)?;
    let Some((_, header)) = records.first() else { return Ok(Vec::new()) };
    let header: Vec<String> = header.iter().map(|h| h.trim().to_owned()).collect();
    if let Some(h) = header.iter().find(|h| !is_name(h)) {
        return Err(format!("{name} line 1: the column `{h}` is not a variable name (letters, digits, _ - .)"));
    }
    if let Some((i, h)) = header.iter().enumerate().find(|(i, h)| header[..*i].contains(h)) {
        return Err(format!(
            "{name} line 1: the column `{h}` is named twice (columns {} and {})",
            header[..i].iter().position(|o| o == h).map_or(0, |p| p + 1),
            i + 1
        ));
    }
    let mut out = Vec::new();
    for (line, fields) in &records[1..] {
        let at = format!("{name} line {line}");
        if fields.len() != header.len() {
            return Err(format!("{at}: {} fields, the header has {}", fields.len(), header.len()));
        }
        let vars = header.iter().cloned().zip(fields.iter().map(|f| Value::String(f.clone()))).collect();
        out.push(Row { at, vars });
    }
    Ok(out)
}

/// The records of a CSV text with the line each starts on; blank lines are skipped.
///
/// # Errors
/// A quoted field that is never closed.
pub fn csv_records(name: &str, text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        let start = line;
        let mut fields = vec![String::new()];
        let mut quoted = false;
        let mut blank = true;
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    push(&mut fields, '"');
                }
                (true, '"') => quoted = false,
                (false, '"') => {
                    quoted = true;
                    blank = false;
                }
                (false, ',') => {
                    fields.push(String::new());
                    blank = false;
                }
                (false, '\r') if chars.peek() == Some(&'\n') => {}
                (false, '\n') => {
                    line += 1;
                    break;
                }
                (q, c) => {
                    if c == '\n' && q {
                        line += 1;
                    }
                    blank = false;
                    push(&mut fields, c);
                }
            }
        }
        if quoted {
            return Err(format!("{name} line {start}: a quoted field is never closed"));
        }
        if !blank {
            out.push((start, fields));
        }
    }
    Ok(out)
}

/// Adds `c` to the last field of a record.
fn push(fields: &mut [String], c: char) {
    if let Some(f) = fields.last_mut() {
        f.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Row {
        Row { at: "vars row 1".into(), vars: v.as_object().unwrap().clone() }
    }

    #[test]
    fn placeholders_are_found_and_filled() {
        assert_eq!(placeholders("a {{x}} b {{ y }} {{x}}").unwrap(), vec!["x", "y", "x"]);
        let r = row(json!({"x": "1", "y": 2, "z": true}));
        assert_eq!(expand("a {{x}} b {{ y }} {{z}}!", &r).unwrap(), "a 1 b 2 true!");
        assert_eq!(expand("no placeholders", &r).unwrap(), "no placeholders");
        assert_eq!(expand_json(&json!({"contains": ["{{x}}", 3]}), &r).unwrap(), json!({"contains": ["1", 3]}));
        assert_eq!(vars_line(Some(&Value::Object(r.vars))).as_deref(), Some("x = 1 · y = 2 · z = true"));
        assert_eq!(vars_line(None), None);
    }

    #[test]
    fn bad_placeholders_and_missing_values_are_errors() {
        assert!(placeholders("a {{x").unwrap_err().contains("without"));
        assert!(placeholders("a {{x y}}").unwrap_err().contains("not a variable name"));
        let r = row(json!({"x": null}));
        assert_eq!(expand("{{x}}", &r).unwrap_err(), "vars row 1: missing variable `x`");
        assert_eq!(expand("{{w}}", &r).unwrap_err(), "vars row 1: missing variable `w`");
    }

    #[test]
    fn inline_tables_are_lists_of_objects() {
        let rows = inline(&json!([{"a": "1"}, {"a": "2"}])).unwrap();
        assert_eq!((rows.len(), rows[1].at.as_str()), (2, "vars row 2"));
        assert!(inline(&json!({"a": 1})).is_err());
        assert!(inline(&json!([])).is_err());
        assert_eq!(inline(&json!([{"a": 1}, 3])).unwrap_err(), "vars row 2: not an object");
    }

    #[test]
    fn csv_files_quote_escape_and_span_lines() {
        let rows =
            from_file("t.csv", "lang,text\r\nfr,\"hello, \"\"you\"\"\"\n\nde,\"two\nlines\"\nit,ciao\n").unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].vars["text"], json!("hello, \"you\""));
        assert_eq!(rows[1].vars["text"], json!("two\nlines"));
        assert_eq!(rows[1].at, "t.csv line 4");
        assert_eq!(rows[2].at, "t.csv line 6", "the line a record starts on, after a quoted line break");
    }

    #[test]
    fn malformed_files_name_their_line() {
        assert_eq!(from_file("t.csv", "a,b\n1,2\n3\n").unwrap_err(), "t.csv line 3: 1 fields, the header has 2");
        assert_eq!(
            from_file("t.csv", "word,n,word\nhi,1,ho\n").unwrap_err(),
            "t.csv line 1: the column `word` is named twice (columns 1 and 3)"
        );
        assert!(from_file("t.csv", "a,b\n1,\"2\n").unwrap_err().starts_with("t.csv line 2: a quoted field"));
        assert!(from_file("t.csv", "a b,c\n1,2\n").unwrap_err().starts_with("t.csv line 1: the column `a b`"));
        assert_eq!(from_file("t.csv", "a,b\n").unwrap_err(), "t.csv: no rows");
        assert!(
            from_file("v.jsonl", "{\"a\":1}\n\n[1]\n").unwrap_err().starts_with("v.jsonl line 3: not a JSON object")
        );
        assert!(from_file("v.jsonl", "{\"a\":").unwrap_err().starts_with("v.jsonl line 1: not JSON"));
        let rows = from_file("v.JSONL", "{\"a\":1}\n{\"a\":\"x\"}\n").unwrap();
        assert_eq!(rows[1].at, "v.JSONL line 2");
    }
}
