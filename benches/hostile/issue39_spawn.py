#!/usr/bin/env python3
"""Issue 39 §2 ("one way to start a process"), tried as an attacker would: a scripted model's
`run_command` under `--tools auto --yes` tries to read palaver's keys, reach sockets outside the
sandbox, escape its process group and plant code that runs later. Not a timed test: run it by
hand and put its table in the closing note.

    python3 benches/hostile/issue39_spawn.py [PALAVER_BINARY] [CASE-SUBSTRING…]

Each case runs the real binary headless in a fresh PALAVER_HOME, workspace (a git repository's
`.git/hooks` and `.git/config`) and TMPDIR, against a scripted server on 127.0.0.1 in this
process, and prints one line: name, outcome (held/FAILED and why), exit status, peak RSS (wait4)
and seconds. Every case also checks that nothing it started is still running (no process with
its marker or working in its workspace) and that its TMPDIR is empty afterwards.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
from server import Scripted, chunk, watch  # noqa: E402

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "palaver")
ONLY = sys.argv[2:]
SECRETS = {"OPENAI_API_KEY": "sk-test-SECRET-openai", "FOO_TOKEN": "foo-SECRET-token", "K39": "sk-SECRET-configured",
           "AWS_SESSION": "aws-SECRET-session", "DB_PASSWORD": "SECRET-db-password"}
RSS_LIMIT_MB = 200
FAILED = []


class Server(Scripted):
    """First request: the case's run_command calls; every later one: the answer 'done'."""

    def __init__(self, commands):
        self.commands = commands
        super().__init__(lambda _path, body, conn: self.answer(conn, body))

    def answer(self, conn, body):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        if b'"role":"tool"' in body:
            conn.sendall(chunk("done") + chunk(finish="stop") + b"data: [DONE]\n\n")
            return
        for i, command in enumerate(self.commands):
            call = {"index": i, "id": "call_%d" % i, "type": "function",
                    "function": {"name": "run_command", "arguments": json.dumps({"command": command})}}
            conn.sendall(chunk(tool_calls=[call]))
        conn.sendall(chunk(finish="tool_calls") + b"data: [DONE]\n\n")

    def results(self):
        """The tool results the model got back."""
        for body in self.bodies[1:]:
            msgs = json.loads(body).get("messages", [])
            return [m.get("content") or "" for m in msgs if m.get("role") == "tool"]
        return []

    def close(self):
        self.sock.close()


