#!/usr/bin/env python3
"""Peak memory (max RSS) and exit status of palaver against each hostile server of issue 13.
Not a timed test: run it by hand and put its table in the closing note.

    python3 benches/hostile/rss.py [PALAVER_BINARY] [CASE…]

Each case starts benches/hostile/server.py, runs `palaver -p` against it in a fresh
PALAVER_HOME, sends SIGINT where the case says (twice for the "second Ctrl+C" case) and reports
the exit status, the max RSS (from wait4) and the wall time. A case that is still running after
its deadline is killed and reported as such.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "target", "debug", "palaver")
ONLY = set(sys.argv[2:])

# name, server mode, server arg, extra flags, SIGINT times (s after start), deadline (s)
CASES = [
    ("fast deltas, Ctrl+C", "fast-deltas", None, [], [2.0], 20),
    ("fast deltas, no Ctrl+C (reply limit)", "fast-deltas", None, [], [], 120),
    ("1 GB SSE line", "huge-line", str(1 << 30), [], [], 120),
    ("2000 read_file of 2 MB", "many-reads", "2000", ["--tools", "auto"], [], 120),
    ("sleep 50 tool, Ctrl+C", "sleep-tool", None, ["--tools", "auto", "--yes"], [2.0], 20),
    ("sleep 50 tool, Ctrl+C twice", "sleep-tool", None, ["--tools", "auto", "--yes"], [2.0, 2.3], 20),
    ("Retry-After: inf", "retry-inf", None, [], [], 20),
    ("retry wait, Ctrl+C", "retry-wait", None, [], [1.0], 40),
    ("307 to another origin", "redirect", None, [], [], 20),
    ("401 echoing the key", "echo-key", None, [], [], 20),
    ("escape sequences", "escapes", None, [], [], 20),
]


def run_case(name, mode, arg, flags, sigints, deadline):
    # RSS_DEADLINE caps every case (a build without limits runs some of them forever).
    deadline = min(deadline, float(os.environ.get("RSS_DEADLINE", deadline)))
    arg = os.environ.get("RSS_ARG_" + mode.replace("-", "_").upper(), arg)
    home = tempfile.mkdtemp(prefix="palaver-rss-")
    work = tempfile.mkdtemp(prefix="palaver-ws-")
    with open(os.path.join(work, "big.txt"), "wb") as f:
        f.write(b"0123456789abcdef\n" * (2 * 1024 * 1024 // 17))
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py"), mode] + ([arg] if arg else []),
                              stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    env = dict(os.environ, PALAVER_HOME=home, OPENAI_API_KEY="sk-test-SECRET-123456")
    out_path = os.path.join(home, "stdout")
    err_path = os.path.join(home, "stderr")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.time()
        # Its own session so a SIGINT here reaches only palaver (and its tool groups stay its own).
        proc = subprocess.Popen([BIN, "--base-url", url, "-m", "m", "-p", "hi"] + flags, cwd=work, env=env,
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        pending = list(sigints)
        status, rusage, killed = None, None, False
        while True:
            pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status, rusage = st, ru
                break
            now = time.time() - start
            if pending and now >= pending[0]:
                pending.pop(0)
                proc.send_signal(signal.SIGINT)
            if now > deadline:
                killed = True
                proc.kill()
            time.sleep(0.02)
        wall = time.time() - start
    server.kill()
    code = os.waitstatus_to_exitcode(status)
    err = open(err_path, "rb").read().decode("utf-8", "replace").strip().splitlines()
    out_size = os.path.getsize(out_path)
    leaked_escape = b"\x1b" in open(err_path, "rb").read()
    key_shown = b"SECRET-123456" in open(err_path, "rb").read() + open(out_path, "rb").read()
    last = err[-1][:150] if err else ""
    print(f"| {name} | {'killed' if killed else code} | {rusage.ru_maxrss / 1024:.0f} MB | {wall:.1f} s | "
          f"{out_size} B out | esc on stderr: {leaked_escape} | key shown: {key_shown} | {last} |", flush=True)


def main():
    print(f"binary: {BIN}")
    print("| case | exit | peak RSS | wall | stdout | stderr escapes | key | last stderr line |")
    print("|---|---|---|---|---|---|---|---|")
    for case in CASES:
        if ONLY and case[1] not in ONLY and case[0] not in ONLY:
            continue
        run_case(*case)


if __name__ == "__main__":
    main()
