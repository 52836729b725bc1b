//! An answer checked against a schema, drawn as JSON: pretty-printed, highlighted by the same
//! path as markdown code blocks (`highlight::LineHighlighter`, `markdown::highlighted_rows`),
//! nested levels foldable to `{…}` / `[…] N items`, and the failing value's line marked `✗`
//! with the error under it. Built once per (message, width, fold) by the render cache.

use super::highlight::{LineHighlighter, MAX_LINES, line_too_long};
use super::markdown::{code_base, highlighted_rows, plain_rows};
use super::sanitize::sanitize;
use super::theme::{Role as R, Theme};
use super::wrap;
use crate::app::schema::JsonView;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use serde_json::Value;

/// The gutter before each row: where the `✗` of the failing line goes.
const GUTTER: usize = 2;

/// One printed line: its text and the JSON pointer of the value that starts on it.
type Printed = (String, String);

/// The rows of `view` for `cols` columns; `folded` hides what is nested beyond depth 1.
#[must_use]
pub fn lines(view: &JsonView, folded: bool, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut printed = Vec::new();
    print(&view.value, &Ctx { indent: 0, prefix: String::new(), suffix: "", depth: 0, folded }, "", &mut printed);
    let marked = view.error.as_ref().and_then(|(path, _)| marked_line(&printed, path));
    let hint = if folded { "json · folded · select, Enter to unfold" } else { "json · select, Enter to fold" };
    let mut out = wrap::plain(hint, cols, theme.style(R::Dim));
    let (base, width) = (code_base(theme), cols.saturating_sub(GUTTER).max(1));
    let too_big = printed.len() > MAX_LINES || printed.iter().any(|(t, _)| line_too_long(t));
    let mut hl = if theme.no_color() || too_big { None } else { LineHighlighter::new("json", theme.syntax_theme()) };
    let mark = theme.style(R::Error).add_modifier(Modifier::BOLD);
    for (i, (text, _)) in printed.iter().enumerate() {
        let clean = sanitize(text);
        let rows = match hl.as_mut().and_then(|h| h.line(&format!("{clean}\n"))) {
            Some(l) => highlighted_rows(base, width, l),
            None => {
                // A highlighter that failed once stays off: later lines would lose their state.
                hl = None;
                plain_rows(base, width, &clean)
            }
        };
        let gutter = if marked == Some(i) { Span::styled("✗ ", mark) } else { Span::raw("  ") };
        for row in rows {
            let mut spans = vec![gutter.clone()];
            spans.extend(row);
            out.push(Line::from(spans));
        }
        if marked == Some(i) {
            if let Some((path, why)) = &view.error {
                let at = if path.is_empty() { "(root)" } else { path };
                out.extend(wrap::plain(&sanitize(&format!("  ↑ at {at}: {why}")), cols, theme.style(R::Error)));
            }
        }
    }
    out
}

/// How a value is printed: its indent, what goes before it (a key) and after it (a comma).
struct Ctx<'a> {
    indent: usize,
    prefix: String,
    suffix: &'a str,
    depth: usize,
    folded: bool,
}

impl Ctx<'_> {
    fn child(&self, prefix: String, last: bool) -> Ctx<'static> {
        Ctx {
            indent: self.indent + 1,
            prefix,
            suffix: if last { "" } else { "," },
            depth: self.depth + 1,
            folded: self.folded,
        }
    }
}

/// Prints `v` at `path` as `serde_json`'s pretty printer would (two-space indent), folding
/// containers below the top level when asked.
fn print(v: &Value, c: &Ctx<'_>, path: &str, out: &mut Vec<Printed>) {
    let pad = "  ".repeat(c.indent);
    let (pre, suf) = (&c.prefix, c.suffix);
    let line = |text: String, out: &mut Vec<Printed>| out.push((text, path.to_owned()));
    match v {
        Value::Object(m) if !m.is_empty() => {
            if c.folded && c.depth >= 1 {
                return line(format!("{pad}{pre}{{…}}{suf}"), out);
            }
            line(format!("{pad}{pre}{{"), out);
            for (i, (k, child)) in m.iter().enumerate() {
                let key = format!("{}: ", Value::String(k.clone()));
                print(child, &c.child(key, i + 1 == m.len()), &format!("{path}/{}", pointer_token(k)), out);
            }
            line(format!("{pad}}}{suf}"), out);
        }
        Value::Array(a) if !a.is_empty() => {
            if c.folded && c.depth >= 1 {
                let items = if a.len() == 1 { "item" } else { "items" };
                return line(format!("{pad}{pre}[…] {} {items}{suf}", a.len()), out);
            }
            line(format!("{pad}{pre}["), out);
            for (i, child) in a.iter().enumerate() {
                print(child, &c.child(String::new(), i + 1 == a.len()), &format!("{path}/{i}"), out);
            }
            line(format!("{pad}]{suf}"), out);
        }
        scalar => line(format!("{pad}{pre}{scalar}{suf}"), out),
    }
}