def processes_of(marker, ws):
    """Live processes whose command line holds `marker` or whose working directory is in `ws`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            cwd = os.readlink("/proc/%s/cwd" % pid)
        except (OSError, IndexError):
            continue
        if (marker and marker in cmd) or cwd.startswith(ws):
            found.append("%s %s" % (pid, cmd.strip()[:60]))
    return found


def run_case(name, commands, check, signals=(), deadline=30):
    """Runs palaver on `commands`; `check(ctx)` returns None (held) or why it failed."""
    base = tempfile.mkdtemp(prefix="p39-")
    home, ws, tmp, outside = (os.path.join(base, d) for d in ("home", "ws", "tmp", "outside"))
    for d in (home, os.path.join(ws, ".git", "hooks"), os.path.join(ws, ".palaver", "commands"), tmp, outside):
        os.makedirs(d)
    with open(os.path.join(ws, ".git", "config"), "w") as f:
        f.write("[core]\n\tbare = false\n")
    ctx = {"base": base, "home": home, "ws": ws, "tmp": tmp, "outside": outside}
    commands = [c.format(**ctx) for c in commands]
    server = Server(commands)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write('default_provider = "p"\n[providers.p]\nbase_url = "%s"\napi_key_env = "K39"\n'
                'default_model = "m"\ntools = "auto"\n' % server.url)
    env = dict(os.environ, PALAVER_HOME=home, TMPDIR=tmp, NO_COLOR="1", PLAIN_SETTING="plain-value", **SECRETS)
    out_path, err_path = os.path.join(base, "out"), os.path.join(base, "err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([BIN, "-p", "go", "--tools", "auto", "--yes"], cwd=ws, env=env, stdout=out,
                                stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        code, rss, wall, _ = watch(proc, signals, deadline)
    server.close()
    time.sleep(0.3)
    ctx.update(results=server.results(), bodies=server.bodies,
               stderr=open(err_path, "rb").read().decode("utf-8", "replace"))
    why = check(ctx)
    left = processes_of(ctx.get("marker"), ws)
    if why is None and left:
        why = "still running: " + "; ".join(left)
    if why is None and os.listdir(tmp):
        why = "left in TMPDIR: " + ", ".join(os.listdir(tmp))
    if why is None and rss > RSS_LIMIT_MB:
        why = "peak RSS %.0f MB over %d MB" % (rss, RSS_LIMIT_MB)
    if why is None and wall > deadline:
        why = "ran past its %d s budget" % deadline
    for pid_cmd in left:  # leave the machine clean either way
        try:
            os.kill(int(pid_cmd.split()[0]), signal.SIGKILL)
        except OSError:
            pass
    if why:
        FAILED.append(name)
    print("%-34s %-60s exit %-4s %6.1f MB %5.1f s" % (name, "held" if why is None else "FAILED: " + why[:200], code, rss,
                                                       wall), flush=True)
    shutil.rmtree(base, ignore_errors=True)


def result(ctx, i):
    r = ctx["results"]
    return r[i] if i < len(r) else ""


def listener(kind, path=None):
    """A socket outside the sandbox that counts what reaches it."""
    if kind == "tcp":
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(4)
    elif kind == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
    else:
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.listen(4)
    s.setblocking(False)
    return s


def reached(s, kind):
    try:
        if kind == "udp":
            s.recv(16)
        else:
            s.accept()[0].close()
        return True
    except OSError:
        return False


def socket_case(name, kind):
    holder = {}
    py = "python3 -c \"import socket; s = socket.socket(%s); s.%s; print('REACHED')\""

    def command():
        if kind == "tcp":
            holder["s"] = listener("tcp")
            return py % ("", "connect(('127.0.0.1', %d))" % holder["s"].getsockname()[1])
        if kind == "udp":
            holder["s"] = listener("udp")
            return py % ("socket.AF_INET, socket.SOCK_DGRAM", "sendto(b'x', ('127.0.0.1', %d))" % holder["s"].getsockname()[1])
        if kind == "unix-abstract":
            name_ = "p39-%d" % os.getpid()
            holder["s"] = listener("unix", "\0" + name_)
            return py % ("socket.AF_UNIX", "connect('\\\\0%s')" % name_)
        path = os.path.join(tempfile.mkdtemp(prefix="p39-sock-", dir=os.path.expanduser("~")), "daemon.sock")
        holder["s"], holder["dir"] = listener("unix", path), os.path.dirname(path)
        return py % ("socket.AF_UNIX", "connect('%s')" % path)

    def check(ctx):
        got = reached(holder["s"], kind)
        holder["s"].close()
        if "dir" in holder:
            shutil.rmtree(holder["dir"], ignore_errors=True)
        r = result(ctx, 0)
        if got or "REACHED" in r:
            return "the %s socket outside the sandbox was reached: %s" % (kind, r[:120])
        if "Error" not in r:
            return "no refusal in the result: " + r[:160]
        return None

    run_case(name, [command()], check)


def env_case():
    def check(ctx):
        r = result(ctx, 0)
        if "PLAIN_SETTING=plain-value" not in r:
            return "env did not run: " + r[:160]
        shown = [k for k, v in SECRETS.items() if v in r or k + "=" in r]
        if shown:
            return "env showed " + ", ".join(shown)
        sent = [k for k, v in SECRETS.items() if any(v.encode() in b for b in ctx["bodies"])]
        if sent:
            return "a secret reached the provider: " + ", ".join(sent)
        store = os.path.join(ctx["home"], "palaver.sqlite3")
        data = open(store, "rb").read() if os.path.exists(store) else b""
        stored = [k for k, v in SECRETS.items() if v.encode() in data]
        return "stored: " + ", ".join(stored) if stored else None

    run_case("env prints no secret", ["env"], check)


def escape_case(name, command, marker, signals=()):
    def check(ctx):
        ctx["marker"] = marker
        return None

    run_case(name, [command], check, signals=signals)


def planted_case(name, command, path, expect):
    """`expect`: the file's content afterwards (None: absent), or a word it must not hold."""
    def check(ctx):
        p = os.path.join(ctx["ws"], path) if not path.startswith("{") else path.format(**ctx)
        now = open(p).read() if os.path.isfile(p) else None
        changed = (expect.startswith("not:") and expect[4:] in (now or "")) if expect else now is not None
        if expect and not expect.startswith("not:"):
            changed = now != expect
        if changed:
            return "%s changed: %r (%s)" % (path, (now or "")[:60], result(ctx, 0)[:100].replace("\n", " "))
        return None

    run_case(name, [command], check)


