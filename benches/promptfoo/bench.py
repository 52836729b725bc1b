#!/usr/bin/env python3
"""The side-by-side bench's two helpers (run.sh calls them):

  bench.py measure OUT.json STDOUT_FILE -- CMD...   runs CMD, its stdout to STDOUT_FILE, and
      writes its CPU (user+sys of it and every process it waited for), max RSS and wall time
  bench.py compare PROMPTFOO.json PALAVER.jsonl PF_MEASURE.json PAL_MEASURE.json LABELS
      prints pass/fail per cell (test x provider) agreed and every disagreement with both
      tools' reasons, then both tools' CPU and memory; exits 1 on a disagreement
"""
import json
import resource
import subprocess
import sys
import time


def measure(out, stdout_file, cmd):
    start = time.monotonic()
    with open(stdout_file, "w") as f:
        code = subprocess.run(cmd, stdout=f).returncode
    wall = time.monotonic() - start
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    fig = {"cpu_s": r.ru_utime + r.ru_stime, "user_s": r.ru_utime, "sys_s": r.ru_stime,
           "max_rss_mb": r.ru_maxrss / 1024, "wall_s": wall, "exit": code}
    with open(out, "w") as f:
        json.dump(fig, f)
    print(f"{cmd[0].rsplit('/', 1)[-1]}: exit {code}, cpu {fig['cpu_s']:.2f} s, rss {fig['max_rss_mb']:.0f} MB, wall {wall:.1f} s",
          file=sys.stderr)


def promptfoo_cells(path):
    data = json.load(open(path))
    results = data["results"]["results"]
    cells = {}
    for r in results:
        test = (r.get("testCase") or {}).get("description") or f"test {r.get('testIdx')}"
        prov = r.get("provider") or {}
        label = prov.get("label") or prov.get("id")
        grading = r.get("gradingResult") or {}
        failed = [c for c in grading.get("componentResults") or [] if not c.get("pass")]
        reason = "; ".join(f"{(c.get('assertion') or {}).get('type')}: {c.get('reason')}" for c in failed)
        if r.get("error") and not reason:
            reason = f"error: {r['error']}"
        cells[(test, label)] = (bool(r.get("success")), reason or grading.get("reason") or "", r.get("response", {}) or {})
    return cells


def palaver_cells(path, labels):
    cells = {}
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        c = json.loads(line)
        if c.get("type") != "cell":
            continue
        checks = c.get("checks") or []
        weighs = [k for k in checks if k.get("weight", 1) > 0]
        ok = bool(c.get("ok")) and bool(checks) and all(k.get("pass") for k in weighs)
        failed = [k for k in weighs if not k.get("pass")]
        reason = "; ".join(f"{k['kind']}: {k.get('detail')}" for k in failed)
        if c.get("error"):
            reason = f"error: {c['error'].get('message')}"
        # A column is the config's provider at that place, shown as promptfoo shows it.
        cells[(c["prompt_id"], labels[c["column"]])] = (ok, reason, c.get("text") or "")
    return cells


def compare(pf_path, pal_path, pf_fig_path, pal_fig_path, labels):
    pf, pal = promptfoo_cells(pf_path), palaver_cells(pal_path, labels.split(","))
    keys = sorted(set(pf) | set(pal))
    agree, differ, missing = 0, [], []
    for k in keys:
        if k not in pf or k not in pal:
            missing.append(k)
        elif pf[k][0] == pal[k][0]:
            agree += 1
        else:
            differ.append(k)
    passes = sum(1 for k in keys if k in pal and pal[k][0])
    print(f"cells: {len(keys)} (test x provider); both tools agree on {agree}; disagree on {len(differ)}; "
          f"in one tool only: {len(missing)}; palaver passed {passes}")
    for k in differ:
        print(f"- {k[0]} @ {k[1]}: promptfoo {'pass' if pf[k][0] else 'FAIL'} ({pf[k][1] or 'ok'}); "
              f"palaver {'pass' if pal[k][0] else 'FAIL'} ({pal[k][1] or 'ok'})")
        print(f"    palaver's answer: {pal[k][2][:160]!r}")
        print(f"    promptfoo's answer: {str((pf[k][2] or {}).get('output', ''))[:160]!r}")
    for k in missing:
        print(f"- {k[0]} @ {k[1]}: only in {'promptfoo' if k in pf else 'palaver'}")
    a, b = json.load(open(pf_fig_path)), json.load(open(pal_fig_path))
    print(f"promptfoo: cpu {a['cpu_s']:.2f} s (user {a['user_s']:.2f} + sys {a['sys_s']:.2f}), max rss {a['max_rss_mb']:.0f} MB, wall {a['wall_s']:.1f} s, exit {a['exit']}")
    print(f"palaver:   cpu {b['cpu_s']:.2f} s (user {b['user_s']:.2f} + sys {b['sys_s']:.2f}), max rss {b['max_rss_mb']:.0f} MB, wall {b['wall_s']:.1f} s, exit {b['exit']}")
    if b["cpu_s"] > 0:
        print(f"CPU: palaver uses 1/{a['cpu_s'] / b['cpu_s']:.1f} of promptfoo's (the issue asks under 1/20); "
              f"memory 1/{a['max_rss_mb'] / max(b['max_rss_mb'], 1):.1f}")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    if sys.argv[1] == "measure":
        sep = sys.argv.index("--")
        measure(sys.argv[2], sys.argv[3], sys.argv[sep + 1:])
    elif sys.argv[1] == "compare":
        sys.exit(compare(*sys.argv[2:7]))
    else:
        sys.exit(__doc__)
