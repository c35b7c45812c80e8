#!/usr/bin/env python3
"""Summarises a pool event trace (src/pool/engine/trace.rs).

Record one with the cargo feature `trace` and LEANRT_POOL_TRACE=FILE, e.g.
  LEANRT_POOL_TRACE=/tmp/t.txt cargo run --release -p leanrt-cli \\
      --features leanrt/trace -- pool --threads 2 --scenario request ...
then: scripts/pool-trace.py /tmp/t.txt [--requests N] [--pool PID/ID]

Per pool (one per configuration and cell), per request (enable_spinning ..
disable_spinning, or the caller's loops between gaps when the pool gets no
hints): how long the request took, how long the caller waited at the loops'
end gates, how often a worker helped and how many blocks it ran, how long a
worker took to wake after enable_spinning or a publish, and how often the
worker ran on the caller's CPU, and how far apart the participants of a
loop ran out of blocks (first to last, in loops a worker helped), and how
fast each ran its blocks: microseconds per block of the caller and of the
workers, in a request's first loop and in the others (a worker that spun
through the gap and one that slept do not run the same blocks at the same
speed on every machine). Prints medians and p90s, and with
--requests N the first N requests event by event.

  scripts/pool-trace.py --self-test   checks the summary on a made-up trace
"""
import contextlib
import io
import sys
from collections import defaultdict

EV = {1: "enable", 2: "disable", 3: "publish", 4: "share_done", 5: "gate_done",
      6: "woke", 7: "spin_start", 8: "spin_end", 9: "park", 10: "enter", 11: "leave"}


def pct(v, q):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def requests_of(rows):
    """Splits the caller's events (who == 0) into requests: enable..disable,
    or without hints, runs of loops separated by more than 300 us."""
    out, cur = [], None
    hinted = any(r[2] == 1 for r in rows if r[1] == 0)
    last_t = None
    for r in rows:
        t, who, ev = r[0], r[1], r[2]
        if who != 0:
            if cur is not None:
                cur.append(r)
            continue
        if hinted:
            if ev == 1:
                cur = [r]
            elif ev == 2 and cur is not None:
                cur.append(r)
                out.append(cur)
                cur = None
            elif cur is not None:
                cur.append(r)
        else:
            if ev == 3 and (last_t is None or t - last_t > 300_000):
                if cur:
                    out.append(cur)
                cur = []
            if cur is not None:
                cur.append(r)
            if ev == 5:
                last_t = t
    if cur and not hinted:
        out.append(cur)
    return out, hinted


