#!/usr/bin/env python3
"""Tables of the concurrent scenario for docs/BENCHMARKS.md from the JSON of
several runs of `leanrt pool --scenario concurrent --peers ort --json FILE`:
per caller count K, runtime and arrangement, the medians over the runs of
throughput, its ratio to the baseline (one thread per caller) *within each
run*, p50/p99 latency and total CPU per run; then issue 31's first target
per K and gap: leanrt's throughput against the baseline and against the
best ORT arrangement, and its p99 against that one's, read three ways: the
ORT row with the most throughput in each run (a maximum over 8 rows per
run, which noise alone lifts above any one of them); the one ORT
arrangement (version and arrangement) with the highest median throughput
over the runs, compared run by run (the runs that chose it are the runs it
is compared in, so it still carries some of that lift); and, with two runs
or more, leave-one-out: each run is compared with the arrangement that had
the highest median throughput over the *other* runs, so that no run's noise
both chooses the arrangement and is compared with it.

  python3 cli/concurrent-compare.py OUT/spin-*.json
  python3 cli/concurrent-compare.py --self-test   (the readings on made-up runs)
"""
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile

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
    # Throughput against the baseline's within the run.
    for (t, k, label, a), gaps in out.items():
        base = next(v for (t2, k2, _, a2), v in out.items() if (t2, k2, a2) == (t, k, "Serial"))
        for g, f in gaps.items():
            f["xbase"] = f["rps"] / base[g]["rps"]
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

    def ort_peers(key, g, among):
        """The ORT rows beside `key` with figures at gap `g` in `among`."""
        t, k = key[:2]
        return [o for o in keys if o[:2] == (t, k) and o[2].startswith("ort ")
                and any(o in r and g in r[o] for r in among)]

    def fastest(peers, g, among):
        """Of `peers`, the one with the highest median throughput in `among`."""
        return max(peers, key=lambda o: med([r[o][g]["rps"] for r in among
                                             if o in r and g in r[o]]))

    def versus_in(key, g, chosen):
        """The (×baseline, ×ORT, p99 ratio) of each run against the ORT row
        `chosen(i)` picks for run i (None: that run is left out), and the
        rows picked."""
        ratios, picked = [], []
        for i, r in enumerate(runs):
            o = chosen(i)
            if o is None or key not in r or o not in r or g not in r[key] or g not in r[o]:
                continue
            f, b = r[key][g], r[o][g]
            ratios.append((f["xbase"], f["rps"] / b["rps"], f["p99"] / b["p99"]))
            picked.append(o)
        return ratios, picked

    def name_of(picked):
        """The ORT row picked most often, and how often where not always."""
        if not picked:
            return "-"
        top = max(set(picked), key=picked.count)
        n = picked.count(top)
        return f"{top[2]} {ARR[top[3]]}" + ("" if n == len(picked) else f" ({n} of {len(picked)} runs)")

    def best_row_per_run(key, g):
        def chosen(i):
            peers = ort_peers(key, g, runs[i:i + 1])
            return fastest(peers, g, runs[i:i + 1]) if peers else None
        ratios, picked = versus_in(key, g, chosen)
        return ratios, name_of(picked[:1])

    def best_arrangement(key, g):
        peers = ort_peers(key, g, runs)
        if not peers:
            return [], "-"
        best = fastest(peers, g, runs)
        ratios, picked = versus_in(key, g, lambda i: best)
        return ratios, name_of(picked)

    def held_out(key, g):
        def chosen(i):
            others = runs[:i] + runs[i + 1:]
            peers = ort_peers(key, g, others)
            return fastest(peers, g, others) if peers else None
        ratios, picked = versus_in(key, g, chosen)
        return ratios, name_of(picked)

    target_table(keys, gaps, best_row_per_run,
                 "| K | leanrt | gap | ×baseline | ×best ORT | p99 ÷ best ORT's | best ORT (run 1) | met |")
    print("\nthe same target against one ORT arrangement: per K and gap the ORT row "
          "(version, arrangement) with the highest median throughput over the runs, "
          "the ratios run by run, then their medians\n")
    target_table(keys, gaps, best_arrangement,
                 "| K | leanrt | gap | ×baseline | ×that ORT | p99 ÷ its | ORT arrangement | met |")
    if len(runs) < 2:
        return
    print("\nthe same target, leave-one-out: each run against the ORT row with the highest "
          "median throughput over the other runs (no run both chooses the row and is "
          "compared with it), then the medians\n")
    target_table(keys, gaps, held_out,
                 "| K | leanrt | gap | ×baseline | ×that ORT | p99 ÷ its | ORT arrangement chosen | met |")


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

def self_test():
    """Three made-up runs, K = 1, back to back: leanrt 200 runs/s in each;
    ORT A 260, 190, 190 and ORT B 195 in each. The best row per run is A
    in run 1 (0.77×) and B after (1.03×); the best median is B (1.03×
    every run); left out one at a time, run 1 is compared with B (chosen
    on runs 2 and 3) and runs 2 and 3 with A (chosen on the other two,
    median 225): 1.05×, A in 2 of 3 runs."""
    def cell(label, arrangement, rps):
        return {"label": label,
                "spec": {"threads": 2, "sizes": {"work": "spin"},
                         "concurrent": {"arrangement": arrangement, "callers": 1}},
                "concurrent": [{"gap_ms": 0, "runs_per_s": rps, "runs": 100, "cpu_s": 0.1,
                                "latency_us": {"p50": 1e6 / rps, "p99": 2e6 / rps}}]}
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, a in enumerate((260, 190, 190)):
            path = os.path.join(d, f"run-{i}.json")
            with open(path, "w") as f:
                json.dump({"pool": [cell("serial", "Serial", 100),
                                    cell("leanrt default", "Shared", 200),
                                    cell("ort 1.31.1 default", "PerCaller", a),
                                    cell("ort 1.32.0 default", "PerCaller", 195)]}, f)
            paths.append(path)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(paths)
    rows = [line for line in out.getvalue().splitlines() if line.startswith("| 1 | leanrt")]
    want = ["| 1 | leanrt default shared | back to back | 2.00× | 1.03× | 0.98× | "
            "ort 1.31.1 default per caller | met |",
            "| 1 | leanrt default shared | back to back | 2.00× | 1.03× | 0.98× | "
            "ort 1.32.0 default per caller | met |",
            "| 1 | leanrt default shared | back to back | 2.00× | 1.05× | 0.95× | "
            "ort 1.31.1 default per caller (2 of 3 runs) | met |"]
    if rows[-3:] != want:
        sys.exit("self-test failed: the target rows read\n" + "\n".join(rows[-3:])
                 + "\nwhere they should read\n" + "\n".join(want))
    print("self-test passed: best row per run, best median, leave-one-out")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    else:
        main(sys.argv[1:])
