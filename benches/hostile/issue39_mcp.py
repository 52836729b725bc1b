#!/usr/bin/env python3
"""Issue 39, MCP and logprobs: floods of server requests, sampling and token alternatives, tried
against the real binary. Not a timed test: run it by hand and put its table in the closing note.

    python3 benches/hostile/issue39_mcp.py PATH/TO/palaver [CASE-SUBSTRING…]

One line per case: name, outcome (held / FAILED and why), exit status, peak RSS (wait4 for a
headless run, /proc VmHWM for the chat screen), seconds. A case holds when palaver ends within
its deadline, with peak RSS under 200 MB, leaving nothing it started running and no temp file.
The scripted MCP servers are this file (`mcp MODE` on stdio; an HTTP one in this process).
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
FLOOD = int(os.environ.get("FLOOD", 1_000_000))
LIMIT_MB = 200


def ping(i, method):
    return json.dumps({"jsonrpc": "2.0", "id": f"s{i}", "method": method, **({"params": {}} if method != "ping" else {})})


def flood_lines(method, n=FLOOD, batch=2000):
    """The flood, `batch` requests to a write."""
    for start in range(0, n, batch):
        yield ("\n".join(ping(i, method) for i in range(start, min(n, start + batch))) + "\n")


def tools_list(name="flood"):
    return {"tools": [{"name": name, "description": "d", "inputSchema": {"type": "object"}}]}


INIT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}


def sample_request(i):
    return json.dumps({"jsonrpc": "2.0", "id": f"m{i}", "method": "sampling/createMessage",
                       "params": {"messages": [{"role": "user", "content": {"type": "text", "text": f"ask {i}"}}],
                                  "maxTokens": 100_000_000}})


def mcp_main(mode):
    """A stdio MCP server: `ping`, `roots` (a million requests during the call, its stdin read
    and dropped), `deaf-roots` (the same, never reading stdin again), `sample` (1,000 sampling
    requests, then the result)."""
    out = sys.stdout
    for line in sys.stdin:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None or method is None:
            continue
        if method == "initialize":
            res = INIT
        elif method == "tools/list":
            res = tools_list()
        elif method == "tools/call":
            if not mode.startswith("deaf"):
                threading.Thread(target=lambda: [None for _ in sys.stdin], daemon=True).start()
            try:
                if mode == "sample":
                    for i in range(1000):
                        out.write(sample_request(i) + "\n")
                    out.flush()
                    time.sleep(5)
                else:
                    for chunk in flood_lines("ping" if mode == "ping" else "roots/list"):
                        out.write(chunk)
                    out.flush()
                out.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "flooded"}]}}) + "\n")
                out.flush()
            except (BrokenPipeError, OSError):
                return
            if not mode.startswith("deaf"):
                time.sleep(30)
            return
        else:
            res = {}
        out.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": res}) + "\n")
        out.flush()


if len(sys.argv) > 2 and sys.argv[1] == "mcp":
    mcp_main(sys.argv[2])
    sys.exit(0)

sys.path.insert(0, HERE)
import issue25  # noqa: E402  (its scripted model server, Case and Screen)
from issue25 import Case, Server, chat_chunk, head, last_line, tool_then_answer  # noqa: E402

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "target", "debug", "palaver")
issue25.BIN = BIN
ONLY = sys.argv[2:]


class McpHttp:
    """A streamable HTTP MCP server whose tool call answers with an SSE stream of `method`
    requests (a million), then the result."""

    def __init__(self, method):
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a):
                pass

            def do_DELETE(self):
                self.send_response(200)
                self.end_headers()

            def do_GET(self):
                self.send_response(405)
                self.end_headers()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                msg = json.loads(body or b"{}")
                mid, m = msg.get("id"), msg.get("method")
                if mid is None or m is None:
                    self.send_response(202)
                    self.end_headers()
                    return
                if m == "tools/call":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    try:
                        for chunk in flood_lines(outer.method):
                            self.wfile.write("".join(f"event: message\ndata: {l}\n\n" for l in chunk.splitlines()).encode())
                        end = {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "flooded"}]}}
                        self.wfile.write(f"event: message\ndata: {json.dumps(end)}\n\n".encode())
                    except OSError:
                        pass
                    return
                res = INIT if m == "initialize" else tools_list() if m == "tools/list" else {}
                data = json.dumps({"jsonrpc": "2.0", "id": mid, "result": res}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Mcp-Session-Id", "sess-1")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.method = method
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.http.daemon_threads = True
        self.url = "http://127.0.0.1:%d/mcp" % self.http.server_address[1]
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self):
        self.http.shutdown()
        self.http.server_close()


def stdio_config(c, mode, extra=""):
    c.config(f'[mcp.servers.s]\ncommand = ["{sys.executable}", "{os.path.abspath(__file__)}", "mcp", "{mode}"]\n{extra}')


def leftovers(c):
    """Processes still running that this case started (its MCP server), by their command line."""
    mine = os.path.abspath(__file__)
    r = subprocess.run(["pgrep", "-f", f"{mine} mcp"], capture_output=True, text=True)
    return [p for p in r.stdout.split() if int(p) != os.getpid()]


def tool_said(bodies):
    """What palaver sent the model as the tool's result (the last one)."""
    said = ""
    for b in bodies:
        try:
            for msg in json.loads(b).get("messages", []):
                if msg.get("role") == "tool":
                    said = str(msg.get("content"))
        except ValueError:
            pass
    return said


