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
    print(f"Command: `{command(d, name)}`\n")
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
    s0 = cells[0]["spec"]["sizes"]
    gaps = [b["gap_ms"] for b in cells[0]["bursty"]]
    print(f"Load (a request is a parallel loop of {s0['items']} indices, about 500 µs of serial work; latency µs p50 / p90 / p99; "
          "CPU% = process user+sys time over wall time, 100% = one core; idle CPU-s = CPU burnt in the second after a burst):\n")
    head = "| runtime / configuration | threads |" + "".join(f" bursty, {g:g} ms gaps | CPU% |" for g in gaps) + " throughput req/s | CPU% | idle CPU-s |"
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
        row += f" {i['cpu_s']:.4f} |" if i else " - |"
        print(row)
    print()


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "bench-out"
    info = os.path.join(d, "info.txt")
    if os.path.exists(info):
        print("```\n" + open(info).read().rstrip() + "\n```\n")
    bench = os.path.join(d, "bench.txt")
    if os.path.exists(bench):
        lines = [l for l in open(bench).read().splitlines() if not l.startswith("wrote ")]
        print("```\n" + "\n".join(lines) + "\n```\n")
    for p in sorted(glob.glob(os.path.join(d, "bind*.json"))):
        staging(d, os.path.basename(p)[:-5])
    for p in sorted(glob.glob(os.path.join(d, "bandwidth*.json"))):
        bandwidth(d, os.path.basename(p)[:-5])
    pool(d, "pool")


main()