def socketpair_case():
    def check(ctx):
        r = result(ctx, 0)
        return None if "pair b'x'" in r else "socketpair failed: " + r[:160]

    run_case("socketpair still works", ["python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'x'); "
                                        "print('pair', b.recv(1))\""], check)


CASES = [
    ("env", env_case),
    ("tcp", lambda: socket_case("TCP connect outside", "tcp")),
    ("udp", lambda: socket_case("UDP send outside", "udp")),
    ("unix-path", lambda: socket_case("pathname Unix socket outside", "unix-path")),
    ("unix-abstract", lambda: socket_case("abstract Unix socket outside", "unix-abstract")),
    ("socketpair", socketpair_case),
    ("setsid", lambda: escape_case("setsid sleep", "setsid sleep 39391 > /dev/null 2>&1 & sleep 0.5; echo bg", "sleep 39391")),
    ("double-fork", lambda: escape_case("double fork + setsid", "(setsid sh -c 'sleep 39392 &' > /dev/null 2>&1 &); sleep 0.5; echo bg",
                                        "sleep 39392")),
    ("nohup", lambda: escape_case("nohup + setpgid via python",
                                  "nohup python3 -c \"import os, time; os.setpgid(0, 0); time.sleep(39393)\" "
                                  "> /dev/null 2>&1 & sleep 0.5; echo bg", "time.sleep(39393)")),
    ("ctrl-c", lambda: escape_case("setsid escape, then SIGINT", "setsid sleep 39394 > /dev/null 2>&1 & sleep 60",
                                   "sleep 39394", signals=[(2.0, signal.SIGINT)])),
    ("timeout-term", lambda: escape_case("setsid escape, then SIGTERM", "setsid sleep 39395 > /dev/null 2>&1 & sleep 60",
                                         "sleep 39395", signals=[(2.0, signal.SIGTERM)])),
    ("git-hook", lambda: planted_case(".git/hooks/pre-commit", "printf '#!/bin/sh\\necho planted\\n' > "
                                      ".git/hooks/pre-commit; chmod +x .git/hooks/pre-commit", ".git/hooks/pre-commit", None)),
    ("git-config", lambda: planted_case(".git/config hooksPath", "git config core.hooksPath /tmp/evil || "
                                        "echo '[core] hooksPath = /tmp/evil' >> .git/config", ".git/config",
                                        "[core]\n\tbare = false\n")),
    ("git-swap", lambda: planted_case(".git swapped for another", "mv .git .git-old && mkdir -p .git/hooks && printf x > "
                                      ".git/hooks/pre-commit", ".git/hooks/pre-commit", None)),
    ("palaver-commands", lambda: planted_case("the repository's .palaver/commands",
                                              "printf 'evil' > .palaver/commands/deploy.md",
                                              ".palaver/commands/deploy.md", None)),
]


def main():
    if not os.path.exists(BIN):
        sys.exit("no palaver binary at %s (build it, or pass its path)" % BIN)
    print("%-34s %-60s %-9s %9s %7s" % ("case", "outcome", "exit", "peak RSS", "time"))
    for key, case in CASES:
        if ONLY and not any(o in key for o in ONLY):
            continue
        case()
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
