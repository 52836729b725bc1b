#!/usr/bin/env python3
"""Issue 39's hostile suite, whole: every area's cases against one binary, then the checks that
hold for all of them. Not a timed test: run it by hand (release binary) and put its table in the
closing note.

    python3 benches/hostile/issue39.py [PALAVER_BINARY] [AREA…]

AREA is one of read, spawn, redact, mcp, input (the files issue39_AREA.py beside this one, each
runnable alone with the same arguments). Each area runs with a temporary directory of its own
as TMPDIR and a marker in its environment; after it ends this checks, beyond what each case
checks itself, that:

- no temporary file is left behind (its TMPDIR is empty again, beyond what the case script
  itself keeps to remove at its own exit), and
- nothing it started is still running: no process on the machine carries its marker (children
  inherit it under every environment policy but "none", which no case uses).

Exit status: 0 when every case held and both checks passed, 1 otherwise.
"""

import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
AREAS = ["read", "spawn", "redact", "mcp", "input"]
MARK = "PALAVER_HOSTILE39_RUN"


def marked_processes(value):
    """Pids whose environment carries MARK=value (this process and its parent excluded)."""
    found = []
    needle = ("%s=%s" % (MARK, value)).encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in (os.getpid(), os.getppid()):
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read()
            with open("/proc/%s/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in env.split(b"\0"):
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                found.append("%s %s" % (pid, f.read().replace(b"\0", b" ").decode(errors="replace")[:80]))
    return found


def leftovers(tmp):
    out = []
    for dirpath, dirnames, filenames in os.walk(tmp):
        out.extend(os.path.join(dirpath, n) for n in filenames)
        if not filenames and not dirnames and dirpath != tmp:
            out.append(dirpath + "/")
    return out


def run_area(binary, area):
    script = os.path.join(HERE, "issue39_%s.py" % area)
    if not os.path.exists(script):
        return False, "%s: no cases file (%s)" % (area, os.path.basename(script))
    tmp = tempfile.mkdtemp(prefix="h39-%s-" % area)
    value = "%s-%d" % (area, os.getpid())
    env = dict(os.environ, TMPDIR=tmp, **{MARK: value})
    started = time.monotonic()
    proc = subprocess.run([sys.executable, script, binary], env=env)
    took = time.monotonic() - started
    time.sleep(0.5)  # what was killed a moment ago is reaped
    alive = marked_processes(value)
    left = leftovers(tmp)
    ok = proc.returncode == 0 and not alive and not left
    words = ["%s: cases exit %d in %.1f s" % (area, proc.returncode, took)]
    words.append("temp files left: %s" % (", ".join(left[:5]) if left else "none"))
    words.append("still running: %s" % ("; ".join(alive[:5]) if alive else "none"))
    for line in alive:
        try:
            os.kill(int(line.split()[0]), 9)
        except OSError:
            pass
    subprocess.run(["rm", "-rf", tmp])
    return ok, " · ".join(words)


def main():
    binary = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "palaver")
    areas = sys.argv[2:] or AREAS
    results = [run_area(binary, a) for a in areas]
    print("\n== issue 39 hostile suite: %s" % binary)
    for ok, line in results:
        print("%s %s" % ("held  " if ok else "FAILED", line))
    sys.exit(0 if all(ok for ok, _ in results) else 1)


if __name__ == "__main__":
    main()
