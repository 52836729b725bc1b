//! The model catalogue: parsing the built-in (what the first lookup of a run pays, on a thread
//! of its own), and lookups as users write ids (exact, a router's `maker/id`, unknown), which
//! are a few hash probes whatever the catalogue's size.

use criterion::{Criterion, criterion_group, criterion_main};
use palaver::config::Config;
use palaver::config::catalogue::{BUILT_IN, Catalogue, Origin};
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

criterion_group!(benches, catalogue);
criterion_main!(benches);
