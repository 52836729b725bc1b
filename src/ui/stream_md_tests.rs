use super::*;

fn plain(lines: impl Iterator<Item = String>) -> Vec<String> {
    lines.map(|l| l.trim_end().to_owned()).collect()
}

fn texts(md: &StreamingMarkdown) -> Vec<String> {
    plain((0..md.len()).filter_map(|i| md.get(i)).map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()))
}

#[test]
fn streamed_blocks_match_the_whole_render() {
    let theme = Theme::load("dark", None, true).unwrap();
    let text = "# Title\n\nA paragraph that\ncontinues.\n\n- one\n- two\n\n```rust\nfn main() {\n\n    x();\n}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nEnd.\n";
    let mut streamed = StreamingMarkdown::default();
    let mut prefix = String::new();
    for c in text.chars() {
        prefix.push(c);
        streamed.update(&prefix, true, 60, &theme);
    }
    let mut whole = StreamingMarkdown::default();
    whole.update(text, false, 60, &theme);
    assert_eq!(texts(&streamed), texts(&whole));
    // The blank line inside the fence did not split the code block.
    assert!(streamed.stable_len > text.find("```\n\n").unwrap_or(0));
}

#[test]
fn leaves_the_unfinished_line_out_while_live() {
    let theme = Theme::load("dark", None, true).unwrap();
    let mut md = StreamingMarkdown::default();
    assert_eq!(md.update("done line\nhalf", true, 40, &theme), 10);
    assert_eq!(texts(&md), ["done line"]);
    assert_eq!(md.update("done line\nhalf line", false, 40, &theme), 19);
    assert!(texts(&md).concat().contains("half line"));
}

/// Every line as drawn: text and style of each span.
fn lines(md: &StreamingMarkdown) -> Vec<Line<'static>> {
    (0..md.len()).filter_map(|i| md.get(i)).cloned().collect()
}

fn whole(text: &str, cols: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut md = StreamingMarkdown::default();
    md.update(text, false, cols, theme);
    lines(&md)
}

/// A long answer: prose, lists, a table, a quote, and code blocks of every kind the streaming
/// path treats differently (top level or in a list, backticks or tildes, after a paragraph
/// line, empty, ending on a blank line, an unknown language, a longer fence holding a shorter
/// one, and one still open at the end).
fn answer(parts: usize) -> String {
    let mut s = String::from("# Streaming answer\n\nSome **prose** with `code` and a [link](https://example.com).\n\n");
    for part in 0..parts {
        s.push_str(&format!(
            "## Part {part}\n\n- one\n- two with *emphasis*\n\n| a | b |\n|---|--:|\n| {part} | x |\n\n"
        ));
        s.push_str("> a quote\n> over two lines\n\nHere is the code:\n```rust\n");
        for i in 0..16 {
            s.push_str(&format!("    let v{i} = \"text {i}\"; // comment {i}\n"));
            if i % 7 == 0 {
                s.push_str("\n\tindented_with_tab();\n");
            }
        }
        s.push_str("```\n\n");
    }
    s.push_str("```python\ndef f(x):\n    return x * 2  # twice\n\n```\n\n```\n```\n\n~~~js\nconst a = `template ${1}`;\n~~~\n\n");
    s.push_str("````md\n```rust\nnot a fence end\n```\n````\n\n```klingon\nQapla'\n```\n\n");
    s.push_str("1. a list\n   ```sh\n   echo in a list\n   ```\n2. next\n\nA last paragraph.\n\n```rust,ignore\nfn open() {\n    let unfinished = 1;\n");
    s
}

