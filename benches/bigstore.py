#!/usr/bin/env python3
"""Opening a big history (issue 31, item 3): a generator for a store of 10,000 conversations and
about 1,000,000 messages (one of them 10,000 messages long), and the figures of the chat screen
against it, in a 120x40 pseudo-terminal:

  first frame    `palaver` from exec until its first frame is written (its status bar's
                 "Ctrl+P"; ratatui skips blank cells, so a text with spaces is no marker)  (50 ms)
  resume         `palaver --resume ID` of the 10,000-message conversation, from exec until its
                 last message is on screen (150 ms), and its peak RSS once settled (150 MB)
  open           the same conversation opened from the list (Ctrl+L, Enter on the newest): from
                 the Enter until it is on screen (its "reopened" notice; 150 ms)
  scroll         PgUp many times, then Ctrl+Home to the first message and Ctrl+End back:
                 every frame's draw (PALAVER_FRAME_LOG) under 16 ms
  search         Ctrl+L, a query typed; from its last key until the hit is on screen (50 ms)
  send           a new prompt at the end of the long conversation: from the Enter until it is on
                 screen, and the work applied before that frame (a key's targets: 33 ms, 16 a frame)

usage: bigstore.py [PALAVER] [--home DIR] [--rounds N] [--only-big]

--only-big: a store of the long conversation alone (a few MB, built in seconds): the resume,
scroll and send figures only. floor.py --history uses such a store (see `only_big_store`). Each
round runs on a fresh copy of it, so every round sends after the same 10,000 messages and the
shared store in the temp directory is never written.

The store is written directly with SQLite (Python's sqlite3) into a schema palaver made itself,
each row a copy of a row palaver saved (so bodies are palaver's own JSON); it is built once into
the temp directory (a minute or two) and reused. A report: nothing is asserted.
"""
import argparse
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import floor  # noqa: E402
import latency  # noqa: E402

CONVERSATIONS = 10_000
PER_CONVERSATION = 100
BIG = 10_000
MARK_LAST = "zanzibar-last-words"
MARK_SEARCH = "quokkaesque"
MARK_PROMPT = "ocelot"


