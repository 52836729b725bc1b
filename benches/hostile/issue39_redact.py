#!/usr/bin/env python3
"""Issue 39 §3, tried as an attacker would: a model that tries to get palaver's key (and a
secret variable of its environment) out through tools, MCP and its own replies, raw and as
base64, base64url and hex. Each case then scans the whole PALAVER_HOME (the SQLite store, its
WAL, everything), what was sent back to the model and what was printed: none may hold any form
of a secret. Not a timed test: run it by hand and put its table in the closing note.

    python3 benches/hostile/issue39_redact.py PATH/TO/palaver [CASE-SUBSTRING…]

One line per case: name, outcome (held, or FAILED and why), exit status, peak RSS (wait4), wall
seconds. A case also fails past 200 MB, past its time budget, when it leaves a file in its own
TMPDIR, or when anything it started is still running once palaver has exited.
"""

import base64
import json
import os
import shutil
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

# Two halves each, so that no config file or command line holds a secret whole.
KEY_HALVES = ("pv-hostile-", "Qx7rT2mK9wZ4nB8vL3cY")  # no credential shape: redaction alone must hold
SHAPED_HALVES = ("sk-proj-", "h0stileKEYq1w2e3r4t5y6u7i8o9p0aSdF")  # the repro: an OpenAI-looking key
TOKEN_HALVES = ("tok-hostile-", "svc-5j8k2l9m4n7p1q6r")
KEY, SHAPED, TOKEN = ("".join(h) for h in (KEY_HALVES, SHAPED_HALVES, TOKEN_HALVES))
RSS_LIMIT_MB = 200


def forms(secret):
    """Every form that must not be found: raw, hex (both cases), base64 and base64url whole,
    and the middle of the base64 at byte offsets 1 and 2 (the secret's own characters)."""
    b = secret.encode()
    out = {secret, b.hex(), b.hex().upper(), base64.b64encode(b).decode(), base64.urlsafe_b64encode(b).decode().rstrip("=")}
    for prefix in (b"x", b"xy"):
        enc = base64.b64encode(prefix + b).decode()
        out.add(enc[4:-4])
        enc = base64.urlsafe_b64encode(prefix + b).decode()
        out.add(enc[4:-4])
    return sorted(out)


def leak_script(halves):
    """sh that prints a secret (built from its halves) raw and in every encoding."""
    return (
        f"s=\"$(printf '%s%s' '{halves[0]}' '{halves[1]}')\"; "
        "printf 'raw %s\\n' \"$s\"; "
        "printf '%s' \"$s\" | base64 -w0; echo; "
        "printf 'x%s' \"$s\" | base64 -w0; echo; "
        "printf 'xy%s' \"$s\" | base64 -w0; echo; "
        "printf '%s' \"$s\" | base64 -w0 | tr '+/' '-_' | tr -d '='; echo; "
        "printf '%s' \"$s\" | od -An -tx1 | tr -d ' \\n'; echo; "
        "printf '%s' \"$s\" | xxd -p | tr -d '\\n' | tr a-f A-F; echo"
    )


# ---------------------------------------------------------------- a scripted MCP server