#[test]
fn streaming_line_by_line_equals_the_whole_render_with_styles() {
    let theme = Theme::load("dark", None, false).unwrap();
    for (cols, parts) in [(37, 1), (100, 3)] {
        let text = answer(parts);
        let mut md = StreamingMarkdown::default();
        let mut at = 0;
        while let Some(i) = text[at..].find('\n') {
            at += i + 1;
            assert_eq!(md.update(&text[..at], true, cols, &theme), at);
            // Every frame at one width (the narrow one wraps code rows); the end at the other.
            if parts == 1 {
                assert_eq!(lines(&md), whole(&text[..at], cols, &theme), "after {:?}", &text[..at]);
            }
        }
        // A fence opened line by line was taken by the fast path.
        assert!(md.fence.is_some() && !md.fences.is_empty());
        assert!(md.finish(&text, cols, &theme), "the streamed rendering is reused");
        assert_eq!(lines(&md), whole(&text, cols, &theme));
    }
}

#[test]
fn streaming_in_odd_pieces_then_finishing_equals_the_whole_render() {
    let theme = Theme::load("dark", None, false).unwrap();
    let text = answer(2) + "}\n```\n\nDone, without a final newline";
    let mut md = StreamingMarkdown::default();
    let mut prefix = String::new();
    for (i, c) in text.chars().enumerate() {
        prefix.push(c);
        if i % 7 == 0 || c == '`' {
            md.update(&prefix, true, 80, &theme);
        }
    }
    md.update(&text, false, 80, &theme);
    assert_eq!(lines(&md), whole(&text, 80, &theme));
}

#[test]
fn answers_a_piece_cannot_render_alone_are_rendered_whole_at_the_end() {
    let theme = Theme::load("dark", None, false).unwrap();
    let cases = [
        // A link defined at the end, used before it.
        "See [the docs][d].\n\n```rust\nfn x() {}\n```\n\n[d]: https://example.com\n",
        // A loose list: its blank lines are not between blocks.
        "- one\n\n- two\n\n```rust\nfn x() {}\n```\n\n- three\n\n  continued\n",
        // An escape sequence the sanitiser reads across lines.
        "Text \u{1b}]0;title\n\nstill the title\u{7}\n\n```rust\nfn x() {}\n```\n",
        "```rust\nlet a = 1;\r\nlet b = 2;\n```\n\nCRLF above.\n",
        // An HTML block that runs over a blank line.
        "<pre>\n\n```rust\nnot code\n```\n</pre>\n\nafter\n",
        // A fence closed by a longer fence and one whose closer has text after it.
        "```rust\nfn x() {}\n`````\n\n```rust\nfn y() {}\n``` not a closer\n```\n",
    ];
    for text in cases {
        let mut md = StreamingMarkdown::default();
        let mut at = 0;
        while let Some(i) = text[at..].find('\n') {
            at += i + 1;
            md.update(&text[..at], true, 60, &theme);
        }
        md.update(text, false, 60, &theme);
        assert_eq!(lines(&md), whole(text, 60, &theme), "{text:?}");
    }
}

#[test]
fn a_long_code_block_turns_plain_as_the_whole_render_would() {
    use crate::ui::highlight::MAX_LINES;
    let theme = Theme::load("dark", None, false).unwrap();
    // Plain Text is a syntax too (and a cheap one to highlight in a debug build).
    let mut text = String::from("```txt\n");
    let mut md = StreamingMarkdown::default();
    for i in 0..MAX_LINES + 3 {
        text.push_str(&format!("let x{i} = {i};\n"));
        if i + 5 > MAX_LINES {
            md.update(&text, true, 60, &theme);
            assert_eq!(lines(&md), whole(&text, 60, &theme), "at {i}");
        }
    }
    text.push_str("```\n");
    md.update(&text, false, 60, &theme);
    assert_eq!(lines(&md), whole(&text, 60, &theme));
}

