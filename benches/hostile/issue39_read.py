#!/usr/bin/env python3
"""Issue 39 §1 (bounded by construction), the reader's cases: outcome, exit status, peak RSS, time.
Not a timed test: run it by hand and put its table in the closing note.

    python3 benches/hostile/issue39_read.py PATH/TO/palaver [CASE-SUBSTRING…]

Each case runs the real binary in a fresh PALAVER_HOME (and TMPDIR, to see what it leaves),
against a scripted batch API or chat server on 127.0.0.1 run in this process, and checks what
the issue asks: the run ends within its budget of time, peak RSS (wait4) under 200 MB, the
budget named in what it says, no temporary file left, nothing it started still running.
"""

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import watch  # noqa: E402  (the hostile benches' one way to wait for palaver)

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "release", "palaver")
ONLY = sys.argv[2:]
RSS_LIMIT_MB = 200
# A debug build reads about 40 MB/s; the release build many times that.
DEADLINE_6GB = float(os.environ.get("DEADLINE_6GB", 180))
GB = 1 << 30
MB = 1 << 20


# ---------------------------------------------------------------- a scripted server

class Server:
    """HTTP/1.1 on 127.0.0.1, one thread a connection; `route(method, path, body)` returns
    (status, body) with body bytes, or a generator of byte blocks streamed until it ends (the
    connection is closed after every answer, so no length is needed)."""

    def __init__(self, route):
        self.route = route
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d/v1" % self.sock.getsockname()[1]
        self.seen = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn):
        try:
            f = conn.makefile("rb")
            line = f.readline().decode("latin-1").strip()
            headers = {}
            while True:
                h = f.readline().decode("latin-1").strip()
                if not h:
                    break
                k, _, v = h.partition(":")
                headers[k.strip().lower()] = v.strip()
            body = f.read(int(headers.get("content-length", "0") or 0))
            method, path = line.split(" ")[:2]
            path = path.split("?")[0]
            self.seen.append((method, path))
            status, out = self.route(method, path, body)
            conn.sendall(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" % status)
            if isinstance(out, (bytes, bytearray)):
                conn.sendall(out)
            else:
                for block in out:
                    conn.sendall(block)
        except (OSError, ValueError):
            pass
        finally:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()

    def close(self):
        self.sock.close()


def answer(cid, text):
    return json.dumps({"custom_id": cid, "response": {"status_code": 200, "body": {
        "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                  "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}}}, "error": None}).encode()


def batch_api(poll=None, content=None):
    """A batch API: the upload and the creation answer at once; `poll` answers GET /batches/ID
    (default: completed with an output file), `content` the output file's content."""
    done = json.dumps({"id": "batch_1", "object": "batch", "status": "completed", "output_file_id": "file-out",
                       "request_counts": {"total": 3, "completed": 3, "failed": 0}}).encode()

    def route(method, path, body):
        if method == "POST" and path == "/v1/files":
            return 200, b'{"id":"file-in","object":"file","purpose":"batch"}'
        if method == "POST" and path == "/v1/batches":
            return 200, done.replace(b'"completed"', b'"validating"', 1)
        if method == "GET" and path == "/v1/batches/batch_1":
            return 200, (poll() if poll else done)
        if method == "GET" and path == "/v1/files/file-out/content" and content:
            return 200, content()
        return 404, b'{"error":{"message":"no such route"}}'
    return route


def endless(head, block=b"x" * MB):
    yield head
    while True:
        yield block


def sized(parts):
    """Blocks from (bytes, repeat) pairs."""
    for block, n in parts:
        for _ in range(n):
            yield block


def chat_route(method, path, body):
    if path.endswith("/chat/completions"):
        ev = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "hello"}}]}
        end = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        return 200, ("data: %s\n\ndata: %s\n\ndata: [DONE]\n\n" % (json.dumps(ev), json.dumps(end))).encode()
    return 404, b'{"error":{"message":"no such route"}}'


# ---------------------------------------------------------------- running palaver

