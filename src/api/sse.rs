//! Incremental Server-Sent Events decoder (WHATWG event-stream interpretation).
//!
//! Written here rather than taken from `eventsource-stream` because palaver needs three things
//! that crate does not give: a synchronous push API (the same decoder runs in the client, in
//! `replay`, in fuzzing and in benches), a CR at the end of one read followed by the LF of the
//! next counted as one terminator, and a complete payload left at EOF dispatched instead of
//! dropped (real providers end bodies without the final blank line).
//!
//! Events are handed out borrowed ([`SseRef`]): an event whose one `data:` line and blank line
//! came in the same read (nearly every event of a stream) is read where it lies, never copied;
//! only data split across reads, or across several `data:` lines, is joined in a buffer the
//! decoder keeps from event to event. Data is handed out as bytes, not checked to be UTF-8 here:
//! whoever reads it decodes it (lossily, as the spec says), and a mapper that reads only part
//! of it (see `chat_fast::Envelope`) checks only that part.

/// One dispatched event, owned: the `event:` type (empty when none was given) and the joined data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// One dispatched event as the decoder hands it out, valid during the callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseRef<'a> {
    pub event: &'a str,
    /// The joined data, not yet decoded: see [`SseRef::text`].
    pub data: &'a [u8],
}

impl<'a> SseRef<'a> {
    /// The data as text; invalid UTF-8 (rare) is replaced, as the event-stream spec decodes it.
    #[must_use]
    pub fn text(&self) -> std::borrow::Cow<'a, str> {
        String::from_utf8_lossy(self.data)
    }

    #[must_use]
    pub fn owned(&self) -> SseEvent {
        SseEvent { event: self.event.to_owned(), data: self.text().into_owned() }
    }
}

/// Byte-level SSE decoder. Feed it reads with [`SseDecoder::push`], then call
/// [`SseDecoder::finish`] at end of body.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The previous read ended in CR: an LF at the start of the next read belongs to it.
    skip_lf: bool,
    started: bool,
    /// The event's data joined so far (when it is not [`Pending::InRead`]).
    data: Vec<u8>,
    has_data: bool,
    event: String,
    /// Longest line, and largest event data, held before giving up (`None`: no limit).
    limit: Option<usize>,
    /// A line or an event passed `limit`: nothing more is decoded.
    overflowed: bool,
}

