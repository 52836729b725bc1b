use super::*;
use crate::ui::stream_list::tests::{Rng, WORDS, push_and_compare, rows, whole};

fn cell(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => String::new(),
        1 => "a \\| escaped pipe".to_owned(),
        2 => "wide ".repeat(1 + rng.below(12)),
        3 => rng.pick(&["表の中の漢字とかな", "tab\tinside", " \tpadded\t "]).to_owned(),
        4 => rng.pick(&["`a | b` in code", "`x \\| y`", "<br>", "~~gone~~ **bold** *em*"]).to_owned(),
        _ => rng.pick(WORDS).to_owned(),
    }
}

fn row(rng: &mut Rng, ncols: usize) -> String {
    let n = match rng.below(6) {
        0 => ncols.saturating_sub(1).max(1),
        1 => ncols + 1,
        _ => ncols,
    };
    let cells: Vec<String> = (0..n).map(|_| cell(rng)).collect();
    let inner = cells.join(" | ");
    match rng.below(4) {
        0 => inner,
        1 => format!("| {inner}"),
        _ => format!("| {inner} |"),
    }
}

/// A body line: mostly rows, sometimes a line that starts another block.
fn body_line(rng: &mut Rng, ncols: usize) -> String {
    match rng.below(16) {
        0 => rng.pick(&["# heading", "> quote", "```", "- item", "1. item", "---", "***", "<div>"]).to_owned(),
        1 => rng.pick(&["plain words", "    indented", "|", "||", "| --- |", "  | spaced |"]).to_owned(),
        _ => row(rng, ncols),
    }
}

