//! A templated line of a prompt set made into its prompts: the `vars` table read (inline or
//! from its file), every placeholder checked against the table's columns, then one prompt per
//! row with its variables filled in and kept.

use super::prompts::{PromptItem, SetFiles};
use super::template::{self, Row};
use serde_json::Value;
use std::collections::BTreeSet;

/// A name from the set, sanitised and cut short for a message.
fn clip(name: &str) -> String {
    let short: String = name.chars().take(200).collect();
    crate::text::sanitize::sanitize(&short).into_owned()
}

/// The placeholders of every string in `v`.
fn json_placeholders<'a>(v: &'a Value, out: &mut Vec<&'a str>) -> Result<(), String> {
    match v {
        Value::String(s) => out.extend(template::placeholders(s)?),
        Value::Array(a) => a.iter().try_for_each(|x| json_placeholders(x, out))?,
        Value::Object(o) => o.values().try_for_each(|x| json_placeholders(x, out))?,
        _ => {}
    }
    Ok(())
}

/// Every placeholder of the line's templated fields.
fn used(item: &PromptItem) -> Result<Vec<&str>, String> {
    let mut out = template::placeholders(&item.prompt)?;
    out.extend(template::placeholders(item.system.as_deref().unwrap_or_default())?);
    out.extend(template::placeholders(&item.id)?);
    for a in &item.attach {
        out.extend(template::placeholders(a)?);
    }
    for v in item.expect_raw.iter().chain(&item.conversation) {
        json_placeholders(v, &mut out)?;
    }
    Ok(out)
}

/// The prompts of a templated line, one per row of `vars` (a list of objects, or a file name).
///
/// # Errors
/// A file that cannot be read or is malformed (its line named), a placeholder no column
/// provides, a row without a value the template uses.
pub fn rows(item: &PromptItem, vars: &Value, files: SetFiles<'_>) -> Result<Vec<PromptItem>, String> {
    let table = match vars {
        Value::String(name) => {
            let text = files(name).map_err(|e| format!("vars {e}"))?.ok_or_else(|| {
                format!("cannot read the vars file {}: there is no such file in the prompt set's folder", clip(name))
            })?;
            template::from_file(name, &text)?
        }
        other => template::inline(other)?,
    };
    let known: BTreeSet<&str> = table.iter().flat_map(|r| r.vars.keys().map(String::as_str)).collect();
    // `{{a.b}}` is the column `a.b`, else `b` of the column `a`.
    let has = |n: &str| known.contains(n) || n.split_once('.').is_some_and(|(root, _)| known.contains(root));
    if let Some(name) = used(item)?.into_iter().find(|n| !has(n)) {
        let have: Vec<&str> = known.into_iter().collect();
        return Err(format!("unknown variable `{name}` (the vars have: {})", have.join(", ")));
    }
    table.iter().enumerate().map(|(i, row)| one(item, row, i + 1)).collect()
}

/// The line's prompt for row `n`.
fn one(item: &PromptItem, row: &Row, n: usize) -> Result<PromptItem, String> {
    let id = if item.id.contains("{{") { template::expand(&item.id, row)? } else { format!("{}.{n}", item.id) };
    let system = item.system.as_deref().map(|s| template::expand(s, row)).transpose()?;
    let attach = item.attach.iter().map(|a| template::expand(a, row)).collect::<Result<_, _>>()?;
    let expect_raw = item.expect_raw.as_ref().map(|e| template::expand_json(e, row)).transpose()?;
    let conversation = item.conversation.as_ref().map(|c| template::expand_json(c, row)).transpose()?;
    Ok(PromptItem {
        line: item.line,
        id,
        prompt: template::expand(&item.prompt, row)?,
        conversation,
        system,
        attach,
        expect_raw,
        expect: None,
        vars: Some(Value::Object(row.vars.clone())),
        threshold: item.threshold,
    })
}

#[cfg(test)]
mod tests {
    use super::super::prompts::{parse, parse_with};
    use serde_json::json;

    #[test]
    fn an_inline_table_makes_one_prompt_per_row() {
        let set = parse(concat!(
            r#"{"prompt":"Say {{word}} in {{lang}}","id":"say","system":"You speak {{lang}}.","#,
            r#""attach":"{{lang}}.txt","expect":{"contains":"{{word}}"},"vars":[{"word":"hi","lang":"fr"},{"word":"bye","lang":"de"}]}"#,
            "\n{\"prompt\":\"plain {{not a template}}\"}\n"
        ))
        .unwrap();
        assert_eq!(set.len(), 3);
        assert_eq!((set[0].id.as_str(), set[0].prompt.as_str()), ("say.1", "Say hi in fr"));
        assert_eq!(set[1].system.as_deref(), Some("You speak de."));
        assert_eq!(set[1].attach, vec!["de.txt"]);
        assert_eq!(set[1].expect_raw, Some(json!({"contains": "bye"})));
        assert!(set[1].expect.as_ref().unwrap().run("bye now").iter().all(|c| c.pass));
        assert_eq!(set[0].vars, Some(json!({"word": "hi", "lang": "fr"})));
        assert_eq!((set[2].prompt.as_str(), set[2].vars.clone()), ("plain {{not a template}}", None));
    }