/// A key as a JSON pointer token (RFC 6901: `~` is `~0`, `/` is `~1`).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The line to mark for an error at `path`: the first line of the deepest value shown that
/// holds it (a folded container stands for what it hides).
fn marked_line(printed: &[Printed], path: &str) -> Option<usize> {
    let holds = |p: &str| p.is_empty() || path == p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/'));
    let mut best: Option<(usize, usize)> = None;
    for (i, (_, p)) in printed.iter().enumerate() {
        if holds(p) && best.is_none_or(|(len, _)| p.len() > len) {
            best = Some((p.len(), i));
        }
    }
    best.map(|(_, i)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(value: Value, folded: bool) -> Vec<String> {
        let mut out = Vec::new();
        print(&value, &Ctx { indent: 0, prefix: String::new(), suffix: "", depth: 0, folded }, "", &mut out);
        out.into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn unfolded_is_serde_jsons_pretty_print() {
        let v = json!({"a": [1, {"b": null}], "c": {}, "d": "x\"y", "e": []});
        assert_eq!(text(v.clone(), false).join("\n"), serde_json::to_string_pretty(&v).unwrap());
    }

    #[test]
    fn folding_hides_what_is_nested_beyond_the_top_level() {
        let v = json!({"name": "Ada", "tags": ["a", "b", "c"], "one": [1], "home": {"city": "London"}});
        let t = text(v, true);
        // serde_json keeps keys sorted: `tags` is last, without a comma.
        assert!(t.contains(&"  \"tags\": […] 3 items".to_owned()), "{t:?}");
        assert!(t.contains(&"  \"one\": […] 1 item,".to_owned()), "{t:?}");
        assert!(t.contains(&"  \"home\": {…},".to_owned()), "{t:?}");
        assert!(!t.iter().any(|l| l.contains("London")), "{t:?}");
    }

    #[test]
    fn with_colour_the_json_is_highlighted_as_a_code_block_is() {
        let theme = Theme::load("dark", None, false).unwrap();
        let view = JsonView { value: json!({"name": "Ada", "age": 36}), error: None };
        let rows = lines(&view, false, 80, &theme);
        let age = rows.iter().find(|l| l.to_string().contains("\"age\"")).unwrap();
        let colours: std::collections::HashSet<_> =
            age.spans.iter().filter(|s| !s.content.trim().is_empty()).map(|s| s.style.fg).collect();
        assert!(colours.len() >= 2, "key and number tinted apart: {age:?}");
        // Rows never outgrow the width, the gutter included.
        let narrow = lines(&JsonView { value: json!({"k": "x".repeat(50)}), error: None }, false, 20, &theme);
        assert!(narrow.iter().all(|l| l.width() <= 20), "{narrow:?}");
    }

    #[test]
    fn the_failing_value_or_the_fold_that_hides_it_is_marked() {
        let v = json!({"a/b": 1, "tags": ["x", 2]});
        let mut out = Vec::new();
        let ctx = |folded| Ctx { indent: 0, prefix: String::new(), suffix: "", depth: 0, folded };
        print(&v, &ctx(false), "", &mut out);
        let at = |p: &str| marked_line(&out, p).map(|i| out[i].0.clone());
        assert_eq!(at("/tags/1").as_deref(), Some("    2"));
        assert_eq!(at("/a~1b").as_deref(), Some("  \"a/b\": 1,"));
        assert_eq!(at("").as_deref(), Some("{"));
        assert_eq!(at("/tag").as_deref(), Some("{"), "a prefix that is not a parent is not a match");
        out.clear();
        print(&v, &ctx(true), "", &mut out);
        assert_eq!(marked_line(&out, "/tags/1").map(|i| out[i].0.as_str()), Some("  \"tags\": […] 2 items"));
    }
}