def analyse(pool, rows, show):
    reqs, hinted = requests_of(rows)
    if not reqs:
        return
    dur, waits, helped, loops, hblocks, cblocks = [], [], 0, 0, 0, 0
    wake_enable, wake_publish, enter_delay, same_cpu, worker_spin = [], [], [], 0, []
    # Per helped loop: when each participant ran out of blocks (the
    # caller's share_done, each worker's leave).
    spreads = []
    # Microseconds per block, per loop a worker helped: (first loop of its
    # request?, caller's, each worker's).
    speeds = []
    # A worker's spin counts for the request during which it ends (a spin
    # that starts on a timer before a request counts for that request).
    spin_t = {}
    for k, req in enumerate(reqs):
        callers = [r for r in req if r[1] == 0]
        t0, t1 = callers[0][0], callers[-1][0]
        dur.append((t1 - t0) / 1e3)
        wait = 0.0
        publish = share = None
        ends = []
        entered = False
        spun = 0.0
        first_woke = None
        # This loop's blocks: the caller's (us, blocks); each worker's
        # entry time, then its (us, blocks).
        mine, entries, theirs, nth = None, {}, [], 0
        for r in req:
            t, who, ev, cpu, arg = r
            if who == 0:
                if ev == 3:
                    publish, entered, loops = r, False, loops + 1
                    ends, mine, entries, theirs, nth = [], None, {}, [], nth + 1
                elif ev == 4:
                    share = r
                    cblocks += arg
                    ends.append(t)
                    if publish is not None and arg > 0:
                        mine = (t - publish[0]) / 1e3 / arg
                elif ev == 5:
                    if len(ends) > 1:
                        spreads.append((max(ends) - min(ends)) / 1e3)
                    if share is not None:
                        wait += (t - share[0]) / 1e3
                    if mine is not None and theirs:
                        speeds.append((nth == 1, mine, theirs))
            else:
                if ev == 6 and first_woke is None:
                    first_woke = t
                if ev == 10 and publish is not None and not entered:
                    entered = True
                    helped += 1
                    enter_delay.append((t - publish[0]) / 1e3)
                    if cpu == publish[3]:
                        same_cpu += 1
                if ev == 10:
                    entries[who] = t
                if ev == 11:
                    hblocks += arg
                    if publish is not None:
                        ends.append(t)
                    if who in entries and arg > 0:
                        theirs.append((t - entries.pop(who)) / 1e3 / arg)
                if ev == 7:
                    spin_t[who] = t
                if ev == 8 and who in spin_t:
                    spun += (t - spin_t.pop(who)) / 1e3
        worker_spin.append(spun)
        waits.append(wait)
        if hinted and first_woke is not None:
            wake_enable.append((first_woke - t0) / 1e3)
        if k < show:
            print(f"  request {k}:")
            for r in req:
                print(f"    +{(r[0] - t0) / 1e3:9.1f} us  {'caller' if r[1] == 0 else 'w%d' % (r[1] - 1):6s} "
                      f"cpu {r[3]:2d}  {EV.get(r[2], r[2]):10s} {r[4]}")
    n = len(reqs)
    print(f"pool {pool}: {n} requests ({'hints' if hinted else 'no hints'}), {loops} loops")
    print(f"  request us        p50 {pct(dur, .5):8.1f}  p90 {pct(dur, .9):8.1f}  p99 {pct(dur, .99):8.1f}")
    print(f"  gate wait us/req  p50 {pct(waits, .5):8.1f}  p90 {pct(waits, .9):8.1f}  max {max(waits):8.1f}")
    print(f"  worker spin us/req p50 {pct(worker_spin, .5):7.1f}  p90 {pct(worker_spin, .9):8.1f}")
    if wake_enable:
        print(f"  enable->woke us   p50 {pct(wake_enable, .5):8.1f}  p90 {pct(wake_enable, .9):8.1f}"
              f"  ({len(wake_enable)} of {n} requests woke a sleeper)")
    if enter_delay:
        print(f"  publish->enter us p50 {pct(enter_delay, .5):8.1f}  p90 {pct(enter_delay, .9):8.1f}")
    if spreads:
        print(f"  out of blocks, first to last us p50 {pct(spreads, .5):6.1f}  p90 {pct(spreads, .9):8.1f}"
              f"  (in {len(spreads)} loops)")
    if speeds:
        print("  " + block_speeds(speeds))
    print(f"  loops helped {helped}/{loops}; blocks caller {cblocks}, workers {hblocks}; "
          f"helper on the caller's CPU in {same_cpu} of {helped} loops helped")


def block_speeds(speeds):
    """The per-block speeds line: medians of the caller's and the workers'
    microseconds per block over the loops a worker helped, in a request's
    first loop and in the others, and workers / caller."""
    out = []
    for name, first in (("first loops", True), ("other loops", False)):
        mine = [m for f, m, _ in speeds if f == first]
        theirs = [w for f, _, ws in speeds if f == first for w in ws]
        if mine:
            c, w = pct(mine, .5), pct(theirs, .5)
            out.append(f"{name}: caller {c:.1f}, workers {w:.1f} ({w / c:.2f}x)")
    return "us per block      " + "; ".join(out)


def self_test():
    """A made-up pool: two requests of two loops, 2 ms apart; the caller
    runs 4 blocks in 40 us a loop; the worker 4 blocks in 60 us in a
    request's first loop and in 44 us in its second."""
    rows, t = [], 1_000_000
    for _ in range(2):
        for worker_us in (60, 44):
            rows += [(t, 0, 3, 0, 4), (t + 200, 1, 10, 1, 1),
                     (t + 40_000, 0, 4, 0, 4), (t + 200 + worker_us * 1000, 1, 11, 1, 4)]
            end = t + 200 + worker_us * 1000 + 100
            rows.append((end, 0, 5, 0, 4))
            t = end + 5_000
        t += 2_000_000
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        analyse("test", sorted(rows), 0)
    out = buf.getvalue()
    want = ["2 requests", "4 loops",
            "first loops: caller 10.0, workers 15.0 (1.50x); other loops: caller 10.0, workers 11.0 (1.10x)",
            "loops helped 4/4; blocks caller 16, workers 16"]
    missing = [w for w in want if w not in out]
    if missing:
        print(out)
        sys.exit(f"self-test failed: missing {missing}")
    print("self-test passed")


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    show, only = 0, None
    if "--requests" in args:
        i = args.index("--requests")
        show = int(args[i + 1])
        del args[i:i + 2]
    if "--pool" in args:
        i = args.index("--pool")
        only = args[i + 1]
        del args[i:i + 2]
    pools = defaultdict(list)
    for line in open(args[0]):
        p = line.split()
        if len(p) != 6:
            continue
        pool = p[0]
        t, who, ev, cpu, arg = map(int, p[1:])
        pools[pool].append((t, who, ev, cpu, arg))
    for pool in sorted(pools):
        if only is None or pool == only:
            analyse(pool, sorted(pools[pool]), show)


if __name__ == "__main__":
    main()
