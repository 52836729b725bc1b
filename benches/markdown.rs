//! Benchmarks for the text path every frame may hit: markdown rendering (with code
//! highlighting) and the terminal-control sanitizer.

use criterion::{Criterion, criterion_group, criterion_main};
use palaver::ui::markdown::render;
use palaver::ui::sanitize::sanitize;
use palaver::ui::theme::Theme;
use std::hint::black_box;

/// Roughly 50 KB of typical assistant output: prose, lists, a table and code.
fn document() -> String {
    let section = "## Section heading\n\n\
Here is a paragraph with **bold**, *italic*, `inline code` and a [link](https://example.com/docs). \
It goes on long enough to wrap several times at a typical terminal width, as answers do.\n\n\
- first point with some words\n- second point\n  - nested detail\n1. ordered\n2. list\n\n\
> A quoted remark that also wraps across the available width of the terminal window.\n\n\
| Column | Value | Notes |\n|--------|------:|-------|\n| alpha | 1 | short |\n| beta | 22 | a longer note |\n\n\
```rust\nfn fibonacci(n: u64) -> u64 {\n    match n {\n        0 | 1 => n,\n        _ => fibonacci(n - 1) + fibonacci(n - 2),\n    }\n}\n\nfn main() {\n    for i in 0..10 {\n        println!(\"{}\", fibonacci(i));\n    }\n}\n```\n\n\
```python\ndef greet(name: str) -> str:\n    return f\"Hello, {name}!\"\n```\n\n";
    let mut doc = String::new();
    while doc.len() < 50_000 {
        doc.push_str(section);
    }
    doc
}

/// About 1 MB of text; with `escapes`, an SGR/OSC/C1/bidi control every ~200 bytes.
fn mixed_text(escapes: bool) -> String {
    let prose = "The quick brown fox jumps over the lazy dog. 日本語のテキスト 🎉 ünïcödé text.\n";
    let controls = ["\x1b[31m", "\x1b]0;title\x07", "\u{9b}2J", "\u{202e}", "\t", "\x1b[0m"];
    let mut s = String::with_capacity(1 << 20);
    let mut i = 0;
    while s.len() < 1 << 20 {
        s.push_str(prose);
        if escapes && i % 2 == 0 {
            s.push_str(controls[i / 2 % controls.len()]);
        }
        i += 1;
    }
    s
}

fn benches(c: &mut Criterion) {
    let theme = Theme::default();
    let doc = document();
    // Load syntect's sets outside the measurement.
    black_box(render(&doc, 120, &theme));
    c.bench_function("render 50KB markdown @120", |b| b.iter(|| render(black_box(&doc), 120, &theme)));

    let clean = mixed_text(false);
    let dirty = mixed_text(true);
    c.bench_function("sanitize 1MB clean", |b| b.iter(|| sanitize(black_box(&clean)).len()));
    c.bench_function("sanitize 1MB with escapes", |b| b.iter(|| sanitize(black_box(&dirty)).len()));
}

criterion_group!(markdown, benches);
criterion_main!(markdown);
