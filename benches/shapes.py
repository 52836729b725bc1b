#!/usr/bin/env python3
"""The shapes bench (issue 41): the chat screen's cost must not depend on the shape of an answer.

usage: shapes.py [PALAVER] [--only SHAPE[,SHAPE]] [--deltas N] [--rounds N] [--timeout S]
                 [--check] [--json FILE]

For each shape below, an answer of --deltas deltas (default 100,000) and one of 4x that are
streamed from a local server (floor.py's: a process of its own, one write per SSE event, Chat
Completions chunks of about 8 bytes each, cut between characters; the model name picks the shape
and size) to
palaver -p (headless, stdout into a pipe) and to the chat screen (a 120x40 pseudo-terminal driven
by floor.run_screen: it types a prompt, waits until the server has sent the whole stream and
palaver's CPU time stops moving, then ends it), alternating, --rounds times. CPU is user + system
of the whole process (wait4's rusage), start-up included. After each chat-screen run, its history
must hold the whole reply, byte for byte, or the bench stops.

Shapes (the text scales with the deltas, about 8 bytes a delta, so 3.2 MB at 400,000 for every
shape: under palaver's default reply limit of 4 MB, which a 400,000-delta CJK answer at 8
characters a delta, 9.6 MB, is not):
  paragraphs  many paragraphs of prose: lines of ~80 characters, a blank line every 4 lines
  paragraph   ONE paragraph: lines of ~70 characters joined by single newlines, no blank line
  line        one line of base64-like text, no space, no newline
  code        one ```rust fenced block of realistic code, closed at the end
  table       one GFM table of 6 columns (~5,000 rows at 100k deltas, ~20,000 at 400k)
  list        one tight bullet list (~12,500 items at 100k deltas, ~50,000 at 400k)
  cjk         Chinese and Japanese prose without spaces, lines of a few hundred characters
              with punctuation, single newlines
  emoji       words with emoji sequences (ZWJ families, flags, skin tones, a heart with its
              variation selector) and combining accents (e + U+0301), single newlines

Per shape it prints the bytes, the median CPU seconds of headless and of the chat screen at
both sizes, the growth (4x run / 1x run) of each, and the chat screen / headless ratio at both
sizes, each marked against issue 41's targets: growth <= 4.5, ratio <= 1.3. A run still going
after --timeout wall seconds (default 180) is killed and shown as "> S s" (its CPU until then
bounds the growth or ratio: ">" at least, "<" at most, "?" when both sides were killed; a target
is only "ok" when the bound proves it). --check exits 1 when a target is missed; --json
writes the figures. The machine may be shared: compare runs of one invocation.

Run it from a checkout with its own binary, say:
  cargo build --profile profiling --bin palaver
  python3 /work/wt/bench/benches/shapes.py target/profiling/palaver --only paragraph,table
"""
import argparse
import base64
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import floor  # noqa: E402  (the floor bench's server, clients and CPU measures)

GROWTH_TARGET = 4.5
RATIO_TARGET = 1.3
PER_DELTA = 8  # bytes a delta (a little more when a character would be cut)

# ---------------------------------------------------------------- the shapes
# Each generator yields the answer's text in pieces (lines, mostly) for ever; `text` takes as
# many as the size asks for and adds the shape's closing. All are deterministic.

WORDS = ("the a model answer of stream line text that with each word more some long short "
         "paragraph render terminal screen cost shape every delta frame budget wrap width "
         "column row cell table list item code block quickly slowly carefully again").split()


def prose_lines(rng, width):
    """Lines of prose of about `width` characters, no newline."""
    while True:
        words, n = [], 0
        while n < width:
            w = rng.choice(WORDS)
            if rng.random() < 0.08:
                w = f"**{w}**" if rng.random() < 0.5 else f"`{w}`"
            words.append(w)
            n += len(w) + 1
        line = " ".join(words)
        yield line[0].upper() + line[1:] + ("." if rng.random() < 0.3 else "")


def gen_paragraphs(rng):
    for i, line in enumerate(prose_lines(rng, 80)):
        yield line + ("\n\n" if i % 4 == 3 else "\n")


def gen_paragraph(rng):
    for line in prose_lines(rng, 70):
        yield line + "\n"


def gen_line(rng):
    while True:
        yield base64.b64encode(rng.randbytes(3 * 1024)).decode()


def gen_code(rng):
    yield "```rust\n"
    i = 0
    while True:
        for line in floor.CODE:
            yield line.format(i=i) + "\n"
        i += 1


