#!/usr/bin/env python3
"""Issue 25's failures, tried again as the issue words them: outcome, exit status and peak RSS.
Not a timed test: run it by hand and put its table in the closing note.

    python3 benches/hostile/issue25.py [PALAVER_BINARY] [CASE-SUBSTRING…]

Each case runs the real binary in a fresh PALAVER_HOME and workspace, against a scripted server
on 127.0.0.1 (in this process) or a scripted MCP server (this file, `mcp MODE`), sends SIGINT or
SIGHUP where the case says, and checks what the issue says must happen. Peak RSS comes from
wait4 (headless) or /proc/PID/status VmHWM (chat screen, in tmux).
"""

import base64
import gzip
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def mcp_main(mode):
    """A scripted MCP server on stdio: `never-init`, `many-tools`, `huge-result`."""
    if mode == "never-init":
        for _ in sys.stdin:
            pass
        return
    for line in sys.stdin:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None:
            continue
        if method == "initialize":
            res = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
        elif method == "tools/list":
            n = 100_000 if mode == "many-tools" else 1
            name = "big" if mode == "huge-result" else "t"
            res = {"tools": [{"name": f"{name}{i}" if n > 1 else name, "description": "d", "inputSchema": {"type": "object"},
                              "annotations": {"readOnlyHint": True}} for i in range(n)]}
        elif method == "tools/call":
            # 300 MB of text in one message.
            sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(mid))
            block = "x" * (1 << 20)
            for _ in range(300):
                sys.stdout.write(block)
            sys.stdout.write('"}]}}\n')
            sys.stdout.flush()
            continue
        else:
            res = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": res}) + "\n")
        sys.stdout.flush()


if len(sys.argv) > 2 and sys.argv[1] == "mcp":
    mcp_main(sys.argv[2])
    sys.exit(0)

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "palaver")
ONLY = sys.argv[2:]
ROWS = []
MADE = []  # every temporary directory a case made, removed at exit (images make hundreds of MB)


# ---------------------------------------------------------------- scripted HTTP server

# The request reader and the chat chunk of the hostile servers of issue 13 (server.py, beside
# this file), so both benches parse and speak the wire the same way.
sys.path.insert(0, HERE)
from server import Scripted as Server, chunk as chat_chunk, read_request, watch  # noqa: E402,F401


def head(conn, status="200 OK", ctype="text/event-stream", extra=""):
    conn.sendall(("HTTP/1.1 %s\r\nContent-Type: %s\r\nConnection: close\r\n%s\r\n" % (status, ctype, extra)).encode())