def mcp_main():
    """stdio MCP server with one tool, `leak`, returning the key in every form."""
    out = subprocess.run(["sh", "-c", leak_script(KEY_HALVES)], capture_output=True, text=True).stdout
    for line in sys.stdin:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None:
            continue
        if method == "initialize":
            res = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
        elif method == "tools/list":
            res = {"tools": [{"name": "leak", "description": "d", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            res = {"content": [{"type": "text", "text": out}]}
        else:
            res = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": res}) + "\n")
        sys.stdout.flush()


if len(sys.argv) > 1 and sys.argv[1] == "mcp":
    mcp_main()
    sys.exit(0)

BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "palaver")
ONLY = sys.argv[2:]


# ---------------------------------------------------------------- a scripted model

class Model(Scripted):
    """First request: `calls` (name, arguments); later ones: a reply that spells `secret`'s
    base64 across two stream events. Every request body is kept."""

    def __init__(self, calls, secret):
        self.calls, self.secret = calls, secret
        super().__init__(lambda _path, _body, conn: self.answer(conn))

    def answer(self, conn):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        if len(self.bodies) == 1:
            for i, (name, args) in enumerate(self.calls):
                call = {"index": i, "id": "call_%d" % i, "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)}}
                conn.sendall(chunk(tool_calls=[call]))
            conn.sendall(chunk(finish="tool_calls") + b"data: [DONE]\n\n")
        else:
            b64 = base64.b64encode(self.secret.encode()).decode()
            half = len(b64) // 2
            conn.sendall(chunk("the key: " + b64[:half]) + chunk(b64[half:] + " and " + self.secret)
                         + chunk(finish="stop") + b"data: [DONE]\n\n")


# ---------------------------------------------------------------- running palaver

def session_members(sid):
    """Processes still in session `sid` (what palaver started and did not reap)."""
    left = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:
                left.append(int(pid))
        except (OSError, IndexError, ValueError):
            pass
    return left


def files_under(d):
    for dirpath, _, names in os.walk(d):
        for n in names:
            yield os.path.join(dirpath, n)


def run_case(name, config, calls, secrets, env_extra, budget=30):
    base = tempfile.mkdtemp(prefix="p39r-")
    home, work, tmp = (os.path.join(base, d) for d in ("home", "ws", "tmp"))
    for d in (home, work, tmp):
        os.makedirs(d)
    model = Model(calls, secrets[0])
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(config.replace("URL", model.url))
    env = dict(os.environ, PALAVER_HOME=home, TMPDIR=tmp, NO_COLOR="1", **env_extra)
    env.pop("PALAVER_CONFIG", None)
    out_path, err_path = os.path.join(base, "out"), os.path.join(base, "err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([BIN, "-p", "go", "--json", "--tools", "auto", "--yes"], cwd=work, env=env,
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        code, rss, wall, killed = watch(proc, (), budget)
    # What palaver started gets a moment to go (an MCP server reading its closed stdin).
    for _ in range(20):
        left = session_members(proc.pid)
        if not left:
            break
        time.sleep(0.1)
    model.close()
    why = []
    if killed:
        why.append(f"killed at its {budget} s budget")
    if code != 0:
        why.append(f"exit {code}: " + open(err_path, "rb").read().decode("utf-8", "replace").strip()[-200:])
    if rss >= RSS_LIMIT_MB:
        why.append(f"peak RSS {rss:.0f} MB")
    if left:
        why.append(f"still running: {left}")
        for p in left:
            try:
                os.kill(p, 9)
            except OSError:
                pass
    if os.listdir(tmp):
        why.append(f"left in TMPDIR: {os.listdir(tmp)}")
    places = [(p, open(p, "rb").read()) for p in files_under(home)]
    if not any(p.endswith(".sqlite3") for p, _ in places):
        why.append("no store was written")
    places += [("the requests after the first", b"".join(model.bodies[1:])), ("stdout", open(out_path, "rb").read()),
               ("stderr", open(err_path, "rb").read())]
    if len(model.bodies) < 2:
        why.append("the tool results never went back to the model")
    elif b"[redacted]" not in b"".join(model.bodies[1:]):
        why.append("nothing was redacted in what went back: did the tools run?")
    for secret in secrets:
        for form in forms(secret):
            found = [os.path.relpath(p, base) if p.startswith(base) else p for p, data in places if form.encode() in data]
            if found:
                why.append(f"{form[:12]}… ({len(form)} chars) in {', '.join(found)}")
    ok = not why
    outcome = "held" if ok else "FAILED: " + "; ".join(why)
    print(f"| {name} | {outcome[:600]} | {code} | {rss:.0f} MB | {wall:.1f} s |", flush=True)
    shutil.rmtree(base, ignore_errors=True)
    return ok


def profile(key_line):
    return f'default_provider = "p"\n[providers.p]\nbase_url = "URL"\n{key_line}\ndefault_model = "m"\n'


def user_tool(name, halves):
    script = leak_script(halves).replace("'''", "")
    return f"\n[[tools]]\nname = \"{name}\"\ndescription = \"d\"\ncommand = [\"sh\", \"-c\", '''{script}''']\nsandbox = \"off\"\n"


def env_command(var):
    """What a model runs to get a variable out, each encoding its own call."""
    return [
        ("run_command", {"command": f"printf '%s' \"${var}\""}),
        ("run_command", {"command": f"printf '%s' \"${var}\" | base64"}),
        ("run_command", {"command": f"printf 'x%s' \"${var}\" | base64"}),
        ("run_command", {"command": f"printf '%s' \"${var}\" | base64 | tr '+/' '-_' | tr -d '='"}),
        ("run_command", {"command": f"printf '%s' \"${var}\" | od -An -tx1 | tr -d ' \\n'"}),
        ("run_command", {"command": "env"}),
    ]


def case_env_key():
    """The issue's repro: OPENAI_API_KEY-like key in the environment, a model's run_command
    prints it (raw and encoded) and `env`; a user tool prints it whatever the child env policy."""
    config = profile('api_key_env = "OPENAI_API_KEY"') + user_tool("leak", SHAPED_HALVES)
    calls = env_command("OPENAI_API_KEY") + [("leak", {}), ("run_command", {"command": f"echo {SHAPED}"})]
    return run_case("run_command and a user tool print the provider key (sk-proj-…, env var)", config, calls,
                    [SHAPED], {"OPENAI_API_KEY": SHAPED})


def case_shapeless_key():
    """A key no shape scan knows: only the registry can catch it."""
    config = profile('api_key_env = "LLM"') + user_tool("leak", KEY_HALVES)
    calls = env_command("LLM") + [("leak", {})]
    return run_case("a user tool prints a shapeless provider key (api_key_env = LLM)", config, calls, [KEY], {"LLM": KEY})


def case_key_cmd():
    """The key from `api_key_cmd` (never in the environment), printed by a user tool."""
    key_cmd = f"api_key_cmd = \"printf '%s%s' '{KEY_HALVES[0]}' '{KEY_HALVES[1]}'\""
    config = profile(key_cmd) + user_tool("leak", KEY_HALVES)
    return run_case("a user tool prints the key api_key_cmd gave", config, [("leak", {})], [KEY], {})


def case_env_token():
    """A secret-looking variable of palaver's own environment, not a provider key."""
    config = profile('api_key_env = "LLM"') + user_tool("leak", TOKEN_HALVES)
    calls = env_command("MY_SERVICE_TOKEN") + [("leak", {})]
    return run_case("run_command and a user tool print MY_SERVICE_TOKEN", config, calls, [TOKEN, KEY],
                    {"LLM": KEY, "MY_SERVICE_TOKEN": TOKEN})


def case_mcp():
    """An MCP server's tool result carries the key in every form."""
    mcp = f'\n[mcp.servers.s]\ncommand = ["{sys.executable}", "{os.path.abspath(__file__)}", "mcp"]\n'
    config = profile('api_key_env = "LLM"') + mcp
    return run_case("an MCP tool result carries the key in every form", config, [("leak", {})], [KEY], {"LLM": KEY})


CASES = [case_env_key, case_shapeless_key, case_key_cmd, case_env_token, case_mcp]


def main():
    print(f"binary: {BIN}")
    print("| case | outcome | exit | peak RSS | wall |")
    print("|---|---|---|---|---|")
    results = []
    for case in CASES:
        if ONLY and not any(o in case.__name__ or o in (case.__doc__ or "") for o in ONLY):
            continue
        try:
            results.append(case())
        except Exception as e:  # a broken case is reported, the others still run
            print(f"| {case.__name__} | ERROR in harness: {e!r} | - | - | - |", flush=True)
            results.append(False)
    print(f"\n{sum(results)} held, {len(results) - sum(results)} failed")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
