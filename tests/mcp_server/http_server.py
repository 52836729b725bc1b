#!/usr/bin/env python3
"""A scripted streamable-HTTP MCP server for palaver's tests, with faults real servers cannot
be asked to make. Listens on 127.0.0.1 (an ephemeral port unless PORT is set), prints
`port N` on stdout once listening, and appends one line per request to the log file given as
the second argument (method, path, session id, authorization), so a test can see the DELETE.

Modes (first argument):
  json      answers every request with application/json
  sse       answers requests with a text/event-stream (a progress-free event, then the result)
  expire    the first tools/call answers 404 (session expired) and forgets the session: the client
            must start a new session and send the call again
  cut       a tools/call's event stream is cut before its result
  big       the `big` tool returns a 10 MB text result (within palaver's 16 MB limit)
  huge      the `big` tool returns a 20 MB result (past it)
  token     every request must carry `Authorization: Bearer $MCP_TEST_TOKEN`, else 401
  slow      also lists `slow`, which streams a progress report every 0.2 s for `steps` steps
            (with the call's progressToken) before its result, and stops at a
            notifications/cancelled; the log gets `CALL <id>` and `CANCELLED <requestId> <reason>`;
            and `grow`, which adds the tool `grown` and says so (notifications/tools/list_changed)
            in its event stream before its result; and `sample`, which asks the client for
            sampling/createMessage in its event stream and returns the client's answer as its text.
  asks      the tools of `slow`, and `asks`, which sends `count` requests of `method` (`ping`, `sampling/createMessage`
            with maxTokens 100000000) one at a time, waits for each answer, and returns how many
            were answered and the last error message.
The log gets `CAPS <the client's capabilities>` for each initialize.
"""

import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1] if len(sys.argv) > 1 else "json"
LOG = sys.argv[2] if len(sys.argv) > 2 else os.devnull
LOCK = threading.Lock()
SESSIONS = {}  # id -> {"calls": n}
CALLS = [0]  # tools/call requests over all sessions
CANCELLED = set()  # request ids the client cancelled
ANSWERS = {}  # id -> the client's response to a request this server sent

