//! Helpers shared by the integration tests: reconstructing a reply from SSE bytes split into
//! arbitrary reads, exactly as the client does.

#![allow(dead_code)]

pub mod tmux;

use palaver::api::sse::SseDecoder;
use palaver::api::{Api, Mapper};
use palaver::engine::message::Message;
use palaver::engine::reducer::{self, Ending};

/// Feeds `parts` (consecutive reads of one body) through decoder, mapper and reducer.
pub fn reconstruct(api: Api, parts: &[&[u8]]) -> Message {
    let mut dec = SseDecoder::new();
    let mut mapper = Mapper::new(api);
    let mut msg = Message::assistant_pending();
    let mut events = Vec::new();
    for p in parts {
        dec.push(p, &mut |e| mapper.map(&e.event, &e.data, &mut events));
    }
    dec.finish(&mut |e| mapper.map(&e.event, &e.data, &mut events));
    for e in events {
        reducer::apply(&mut msg, e, 1);
    }
    reducer::finish(&mut msg, Ending::Eof, 2);
    msg
}

/// Splits `body` into reads of `n` bytes.
pub fn chunks(body: &[u8], n: usize) -> Vec<&[u8]> {
    body.chunks(n.max(1)).collect()
}