/// Where the data of the event being read is, during one [`SseDecoder::push`].
#[derive(Clone, Copy)]
enum Pending {
    /// In the decoder's buffer (or there is none yet).
    Held,
    /// One `data:` line's value, still in the read at this range.
    InRead(usize, usize),
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
            self.data = Vec::new();
        }
        !self.overflowed
    }

    /// Decodes one network read, calling `emit` for every event it completes.
    pub fn push(&mut self, read: &[u8], emit: &mut impl FnMut(SseRef<'_>)) {
        if self.overflowed {
            return;
        }
        let mut at = 0;
        if self.skip_lf {
            if read.first() == Some(&b'\n') {
                at = 1;
            }
            if at < read.len() {
                self.skip_lf = false;
            }
        }
        let mut pending = Pending::Held;
        loop {
            // A blank line (every event ends with one) needs no search.
            let found = match read.get(at) {
                Some(b'\n' | b'\r') => 0,
                Some(_) => match memchr::memchr2(b'\n', b'\r', &read[at..]) {
                    Some(found) => found,
                    None => break,
                },
                None => break,
            };
            let end = at + found;
            let is_cr = read[end] == b'\r';
            if !self.fits(self.line.len(), end - at) {
                return;
            }
            let start = at;
            at = end + 1;
            if is_cr {
                match read.get(at) {
                    Some(b'\n') => at += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            if self.line.is_empty() {
                // The usual case: the whole line is in this read, so it is read in place.
                pending = self.line_in_read(read, start, end, pending, emit);
            } else {
                self.line.extend_from_slice(&read[start..end]);
                let line = std::mem::take(&mut self.line);
                self.hold(read, pending);
                pending = Pending::Held;
                self.process_line(&line, emit);
                self.line = line;
                self.line.clear();
            }
            if self.overflowed {
                return;
            }
        }
        // The read ends inside an event: what it borrowed from the read is copied now.
        self.hold(read, pending);
        if self.fits(self.line.len(), read.len() - at) {
            self.line.extend_from_slice(&read[at..]);
        }
    }

    /// Copies a data value still in the read into the buffer.
    fn hold(&mut self, read: &[u8], pending: Pending) {
        if let Pending::InRead(from, to) = pending {
            self.data.extend_from_slice(&read[from..to]);
        }
    }

    /// A whole line lying in the read at `start..end`. A first `data:` line is remembered by
    /// its place in the read; everything else goes through [`Self::process_line`].
    fn line_in_read(
        &mut self,
        read: &[u8],
        start: usize,
        end: usize,
        pending: Pending,
        emit: &mut impl FnMut(SseRef<'_>),
    ) -> Pending {
        let line = &read[start..end];
        if line.is_empty() && self.started {
            let in_read = match pending {
                Pending::InRead(from, to) => Some(&read[from..to]),
                Pending::Held => None,
            };
            self.dispatch(in_read, emit);
            return Pending::Held;
        }
        if self.started && !self.has_data && line.starts_with(b"data:") {
            let from = start + if line.get(5) == Some(&b' ') { 6 } else { 5 };
            if self.fits(0, end - from + 1) {
                self.has_data = true;
                return Pending::InRead(from, end);
            }
        }
        self.hold(read, pending);
        self.process_line(line, emit);
        Pending::Held
    }

    /// End of body: a pending line and a pending event are dispatched rather than dropped.
    pub fn finish(&mut self, emit: &mut impl FnMut(SseRef<'_>)) {
        if self.overflowed {
            return;
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, emit);
        }
        self.dispatch(None, emit);
    }

    fn process_line(&mut self, raw: &[u8], emit: &mut impl FnMut(SseRef<'_>)) {
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
            self.dispatch(None, emit);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line.as_bytes()) {
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
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value.as_bytes());
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

    /// Ends the event: its data is `in_read` when it still lies in the read, else the buffer's.
    fn dispatch(&mut self, in_read: Option<&[u8]>, emit: &mut impl FnMut(SseRef<'_>)) {
        if self.has_data {
            self.has_data = false;
            emit(SseRef { event: &self.event, data: in_read.unwrap_or(&self.data) });
        }
        // The buffers keep their room for the next event.
        self.data.clear();
        self.event.clear();
    }
}

/// Decodes a whole body at once (replay, tests).
#[must_use]
pub fn decode_all(body: &[u8]) -> Vec<SseEvent> {
    let mut out = Vec::new();
    let mut dec = SseDecoder::new();
    dec.push(body, &mut |e| out.push(e.owned()));
    dec.finish(&mut |e| out.push(e.owned()));
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
            dec.push(&body[..cut], &mut |e| out.push(e.owned()));
            dec.push(&body[cut..], &mut |e| out.push(e.owned()));
            dec.finish(&mut |e| out.push(e.owned()));
            assert_eq!(out, whole, "split at {cut}");
        }
        let mut out = Vec::new();
        let mut dec = SseDecoder::new();
        for b in body {
            dec.push(std::slice::from_ref(b), &mut |e| out.push(e.owned()));
        }
        dec.finish(&mut |e| out.push(e.owned()));
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
        dec.push(b"data: ok\n\n", &mut |e| out.push(e.owned()));
        assert_eq!(out.len(), 1);
        for _ in 0..100 {
            dec.push(&[b'x'; 10], &mut |e| out.push(e.owned()));
        }
        assert!(dec.overflowed());
        assert!(dec.line.capacity() <= 128);
        let mut dec = SseDecoder::with_limit(64);
        for _ in 0..20 {
            dec.push(b"data: 0123456789\n", &mut |e| out.push(e.owned()));
        }
        assert!(dec.overflowed() && out.len() == 1);
    }

    #[test]
    fn event_without_data_dispatches_nothing() {
        let ev = decode_all(b"event: ping\n\nid: 3\nretry: 10\n\n");
        assert!(ev.is_empty());
    }
}