TOOLS = [
    {
        "name": "echo",
        "description": "Echoes its arguments as JSON.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "big",
        "description": "Returns a large result.",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "leak",
        "description": "Echoes the Authorization header it received.",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
]


SLOW = {
    "name": "slow",
    "description": "Reports its progress step by step.",
    "inputSchema": {"type": "object", "properties": {"steps": {"type": "integer"}}},
    "annotations": {"readOnlyHint": True},
}
GROW = {"name": "grow", "description": "Adds the tool `grown`.", "inputSchema": {"type": "object"}}
GROWN = {"name": "grown", "description": "Added by `grow`.", "inputSchema": {"type": "object"}}
SAMPLE = {"name": "sample", "description": "Asks the client's model.", "inputSchema": {"type": "object"}}
ASKS = {"name": "asks", "description": "Sends the client requests.", "inputSchema": {"type": "object"}}
if MODE == "slow":
    TOOLS.extend([SLOW, GROW, SAMPLE])
if MODE == "asks":
    TOOLS.extend([SLOW, GROW, SAMPLE, ASKS])


def log(line):
    with LOCK, open(LOG, "a") as f:
        f.write(line + "\n")


def result(rid, value):
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def text(rid, s):
    return result(rid, {"content": [{"type": "text", "text": s}]})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def session(self):
        return self.headers.get("Mcp-Session-Id")

    def authorised(self):
        if MODE != "token":
            return True
        want = "Bearer " + os.environ.get("MCP_TEST_TOKEN", "")
        if self.headers.get("Authorization") == want:
            return True
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False

    def do_DELETE(self):
        log(f"DELETE {self.path} {self.session()}")
        with LOCK:
            SESSIONS.pop(self.session(), None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        # No server-initiated stream.
        log(f"GET {self.path} {self.session()}")
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        msg = json.loads(self.rfile.read(length) or b"{}")
        method = msg.get("method", "")
        log(f"POST {method} {self.session()} {self.headers.get('Authorization', '-')} {self.headers.get('X-Team', '-')}")
        if not self.authorised():
            return
        if method == "notifications/cancelled":
            params = msg.get("params") or {}
            with LOCK:
                CANCELLED.add(params.get("requestId"))
            log(f"CANCELLED {params.get('requestId')} {params.get('reason', '-')}")
        if not method and "id" in msg:
            # The client's answer to a request of ours.
            with LOCK:
                ANSWERS[msg["id"]] = msg
            log(f"ANSWER {msg['id']}")
        if "id" not in msg or not method:
            # A notification or a response: accepted.
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        rid = msg["id"]
        headers = {}
        if method == "initialize":
            log("CAPS " + " ".join(sorted(msg["params"].get("capabilities", {}))))
            sid = uuid.uuid4().hex
            with LOCK:
                SESSIONS[sid] = {"calls": 0}
            headers["Mcp-Session-Id"] = sid
            reply = result(
                rid,
                {
                    "protocolVersion": msg["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted-http", "version": "1"},
                },
            )
            return self.send(reply, headers)
        with LOCK:
            state = SESSIONS.get(self.session())
        if state is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "tools/list":
            return self.send(result(rid, {"tools": TOOLS}), headers)
        if method == "tools/call":
            return self.call(rid, msg["params"], state)
        self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}}, headers)

    def call(self, rid, params, state):
        with LOCK:
            state["calls"] += 1
            CALLS[0] += 1
            first = CALLS[0] == 1
        if MODE == "expire" and first:
            with LOCK:
                SESSIONS.pop(self.session(), None)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        name = params.get("name")
        if name == "echo":
            return self.send(text(rid, json.dumps(params.get("arguments", {}), sort_keys=True)), {})
        if name == "big":
            size = 20 if MODE == "huge" else 10
            return self.send(text(rid, "x" * (size * 1024 * 1024)), {})
        if name == "slow":
            return self.slow(rid, params)
        if name == "sample":
            ask = {"jsonrpc": "2.0", "id": f"sample-{rid}", "method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hello?"}}], "maxTokens": 10}}
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(b"event: message\ndata: " + json.dumps(ask).encode() + b"\n\n")
            self.wfile.flush()
            answer = None
            for _ in range(100):
                with LOCK:
                    answer = ANSWERS.get(f"sample-{rid}")
                if answer:
                    break
                time.sleep(0.05)
            reply = text(rid, json.dumps(answer, sort_keys=True))
            self.wfile.write(b"event: message\ndata: " + json.dumps(reply).encode() + b"\n\n")
            self.wfile.flush()
            return
        if name == "asks":
            return self.asks(rid, params.get("arguments") or {})
        if name == "grow":
            with LOCK:
                if GROWN not in TOOLS:
                    TOOLS.append(GROWN)
            note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for m in (note, text(rid, "grown")):
                self.wfile.write(b"event: message\ndata: " + json.dumps(m).encode() + b"\n\n")
            self.wfile.flush()
            return
        if name == "leak":
            return self.send(text(rid, "you sent: " + self.headers.get("Authorization", "-")), {})
        self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "unknown tool"}}, {})

    def asks(self, rid, args):
        method, count = args.get("method", "ping"), int(args.get("count", 1))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        answered, refused, last_error = 0, 0, "-"
        for i in range(count):
            ask = {"jsonrpc": "2.0", "id": f"ask-{rid}-{i}", "method": method}
            if method == "sampling/createMessage":
                ask["params"] = {"messages": [{"role": "user", "content": {"type": "text", "text": f"ask {i}"}}],
                                 "maxTokens": 100000000}
            try:
                self.wfile.write(b"event: message\ndata: " + json.dumps(ask).encode() + b"\n\n")
                self.wfile.flush()
            except OSError:
                return
            answer = None
            for _ in range(200):
                with LOCK:
                    answer = ANSWERS.get(ask["id"])
                if answer:
                    break
                time.sleep(0.01)
            if answer and "error" in answer:
                refused += 1
                last_error = answer["error"].get("message", "-")
            elif answer:
                answered += 1
        summary = f"answered {answered}, refused {refused}, last error: {last_error}"
        try:
            self.wfile.write(b"event: message\ndata: " + json.dumps(text(rid, summary)).encode() + b"\n\n")
            self.wfile.flush()
        except OSError:
            pass

    def slow(self, rid, params):
        log(f"CALL {rid}")
        token = (params.get("_meta") or {}).get("progressToken")
        steps = int((params.get("arguments") or {}).get("steps", 5))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for i in range(1, steps + 1):
            time.sleep(0.2)
            with LOCK:
                cancelled = rid in CANCELLED
            if cancelled:
                log(f"STOPPED {rid} at {i}")
                return
            note = {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": i, "total": steps, "message": f"step {i}"}}
            try:
                self.wfile.write(b"event: message\ndata: " + json.dumps(note).encode() + b"\n\n")
                self.wfile.flush()
            except OSError:
                log(f"STOPPED {rid} at {i}: the client closed the stream")
                return
        body = json.dumps(text(rid, f"done after {steps} steps")).encode()
        self.wfile.write(b"event: message\ndata: " + body + b"\n\n")
        self.wfile.flush()

    def send(self, reply, headers):
        body = json.dumps(reply).encode()
        sse = MODE in ("sse", "cut") and "result" in reply and "tools" not in reply["result"]
        self.send_response(200)
        for k, v in headers.items():
            self.send_header(k, v)
        if not sse:
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b": keep-alive\n\n")
        if MODE == "cut" and "content" in reply["result"]:
            # Half an event, then the connection closes.
            self.wfile.write(b"id: 1\ndata: " + body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(b"id: 1\nevent: message\ndata: " + body + b"\n\n")
        self.wfile.flush()
        self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
