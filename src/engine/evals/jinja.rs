//! The expressions of templates: `{{ user.name }}`, `{{ name | upper }}`,
//! `{{ x | default("y") }}`, evaluated by minijinja (Jinja2, which Nunjucks follows closely)
//! with Nunjucks' `dump` added. Two environments: a strict one for palaver's own sets (an
//! undefined value is an error naming it) and a lenient one for promptfoo prompts, where
//! Nunjucks renders an undefined value as nothing.

use minijinja::{Environment, UndefinedBehavior, Value as JValue};
use serde_json::{Map, Value};
use std::sync::OnceLock;

fn env(strict: bool) -> &'static Environment<'static> {
    static STRICT: OnceLock<Environment<'static>> = OnceLock::new();
    static LENIENT: OnceLock<Environment<'static>> = OnceLock::new();
    let make = move || {
        let mut e = Environment::new();
        e.set_undefined_behavior(if strict { UndefinedBehavior::Strict } else { UndefinedBehavior::Lenient });
        // Nunjucks' `dump`: the value as JSON (a string in quotes).
        e.add_filter("dump", |v: JValue| serde_json::to_string(&v).unwrap_or_default());
        e
    };
    if strict { STRICT.get_or_init(make) } else { LENIENT.get_or_init(make) }
}

/// Whether `expr` falls back on a `default` (or `d`) filter, so an absent variable is no mistake.
#[must_use]
pub fn has_default(expr: &str) -> bool {
    expr.split('|').skip(1).any(|f| {
        let name = f.trim_start();
        let name = &name[..name.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(name.len())];
        name == "default" || name == "d"
    })
}

/// Checks that `expr` is an expression.
///
/// # Errors
/// The parser's complaint.
pub fn check(expr: &str) -> Result<(), String> {
    env(true).compile_expression(expr).map(drop).map_err(|e| format!("`{{{{ {expr} }}}}`: {}", detail(&e)))
}

/// `expr` evaluated with `vars`, as text: a string as it is, anything else as its JSON.
///
/// # Errors
/// A syntax error, an unknown filter, or a value that is undefined.
pub fn eval(expr: &str, vars: &Map<String, Value>) -> Result<String, String> {
    let shown = || format!("`{{{{ {expr} }}}}`");
    let compiled = env(true).compile_expression(expr).map_err(|e| format!("{}: {}", shown(), detail(&e)))?;
    let v = compiled
        .eval(JValue::from(minijinja::value::Serde(vars)))
        .map_err(|e| format!("{}: {}", shown(), detail(&e)))?;
    if v.is_undefined() || v.is_none() {
        return Err(format!("{} has no value", shown()));
    }
    Ok(text(&v))
}

/// A whole template rendered with `vars` as Nunjucks would: `{% if %}` and `{% for %}` blocks,
/// filters, and an undefined value rendered as nothing.
///
/// # Errors
/// A syntax error or an unknown filter.
pub fn render(template: &str, vars: &Map<String, Value>) -> Result<String, String> {
    env(false).render_str(template, JValue::from(minijinja::value::Serde(vars))).map_err(|e| detail(&e))
}

fn text(v: &JValue) -> String {
    if let Some(s) = v.as_str() {
        return s.to_owned();
    }
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => v.to_string(),
    }
}

/// minijinja's message without its source position (the caller names the row and text).
fn detail(e: &minijinja::Error) -> String {
    match e.detail() {
        Some(d) => format!("{} ({d})", e.kind()),
        None => e.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn nunjucks_filters_and_nested_vars() {
        let v = vars(json!({"user": {"name": "ada"}, "name": " Bob ", "tags": ["a", "b"], "n": 3}));
        assert_eq!(eval("user.name", &v).unwrap(), "ada");
        assert_eq!(eval("user.name | upper", &v).unwrap(), "ADA");
        assert_eq!(eval("name | trim | lower", &v).unwrap(), "bob");
        assert_eq!(eval("missing | default(\"y\")", &v).unwrap(), "y");
        assert_eq!(eval("tags | join(\", \")", &v).unwrap(), "a, b");
        assert_eq!(eval("tags | length", &v).unwrap(), "2");
        assert_eq!(eval("user | dump", &v).unwrap(), r#"{"name":"ada"}"#);
        assert_eq!(eval("tags", &v).unwrap(), r#"["a","b"]"#);
        assert_eq!(eval("n", &v).unwrap(), "3");
        assert!(eval("user.nmae", &v).unwrap_err().contains("user.nmae"));
        assert!(eval("name | shout", &v).unwrap_err().contains("filter"), "{:?}", eval("name | shout", &v));
        assert!(check("x |").is_err());
        assert!(has_default("x | default('a')") && has_default("x|d(1)") && !has_default("x | dump"));
    }

    #[test]
    fn whole_templates_render_as_nunjucks_does() {
        let v = vars(json!({"lang": "fr", "items": ["x", "y"]}));
        let out =
            render("{% if lang == 'fr' %}Bonjour{% endif %} {% for i in items %}{{ i }}{% endfor %}{{ gone }}!", &v);
        assert_eq!(out.unwrap(), "Bonjour xy!");
    }
}
