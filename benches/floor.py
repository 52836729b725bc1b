#!/usr/bin/env python3
"""The floor bench: palaver against curl, and the chat screen against headless, on the same local
100,000-delta streams, in one run, alternating, CPU time (user + system) of each client process.

usage: floor.py [PALAVER] [--rounds N] [--deltas N] [--only headless|screen] [--bulk] [--history N]
(benches/floor.sh builds the release binary and runs this.)

A local server (a process of its own, on 127.0.0.1) answers every POST with a prebuilt SSE body
of chat chunks, the same bytes every time, one write per event as a model server writes each
token (--bulk: 64 KB writes); the model name picks the stream:
  bench-plain     " w12"-style words, no newline at all (the headless criterion bench's stream)
  bench-md        markdown: headings, prose, lists, a table, a quote and a 40-line Rust block
                  per section (about a third of its lines are code)

Each round runs, in this order: curl, palaver -p (plain stdout), palaver -p --json, the chat
screen on the markdown stream, palaver -p on it, the chat screen on the plain stream, palaver -p
on it. Output goes into a pipe this script drains. The chat screen runs in a 120x40 pseudo-
terminal this script drives (it answers the terminal's queries): it types the prompt, waits
until the server has sent the whole stream and palaver's CPU time stops moving, then ends it
with SIGTERM; each run's history is checked to hold the whole reply. CPU times come from
wait4's rusage (every thread, to the microsecond). Medians over the rounds give the ratios; the
targets of issue 18 are checked at the end.

--history N (issue 31: no delta's or frame's work grows with the history) adds two runs of the
chat screen answering in an N-message conversation reopened with --resume (a store of it alone,
built once by bigstore.py's generator, copied for each run), on the markdown and the plain
stream; their CPU against the fresh runs' is checked (target: at most 1.1x). The machine is shared: compare medians of runs made
in the same invocation, not across invocations.
"""
import argparse
import json
import os
import pty
import re
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import fcntl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# ---------------------------------------------------------------- the streams


def chunk(content):
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "bench",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }


def sse(deltas):
    """The stream as a list of events, each the bytes of one server write."""
    parts = []
    for d in deltas:
        parts.append(("data: " + json.dumps(chunk(d), separators=(",", ":")) + "\n\n").encode())
    end = {"id": "chatcmpl-bench", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    parts.append(("data: " + json.dumps(end, separators=(",", ":")) + "\n\ndata: [DONE]\n\n").encode())
    return parts


def plain_deltas(n):
    return [f" w{i % 100}" for i in range(n)]


CODE = [
    "fn process_{i}(items: &[Item], limit: usize) -> Result<Vec<String>, Error> {{",
    "    // Collect the names of the items that pass the filter, at most `limit` of them.",
    "    let mut out = Vec::with_capacity(limit);",
    "    for (index, item) in items.iter().enumerate() {{",
    "        if index >= limit {{",
    "            break;",
    "        }}",
    "        let name = format!(\"{{}}-{{}}\", item.name, index * {i});",
    "        match item.kind {{",
    "            Kind::Small => out.push(name.to_lowercase()),",
    "            Kind::Large if item.size > 1024 => out.push(name.to_uppercase()),",
    "            _ => return Err(Error::new(\"unexpected kind in section {i}\")),",
    "        }}",
    "    }}",
    "    Ok(out)",
    "}}",
    "",
]


def section(i):
    code = "\n".join(line.format(i=i + k) for k in range(3) for line in CODE[: 17 if k < 2 else 6])
    return (
        f"## Part {i}: what the data says\n\n"
        f"The first thing to notice about part {i} is that the **numbers** move together, and that the "
        "`process` step does most of the work. A model writing an answer like this one tends to produce "
        "paragraphs of three or four sentences, then a list, then some code. This paragraph is long "
        "enough to wrap a few times on a terminal of a hundred and twenty columns.\n\n"
        f"- the first point about item {i}, stated plainly\n"
        "- a second point, a little longer than the first one, with *emphasis*\n"
        "- a third point with a [link](https://example.com/docs) in it\n\n"
        f"```rust\n{code}\n```\n\n"
        "| Option | Cost | Notes |\n|---|---:|---|\n"
        f"| fast | {i} | good for small inputs |\n| careful | {i * 3} | slower but thorough |\n\n"
        f"> A quoted remark about part {i}, the kind of aside a model likes to add.\n\n"
        "That is all for this part; the next one looks at a different angle of the same question.\n\n"
    )


def markdown_deltas(n):
    out = []
    i = 0
    while len(out) < n:
        out.extend(re.findall(r"\s*\S+", section(i)))
        i += 1
    deltas = out[:n]
    # End the last line so the answer is whole lines (the code fence may stay open: fine).
    deltas[-1] += "\n"
    return deltas


# ---------------------------------------------------------------- the server


def serve(deltas, per_event):
    """The server process: prints its port, then a line each time it has sent a whole stream.
    It runs apart from the driver so that draining the clients' output never slows it down."""
    bodies = {"bench-plain": sse(plain_deltas(deltas)), "bench-md": sse(markdown_deltas(deltas))}
    if not per_event:
        for name, events in list(bodies.items()):
            whole = b"".join(events)
            bodies[name] = [whole[o : o + 65536] for o in range(0, len(whole), 65536)]
    for name, events in bodies.items():
        print(f"size {name} {sum(map(len, events))}", flush=True)

    serve_bodies(bodies, lambda model: bodies.get(model, bodies["bench-plain"]))


def serve_bodies(bodies, pick):
    """Serves `bodies` (model name -> the stream's pieces) as a chat endpoint: `GET` lists the
    models, `POST` streams the body `pick(model)` chooses (model None when the request names
    none), then closes. Prints its port, then "sent" each time it has sent a whole stream."""
    said = threading.Lock()

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_GET(self):
            body = json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in bodies]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b"{}"
            try:
                model = json.loads(raw).get("model")
            except ValueError:
                model = None
            body = pick(model)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                send = self.connection.sendall
                for piece in body:
                    send(piece)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            with said:  # one line a stream, even when streams finish together
                print("sent", flush=True)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(f"port {httpd.server_address[1]}", flush=True)
    httpd.serve_forever()


