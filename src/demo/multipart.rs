//! A streaming `multipart/form-data` reader for `POST /v1/files`: the `file` part goes to disk
//! as it arrives (a 40,000-line batch file is never held in memory), small text parts are kept.
//! Only what an upload needs: no nested multiparts, no transfer encodings inside parts.

use std::io::Write;
use std::path::Path;

use axum::body::Body;
use futures_util::StreamExt;
use memchr::memmem;

/// Longest header block of one part, and longest text field kept.
const MAX_HEADERS: usize = 16 * 1024;
const MAX_FIELD: usize = 64 * 1024;

/// What an upload held: its text fields and the file part (written to the destination).
#[derive(Debug, Default, PartialEq)]
pub struct Upload {
    pub fields: Vec<(String, String)>,
    pub filename: Option<String>,
    /// Bytes of the file part written.
    pub bytes: u64,
}

impl Upload {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// The boundary of a `multipart/form-data` content type.
pub fn boundary(content_type: &str) -> Option<String> {
    let (kind, params) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("boundary").then(|| v.trim().trim_matches('"').to_owned())
    })
}

/// Where the reader is within the body.
enum Phase {
    /// Before the first delimiter (the preamble).
    Preamble,
    /// Reading a part's headers.
    Headers,
    /// Reading a part's content; `file` says it goes to disk.
    Content { name: String, file: bool, text: Vec<u8> },
    /// After the closing delimiter.
    Done,
}

/// Reads `body`, writing the part named `file` to `dest`.
///
/// # Errors
/// A malformed body, a part or header past its limit, or a failed write.
pub async fn receive(boundary: &str, body: Body, dest: &Path) -> Result<Upload, String> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(dest).map_err(|e| e.to_string())?);
    let mut reader = Reader::new(boundary);
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("the upload broke off: {e}"))?;
        reader.feed(&chunk, &mut out)?;
    }
    out.flush().map_err(|e| e.to_string())?;
    reader.finish()
}

/// The parser itself, fed chunk by chunk (kept apart from I/O so tests can split bodies anywhere).
pub struct Reader {
    /// `--boundary` (the first delimiter has no CRLF before it).
    opening: Vec<u8>,
    /// `\r\n--boundary`: what ends a part's content.
    delimiter: Vec<u8>,
    buf: Vec<u8>,
    phase: Phase,
    upload: Upload,
}

impl Reader {
    pub fn new(boundary: &str) -> Reader {
        let opening = format!("--{boundary}").into_bytes();
        let delimiter = format!("\r\n--{boundary}").into_bytes();
        Reader { opening, delimiter, buf: Vec::new(), phase: Phase::Preamble, upload: Upload::default() }
    }

    /// Takes one more chunk of the body.
    pub fn feed(&mut self, chunk: &[u8], file: &mut impl Write) -> Result<(), String> {
        self.buf.extend_from_slice(chunk);
        while self.step(file)? {}
        Ok(())
    }

    /// The upload, once the body has ended.
    pub fn finish(self) -> Result<Upload, String> {
        match self.phase {
            Phase::Done => Ok(self.upload),
            _ => Err("the multipart body ended before its closing boundary".to_owned()),
        }
    }

    /// One step of progress through the buffer; false when more input is needed.
    fn step(&mut self, file: &mut impl Write) -> Result<bool, String> {
        match &mut self.phase {
            Phase::Done => {
                self.buf.clear();
                Ok(false)
            }
            Phase::Preamble => {
                let Some(at) = memmem::find(&self.buf, &self.opening) else {
                    // Keep only what could be the start of the delimiter.
                    let keep = self.opening.len().min(self.buf.len());
                    self.buf.drain(..self.buf.len() - keep);
                    return Ok(false);
                };
                self.after_delimiter(at + self.opening.len())
            }
            Phase::Headers => {
                let Some(end) = memmem::find(&self.buf, b"\r\n\r\n") else {
                    return if self.buf.len() > MAX_HEADERS {
                        Err("a part's headers are too long".into())
                    } else {
                        Ok(false)
                    };
                };
                let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                self.buf.drain(..end + 4);
                let (name, filename) = disposition(&head).ok_or("a part has no Content-Disposition name")?;
                let is_file = name == "file";
                if is_file {
                    self.upload.filename = filename;
                }
                self.phase = Phase::Content { name, file: is_file, text: Vec::new() };
                Ok(true)
            }
            Phase::Content { .. } => self.content(file),
        }
    }

