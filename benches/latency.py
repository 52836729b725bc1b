#!/usr/bin/env python3
"""The latency bench (issue 31): the real chat screen in a pseudo-terminal, typing into its
composer, timing each key from the moment its bytes are written to the terminal until its glyph
comes back in palaver's output, and each frame's work (PALAVER_FRAME_LOG, one line a frame:
its draw, and the messages applied before it), while

  idle     nothing happens
  stream   a markdown answer with long code blocks (100,000 deltas) streams at full speed
  end      that answer ends and its final layout is built (keys and frames from the first
           frame after the last delta, for a second)
  compare  four compare columns stream at once (25,000 deltas each)
  paragraph  one paragraph of 3.2 MB streams (issue 41: shapes.py's `paragraph` shape, lines of
           ~70 characters joined by single newlines, 400,000 deltas of 8 bytes)
  paragraph end  that answer ends

It prints p50, p99 and the worst of each, with the sample counts. A report, not a test: nothing
is asserted (the targets of issue 31 are printed beside the figures). The machine may be shared;
the load average is printed with the figures.

usage: latency.py [PALAVER] [--deltas N] [--compare-deltas N] [--paragraph-deltas N] [--rounds N]
                  [--keys N] [--only idle|stream|compare|paragraph]

Keys are Greek letters, each erased with Backspace before the next, so the composer never
wraps and no glyph of the answers (ASCII) or of the screen's frame can be taken for one.
"""
import argparse
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import floor  # noqa: E402  (the floor bench's stream helpers)
import shapes  # noqa: E402  (the shapes bench's answers)

GLYPHS = "αβγδεζηθικλμνξοπρστυφχψω"

# ---------------------------------------------------------------- the streams and the server


def code_section(i):
    """Prose, then a code block of about 200 lines: the kind of answer a long highlight comes from."""
    code = "\n".join(line.format(i=i + k) for k in range(12) for line in floor.CODE)
    return (
        f"## Part {i}\n\nThe **function** below handles part {i}; it is long because it has to be, "
        "and the explanation after it says why each branch is there.\n\n"
        f"```rust\n{code}\n```\n\n"
        f"- the first point about part {i}\n- a second one, with *emphasis*\n\n"
    )


def code_deltas(n):
    out, i = [], 0
    while len(out) < n:
        out.extend(re.findall(r"\s*\S+", code_section(i)))
        i += 1
    deltas = out[:n]
    deltas[-1] += "\n"
    return deltas


def serve(deltas, compare_deltas, paragraph_deltas):
    # The server stands in for a provider on another machine: its CPU is not palaver's to share.
    # On a 2-core machine a server sending four streams at full speed would otherwise take the
    # core palaver's screen runs on, and the frames would measure the server, not palaver.
    # Niceness alone is not enough: traced with `perf sched`, the server's four threads (handing
    # Python's lock to one another) still preempted palaver's thread after 20-30 µs of its work,
    # over 30 times in 20 ms, and a frame of 8 ms took 56. SCHED_IDLE runs the server only on a
    # core nothing else wants, and never ahead of palaver.
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)
    bodies = {
        "bench-code": floor.sse(code_deltas(deltas)),
        "bench-col": floor.sse(floor.markdown_deltas(compare_deltas)),
    }
    if paragraph_deltas:
        bodies["bench-para"] = floor.sse(shapes.split(shapes.text("paragraph", paragraph_deltas)))

    # Compare columns (models named bench-col…) get the markdown stream, bench-para the paragraph,
    # the rest the code one.
    def pick(model):
        model = model or ""
        if model.startswith("bench-col"):
            return bodies["bench-col"]
        return bodies.get(model, bodies["bench-code"])

    floor.serve_bodies(bodies, pick)


