//! Engine throughput: SSE decode + chat mapping + reducer apply over a recorded-shape stream of
//! typical ~150-byte content chunks, and the same for the Responses API.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use palaver::api::sse::SseDecoder;
use palaver::api::{Api, Mapper};
use palaver::engine::message::Message;
use palaver::engine::reducer;
use std::hint::black_box;

const CHUNKS: usize = 20_000;

fn chat_body(n: usize) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-ABfw031m\",\"object\":\"chat.completion.chunk\",\"created\":1727346168,\"model\":\"gpt-4o\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" w{}\"}},\"finish_reason\":null}}]}}\n\n",
            i % 1000
        ));
    }
    s.push_str("data: [DONE]\n\n");
    s.into_bytes()
}

fn responses_body(n: usize) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":{i},\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\" word\",\"logprobs\":[]}}\n\n"
        ));
    }
    s.into_bytes()
}

/// Feeds the body in 4 KiB reads, as the network would.
fn consume(api: Api, body: &[u8]) -> Message {
    let mut dec = SseDecoder::new();
    let mut mapper = Mapper::new(api);
    let mut msg = Message::assistant_pending();
    let mut events = Vec::with_capacity(64);
    for read in body.chunks(4096) {
        dec.push(read, &mut |e| mapper.map(e.event, e.data, &mut events));
        for e in events.drain(..) {
            reducer::apply(&mut msg, e, 1);
        }
    }
    msg
}

fn bench(c: &mut Criterion) {
    let chat = chat_body(CHUNKS);
    let avg = chat.len() / CHUNKS;
    let mut g = c.benchmark_group("decode_map_apply");
    g.throughput(Throughput::Elements(CHUNKS as u64));
    g.bench_function(format!("chat_{avg}B_chunks"), |b| b.iter(|| black_box(consume(Api::Chat, black_box(&chat)))));
    let resp = responses_body(CHUNKS);
    g.bench_function("responses_delta_events", |b| b.iter(|| black_box(consume(Api::Responses, black_box(&resp)))));
    g.finish();
    let mut g = c.benchmark_group("sse_decode_only");
    g.throughput(Throughput::Bytes(chat.len() as u64));
    g.bench_function("chat", |b| {
        b.iter(|| {
            let mut n = 0usize;
            let mut dec = SseDecoder::new();
            for read in chat.chunks(4096) {
                dec.push(read, &mut |e| n += e.data.len());
            }
            black_box(n)
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
