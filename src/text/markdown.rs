//! Escaping for the Markdown files palaver writes (the compare report, `history export
//! --format md`): model, tool, user or file text must show as text in a viewer that renders the
//! `.md`, never as raw HTML (`<script>`, `<img onerror=…>`) or as a `javascript:` link. The HTML
//! pages escape with `html::escape`; this is its Markdown twin.

use pulldown_cmark::{Event, Parser, Tag};

/// Where the text goes in the Markdown written around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Whole blocks of Markdown (an answer, a prompt): its formatting and code stay, raw HTML
    /// is escaped outside code and links to script URLs are no longer links.
    Block,
    /// One line of a heading or a table cell: everything that could be markup is escaped, line
    /// breaks become spaces and pipes are escaped, so the table holds.
    Line,
}

/// `s` made safe to write at `place` in a Markdown file.
#[must_use]
pub fn escape(s: &str, place: Place) -> String {
    match place {
        Place::Line => line(s),
        Place::Block => block(s),
    }
}

fn line(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            '[' => out.push_str("\\["),
            ']' => out.push_str("\\]"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Whether a link target runs script or carries a page: `javascript:`, `vbscript:` or `data:`,
/// however it is cased or spaced (browsers drop tabs and newlines inside a scheme).
#[must_use]
pub fn is_script_url(url: &str) -> bool {
    let squeezed: String = url.chars().filter(|c| !c.is_whitespace() && !c.is_control()).take(16).collect();
    let lower = squeezed.to_ascii_lowercase();
    ["javascript:", "vbscript:", "data:"].iter().any(|s| lower.starts_with(s))
}

/// Markdown kept as Markdown: `<` and `&` escaped everywhere but in code (where the viewer shows
/// them as they are), and the `[` of a link to a script URL escaped, so it is text. Escaping
/// changes how the rest parses (a line that was an HTML block becomes a paragraph, and the
/// link or indented line after it becomes live), so it is parsed again until nothing changes;
/// text that keeps changing is escaped whole.
fn block(s: &str) -> String {
    let mut out = pass(s, true);
    for _ in 0..4 {
        let next = pass(&out, false);
        if next == out {
            return out;
        }
        out = next;
    }
    s.chars().fold(String::with_capacity(s.len()), |mut o, c| {
        match c {
            '<' => o.push_str("&lt;"),
            '&' => o.push_str("&amp;"),
            '[' => o.push_str("\\["),
            c => o.push(c),
        }
        o
    })
}

/// One pass of [`block`]: `&` is escaped on the first only (a second would escape the first's).
fn pass(s: &str, amp: bool) -> String {
    let mut code: Vec<std::ops::Range<usize>> = Vec::new();
    let mut unlink: Vec<usize> = Vec::new();
    for (event, range) in Parser::new_ext(s, super::code::options()).into_offset_iter() {
        match event {
            Event::Code(_) | Event::Start(Tag::CodeBlock(_)) => code.push(range),
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) if is_script_url(&dest_url) => {
                // Every `[` of `[text](url)`, `![alt](url)` or `[text][ref]` (a lone `[ref]` is a
                // link too); an autolink's `<` is escaped anyway.
                unlink.extend(s[range.clone()].match_indices('[').map(|(at, _)| range.start + at));
            }
            _ => {}
        }
    }
    unlink.sort_unstable();
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    let mut next_code = code.iter().peekable();
    for (i, c) in s.char_indices() {
        while next_code.peek().is_some_and(|r| r.end <= i) {
            next_code.next();
        }
        if next_code.peek().is_some_and(|r| r.contains(&i)) {
            out.push(c);
            continue;
        }
        match c {
            '<' => out.push_str("&lt;"),
            '&' if amp => out.push_str("&amp;"),
            '[' if unlink.binary_search(&i).is_ok() => out.push_str("\\["),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a viewer would run or follow in `md`: its raw HTML and its script links.
    fn dangers(md: &str) -> Vec<String> {
        Parser::new_ext(md, super::super::code::options())
            .filter_map(|e| match e {
                Event::Html(h) | Event::InlineHtml(h) => Some(h.to_string()),
                Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) if is_script_url(&dest_url) => {
                    Some(dest_url.to_string())
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn raw_html_never_survives_outside_code() {
        let md =
            "Hi <script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n`<b>` and\n\n```html\n<p>kept</p>\n```\n";
        assert!(dangers(md).len() >= 2, "the test has teeth");
        let out = escape(md, Place::Block);
        assert_eq!(dangers(&out), Vec::<String>::new(), "{out}");
        assert!(out.contains("&lt;script>") && out.contains("&lt;img src=x"), "{out}");
        assert!(out.contains("`<b>`") && out.contains("<p>kept</p>"), "code shows as it is: {out}");
        assert_eq!(escape("a **b** > c\n\n- d", Place::Block), "a **b** > c\n\n- d", "Markdown stays");
    }

    #[test]
    fn script_links_become_text() {
        for md in [
            "[click](javascript:alert(1))",
            "[click]( JavaScript:alert(1) )",
            "![x](data:text/html,<script>alert(1)</script>)",
            "[click][r]\n\n[r]: vbscript:msgbox",
            "<javascript:alert(1)>",
            "[click](&#106;avascript:alert(1))",
            "<script>x</script> [click](javascript:alert(3))",
            "<script>\n</script>\n    <img src=x onerror=alert(1)>",
        ] {
            assert!(!dangers(md).is_empty(), "the test has teeth: {md}");
            let out = escape(md, Place::Block);
            assert_eq!(dangers(&out), Vec::<String>::new(), "{md} → {out}");
        }
        assert!(escape("[ok](https://example.com)", Place::Block).starts_with("[ok]"), "other links stay");
    }

    #[test]
    fn a_line_is_one_line_of_text() {
        assert_eq!(escape("a|b\n<i>[x](javascript:y)", Place::Line), "a\\|b &lt;i&gt;\\[x\\](javascript:y)");
        for s in ["    <script>x</script>", "``` <script>", "<img onerror=x>", "[a](javascript:b)"] {
            let md = format!("| a |\n|---|\n| {} |\n", escape(s, Place::Line));
            assert_eq!(dangers(&md), Vec::<String>::new(), "{s}: {md}");
        }
    }
}
