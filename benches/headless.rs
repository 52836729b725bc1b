//! Headless end to end: `palaver -p --json` consuming 100,000 chat deltas from a local server
//! that builds every chunk with serde_json as a real server would. Criterion reports wall time;
//! the CPU seconds of palaver (as a child process) and of the server thread are printed after.

#![allow(clippy::disallowed_methods)] // tests read what they wrote

use criterion::{Criterion, criterion_group, criterion_main};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const DELTAS: usize = 100_000;

/// (user + system) CPU seconds of this process and of its waited-for children, from /proc.
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    let tick = 100.0;
    let get = |i: usize| f.get(i).copied().unwrap_or(0.0) / tick;
    // Fields after the command name start at field 3 (state); utime is 14, stime 15, cutime 16, cstime 17.
    (get(11) + get(12), get(13) + get(14))
}

fn serve(listener: TcpListener, served_ns: Arc<AtomicU64>) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { break };
        let started = Instant::now();
        let mut reader = BufReader::new(match stream.try_clone() {
            Ok(s) => s,
            Err(_) => continue,
        });
        let mut len = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        let _ = reader.read_exact(&mut body);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
        let mut buf = String::with_capacity(64 * 1024);
        for i in 0..DELTAS {
            let chunk = serde_json::json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1,
                "model": "bench", "choices": [{"index": 0, "delta": {"content": format!(" w{}", i % 100)}, "finish_reason": null}]});
            buf.push_str("data: ");
            buf.push_str(&chunk.to_string());
            buf.push_str("\n\n");
            if buf.len() > 60 * 1024 {
                if stream.write_all(buf.as_bytes()).is_err() {
                    break;
                }
                buf.clear();
            }
        }
        buf.push_str("data: {\"id\":\"chatcmpl-bench\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
        let _ = stream.write_all(buf.as_bytes());
        served_ns.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

fn bench(c: &mut Criterion) {
    let Ok(listener) = TcpListener::bind("127.0.0.1:0") else { return };
    let Ok(addr) = listener.local_addr() else { return };
    let served = Arc::new(AtomicU64::new(0));
    let served2 = served.clone();
    std::thread::spawn(move || serve(listener, served2));
    let url = format!("http://127.0.0.1:{}/v1", addr.port());
    let home = std::env::temp_dir().join("palaver-bench-home");
    let _ = std::fs::create_dir_all(&home);
    let mut runs = 0u32;
    let (self0, child0) = cpu_seconds();
    let mut g = c.benchmark_group("headless_e2e");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("100k_deltas_json", |b| {
        b.iter(|| {
            runs += 1;
            let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
                .args(["--base-url", &url, "-m", "bench", "-p", "go", "--json"])
                .env("PALAVER_HOME", &home)
                .env("OPENAI_API_KEY", "sk-bench")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .output();
            let ok = out.as_ref().is_ok_and(|o| o.status.success());
            assert!(ok, "palaver failed: {out:?}");
        });
    });
    g.finish();
    let (self1, child1) = cpu_seconds();
    let n = f64::from(runs.max(1));
    eprintln!(
        "headless_e2e: {runs} runs; palaver CPU {:.3} s per run (user+sys); server thread+bench CPU {:.3} s per run",
        (child1 - child0) / n,
        (self1 - self0) / n
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