#[test]
fn code_rows_read_in_any_order_are_the_whole_render() {
    let theme = Theme::load("dark", None, false).unwrap();
    let mut text = String::from("Intro.\n\n```rust\n");
    let code = [
        "fn main() {",
        "    let s = \"a string that is long enough to be wrapped at a narrow width of the screen\";",
        "",
        "    // 日本語のコメント、幅の広い文字で折り返しが必要になるほど長いコメント 👨\u{200d}👩\u{200d}👧 e\u{301}",
        "\tlet tab = 1; /* tabs are spaces */",
        "    let short = '日';",
        "}",
        "",
    ];
    let mut md = StreamingMarkdown::default();
    for (step, line) in code.iter().enumerate() {
        text.push_str(line);
        text.push('\n');
        md.update(&text, true, 37, &theme);
        let want = whole(&text, 37, &theme);
        // Read back to front on odd steps: rows are highlighted in order whatever is read first.
        let order: Vec<usize> = if step % 2 == 1 { (0..md.len()).rev().collect() } else { (0..md.len()).collect() };
        let mut got = vec![Line::default(); md.len()];
        for i in order {
            got[i] = md.get(i).cloned().unwrap();
        }
        assert_eq!(got, want, "after {line:?}");
    }
    text.push_str("```\n\nAfter.\n");
    md.update(&text, false, 37, &theme);
    assert_eq!(lines(&md), whole(&text, 37, &theme));
}

#[test]
fn without_colour_the_ruled_code_blocks_stream_as_the_whole_render() {
    // NO_COLOR frames code blocks with rules; the rule below appears once a block closes.
    let theme = Theme::load("dark", None, true).unwrap();
    let text = answer(2) + "}\n```\n\nDone.\n";
    let mut md = StreamingMarkdown::default();
    let mut at = 0;
    while let Some(i) = text[at..].find('\n') {
        at += i + 1;
        md.update(&text[..at], true, 60, &theme);
    }
    assert!(!md.fences.is_empty(), "fences took the line-by-line path");
    assert!(md.finish(&text, 60, &theme), "the streamed rendering is reused");
    let streamed = lines(&md);
    assert_eq!(streamed, whole(&text, 60, &theme));
    assert!(plain(streamed.iter().map(ToString::to_string)).iter().any(|l| l.starts_with("── rust ")));
}

#[test]
fn a_long_block_drawn_under_a_frame_budget_ends_as_the_whole_render() {
    use crate::ui::frame_budget::FrameBudget;
    let theme = Theme::load("dark", None, false).unwrap();
    let mut text = String::from("Intro.\n\n```rust\n");
    for i in 0..250 {
        text.push_str(&format!(
            "/* {i} */ fn f{i}() -> &'static str {{ \"a string long enough to wrap at forty\" }}\n"
        ));
    }
    // The whole block arrived between two frames.
    let mut md = StreamingMarkdown::default();
    md.update(&text, true, 40, &theme);
    let want = whole(&text, 40, &theme);
    let screen = md.len() - 24..md.len();
    let mut frames = 0;
    loop {
        frames += 1;
        let budget = FrameBudget::lines(30);
        let got: Vec<Line<'static>> = screen.clone().map(|i| md.get(i).cloned().unwrap()).collect();
        if !budget.starved() {
            assert_eq!(got, want[screen.clone()]);
            break;
        }
        assert!(frames < 50);
    }
    assert!(frames >= 250 / 30, "{frames} frames");
    assert_eq!(lines(&md), want);
}

#[test]
fn bursts_laid_out_under_a_frame_budget_catch_up_and_end_as_the_whole_render() {
    use crate::ui::frame_budget::FrameBudget;
    let theme = Theme::load("dark", None, false).unwrap();
    let text = answer(3);
    let mut md = StreamingMarkdown::default();
    // The answer arrives in four bursts, each far more than one frame's 10 lines.
    let bursts: Vec<usize> = (1..=4).map(|k| text.len() * k / 4).collect();
    let (mut frames, mut behind_frames) = (0, 0);
    for (k, &end) in bursts.iter().enumerate() {
        let live = k + 1 < bursts.len();
        loop {
            frames += 1;
            let budget = FrameBudget::layout_lines(10);
            let covered = md.update(&text[..end], live, 80, &theme);
            let complete = text[..end].rfind('\n').map_or(0, |i| i + 1);
            assert!(covered <= end);
            if !md.behind() {
                assert!(!live || covered == complete, "a rendering not behind covers every complete line");
                break;
            }
            behind_frames += 1;
            assert!(budget.starved(), "a rendering left behind says the frame was short");
            assert!(text[covered..].contains('\n'));
            // What is shown is a prefix's rendering, never a line the text does not hold.
            if live {
                assert_eq!(lines(&md), whole(&text[..covered], 80, &theme));
            }
            assert!(frames < 200);
        }
    }
    assert!(behind_frames >= text.lines().count() / 10 - 4, "{behind_frames} frames behind");
    assert_eq!(lines(&md), whole(&text, 80, &theme), "the end is the whole answer's rendering");
}

