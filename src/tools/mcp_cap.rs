//! The limits on what an MCP server can make palaver hold: one message (a page of the tool
//! list, a tool result) and the number of tools one server lists, [`MCP_MESSAGE_BYTES`] and
//! [`MCP_TOOLS`] unless its `[mcp.servers.NAME]` sets `max_message_bytes` or `max_tools`. A
//! message is a line of JSON-RPC; the server's stdout is read through [`CappedLines`], which
//! ends the stream (an end of file for the MCP client) the moment a line passes the limit and keeps
//! the reason, so the waiting request fails at once with it instead of the whole line being
//! buffered (a 300 MB result once waited a minute and was reported as "timed out").

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// One message from an MCP server: a page of its tool list or one tool result.
pub const MCP_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Tools one MCP server may list (the chat APIs take far fewer in one request).
pub const MCP_TOOLS: usize = 1000;

/// Why the server's stream was cut, once it was.
#[derive(Clone, Default, Debug)]
pub(super) struct Overflow(Arc<Mutex<Option<String>>>);

impl Overflow {
    /// The reason, when a message passed the limit.
    pub(super) fn reason(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Keeps `why` as the reason the server was refused (the first reason stays).
    pub(super) fn refuse(&self, why: &str) {
        let mut r = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if r.is_none() {
            *r = Some(why.to_owned());
        }
    }

    fn set(&self, max: usize) {
        self.refuse(&format!(
            "it sent a message larger than {}, the limit for one MCP message (a page of the tool list or one \
             tool result: MCP_MESSAGE_BYTES = {MCP_MESSAGE_BYTES} unless the server's `max_message_bytes` in \
             config.toml sets another); palaver stopped reading and closed the connection",
            crate::text::fmt::size(max)
        ));
    }
}

/// A reader of newline-delimited messages that ends (EOF) at the first line longer than `max`.
pub(super) struct CappedLines<R> {
    inner: R,
    /// Bytes of the line read so far.
    line: usize,
    max: usize,
    over: Overflow,
}

impl<R> CappedLines<R> {
    pub(super) fn new(inner: R, max: usize, over: Overflow) -> Self {
        Self { inner, line: 0, max, over }
    }

    /// Counts `new` bytes into the current line; whether a line passed the limit.
    fn count(&mut self, new: &[u8]) -> bool {
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', new) {
            if self.line + (nl - start) > self.max {
                return true;
            }
            self.line = 0;
            start = nl + 1;
        }
        self.line += new.len() - start;
        self.line > self.max
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CappedLines<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.over.reason().is_some() {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        if this.count(&buf.filled()[before..]) {
            this.over.set(this.max);
            // None of the oversized line is passed on: the client sees the stream end.
            buf.set_filled(before);
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read what they wrote
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt as _;

    #[tokio::test]
    async fn lines_within_the_limit_pass_and_a_longer_one_ends_the_stream() {
        let over = Overflow::default();
        let text = b"short\nalso short\n0123456789abcdef\nnever seen\n".to_vec();
        let mut r = CappedLines::new(&text[..], 10, over.clone());
        let mut got = Vec::new();
        r.read_to_end(&mut got).await.unwrap();
        // The reader hands over whole reads: a read holding the long line is withheld whole.
        assert!(!String::from_utf8_lossy(&got).contains("0123456789abcdef"), "{got:?}");
        assert!(over.reason().unwrap().contains("MCP_MESSAGE_BYTES"));
        let over = Overflow::default();
        let mut r = CappedLines::new(&b"0123456789\n0123456789\n"[..], 10, over.clone());
        let mut got = Vec::new();
        r.read_to_end(&mut got).await.unwrap();
        assert_eq!(got.len(), 22);
        assert!(over.reason().is_none());
    }

    #[test]
    fn a_line_is_counted_across_reads() {
        let mut r = CappedLines::new((), 10, Overflow::default());
        assert!(!r.count(b"01234"));
        assert!(!r.count(b"56789\n0123"));
        assert!(r.count(b"4567890"));
    }
}