def run(args, home, tmp, env_extra=None, signals=(), deadline=60, cwd=None):
    """Runs palaver; `signals` is [(seconds, signal)]. Returns (code, peak MB, seconds, stderr, killed)."""
    env = dict(os.environ, PALAVER_HOME=home, TMPDIR=tmp, OPENAI_API_KEY="sk-test-issue39")
    env.pop("OPENAI_BASE_URL", None)
    env.update(env_extra or {})
    err_path = os.path.join(home, "stderr")
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([BIN] + args, cwd=cwd or home, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        code, rss, wall, killed = watch(proc, signals, deadline)
    said = open(err_path, "rb").read().decode("utf-8", "replace")
    # Nothing it started may outlive it: its session is its own.
    try:
        os.killpg(proc.pid, 0)
        still = True
    except ProcessLookupError:
        still = False
    return code, rss, wall, said, killed or still


def batch_config(home, url, limits=""):
    lim = "limits = { %s }\n" % limits if limits else ""
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write('[providers.b]\nbase_url = "%s"\nbatch = true\n%s' % (url, lim))
    with open(os.path.join(home, "set.txt"), "w") as f:
        f.write("one\ntwo\nthree\n")


BATCH_ARGS = ["--provider", "b", "compare", "--prompts", "set.txt", "-m", "m1", "--batch"]


def cells(home):
    db = os.path.join(home, "palaver.sqlite3")
    if not os.path.exists(db):
        return []
    c = sqlite3.connect(db)
    try:
        return c.execute("SELECT prompt_idx, ok, json_extract(error, '$.message') FROM compare_cells ORDER BY 1").fetchall()
    finally:
        c.close()


def leftovers(tmp):
    return [n for n in os.listdir(tmp) if n.startswith("palaver")]


# ---------------------------------------------------------------- the cases

def case_catalogue_device(home, tmp):
    r = run(["catalogue", "update", "/dev/zero"], home, tmp, deadline=20)
    ok = r[0] == 2 and "a device" in r[3] and "not a regular file" in r[3] and r[2] < 5
    return ok, "refused at once naming a device" if ok else "said: " + r[3][-300:], r


def case_catalogue_fifo(home, tmp):
    fifo = os.path.join(home, "pipe")
    os.mkfifo(fifo)
    r = run(["catalogue", "update", fifo], home, tmp, deadline=20)
    ok = r[0] == 2 and "FIFO" in r[3] and r[2] < 5
    return ok, "refused at once naming a FIFO" if ok else "said: " + r[3][-300:], r


def case_catalogue_fifo_sigterm(home, tmp):
    # A FIFO with a writer that never ends: still refused at once; were anything to wait, the
    # SIGTERM at 1 s would end it.
    fifo = os.path.join(home, "pipe")
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", "exec yes > '%s'" % fifo])
    try:
        r = run(["catalogue", "update", fifo], home, tmp, signals=[(1.0, signal.SIGTERM)], deadline=20)
    finally:
        writer.kill()
        writer.wait()
    ok = r[0] in (2, 130) and r[2] < 5
    return ok, "ended with %d" % r[0], r


MILLION = 1_000_000


def write_million(path):
    with open(path, "w") as f:
        f.write("#palaver-catalogue 1\tsource=hostile\tdate=2026-11-28\n")
        for i in range(MILLION):
            f.write("maker%d/model-%d\t%d\t4096\t1.5\t2.5\t\t\t\tIT\n" % (i % 97, i, 1000 + i))


def case_million_update(home, tmp):
    src = os.path.join(home, "million.tsv")
    write_million(src)
    r = run(["catalogue", "update", src], home, tmp, deadline=120)
    ok = r[0] == 0 and os.path.exists(os.path.join(home, "catalogue.db"))
    return ok, "indexed once (%.1f s)" % r[2], r


def case_million_run(home, tmp):
    src = os.path.join(home, "million.tsv")
    write_million(src)
    r0 = run(["catalogue", "update", src], home, tmp, deadline=120)
    if r0[0] != 0:
        return False, "update failed: " + r0[3][-300:], r0
    server = Server(chat_route)
    try:
        r = run(["--base-url", server.url, "-m", "maker5/model-500000", "-p", "hi", "--json"], home, tmp, deadline=30)
    finally:
        server.close()
    ok = r[0] == 0 and r[2] < 3
    return ok, "a -p run after it: one lookup" if ok else "said: " + r[3][-300:], r


def case_batch_endless_poll(home, tmp):
    server = Server(batch_api(poll=lambda: endless(b'{"id":"batch_1","status":"in_progress","pad":"')))
    batch_config(home, server.url)
    try:
        r = run(BATCH_ARGS, home, tmp, deadline=60)
    finally:
        server.close()
    ok = "batch_body_bytes" in r[3] and not leftovers(tmp)
    return ok, "stopped at batch_body_bytes, polling ended" if ok else "said: " + r[3][-400:], r


def case_batch_6gb_line(home, tmp):
    # One 6 GB line between two good ones, streamed (never on disk); the file budget raised so
    # the line budget is what refuses it and the line after is still read.
    def content():
        return sized([(answer("p0-m0", "first") + b"\n", 1), (b'{"custom_id":"p1-m0","pad":"', 1),
                      (b"y" * MB, 6 * 1024), (b'"}\n', 1), (answer("p2-m0", "third") + b"\n", 1)])
    server = Server(batch_api(content=content))
    batch_config(home, server.url, "batch_file_bytes = %d" % (8 * GB))
    try:
        r = run(BATCH_ARGS, home, tmp, deadline=DEADLINE_6GB)
    finally:
        server.close()
    got = cells(home)
    kept = [c[0] for c in got if c[1]]
    ok = "batch_line_bytes" in r[3] and kept == [0, 2] and not leftovers(tmp)
    return ok, ("line refused naming batch_line_bytes, lines 1 and 3 stored" if ok
                else "cells %s, said: %s" % (got, r[3][-400:])), r


def case_batch_5gb_download(home, tmp):
    def content():
        return sized([(answer("p0-m0", "first") + b"\n", 1), ((b"z" * 1023 + b"\n") * 1024, 5 * 1024)])
    server = Server(batch_api(content=content))
    batch_config(home, server.url)
    try:
        r = run(BATCH_ARGS, home, tmp, deadline=180)
    finally:
        server.close()
    got = cells(home)
    ok = "batch_file_bytes" in r[3] and any(c[1] for c in got) and not leftovers(tmp)
    return ok, ("stopped at batch_file_bytes (2 GiB), nothing on disk" if ok
                else "cells %s, said: %s" % (got, r[3][-400:])), r


def case_batch_sigterm_mid_download(home, tmp):
    def content():
        def slow():
            yield answer("p0-m0", "first") + b"\n"
            while True:
                time.sleep(0.05)
                yield b"z" * 4096
        return slow()
    server = Server(batch_api(content=content))
    batch_config(home, server.url)
    try:
        r = run(BATCH_ARGS, home, tmp, signals=[(3.0, signal.SIGTERM)], deadline=30)
    finally:
        server.close()
    ok = r[0] == 130 and not leftovers(tmp) and r[2] < 10
    return ok, "exit 130 after SIGTERM, no temp file" if ok else "left %s, said %s" % (leftovers(tmp), r[3][-300:]), r


def case_batch_sigterm_mid_upload(home, tmp):
    # The upload never gets an answer: SIGTERM drops it, and the input file with it.
    hang = threading.Event()

    def route(method, path, body):
        if path == "/v1/files":
            hang.wait(60)
        return 404, b"{}"
    server = Server(route)
    batch_config(home, server.url)
    try:
        r = run(BATCH_ARGS, home, tmp, signals=[(2.0, signal.SIGTERM)], deadline=30)
    finally:
        hang.set()
        server.close()
    ok = r[0] == 130 and not leftovers(tmp) and r[2] < 10
    return ok, "exit 130, input file removed" if ok else "left %s, said %s" % (leftovers(tmp), r[3][-300:]), r


def case_batch_stale_swept(home, tmp):
    # A file a run killed with kill -9 left (its process is gone) goes at the next run.
    stale = os.path.join(tmp, "palaver-batch-2147483632-old-m0.jsonl")
    open(stale, "w").write("{}\n")
    server = Server(batch_api(content=lambda: answer("p0-m0", "a") + b"\n"))
    batch_config(home, server.url)
    try:
        r = run(BATCH_ARGS, home, tmp, deadline=30)
    finally:
        server.close()
    ok = not leftovers(tmp)
    return ok, "stale file swept" if ok else "left %s" % leftovers(tmp), r


CASES = [
    ("catalogue update /dev/zero", case_catalogue_device),
    ("catalogue update FIFO", case_catalogue_fifo),
    ("catalogue update FIFO with a writer, SIGTERM", case_catalogue_fifo_sigterm),
    ("catalogue update 1,000,000 models", case_million_update),
    ("-p run after a 1,000,000-model catalogue", case_million_run),
    ("batch: endless GET /batches/ID", case_batch_endless_poll),
    ("batch: 6 GB output line", case_batch_6gb_line),
    ("batch: 5 GB download", case_batch_5gb_download),
    ("batch: SIGTERM mid-download", case_batch_sigterm_mid_download),
    ("batch: SIGTERM mid-upload", case_batch_sigterm_mid_upload),
    ("batch: kill -9 leftover swept", case_batch_stale_swept),
]


def main():
    failed = 0
    print("%-46s %-8s %4s %8s %7s  %s" % ("case", "outcome", "exit", "peak MB", "s", "why"))
    for name, fn in CASES:
        if ONLY and not any(o.lower() in name.lower() for o in ONLY):
            continue
        home = tempfile.mkdtemp(prefix="palaver-i39-home-")
        tmp = tempfile.mkdtemp(prefix="palaver-i39-tmp-")
        try:
            ok, why, (code, peak, wall, _said, lingered) = fn(home, tmp)
        except Exception as e:  # noqa: BLE001 - a case that cannot run is a failed case
            ok, why, (code, peak, wall, lingered) = False, "case error: %r" % e, (None, 0, 0, False)
        if peak >= RSS_LIMIT_MB:
            ok, why = False, why + "; peak RSS %.0f MB >= %d" % (peak, RSS_LIMIT_MB)
        if lingered:
            ok, why = False, why + "; killed at its deadline or left something running"
        failed += not ok
        print("%-46s %-8s %4s %8.1f %7.2f  %s" % (name, "held" if ok else "FAILED", code, peak, wall, why), flush=True)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