    #[test]
    fn nested_vars_and_filters_fill_a_line() {
        let set = parse(concat!(
            r#"{"prompt":"Hi {{ user.name | upper }}, {{ city | default('nowhere') }} {{ tags | join('+') }}","#,
            r#""expect":{"contains":"{{ user.name }}"},"vars":[{"user":{"name":"ada"},"tags":["a","b"]},{"user":{"name":"bo"},"city":"Oslo","tags":[]}]}"#
        ))
        .unwrap();
        assert_eq!(set[0].prompt, "Hi ADA, nowhere a+b");
        assert_eq!(set[1].prompt, "Hi BO, Oslo ");
        assert_eq!(set[0].expect_raw, Some(json!({"contains": "ada"})));
        let e = parse(r#"{"prompt":"{{ usr.name | upper }}","vars":[{"user":{"name":"a"}}]}"#).unwrap_err();
        assert_eq!(e.message, "unknown variable `usr` (the vars have: user)");
        let e = parse(r#"{"prompt":"{{ user.nmae }}","vars":[{"user":{"name":"a"}}]}"#).unwrap_err();
        assert!(e.message.starts_with("vars row 1: `{{ user.nmae }}`"), "{e}");
        let e = parse(r#"{"prompt":"{{ user | shout }}","vars":[{"user":"a"}]}"#).unwrap_err();
        assert!(e.message.contains("filter"), "{e}");
    }

    #[test]
    fn a_templated_id_names_each_row() {
        let set = parse(r#"{"prompt":"{{q}}","id":"q-{{n}}","vars":[{"q":"a","n":1},{"q":"b","n":2}]}"#).unwrap();
        assert_eq!(set.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), ["q-1", "q-2"]);
        let twice = parse(r#"{"prompt":"{{q}}","id":"same{{x}}","vars":[{"q":"a","x":""},{"q":"b","x":""}]}"#);
        assert!(twice.unwrap_err().message.contains("used twice"));
    }

    #[test]
    fn unknown_and_missing_variables_name_the_line_and_row() {
        let e = parse("{\"prompt\":\"a\"}\n{\"prompt\":\"{{x}} {{y}}\",\"vars\":[{\"x\":1}]}").unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (2, "unknown variable `y` (the vars have: x)"));
        let e = parse(r#"{"prompt":"{{x}} {{y}}","vars":[{"x":1,"y":2},{"x":1}]}"#).unwrap_err();
        assert_eq!(e.message, "vars row 2: missing variable `y`");
        let e = parse(r#"{"prompt":"{{x}}","vars":{"x":1}}"#).unwrap_err();
        assert!(e.message.starts_with("`vars` must be a list"), "{e}");
        let e = parse(r#"{"prompt":"{{x","vars":[{"x":1}]}"#).unwrap_err();
        assert!(e.message.contains("without"), "{e}");
    }

    #[test]
    fn a_vars_file_is_read_through_the_callback() {
        let files = |name: &str| match name {
            "cases.csv" => Ok(Some("lang,word\nfr,salut\nde,\"tschüss\"\n".to_owned())),
            "bad.csv" => Ok(Some("lang,word\nfr\n".to_owned())),
            "../x.csv" => Err("../x.csv: /x.csv is outside the prompt set's folder".to_owned()),
            _ => Ok(None),
        };
        let set = parse_with(r#"{"prompt":"{{word}} ({{lang}})","vars":"cases.csv"}"#, &files).unwrap();
        assert_eq!(set.iter().map(|p| p.prompt.as_str()).collect::<Vec<_>>(), ["salut (fr)", "tschüss (de)"]);
        let e = parse_with(r#"{"prompt":"{{word}}","vars":"bad.csv"}"#, &files).unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (1, "bad.csv line 2: 1 fields, the header has 2"));
        let e = parse_with(r#"{"prompt":"{{word}}","vars":"gone.csv"}"#, &files).unwrap_err();
        assert_eq!(e.message, "cannot read the vars file gone.csv: there is no such file in the prompt set's folder");
        let e = parse_with(r#"{"prompt":"{{word}}","vars":"../x.csv"}"#, &files).unwrap_err();
        assert!(e.message.contains("outside the prompt set's folder"), "{e}");
        assert!(parse(r#"{"prompt":"{{w}}","vars":"cases.csv"}"#).is_err(), "a set without a folder names no file");
    }
}