def verdict(c, ok, code, rss, wall, deadline, said):
    why = []
    if not ok:
        why.append("outcome")
    if rss >= LIMIT_MB:
        why.append(f"peak RSS {rss:.0f} MB")
    if code == "killed at deadline" or wall > deadline:
        why.append("deadline")
    left = leftovers(c)
    if left:
        why.append(f"still running: {left}")
        for p in left:
            try:
                os.kill(int(p), signal.SIGKILL)
            except OSError:
                pass
    c.report(not why, code, rss, wall, (("; ".join(why) + " · ") if why else "") + said)


def flood_stdio(mode, label):
    c = Case(f"a million {label} during one call, stdio")
    stdio_config(c, mode)
    s = Server(tool_then_answer("flood", [{}]))
    deadline = 120
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--tools", "auto", "--yes", "-p", "go"], deadline=deadline)
    s.close()
    said = tool_said(s.bodies[1:])
    verdict(c, "MCP_" in said, code, rss, wall, deadline, said[:260])


def flood_http(method, label):
    c = Case(f"a million {label} during one call, HTTP")
    m = McpHttp(method)
    c.config(f'[mcp.servers.s]\nurl = "{m.url}"\n')
    s = Server(tool_then_answer("flood", [{}]))
    deadline = 120
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--tools", "auto", "--yes", "-p", "go"], deadline=deadline)
    s.close()
    m.close()
    said = tool_said(s.bodies[1:])
    verdict(c, "MCP_" in said, code, rss, wall, deadline, said[:260])


def lp_entry(i, alts):
    return {"token": f"w{i}", "logprob": -0.5, "bytes": [119],
            "top_logprobs": [{"token": f"a{j}", "logprob": -1.0 - j, "bytes": [97]} for j in range(alts)]}


