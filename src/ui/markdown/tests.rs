//! Tests for markdown rendering: layout invariants, element rendering, snapshots.

use super::*;
use ratatui::style::Color;

/// A document touching every element, plus hostile and wide text.
const VARIED: &str = "# Title with *emphasis* and `code`

Some **bold** text, _italic_, ~~struck~~ and a [link](https://example.com/a/very/long/path?with=query&and=more) \
plus <https://auto.example>. Averyveryverylongwordwithoutanyspacesthatmustbebrokenacrosslines \
and 日本語のテキストも折り返す必要があります。 Emoji 🎉🚀 and 👨\u{200d}👩\u{200d}👧 family, e\u{301}.

## Lists

- first item that is long enough to wrap around at narrow widths, really
- second
  - nested *one* with more words to force wrapping here
  - nested two
    1. deep ordered
    2. deep ordered two
- [x] done task
- [ ] open task

10. ten
11. eleven with a long tail of words that wraps

> A quote with **strong** text that goes on and on for a while.
>
> > Nested quote.
> - list in quote

---

| Name | Value | Notes |
|:-----|------:|:-----:|
| alpha | 1 | short |
| beta gamma delta | 12345 | a much longer note that will need wrapping |
| 表格 | 🎉 | x |

```rust
fn main() {
    let s = \"a very long line of code that definitely exceeds the narrow widths we test\";
    println!(\"{s}\");
}
```

    indented code block

```
plain fence
```

Final paragraph with escape \x1b[31mred\x1b[0m and entity &#27;[2J and \u{202e}bidi.
";

const SAMPLE: &str = "# Release notes

Palaver renders **markdown** with `inline code`, [links](https://example.com) and more.

- Streaming responses
- Themes: *dark*, *light*
  1. high contrast
  2. user themes

> Quotes keep a gutter so they stand out
> even when wrapped.

| Feature | Status |
|---------|:------:|
| Tables  | done   |
| Code    | done   |

```rust
fn main() {
    println!(\"hello\");
}
```
";

fn plain(lines: &[Line<'_>]) -> String {
    let mut s = String::new();
    for l in lines {
        for span in &l.spans {
            s.push_str(&span.content);
        }
        s.push('\n');
    }
    s
}

fn check_widths(doc: &str, widths: impl Iterator<Item = u16>, theme: &Theme) {
    for w in widths {
        for (i, line) in render(doc, w, theme).iter().enumerate() {
            assert!(
                line.width() <= usize::from(w),
                "width {w}, line {i} is {}: {:?}",
                line.width(),
                plain(std::slice::from_ref(line))
            );
        }
    }
}

#[test]
fn lines_never_exceed_width() {
    check_widths(VARIED, 10..=300, &Theme::default());
}

#[test]
fn tiny_widths_do_not_panic() {
    assert!(render(VARIED, 0, &Theme::default()).is_empty());
    check_widths(VARIED, 1..10, &Theme::default());
    let deep = "> > > > > > - - - - - deep *nested* text with words\n";
    check_widths(deep, 1..40, &Theme::default());
}

#[test]
fn no_control_characters_reach_spans() {
    for w in [20, 80] {
        for line in render(VARIED, w, &Theme::default()) {
            for span in &line.spans {
                assert!(
                    !span.content.chars().any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
                    "{:?}",
                    span.content
                );
            }
        }
    }
    assert!(
        plain(&render(VARIED, 80, &Theme::default()))
            .contains("Final paragraph with escape red and entity [2J and bidi.")
    );
}

#[test]
fn links_show_url_unless_same_as_text() {
    let t = Theme::default();
    let out = render("[docs](https://d.example) and <https://a.example> and <me@x.org>", 80, &t);
    assert_eq!(plain(&out), "docs (https://d.example) and https://a.example and me@x.org\n");
    let url = out[0].spans.iter().find(|s| s.content.contains("(https://d")).unwrap();
    assert_eq!(url.style, t.style(Role::Dim));
    let docs = out[0].spans.iter().find(|s| s.content == "docs").unwrap();
    assert_eq!(docs.style, t.style(Role::Base).patch(t.style(Role::Link)));
}

#[test]
fn images_show_alt_and_source() {
    let out = plain(&render("![a cat](cat.png)", 80, &Theme::default()));
    assert_eq!(out, "[image: a cat] (cat.png)\n");
}

#[test]
fn nested_lists_hang_their_indents() {
    let out = plain(&render("- one two three four five\n  - alpha beta gamma delta\n1. x\n", 16, &Theme::default()));
    assert_eq!(out, "• one two three\n  four five\n  ◦ alpha beta\n    gamma delta\n\n1. x\n");
}

#[test]
fn loose_lists_get_gaps_and_empty_items_show() {
    let out = plain(&render("- a\n\n- b\n-\n", 20, &Theme::default()));
    // The empty item has no paragraph, so nothing asks for a gap before it.
    assert_eq!(out, "• a\n\n• b\n• \n");
}

#[test]
fn quotes_have_a_gutter() {
    let out = plain(&render("> one two three four\n>\n> five\n", 12, &Theme::default()));
    assert_eq!(out, "│ one two\n│ three four\n│\n│ five\n");
}

#[test]
fn rule_spans_the_width() {
    let out = render("a\n\n---\n\nb", 10, &Theme::default());
    assert_eq!(plain(&out), "a\n\n──────────\n\nb\n");
}

#[test]
fn code_is_highlighted_and_hard_wrapped() {
    let t = Theme::default();
    let doc = "```rust\nfn main() { let value = 1234567890; }\n```\n";
    let out = render(doc, 20, &t);
    assert_eq!(plain(&out), "rust\nfn main() { let valu\ne = 1234567890; }\n");
    let colours: std::collections::HashSet<_> =
        out[1..].iter().flat_map(|l| l.spans.iter().map(|s| s.style.fg)).collect();
    assert!(colours.len() > 2, "{colours:?}");
    assert!(colours.iter().all(|c| matches!(c, Some(Color::Rgb(..)))));
}

#[test]
fn unknown_language_and_no_color_render_plain() {
    let t = Theme::default();
    let code_style = t.style(Role::Base).patch(t.style(Role::CodeBlock));
    for (doc, theme) in [
        ("```klingon\nqapla'\n```\n", t.clone()),
        ("```rust\nfn x() {}\n```\n", Theme::load("dark", None, true).unwrap()),
    ] {
        let out = render(doc, 40, &theme);
        let code_style =
            if theme.no_color() { theme.style(Role::Base).patch(theme.style(Role::CodeBlock)) } else { code_style };
        assert_eq!(out[1].spans.len(), 1, "{out:?}");
        assert_eq!(out[1].spans[0].style, code_style);
    }
}

#[test]
fn unterminated_fence_is_a_code_block() {
    let doc = "Here:\n\n```python\ndef f():\n    return 1";
    let out = plain(&render(doc, 40, &Theme::default()));
    assert_eq!(out, "Here:\n\npython\ndef f():\n    return 1\n");
    assert_eq!(code_blocks(doc), vec![CodeBlock { lang: "python".into(), code: "def f():\n    return 1".into() }]);
}

#[test]
fn code_blocks_lists_fenced_blocks_only() {
    let doc = "```rust,ignore\nlet a\t= 1;\n```\n\n    indented\n\n- item\n\n  ~~~\n  x\x1b]0;t\x07y\n  ~~~\n";
    assert_eq!(
        code_blocks(doc),
        vec![
            CodeBlock { lang: "rust".into(), code: "let a\t= 1;".into() },
            CodeBlock { lang: String::new(), code: "xy".into() },
        ]
    );
    assert!(code_blocks("no code").is_empty());
}

#[test]
fn tasks_tables_and_headings() {
    let out = plain(&render("## Head\n\n- [x] a\n- [ ] b\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", 40, &Theme::default()));
    assert_eq!(out, "Head\n\n• [x] a\n• [ ] b\n\n┌───┬───┐\n│ a │ b │\n├───┼───┤\n│ 1 │ 2 │\n└───┴───┘\n");
}

#[test]
fn oversized_code_is_plain() {
    let doc = format!("```rust\n{}\n```\n", "let x = 1; ".repeat(100));
    let t = Theme::default();
    let out = render(&doc, 300, &t);
    let code_style = t.style(Role::Base).patch(t.style(Role::CodeBlock));
    assert!(out[1..].iter().all(|l| l.spans.iter().all(|s| s.style == code_style)));
}

#[test]
fn snapshot_sample_plain() {
    let t = Theme::default();
    insta::with_settings!({ snapshot_path => "../snapshots" }, {
        insta::assert_snapshot!("sample_width_40", plain(&render(SAMPLE, 40, &t)));
        insta::assert_snapshot!("sample_width_100", plain(&render(SAMPLE, 100, &t)));
    });
}

/// One line per span: its text and the style it carries.
fn styled_runs(lines: &[Line<'_>]) -> String {
    let mut s = String::new();
    for (i, line) in lines.iter().enumerate() {
        for span in &line.spans {
            let st = span.style;
            let colour = |c: Option<Color>| c.map_or_else(|| "-".to_owned(), |c| format!("{c}"));
            s.push_str(&format!(
                "{i:>2} {:<22} fg={} bg={} mods={:?}\n",
                format!("{:?}", span.content),
                colour(st.fg),
                colour(st.bg),
                st.add_modifier
            ));
        }
    }
    s
}

#[test]
#[ignore = "prints the varied document; run with --ignored --nocapture"]
fn show_varied() {
    for w in [30, 80] {
        println!("{}", plain(&render(VARIED, w, &Theme::default())));
    }
}

#[test]
fn snapshot_styles() {
    let doc = "## Title\n\nPlain *em* **strong** ~~gone~~ `code` [link](https://x.example).\n\n> quoted\n\n- item\n\n---\n\n```rust\nlet x = 1;\n```\n";
    insta::with_settings!({ snapshot_path => "../snapshots" }, {
        insta::assert_snapshot!("styled_runs_dark", styled_runs(&render(doc, 60, &Theme::default())));
    });
}