def tool_then_answer(name, args_list):
    """First request: tool calls; any later one: the answer 'done'."""
    def handler(path, body, conn):
        head(conn)
        if b'"role":"tool"' in body:
            conn.sendall(chat_chunk("done") + chat_chunk(finish="stop") + b"data: [DONE]\n\n")
            return
        for i, args in enumerate(args_list):
            call = {"index": i, "id": "call_%d" % i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            conn.sendall(chat_chunk(tool_calls=[call]))
        conn.sendall(chat_chunk(finish="tool_calls") + b"data: [DONE]\n\n")
    return handler


def answer_handler(text="hello"):
    def handler(path, body, conn):
        if path.endswith("/models"):
            body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
            head(conn, ctype="application/json", extra="Content-Length: %d\r\n" % len(body))
            conn.sendall(body)
            return
        head(conn)
        conn.sendall(chat_chunk(text) + chat_chunk(finish="stop") + b"data: [DONE]\n\n")
    return handler


# ---------------------------------------------------------------- running palaver

class Case:
    def __init__(self, name):
        self.name = name
        self.home = tempfile.mkdtemp(prefix="p25-home-")
        self.work = tempfile.mkdtemp(prefix="p25-ws-")
        MADE.extend([self.home, self.work])
        self.env = dict(os.environ, PALAVER_HOME=self.home, OPENAI_API_KEY="sk-test-SECRET-123456", NO_COLOR="1")
        self.env.pop("PALAVER_CONFIG", None)

    def config(self, text):
        with open(os.path.join(self.home, "config.toml"), "w") as f:
            f.write(text)

    def run(self, args, signals=(), deadline=30, stdin=subprocess.DEVNULL):
        """Runs palaver headless; returns (exit, peak MB, wall s, stdout, stderr)."""
        out_path, err_path = os.path.join(self.home, "out"), os.path.join(self.home, "err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen([BIN] + args, cwd=self.work, env=self.env, stdout=out, stderr=err, stdin=stdin,
                                    start_new_session=True)
            code, rss, wall, _ = watch(proc, signals, deadline)
        if code == -9 and wall > deadline:
            code = "killed at deadline"
        out = open(out_path, "rb").read().decode("utf-8", "replace")
        err = open(err_path, "rb").read().decode("utf-8", "replace")
        return code, rss, wall, out, err

    def report(self, ok, code, rss, wall, outcome):
        ROWS.append((self.name, "held" if ok else "FAILED", code, rss, wall, outcome))
        flat = outcome.replace("\n", " ⏎ ")[:220]
        print(f"| {self.name} | {'held' if ok else '**FAILED**'} | {code} | {rss:.0f} MB | {wall:.1f} s | {flat} |", flush=True)


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else ""


def mkfifo(path):
    os.mkfifo(path)
    return path


def sigint(at):
    return [(at, signal.SIGINT)]


# ---------------------------------------------------------------- item 1: budgets

def images_case(n, mb):
    c = Case(f"{n} generated images of {mb} MB in one reply (headless)")
    payload = base64.b64encode(os.urandom(mb * 3 // 4 * 1024 * 1024)).decode()

    def handler(path, body, conn):
        head(conn)
        conn.sendall(b'event: response.created\ndata: {"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}\n\n')
        for i in range(n):
            item = {"type": "image_generation_call", "id": f"ig_{i}", "status": "completed", "result": payload}
            ev = {"type": "response.output_item.done", "output_index": i, "item": item}
            conn.sendall(("event: response.output_item.done\ndata: " + json.dumps(ev) + "\n\n").encode())
        done = {"type": "response.completed", "response": {"id": "r", "status": "completed", "output": [],
                                                             "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}}
        conn.sendall(("event: response.completed\ndata: " + json.dumps(done) + "\n\n").encode())

    s = Server(handler)
    code, rss, wall, out, err = c.run(["--base-url", s.url, "--api", "responses", "-m", "m", "-p", "draw"], deadline=400)
    s.close()
    ok = rss < 1024 and code != "killed at deadline"
    c.report(ok, code, rss, wall, last_line(err))


def endless_models():
    c = Case("endless GET /models body (palaver models)")

    def handler(path, body, conn):
        head(conn, ctype="application/json")
        conn.sendall(b'{"object":"list","data":[')
        one = b'{"id":"model-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","object":"model"},' * 1000
        while True:
            conn.sendall(one)

    s = Server(handler)
    code, rss, wall, out, err = c.run(["--base-url", s.url, "models"], deadline=60)
    s.close()
    c.report(rss < 200 and code != "killed at deadline", code, rss, wall, last_line(err) or last_line(out))


def many_models():
    c = Case("100,000 models listed (palaver models)")
    data = json.dumps({"object": "list", "data": [{"id": f"model-{i:06d}", "object": "model"} for i in range(100_000)]}).encode()

    def handler(path, body, conn):
        head(conn, ctype="application/json", extra="Content-Length: %d\r\n" % len(data))
        conn.sendall(data)

    s = Server(handler)
    code, rss, wall, out, err = c.run(["--base-url", s.url, "models"], deadline=60)
    s.close()
    n = out.count("model-")
    c.report(code == 0 and n >= 100_000, code, rss, wall, f"{n} model ids printed")


def mcp_config(c, mode, extra=""):
    c.config(f'[mcp.servers.s]\ncommand = ["{sys.executable}", "{os.path.abspath(__file__)}", "mcp", "{mode}"]\n{extra}')


def mcp_huge_result():
    c = Case("MCP tool result of 300 MB")
    mcp_config(c, "huge-result")
    s = Server(tool_then_answer("big", [{}]))
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--tools", "auto", "--yes", "--json", "-p", "go"], deadline=90)
    s.close()
    sent = b"".join(s.bodies[1:])
    said = [l for l in out.splitlines() if '"tool_result"' in l or "limit" in l.lower()]
    ok = wall < 30 and b"x" * 1000 not in sent
    c.report(ok, code, rss, wall, (said[0][:200] if said else last_line(err)))


# ---------------------------------------------------------------- item 2: Ctrl+C, non-regular files

def attach_fifo():
    c = Case("-a on a FIFO (Ctrl+C at 3 s if it hangs)")
    fifo = mkfifo(os.path.join(c.work, "pipe"))
    s = Server(answer_handler())
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "-p", "hi", "-a", fifo], signals=sigint(3), deadline=10)
    s.close()
    c.report(code == 2 and wall < 2, code, rss, wall, last_line(err))


def mcp_never_init():
    c = Case("MCP server never answers initialize, Ctrl+C at 1.5 s")
    mcp_config(c, "never-init")
    s = Server(answer_handler())
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--tools", "auto", "-p", "hi"], signals=sigint(1.5), deadline=20)
    s.close()
    chat = [b for b in s.bodies if b]
    c.report(code == 130 and wall < 4 and not chat, code, rss, wall, f"requests sent: {len(chat)}; " + last_line(err))


def mcp_many_tools():
    c = Case("MCP server listing 100,000 tools")
    mcp_config(c, "many-tools")
    s = Server(answer_handler())
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--tools", "auto", "-p", "hi"], deadline=60)
    s.close()
    c.report(wall < 15 and code in (0, 1, 2), code, rss, wall, last_line(err))


def api_key_cmd():
    c = Case("api_key_cmd that sleeps, Ctrl+C at 1 s")
    s = Server(answer_handler())
    c.config(f'default_provider = "p"\n[providers.p]\nbase_url = "{s.url}"\napi_key_cmd = "sleep 30"\n')
    code, rss, wall, out, err = c.run(["-m", "m", "-p", "hi"], signals=sigint(1), deadline=20)
    s.close()
    c.report(code == 130 and wall < 3, code, rss, wall, last_line(err))


def prompt_set_fifo():
    c = Case("prompt set attaching a FIFO")
    mkfifo(os.path.join(c.work, "pipe"))
    with open(os.path.join(c.work, "set.jsonl"), "w") as f:
        f.write('{"prompt": "hi"}\n{"prompt": "look", "attach": ["pipe"]}\n')
    s = Server(answer_handler())
    code, rss, wall, out, err = c.run(["--base-url", s.url, "compare", "-m", "m", "-m", "n", "--prompts", "set.jsonl"],
                                      signals=sigint(5), deadline=15)
    s.close()
    c.report(code == 2 and wall < 3 and "line 2" in err, code, rss, wall, last_line(err))


def read_file_fifo():
    c = Case("read_file on a FIFO inside the workspace")
    mkfifo(os.path.join(c.work, "pipe"))
    s = Server(tool_then_answer("read_file", [{"path": "pipe"}]))
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--tools", "auto", "--json", "-p", "go"], deadline=20)
    s.close()
    res = json.loads(last_line(out)) if out.strip() else {}
    outp = (res.get("tool_calls") or [{}])[0].get("output") or ""
    c.report(code == 0 and wall < 5, code, rss, wall, "tool output: " + outp[:150])


# ---------------------------------------------------------------- item 4: secrets

def secret_read(name, path, content, link_outside=False):
    c = Case(name)
    full = os.path.join(c.work, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if link_outside:
        outside = os.path.join(tempfile.mkdtemp(prefix="p25-out-"), "notes.txt")
        with open(outside, "w") as f:
            f.write(content)
        os.link(outside, full)
    else:
        with open(full, "w") as f:
            f.write(content)
    s = Server(tool_then_answer("read_file", [{"path": path}]))
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--tools", "auto", "--json", "-p", "go"], deadline=20)
    s.close()
    marker = content.strip().splitlines()[1] if "\n" in content.strip() else content.strip()
    leaked = any(marker.encode() in b for b in s.bodies[1:])
    res = json.loads(last_line(out)) if out.strip() else {}
    outp = (res.get("tool_calls") or [{}])[0].get("output") or ""
    c.report(not leaked and code == 0, code, rss, wall, ("LEAKED to provider; " if leaked else "") + "tool output: " + outp[:160])


PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"


def git_hook_write():
    c = Case("write .git/hooks/pre-commit with --yes")
    os.makedirs(os.path.join(c.work, ".git", "hooks"))
    s = Server(tool_then_answer("write_file", [{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ncurl evil\n"}]))
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--tools", "auto", "--yes", "--json", "-p", "go"], deadline=20)
    s.close()
    written = os.path.exists(os.path.join(c.work, ".git", "hooks", "pre-commit"))
    res = json.loads(last_line(out)) if out.strip() else {}
    outp = (res.get("tool_calls") or [{}])[0].get("output") or ""
    c.report(not written, code, rss, wall, ("WRITTEN; " if written else "") + "tool output: " + outp[:160])


def url_userinfo():
    c = Case("-a https://user:pass@… URL attachment")
    png = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

    def handler(path, body, conn):
        if "img.png" in path:
            head(conn, ctype="image/png", extra="Content-Length: %d\r\n" % len(png))
            conn.sendall(png)
            return
        answer_handler()(path, body, conn)

    s = Server(handler)
    url = s.url.replace("http://", "http://alice:hunter2pw@") + "/img.png"
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--json", "-p", "what", "-a", url], deadline=20)
    s.close()
    blob = b""
    for root, _, files in os.walk(c.home):
        for fn in files:
            try:
                blob += open(os.path.join(root, fn), "rb").read()
            except OSError:
                pass
    shown = "hunter2pw" in out + err
    stored = b"hunter2pw" in blob
    c.report(not shown and not stored, code, rss, wall, f"password printed: {shown}; stored: {stored}; " + last_line(err)[:100])


# ---------------------------------------------------------------- item 5: prompt sets

def prompt_set_outside():
    c = Case("prompt set attaching .env, ../creds and /proc/self/status")
    setdir = os.path.join(c.work, "sets")
    os.makedirs(setdir)
    with open(os.path.join(setdir, ".env"), "w") as f:
        f.write("OPENAI_API_KEY=sk-live-zzzz\n")
    with open(os.path.join(c.work, "creds.txt"), "w") as f:
        f.write("secret\n")
    with open(os.path.join(setdir, "set.jsonl"), "w") as f:
        f.write('{"prompt": "a", "attach": [".env"]}\n{"prompt": "b", "attach": ["../creds.txt"]}\n{"prompt": "c", "attach": ["/proc/self/status"]}\n')
    s = Server(answer_handler())
    code, rss, wall, out, err = c.run(["--base-url", s.url, "compare", "-m", "m", "-m", "n", "--prompts", "sets/set.jsonl"], deadline=20)
    s.close()
    c.report(code == 2 and not s.bodies and "line" in err, code, rss, wall, " ⏎ ".join(err.strip().splitlines()[:3])[:220])


# ---------------------------------------------------------------- item 6: sandbox

def sandbox_case(name, command, must_fail, setup=None):
    """`~` is the real home directory (outside the workspace and the temp dir), as in the issue."""
    c = Case(name)
    listener = None
    if setup == "port":
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        command = command.replace("PORT", str(listener.getsockname()[1]))
    outside = os.path.expanduser("~/outside-file")
    if os.path.exists(outside):
        os.remove(outside)
    s = Server(tool_then_answer("run_command", [{"command": command}]))
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "--tools", "auto", "--yes", "--json", "-p", "go"], deadline=30)
    s.close()
    if listener:
        listener.close()
    escaped = os.path.exists(outside)
    if escaped:
        os.remove(outside)
    res = json.loads(last_line(out)) if out.strip() else {}
    outp = (res.get("tool_calls") or [{}])[0].get("output") or ""
    succeeded = outp.startswith("exit status: 0")
    ok = (not succeeded and not escaped) if must_fail else succeeded
    c.report(ok, code, rss, wall, ("WROTE ~/outside-file; " if escaped else "") + "tool output: " + outp.replace("\n", " ")[:180])


# ---------------------------------------------------------------- item 7: clean terminal, clean files

def models_escapes():
    c = Case("palaver models with escape codes in model ids")
    data = json.dumps({"object": "list", "data": [{"id": "evil\x1b]52;c;aGk=\x07\x1b[2Jmodel", "object": "model"}]}).encode()

    def handler(path, body, conn):
        head(conn, ctype="application/json", extra="Content-Length: %d\r\n" % len(data))
        conn.sendall(data)

    s = Server(handler)
    code, rss, wall, out, err = c.run(["--base-url", s.url, "models"], deadline=20)
    s.close()
    c.report("\x1b" not in out + err, code, rss, wall, "escape in output: %s" % ("\x1b" in out + err))


def models_error_escapes():
    c = Case("/models error with escape codes")

    def handler(path, body, conn):
        msg = json.dumps({"error": {"message": "no\x1b]0;pwned\x07 \x1b[2Jway"}}).encode()
        head(conn, "500 Oops", "application/json", "Content-Length: %d\r\n" % len(msg))
        conn.sendall(msg)

    s = Server(handler)
    code, rss, wall, out, err = c.run(["--base-url", s.url, "models"], deadline=20)
    s.close()
    c.report("\x1b" not in out + err, code, rss, wall, last_line(err)[:150])


def attach_error_escapes():
    c = Case("attachment error naming a file with escape codes")
    name = os.path.join(c.work, "evil\x1b[2J\x1b]0;t\x07.png")
    os.mkfifo(name)
    s = Server(answer_handler())
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "-p", "hi", "-a", name], deadline=10)
    s.close()
    c.report("\x1b" not in out + err and code == 2, code, rss, wall, last_line(err)[:150])


def md_report_html():
    """Model and prompt text that tries to leave its code fence and inject HTML."""
    c = Case("Markdown report: prompt and answer with HTML and fence breaks")
    evil = "```\n<script>alert(1)</script>\n<img src=x onerror=alert(2)>\n```"
    with open(os.path.join(c.work, "set.jsonl"), "w") as f:
        f.write(json.dumps({"prompt": evil}) + "\n")
    s = Server(answer_handler(evil))
    code, rss, wall, out, err = c.run(["--base-url", s.url, "compare", "-m", "m", "-m", "n", "--prompts", "set.jsonl",
                                       "--report", "r.md"], deadline=30)
    s.close()
    path = os.path.join(c.work, "r.md")
    md = open(path).read() if os.path.exists(path) else ""
    # HTML outside a code fence is what a Markdown viewer would render.
    raw, fence = [], None
    for line in md.splitlines():
        stripped = line.strip()
        ticks = len(stripped) - len(stripped.lstrip("`"))
        if fence is None and ticks >= 3:
            fence = ticks
        elif fence is not None and ticks >= fence and stripped == "`" * ticks:
            fence = None
        elif fence is None and ("<script" in line or "<img" in line):
            raw.append(line)
    c.report(bool(md) and not raw, code, rss, wall, f"raw HTML lines outside fences: {raw[:2]}; report bytes: {len(md)}")


def readonly_store():
    c = Case("compare runs|show|stats on a read-only store")
    with open(os.path.join(c.work, "set.jsonl"), "w") as f:
        f.write('{"prompt": "a"}\n')
    s = Server(answer_handler())
    c.run(["--base-url", s.url, "compare", "-m", "m", "-m", "n", "--prompts", "set.jsonl"], deadline=30)
    s.close()
    for root, dirs, files in os.walk(c.home):
        for n in files + dirs:
            os.chmod(os.path.join(root, n), 0o555 if n in dirs else 0o444)
    os.chmod(c.home, 0o555)
    results = []
    worst = (0, 0, 0)
    for sub in (["runs"], ["stats"]):
        code, rss, wall, out, err = c.run(["compare"] + sub, deadline=20)
        results.append((sub[0], code, last_line(err)[:80]))
        worst = max(worst, (code if isinstance(code, int) else 99, rss, wall))
    os.chmod(c.home, 0o755)
    ok = all(r[1] == 0 for r in results)
    c.report(ok, worst[0], worst[1], worst[2], "; ".join(f"{a}: exit {b} {e}" for a, b, e in results))


def dead_compare_run():
    c = Case("compare run whose process died (kill -9)")
    with open(os.path.join(c.work, "set.jsonl"), "w") as f:
        for i in range(50):
            f.write('{"prompt": "p%d"}\n' % i)

    def slow(path, body, conn):
        head(conn)
        conn.sendall(chat_chunk("a"))
        time.sleep(30)

    s = Server(slow)
    proc = subprocess.Popen([BIN, "--base-url", s.url, "compare", "-m", "m", "-m", "n", "--prompts", "set.jsonl"],
                            cwd=c.work, env=c.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(2)
    proc.kill()
    proc.wait()
    s.close()
    code, rss, wall, out, err = c.run(["compare", "runs"], deadline=20)
    line = last_line(out)
    c.report("stopped" in line and "running" not in line, code, rss, wall, line[:160])


def gzip_body():
    c = Case("gzip-compressed error body")

    def handler(path, body, conn):
        data = gzip.compress(json.dumps({"error": {"message": "hidden"}}).encode())
        head(conn, "500 Oops", "application/json", "Content-Encoding: gzip\r\nContent-Length: %d\r\n" % len(data))
        conn.sendall(data)

    s = Server(handler)
    code, rss, wall, out, err = c.run(["--base-url", s.url, "-m", "m", "-p", "hi"], deadline=20)
    s.close()
    c.report("compress" in err.lower() and code == 1, code, rss, wall, last_line(err)[:150])


# ---------------------------------------------------------------- the chat screen, in tmux

class Screen:
    """palaver's chat screen in a tmux server of its own, started from a shell so that the
    terminal's state after palaver exits can be read."""

    def __init__(self, case, args, width=140, height=40):
        self.case = case
        self.sock = os.path.join(case.home, "tmux.sock")
        self.tmux("new-session", "-d", "-x", str(width), "-y", str(height), "sh")
        envs = " ".join(f"{k}='{v}'" for k, v in (("PALAVER_HOME", case.home), ("OPENAI_API_KEY", "sk-test-SECRET-123456")))
        self.keys(f"cd '{case.work}' && env {envs} {BIN} " + " ".join(f"'{a}'" for a in args), "Enter")
        self.start = time.time()
        self.pid = None
        for _ in range(100):
            shell = self.tmux("display", "-p", "#{pane_pid}").strip()
            kids = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True).stdout.split()
            if kids:
                self.pid = int(kids[0])
                break
            time.sleep(0.1)

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.sock] + list(args), capture_output=True, text=True).stdout

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "0", *keys)

    def text(self, literal):
        self.tmux("send-keys", "-t", "0", "-l", literal)

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "0")

    def wait_for(self, needle, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if needle in self.screen():
                return True
            time.sleep(0.2)
        return False

    def peak_mb(self):
        try:
            for line in open(f"/proc/{self.pid}/status"):
                if line.startswith("VmHWM"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def alive(self):
        return self.pid is not None and os.path.exists(f"/proc/{self.pid}")

    def wait_exit(self, timeout=20):
        end = time.time() + timeout
        while self.alive() and time.time() < end:
            time.sleep(0.1)
        return not self.alive()

    def close(self):
        self.tmux("kill-server")


def history(case, *args):
    r = subprocess.run([BIN, "history"] + list(args), env=case.env, capture_output=True, text=True, cwd=case.work)
    return r.stdout


def tui_images():
    c = Case("40 generated images of 20 MB in one reply (chat screen)")
    payload = base64.b64encode(os.urandom(15 * 1024 * 1024)).decode()
    done = threading.Event()

    def handler(path, body, conn):
        if path.endswith("/models"):
            return answer_handler()(path, body, conn)
        head(conn)
        conn.sendall(b'event: response.created\ndata: {"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}\n\n')
        for i in range(40):
            item = {"type": "image_generation_call", "id": f"ig_{i}", "status": "completed", "result": payload}
            ev = {"type": "response.output_item.done", "output_index": i, "item": item}
            conn.sendall(("event: response.output_item.done\ndata: " + json.dumps(ev) + "\n\n").encode())
        end = {"type": "response.completed", "response": {"id": "r", "status": "completed", "output": [],
                                                            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}}
        conn.sendall(("event: response.completed\ndata: " + json.dumps(end) + "\n\n").encode())
        done.set()

    s = Server(handler)
    t = Screen(c, ["--base-url", s.url, "--api", "responses", "-m", "m"])
    t.wait_for("Type a message", 20)
    t.text("draw forty")
    t.keys("Enter")
    done.wait(300)
    settled = t.wait_for("not kept", 120) or t.wait_for("dropped", 5)
    time.sleep(3)
    peak = t.peak_mb()
    t.keys("C-q")
    t.wait_exit(60)
    wall = time.time() - t.start
    t.close()
    s.close()
    listed = history(c, "list")
    saved = bool(listed.strip())
    c.report(saved and peak < 800, "quit", peak, wall, f"notice on screen: {settled}; conversation saved: {saved}")


def tui_sighup():
    c = Case("SIGHUP while a reply streams (chat screen)")

    def handler(path, body, conn):
        if path.endswith("/models"):
            return answer_handler()(path, body, conn)
        head(conn)
        conn.sendall(chat_chunk("partial words before the hangup "))
        time.sleep(60)

    s = Server(handler)
    t = Screen(c, ["--base-url", s.url, "-m", "m"])
    t.wait_for("Type a message", 20)
    t.text("tell me")
    t.keys("Enter")
    t.wait_for("partial words", 30)
    time.sleep(1)
    peak = t.peak_mb()
    os.kill(t.pid, signal.SIGHUP)
    exited = t.wait_exit(10)
    wall = time.time() - t.start
    alt = t.tmux("display", "-p", "#{alternate_on}").strip()
    t.keys("echo still-here", "Enter")
    time.sleep(0.5)
    sane = "still-here" in t.screen()
    t.close()
    s.close()
    listed = history(c, "list").split()
    shown = history(c, "show", listed[0]) if listed else ""
    kept = "partial words" in shown
    ok = exited and alt == "0" and sane and kept
    c.report(ok, "exited" if exited else "alive", peak, wall,
             f"alternate screen after: {alt}; shell usable: {sane}; partial reply kept: {kept}")


def tui_private_key():
    c = Case("read_file of a workspace file holding a private key (chat screen)")
    os.makedirs(os.path.join(c.work, "notes"))
    with open(os.path.join(c.work, "notes", "deploy.txt"), "w") as f:
        f.write(PEM)
    s = Server(tool_then_answer("read_file", [{"path": "notes/deploy.txt"}]))
    t = Screen(c, ["--base-url", s.url, "-m", "m", "--tools", "auto"])
    t.wait_for("Type a message", 20)
    t.text("read it")
    t.keys("Enter")
    asked = t.wait_for("private key", 30)
    scr = t.screen()
    names = "deploy.txt" in scr
    peak = t.peak_mb()
    wall = time.time() - t.start
    t.keys("C-q")
    t.wait_exit(10)
    t.close()
    s.close()
    sent = any(b"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" in b for b in s.bodies)
    c.report(asked and names and not sent, "quit", peak, wall, f"asked naming the file and the kind: {asked and names}; key sent: {sent}")



def tui_other_writer():
    c = Case("another palaver adds a turn while the chat screen has the conversation open")
    s = Server(answer_handler("an answer"))
    c.run(["--base-url", s.url, "-m", "m", "-p", "first turn"], deadline=20)
    conv = history(c, "list").split()[0]
    t = Screen(c, ["--base-url", s.url, "-m", "m", "--resume", conv])
    t.wait_for("first turn", 20)
    code, _, _, _, _ = c.run(["--base-url", s.url, "-m", "m", "--resume", conv, "-p", "from elsewhere"], deadline=20)
    t.text("from the screen")
    t.keys("Enter")
    t.wait_for("from elsewhere", 20)
    time.sleep(2)
    scr = t.screen()
    peak = t.peak_mb()
    wall = time.time() - t.start
    t.keys("C-q")
    t.wait_exit(10)
    t.close()
    s.close()
    shown = history(c, "show", conv)
    order = [shown.find(x) for x in ("first turn", "from elsewhere", "from the screen")]
    kept = all(o >= 0 for o in order) and order == sorted(order)
    c.report(kept and "from elsewhere" in scr, "quit", peak, wall,
             f"other turn on screen: {'from elsewhere' in scr}; all three in order in the store: {kept}; headless exit {code}")


CASES = [
    lambda: images_case(30, 15),
    lambda: images_case(40, 20),
    endless_models,
    many_models,
    mcp_huge_result,
    attach_fifo,
    mcp_never_init,
    mcp_many_tools,
    api_key_cmd,
    prompt_set_fifo,
    read_file_fifo,
    lambda: secret_read("read_file of a workspace file holding a private key (headless)", "notes/deploy.txt", PEM),
    lambda: secret_read("read_file of .npmrc", ".npmrc", "registry=x\n//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n"),
    lambda: secret_read("read_file of .docker/config.json", ".docker/config.json", '{\n"auths":{"x":{"auth":"dXNlcjpwYXNzd29yZA=="}}\n}\n'),
    lambda: secret_read("read_file of terraform.tfstate", "terraform.tfstate", '{\n"secret_value":"s3cr3t-tfstate"\n}\n'),
    lambda: secret_read("read_file of a hard link to a file outside", "linked.txt", "outside\nhard-link-content-xyz\n", link_outside=True),
    lambda: secret_read("read_file of a file holding an AWS key", "src/settings.py", "x=1\nAWS_KEY = 'AKIAIOSFODNN7EXAMPLE'\n"),
    git_hook_write,
    url_userinfo,
    prompt_set_outside,
    lambda: sandbox_case("sandbox: echo x > ~/outside-file", "echo x > ~/outside-file", True),
    lambda: sandbox_case("sandbox: TCP connect to a local port", "python3 -c \"import socket; socket.create_connection(('127.0.0.1', PORT))\"", True, "port"),
    lambda: sandbox_case("sandbox: UDP send to a local port", "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))\"", True),
    lambda: sandbox_case("sandbox: echo x > inside-file (must succeed)", "echo x > inside-file && echo wrote", False),
    models_escapes,
    models_error_escapes,
    attach_error_escapes,
    md_report_html,
    readonly_store,
    dead_compare_run,
    gzip_body,
    tui_images,
    tui_sighup,
    tui_private_key,
    tui_other_writer,
]


def main():
    print(f"binary: {BIN}")
    print("| case | outcome | exit | peak RSS | wall | what palaver said |")
    print("|---|---|---|---|---|---|")
    for case in CASES:
        probe = Case.__new__(Case)
        if ONLY:
            name = getattr(case, "__name__", "")
            src = case.__code__.co_consts
            text = name + " " + " ".join(str(x) for x in src)
            if not any(o in text for o in ONLY):
                continue
        try:
            case()
        except Exception as e:  # a broken case is reported, the others still run
            print(f"| {getattr(case, '__name__', 'case')} | **ERROR in harness** | - | - | - | {e!r} |", flush=True)
    for d in MADE:
        subprocess.run(["chmod", "-R", "u+rwx", d], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)
    failed = [r for r in ROWS if r[1] != "held"]
    print(f"\n{len(ROWS) - len(failed)} held, {len(failed)} failed")


if __name__ == "__main__":
    main()