def logprob_server(tokens, alts, per_frame):
    """A chat model whose reply carries `tokens` tokens with `alts` alternatives each: streamed in
    frames of `per_frame` tokens, or (a non-streamed request) in one body."""
    def handler(path, body, conn):
        streamed = b'"stream":true' in body
        if not streamed:
            # One body, written in pieces so the server itself stays small.
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            conn.sendall(b'{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,'
                         b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop","logprobs":{"content":[')
            for i in range(tokens):
                conn.sendall((("," if i else "") + json.dumps(lp_entry(i, alts))).encode())
            conn.sendall(b"]}}]}")
            return
        head(conn)
        for start in range(0, tokens, per_frame):
            n = min(per_frame, tokens - start)
            c = {"id": "x", "object": "chat.completion.chunk", "model": "m",
                 "choices": [{"index": 0, "delta": {"content": "w" * n}, "finish_reason": None,
                              "logprobs": {"content": [lp_entry(start + i, alts) for i in range(n)]}}]}
            conn.sendall(("data: " + json.dumps(c) + "\n\n").encode())
        conn.sendall(chat_chunk(finish="stop") + b"data: [DONE]\n\n")
    return handler


def logprob_flood(tokens, alts, per_frame, streamed):
    c = Case(f"logprobs: {tokens:,} tokens x {alts:,} alternatives, {'streamed' if streamed else 'not streamed'}")
    s = Server(logprob_server(tokens, alts, per_frame))
    deadline = 300
    args = ["--base-url", s.url, "-m", "m", "--logprobs", "20", "--json", "-p", "hi"] + ([] if streamed else ["--no-stream"])
    code, rss, wall, out, err = c.run(args, deadline=deadline)
    s.close()
    said = last_line(err) or last_line(out)[:200]
    # Whole, or refused at a named limit (a body past body_bytes), keeping what came before.
    verdict(c, code == 0 or "past the limit" in said, code, rss, wall, deadline, said[:200])


def sampling_headless():
    c = Case("1,000 sampling requests in one call, headless --yes")
    stdio_config(c, "sample", "allow_sampling = true")
    sampled = json.dumps({"id": "s", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}).encode()
    asked = []

    def handler(path, body, conn):
        if b'"stream":false' in body:
            asked.append(json.loads(body).get("max_tokens"))
            head(conn, ctype="application/json", extra="Content-Length: %d\r\n" % len(sampled))
            conn.sendall(sampled)
            return
        tool_then_answer("flood", [{}])(path, body, conn)

    s = Server(handler)
    deadline = 120
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--tools", "auto", "--yes", "-p", "go"], deadline=deadline)
    s.close()
    ok = len(asked) <= 10 and all(m == 4096 for m in asked) and "MCP_SAMPLES_PER_CALL" in open(os.path.join(c.home, "err"), "rb").read().decode("utf-8", "replace") + tool_said(s.bodies)
    verdict(c, len(asked) <= 10 and all(m == 4096 for m in asked), code, rss, wall, deadline,
            f"{len(asked)} model requests, max_tokens {sorted(set(asked))}; {last_line(err)[:150]}")


def sampling_chat_screen():
    c = Case("1,000 sampling requests in one call, chat screen, then Ctrl+C")
    stdio_config(c, "sample", "allow_sampling = true")
    s = Server(tool_then_answer("flood", [{}]))
    t = issue25.Screen(c, ["--base-url", s.url, "-m", "m", "--tools", "auto", "--yes"])
    t.wait_for("Type a message", 20)
    t.text("go")
    t.keys("Enter")
    shown = t.wait_for("asks to use the model", 60)
    screen = t.screen()
    waiting = screen.split("more waiting")[0].rsplit("(", 1)[-1] if "more waiting" in screen else "0"
    time.sleep(1)
    t.keys("C-c")
    time.sleep(2)
    cleared = "asks to use the model" not in t.screen()
    peak = t.peak_mb()
    t.keys("C-q")
    t.wait_exit(20)
    wall = time.time() - t.start
    alive = t.alive()
    t.close()
    s.close()
    verdict(c, shown and cleared and not alive, "quit", peak, wall, 120,
            f"modal shown: {shown} ({waiting} more waiting); cleared by one Ctrl+C: {cleared}")


CASES = [
    ("ping stdio", lambda: flood_stdio("ping", "pings")),
    ("roots stdio", lambda: flood_stdio("roots", "roots/list")),
    ("roots stdio deaf", lambda: flood_stdio("deaf-roots", "roots/list (stdin never read)")),
    ("ping http", lambda: flood_http("ping", "pings")),
    ("roots http", lambda: flood_http("roots/list", "roots/list")),
    ("logprobs 200k streamed", lambda: logprob_flood(200_000, 20, 200, True)),
    ("logprobs 200k body", lambda: logprob_flood(200_000, 20, 200, False)),
    ("logprobs 100k alternatives streamed", lambda: logprob_flood(3, 100_000, 1, True)),
    ("logprobs 100k alternatives body", lambda: logprob_flood(3, 100_000, 1, False)),
    ("sampling headless", sampling_headless),
    ("sampling chat screen", sampling_chat_screen),
]


def main():
    print(f"binary: {BIN}")
    print("| case | outcome | exit | peak RSS | wall | what palaver said |")
    print("|---|---|---|---|---|---|")
    before = set(os.listdir(tempfile.gettempdir()))
    for name, case in CASES:
        if ONLY and not any(o in name for o in ONLY):
            continue
        try:
            case()
        except Exception as e:  # a broken case is reported, the others still run
            print(f"| {name} | **ERROR in harness** | - | - | - | {e!r} |", flush=True)
            issue25.ROWS.append((name, "harness error"))
    for d in issue25.MADE:
        subprocess.run(["rm", "-rf", d], capture_output=True)
    left = [f for f in set(os.listdir(tempfile.gettempdir())) - before if "palaver" in f]
    print(f"\ntemp files left by palaver: {left or 'none'}")
    failed = [r for r in issue25.ROWS if r[1] != "held"]
    print(f"{len(issue25.ROWS) - len(failed)} held, {len(failed)} failed")
    sys.exit(1 if failed or left else 0)


if __name__ == "__main__":
    main()
