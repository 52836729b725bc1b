#!/usr/bin/env python3
"""Hostile OpenAI-compatible servers on 127.0.0.1, for the peak-memory bench (rss.sh) and for
trying the cases of issue 13 by hand. Prints its base URL, then serves until killed.

    python3 benches/hostile/server.py MODE [ARG]

Modes:
  fast-deltas       small text deltas back to back, forever
  huge-line         one SSE data line that never ends (1 GB unless ARG says otherwise)
  many-reads        one reply with ARG (default 2000) read_file calls on big.txt, then an answer
  sleep-tool        a run_command {"command":"sleep 50"} call, then an answer
  retry-inf         429 with Retry-After: inf (and retry-after-ms: 1e30)
  retry-wait        503 with Retry-After: 30 (a long retry wait to interrupt)
  redirect          307 to another origin (127.0.0.2 on the same port)
  echo-key          401 quoting the Authorization header, and an x-echo-auth header
  escapes           an answer and reasoning full of terminal escape sequences
  normal            a short plain answer
"""

import json
import os
import socket
import sys
import threading
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
ARG = sys.argv[2] if len(sys.argv) > 2 else None


def chunk(delta=None, reasoning=None, finish=None, tool_calls=None):
    d = {}
    if delta is not None:
        d["content"] = delta
    if reasoning is not None:
        d["reasoning_content"] = reasoning
    if tool_calls is not None:
        d["tool_calls"] = tool_calls
    c = {"id": "x", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}
    return ("data: " + json.dumps(c) + "\n\n").encode()


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        got = conn.recv(65536)
        if not got:
            return None, b""
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(body) < length:
        got = conn.recv(1 << 20)
        if not got:
            break
        body += got
    return head.decode("latin-1"), body


def watch(proc, signals=(), deadline=30, armed_when=None):
    """Waits for `proc` as the hostile benches do: each (seconds, signal) of `signals` is sent
    that long after the start (or, with `armed_when`, after it first returns true), and past
    `deadline` seconds it is killed. Returns (exit status, peak RSS in MB, wall seconds, killed)."""
    start = time.time()
    pending, armed, killed = sorted(signals), None if armed_when else start, False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        now = time.time()
        if armed is None and armed_when():
            armed = now
        if pending and armed is not None and now - armed >= pending[0][0]:
            proc.send_signal(pending.pop(0)[1])
        if now - start > deadline and not killed:
            killed = True
            proc.kill()
        time.sleep(0.02)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, time.time() - start, killed


def is_lookup(method, path):
    """Whether a request is palaver's model list or window lookup, not a model request."""
    path = path.split("?")[0]
    if method == "GET":
        return path.endswith(("/models", "/props", "/api/v0/models"))
    return method == "POST" and path.endswith("/api/show")


class Scripted:
    """A scripted model on 127.0.0.1 for the hostile benches: `handler(path, body, conn)` answers
    each request (a thread each); every request body is kept in `bodies`, in arrival order."""

    def __init__(self, handler):
        self.handler, self.bodies = handler, []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d/v1" % self.sock.getsockname()[1]
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(conn,), daemon=True).start()

    def one(self, conn):
        try:
            h, body = read_request(conn)
            if h is None:
                return
            method, path = h.split(" ")[0], h.split(" ")[1]
            # palaver's window lookup before a request (GET /models, /props, POST /api/show) is
            # answered by the handler like any request, but is not one of the bodies a case counts.
            if not is_lookup(method, path):
                self.bodies.append(body)
            self.handler(path, body, conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.sock.close()


def send_head(conn, status="200 OK", headers=()):
    h = "HTTP/1.1 " + status + "\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
    for k, v in headers:
        h += k + ": " + v + "\r\n"
    conn.sendall((h + "\r\n").encode())


def send_json(conn, status, obj, headers=()):
    body = json.dumps(obj).encode()
    h = "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nConnection: close\r\n"
    h += "Content-Length: %d\r\n" % len(body)
    for k, v in headers:
        h += k + ": " + v + "\r\n"
    conn.sendall((h + "\r\n").encode() + body)


def answer(conn, text="done"):
    send_head(conn)
    conn.sendall(chunk(text) + chunk(finish="stop") + b"data: [DONE]\n\n")


def serve(conn, port):
    head, body = read_request(conn)
    if head is None:
        return
    has_tool_result = b'"role":"tool"' in body or b'"role": "tool"' in body
    if MODE == "fast-deltas":
        send_head(conn)
        burst = chunk("a") * 2000
        while True:
            conn.sendall(burst)
    elif MODE == "huge-line":
        send_head(conn)
        total = int(ARG or 1 << 30)
        conn.sendall(b'data: {"choices":[{"index":0,"delta":{"content":"')
        block = b"x" * (1 << 20)
        sent = 0
        while sent < total:
            conn.sendall(block)
            sent += len(block)
    elif MODE == "many-reads":
        if has_tool_result:
            return answer(conn)
        n = int(ARG or 2000)
        send_head(conn)
        for i in range(n):
            call = {"index": i, "id": "call_%d" % i, "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps({"path": "big.txt", "max_bytes": 2097152})}}
            conn.sendall(chunk(tool_calls=[call]))
        conn.sendall(chunk(finish="tool_calls") + b"data: [DONE]\n\n")
    elif MODE == "sleep-tool":
        if has_tool_result:
            return answer(conn, "after the tool")
        send_head(conn)
        call = {"index": 0, "id": "call_sleep", "type": "function",
                "function": {"name": "run_command", "arguments": json.dumps({"command": "sleep 50; echo late"})}}
        conn.sendall(chunk(tool_calls=[call]) + chunk(finish="tool_calls") + b"data: [DONE]\n\n")
    elif MODE == "retry-inf":
        send_json(conn, "429 Too Many Requests", {"error": {"message": "slow down"}},
                  [("Retry-After", "inf"), ("retry-after-ms", "1e30")])
    elif MODE == "retry-wait":
        send_json(conn, "503 Busy", {"error": {"message": "busy"}}, [("Retry-After", "30")])
    elif MODE == "redirect":
        h = "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.2:%d/v1/chat/completions\r\n" % port
        conn.sendall((h + "Content-Length: 0\r\nConnection: close\r\n\r\n").encode())
    elif MODE == "echo-key":
        auth = ""
        for line in head.split("\r\n"):
            k, _, v = line.partition(":")
            if k.lower() in ("authorization", "api-key"):
                auth = v.strip()
        send_json(conn, "401 Unauthorized", {"error": {"message": "bad key: " + auth}}, [("x-echo-auth", auth)])
    elif MODE == "escapes":
        send_head(conn)
        evil = "\x1b]52;c;aGk=\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x1b[2J\x1b]0;pwned\x07"
        conn.sendall(chunk(reasoning="think " + evil) + chunk("text " + evil) + chunk(finish="stop") + b"data: [DONE]\n\n")
    else:
        answer(conn, "hello")


def main():
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0" if MODE == "redirect" else "127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    print("http://127.0.0.1:%d/v1" % port, flush=True)
    while True:
        conn, _ = sock.accept()

        def run(c=conn):
            try:
                serve(c, port)
            except OSError:
                pass
            finally:
                c.close()

        threading.Thread(target=run, daemon=True).start()


if __name__ == "__main__":
    main()