/// Pushes random tables row by row and compares every step with the whole render; a line is
/// refused exactly when the whole parse ends the table before it.
#[test]
fn random_tables_match_the_whole_render_at_every_row() {
    let themes = [Theme::default(), Theme::load("dark", None, true).unwrap()];
    let mut rng = Rng(0x0dd_ba11_cafe_f00d);
    let mut counts = (0, 0);
    for case in 0..300 {
        let theme = &themes[case % 2];
        let ncols = 1 + rng.below(4);
        let head: Vec<String> = (0..ncols).map(|_| cell(&mut rng)).collect();
        let header = format!("| {} |", head.join(" | "));
        let aligns: Vec<&str> = (0..ncols).map(|_| rng.pick(&["---", ":--", "--:", ":-:", "-"])).collect();
        let delimiter = if rng.below(2) == 0 { format!("|{}|", aligns.join("|")) } else { aligns.join(" | ") };
        let lines: Vec<String> =
            [header, delimiter].into_iter().chain((0..rng.below(20)).map(|_| body_line(&mut rng, ncols))).collect();
        for cols in [1 + case % 40, [80, 120, 13][case % 3]] {
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
    let Some(mut block) = TableBlock::start(&lines[0], &lines[1], cols, theme) else {
        // Not a table head: the whole parse agrees.
        let blocks = markdown::top_level(&lines[..2].join("\n")).unwrap_or_default();
        assert!(markdown::table_of(&lines[..2].join("\n"), theme).is_none(), "{lines:?} {blocks:?}");
        return (0, 0);
    };
    let mut accepted = lines[..2].to_vec();
    assert_eq!(rows(&block), whole(&accepted, cols, theme), "{accepted:?} at {cols}");
    for line in &lines[2..] {
        if line.trim().is_empty() {
            // The caller cuts blocks at blank lines: none reaches a block, and it would end one.
            assert!(!block.push(line));
            continue;
        }
        push_and_compare(&mut block, &mut accepted, line, cols, theme, &mut counts);
    }
    counts
}

/// Rows are drawn when read: a table read only now and then (a row from the middle, its last
/// line) and whole at the end, across changes of the columns' widths, ends as the whole render.
#[test]
fn rows_read_late_or_out_of_order_match_the_whole_render() {
    let theme = Theme::default();
    let mut rng = Rng(0x5eed_7ab1e);
    for case in 0..200 {
        let ncols = 1 + rng.below(4);
        let head: Vec<String> = (0..ncols).map(|_| cell(&mut rng)).collect();
        let mut accepted = vec![format!("| {} |", head.join(" | ")), vec!["---"; ncols].join(" | ")];
        let cols = [1 + case % 40, 80, 120, 13][case % 4];
        let Some(mut block) = TableBlock::start(&accepted[0], &accepted[1], cols, &theme) else { continue };
        for _ in 0..rng.below(30) {
            let line = row(&mut rng, ncols);
            if block.push(&line) {
                accepted.push(line);
            }
            if rng.below(5) == 0 && !block.is_empty() {
                let i = rng.below(block.len());
                assert_eq!(block.get(i), whole(&accepted, cols, &theme).get(i), "row {i} of {accepted:?} at {cols}");
            }
        }
        assert_eq!(rows(&block), whole(&accepted, cols, &theme), "{accepted:?} at {cols}");
    }
}

#[test]
fn starts_only_on_a_table_head() {
    let theme = Theme::default();
    assert!(TableBlock::start("| a | b |", "|---|:-:|", 40, &theme).is_some());
    assert!(TableBlock::start("a | b", "--- | ---", 40, &theme).is_some());
    assert!(TableBlock::start("| a | b |", "|---|", 40, &theme).is_none());
    assert!(TableBlock::start("a", "b", 40, &theme).is_none());
    assert!(TableBlock::start("# a | b", "--- | ---", 40, &theme).is_none());
}

/// A long table of steady widths is laid out per row: the rows are drawn again only the few
/// times a column grows.
#[test]
fn steady_rows_are_drawn_once() {
    let theme = Theme::default();
    let mut block = TableBlock::start("| id | name | value |", "|---:|---|:-:|", 80, &theme).unwrap();
    for i in 0..20_000 {
        assert!(block.push(&format!("| {i} | row {} | {} |", i % 7, i * 3)));
    }
    assert!(block.relayouts() <= 6, "{} relayouts", block.relayouts());
    // Borders, head, rule, rows.
    assert_eq!(block.len(), 20_004);
}

/// A row read without the table's parse has the cells the parse gives, whatever its count of
/// cells and whatever block its cells' text would start on its own; rows it cannot read so are
/// left to the parse.
#[test]
fn plain_rows_have_the_parsed_cells() {
    let theme = Theme::default();
    let block = TableBlock::start("| h | i | j |", "|---|:-:|--:|", 80, &theme).unwrap();
    let read = [
        "||",
        "| |",
        "|  |  |",
        "| a |",
        "| a | b | c | d | e |",
        "| 1. x | - y | # z |",
        "| --- | === | > q |",
        "|x|y|z|",
        "| a  b |c|   ",
        "| 3.14 | 1) one | +1 |",
        "| www.example.com | http://x.y | a:b |",
        "| 日本 | é | 👍🏽 |",
        "| a *b* |",
        "| `c` | **d** e |",
        "| &amp; | ~~s~~ |",
        "| <b> x | [l](u) |",
        "| `a | b` |",
        "| **a | b** |",
        "| ![i](u) t | <http://a.b> |",
        "| a  |  b |",
        "| *a | b* |",
    ];
    let left = ["| a \\| b |", "| a\tb |", "a | b", "| a", "| <div> |", "| [a]: b |", "| # *h* | x |", "| - `i` |"];
    for row in read {
        assert!(block.plain_row(row).is_some(), "{row:?} takes the parse");
    }
    for row in left {
        assert!(block.plain_row(row).is_none(), "{row:?} is read without the parse");
    }
    for row in read.iter().chain(&left) {
        if let Some(cells) = block.plain_row(row) {
            assert_eq!(Some(cells), block.parsed_row(row), "{row:?}");
        }
    }
}