CITIES = ["Lisbon", "Osaka", "Montréal", "Nairobi", "Reykjavík", "Valparaíso", "Tbilisi", "Hanoi"]
STATUS = ["shipped", "pending", "returned", "on hold", "cancelled"]


def gen_table(rng):
    yield "| id | customer | city | amount | status | note |\n"
    yield "|---:|---|---|---:|---|---|\n"
    i = 0
    notes = prose_lines(rng, 100)
    while True:
        i += 1
        name = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}"
        yield (f"| {i} | {name} | {rng.choice(CITIES)} | {rng.randint(1, 99999) / 100:.2f} | "
               f"{rng.choice(STATUS)} | {next(notes)} |\n")


def gen_list(rng):
    for i, line in enumerate(prose_lines(rng, 46)):
        yield f"- item {i}: {line}\n"


CJK = ("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后"
       "小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长"
       "知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间"
       "ひらがなとカタカナの文章はこのように続きますそしてまた新しい行が始まります")
CJK_PUNCT = "，。、；：！？「」"


def gen_cjk(rng):
    while True:
        n = rng.randint(150, 400)
        out = []
        for k in range(n):
            out.append(rng.choice(CJK_PUNCT) if k and rng.random() < 0.07 else rng.choice(CJK))
        yield "".join(out) + "。\n"


EMOJI = ["👨\u200d👩\u200d👧\u200d👦", "🇫🇷", "🇯🇵", "❤\ufe0f", "👍🏽", "🧑\u200d💻", "🏳\ufe0f\u200d🌈", "😀",
         "cafe\u0301", "re\u0301sume\u0301", "nai\u0308ve", "a\u0301\u0302\u0303"]


def gen_emoji(rng):
    while True:
        words, n = [], 0
        while n < 60:
            w = rng.choice(EMOJI) if rng.random() < 0.4 else rng.choice(WORDS)
            words.append(w)
            n += len(w) + 1
        yield " ".join(words) + "\n"


SHAPES = {
    "paragraphs": (gen_paragraphs, ""),
    "paragraph": (gen_paragraph, ""),
    "line": (gen_line, ""),
    "code": (gen_code, "```\n"),
    "table": (gen_table, ""),
    "list": (gen_list, ""),
    "cjk": (gen_cjk, ""),
    "emoji": (gen_emoji, ""),
}


def text(shape, deltas):
    """The whole answer of `shape` for about `deltas` deltas."""
    gen, closing = SHAPES[shape]
    want = deltas * PER_DELTA - len(closing)
    parts, n = [], 0
    for piece in gen(random.Random(41)):
        size = len(piece.encode())
        if n + size > want:
            if shape == "line":
                parts.append(piece[: want - n])
            break
        parts.append(piece)
        n += size
    return "".join(parts) + closing


def split(t):
    """`t` in deltas of PER_DELTA bytes, each cut moved on to the next character (a grapheme may
    be cut, as tokens cut them)."""
    raw = t.encode()
    cuts = []
    for off in range(PER_DELTA, len(raw), PER_DELTA):
        while off < len(raw) and raw[off] & 0xC0 == 0x80:
            off += 1
        if not cuts or off > cuts[-1]:
            cuts.append(off)
    bounds = [0, *cuts, len(raw)]
    return [raw[x:y].decode() for x, y in zip(bounds, bounds[1:]) if y > x]


def model(shape, deltas):
    return f"shape-{shape}-{deltas}"


# ---------------------------------------------------------------- the server


def serve(deltas):
    """The server process: streams the shape and size the model name asks for, built when first
    asked (the bench asks for one shape's two sizes in turn: two are kept)."""
    names = {model(s, n): (s, n) for s in SHAPES for n in (deltas, 4 * deltas)}
    built = {}

    def pick(name):
        if name not in built:
            if len(built) >= 2:
                built.pop(next(iter(built)))
            shape, n = names.get(name, ("paragraphs", deltas))
            built[name] = floor.sse(split(text(shape, n)))
        return built[name]

    floor.serve_bodies(dict.fromkeys(names), pick)


# ---------------------------------------------------------------- running and reporting


