#!/usr/bin/env python3
"""Turns the outputs of cli/run-benchmarks.sh into the Markdown tables of
docs/BENCHMARKS.md:  python3 cli/bench-md.py OUT_DIR > section.md"""
import glob
import json
import os
import sys


def ns(v):
    if v is None:
        return "-"
    if v >= 1e9:
        return f"{v / 1e9:.2f} s"
    if v >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if v >= 1e3:
        return f"{v / 1e3:.1f} µs"
    return f"{v:.0f} ns"


def mb(v):
    if v >= 1e9:
        return f"{v / 1e9:.2f} GB"
    return f"{v / 1e6:.2f} MB" if v >= 1e5 else f"{v / 1e3:.1f} kB" if v >= 1e3 else f"{v:.0f} B"


def times(x):
    return f"{x:.1f}×" if x < 10 else f"{x:.0f}×"


def f1(v):
    return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def command(d, name):
    p = os.path.join(d, name + ".txt")
    if os.path.exists(p):
        first = open(p).readline().strip()
        return first[2:] if first.startswith("$ ") else first
    return None


def staging(d, name):
    p = os.path.join(d, name + ".json")
    if not os.path.exists(p):
        return
    doc = json.load(open(p))
    pinned = any(c.get("pinned_mirror") for c in doc["staging"])
    print(f"Command: `{command(d, name)}`" + (" (makers with LRT_MAKER_PIN_MIRROR)" if pinned else "") + "\n")
    print("| backend | W | N | policy | runs | total | zero | claim | relocate | copy | bytes | copies | faults/run | RSS before → after | FULL+fresh ÷ policy |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for c in doc["staging"]:
        m = c["median"]
        r = c.get("ratio_to_full_fresh")
        print(f"| {c['backend']} | {c['window']} | {c['tasks']} | {c['policy']} | {c['runs']} | {ns(m['total_ns'])} | {ns(m['zero_ns'])} | "
              f"{ns(m['claim_ns'])} | {ns(m['relocate_ns'])} | {ns(m['copy_ns'])} | {mb(m['bytes'])} | {m['copies']:.0f} | "
              f"{c['faults_per_run']:.1f} | {mb(c['rss_before'])} → {mb(c['rss_after'])} | {times(1 / r) if r else '-'} |")
    print()


def bandwidth(d, name):
    p = os.path.join(d, name + ".json")
    if not os.path.exists(p):
        return
    doc = json.load(open(p))
    print(f"Command: `{command(d, name)}`\n")
    print("| backend | memory | size | median time | GB/s |")
    print("|---|---|---:|---:|---:|")
    for c in doc["bandwidth"]:
        gb = f"{c['gb_per_s']:.2f}" if c.get("gb_per_s") else (c.get("note") or "-")
        print(f"| {c['backend']} | {c['memory']} | {mb(c['bytes'])} | {ns(c.get('median_ns'))} | {gb} |")
    print()


def pool(d, name):
    p = os.path.join(d, name + ".json")
    if not os.path.exists(p):
        return
    doc = json.load(open(p))
    cells = doc["pool"]
    print(f"Command: `{command(d, name)}`\n")
    item = next((c.get("fork_join_small_item_us") for c in cells if c.get("fork_join_small_item_us")), 0)
    print("Overheads (µs, p50 / p99; *forked* = share of regions in which a thread other than the caller ran an index):\n")
    print(f"| runtime / configuration | threads | fork-join, tiny | forked | fork-join, {item:.0f} µs indices (overhead) | forked | wake after 0.1 / 1 / 50 ms idle (p50) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for c in cells:
        fj = c.get("fork_join_us")
        sm = c.get("fork_join_small_overhead_us")
        wake = " / ".join(f1(w["latency_us"]["p50"]) for w in c["wake"]) or "-"
        print(f"| {c['label']} | {c['spec']['threads']} | {f1(fj['p50']) + ' / ' + f1(fj['p99']) if fj else '-'} | "
              f"{'%.0f%%' % c['fork_join_helped_pct'] if c.get('fork_join_helped_pct') is not None else '-'} | "
              f"{f1(sm['p50']) + ' / ' + f1(sm['p99']) if sm else '-'} | "
              f"{'%.0f%%' % c['fork_join_small_helped_pct'] if c.get('fork_join_small_helped_pct') is not None else '-'} | {wake} |")
    print()
    wake_team(cells)
    s0 = cells[0]["spec"]["sizes"]
    gaps = [b["gap_ms"] for b in cells[0]["bursty"]]
    if not gaps:
        request(cells)
        sections(cells)
        return
    print(f"Load (a request is a parallel loop of {s0['items']} indices, about 500 µs of serial work; latency µs p50 / p90 / p99; "
          "CPU% = process user+sys time over wall time, 100% = one core; idle CPU ms = CPU time burnt in the second after a burst):\n")
    head = "| runtime / configuration | threads |" + "".join(f" bursty, {g:g} ms gaps | CPU% |" for g in gaps) + " throughput req/s | CPU% | idle CPU ms |"
    print(head)
    print("|---|---:|" + "---:|---:|" * len(gaps) + "---:|---:|---:|")
    for c in cells:
        row = f"| {c['label']} | {c['spec']['threads']} |"
        for g in gaps:
            b = next((b for b in c["bursty"] if b["gap_ms"] == g), None)
            row += f" {f1(b['latency_us']['p50'])} / {f1(b['latency_us']['p90'])} / {f1(b['latency_us']['p99'])} | {b['cpu_pct']:.0f} |" if b else " - | - |"
        t = c.get("throughput")
        row += f" {t['requests_per_s']:.0f} | {t['cpu_pct']:.0f} |" if t else " - | - |"
        i = c.get("idle_after_burst")
        row += f" {i['cpu_s'] * 1e3:.2f} |" if i else " - |"
        print(row)
    print()
    request(cells)
    sections(cells)


def sections(cells):
    with_sec = [c for c in cells if c.get("section") or c.get("section_note")]
    if not with_sec:
        return
    ks = next(([x["loops"] for x in c["section"]] for c in with_sec if c.get("section")), [])
    item = with_sec[0]["spec"]["sizes"]["section_item_us"]
    print(f"Parallel sections (µs per loop, p50, loops of one {item:g} µs index per thread: k separate loops / "
          "k loops inside one section; ratio = separate / in section):\n")
    print("| runtime / configuration | threads |" + "".join(f" k = {k} | ratio |" for k in ks) + " note |")
    print("|---|---:|" + "---:|---:|" * len(ks) + "---|")
    for c in with_sec:
        row = f"| {c['label']} | {c['spec']['threads']} |"
        for k in ks:
            x = next((x for x in c.get("section", []) if x["loops"] == k), None)
            if x:
                sep, ins = x["separate_us"]["p50"], x["in_section_us"]["p50"]
                row += f" {f1(sep)} / {f1(ins)} | {sep / ins if ins > 0 else 0:.2f} |"
            else:
                row += " - | - |"
        print(row + f" {c.get('section_note') or ''} |")
    print()


def wake_team(cells):
    if not any(w.get("team_us", {}).get("n") for c in cells for w in c["wake"]):
        return
    print("Waking the team (µs p50 after 0.1 / 1 / 50 ms idle: until the first helper runs, until the whole team runs; "
          "missed = probes without the whole team within 50 ms):\n")
    print("| runtime / configuration | threads | first helper | whole team | missed |")
    print("|---|---:|---:|---:|---:|")
    for c in cells:
        first = " / ".join(f1(w["first_helper_us"]["p50"]) for w in c["wake"]) or "-"
        team = " / ".join(f1(w["team_us"]["p50"]) for w in c["wake"]) or "-"
        missed = sum(w.get("team_missed", 0) for w in c["wake"])
        print(f"| {c['label']} | {c['spec']['threads']} | {first} | {team} | {missed} |")
    print()


def gap_label(g):
    return f"exp {g['mean_ms']:g} ms" if g["exponential"] else f"{g['mean_ms']:g} ms"


def request(cells):
    with_req = [c for c in cells if c.get("request")]
    if not with_req:
        return
    c0 = with_req[0]
    r = c0["spec"]["sizes"]["run"]
    over = ", oversubscribed (one busy thread per logical core)" if c0["spec"].get("oversubscribe") else ""
    print(f"Requests{over}: a run is {r['preamble_us']:g} µs of serial work, then {r['rounds']} parallel rounds of "
          f"{r['round_us']:g} µs of serial work each ({r['round_items']} indices) with {r['between_us']:g} µs of serial work "
          "between them; *hints* = the run is bracketed by enable/disable spinning (session.force_spinning_stop); "
          "latency µs p50 / p90 / p99; run% / gap% = process CPU over wall time inside the runs / between them; "
          "serial = the same run on the caller alone (p50):\n")
    gaps = [q["gap"] for q in c0["request"]]
    print("| runtime / configuration | threads | hints |" + "".join(f" gap {gap_label(g)} | run% | gap% |" for g in gaps) + " serial |")
    print("|---|---:|---|" + "---:|---:|---:|" * len(gaps) + "---:|")
    for c in with_req:
        hints = "yes" if c["request"][0]["hints"] else "no"
        row = f"| {c['label']} | {c['spec']['threads']} | {hints} |"
        for g in gaps:
            q = next((q for q in c["request"] if q["gap"] == g), None)
            row += (f" {f1(q['latency_us']['p50'])} / {f1(q['latency_us']['p90'])} / {f1(q['latency_us']['p99'])} |"
                    f" {q['run_cpu_pct']:.0f} | {q['gap_cpu_pct']:.1f} |") if q else " - | - | - |"
        s = c.get("request_serial_us")
        row += f" {f1(s['p50'])} |" if s else " - |"
        print(row)
    print()


def staging_targets(d, name):
    p = os.path.join(d, name + ".json")
    if not os.path.exists(p):
        return
    cells = json.load(open(p))["staging"]
    if any(c.get("pinned_mirror") for c in cells):
        return  # the targets are about the default (unpinned) mirror
    get = lambda w, n, pol: next((c for c in cells if c["window"] == w and c["tasks"] == n and c["policy"] == pol), None)
    rows = []
    base = get(16384, 64, "full-fresh")
    for pol in ("bounded", "compact"):
        c = get(16384, 64, pol)
        if base and c:
            x = base["median"]["total_ns"] / c["median"]["total_ns"]
            rows.append((f"{pol} at W=16384, N=64: ≥ 50× cheaper than FULL+fresh", times(x), x >= 50))
        a, b = get(16384, 64, pol), get(131072, 64, pol)
        if a and b:
            lo, hi = sorted([a["median"]["total_ns"], b["median"]["total_ns"]])
            rows.append((f"{pol} at N=64: W=16384 and W=131072 within 10%",
                         f"{ns(a['median']['total_ns'])} vs {ns(b['median']['total_ns'])} ({(hi / lo - 1) * 100:.0f}%)", hi / lo <= 1.10))
    for pol in ("full", "bounded", "compact"):
        fs = [c for c in cells if c["policy"] == pol]
        if fs:
            worst = max(c["faults_per_run"] for c in fs)
            rows.append((f"{pol}: no minor page faults per warm run (all cells)", f"max {worst:.2f}/run", worst == 0))
    for pol in ("bounded", "compact"):
        c = get(131072, 64, pol)
        if c:
            grow = (c["rss_after"] - c["rss_before"]) / 1e6
            rows.append((f"{pol}: RSS of a W=131072 maker after {c['runs']} + {c['warmup_runs']} runs of N=64 within 4 MB of before",
                         f"{mb(c['rss_before'])} → {mb(c['rss_after'])} (+{grow:.2f} MB)", grow <= 4 and c["runs"] >= 100))
    if rows:
        print(f"Issue 3 targets, from `{command(d, name)}`:\n")
        print("| target | measured | met |")
        print("|---|---|---|")
        for t, m, ok in rows:
            print(f"| {t} | {m} | {'yes' if ok else '**no**'} |")
        print()


def pool_targets(d, name):
    p = os.path.join(d, name + ".json")
    if not os.path.exists(p):
        return
    cells = json.load(open(p))["pool"]
    rows = []
    for t in sorted({c["spec"]["threads"] for c in cells}):
        if t < 2:
            continue
        get = lambda label: next((c for c in cells if c["spec"]["threads"] == t and c["label"] == label), None)
        dflt, b8 = get("leanrt default"), get("leanrt spin_1000_backoff_8")
        if dflt and b8 and dflt.get("idle_after_burst") and b8.get("idle_after_burst"):
            a, b = dflt["idle_after_burst"]["cpu_s"], b8["idle_after_burst"]["cpu_s"]
            rows.append((f"{t} threads: spin_1000_backoff_8 burns < 5% of default's CPU in the second after a burst",
                         f"{b * 1e3:.2f} vs {a * 1e3:.2f} ms of CPU ({100 * b / a:.1f}%)" if a > 0 else f"{b * 1e3:.2f} vs {a * 1e3:.2f} ms of CPU", a > 0 and b < 0.05 * a))
        if dflt and b8:
            for bd in dflt["bursty"]:
                bb = next((x for x in b8["bursty"] if x["gap_ms"] == bd["gap_ms"]), None)
                if bb:
                    r = bb["latency_us"]["p50"] / bd["latency_us"]["p50"]
                    rows.append((f"{t} threads: spin_1000_backoff_8 bursty latency ({bd['gap_ms']:g} ms gaps) within 10% of default (p50)",
                                 f"{f1(bb['latency_us']['p50'])} vs {f1(bd['latency_us']['p50'])} µs ({r:.2f}×)", r <= 1.10))
        for key, what in (("fork_join_us", "tiny"), ("fork_join_small_overhead_us", "small-index overhead")):
            mine = [(c[key]["p50"], c["label"]) for c in cells if c["spec"]["threads"] == t and c["label"].startswith("leanrt") and c.get(key)]
            peers = [(c[key]["p50"], c["label"]) for c in cells if c["spec"]["threads"] == t and not c["label"].startswith("leanrt") and c.get(key)]
            if mine and peers:
                for v, label in sorted(mine):
                    if label in ("leanrt default", "leanrt spin_1000_backoff_8"):
                        pv, pl = min(peers)
                        ok = v <= 1.2 * pv
                        rows.append((f"{t} threads: fork-join ({what}) of {label} ≤ 1.2× best peer (p50)",
                                     f"{f1(v)} vs {f1(pv)} µs ({pl})", ok))
    if rows:
        print(f"Issue 4 targets, from `{command(d, name)}`:\n")
        print("| target | measured | met |")
        print("|---|---|---|")
        for t, m, ok in rows:
            print(f"| {t} | {m} | {'yes' if ok else '**no**'} |")
        print()


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "target/bench-out"
    info = os.path.join(d, "info.txt")
    if os.path.exists(info):
        print("```\n" + open(info).read().rstrip() + "\n```\n")
    bench = os.path.join(d, "bench.txt")
    if os.path.exists(bench):
        lines = [l for l in open(bench).read().splitlines() if not l.startswith("wrote ")]
        print("```\n" + "\n".join(lines) + "\n```\n")
    for p in sorted(glob.glob(os.path.join(d, "bind*.json"))):
        staging(d, os.path.basename(p)[:-5])
        staging_targets(d, os.path.basename(p)[:-5])
    for p in sorted(glob.glob(os.path.join(d, "bandwidth*.json"))):
        bandwidth(d, os.path.basename(p)[:-5])
    pool(d, "pool")
    pool_targets(d, "pool")
    for p in sorted(glob.glob(os.path.join(d, "pool-*.json"))):
        pool(d, os.path.basename(p)[:-5])


main()