#[test]
fn columns_sharing_a_frame_each_advance() {
    use crate::ui::frame_budget::{FrameBudget, share_layout};
    let theme = Theme::load("dark", None, false).unwrap();
    let text = answer(1);
    let mut columns: Vec<StreamingMarkdown> = (0..4).map(|_| StreamingMarkdown::default()).collect();
    let _budget = FrameBudget::layout_lines(20);
    share_layout(4);
    let covered: Vec<usize> = columns.iter_mut().map(|md| md.update(&text, true, 60, &theme)).collect();
    // The first three took their quarter each; the last, what their re-renders left of it.
    assert!(covered.iter().all(|&c| c > 0), "{covered:?}: every column advanced");
    assert!(covered[..3].iter().all(|&c| c == covered[0]) && covered[3] <= covered[0], "{covered:?}");
    assert!(covered[0] < text.len() / 4, "{covered:?}: no column took the whole frame");
}

/// Streams `text` line by line, then finishes it within a frame budget, drawing frames until
/// the rendering is no longer behind; returns the frames the end took.
fn finish_in_frames(md: &mut StreamingMarkdown, text: &str, cols: usize, theme: &Theme) -> usize {
    use crate::ui::frame_budget::FrameBudget;
    let mut at = 0;
    while let Some(i) = text[at..].find('\n') {
        at += i + 1;
        md.update(&text[..at], true, cols, theme);
    }
    let mut frames = 0;
    loop {
        frames += 1;
        let budget = FrameBudget::layout_lines(1_000_000);
        assert_eq!(md.update(text, false, cols, theme), if md.behind() { md.rendered_len } else { text.len() });
        if !md.behind() {
            return frames;
        }
        assert!(budget.starved(), "a check still running asks for another frame");
        assert!(frames < 2_000, "the check never came back");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[test]
fn a_long_answer_is_checked_off_the_frame_and_ends_as_the_whole_render() {
    let theme = Theme::load("dark", None, false).unwrap();
    let text = answer(60);
    assert!(text.len() >= CHECK_OFF_THREAD, "{} bytes", text.len());
    let mut md = StreamingMarkdown::default();
    let frames = finish_in_frames(&mut md, &text, 80, &theme);
    assert!(frames >= 2, "the verdict came from the helper thread, a frame later at least");
    assert!(md.whole && md.checking.is_none());
    assert_eq!(lines(&md), whole(&text, 80, &theme));
    // Finished, it stays so.
    assert_eq!(md.update(&text, false, 80, &theme), text.len());
    assert!(!md.behind());
}

#[test]
fn a_long_answer_whose_pieces_cannot_stand_alone_is_rendered_whole_off_the_frame() {
    let theme = Theme::load("dark", None, false).unwrap();
    // A link defined at the end, used at the start: the streamed pieces rendered it as text.
    let text = format!("See [the docs][d].\n\n{}\n[d]: https://example.com\n", "A paragraph line.\n\n".repeat(2_000));
    assert!(text.len() >= CHECK_OFF_THREAD);
    let mut md = StreamingMarkdown::default();
    finish_in_frames(&mut md, &text, 80, &theme);
    assert_eq!(lines(&md), whole(&text, 80, &theme));
}

/// Answers of each shape issue 41 names, small: one paragraph of many lines, many paragraphs,
/// a long line with no space, CJK, emoji with combining marks, headings over paragraphs, and
/// lines with inline markup and hard breaks.
fn shapes() -> Vec<(&'static str, String)> {
    let words = ["streaming", "a", "paragraph", "of", "plain", "words,", "lines", "joined", "by", "newlines."];
    let line = |i: usize| (0..(i % 9 + 2)).map(|j| words[(i * 7 + j * 3) % words.len()]).collect::<Vec<_>>().join(" ");
    let para: String = (0..120).map(|i| line(i) + "\n").collect();
    let paras: String = (0..40).map(|i| format!("{}\n{}\n\n", line(i), line(i + 1))).collect();
    let blob: String = (0..3000)
        .map(|i| char::from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i * 7 % 64]))
        .collect();
    let cjk: String = (0..60).map(|i| format!("日本語のテキスト{i}、折り返しが必要な長さの行です。\n")).collect();
    let emoji: String =
        (0..60).map(|i| format!("e\u{301} 👨\u{200d}👩\u{200d}👧 ❤\u{fe0f} n\u{303}{i} x\u{20dd}\n")).collect();
    let headed: String = (0..20).map(|i| format!("## Part {i}\n{}\n{}\n***\n", line(i), line(i + 2))).collect();
    let marked: String = (0..40)
        .map(|i| match i % 5 {
            0 => format!("some *em* and `code` {i}  \n"),
            1 => format!("a [link](https://example.com/{i}) &amp; **strong**\n"),
            2 => format!("ends with a backslash {i}\\\n"),
            3 => format!("2. not a list, ~~struck~~ {i}\n"),
            _ => format!("    indented continuation {i}\n"),
        })
        .collect();
    vec![
        ("paragraph", para),
        ("paragraphs", paras),
        ("blob", format!("{blob}\nand after it\n{blob}\n")),
        ("cjk", cjk),
        ("emoji", emoji),
        ("headed", headed),
        ("marked", format!("Start.\n{marked}end")),
    ]
}