class Runs:
    def __init__(self, palaver, server, url, timeout):
        self.palaver, self.server, self.url, self.timeout = palaver, server, url, timeout
        self.homes = tempfile.mkdtemp(prefix="palaver-shapes-")
        self.count = 0

    def env(self):
        self.count += 1
        home = os.path.join(self.homes, str(self.count))
        os.makedirs(home)
        env = dict(os.environ, PALAVER_HOME=home, OPENAI_API_KEY="sk-bench", TERM="xterm-256color")
        env.pop("NO_COLOR", None)
        return env

    def headless(self, name):
        argv = [self.palaver, "--base-url", self.url, "-m", name, "-p", "go"]
        return floor.run_pipe(argv, self.env(), self.timeout)

    def screen(self, name, want):
        env = self.env()
        got = floor.run_screen(self.palaver, self.url, name, env, self.server, timeout=self.timeout)
        reply = saved_reply(self.palaver, env)
        if reply != want:
            sys.exit(f"{name}: the chat screen's history holds {len(reply or '')} of {len(want)} characters"
                     " of the reply, or not the same ones")
        return got


def saved_reply(palaver, env):
    """The reply the one conversation of a run's home holds, as `history export` gives it."""
    listed = subprocess.run([palaver, "history", "list", "--json"], env=env, capture_output=True, text=True)
    convs = [json.loads(l) for l in listed.stdout.splitlines() if l.strip()]
    if len(convs) != 1 or convs[0].get("messages") != 2:
        return None
    out = subprocess.run([palaver, "history", "export", convs[0]["id"], "--format", "json"], env=env,
                         capture_output=True, text=True).stdout
    msgs = json.loads(out or "{}").get("messages", [])
    return msgs[-1]["choices"][0]["content"] if msgs else None


def timed(f):
    """(CPU seconds, killed?) of one run."""
    try:
        return f(), False
    except floor.Timeout as t:
        return t.cpu, True


def median(samples):
    """The median CPU, and whether it is only a lower bound (half the runs or more killed)."""
    cpus = sorted(c for c, _ in samples)
    return statistics.median(cpus), sum(k for _, k in samples) * 2 >= len(samples)


def measure(runs, shape, deltas, rounds):
    sizes = {}
    wants = {}
    for n in (deltas, 4 * deltas):
        t = text(shape, n)
        wants[n] = t
        sizes[n] = {"deltas": len(split(t)), "bytes": len(t.encode())}
    samples = {(k, n): [] for k in ("headless", "screen") for n in (deltas, 4 * deltas)}
    for r in range(rounds):
        for n in (deltas, 4 * deltas):
            name = model(shape, n)
            samples[("headless", n)].append(timed(lambda: runs.headless(name)))
            samples[("screen", n)].append(timed(lambda: runs.screen(name, wants[n])))
        got = "  ".join(f"{k} {n}: {'>' if s[-1][1] else ''}{s[-1][0]:.2f}" for (k, n), s in samples.items())
        print(f"  {shape} round {r + 1}: {got}", flush=True)
    return {"sizes": sizes, "samples": samples}


def figures(shape, m, deltas, timeout):
    med = {key: median(s) for key, s in m["samples"].items()}
    one, four = deltas, 4 * deltas

    def ratio(a, b):
        """a / b, and what a killed run makes of it: "" exact, ">" at least, "<" at most, "?" unknown."""
        (x, ka), (y, kb) = med[a], med[b]
        return x / y if y else float("inf"), {(False, False): "", (True, False): ">", (False, True): "<"}.get((ka, kb), "?")

    out = {"shape": shape, "bytes": {str(n): m["sizes"][n]["bytes"] for n in (one, four)},
           "deltas": {str(n): m["sizes"][n]["deltas"] for n in (one, four)}}
    for k in ("headless", "screen"):
        for n in (one, four):
            cpu, low = med[(k, n)]
            out[f"{k} {n}"] = {"cpu": cpu, "killed": low, "runs": [c for c, _ in m["samples"][(k, n)]]}
    out["growth screen"], out["growth screen killed"] = ratio(("screen", four), ("screen", one))
    out["growth headless"], out["growth headless killed"] = ratio(("headless", four), ("headless", one))
    for n in (one, four):
        out[f"ratio {n}"], out[f"ratio {n} killed"] = ratio(("screen", n), ("headless", n))
    out["ok"] = all(met(out[k], out[f"{k} killed"], t) == "ok" for k, t in (
        ("growth screen", GROWTH_TARGET), ("growth headless", GROWTH_TARGET),
        (f"ratio {one}", RATIO_TARGET), (f"ratio {four}", RATIO_TARGET)))
    return out


