use super::*;
use crate::ui::sanitize::sanitize;

/// What `stream_md` shows for `lines` rendered whole.
pub(crate) fn whole(lines: &[String], cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    let text = lines.join("\n");
    let text = sanitize(&text);
    if text.trim().is_empty() {
        return Vec::new();
    }
    wrap::fit(markdown::render(&text, u16::try_from(cols).unwrap_or(u16::MAX), theme), cols)
}

pub(crate) fn rows(block: &dyn GrowingBlock) -> Vec<Line<'static>> {
    (0..block.len()).map(|i| block.get(i).cloned().unwrap_or_default()).collect()
}

/// A small deterministic generator (xorshift).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % n as u64).unwrap_or(0)
    }

    pub(crate) fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

pub(crate) const WORDS: &[&str] = &[
    "word",
    "two words",
    "a longer run of several short words here",
    "supercalifragilisticexpialidocious_and_then_some_more",
    "漢字かな混じり文の例です",
    "e\u{301}te\u{301} 👍🏽 👨\u{200d}👩\u{200d}👧 ok",
    "*em* and **strong**",
    "`code span` here",
    "[link](http://example.com/a/b) after",
    "~~struck~~ text",
    "trailing  spaces  ",
    "x",
];

/// Lines of a list: items (mostly of one kind), continuations, nested lists, and lines that
/// end the list.
fn line(rng: &mut Rng, marker: &str) -> String {
    let text = rng.pick(WORDS);
    let indent = " ".repeat(marker.len());
    match rng.below(20) {
        0..=6 => format!("{marker}{text}"),
        7 => format!("{}{text}", rng.pick(&["- ", "* ", "+ ", "1. ", "2) ", "10. "])),
        8 | 9 => format!("{indent}{text}"),
        10 => format!("{indent}{}{text}", rng.pick(&["- ", "* ", "3. ", "1) "])),
        11 => format!("{indent}  {}{text}", rng.pick(&["- ", "* ", "1. "])),
        12 => text.to_owned(),
        13 => format!("{marker}[ ] {text}"),
        14 => {
            format!("{indent}{}", rng.pick(&["# nested heading", "> quoted", "```", "---", "| a | b |", "|---|---|"]))
        }
        15 => rng.pick(&["# heading", "> quote", "```", "---", "***", "    indented", "<div>", "=== "]).to_owned(),
        16 => format!("{marker}{}", rng.pick(&["# heading in item", "> quote in item", "```rust", "- nested at once"])),
        17 => marker.trim_end().to_owned(),
        18 => format!("{}{text}", rng.pick(&[" ", "\t", "\t- ", "   ", "<b>html</b> "])),
        _ => format!("{marker}{text} {}", rng.pick(WORDS)),
    }
}

/// Pushes random lists line by line and compares every step with the whole render; a line is
/// refused exactly when the whole parse ends the list before it.
#[test]
fn random_lists_match_the_whole_render_at_every_line() {
    let themes = [Theme::default(), Theme::load("dark", None, true).unwrap()];
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let markers = ["- ", "* ", "+ ", "1. ", "3) ", "9. ", "0. ", "98. "];
    let mut counts = (0, 0);
    for case in 0..300 {
        let marker = markers[case % markers.len()];
        let theme = &themes[case % 2];
        let first = format!("{marker}{}", rng.pick(WORDS));
        let lines: Vec<String> =
            std::iter::once(first).chain((0..rng.below(25)).map(|_| line(&mut rng, marker))).collect();
        for cols in [1 + case % 40, [80, 120, 5][case % 3]] {
            let (a, r) = check(&lines, cols, theme);
            counts = (counts.0 + a, counts.1 + r);
        }
    }
    // The generator exercises both outcomes.
    assert!(counts.0 > 1000 && counts.1 > 200, "{counts:?}");
}

/// Returns how many lines were accepted and refused.
fn check(lines: &[String], cols: usize, theme: &Theme) -> (usize, usize) {
    let mut counts = (0, 0);
    let mut block = ListBlock::start(&lines[0], cols, theme).expect("a list item");
    let mut accepted = vec![lines[0].clone()];
    assert_eq!(rows(&block), whole(&accepted, cols, theme), "{accepted:?} at {cols}");
    for line in &lines[1..] {
        push_and_compare(&mut block, &mut accepted, line, cols, theme, &mut counts);
    }
    counts
}

/// Offers `line` to `block`, which holds `accepted`: an accepted line must keep the whole parse
/// one block and the rows those of the whole render; a refused one must start the whole parse's
/// next top-level block and change nothing. Counts (accepted, refused).
pub(crate) fn push_and_compare(
    block: &mut dyn GrowingBlock,
    accepted: &mut Vec<String>,
    line: &str,
    cols: usize,
    theme: &Theme,
    counts: &mut (usize, usize),
) {
    let before = rows(block);
    let mut with = accepted.clone();
    with.push(line.to_owned());
    let blocks = markdown::top_level(&with.join("\n")).expect("no references");
    if block.push(line) {
        assert_eq!(blocks.len(), 1, "accepted {line:?} after {accepted:?}");
        *accepted = with;
        assert_eq!(rows(block), whole(accepted, cols, theme), "{accepted:?} at {cols}");
        counts.0 += 1;
    } else {
        counts.1 += 1;
        let next = blocks.last().map(|b| b.first);
        assert!(blocks.len() > 1 && next == Some(accepted.len()), "refused {line:?} after {accepted:?}");
        assert_eq!(rows(block), before, "a refused line changed nothing");
    }
}

#[test]
fn starts_only_on_a_list_item() {
    let theme = Theme::default();
    for yes in ["- a", "* a", "+ a", "1. a", "7) a", "-", "- # h", "  - a", "- [ ] task"] {
        assert!(ListBlock::start(yes, 40, &theme).is_some(), "{yes:?}");
    }
    for no in ["a", "-a", "# h", "---", "* * *", "    - code", "", "   ", "1.a", "[x]: /url"] {
        assert!(ListBlock::start(no, 40, &theme).is_none(), "{no:?}");
    }
}

#[test]
fn items_continue_the_numbering_and_refuse_another_list() {
    let theme = Theme::load("dark", None, true).unwrap();
    let mut block = ListBlock::start("7. seven", 40, &theme).unwrap();
    assert!(block.push("1. eight"));
    assert!(block.push("   continued"));
    assert!(block.push("lazy line"));
    assert!(!block.push("1) other delimiter"));
    assert!(!block.push("- bullet"));
    assert!(!block.push("# heading"));
    assert!(!block.push(""));
    let text: Vec<String> =
        rows(&block).iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>()).collect();
    assert_eq!(text, ["7. seven", "8. eight continued lazy line"]);
}

#[test]
fn an_item_defining_a_reference_is_refused() {
    // A later item could use it, and an earlier one already drawn would change.
    let theme = Theme::default();
    let mut block = ListBlock::start("- see [a]", 40, &theme).unwrap();
    assert!(!block.push("- [a]: https://example.com"));
}

/// Each push costs the last item, not the list: 50,000 items are rendered one by one (the
/// whole list is never drawn again).
#[test]
fn a_long_list_is_drawn_an_item_at_a_time() {
    let theme = Theme::default();
    let mut block = ListBlock::start("- item 0", 80, &theme).unwrap();
    for i in 1..50_000 {
        assert!(block.push(&format!("- item {i} with a few words")));
        assert_eq!(block.rows.len(), 1);
    }
    assert_eq!(block.len(), 50_000);
}