class Server:
    """The server process, seen from the driver: its port, and how many streams it has sent.
    `argv`: another server to start (shapes.py's), which prints the same lines."""

    def __init__(self, deltas, per_event, argv=None):
        if argv is None:
            argv = [sys.executable, os.path.abspath(__file__), "--serve", "--deltas", str(deltas)]
            if not per_event:
                argv.append("--bulk")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        self.sent = 0
        self.cond = threading.Condition()
        self.sizes = {}
        self.port = None
        for line in self.proc.stdout:
            word, *rest = line.split()
            if word == "size":
                self.sizes[rest[0]] = int(rest[1])
            elif word == "port":
                self.port = int(rest[0])
                break
        if self.port is None:
            sys.exit("the bench server did not start")
        threading.Thread(target=self.watch, daemon=True).start()

    def watch(self):
        for line in self.proc.stdout:
            if line.startswith("sent"):
                with self.cond:
                    self.sent += 1
                    self.cond.notify_all()

    def wait_sent(self, after, timeout):
        """Waits until more than `after` streams have been sent."""
        with self.cond:
            return self.cond.wait_for(lambda: self.sent > after, timeout)

    def stop(self):
        self.proc.kill()


# ---------------------------------------------------------------- running clients


def cpu(ru):
    return ru.ru_utime + ru.ru_stime


class Timeout(Exception):
    """A run went past its time allowance and was killed; `cpu`: its CPU seconds until then."""

    def __init__(self, seconds):
        super().__init__(f"killed after {seconds:.1f} s of CPU")
        self.cpu = seconds


