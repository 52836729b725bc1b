#!/usr/bin/env python3
"""palaver interop suite: real third-party OpenAI-compatible servers and injected faults.

Run through run.sh, which installs the servers first:

    python3 tests/interop/suite.py --palaver target/debug/palaver \
        --litellm-venv DIR --llmock-venv DIR --aimock-dir DIR [--skip NAME=REASON ...]

Standard library only. Every server is bound to 127.0.0.1 on a free port, in its own
process group, and killed on exit. Each case runs palaver headless (`--json`) with its
own PALAVER_HOME and checks the result line, the exit status, stderr, the stored
conversation (`history list` / `history export`), and that the API key appears nowhere
palaver wrote. One PASS/FAIL/SKIP line per case; the last line is
`interop: N passed, M failed`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from realserver import RealServer

HERE = Path(__file__).resolve().parent
KEY = "sk-interop-SECRET-key"
KEY_PARTS = (KEY.encode(), b"interop-SECRET")
FORBIDDEN_VERDICT = ("no_read_timeout", "retry_after_ignored", "retry_storm", "no_backoff", "retried_non_retryable")
LONG_TEXT = "one two three four five six seven eight nine ten eleven twelve"
BIG_LEN = 10 * 1024 * 1024
AZURE_DEPLOYMENT = "interop-deploy"
AZURE_API_VERSION = "2024-10-21"


# -- processes -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method: str, url: str, body: Any = None, timeout: float = 10) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw or b"null")
    except ValueError:
        return status, raw.decode("utf-8", "replace")


class Servers:
    """Starts servers in their own process groups; stops them all on exit."""

    def __init__(self, run_dir: Path, pidfile: Path | None):
        self.run_dir = run_dir
        self.pidfile = pidfile
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
        log = open(self.run_dir / f"{name}.log", "wb")
        p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs[name] = p
        if self.pidfile:
            with open(self.pidfile, "a") as f:
                f.write(f"{p.pid}\n")
        return p

    def log(self, name: str, tail: int = 400) -> str:
        try:
            return (self.run_dir / f"{name}.log").read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    def wait_http(self, name: str, url: str, timeout: float) -> str | None:
        """None when `url` answers; else why not."""
        deadline = time.monotonic() + timeout
        p = self.procs[name]
        while time.monotonic() < deadline:
            if p.poll() is not None:
                return f"exited with {p.returncode}: {self.log(name).strip()[-300:]}"
            try:
                status, _ = http("GET", url, timeout=2)
                if status < 500:
                    return None
            except OSError:
                pass
            time.sleep(0.25)
        return f"no answer on {url} within {timeout:.0f} s"

    def stop_all(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        for p in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()


def server_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A clean environment for third-party servers: no keys, no proxies, a private HOME."""
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update({"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config"),
                "NO_PROXY": "*", "DO_NOT_TRACK": "1", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(extra or {})
    return env


# -- cases ---------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    server: str
    api: str
    stream: bool
    model: str
    prompt: str
    expect: dict[str, Any]
    args: list[str] = field(default_factory=list)
    tools: str = "none"
    group: str = "interop"  # or "fault"
    label: str = ""  # row label in the report tables
    setup: Callable[[], None] | None = None
    after: Callable[[dict], str | None] | None = None
    base_url: str | None = None  # default: the server's
    provider_toml: str | None = None  # written to PALAVER_HOME/config.toml; run with --provider


@dataclass
class Outcome:
    case: Case
    ok: bool
    why: list[str]
    rc: int | None
    result: dict | None
    stderr: str
    elapsed: float


class Suite:
    def __init__(self, opts):
        self.opts = opts
        self.bin = str(Path(opts.palaver).resolve())
        self.tmp = Path(tempfile.mkdtemp(prefix="palaver-interop-"))
        self.home = self.tmp / "home"  # HOME for palaver: scanned for the key at the end
        self.home.mkdir()
        self.work = self.tmp / "work"  # palaver's cwd (its read-only tools look here)
        self.work.mkdir()
        (self.work / "interop-note.txt").write_text("The interop note says: purple elephants.\n")
        self.run_dir = self.tmp / "servers"
        self.run_dir.mkdir()
        self.servers = Servers(self.run_dir, Path(opts.pidfile) if opts.pidfile else None)
        self.urls: dict[str, str] = {}
        self.skips: dict[str, str] = dict(s.split("=", 1) for s in opts.skip)
        self.outcomes: list[Outcome] = []
        self.skipped: list[tuple[str, str]] = []
        self.n = 0
        self.llmock_seq = 0

    # -- reporting ----------------------------------------------------------------------
    def skip(self, what: str, reason: str) -> None:
        self.skipped.append((what, reason))
        print(f"SKIP {what}: {reason}", flush=True)

    # -- running palaver -------------------------------------------------------------------
    def palaver_env(self, palaver_home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENAI_", "PALAVER_", "AZURE_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                                    "https_proxy", "ALL_PROXY", "all_proxy"))}
        env.update({"PALAVER_HOME": str(palaver_home), "OPENAI_API_KEY": KEY, "HOME": str(self.home),
                    "NO_COLOR": "1", "RUST_BACKTRACE": "1"})
        return env

    def palaver(self, args: list[str], palaver_home: Path, timeout: float = 90):
        t0 = time.monotonic()
        try:
            p = subprocess.run([self.bin, *args], env=self.palaver_env(palaver_home), cwd=self.work,
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = None, e.stdout or b"", (e.stderr or b"") + f"\n[killed after {timeout} s]".encode()
        return rc, out, err, time.monotonic() - t0

    def run_case(self, c: Case) -> Outcome:
        self.n += 1
        home = self.tmp / f"case-{self.n:03d}"
        home.mkdir()
        why: list[str] = []
        args = []
        if c.provider_toml:
            (home / "config.toml").write_text(c.provider_toml)
            args += ["--provider", "interop"]
        else:
            args += ["--base-url", c.base_url or self.urls[c.server]]
            if c.server == "llmock":
                # palaver asks a local server for the model's window (GET /models) unless
                # config.toml gives it, and llmock's scenario queue is consumed by any request,
                # that one included: the window given here keeps each scripted fault for the
                # request it was scripted for.
                (home / "config.toml").write_text(f'[models."{c.model}"]\ncontext_window = 128000\n')
        args += ["--api", c.api, "-m", c.model, "-p", c.prompt, "--json", "--tools", c.tools, *c.args]
        if not c.stream:
            args.append("--no-stream")
        if c.setup:
            try:
                c.setup()
            except Exception as e:  # noqa: BLE001 - a broken server is a failed case, not a crash
                why.append(f"setup failed: {e}")
        rc, out, err, elapsed = self.palaver(args, home)
        stderr = err.decode("utf-8", "replace")
        result = None
        if not why:
            result = self.check(c, rc, out, stderr, elapsed, why)
            self.check_store(c, home, result, why)
            self.check_key(home, [out, err], why)
        if c.after and not why:
            try:
                note = c.after(result or {})
            except Exception as e:  # noqa: BLE001
                note = f"after-check failed: {e}"
            if note:
                why.append(note)
        o = Outcome(c, not why, why, rc, result, stderr, elapsed)
        self.outcomes.append(o)
        tag = f"{c.server} {c.api} {'stream' if c.stream else 'no-stream'}: {c.name}"
        if o.ok:
            print(f"PASS {tag} ({elapsed:.1f} s)", flush=True)
        else:
            print(f"FAIL {tag} ({elapsed:.1f} s)", flush=True)
            for w in why:
                print(f"     - {w[:600]}", flush=True)
        return o

    # -- checks -------------------------------------------------------------------------
    def check(self, c: Case, rc, out: bytes, stderr: str, elapsed: float, why: list[str]) -> dict | None:
        e = c.expect
        if "panicked" in stderr:
            why.append("palaver panicked: " + stderr[stderr.find("panicked"):][:300])
        lines = [ln for ln in out.decode("utf-8", "replace").splitlines() if ln.strip()]
        events = []
        for ln in lines:
            try:
                events.append(json.loads(ln))
            except ValueError:
                why.append(f"stdout line is not JSON: {ln[:120]!r}")
                return None
        results = [ev for ev in events if ev.get("type") == "result"]
        if len(results) != 1 or not events or events[-1].get("type") != "result":
            why.append(f"expected exactly one result line, last; got {len(results)} (rc={rc}, stderr={stderr[-300:]!r})")
            return None
        r = results[0]
        want_rc = e.get("rc", 0)
        if rc != want_rc:
            why.append(f"exit status {rc}, expected {want_rc}")
        text = r.get("text")
        if not isinstance(text, str):
            why.append(f"text is not a string: {text!r}")
            text = ""
        short = (text[:80] + f"…({len(text)} chars)") if len(text) > 80 else text
        if "text" in e and text != e["text"]:
            why.append(f"text {short!r}, expected {e['text'][:80]!r}")
        if "text_len" in e and len(text) != e["text_len"]:
            why.append(f"text has {len(text)} chars, expected {e['text_len']}")
        if "text_partial_of" in e:
            full = e["text_partial_of"]
            if not (0 < len(text) < len(full) and full.startswith(text)):
                why.append(f"text {short!r} is not a non-empty proper prefix of {full!r}")
        if "text_prefix_of" in e and not e["text_prefix_of"].startswith(text):
            why.append(f"text {short!r} is not a prefix of {e['text_prefix_of']!r}")
        if "text_endswith" in e and not text.endswith(e["text_endswith"]):
            why.append(f"text {short!r} does not end with {e['text_endswith']!r} (the rest was not kept)")
        if e.get("text_nonempty") and not text:
            why.append("text is empty")
        if "finish" in e and r.get("finish_reason") != e["finish"]:
            why.append(f"finish_reason {r.get('finish_reason')!r}, expected {e['finish']!r}")
        if "tools" in e:
            self.check_tools(r.get("tool_calls") or [], e["tools"], why)
        if "usage" in e:
            self.check_usage(r.get("usage"), e["usage"], why)
        if "error" in e:
            self.check_error(r.get("error"), e["error"], stderr, why)
        for s in e.get("stderr", []):
            if s.lower() not in stderr.lower():
                why.append(f"stderr lacks {s!r}: {stderr.strip()[-300:]!r}")
        kinds = {ev.get("type") for ev in events}
        for k in e.get("events", []):
            if k not in kinds:
                why.append(f"no {k!r} line in the JSON events (saw {sorted(kinds)})")
        if "max_s" in e and elapsed > e["max_s"]:
            why.append(f"took {elapsed:.1f} s, expected under {e['max_s']} s")
        if "min_s" in e and elapsed < e["min_s"]:
            why.append(f"took {elapsed:.2f} s, expected at least {e['min_s']} s (did it wait?)")
        if "compare" in e:
            note = e["compare"](r)
            if note:
                why.append(note)
        return r

    @staticmethod
    def check_tools(got: list, want: list, why: list[str]) -> None:
        if len(got) != len(want):
            why.append(f"{len(got)} tool calls ({[g.get('name') for g in got]}), expected {len(want)}")
            return
        for g, w in zip(got, want):
            if g.get("name") != w["name"]:
                why.append(f"tool call name {g.get('name')!r}, expected {w['name']!r}")
            if "args" in w:
                try:
                    args = json.loads(g.get("arguments") or "")
                except ValueError:
                    args = f"<not JSON: {g.get('arguments')!r}>"
                if args != w["args"]:
                    why.append(f"tool call arguments {args!r}, expected {w['args']!r}")
            if "id" in w and g.get("id") != w["id"]:
                why.append(f"tool call id {g.get('id')!r}, expected {w['id']!r}")
            if not g.get("id"):
                why.append(f"tool call {g.get('name')!r} has no id")
            out = g.get("output")
            if "output" in w:
                # Not run: no output, or palaver's own word why (skipped, denied) and no result.
                not_run = out is None or g.get("status") in ("skipped", "denied")
                if w["output"] is None and not not_run:
                    why.append(f"tool call {g.get('name')!r} has output {out!r:.80}, expected none (not run)")
                elif isinstance(w["output"], str) and (out is None or w["output"] not in out):
                    why.append(f"tool call output {out!r:.120} lacks {w['output']!r}")
            if "status" in w and g.get("status") != w["status"]:
                why.append(f"tool call status {g.get('status')!r}, expected {w['status']!r}")

    @staticmethod
    def check_usage(got, want, why: list[str]) -> None:
        if want is None:
            if got is not None:
                why.append(f"usage {got!r}, expected null")
            return
        if got is None:
            why.append("usage is null, expected the provider's numbers")
            return
        p, c, t = got.get("prompt_tokens"), got.get("completion_tokens"), got.get("total_tokens")
        if not all(isinstance(x, int) and x >= 0 for x in (p, c, t)):
            why.append(f"usage has non-integer counts: {got!r}")
            return
        if want == "present":
            if c <= 0 or t < c:
                why.append(f"usage looks wrong: {got!r}")
            return
        for k, v in want.items():
            if got.get(k) != v:
                why.append(f"usage.{k} = {got.get(k)!r}, expected {v!r} (usage {got!r})")

    @staticmethod
    def check_error(got, want, stderr: str, why: list[str]) -> None:
        if want is None:
            if got is not None:
                why.append(f"unexpected error {got!r}")
            return
        if not isinstance(got, dict):
            why.append(f"error is {got!r}, expected an error object")
            return
        kinds = want.get("kind")
        if kinds is not None:
            kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
            if got.get("kind") not in kinds:
                why.append(f"error.kind {got.get('kind')!r}, expected one of {kinds} (message {got.get('message')!r})")
        if "status" in want and got.get("status") != want["status"]:
            why.append(f"error.status {got.get('status')!r}, expected {want['status']!r}")
        msg = str(got.get("message") or "")
        for s in want.get("msg", []):
            alts = (s,) if isinstance(s, str) else tuple(s)
            if not any(a.lower() in msg.lower() for a in alts):
                why.append(f"error message {msg[:200]!r} does not name the fault ({' / '.join(alts)!r})")
        if "palaver:" not in stderr:
            why.append("no one-line human message on stderr")

    def check_store(self, c: Case, home: Path, r: dict | None, why: list[str]) -> None:
        """`history list` / `history export ID --format json` hold what arrived."""
        if r is None:
            return
        rc, out, err, _ = self.palaver(["history", "list"], home, timeout=30)
        self.check_key(home, [out, err], why, what="history list")
        first = out.decode("utf-8", "replace").split()
        if rc != 0 or not first:
            why.append(f"history list failed or is empty (rc={rc}): {err.decode(errors='replace')[-200:]!r}")
            return
        rc, out, err, _ = self.palaver(["history", "export", first[0], "--format", "json"], home, timeout=60)
        self.check_key(home, [out, err], why, what="history export")
        try:
            conv = json.loads(out)
        except ValueError:
            why.append(f"history export is not JSON (rc={rc}): {err.decode(errors='replace')[-200:]!r}")
            return
        msgs = [m for m in conv.get("messages", []) if m.get("role") == "assistant"]
        if not msgs:
            why.append("the stored conversation has no assistant message")
            return
        last = msgs[-1]
        stored = (last.get("choices") or [{}])[0].get("content", "")
        if stored != r.get("text"):
            why.append(f"stored reply {stored[:80]!r} ({len(stored)} chars) differs from the result text "
                       f"({len(r.get('text') or '')} chars)")
        if r.get("error") is not None:
            if last.get("error") is None:
                why.append("the stored reply is not marked as failed (error is null)")
            if last.get("status") == "complete":
                why.append("the stored reply has status 'complete' although the turn failed")
        elif last.get("error") is not None:
            why.append(f"the stored reply has an error {last.get('error')!r} but the result has none")
        want_calls = [t.get("name") for t in r.get("tool_calls") or []]
        stored_calls = [t.get("name") for m in msgs for ch in (m.get("choices") or [])[:1]
                        for t in ch.get("tool_calls") or []]
        if stored_calls != want_calls:
            why.append(f"stored tool calls {stored_calls}, result has {want_calls}")

    @staticmethod
    def check_key(home: Path, blobs: list[bytes], why: list[str], what: str = "output") -> None:
        for b in blobs:
            for part in KEY_PARTS:
                if part in b:
                    why.append(f"the API key appears in palaver's {what}")
                    return
        for f in home.rglob("*"):
            if f.is_file():
                data = f.read_bytes()
                if any(part in data for part in KEY_PARTS):
                    why.append(f"the API key appears in {f.relative_to(home)}")
                    return

    # -- servers ----------------------------------------------------------------------------
    def start_faultserver(self) -> str | None:
        port = free_port()
        self.servers.start("faultserver", [sys.executable, str(HERE / "faultserver.py"), str(port)],
                           server_env(self.tmp / "fs-home"), self.tmp)
        url = f"http://127.0.0.1:{port}"
        err = self.servers.wait_http("faultserver", url + "/health", 20)
        self.urls["faultserver"] = url + "/v1"
        return err

    def start_demo(self) -> str | None:
        env = self.palaver_env(self.tmp / "demo-home")
        env.pop("OPENAI_API_KEY", None)
        (self.tmp / "demo-home").mkdir(exist_ok=True)
        self.servers.start("demo", [self.bin, "serve-demo", "--addr", f"127.0.0.1:{free_port()}"], env, self.tmp)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            first = self.servers.log("demo", 10_000).splitlines()
            if first and first[0].startswith("http"):
                self.urls["demo"] = first[0].strip().rstrip("/")
                return self.servers.wait_http("demo", self.urls["demo"] + "/models", 10)
            if self.servers.procs["demo"].poll() is not None:
                break
            time.sleep(0.1)
        return f"serve-demo printed no URL: {self.servers.log('demo')!r}"

    def start_llmock(self) -> str | None:
        exe = Path(self.opts.llmock_venv) / "bin" / "llmock"
        port = free_port()
        self.servers.start("llmock", [str(exe), "serve", "--host", "127.0.0.1", "--port", str(port),
                                      "--log-level", "warning"], server_env(self.tmp / "llmock-home"), self.tmp)
        url = f"http://127.0.0.1:{port}"
        self.urls["llmock"] = url + "/v1"
        self.urls["llmock-admin"] = url + "/_llmock"
        return self.servers.wait_http("llmock", url + "/health", 60)

    def start_aimock(self) -> str | None:
        cli = Path(self.opts.aimock_dir) / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
        port = free_port()
        self.servers.start("aimock", ["node", str(cli), "-p", str(port), "-h", "127.0.0.1",
                                      "-f", str(HERE / "aimock-fixtures.json"), "--log-level", "warn"],
                           server_env(self.tmp / "aimock-home"), self.tmp)
        url = f"http://127.0.0.1:{port}"
        self.urls["aimock"] = url + "/v1"
        self.urls["aimock-root"] = url
        return self.servers.wait_http("aimock", url + "/health", 30)

    def start_litellm(self) -> None:
        """Starts LiteLLM in the background (it takes a while); `litellm_ready` waits for it."""
        home = self.tmp / "litellm-home"
        home.mkdir()
        dead = f"http://127.0.0.1:{free_port()}/v1"  # where a non-mocked call would go: nowhere
        cfg = (HERE / "litellm-config.yaml").read_text()
        cfg = cfg.replace("__DEMO_URL__", self.urls["demo"]).replace("__DEAD_URL__", dead)
        (home / "config.yaml").write_text(cfg)
        port = free_port()
        exe = Path(self.opts.litellm_venv) / "bin" / "litellm"
        env = server_env(home, {
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
            "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True", "LITELLM_LOCAL_BLOG_POSTS": "True",
            "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True", "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
            "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TRANSFORMERS_OFFLINE": "1",
            "LITELLM_LOG": "ERROR",
        })
        self.servers.start("litellm", [str(exe), "--config", str(home / "config.yaml"), "--host", "127.0.0.1",
                                       "--port", str(port), "--telemetry", "False", "--num_workers", "1"], env, home)
        self.urls["litellm"] = f"http://127.0.0.1:{port}/v1"
        self.urls["litellm-root"] = f"http://127.0.0.1:{port}"

    def litellm_ready(self) -> str | None:
        return self.servers.wait_http("litellm", self.urls["litellm-root"] + "/health/liveliness", 150)

    # -- llmock helpers -------------------------------------------------------------------
    def llmock_plan(self, *behaviors: dict) -> Callable[[], None]:
        def setup() -> None:
            http("DELETE", self.urls["llmock-admin"] + "/scenario")
            if behaviors:
                status, body = http("POST", self.urls["llmock-admin"] + "/scenario", {"behaviors": list(behaviors)})
                if status >= 300:
                    raise RuntimeError(f"llmock refused the scenario: {status} {body}")
        return setup

    def llmock_after(self, attempts: int | None = None) -> Callable[[dict], str | None]:
        """Checks this case's requests in llmock's journal and its verdict."""
        def after(_r: dict) -> str | None:
            http("DELETE", self.urls["llmock-admin"] + "/scenario")
            _, reqs = http("GET", self.urls["llmock-admin"] + "/requests", timeout=15)
            mine = [q for q in reqs.get("requests", []) if q.get("seq", 0) > self.llmock_seq]
            if mine:
                self.llmock_seq = max(q["seq"] for q in mine)
            seqs = {q["seq"] for q in mine}
            notes = []
            if attempts is not None and len(mine) != attempts:
                notes.append(f"llmock saw {len(mine)} attempts, expected {attempts}")
            _, verdict = http("GET", self.urls["llmock-admin"] + "/verdict", timeout=15)
            for f in verdict.get("findings", []):
                if f.get("code") in FORBIDDEN_VERDICT and seqs & set(f.get("requests", [])):
                    notes.append(f"llmock verdict: {f['code']}: {f.get('title')}")
            return "; ".join(notes) or None
        return after

    # -- the cases ------------------------------------------------------------------------
    def interop_llmock(self) -> list[Case]:
        cases = []
        for api in ("chat", "responses"):
            for stream in (True, False):
                s = "s" if stream else "n"
                cases.append(Case(
                    "text + usage", "llmock", api, stream, "gpt-4o-mini", f"llmock text {api} {s}",
                    {"text": LONG_TEXT, "finish": "stop", "usage": "present", "error": None,
                     "events": ["text", "finish", "usage"] if stream else []},
                    setup=self.llmock_plan({"type": "reply", "text": LONG_TEXT}), after=self.llmock_after(1),
                    label="text, usage"))
                cases.append(Case(
                    "tool call (reported, --tools none)", "llmock", api, stream, "gpt-4o-mini",
                    f"llmock tool {api} {s}",
                    {"text": "", "finish": "tool_calls", "usage": "present", "error": None,
                     "tools": [{"name": "read_file", "args": {"path": "interop-note.txt"}, "output": None}]},
                    setup=self.llmock_plan({"type": "reply", "tool_calls": [
                        {"name": "read_file", "arguments": {"path": "interop-note.txt"}}]}),
                    after=self.llmock_after(1), label="tool call"))
            cases.append(Case(
                "tool loop (--tools auto: read_file runs, then the answer)", "llmock", api, True, "gpt-4o-mini",
                f"llmock loop {api}",
                {"text": "I read it: purple elephants.", "finish": "stop", "error": None,
                 "tools": [{"name": "read_file", "args": {"path": "interop-note.txt"}, "output": "purple elephants",
                            "status": "done"}]},
                tools="auto",
                setup=self.llmock_plan(
                    {"type": "reply", "tool_calls": [{"name": "read_file", "arguments": {"path": "interop-note.txt"}}]},
                    {"type": "reply", "text": "I read it: purple elephants."}),
                after=self.llmock_after(2), label="tool loop"))
        return cases

    def faults_llmock(self) -> list[Case]:
        cases = []
        T = {"type": "reply", "text": LONG_TEXT}
        for api in ("chat", "responses"):
            many, trunc, bad = (8, 5, 3) if api == "chat" else (10, 9, 7)
            add = cases.append
            add(Case("429 Retry-After 1 s: waited, retried", "llmock", api, True, "gpt-4o-mini", f"f429 {api}",
                     {"text": LONG_TEXT, "finish": "stop", "error": None, "min_s": 0.95, "events": ["retry"],
                      "stderr": ["429"]}, group="fault", label="429 + Retry-After: 1",
                     setup=self.llmock_plan({"type": "fail", "status": 429, "retry_after": 1}, T),
                     after=self.llmock_after(2)))
            add(Case("429 Retry-After 24 h: reported, not slept", "llmock", api, True, "gpt-4o-mini", f"f429d {api}",
                     {"rc": 1, "text": "", "finish": "error", "max_s": 10,
                      "error": {"kind": "http", "status": 429, "msg": ["86400"]}},
                     group="fault", label="429 + Retry-After: 86400",
                     setup=self.llmock_plan({"type": "fail", "status": 429, "retry_after": 86400}),
                     after=self.llmock_after(1)))
            for st in (500, 502):
                add(Case(f"{st} once: retried", "llmock", api, True, "gpt-4o-mini", f"f{st} {api}",
                         {"text": LONG_TEXT, "finish": "stop", "error": None, "events": ["retry"],
                          "stderr": [str(st)]}, group="fault", label=f"{st} (once)",
                         setup=self.llmock_plan({"type": "fail", "status": st}, T), after=self.llmock_after(2)))
            add(Case("503 every time: gives up after 3 retries", "llmock", api, True, "gpt-4o-mini", f"f503 {api}",
                     {"rc": 1, "text": "", "finish": "error", "max_s": 30,
                      "error": {"kind": "http", "status": 503, "msg": ["gave up after 3 retries"]}},
                     group="fault", label="503 (every time)",
                     setup=self.llmock_plan({"type": "fail", "status": 503, "times": None}),
                     after=self.llmock_after(4)))
            add(Case("401: no retry, clear message", "llmock", api, True, "gpt-4o-mini", f"f401 {api}",
                     {"rc": 1, "text": "", "finish": "error", "error": {"kind": "http", "status": 401},
                      "stderr": ["401"]}, group="fault", label="401",
                     setup=self.llmock_plan({"type": "fail", "status": 401}), after=self.llmock_after(1)))
            for n, lab in ((0, "0"), (1, "1"), (many, "many")):
                exp = {"rc": 1, "finish": "error",
                       "error": {"kind": "disconnected", "msg": [("dropped", "disconnect", "closed", "reset")]}}
                if lab == "many":
                    exp["text_partial_of"] = LONG_TEXT
                else:
                    exp["text"] = ""
                add(Case(f"disconnect after {lab} events", "llmock", api, True, "gpt-4o-mini", f"fdis{n} {api}",
                         exp, group="fault", label=f"disconnect after {lab} events",
                         setup=self.llmock_plan(T, {"type": "stream_fault", "kind": "disconnect", "after_chunks": n}),
                         after=self.llmock_after(1)))
            add(Case("truncated, no finish", "llmock", api, True, "gpt-4o-mini", f"ftrunc {api}",
                     {"rc": 1, "finish": "error", "text_partial_of": LONG_TEXT,
                      "error": {"kind": "truncated", "msg": ["finish reason"]}},
                     group="fault", label="truncated stream, no finish",
                     setup=self.llmock_plan(T, {"type": "stream_fault", "kind": "truncate", "after_chunks": trunc}),
                     after=self.llmock_after(1)))
            add(Case("malformed JSON frame: error, rest kept", "llmock", api, True, "gpt-4o-mini", f"fbad {api}",
                     {"rc": 1, "finish": "error", "text_endswith": "ten eleven twelve", "events": ["malformed_frame"],
                      "error": {"kind": "malformed", "msg": ["malformed"]}},
                     group="fault", label="malformed JSON frame",
                     setup=self.llmock_plan(T, {"type": "stream_fault", "kind": "malformed", "after_chunks": bad}),
                     after=self.llmock_after(1)))
            add(Case("stall 3 s > idle timeout 1 s", "llmock", api, True, "gpt-4o-mini", f"fstall {api}",
                     {"rc": 1, "finish": "error", "text_partial_of": LONG_TEXT, "max_s": 2.9,
                      "error": {"kind": "idle_timeout", "msg": ["idle"]}},
                     args=["--idle-timeout", "1"], group="fault", label="stall longer than the idle timeout",
                     setup=self.llmock_plan(T, {"type": "stream_fault", "kind": "stall", "after_chunks": 6,
                                                "stall_seconds": 3}),
                     after=self.llmock_after(1)))
            add(Case("first token after 3 s > first-byte timeout 1 s", "llmock", api, True, "gpt-4o-mini",
                     f"fslow {api}",
                     {"rc": 1, "finish": "error", "text": "", "max_s": 2.9,
                      "error": {"kind": "first_byte_timeout", "msg": ["first-byte"]}},
                     args=["--first-byte-timeout", "1"], group="fault",
                     label="first token later than the first-byte timeout",
                     setup=self.llmock_plan(T, {"type": "slow_first_token", "seconds": 3}),
                     after=self.llmock_after(1)))
            add(Case("headers after 3 s > first-byte timeout 1 s", "llmock", api, True, "gpt-4o-mini",
                     f"fdelay {api}",
                     {"rc": 1, "finish": "error", "text": "", "max_s": 2.9,
                      "error": {"kind": "first_byte_timeout", "msg": ["first-byte"]}},
                     args=["--first-byte-timeout", "1"], group="fault",
                     label="response headers later than the first-byte timeout",
                     setup=self.llmock_plan(T, {"type": "delay", "seconds": 3}), after=self.llmock_after(1)))
        return cases

    def interop_aimock(self) -> list[Case]:
        cases = []
        azure = (f'[providers.interop]\nbase_url = "{self.urls["aimock-root"]}/openai/deployments/{AZURE_DEPLOYMENT}"\n'
                 f'auth = "api-key"\nquery = {{ "api-version" = "{AZURE_API_VERSION}" }}\n')
        text = "Hello from aimock, all in one piece."
        for api in ("chat", "responses"):
            for stream in (True, False):
                cases.append(Case("text + usage", "aimock", api, stream, "gpt-4o", "aimock-text",
                                  {"text": text, "finish": "stop", "error": None,
                                   "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}},
                                  label="text, usage"))
                cases.append(Case("tool call (reported, --tools none)", "aimock", api, stream, "gpt-4o",
                                  "aimock-tool",
                                  {"text": "", "finish": "tool_calls", "error": None,
                                   "tools": [{"name": "read_file", "args": {"path": "interop-note.txt"},
                                              "output": None}]}, label="tool call"))
                if api == "chat":
                    # DESIGN §2: a reply the content filter stopped exits 4.
                    filt = {"rc": 4, "text": "This reply was cut by the filter", "finish": "content_filter",
                            "error": None, "stderr": ["content filter"]}
                else:
                    # aimock maps content_filter to `status: "failed"` (no error object) on the Responses
                    # API; DESIGN §2 maps failed → error, keeping the text.
                    filt = {"rc": 1, "text": "This reply was cut by the filter", "finish": "error",
                            "error": {"kind": "stream"}}
                cases.append(Case("content_filter finish", "aimock", api, stream, "gpt-4o", "aimock-filter", filt,
                                  label="content_filter finish"))
                cases.append(Case(f"Azure deployment path, api-key auth", "aimock", api, stream, "gpt-4o",
                                  "aimock-text", {"text": text, "finish": "stop", "error": None},
                                  provider_toml=azure, after=self.aimock_azure_after(api),
                                  label="Azure deployment path"))
        return cases

    def aimock_azure_after(self, api: str) -> Callable[[dict], str | None]:
        def after(_r: dict) -> str | None:
            _, journal = http("GET", self.urls["aimock-root"] + "/__aimock/journal?limit=1000")
            entries = journal if isinstance(journal, list) else journal.get("entries", [])
            if not entries:
                return "aimock journal is empty"
            last = max(entries, key=lambda e: e.get("timestamp", 0))
            path = last.get("path", "")
            want = f"/openai/deployments/{AZURE_DEPLOYMENT}/{'chat/completions' if api == 'chat' else 'responses'}"
            notes = []
            if not path.startswith(want) or f"api-version={AZURE_API_VERSION}" not in path:
                notes.append(f"request went to {path!r}, expected {want}?api-version={AZURE_API_VERSION}")
            headers = {k.lower(): v for k, v in (last.get("headers") or {}).items()}
            if "api-key" not in headers:
                notes.append("no api-key header on the Azure request")
            if "authorization" in headers:
                notes.append("an Authorization header was sent to Azure as well as api-key")
            return "; ".join(notes) or None
        return after

    def faults_aimock(self) -> list[Case]:
        cases = []
        alpha = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma "
                 "tau upsilon")
        for api in ("chat", "responses"):
            cases.append(Case("429 Retry-After 1 s: waited, retried", "aimock", api, True, "gpt-4o",
                              f"aimock-429-{api}",
                              {"text": "Served after the rate limit.", "finish": "stop", "error": None,
                               "min_s": 0.95, "events": ["retry"]}, group="fault", label="429 + Retry-After: 1"))
            cases.append(Case("500 every time: gives up after 3 retries", "aimock", api, True, "gpt-4o", "aimock-500",
                              {"rc": 1, "text": "", "finish": "error",
                               "error": {"kind": "http", "status": 500, "msg": ["gave up after 3 retries"]}},
                              group="fault", label="500 (every time)"))
            cases.append(Case("401: no retry, clear message", "aimock", api, True, "gpt-4o", "aimock-401",
                              {"rc": 1, "text": "", "finish": "error", "max_s": 5,
                               "error": {"kind": "http", "status": 401, "msg": ["Incorrect API key"]}},
                              group="fault", label="401"))
            cases.append(Case("disconnect after many chunks (truncateAfterChunks)", "aimock", api, True, "gpt-4o",
                              "aimock-truncate",
                              {"rc": 1, "finish": "error", "text_prefix_of": alpha,
                               "error": {"kind": "disconnected", "msg": [("dropped", "closed", "reset")]}},
                              group="fault", label="disconnect after many events (truncateAfterChunks)"))
            cases.append(Case("disconnect after 300 ms (disconnectAfterMs)", "aimock", api, True, "gpt-4o",
                              "aimock-disconnect",
                              {"rc": 1, "finish": "error", "text_prefix_of": alpha,
                               "error": {"kind": "disconnected", "msg": [("dropped", "closed", "reset")]}},
                              group="fault", label="disconnect after 300 ms (disconnectAfterMs)"))
            cases.append(Case("malformed JSON body (chaos malformedRate 1)", "aimock", api, True, "gpt-4o",
                              "aimock-malformed",
                              {"rc": 1, "finish": "error", "text": "", "events": ["malformed_frame"],
                               "error": {"kind": ("malformed", "truncated"), "msg": ["malformed"]}},
                              group="fault", label="malformed JSON body (no SSE, no finish)"))
        return cases

    def interop_faultserver(self) -> list[Case]:
        cases = []
        text = "Fault server says hello in six words."
        for api in ("chat", "responses"):
            for stream in (True, False):
                cases.append(Case("text + usage", "faultserver", api, stream, "ok", "fs ok",
                                  {"text": text, "finish": "stop", "error": None,
                                   "usage": {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11}},
                                  label="text, usage"))
                if api == "responses":
                    cases.append(Case("`data: [DONE]` after response.completed (as LiteLLM sends)", "faultserver",
                                      api, stream, "done-trailer", "fs done",
                                      {"text": text, "finish": "stop", "error": None, "usage": "present"},
                                      label="Responses stream ending in `data: [DONE]`"))
                cases.append(Case("content_filter finish", "faultserver", api, stream, "content-filter", "fs filter",
                                  {"rc": 4, "text": "I started to answer but", "finish": "content_filter",
                                   "error": None, "stderr": ["content filter"]}, label="content_filter finish"))
        return cases

    def faults_faultserver(self) -> list[Case]:
        cases = []
        text = "Fault server says hello in six words."
        parts = "Alpha beta gamma delta epsilon."
        refused = f"http://127.0.0.1:{free_port()}/v1"
        for api in ("chat", "responses"):
            add = cases.append
            add(Case("connection refused", "faultserver", api, True, "ok", "fs refused",
                     {"rc": 1, "text": "", "finish": "error", "max_s": 15,
                      "error": {"kind": "connect", "msg": [("refused", "could not connect")]}},
                     base_url=refused, group="fault", label="connection refused"))
            add(Case("429 Retry-After as an HTTP date: waited, retried", "faultserver", api, True, "retry-date",
                     f"fs date {api}", {"text": text, "finish": "stop", "error": None, "min_s": 0.9,
                                        "events": ["retry"]}, group="fault", label="429 + Retry-After: HTTP date"))
            add(Case("502 with an HTML body: retried", "faultserver", api, True, "html-502", f"fs 502 {api}",
                     {"text": text, "finish": "stop", "error": None, "events": ["retry"], "stderr": ["502"]},
                     group="fault", label="502 (HTML body, once)"))
            add(Case("socket closed before any byte", "faultserver", api, True, "drop-before", "fs drop0",
                     {"rc": 1, "text": "", "finish": "error",
                      "error": {"kind": ("request", "disconnected", "connect"),
                                "msg": [("reset", "closed", "dropped", "connection")]}},
                     group="fault", label="disconnect after 0 events"))
            add(Case("disconnect after 1 event", "faultserver", api, True, "drop-after-1", "fs drop1",
                     {"rc": 1, "text": "Alpha ", "finish": "error",
                      "error": {"kind": "disconnected", "msg": [("reset", "dropped", "closed")]}},
                     group="fault", label="disconnect after 1 events"))
            add(Case("truncated, no finish", "faultserver", api, True, "truncated", "fs trunc",
                     {"rc": 1, "text": "Alpha beta gamma ", "finish": "error",
                      "error": {"kind": "truncated", "msg": ["finish reason"]}},
                     group="fault", label="truncated stream, no finish"))
            add(Case("malformed JSON frame: error, rest kept", "faultserver", api, True, "malformed", "fs bad",
                     {"rc": 1, "text": parts, "finish": "error", "usage": "present", "events": ["malformed_frame"],
                      "error": {"kind": "malformed", "msg": ["malformed"]}},
                     group="fault", label="malformed JSON frame"))
            add(Case("malformed last frame, then the end (no finish)", "faultserver", api, True, "malformed-end",
                     "fs badend",
                     {"rc": 1, "text": "Alpha ", "finish": "error", "events": ["malformed_frame"],
                      "error": {"kind": ("malformed", "truncated"), "msg": ["malformed"]}},
                     group="fault", label="malformed last frame, no finish"))
            # Past the default reply limit (4 MiB): a named limit, not 10 MiB held quietly.
            add(Case("10 MiB delta, default limits", "faultserver", api, True, "big-delta", "fs big",
                     {"rc": 1, "finish": "error", "max_s": 60,
                      "error": {"kind": "limit", "msg": ["reply_bytes"]}},
                     group="fault", label="a 10 MB delta (default limits)"))
            # With the limit raised in the profile, every byte comes through unaltered.
            raised = (f'[providers.interop]\nbase_url = "{self.urls["faultserver"]}"\n'
                      'limits = { reply_bytes = 16777216, sse_event_bytes = 16777216 }\n')
            add(Case("10 MiB delta, limits raised", "faultserver", api, True, "big-delta", "fs big",
                     {"text_len": BIG_LEN, "finish": "stop", "error": None, "max_s": 60,
                      "compare": lambda r: None if r["text"] == "abcdefghij" * (BIG_LEN // 10)
                      else "the 10 MiB text came back altered"},
                     provider_toml=raised, group="fault", label="a 10 MB delta (limits raised)"))
            unk = {"text": text, "finish": "stop", "error": None, "usage": "present"}
            if api == "responses":
                unk["events"] = ["unknown_event"]
            add(Case("unknown event types", "faultserver", api, True, "unknown-events", "fs unknown", unk,
                     group="fault", label="unknown event types"))
            add(Case("error frame mid-stream", "faultserver", api, True, "error-frame", "fs errframe",
                     {"rc": 1, "text": "Alpha ", "finish": "error",
                      "error": {"kind": "stream", "msg": ["fault server"]}},
                     group="fault", label="error frame mid-stream"))
        return cases

    def interop_litellm(self) -> list[Case]:
        cases = []
        mock = "Hello from the LiteLLM mock."
        for api in ("chat", "responses"):
            for stream in (True, False):
                if api == "responses" and stream:
                    self.skip("litellm responses stream: mock_response text",
                              "LiteLLM 1.102.4 answers HTTP 500 \"'async for' requires an object with __aiter__ "
                              "method, got ResponsesAPIResponse\" for a streamed mock_response on /v1/responses "
                              "(a LiteLLM bug); the bridge cases below cover Responses streaming")
                    continue
                cases.append(Case("mock_response text + usage", "litellm", api, stream, "mock-text", f"ll text {api}",
                                  {"text": mock, "finish": "stop", "error": None, "usage": "present"},
                                  label="text, usage (mock_response)"))
        cases.append(Case("mock_tool_calls (reported, --tools none)", "litellm", "chat", False, "mock-tool", "ll tool",
                          {"finish": "stop", "error": None, "text": "This is a mock request",
                           "tools": [{"name": "read_file", "args": {"path": "interop-note.txt"}, "id": "call_mock_1",
                                      "output": None}]},
                          label="tool call (mock_tool_calls)"))
        self.skip("litellm chat stream: mock_tool_calls",
                  "LiteLLM 1.102.4 streams a mock_tool_calls model as the text 'This is a mock request' with no "
                  "tool call, and /v1/responses ignores mock_tool_calls (it would call the real upstream); "
                  "streamed tool calls through LiteLLM are covered by the bridge to demo-tools")
        for api in ("chat", "responses"):
            for stream in (True, False):
                cases.append(Case("bridge to serve-demo: same text and completion usage as direct", "litellm", api,
                                  stream, "demo", f"bridge {api}",
                                  {"finish": "stop", "error": None, "usage": "present", "text_nonempty": True,
                                   "compare": self.same_as_direct(api, stream, "demo", f"bridge {api}")},
                                  label="bridge → serve-demo (text, usage)"))
                cases.append(Case("bridge to serve-demo demo-tools: tool loop (--tools auto)", "litellm", api, stream,
                                  "demo-tools", f"bridge tools {api}",
                                  {"finish": "stop", "error": None, "text_nonempty": True,
                                   "compare": self.same_as_direct(api, stream, "demo-tools",
                                                                  f"bridge tools {api}", tools=True)},
                                  tools="auto", label="bridge → serve-demo (tool loop)"))
        return cases

    def same_as_direct(self, api: str, stream: bool, model: str, prompt: str, tools: bool = False):
        """Runs the same prompt straight at serve-demo and compares."""
        def compare(r: dict) -> str | None:
            home = Path(tempfile.mkdtemp(dir=self.tmp, prefix="direct-"))
            args = ["--base-url", self.urls["demo"], "--api", api, "-m", model, "-p", prompt, "--json",
                    "--tools", "auto" if tools else "none"] + ([] if stream else ["--no-stream"])
            rc, out, _, _ = self.palaver(args, home)
            try:
                d = json.loads(out.decode().strip().splitlines()[-1])
            except (ValueError, IndexError):
                return f"the direct run against serve-demo failed (rc={rc})"
            if tools:
                want = [(c["name"], c["arguments"]) for c in d.get("tool_calls", [])]
                got = [(c["name"], c["arguments"]) for c in r.get("tool_calls", [])]
                if got != want:
                    return f"tool calls through LiteLLM {got} differ from direct {want}"
                if not got or any(c.get("output") is None for c in r.get("tool_calls", [])):
                    return "tool calls through LiteLLM were not run"
                return None
            if r.get("text") != d.get("text"):
                return "text through LiteLLM differs from the direct answer"
            ru, du = r.get("usage") or {}, d.get("usage") or {}
            if ru.get("completion_tokens") != du.get("completion_tokens"):
                return f"completion_tokens {ru.get('completion_tokens')} through LiteLLM, {du.get('completion_tokens')} direct"
            return None
        return compare

    # -- main -----------------------------------------------------------------------------
    def run(self) -> int:
        t0 = time.monotonic()
        print(f"interop: palaver {self.bin}; temp {self.tmp}", flush=True)
        plan: list[tuple[str, Callable[[], str | None], list[Callable[[], list[Case]]]]] = []
        if (err := self.start_faultserver()) is not None:
            self.skip("faultserver", err)
        if (err := self.start_demo()) is not None:
            self.skip("serve-demo", err)
        litellm = "litellm" not in self.skips and "demo" in self.urls
        if litellm:
            self.start_litellm()
        elif "litellm" in self.skips:
            self.skip("litellm", self.skips["litellm"])
        for name, start, groups in (
            ("faultserver", None, [self.interop_faultserver, self.faults_faultserver]),
            ("llmock", self.start_llmock, [self.interop_llmock, self.faults_llmock]),
            ("aimock", self.start_aimock, [self.interop_aimock, self.faults_aimock]),
        ):
            if name in self.skips:
                self.skip(name, self.skips[name])
                continue
            if start is not None and (err := start()) is not None:
                self.skip(name, f"did not start: {err}")
                continue
            if name not in self.urls:
                continue
            for g in groups:
                for c in g():
                    self.run_case(c)
            if name == "llmock":
                self.final_llmock_verdict()
        if litellm:
            if (err := self.litellm_ready()) is not None:
                self.skip("litellm", f"did not start: {err}")
            else:
                for c in self.interop_litellm():
                    self.run_case(c)
        if self.opts.realserver or "realserver" in self.skips:
            self.servers.stop_all()  # the mocks are done: the real model gets the CPU
            self.run_realserver()
        self.final_home_scan()
        passed = sum(o.ok for o in self.outcomes)
        failed = len(self.outcomes) - passed
        self.write_report(time.monotonic() - t0)
        print(f"interop: run time {time.monotonic() - t0:.0f} s; report {self.opts.report}", flush=True)
        print(f"interop: {passed} passed, {failed} failed", flush=True)
        return 1 if failed else 0

    def run_realserver(self) -> None:
        """llama.cpp's server with a real model (realserver.py): one server for the whole section."""
        rs = RealServer(self.bin, Path(self.opts.realserver or "."), self.tmp,
                        Path(self.opts.pidfile) if self.opts.pidfile else None, self.skips.get("realserver"),
                        Path(self.opts.report).parent / "interop-logs" if self.opts.report else None)
        for o in rs.run():
            if o.skipped:
                self.skipped.append((f"realserver {o.name}", o.note))
                continue
            c = Case(o.name, "realserver", o.api, o.stream, "gemma-3-270m", "-", {}, group="realserver",
                     label=o.note)
            self.outcomes.append(Outcome(c, o.ok, o.why, None, None, "", o.elapsed))

    def final_llmock_verdict(self) -> None:
        time.sleep(1)
        _, verdict = http("GET", self.urls["llmock-admin"] + "/verdict", timeout=20)
        bad = [f for f in verdict.get("findings", []) if f.get("code") in FORBIDDEN_VERDICT]
        codes = sorted({f["code"] for f in verdict.get("findings", [])})
        c = Case("whole-session verdict", "llmock", "both", True, "-", "-", {}, label="verdict")
        why = [f"{f['code']}: {f.get('title')} (requests {f.get('requests')})" for f in bad]
        o = Outcome(c, not bad, why, 0, {"codes": codes}, "", 0)
        self.outcomes.append(o)
        tag = (f"llmock verdict: {verdict.get('calls')} calls, {verdict.get('attempts')} attempts, "
               f"{verdict.get('faults_injected')} faults; findings {codes}")
        print(f"{'PASS' if o.ok else 'FAIL'} {tag}", flush=True)
        for w in why:
            print(f"     - {w}", flush=True)

    def final_home_scan(self) -> None:
        why: list[str] = []
        self.check_key(self.home, [], why, what="HOME")
        c = Case("the key is nowhere under HOME", "palaver", "both", True, "-", "-", {}, label="key")
        self.outcomes.append(Outcome(c, not why, why, 0, None, "", 0))
        print(f"{'PASS' if not why else 'FAIL'} palaver: the API key appears nowhere under HOME", flush=True)
        for w in why:
            print(f"     - {w}", flush=True)

    # -- the report -----------------------------------------------------------------------
    def write_report(self, seconds: float) -> None:
        if not self.opts.report:
            return
        lines = [f"# palaver interop report", "", f"Run time {seconds:.0f} s. "
                 f"{sum(o.ok for o in self.outcomes)} passed, {sum(not o.ok for o in self.outcomes)} failed.", ""]
        for what, reason in self.skipped:
            lines.append(f"- SKIP {what}: {reason}")
        lines += ["", "## Servers × APIs × streaming", "",
                  "| server | case | chat stream | chat no-stream | responses stream | responses no-stream |",
                  "|---|---|---|---|---|---|"]
        rows: dict[tuple, dict] = {}
        for o in self.outcomes:
            c = o.case
            if c.group != "interop" or c.api not in ("chat", "responses"):
                continue
            key = (c.server, c.label)
            rows.setdefault(key, {})[(c.api, c.stream)] = "pass" if o.ok else "**FAIL**"
        for (server, label), cells in rows.items():
            cols = [cells.get(k, "–") for k in (("chat", True), ("chat", False), ("responses", True),
                                                ("responses", False))]
            lines.append(f"| {server} | {label} | " + " | ".join(cols) + " |")
        lines += ["", "## Fault matrix (streaming, headless)", "",
                  "| fault | server | chat | responses | what the user sees (chat; stderr, exit, text kept) |",
                  "|---|---|---|---|---|"]
        frows: dict[tuple, dict] = {}
        for o in self.outcomes:
            c = o.case
            if c.group != "fault":
                continue
            frows.setdefault((c.label, c.server, c.name), {})[c.api] = o
        for (label, server, _name), by_api in frows.items():
            cells = []
            for api in ("chat", "responses"):
                o = by_api.get(api)
                cells.append("–" if o is None else ("pass" if o.ok else "**FAIL**"))
            o = by_api.get("chat") or by_api.get("responses")
            lines.append(f"| {label} | {server} | {cells[0]} | {cells[1]} | {self.user_sees(o)} |")
        real = [o for o in self.outcomes if o.case.group == "realserver"]
        if real:
            lines += ["", "## Real server (llama.cpp + Gemma 3 270M base)", "",
                      "| case | API | streaming | result | time | what it showed |", "|---|---|---|---|---|---|"]
            for o in real:
                c = o.case
                lines.append(f"| {c.name} | {c.api} | {'stream' if c.stream else 'no-stream'} | "
                             f"{'pass' if o.ok else '**FAIL**'} | {o.elapsed:.1f} s | {c.label} |".replace("\n", " "))
        fails = [o for o in self.outcomes if not o.ok]
        if fails:
            lines += ["", "## Failures", ""]
            for o in fails:
                lines.append(f"- {o.case.server} {o.case.api} {'stream' if o.case.stream else 'no-stream'} "
                             f"{o.case.name}: " + "; ".join(w.replace('|', '\\|') for w in o.why)[:700])
        Path(self.opts.report).write_text("\n".join(lines) + "\n")

    @staticmethod
    def user_sees(o: Outcome) -> str:
        msgs = [ln.strip() for ln in o.stderr.splitlines() if ln.startswith("palaver:")]
        shown = " / ".join(m[:140] for m in msgs[-2:]) if msgs else "(nothing on stderr)"
        text = (o.result or {}).get("text") or ""
        kept = f"{len(text)} chars" if len(text) > 40 else repr(text)
        return f"`{shown}`; exit {o.rc}; text {kept}".replace("|", "\\|")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--palaver", required=True)
    ap.add_argument("--litellm-venv", default="")
    ap.add_argument("--llmock-venv", default="")
    ap.add_argument("--aimock-dir", default="")
    ap.add_argument("--skip", action="append", default=[], help="NAME=REASON")
    ap.add_argument("--realserver", default="", help="the shared realserver folder (install.sh, start.sh, stop.sh)")
    ap.add_argument("--pidfile", default="")
    ap.add_argument("--report", default="")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    opts = ap.parse_args()
    suite = Suite(opts)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        return suite.run()
    finally:
        suite.servers.stop_all()
        if not opts.keep:
            shutil.rmtree(suite.tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
