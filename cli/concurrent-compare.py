#!/usr/bin/env python3
"""Tables of the concurrent scenario for docs/BENCHMARKS.md from the JSON of
several runs of `leanrt pool --scenario concurrent --peers ort --json FILE`:
per caller count K, runtime and arrangement, the medians over the runs of
throughput, its ratio to the baseline (one thread per caller) *within each
run*, p50/p99 latency and total CPU per run; then issue 31's first target
per K and gap: leanrt's throughput against the baseline and against the
best ORT arrangement, and its p99 against that one's, read two ways: the
ORT row with the most throughput in each run (a maximum over 8 rows per
run, which noise alone lifts above any one of them), and the one ORT
arrangement (version and arrangement) with the highest median throughput
over the runs, compared run by run.

  python3 cli/concurrent-compare.py OUT/spin-*.json
"""
import json
import statistics
import sys

ARR = {"Serial": "no pool", "Shared": "shared", "PerCaller": "per caller",
       "Global": "global pools", "OneThread": "1 thread each"}


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def gap_name(g):
    return "back to back" if g == 0 else f"gap {g:g} ms"


def rows_of(path):
    """{(threads, K, label, arrangement): {gap: figures}} of one run."""
    cells = json.load(open(path))["pool"]
    out = {}
    for c in cells:
        conc = c["spec"].get("concurrent")
        if not conc:
            continue
        a = conc["arrangement"]
        label = "one thread per caller" if a == "Serial" else c["label"]
        key = (c["spec"]["threads"], conc["callers"], label, a)
        out[key] = {
            q["gap_ms"]: {
                "rps": q["runs_per_s"],
                "p50": q["latency_us"]["p50"],
                "p99": q["latency_us"]["p99"],
                "cpu": 1e3 * q["cpu_s"] / max(q["runs"], 1),
            }
            for q in c["concurrent"]
        }
    # Ratios within the run.
    for (t, k, label, a), gaps in out.items():
        base = next(v for (t2, k2, _, a2), v in out.items() if (t2, k2, a2) == (t, k, "Serial"))
        for g, f in gaps.items():
            f["xbase"] = f["rps"] / base[g]["rps"]
            if not label.startswith("leanrt"):
                continue
            ort = [(v[g], l2, a2) for (t2, k2, l2, a2), v in out.items()
                   if (t2, k2) == (t, k) and l2.startswith("ort ") and g in v]
            if ort:
                best, l2, a2 = max(ort, key=lambda x: x[0]["rps"])
                f["xort"] = f["rps"] / best["rps"]
                f["p99ort"] = f["p99"] / best["p99"]
                f["best"] = f"{l2} {ARR[a2]}"
    return out


def main(paths):
    runs = [rows_of(p) for p in paths]
    keys = list(runs[0].keys())
    gaps = sorted(next(iter(runs[0].values())).keys())
    work = json.load(open(paths[0]))["pool"][0]["spec"]["sizes"].get("work", "spin")
    print(f"concurrent callers, {work} work: medians of {len(runs)} runs "
          f"({', '.join(paths)})\n")
    head = "| K | runtime | arrangement | thr |"
    sep = "|---|---|---|---|"
    for g in gaps:
        head += f" {gap_name(g)}: runs/s | ×base | p50 µs | p99 µs | CPU ms/run |"
        sep += "---:|---:|---:|---:|---:|"
    print(head)
    print(sep)
    for key in keys:
        t, k, label, a = key
        thr = 1 if a in ("Serial", "OneThread") else t
        line = f"| {k} | {label} | {ARR[a]} | {thr} |"
        for g in gaps:
            fs = [r[key][g] for r in runs if key in r and g in r[key]]
            line += (f" {med([f['rps'] for f in fs]):.0f} | {med([f['xbase'] for f in fs]):.2f}× |"
                     f" {med([f['p50'] for f in fs]):.0f} | {med([f['p99'] for f in fs]):.0f} |"
                     f" {med([f['cpu'] for f in fs]):.2f} |")
        print(line)
    print("\ntarget: leanrt default throughput ≥ 1.0× baseline and ≥ 1.0× best ORT, "
          "p99 ≤ 1.1× best ORT's (medians of the per-run ratios)\n")

    def best_row_per_run(key, g):
        fs = [r[key][g] for r in runs if key in r and g in r[key]]
        return ([(f["xbase"], f["xort"], f["p99ort"]) for f in fs if "xort" in f],
                fs[0].get("best", "-"))

    def best_arrangement(key, g):
        t, k = key[:2]
        peers = [o for o in keys if o[:2] == (t, k) and o[2].startswith("ort ")]
        if not peers:
            return [], "-"
        best = max(peers, key=lambda o: med([r[o][g]["rps"] for r in runs
                                             if o in r and g in r[o]]))
        pairs = [(r[key][g], r[best][g]) for r in runs
                 if key in r and best in r and g in r[key] and g in r[best]]
        return ([(f["xbase"], f["rps"] / o["rps"], f["p99"] / o["p99"]) for f, o in pairs],
                f"{best[2]} {ARR[best[3]]}")

    target_table(keys, gaps, best_row_per_run,
                 "| K | leanrt | gap | ×baseline | ×best ORT | p99 ÷ best ORT's | best ORT (run 1) | met |")
    print("\nthe same target against one ORT arrangement: per K and gap the ORT row "
          "(version, arrangement) with the highest median throughput over the runs, "
          "the ratios run by run, then their medians\n")
    target_table(keys, gaps, best_arrangement,
                 "| K | leanrt | gap | ×baseline | ×that ORT | p99 ÷ its | ORT arrangement | met |")


def target_table(keys, gaps, versus, head):
    """One row per leanrt cell and gap: `versus(key, gap)` gives the runs'
    (×baseline, ×ORT, p99 ratio) and the ORT row's name."""
    print(head)
    print("|---|---|---|---:|---:|---:|---|---|")
    for key in keys:
        t, k, label, a = key
        if not label.startswith("leanrt"):
            continue
        for g in gaps:
            ratios, name = versus(key, g)
            if not ratios:
                continue
            xb, xo, p99 = (med([r[i] for r in ratios]) for i in range(3))
            met = xb >= 1.0 and xo >= 1.0 and p99 <= 1.1
            print(f"| {k} | {label} {ARR[a]} | {gap_name(g)} | {xb:.2f}× | {xo:.2f}× | {p99:.2f}× |"
                  f" {name} | {'met' if met else 'not met'} |")

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
