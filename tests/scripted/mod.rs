//! A scripted HTTP server on 127.0.0.1 for end-to-end tests: each accepted request gets the
//! next scripted answer (status, headers, body pieces with pauses, or a cut connection), and
//! every request line, header block and body is recorded for assertions.
//!
//! palaver asks a server for its model's context window before a headless request and when the
//! chat screen opens (`GET …/models`, llama.cpp's `/props`, Ollama's `/api/show`, LM Studio's
//! `/api/v0/models`). Those asks take no scripted answer and are not recorded: they get a 404
//! (the server states no window), unless the next scripted answer is marked [`Reply::on_get`]
//! (a model list a test serves on purpose).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Body pieces written one after another, each followed by its pause.
    pub pieces: Vec<(Vec<u8>, Duration)>,
    /// Close the connection without finishing (no chunked terminator).
    pub cut: bool,
    /// This answer is for a model list or window lookup (see the module's note).
    pub for_lookup: bool,
}

impl Reply {
    pub fn sse(body: &str) -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), "text/event-stream".into())],
            pieces: vec![(body.as_bytes().to_vec(), Duration::ZERO)],
            cut: false,
            for_lookup: false,
        }
    }
    pub fn json(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            pieces: vec![(body.as_bytes().to_vec(), Duration::ZERO)],
            cut: false,
            for_lookup: false,
        }
    }
    pub fn header(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }
    pub fn then(mut self, body: &str, pause: Duration) -> Self {
        self.pieces.push((body.as_bytes().to_vec(), pause));
        self
    }
    pub fn pause_first(mut self, pause: Duration) -> Self {
        self.pieces.insert(0, (Vec::new(), pause));
        self
    }
    pub fn cut(mut self) -> Self {
        self.cut = true;
        self
    }
    /// Answers the next model list or window lookup (`GET /models`…), which otherwise gets a
    /// 404 of its own without taking a scripted answer.
    pub fn on_get(mut self) -> Self {
        self.for_lookup = true;
        self
    }
}

/// Whether a request is a model list or window lookup (see the module's note).
pub fn is_lookup(request_line: &str) -> bool {
    let mut words = request_line.split_whitespace();
    let (method, path) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let path = path.split('?').next().unwrap_or_default();
    match method {
        "GET" => path.ends_with("/models") || path.ends_with("/props") || path.ends_with("/api/v0/models"),
        "POST" => path.ends_with("/api/show"),
        _ => false,
    }
}

/// The answer a lookup gets when no scripted one is marked for it.
fn not_scripted() -> Reply {
    Reply::json(404, r#"{"error":{"message":"not scripted"}}"#)
}

/// A recorded request.
#[derive(Clone, Debug)]
pub struct Seen {
    pub request_line: String,
    pub headers: String,
    pub body: String,
}

pub struct Server {
    pub base_url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        // The next scripted answer; the last one answers every request after it.
        let next = Arc::new(Mutex::new(0usize));
        let replies = Arc::new(replies);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let (seen, next, replies) = (seen2.clone(), next.clone(), replies.clone());
                thread::spawn(move || {
                    let Ok(mut write) = stream.try_clone() else { return };
                    let mut reader = BufReader::new(stream);
                    let Some(request) = read_request(&mut reader) else { return };
                    let reply = {
                        let mut at = next.lock().unwrap();
                        let i = (*at).min(replies.len().saturating_sub(1));
                        match replies.get(i) {
                            Some(r) if is_lookup(&request.request_line) && !r.for_lookup => None,
                            Some(r) => {
                                *at += 1;
                                Some(r.clone())
                            }
                            None => return,
                        }
                    };
                    match reply {
                        Some(reply) => {
                            seen.lock().unwrap().push(request);
                            write_reply(&mut write, &reply);
                        }
                        None => write_reply(&mut write, &not_scripted()),
                    }
                });
            }
        });
        Self { base_url: format!("http://127.0.0.1:{port}/v1"), seen }
    }

    /// A server that answers exactly `replies.len()` connections, one reply each, and then
    /// closes its port: later requests are refused (a server that went away).
    pub fn start_then_close(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        thread::spawn(move || {
            let mut replies = replies.into_iter().peekable();
            while let Some(next) = replies.peek() {
                let Ok((stream, _)) = listener.accept() else { break };
                let Ok(mut write) = stream.try_clone() else { break };
                let mut reader = BufReader::new(stream);
                let Some(request) = read_request(&mut reader) else { continue };
                if is_lookup(&request.request_line) && !next.for_lookup {
                    write_reply(&mut write, &not_scripted());
                    continue;
                }
                let Some(reply) = replies.next() else { break };
                seen2.lock().unwrap().push(request);
                write_reply(&mut write, &reply);
            }
        });
        Self { base_url: format!("http://127.0.0.1:{port}/v1"), seen }
    }

    /// A server that picks each answer from the request itself (its model, its history), so
    /// concurrent requests get the right reply whatever order they arrive in.
    pub fn start_fn(respond: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let respond = Arc::new(respond);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let (seen, respond) = (seen2.clone(), respond.clone());
                thread::spawn(move || {
                    let Ok(mut write) = stream.try_clone() else { return };
                    let mut reader = BufReader::new(stream);
                    let Some(request) = read_request(&mut reader) else { return };
                    // A lookup is answered as the test says but not recorded (see the module's note).
                    if !is_lookup(&request.request_line) {
                        seen.lock().unwrap().push(request.clone());
                    }
                    write_reply(&mut write, &respond(&request));
                });
            }
        });
        Self { base_url: format!("http://127.0.0.1:{port}/v1"), seen }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut headers = String::new();
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        headers.push_str(&line);
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Seen { request_line, headers, body: String::from_utf8_lossy(&body).into_owned() })
}

fn write_reply(stream: &mut TcpStream, reply: &Reply) {
    let mut head = format!("HTTP/1.1 {} X\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    for (piece, pause) in &reply.pieces {
        if !piece.is_empty() {
            let chunk = [format!("{:x}\r\n", piece.len()).as_bytes(), piece, b"\r\n"].concat();
            if stream.write_all(&chunk).is_err() {
                return;
            }
            let _ = stream.flush();
        }
        thread::sleep(*pause);
    }
    if reply.cut {
        let _ = stream.shutdown(std::net::Shutdown::Both);
        return;
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let _ = stream.flush();
}