#[test]
fn every_shape_streams_line_by_line_and_ends_as_the_whole_render() {
    let theme = Theme::load("dark", None, false).unwrap();
    for (name, text) in shapes() {
        for cols in [7, 33, 80] {
            let mut md = StreamingMarkdown::default();
            let mut at = 0;
            let mut steps = 0;
            while at < text.len() {
                at = (at + 8).min(text.len());
                while !text.is_char_boundary(at) {
                    at += 1;
                }
                let covered = md.update(&text[..at], true, cols, &theme);
                steps += 1;
                if steps % 23 == 0 {
                    assert_eq!(lines(&md), whole(&text[..covered], cols, &theme), "{name} at {cols}, {covered} bytes");
                }
            }
            assert!(md.growing.is_some() || !md.grown.is_empty(), "{name}: rendered line by line");
            assert!(md.finish(&text, cols, &theme), "{name} at {cols}: the streamed rendering is reused");
            assert_eq!(lines(&md), whole(&text, cols, &theme), "{name} at {cols}");
        }
    }
}

#[test]
fn paragraphs_that_turn_out_otherwise_end_as_the_whole_render() {
    let theme = Theme::load("dark", None, false).unwrap();
    let cases = [
        // A setext heading: the paragraph was a heading all along.
        "one line\nanother line\n===\n\nafter\n",
        "one line\n---\nafter\n",
        // Emphasis, a code span and a link across lines.
        "some *emphasis\nacross* lines\nand more\n",
        "a `code\nspan` here\n",
        "a [link\ntext](https://example.com) here\n",
        // A one-line paragraph that is a table's head, and one that is not.
        "| a | b |\n|---|---|\n| 1 | 2 |\n\nafter\n",
        "a | b\n--|--\n1 | 2\n",
        "text\nmore text\n|---|---|\n",
        // Blocks that interrupt a paragraph.
        "text\n# heading\ntext\n- item\n- item\ntext\n> quote\ntext\n```rust\nfn x() {}\n```\ntext\n<div>\nhtml\n</div>\n",
        // A line with an escape sequence: never sanitized alone.
        "text \u{1b}]0;title\nstill the title\u{7} text\nmore\n",
        "text\r\nwith CR\r\n",
        // A reference definition used in a paragraph streamed line by line.
        "see [the docs][d]\nand more\n\n[d]: https://example.com\n",
        // Lines that are blank once sanitized.
        "text\n\u{7}\nmore\n",
        "text\n\u{3000}\nmore\n",
    ];
    for text in cases {
        for cols in [5, 40] {
            let mut md = StreamingMarkdown::default();
            let mut at = 0;
            while let Some(i) = text[at..].find('\n') {
                at += i + 1;
                md.update(&text[..at], true, cols, &theme);
            }
            md.update(text, false, cols, &theme);
            assert_eq!(lines(&md), whole(text, cols, &theme), "{text:?} at {cols}");
        }
    }
}