def words():
    syll = ["ka", "lo", "mi", "ru", "sen", "ta", "vo", "xi", "bre", "dun", "fal", "gor", "hep", "jin", "qua"]
    vocab = ["the", "rust", "async", "tokio", "error", "zebra", "database", "stream", "model"]
    vocab += [a + b + c for a in syll for b in syll for c in syll][: 6000 - len(vocab)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    rng = random.Random(31)

    def sentence(n):
        return " ".join(rng.choices(vocab, weights, k=n))

    return sentence


def template(palaver, home):
    """One real conversation saved by palaver itself (headless, against a local stream)."""
    server = floor.Server(20, True)
    env = dict(os.environ, PALAVER_HOME=home, OPENAI_API_KEY="sk-bench")
    url = f"http://127.0.0.1:{server.port}/v1"
    subprocess.run([palaver, "--base-url", url, "-m", "bench-plain", "-p", "hello"], env=env,
                   stdout=subprocess.DEVNULL, check=True)
    server.stop()


def build(palaver, home, only_big=False, big=BIG):
    """Writes the store; `only_big`: the long conversation (`big` messages) alone, same id."""
    db_path = os.path.join(home, "palaver.sqlite3")
    started = time.monotonic()
    print(f"building {db_path} (once)…", file=sys.stderr)
    template(palaver, home)
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA synchronous = OFF")
    cols = {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in ("conversations", "branches", "messages")}
    conv_t = dict(zip(cols["conversations"], db.execute("SELECT * FROM conversations").fetchone()))
    branch_t = dict(zip(cols["branches"], db.execute("SELECT * FROM branches").fetchone()))
    msg_t = {}
    for row in db.execute("SELECT * FROM messages ORDER BY position"):
        r = dict(zip(cols["messages"], row))
        msg_t[r["role"]] = r
    db.execute("DELETE FROM messages")
    db.execute("DELETE FROM branches")
    db.execute("DELETE FROM conversations")

    def insert(table, row):
        keys = list(row)
        db.execute(f"INSERT INTO {table} ({','.join(keys)}) VALUES ({','.join('?' * len(keys))})",
                   [row[k] for k in keys])

    sentence = words()
    base = 1_700_000_000_000
    mid = (CONVERSATIONS // 2)
    for i in range(CONVERSATIONS - 1 if only_big else 0, CONVERSATIONS):
        cid = f"20231114-{i:06d}-{i & 0xffff:04x}"
        t = base + i * 600_000
        title = "the long one" if i == CONVERSATIONS - 1 else ("a rare word" if i == mid else sentence(6))
        insert("conversations", dict(conv_t, id=cid, title=title, created_at=t, updated_at=t + 599_000))
        insert("branches", dict(branch_t, conversation_id=cid, created_at=t))
        n = big if i == CONVERSATIONS - 1 else PER_CONVERSATION
        rows = []
        for p in range(n):
            role = "user" if p % 2 == 0 else "assistant"
            text = sentence(12) if role == "user" else sentence(40)
            if i == CONVERSATIONS - 1 and p == n - 1:
                text += " " + MARK_LAST
            if i == mid and p == 51:
                text += " " + MARK_SEARCH
            r = dict(msg_t[role], conversation_id=cid, position=p, content=text)
            r.pop("id", None)
            for k in ("created_at", "updated_at"):
                if k in r:
                    r[k] = t + p * 5000
            rows.append(r)
        keys = list(rows[0])
        db.executemany(f"INSERT INTO messages ({','.join(keys)}) VALUES ({','.join('?' * len(keys))})",
                       [[r[k] for k in keys] for r in rows])
        if i % 1000 == 999:
            db.commit()
            print(f"  {i + 1} conversations", file=sys.stderr)
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    open(os.path.join(home, "complete"), "w").write("ok")
    print(f"built in {time.monotonic() - started:.0f} s", file=sys.stderr)


BIG_ID = f"20231114-{CONVERSATIONS - 1:06d}-{(CONVERSATIONS - 1) & 0xffff:04x}"


def only_big_store(palaver, big=BIG):
    """A store (built once into the temp directory) holding only the long conversation, `big`
    messages, id BIG_ID; returns its directory. Copy it before writing to it."""
    home = os.path.join(tempfile.gettempdir(), f"palaver-bigstore-only-{big}")
    ensure(palaver, home, True, big)
    return home


def ensure(palaver, home, only_big=False, big=BIG):
    os.makedirs(home, exist_ok=True)
    if not os.path.exists(os.path.join(home, "complete")):
        for f in os.listdir(home):
            os.unlink(os.path.join(home, f))
        build(palaver, home, only_big, big)


def env_for(home):
    env = dict(os.environ, PALAVER_HOME=home, OPENAI_API_KEY="sk-bench", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    return env


def rss_peak_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def until_shown(s, data, text):
    """Seconds from writing `data` to the screen until `text` is in palaver's output (None: never)."""
    with s.lock:
        s.ev.clear()
        s.seen_at.clear()
        s.want = (text, s.ev, s.seen_at)
    start = time.monotonic()
    s.write(data)
    return s.seen_at[0] - start if s.ev.wait(10) and s.seen_at else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("palaver", nargs="?", default="target/release/palaver")
    ap.add_argument("--home", default=os.path.join(tempfile.gettempdir(),
                                                   f"palaver-bigstore-{CONVERSATIONS}x{PER_CONVERSATION}+{BIG}"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only-big", action="store_true", help="a store of the long conversation alone")
    args = ap.parse_args()
    palaver = os.path.abspath(args.palaver)
    if args.only_big:
        args.home = only_big_store(palaver)
    else:
        ensure(palaver, args.home)
    env = env_for(args.home)
    big = BIG_ID
    url = "http://127.0.0.1:9/v1"  # never asked: nothing is sent
    base = [palaver, "--base-url", url, "-m", "bench"]

    first, resume, rss, search, scroll, landing, opened_from_list = [], [], [], [], [], [], []
    send, send_work = [], []
    built = args.home
    for _ in range(args.rounds):
        if args.only_big:
            # A few MB: copied, so the prompts sent below never reach the next round's store.
            args.home = tempfile.mkdtemp(prefix="palaver-bigstore-round-")
            shutil.copytree(built, args.home, dirs_exist_ok=True)
            env = env_for(args.home)
        if not args.only_big:
            s = latency.Screen(base, env, watch="Ctrl+P")
            first.append(s.shown())
            s.settle(quiet=0.3)
            # Ctrl+L, then the query; the hit's conversation title is the answer.
            s.write(b"\x0c")
            s.settle(quiet=0.3)
            # The query in one write (as a paste of keys would come): its last key is that write.
            search.append(until_shown(s, MARK_SEARCH.encode(), b"a rare word"))
            s.stop()

        # The long conversation is the newest: the list's first row.
        s = latency.Screen(base, env)
        s.settle(quiet=0.3)
        s.write(b"\x0c")
        s.settle(quiet=0.3)
        opened_from_list.append(until_shown(s, b"\r", b"reopened"))
        s.stop()

        s = latency.Screen([*base, "--resume", big], env, watch=MARK_LAST)
        resume.append(s.shown())
        s.settle(quiet=0.5)
        rss.append(rss_peak_mb(s.pid))
        # The screen opens on the conversation's tail; the rest lands a moment later, applied
        # between two frames: the longest such work is what a key could have waited behind.
        opened = s.frames()
        landing.append(max((f[2] for f in opened), default=0.0))
        before = len(opened)
        for _ in range(300):
            s.write(b"\x1b[5~")
            time.sleep(0.004)
        s.write(b"\x1b[1;5H")
        time.sleep(0.3)
        s.write(b"\x1b[1;5F")
        time.sleep(0.3)
        s.settle(quiet=0.3)
        scroll.extend(f[1] for f in s.frames()[before:])
        # A new prompt at the end: its request carries all 10,000 messages. From the Enter until
        # the prompt is on screen as the newest message, and the work applied before that frame.
        s.write(MARK_PROMPT.encode())
        s.settle(quiet=0.3)
        before = len(s.frames())
        send.append(until_shown(s, b"\r", MARK_PROMPT.encode()))
        s.settle(quiet=0.3)
        send_work.append(max((f[2] for f in s.frames()[before:]), default=0.0))
        s.stop()
        if args.only_big:
            shutil.rmtree(args.home, ignore_errors=True)

    def ms(xs):
        got = [x * 1000 for x in xs if x is not None]
        missing = len(xs) - len(got)
        if not got:
            return "never shown"
        tail = f"  ({missing} never shown)" if missing else ""
        return f"median {statistics.median(got):7.1f}  worst {max(got):7.1f}{tail}"

    load = os.getloadavg()
    what = (f"one conversation of {BIG} messages" if args.only_big
            else f"{CONVERSATIONS} conversations, ~{CONVERSATIONS * PER_CONVERSATION + BIG} messages")
    print(f"big store: {what}; {args.rounds} rounds; load average {load[0]:.1f}")
    if first:
        print(f"  first frame of palaver          {ms(first)} ms   (target 50)")
    print(f"  --resume of 10,000 messages     {ms(resume)} ms   (target 150)")
    print(f"  opened from the list (Enter)    {ms(opened_from_list)} ms   (target 150)")
    print(f"  the earlier messages landing    median {statistics.median(landing):7.1f}  worst {max(landing):7.1f} ms "
          "of work between two frames   (target 16)")
    print(f"  its peak RSS                    median {statistics.median(rss):7.1f}  worst {max(rss):7.1f} MB   (target 150)")
    print(f"  a new prompt after them (Enter) {ms(send)} ms to screen, the UI task's work before it "
          f"median {statistics.median(send_work):.1f} worst {max(send_work):.1f} ms   (keys: 33 / 50)")
    if search:
        print(f"  Ctrl+L search, last key to hit  {ms(search)} ms   (target 50)")
    sc = sorted(scroll)
    if sc:
        print(f"  scrolling (PgUp x300, Ctrl+Home, Ctrl+End): {len(sc)} frames, draw p50 {latency.pct(sc, 50):.2f} "
              f"p99 {latency.pct(sc, 99):.2f} worst {sc[-1]:.2f} ms   (target 16)")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(main())