def cell(f, n, timeout):
    cpu = f[n]
    return f"> {timeout:g} s" if cpu["killed"] else f"{cpu['cpu']:.3f}"


def met(value, bound, target):
    """"ok", "MISS", or "?" when a killed run leaves it open."""
    if value <= target and bound in ("", "<"):
        return "ok"
    if value > target and bound in ("", ">"):
        return "MISS"
    return "?"


def mark(value, bound, target):
    return f"{bound}{value:.2f}x {met(value, bound, target)}"


def report(all_figures, deltas, timeout):
    one, four = deltas, 4 * deltas
    print(f"\nmedian CPU seconds (user+sys); growth = {four} deltas / {one} (target <= {GROWTH_TARGET}x);"
          f" ratio = screen / headless (target <= {RATIO_TARGET}x)")
    head = (f"{'shape':11} {'MB 1x':>6} {'MB 4x':>6} | {'head 1x':>8} {'head 4x':>8} {'growth':>10} | "
            f"{'screen 1x':>9} {'screen 4x':>9} {'growth':>11} | {'ratio 1x':>10} {'ratio 4x':>11}")
    print(head)
    print("-" * len(head))
    for f in all_figures:
        print(f"{f['shape']:11} {f['bytes'][str(one)] / 1e6:6.2f} {f['bytes'][str(four)] / 1e6:6.2f} | "
              f"{cell(f, f'headless {one}', timeout):>8} {cell(f, f'headless {four}', timeout):>8} "
              f"{mark(f['growth headless'], f['growth headless killed'], GROWTH_TARGET):>10} | "
              f"{cell(f, f'screen {one}', timeout):>9} {cell(f, f'screen {four}', timeout):>9} "
              f"{mark(f['growth screen'], f['growth screen killed'], GROWTH_TARGET):>11} | "
              f"{mark(f[f'ratio {one}'], f[f'ratio {one} killed'], RATIO_TARGET):>10} "
              f"{mark(f[f'ratio {four}'], f[f'ratio {four} killed'], RATIO_TARGET):>11}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 4)[4],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("palaver", nargs="?", default="target/profiling/palaver",
                    help="the binary to measure (default: target/profiling/palaver)")
    ap.add_argument("--only", metavar="SHAPE[,SHAPE]",
                    help="these shapes only, of: " + ", ".join(SHAPES))
    ap.add_argument("--deltas", type=int, default=100_000, help="deltas of the small size (the large is 4x)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each client and size per shape (medians)")
    ap.add_argument("--timeout", type=float, default=180, metavar="S",
                    help="wall seconds after which a run is killed and shown as '> S s' (default 180)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a shape misses a target")
    ap.add_argument("--json", metavar="FILE", help="write the figures to FILE")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.deltas)
        return 0
    shapes = args.only.split(",") if args.only else list(SHAPES)
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        ap.error(f"unknown shape(s) {', '.join(unknown)}; the shapes are {', '.join(SHAPES)}")
    palaver = os.path.abspath(args.palaver)
    if not os.access(palaver, os.X_OK):
        ap.error(f"no binary at {palaver}")

    argv = [sys.executable, os.path.abspath(__file__), "--serve", "--deltas", str(args.deltas)]
    server = floor.Server(args.deltas, True, argv)
    runs = Runs(palaver, server, f"http://127.0.0.1:{server.port}/v1", args.timeout)
    print(f"{palaver}: {', '.join(shapes)} at {args.deltas} and {4 * args.deltas} deltas, {args.rounds} rounds, "
          f"timeout {args.timeout:.0f} s; load average {os.getloadavg()[0]:.2f}", flush=True)
    all_figures = []
    started = time.monotonic()
    try:
        for shape in shapes:
            m = measure(runs, shape, args.deltas, args.rounds)
            all_figures.append(figures(shape, m, args.deltas, args.timeout))
    finally:
        server.stop()
    report(all_figures, args.deltas, args.timeout)
    missed = [f["shape"] for f in all_figures if not f["ok"]]
    print(f"\n{len(all_figures) - len(missed)} of {len(all_figures)} shapes within the targets"
          + (f"; missed: {', '.join(missed)}" if missed else "")
          + f"  ({time.monotonic() - started:.0f} s, load average {os.getloadavg()[0]:.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"deltas": args.deltas, "rounds": args.rounds, "timeout": args.timeout,
                       "growth_target": GROWTH_TARGET, "ratio_target": RATIO_TARGET, "shapes": all_figures}, f,
                      indent=1)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
