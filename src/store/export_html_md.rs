//! Markdown to safe HTML for the conversation page (`export_html.rs`): pulldown-cmark events
//! written out by hand so nothing the model wrote becomes markup — raw HTML in the markdown is
//! shown as text, links keep only `http(s)`/`mailto` targets, remote images become links (the
//! page loads nothing), and code blocks are highlighted by syntect with inline styles.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use std::fmt::Write as _;

/// Blocks larger than this are left plain: highlighting is regex-driven and can be slow.
const MAX_HIGHLIGHT_BYTES: usize = 200_000;

pub use crate::text::html::escape;

/// Which link targets a page keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Web and mail addresses (the conversation page).
    WebAndMail,
    /// Web addresses only (the compare report).
    Web,
}

impl Links {
    fn schemes(self) -> &'static [&'static str] {
        match self {
            Self::WebAndMail => &["http://", "https://", "mailto:"],
            Self::Web => &["http://", "https://"],
        }
    }
}

/// A link target that may be followed from the page: the allowed schemes only.
fn safe_href(url: &str, links: Links) -> Option<String> {
    let lower = url.trim().to_ascii_lowercase();
    links.schemes().iter().any(|p| lower.starts_with(p)).then(|| escape(url.trim()))
}

use crate::text::syntax::{syntaxes, themes};

/// A code block: highlighted with inline styles when its language is known and it is small
/// enough, else escaped plain text. syntect escapes the code itself.
#[must_use]
pub fn code_block(lang: &str, code: &str) -> String {
    let token = crate::text::code::lang_token(lang);
    let set = syntaxes();
    let syntax =
        (!token.is_empty() && code.len() <= MAX_HIGHLIGHT_BYTES).then(|| set.find_syntax_by_token(token)).flatten();
    let theme = themes().themes.get("base16-ocean.dark");
    if let (Some(syntax), Some(theme)) = (syntax, theme) {
        if let Ok(html) = syntect::html::highlighted_html_for_string(code, set, syntax, theme) {
            return html.replacen("<pre ", "<pre class=\"code\" ", 1);
        }
    }
    format!("<pre class=\"code\"><code>{}</code></pre>\n", escape(code))
}

/// Renders markdown to HTML in which only the tags written here exist.
#[must_use]
pub fn render(md: &str) -> String {
    render_with(md, Links::WebAndMail)
}

/// As `render`, keeping only the link targets `links` allows.
#[must_use]
pub fn render_with(md: &str, links: Links) -> String {
    let mut out = String::with_capacity(md.len() * 3 / 2);
    let mut code: Option<(String, String)> = None;
    // Inside an image: its alt text is collected and shown as text with the link.
    let mut image: Option<(String, String)> = None;
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for ev in Parser::new_ext(md, opts) {
        if let Some((_, buf)) = code.as_mut() {
            match ev {
                Event::End(TagEnd::CodeBlock) => {
                    let (lang, buf) = code.take().unwrap_or_default();
                    out.push_str(&code_block(&lang, &buf));
                }
                Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => buf.push_str(&t),
                _ => {}
            }
            continue;
        }
        if let Some((_, alt)) = image.as_mut() {
            match ev {
                Event::End(TagEnd::Image) => {
                    let (url, alt) = image.take().unwrap_or_default();
                    image_link(&mut out, &url, &alt, links);
                }
                Event::Text(t) | Event::Code(t) => alt.push_str(&t),
                _ => {}
            }
            continue;
        }
        match ev {
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => l.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
            }
            Event::Start(Tag::Image { dest_url, .. }) => image = Some((dest_url.to_string(), String::new())),
            Event::Start(tag) => start(&mut out, &tag, links),
            Event::End(tag) => end(&mut out, tag),
            Event::Text(t) => out.push_str(&escape(&t)),
            Event::Code(t) => {
                let _ = write!(out, "<code>{}</code>", escape(&t));
            }
            // Raw HTML from a model is text on this page, never markup.
            Event::Html(t) | Event::InlineHtml(t) => {
                let _ = write!(out, "<span class=\"raw-html\">{}</span>", escape(&t));
            }
            Event::SoftBreak => out.push('\n'),
            Event::HardBreak => out.push_str("<br>\n"),
            Event::Rule => out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => out.push_str(if done { "☑ " } else { "☐ " }),
            Event::FootnoteReference(t) => {
                let _ = write!(out, "[{}]", escape(&t));
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                let _ = write!(out, "<code>{}</code>", escape(&t));
            }
        }
    }
    if let Some((lang, buf)) = code {
        // An unfinished reply can stop inside a fence.
        out.push_str(&code_block(&lang, &buf));
    }
    out
}

