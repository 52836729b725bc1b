//! The model catalogue: parsing the built-in (what the first lookup of a run pays, on a thread
//! of its own), and lookups as users write ids (exact, a router's `maker/id`, unknown), which
//! are a few hash probes whatever the catalogue's size; and a user's copy of 1,000,000 models,
//! indexed once (as `catalogue update` does): opening it and looking one model up is what a run
//! pays, never a parse of the copy.

use criterion::{Criterion, criterion_group, criterion_main};
use palaver::config::Config;
use palaver::config::catalogue::{BUILT_IN, Catalogue, MAGIC, Origin};
use palaver::config::catalogue_index;
use std::hint::black_box;

fn catalogue(c: &mut Criterion) {
    eprintln!("built-in catalogue: {} bytes embedded", BUILT_IN.len());
    c.bench_function("catalogue parse built-in", |b| {
        b.iter(|| Catalogue::parse(black_box(BUILT_IN), Origin::BuiltIn).map(|c| c.len()));
    });
    let cat = Catalogue::parse(BUILT_IN, Origin::BuiltIn).unwrap_or_else(|e| panic!("{e}"));
    for (name, id) in
        [("exact", "gpt-4o-mini"), ("router id", "google/gemini-2.5-flash"), ("unknown", "my-own-finetune:latest")]
    {
        c.bench_function(&format!("catalogue lookup {name}"), |b| b.iter(|| cat.lookup(black_box(id)).is_some()));
    }
    let cfg = Config::default();
    c.bench_function("model_facts merged (config + catalogue)", |b| {
        b.iter(|| cfg.model_facts_in(black_box("gpt-4o-mini"), &cat).map(|f| f.context_window));
    });
}

/// A catalogue of `n` models in palaver's format.
fn big(n: usize) -> String {
    let mut text = format!("{MAGIC}\tsource=bench\tdate=2026-01-01\n");
    for i in 0..n {
        text.push_str(&format!("maker{}/model-{i}\t{}\t4096\t1.5\t2.5\t\t\t\tIT\n", i % 97, 1000 + i));
    }
    text
}

fn million(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db = dir.path().join(catalogue_index::FILE_NAME);
    let start = std::time::Instant::now();
    let facts = catalogue_index::write(&big(1_000_000), &db).unwrap_or_else(|e| panic!("{e}"));
    let size = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0);
    eprintln!("1,000,000-model index written in {:.1?} ({} models, {size} bytes)", start.elapsed(), facts.models);
    c.bench_function("catalogue 1M index: open + one lookup (a run's cost)", |b| {
        b.iter(|| {
            let cat = Catalogue::open_index(black_box(&db)).unwrap_or_else(|e| panic!("{e}"));
            cat.lookup("maker5/model-500000").map(|e| e.context_window)
        });
    });
    let cat = Catalogue::open_index(&db).unwrap_or_else(|e| panic!("{e}"));
    for (name, id) in [("exact", "maker5/model-500000"), ("bare", "model-999999"), ("unknown", "no-such:latest")] {
        c.bench_function(&format!("catalogue 1M index lookup {name}"), |b| b.iter(|| cat.lookup(black_box(id))));
    }
}

criterion_group!(benches, catalogue, million);
criterion_main!(benches);
