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
loop ran out of blocks (first to last, in loops a worker helped). Prints
medians and p90s, and with
--requests N the first N requests event by event.
"""
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
        for r in req:
            t, who, ev, cpu, arg = r
            if who == 0:
                if ev == 3:
                    publish, entered, loops = r, False, loops + 1
                    ends = []
                elif ev == 4:
                    share = r
                    cblocks += arg
                    ends.append(t)
                elif ev == 5:
                    if len(ends) > 1:
                        spreads.append((max(ends) - min(ends)) / 1e3)
                    if share is not None:
                        wait += (t - share[0]) / 1e3
            else:
                if ev == 6 and first_woke is None:
                    first_woke = t
                if ev == 10 and publish is not None and not entered:
                    entered = True
                    helped += 1
                    enter_delay.append((t - publish[0]) / 1e3)
                    if cpu == publish[3]:
                        same_cpu += 1
                if ev == 11:
                    hblocks += arg
                    if publish is not None:
                        ends.append(t)
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
    print(f"  loops helped {helped}/{loops}; blocks caller {cblocks}, workers {hblocks}; "
          f"helper on the caller's CPU in {same_cpu} of {helped} loops helped")


def main():
    args = sys.argv[1:]
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