def drain(fd_or_file):
    def run():
        try:
            while True:
                b = os.read(fd_or_file, 65536)
                if not b:
                    break
        except OSError:
            pass

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def run_pipe(argv, env, timeout=None):
    """Runs a command with stdout into a pipe this script drains; returns its CPU seconds.
    `timeout`: wall seconds after which it is killed and Timeout raised."""
    r, w = os.pipe()
    p = subprocess.Popen(argv, stdout=w, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
    os.close(w)
    t = drain(r)
    killer = threading.Timer(timeout, p.kill) if timeout else None
    if killer:
        killer.start()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    t.join()
    os.close(r)
    if killer:
        killer.cancel()
        if killer.finished.is_set() and p.returncode == -signal.SIGKILL:
            raise Timeout(cpu(ru))
    if p.returncode != 0:
        sys.exit(f"{argv[0]} exited with {p.returncode}: {' '.join(argv)}")
    return cpu(ru)


def ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return -1


def task_cpu(pid):
    """CPU seconds of the threads of `pid` alive now (their schedstat: nanoseconds on a CPU)."""
    total = 0
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, IndexError, ValueError):
                pass
    except OSError:
        pass
    return total / 1e9


def run_screen(palaver, url, model, env, server, extra=(), ready_on=(b"Type a message", b" ready"), answer=None,
               timeout=None):
    """The chat screen in a 120x40 pseudo-terminal: type a prompt, wait for the whole reply and for
    palaver to go idle, end it with SIGTERM; returns its CPU seconds. `extra`: more arguments;
    `ready_on`: texts of which one on screen says it is up (a reopened conversation has its own);
    `answer`: a list to append the CPU of the answer alone to (from the prompt typed until idle,
    without the start nor the reopening); `timeout`: wall seconds from the prompt after which it
    is killed and Timeout raised."""
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        # FLOOR_WRAP (say "perf record -g -o /tmp/screen.data") runs the chat screen under a profiler.
        wrap = os.environ.get("FLOOR_WRAP", "").split()
        argv = wrap + [palaver, "--base-url", url, "-m", model, *extra]
        os.execvpe(argv[0], argv, env)
    seen = bytearray()
    lock = threading.Lock()
    ready = threading.Event()

    def reader():
        tail = b""
        try:
            while True:
                b = os.read(fd, 65536)
                if not b:
                    break
                # Answer the terminal queries a real terminal would (primary device attributes,
                # cursor position); the kitty keyboard query goes unanswered (not supported).
                # (A query may be split across two reads: look at the end of the last one too.)
                window = tail + b
                if b"\x1b[c" in window[-len(b) - 3 :] and b"\x1b[c" not in tail:
                    os.write(fd, b"\x1b[?62;22c")
                if b"\x1b[6n" in window[-len(b) - 3 :] and b"\x1b[6n" not in tail:
                    os.write(fd, b"\x1b[1;1R")
                tail = window[-3:]
                with lock:
                    seen.extend(b)
                    if any(r in seen for r in ready_on):
                        ready.set()
                    del seen[:-256]
        except OSError:
            pass

    threading.Thread(target=reader, daemon=True).start()
    if not ready.wait(20):
        os.kill(pid, signal.SIGKILL)
        sys.exit(f"the chat screen never showed its welcome text: {bytes(seen[-600:])!r}")
    # A reopened conversation may still be drawing its screen: let it settle before typing.
    time.sleep(0.3 if extra else 0)
    before = task_cpu(pid)
    # FLOOR_ATTACH (say "perf record -g -o /tmp/answer.data") profiles the answer alone: attached
    # once the screen is up, stopped once it is idle again.
    attach = os.environ.get("FLOOR_ATTACH", "").split()
    prof = subprocess.Popen([*attach, "-p", str(pid)], stderr=subprocess.DEVNULL) if attach else None
    time.sleep(0.3 if prof else 0)
    sent = server.sent
    os.write(fd, b"go")
    start = time.monotonic()
    time.sleep(0.05)
    os.write(fd, b"\r")

    def reap(sig):
        os.kill(pid, sig)
        _, _, ru = os.wait4(pid, 0)
        try:
            os.close(fd)
        except OSError:
            pass
        return ru

    def killed():
        return Timeout(cpu(reap(signal.SIGKILL)))

    if not server.wait_sent(sent, timeout or 120):
        if timeout:
            raise killed()
        os.kill(pid, signal.SIGKILL)
        sys.exit("the server never finished a stream for the chat screen")
    # The reply is sent; palaver is done when its CPU time stops moving.
    last, still = ticks(pid), 0
    while still < 4:
        if timeout and time.monotonic() - start > timeout:
            if prof:
                prof.send_signal(signal.SIGINT)
                prof.wait()
            raise killed()
        time.sleep(0.15)
        now = ticks(pid)
        still = still + 1 if now == last else 0
        last = now
    if answer is not None:
        answer.append(task_cpu(pid) - before)
    if prof:
        prof.send_signal(signal.SIGINT)
        prof.wait()
    return cpu(reap(signal.SIGTERM))