    /// Moves content out of the buffer up to the next delimiter (or as far as is safe).
    fn content(&mut self, out: &mut impl Write) -> Result<bool, String> {
        let mut found = memmem::find(&self.buf, &self.delimiter);
        // A delimiter whose next two bytes have not arrived: take the content before it, and
        // finish the part once they have.
        let waiting = found.is_some_and(|at| self.buf.len() < at + self.delimiter.len() + 2);
        let upto_waiting = found.filter(|_| waiting);
        if waiting {
            found = None;
        }
        // Without a delimiter in sight, all but a delimiter's length may still be content.
        let upto = found.or(upto_waiting).unwrap_or_else(|| self.buf.len().saturating_sub(self.delimiter.len()));
        let Phase::Content { name, file, text } = &mut self.phase else { return Ok(false) };
        if *file {
            out.write_all(&self.buf[..upto]).map_err(|e| e.to_string())?;
            self.upload.bytes += upto as u64;
        } else {
            if text.len() + upto > MAX_FIELD {
                return Err(format!("the form field `{name}` is too long"));
            }
            text.extend_from_slice(&self.buf[..upto]);
        }
        let Some(at) = found else {
            self.buf.drain(..upto);
            return Ok(false);
        };
        if !*file {
            let value = String::from_utf8_lossy(text).into_owned();
            self.upload.fields.push((std::mem::take(name), value));
        }
        self.after_delimiter(at + self.delimiter.len())
    }

    /// After a delimiter: `--` closes the body, CRLF starts another part.
    fn after_delimiter(&mut self, at: usize) -> Result<bool, String> {
        let Some(tail) = self.buf.get(at..at + 2) else {
            // Not enough yet to tell; keep the delimiter and wait.
            let start = at.saturating_sub(if matches!(self.phase, Phase::Preamble) {
                self.opening.len()
            } else {
                self.delimiter.len()
            });
            self.buf.drain(..start);
            return Ok(false);
        };
        self.phase = match tail {
            b"--" => Phase::Done,
            b"\r\n" => Phase::Headers,
            _ => return Err("a multipart boundary is followed by neither CRLF nor --".into()),
        };
        self.buf.drain(..at + 2);
        Ok(true)
    }
}

/// The `name` and `filename` of a part's Content-Disposition header.
fn disposition(head: &str) -> Option<(String, Option<String>)> {
    let line = head.lines().find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))?;
    let mut name = None;
    let mut filename = None;
    for param in line.split(';').skip(1) {
        let Some((k, v)) = param.split_once('=') else { continue };
        let v = v.trim().trim_matches('"').to_owned();
        match k.trim() {
            "name" => name = Some(v),
            "filename" => filename = Some(v),
            _ => {}
        }
    }
    Some((name?, filename))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
        --XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n\
        Content-Type: application/jsonl\r\n\r\n{\"a\":1}\r\n{\"b\":\"--Xy\"}\r\n\r\n--XyZ--\r\n";

    fn read(chunks: &[&[u8]]) -> Result<(Upload, Vec<u8>), String> {
        let mut reader = Reader::new("XyZ");
        let mut file = Vec::new();
        for c in chunks {
            reader.feed(c, &mut file)?;
        }
        Ok((reader.finish()?, file))
    }

    #[test]
    fn every_split_of_the_body_reads_the_same() {
        let whole = BODY.as_bytes();
        let (upload, file) = read(&[whole]).unwrap();
        assert_eq!(upload.field("purpose"), Some("batch"));
        assert_eq!(upload.filename.as_deref(), Some("in.jsonl"));
        assert_eq!(file, b"{\"a\":1}\r\n{\"b\":\"--Xy\"}\r\n");
        assert_eq!(upload.bytes, file.len() as u64);
        for i in 0..whole.len() {
            for j in i..whole.len() {
                let got = read(&[&whole[..i], &whole[i..j], &whole[j..]]).unwrap();
                assert_eq!(got.1, file, "split at {i},{j}");
                assert_eq!(got.0, upload, "split at {i},{j}");
            }
        }
    }

    #[test]
    fn a_body_without_its_closing_boundary_is_an_error() {
        let cut = &BODY.as_bytes()[..BODY.len() - 10];
        assert!(read(&[cut]).is_err());
        assert_eq!(boundary("multipart/form-data; boundary=\"ab c\""), Some("ab c".to_owned()));
        assert_eq!(boundary("application/json"), None);
    }
}