/// An image the markdown points at: the page loads nothing, so it is a link with its alt text.
fn image_link(out: &mut String, url: &str, alt: &str, links: Links) {
    let label = if alt.is_empty() { "image" } else { alt };
    match safe_href(url, links) {
        Some(href) => {
            let _ = write!(
                out,
                "<a class=\"image-link\" href=\"{href}\" rel=\"noopener noreferrer\">🖼 {}</a>",
                escape(label)
            );
        }
        None => {
            let _ = write!(out, "🖼 {}", escape(label));
        }
    }
}

fn start(out: &mut String, tag: &Tag<'_>, links: Links) {
    let s: String = match tag {
        Tag::Paragraph => "<p>".into(),
        Tag::Heading { level, .. } => format!("<h{}>", heading(*level)),
        Tag::BlockQuote(_) => "<blockquote>".into(),
        Tag::List(Some(n)) => format!("<ol start=\"{n}\">"),
        Tag::List(None) => "<ul>".into(),
        Tag::Item => "<li>".into(),
        Tag::Emphasis => "<em>".into(),
        Tag::Strong => "<strong>".into(),
        Tag::Strikethrough => "<del>".into(),
        Tag::Link { dest_url, .. } => match safe_href(dest_url, links) {
            Some(href) => format!("<a href=\"{href}\" rel=\"noopener noreferrer\">"),
            None => "<a>".into(),
        },
        Tag::Table(_) => "<table>".into(),
        Tag::TableHead => "<thead><tr>".into(),
        Tag::TableRow => "<tr>".into(),
        Tag::TableCell => "<td>".into(),
        _ => String::new(),
    };
    out.push_str(&s);
}

fn end(out: &mut String, tag: TagEnd) {
    let s: String = match tag {
        TagEnd::Paragraph => "</p>\n".into(),
        TagEnd::Heading(level) => format!("</h{}>\n", heading(level)),
        TagEnd::BlockQuote(_) => "</blockquote>\n".into(),
        TagEnd::List(true) => "</ol>\n".into(),
        TagEnd::List(false) => "</ul>\n".into(),
        TagEnd::Item => "</li>\n".into(),
        TagEnd::Emphasis => "</em>".into(),
        TagEnd::Strong => "</strong>".into(),
        TagEnd::Strikethrough => "</del>".into(),
        TagEnd::Link => "</a>".into(),
        TagEnd::Table => "</tbody></table>\n".into(),
        TagEnd::TableHead => "</tr></thead><tbody>".into(),
        TagEnd::TableRow => "</tr>".into(),
        TagEnd::TableCell => "</td>".into(),
        _ => String::new(),
    };
    out.push_str(&s);
}

/// Headings inside a message sit under the page's own (h1, h2): they start at h3.
fn heading(level: HeadingLevel) -> u8 {
    let n = match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    };
    (n + 2).min(6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_in_markdown_stays_text() {
        let html = render("Hi <script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n<b>bold</b>");
        for bad in ["<script", "<img", "<b>"] {
            assert!(!html.contains(bad), "{bad} leaked: {html}");
        }
        assert!(html.contains("&lt;script&gt;</span>alert(1)"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"), "{html}");
    }

    #[test]
    fn links_keep_only_web_targets_and_images_load_nothing() {
        let html = render("[a](javascript:alert(1)) [b](https://example.com/?q=\"x\") ![cat](https://e.com/c.png)");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(
            html.contains("<a href=\"https://example.com/?q=&quot;x&quot;\" rel=\"noopener noreferrer\">"),
            "{html}"
        );
        let mail = "[m](mailto:a@b.c)";
        assert!(render(mail).contains("href=\"mailto:a@b.c\""));
        assert!(render_with(mail, Links::Web).contains("<a>m</a>"), "the report keeps web targets only");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("🖼 cat"), "{html}");
    }

    #[test]
    fn markdown_becomes_markup_and_code_is_highlighted_inline() {
        let html =
            render("# Title\n\n**bold** and `x<y`\n\n- one\n- two\n\n```rust\nfn main() { let a = \"<b>\"; }\n```\n");
        assert!(html.contains("<h3>Title</h3>"), "{html}");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("<code>x&lt;y</code>"), "{html}");
        assert!(html.contains("<li>one</li>"), "{html}");
        assert!(html.contains("<pre class=\"code\" style="), "highlighted with inline styles: {html}");
        assert!(html.contains("<span style="), "{html}");
        assert!(!html.contains("\"<b>\""), "code is escaped: {html}");
        assert!(!html.contains("class=\"syntect"), "no class-based styling: {html}");
    }

    #[test]
    fn unknown_or_unterminated_code_is_plain_and_escaped() {
        assert_eq!(code_block("nosuchlang", "<x>"), "<pre class=\"code\"><code>&lt;x&gt;</code></pre>\n");
        let html = render("```\n<script>\n");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }
}