# ---------------------------------------------------------------- a long history


def history_runs(palaver, url, server, homes, n, answers):
    """The chat screen answering in an `n`-message conversation reopened with --resume, each run
    in a fresh copy of the store (a run adds its turn to it); the CPU of each answer alone goes
    to answers["hist-md answer"] / ["hist-plain answer"]."""
    import shutil

    import bigstore

    store = bigstore.only_big_store(palaver, n)
    count = iter(range(1_000_000))

    def run(model, name):
        home = os.path.join(homes, f"{name}-{next(count)}")
        shutil.copytree(store, home)
        env = dict(os.environ, PALAVER_HOME=home, OPENAI_API_KEY="sk-bench", TERM="xterm-256color")
        env.pop("NO_COLOR", None)
        extra = ["--resume", bigstore.BIG_ID]
        return run_screen(palaver, url, model, env, server, extra, (bigstore.MARK_LAST.encode(),),
                          answers.setdefault(f"{name} answer", []))

    return [
        ("screen md +hist", lambda: run("bench-md", "hist-md")),
        ("screen plain +hist", lambda: run("bench-plain", "hist-plain")),
    ]


def history_check(palaver, homes, n):
    """The reopened runs really answered: the last one's conversation holds n + 2 messages."""
    import bigstore

    last = sorted((d for d in os.listdir(homes) if d.startswith("hist-")), key=lambda d: int(d.rsplit("-", 1)[1]))
    if not last:
        return "history runs: none"
    env = dict(os.environ, PALAVER_HOME=os.path.join(homes, last[-1]))
    out = subprocess.run([palaver, "history", "list", "--json"], env=env, capture_output=True, text=True).stdout
    got = [json.loads(l).get("messages") for l in out.splitlines() if l.strip()]
    note = "ok" if got == [n + 2] else "INCOMPLETE"
    return f"history runs: the reopened conversation holds {got} messages, {n + 2} expected ({note})"


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("palaver", nargs="?", default="target/release/palaver")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--deltas", type=int, default=100_000)
    ap.add_argument("--only", choices=["headless", "screen"])
    ap.add_argument("--bulk", action="store_true", help="64 KB server writes instead of one write per event")
    ap.add_argument("--history", type=int, default=0, metavar="N",
                    help="also answer in a reopened N-message conversation (the chat screen)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.deltas, not args.bulk)
        return 0
    palaver = os.path.abspath(args.palaver)

    server = Server(args.deltas, not args.bulk)
    url = f"http://127.0.0.1:{server.port}/v1"
    writes = "64 KB writes" if args.bulk else "one write per event"
    for name in ("bench-plain", "bench-md"):
        print(f"stream {name}: {args.deltas} deltas, {server.sizes[name] / 1e6:.1f} MB of SSE, {writes}")

    homes = tempfile.mkdtemp(prefix="palaver-floor-")
    def env_for(name):
        home = os.path.join(homes, name)
        os.makedirs(home, exist_ok=True)
        env = dict(os.environ, PALAVER_HOME=home, OPENAI_API_KEY="sk-bench", TERM="xterm-256color")
        env.pop("NO_COLOR", None)
        return env

    req = json.dumps({"model": "bench-plain", "stream": True, "messages": [{"role": "user", "content": "go"}]})
    curl = ["curl", "-sS", "-N", "-X", "POST", "-H", "Content-Type: application/json", "-d", req,
            f"{url}/chat/completions"]
    head = lambda model, *extra: [palaver, "--base-url", url, "-m", model, "-p", "go", *extra]

    runs = []
    answers = {}  # the chat screen's CPU for the answer alone, by run
    if args.only != "screen":
        runs += [
            ("curl", lambda: run_pipe(curl, env_for("curl"))),
            ("headless plain", lambda: run_pipe(head("bench-plain"), env_for("plain"))),
            ("headless --json", lambda: run_pipe(head("bench-plain", "--json"), env_for("json"))),
        ]
    if args.only != "headless":
        runs += [
            ("screen md", lambda: run_screen(palaver, url, "bench-md", env_for("screen-md"), server,
                                             answer=answers.setdefault("screen-md answer", []))),
            ("headless md", lambda: run_pipe(head("bench-md"), env_for("head-md"))),
            ("screen plain", lambda: run_screen(palaver, url, "bench-plain", env_for("screen-plain"), server,
                                                answer=answers.setdefault("screen-plain answer", []))),
            ("headless plain'", lambda: run_pipe(head("bench-plain"), env_for("plain2"))),
        ]
    resumed = history_runs(palaver, url, server, homes, args.history, answers) if args.history and args.only != "headless" else []
    runs += resumed
    times = {name: [] for name, _ in runs}
    for r in range(args.rounds):
        for name, f in runs:
            times[name].append(f())
        print(f"round {r + 1}: " + "  ".join(f"{n} {times[n][-1]:.3f}" for n, _ in runs), flush=True)

    med = {n: statistics.median(v) for n, v in times.items()}
    print("\nmedian CPU seconds (user+sys) over", args.rounds, "rounds:")
    for n, _ in runs:
        print(f"  {n:18} {med[n]:.3f}   (min {min(times[n]):.3f}, max {max(times[n]):.3f})")
    checks = []
    if args.only != "screen":
        checks += [
            ("headless plain / curl", med["headless plain"] / med["curl"], 1.5),
            ("headless --json / curl", med["headless --json"] / med["curl"], 1.5),
        ]
    if args.only != "headless":
        checks += [
            ("screen / headless, markdown", med["screen md"] / med["headless md"], 1.5),
            ("screen / headless, plain text", med["screen plain"] / med["headless plain'"], 1.2),
        ]
    if resumed:
        # The answer alone (from the prompt until idle): the reopening itself is not a delta's work.
        am = {n: statistics.median(v) for n, v in answers.items()}
        print("\nthe answer alone (prompt typed until idle), median CPU seconds:")
        for n in ("screen-md answer", "hist-md answer", "screen-plain answer", "hist-plain answer"):
            print(f"  {n:20} {am[n]:.3f}   (min {min(answers[n]):.3f}, max {max(answers[n]):.3f})")
        checks += [
            (f"answer in {args.history} msgs / fresh, md", am["hist-md answer"] / am["screen-md answer"], 1.1),
            (f"answer in {args.history} msgs / fresh, plain", am["hist-plain answer"] / am["screen-plain answer"], 1.1),
        ]
    server.stop()
    # The chat screen really showed the answers: each run saved the whole of it.
    for name, model in (("screen-md", "bench-md"), ("screen-plain", "bench-plain")):
        if args.only == "headless":
            break
        env = env_for(name)
        listed = subprocess.run([palaver, "history", "list", "--json"], env=env, capture_output=True, text=True)
        convs = [json.loads(l) for l in listed.stdout.splitlines() if l.strip()]
        full = [c for c in convs if c.get("messages") == 2]
        note = "ok" if len(full) == args.rounds else "INCOMPLETE"
        print(f"\n{name}: {len(full)} of {args.rounds} conversations saved with their reply ({note})", end="")
        if convs:
            exported = subprocess.run([palaver, "history", "export", convs[0]["id"], "--format", "json"], env=env,
                                      capture_output=True, text=True)
            msgs = json.loads(exported.stdout or "{}").get("messages", [])
            got = len(msgs[-1]["choices"][0]["content"]) if msgs else 0
            want = len("".join(plain_deltas(args.deltas) if model == "bench-plain" else markdown_deltas(args.deltas)))
            print(f"; last reply {got} bytes of {want} ({'ok' if got == want else 'SHORT'})", end="")
    if resumed:
        print("\n" + history_check(palaver, homes, args.history), end="")
    print("\n\nratios (target):")
    ok = True
    for name, ratio, target in checks:
        good = ratio <= target
        ok &= good
        print(f"  {name:30} {ratio:5.2f}x  (<= {target}x)  {'ok' if good else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
