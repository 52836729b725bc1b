//! Incremental Server-Sent Events decoder (WHATWG event-stream interpretation).
//!
//! Written here rather than taken from `eventsource-stream` because palaver needs three things
//! that crate does not give: a synchronous push API (the same decoder runs in the client, in
//! `replay`, in fuzzing and in benches), a CR at the end of one read followed by the LF of the
//! next counted as one terminator, and a complete payload left at EOF dispatched instead of
//! dropped (real providers end bodies without the final blank line).

/// One dispatched event: the `event:` type (empty when none was given) and the joined data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Byte-level SSE decoder. Feed it reads with [`SseDecoder::push`], then call
/// [`SseDecoder::finish`] at end of body.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The previous read ended in CR: an LF at the start of the next read belongs to it.
    skip_lf: bool,
    started: bool,
    data: String,
    has_data: bool,
    event: String,
    /// Longest line, and largest event data, held before giving up (`None`: no limit).
    limit: Option<usize>,
    /// A line or an event passed `limit`: nothing more is decoded.
    overflowed: bool,
}

impl SseDecoder {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder that holds at most `limit` bytes of one line or of one event's data: a server
    /// sending a line without end makes [`SseDecoder::overflowed`] true instead of eating memory.
    #[must_use]
    pub fn with_limit(limit: usize) -> Self {
        Self { limit: Some(limit), ..Self::default() }
    }

    /// Whether a line or an event passed the limit (decoding stopped there).
    #[must_use]
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    fn fits(&mut self, held: usize, more: usize) -> bool {
        if self.limit.is_some_and(|l| held.saturating_add(more) > l) {
            self.overflowed = true;
            self.line = Vec::new();
            self.data = String::new();
        }
        !self.overflowed
    }

    /// Decodes one network read, calling `emit` for every event it completes.
    pub fn push(&mut self, mut bytes: &[u8], emit: &mut impl FnMut(SseEvent)) {
        if self.overflowed {
            return;
        }
        if self.skip_lf {
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
            if !bytes.is_empty() {
                self.skip_lf = false;
            }
        }
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', bytes) {
            let is_cr = bytes[pos] == b'\r';
            if !self.fits(self.line.len(), pos) {
                return;
            }
            let (line, rest) = bytes.split_at(pos);
            bytes = &rest[1..];
            if is_cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            if self.line.is_empty() {
                // The usual case: the whole line is in this read, so it is read in place.
                self.process_line(line, emit);
            } else {
                self.line.extend_from_slice(line);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, emit);
                self.line = line;
                self.line.clear();
            }
            if self.overflowed {
                return;
            }
        }
        if self.fits(self.line.len(), bytes.len()) {
            self.line.extend_from_slice(bytes);
        }
    }

    /// End of body: a pending line and a pending event are dispatched rather than dropped.
    pub fn finish(&mut self, emit: &mut impl FnMut(SseEvent)) {
        if self.overflowed {
            return;
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, emit);
        }
        self.dispatch(emit);
    }

    fn process_line(&mut self, raw: &[u8], emit: &mut impl FnMut(SseEvent)) {
        // Decoding per whole line means a UTF-8 sequence split across reads is never mangled.
        // Valid UTF-8 (nearly always) takes the fast check; only a bad line pays for the lossy one.
        let decoded = match std::str::from_utf8(raw) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(raw),
        };
        let mut line: &str = &decoded;
        if !self.started {
            self.started = true;
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(emit);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        match field {
            "data" => {
                if !self.fits(self.data.len(), value.len() + 1) {
                    return;
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            // `id` and `retry` carry reconnection semantics that never apply to a POST stream.
            _ => {}
        }
    }

    fn dispatch(&mut self, emit: &mut impl FnMut(SseEvent)) {
        if !self.has_data {
            self.event.clear();
            return;
        }
        self.has_data = false;
        emit(SseEvent { event: std::mem::take(&mut self.event), data: std::mem::take(&mut self.data) });
    }
}

/// Decodes a whole body at once (replay, tests).
#[must_use]
pub fn decode_all(body: &[u8]) -> Vec<SseEvent> {
    let mut out = Vec::new();
    let mut dec = SseDecoder::new();
    dec.push(body, &mut |e| out.push(e));
    dec.finish(&mut |e| out.push(e));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_everywhere(body: &[u8]) {
        let whole = decode_all(body);
        for cut in 0..=body.len() {
            let mut out = Vec::new();
            let mut dec = SseDecoder::new();
            dec.push(&body[..cut], &mut |e| out.push(e));
            dec.push(&body[cut..], &mut |e| out.push(e));
            dec.finish(&mut |e| out.push(e));
            assert_eq!(out, whole, "split at {cut}");
        }
        let mut out = Vec::new();
        let mut dec = SseDecoder::new();
        for b in body {
            dec.push(std::slice::from_ref(b), &mut |e| out.push(e));
        }
        dec.finish(&mut |e| out.push(e));
        assert_eq!(out, whole, "byte at a time");
    }

    #[test]
    fn terminators_and_fields() {
        let body = "data: a\r\n\r\ndata:b\r\rdata: c\n\n: comment\n\nevent: x\ndata: {\"k\":1}\ndata:  two\n\n";
        let ev = decode_all(body.as_bytes());
        assert_eq!(ev.len(), 4);
        assert_eq!(ev[0].data, "a");
        assert_eq!(ev[1].data, "b");
        assert_eq!(ev[2].data, "c");
        assert_eq!(ev[3].event, "x");
        assert_eq!(ev[3].data, "{\"k\":1}\n two");
        split_everywhere(body.as_bytes());
    }

    #[test]
    fn utf8_split_and_bom_and_eof() {
        let body = "\u{feff}data: 日本語 🎉 \u{2028}\n\ndata: [DONE]";
        let ev = decode_all(body.as_bytes());
        assert_eq!(ev[0].data, "日本語 🎉 \u{2028}");
        assert_eq!(ev[1].data, "[DONE]");
        split_everywhere(body.as_bytes());
    }

    #[test]
    fn a_line_or_event_past_the_limit_stops_decoding() {
        let mut dec = SseDecoder::with_limit(64);
        let mut out = Vec::new();
        dec.push(b"data: ok\n\n", &mut |e| out.push(e));
        assert_eq!(out.len(), 1);
        for _ in 0..100 {
            dec.push(&[b'x'; 10], &mut |e| out.push(e));
        }
        assert!(dec.overflowed());
        assert!(dec.line.capacity() <= 128);
        let mut dec = SseDecoder::with_limit(64);
        for _ in 0..20 {
            dec.push(b"data: 0123456789\n", &mut |e| out.push(e));
        }
        assert!(dec.overflowed() && out.len() == 1);
    }

    #[test]
    fn event_without_data_dispatches_nothing() {
        let ev = decode_all(b"event: ping\n\nid: 3\nretry: 10\n\n");
        assert!(ev.is_empty());
    }
}