#[test]
fn random_answers_stream_to_the_whole_render() {
    let theme = Theme::load("dark", None, false).unwrap();
    let kinds = [
        "plain words here",
        "more plain text",
        "日本語の行",
        "e\u{301}👨\u{200d}👩\u{200d}👧",
        "",
        "",
        "# heading",
        "---",
        "===",
        "- item",
        "1. one",
        "2. two",
        "> quote",
        "```",
        "```rust",
        "| a | b |",
        "|---|---|",
        "    indented",
        "*open emphasis",
        "closed emphasis*",
        "ends in a backslash\\",
        "two trailing  ",
        "<div>",
        "`code` and **strong**",
        "[l](http://x)",
        "&amp; &#27;",
        "verylongwordwithoutanyspacesatall",
    ];
    let mut seed = 5u64;
    for case in 0..300 {
        let mut text = String::new();
        for _ in 0..(case % 17 + 3) {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            text.push_str(kinds[(seed >> 33) as usize % kinds.len()]);
            text.push('\n');
        }
        if case % 3 == 0 {
            text.pop();
        }
        let cols = [4, 19, 60][case % 3];
        let mut md = StreamingMarkdown::default();
        let mut at = 0;
        while at < text.len() {
            at = (at + (seed as usize >> (at % 17)) % 23 + 1).min(text.len());
            while !text.is_char_boundary(at) {
                at += 1;
            }
            md.update(&text[..at], true, cols, &theme);
        }
        md.update(&text, false, cols, &theme);
        assert_eq!(lines(&md), whole(&text, cols, &theme), "{text:?} at {cols}");
    }
}

/// Not a test: how the time to stream one paragraph grows with its size (issue 41's shape),
/// 8 bytes a delta as the chat screen's cells receive them, then finished. Run with
/// `cargo test --profile profiling --lib growth_of_one_paragraph -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a test"]
fn growth_of_one_paragraph() {
    let theme = Theme::load("dark", None, false).unwrap();
    let words = ["streaming", "a", "paragraph", "of", "plain", "words,", "lines", "joined", "by", "newlines."];
    let kb: usize = std::env::var("PARA_KB").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let mut times = Vec::new();
    for size in [kb * 1024, 4 * kb * 1024] {
        let mut text = String::new();
        let mut i = 0;
        while text.len() < size {
            let mut line = String::new();
            while line.len() < 70 {
                line.push_str(words[(i * 7 + line.len()) % words.len()]);
                line.push(' ');
                i += 1;
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        let started = std::time::Instant::now();
        let mut md = StreamingMarkdown::default();
        let mut at = 0;
        while at < text.len() {
            at = (at + 8).min(text.len());
            md.update(&text[..at], true, 120, &theme);
        }
        while md.update(&text, false, 120, &theme) < text.len() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let took = started.elapsed().as_secs_f64();
        println!("{} KB, {} deltas: {took:.3} s, {} rows", text.len() / 1024, text.len() / 8, md.len());
        times.push(took);
    }
    println!("4x the bytes: {:.2}x the time", times[1] / times[0]);
}