class Server:
    def __init__(self, deltas, compare_deltas, paragraph_deltas):
        argv = [sys.executable, os.path.abspath(__file__), "--serve", "--deltas", str(deltas),
                "--compare-deltas", str(compare_deltas), "--paragraph-deltas", str(paragraph_deltas)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        self.sent = 0
        self.cond = threading.Condition()
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "port":
            sys.exit("the bench server did not start")
        self.port = int(line[1])
        threading.Thread(target=self.watch, daemon=True).start()

    def watch(self):
        for line in self.proc.stdout:
            if line.startswith("sent"):
                with self.cond:
                    self.sent += 1
                    self.cond.notify_all()

    def wait_sent(self, count, timeout):
        with self.cond:
            return self.cond.wait_for(lambda: self.sent >= count, timeout)

    def stop(self):
        self.proc.kill()


# ---------------------------------------------------------------- the chat screen in a pty


class Screen:
    """palaver in a 120x40 pseudo-terminal that answers the terminal's queries and watches its
    output for the glyph of the key last typed."""

    def __init__(self, argv, env, watch=None):
        """`watch`: a text whose first appearance is timed from the start (see `shown`)."""
        self.log = tempfile.NamedTemporaryFile(prefix="palaver-frames-", delete=False).name
        env = dict(env, PALAVER_FRAME_LOG=self.log)
        self.lock = threading.Lock()
        self.ev, self.seen_at = threading.Event(), []
        # (bytes, event, [time seen])
        self.want = (watch.encode(), self.ev, self.seen_at) if watch else None
        self.t0 = time.monotonic()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
            os.execvpe(argv[0], argv, env)
        self.last_output = time.monotonic()
        self.started = False
        self.recent = b""
        threading.Thread(target=self.reader, daemon=True).start()

    def reader(self):
        tail = b""
        try:
            while True:
                b = os.read(self.fd, 65536)
                if not b:
                    break
                now = time.monotonic()
                window = tail + b
                if b"\x1b[c" in window[-len(b) - 3:] and b"\x1b[c" not in tail:
                    os.write(self.fd, b"\x1b[?62;22c")
                if b"\x1b[6n" in window[-len(b) - 3:] and b"\x1b[6n" not in tail:
                    os.write(self.fd, b"\x1b[1;1R")
                with self.lock:
                    self.recent = (self.recent + b)[-4096:]
                    self.last_output = now
                    self.started = True
                    w = self.want
                    if w is not None and w[0] in window:
                        w[2].append(now)
                        w[1].set()
                        self.want = None
                tail = window[-8:]
        except OSError:
            pass

    def settle(self, quiet=0.6, timeout=20):
        """Waits until the screen is up and has written nothing for `quiet` seconds."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            time.sleep(0.05)
            with self.lock:
                if self.started and time.monotonic() - self.last_output > quiet:
                    return
        self.kill()
        sys.exit("the chat screen never settled")

    def shown(self, timeout=20):
        """Seconds from the start until the watched text was first written (None: never)."""
        return self.seen_at[0] - self.t0 if self.ev.wait(timeout) and self.seen_at else None

    def write(self, data):
        os.write(self.fd, data)

    def key(self, glyph, timeout=5.0):
        """Types `glyph`; returns (wall time written, seconds until it showed, or None)."""
        ev, seen = threading.Event(), []
        data = glyph.encode()
        with self.lock:
            self.want = (data, ev, seen)
        wall, t0 = time.time(), time.monotonic()
        os.write(self.fd, data)
        shown = ev.wait(timeout)
        with self.lock:
            self.want = None
        return wall, (seen[0] - t0 if shown and seen else None)

    def frames(self):
        out = []
        try:
            with open(self.log) as f:
                for line in f:
                    p = line.split()
                    if len(p) >= 5 and p[0] == "frame":
                        # (wall s, draw ms, apply ms, live, draw's run ms, draw's wait-for-a-CPU ms)
                        run, wait = (int(p[5]) / 1e3, int(p[6]) / 1e3) if len(p) >= 7 else (0.0, 0.0)
                        out.append((int(p[1]) / 1e6, int(p[2]) / 1e3, int(p[3]) / 1e3, p[4] == "1", run, wait))
        except OSError:
            pass
        return out

    def cpu_ticks(self):
        return floor.ticks(self.pid)

    def idle(self, still=4):
        last, n = self.cpu_ticks(), 0
        while n < still:
            time.sleep(0.15)
            now = self.cpu_ticks()
            n = n + 1 if now == last else 0
            last = now

    def stop(self):
        try:
            os.kill(self.pid, signal.SIGTERM)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass
        try:
            os.unlink(self.log)
        except OSError:
            pass

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass


class Typist:
    """Types keys one after another (each erased before the next) on its own thread until told
    to stop; keeps (wall time, latency) of each."""

    def __init__(self, screen, gap=0.012):
        self.screen, self.gap = screen, gap
        self.samples = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        i = 0
        while not self.done.is_set():
            wall, lat = self.screen.key(GLYPHS[i % len(GLYPHS)])
            self.samples.append((wall, lat))
            i += 1
            self.screen.write(b"\x7f")
            # Not in step with the frames: a key lands anywhere in a frame's interval.
            time.sleep(self.gap + (i % 7) * 0.002)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.done.set()
        self.thread.join()
        return self.samples


# ---------------------------------------------------------------- the situations


def env_for(homes, name):
    home = os.path.join(homes, name)
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, PALAVER_HOME=home, OPENAI_API_KEY="sk-bench", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    return env


def idle(palaver, url, homes, keys):
    s = Screen([palaver, "--base-url", url, "-m", "bench-code"], env_for(homes, "idle"))
    s.settle()
    samples = []
    for i in range(keys):
        samples.append(s.key(GLYPHS[i % len(GLYPHS)]))
        s.write(b"\x7f")
        time.sleep(0.012 + (i % 7) * 0.002)
    frames = s.frames()
    s.stop()
    return {"idle": (lats(samples), [f[1] for f in frames], [f[2] for f in frames], [f[4] for f in frames])}


def streaming(palaver, url, homes, server, argv_tail, name, columns, timeout=180):
    """One prompt answered while keys are typed; returns the keys and frames while streaming and
    around the end (from the first frame with nothing live, for a second)."""
    s = Screen([palaver, "--base-url", url, *argv_tail], env_for(homes, name))
    s.settle()
    sent = server.sent
    s.write(b"go")
    time.sleep(0.05)
    s.write(b"\r")
    go_at = time.time()
    t = Typist(s).start()
    if not server.wait_sent(sent + columns, timeout):
        t.stop()
        s.kill()
        screen = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b" ", s.recent).decode("utf-8", "replace")
        sys.exit(f"{name}: the server never finished its streams; the screen's last output:\n{screen}")
    sent_at = time.time()
    # Wait for the first frame drawn with nothing live (the final layout), then a second more.
    # (A binary without PALAVER_FRAME_LOG logs nothing: then the end is when the server sent it all.)
    end = None
    deadline = time.monotonic() + timeout
    while end is None and time.monotonic() < deadline:
        time.sleep(0.1)
        fr = s.frames()
        if not fr and time.monotonic() > deadline - timeout + 3:
            end = (sent_at, 0.0, 0.0, False)
            break
        seen_live = False
        for f in fr:
            seen_live |= f[3]
            if seen_live and not f[3]:
                end = f
                break
    time.sleep(1.0)
    samples = t.stop()
    s.idle()
    frames = s.frames()
    s.stop()
    if end is None:
        sys.exit(f"{name}: the answer never ended on screen")
    t_end = end[0]
    live_frames = [f for f in frames if f[3]]
    first_live = live_frames[0][0] if live_frames else go_at
    in_stream = [x for x in samples if first_live <= x[0] < t_end - 0.05]
    # A key typed just before the last frames of the stream may wait for the final layout too.
    in_end = [x for x in samples if t_end - 0.05 <= x[0] <= t_end + 1.0]
    end_frames = [f for f in frames if t_end <= f[0] <= t_end + 1.0]
    return {
        "stream": (lats(in_stream), [f[1] for f in live_frames], [f[2] for f in live_frames], [f[4] for f in live_frames]),
        "end": (lats(in_end), [f[1] for f in end_frames], [f[2] for f in end_frames], [f[4] for f in end_frames]),
    }


def lats(samples):
    """Latencies in ms; a key that never showed counts as the 5 s the bench waited."""
    return [(lat if lat is not None else 5.0) * 1000 for _, lat in samples]


# ---------------------------------------------------------------- report


def pct(xs, p):
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


def merge(into, got):
    for k, lists in got.items():
        x = into.setdefault(k, tuple([] for _ in lists))
        for mine, theirs in zip(x, lists):
            mine.extend(theirs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("palaver", nargs="?", default="target/release/palaver")
    ap.add_argument("--deltas", type=int, default=100_000)
    ap.add_argument("--compare-deltas", type=int, default=25_000)
    ap.add_argument("--rounds", type=int, default=2, help="streams per situation")
    ap.add_argument("--keys", type=int, default=80, help="keys typed while idle")
    ap.add_argument("--paragraph-deltas", type=int, default=400_000,
                    help="deltas of the one-paragraph answer (8 bytes each: 3.2 MB at 400,000)")
    ap.add_argument("--only", choices=["idle", "stream", "compare", "paragraph"])
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.deltas, args.compare_deltas, args.paragraph_deltas)
        return 0
    palaver = os.path.abspath(args.palaver)
    para = args.paragraph_deltas if args.only in (None, "paragraph") else 0
    server = Server(args.deltas, args.compare_deltas, para)
    url = f"http://127.0.0.1:{server.port}/v1"
    homes = tempfile.mkdtemp(prefix="palaver-latency-")
    started = time.monotonic()
    results = {}
    try:
        if args.only in (None, "idle"):
            merge(results, idle(palaver, url, homes, args.keys))
        for r in range(args.rounds if args.only in (None, "stream") else 0):
            got = streaming(palaver, url, homes, server, ["-m", "bench-code"], f"stream{r}", 1)
            merge(results, got)
        for r in range(args.rounds if args.only in (None, "compare") else 0):
            cols = [a for i in range(4) for a in ("-m", f"bench-col-{i}")]
            got = streaming(palaver, url, homes, server, ["compare", *cols], f"compare{r}", 4)
            merge(results, {"compare": got["stream"], "compare end": got["end"]})
        for r in range(args.rounds if para else 0):
            got = streaming(palaver, url, homes, server, ["-m", "bench-para"], f"paragraph{r}", 1, timeout=600)
            merge(results, {"paragraph": got["stream"], "paragraph end": got["end"]})
    finally:
        server.stop()
    load = os.getloadavg()
    print(f"latency bench: {args.deltas} deltas (code-heavy markdown), compare 4 x {args.compare_deltas}, "
          f"one paragraph of {para} deltas; "
          f"{args.rounds} round(s); {time.monotonic() - started:.0f} s; load average {load[0]:.1f} {load[1]:.1f}")
    print("targets: key p99 <= 33 ms, worst <= 50 ms; every frame's work <= 16 ms")
    print("draw: a frame's wall time; run: of it, the time palaver's thread was on a CPU (the rest it")
    print("waited for one: a busy machine, not palaver's work); apply: messages applied before a frame\n")
    print(f"{'situation':13} {'keys':>5} {'key p50':>8} {'p99':>8} {'worst':>8}   {'frames':>6} {'draw p50':>9} "
          f"{'p99':>8} {'worst':>8}   {'run p99':>8} {'worst':>8}   {'apply p99':>9} {'worst':>8}   (ms)")
    for name in ("idle", "stream", "end", "compare", "compare end", "paragraph", "paragraph end"):
        if name not in results:
            continue
        k, d, a, r = results[name]
        print(f"{name:13} {len(k):5} {pct(k, 50):8.1f} {pct(k, 99):8.1f} {max(k, default=float('nan')):8.1f}   "
              f"{len(d):6} {pct(d, 50):9.2f} {pct(d, 99):8.2f} {max(d, default=float('nan')):8.2f}   "
              f"{pct(r, 99):8.2f} {max(r, default=float('nan')):8.2f}   "
              f"{pct(a, 99):9.2f} {max(a, default=float('nan')):8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
