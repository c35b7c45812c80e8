#!/usr/bin/env python3
"""Tables of issue 31's one-caller targets from cli/run-k1.sh's JSON (OUT/):

* A/B: per configuration and gap, the build under test's request p50 and
  total CPU per run against the old build's, both loaded by one invocation
  (`--leanrt-libs old=...,new=...`: rows `leanrt@new` and `leanrt@old`, the
  same work sizes and turns), per run (ab-N), medians of the ratios
  (targets: p50 ≤ 1.05×, CPU per run ≤ 1.1×); beside them the command's own
  pool (the new build's code through the Rust API) against `leanrt@new`:
  the same code twice, so its spread is the measurement's;
* SGEMM: leanrt's default and hinted p50 against ORT's default, and their
  total CPU per run against ORT no_spin's, per ORT version, per run, medians
  (targets: p50 ≤ 1.0×, CPU ≤ 1.1×).

  python3 cli/k1-compare.py OUT
"""
import glob
import json
import os
import statistics
import sys


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def request(path):
    """{(label, gap label): (p50 µs, total CPU ms per run)} of one run."""
    out = {}
    for c in json.load(open(path))["pool"]:
        for q in c.get("request", []):
            g = q["gap"]
            gap = ("exp " if g["exponential"] else "") + f"{g['mean_ms']:g} ms"
            n = max(q["latency_us"]["n"], 1)
            out[(c["label"], gap)] = (q["latency_us"]["p50"], 1e3 * (q["run_cpu_s"] + q["gap_cpu_s"]) / n)
    return out


def main(d):
    ab = [request(p) for p in sorted(glob.glob(os.path.join(d, "ab-*.json")))]
    if ab:
        ab_table(ab)
    sg = [request(p) for p in sorted(glob.glob(os.path.join(d, "sgemm-*.json")))]
    if sg:
        sgemm_table(sg)


def ab_table(runs):
    print(f"K=1 A/B, spin work: leanrt@new ÷ leanrt@old in one invocation, medians of {len(runs)} per-run ratios\n")
    print("| configuration | gap | old p50 µs | new p50 µs | p50 ratio (≤ 1.05) | old CPU ms/run | new CPU ms/run | CPU ratio (≤ 1.1) | met | same code twice: p50 ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for label, gap in runs[0]:
        if not label.startswith("leanrt@old "):
            continue
        cfg = label[len("leanrt@old "):]
        old, new, own = (label, gap), (f"leanrt@new {cfg}", gap), (f"leanrt {cfg}", gap)
        rs = [r for r in runs if old in r and new in r]
        p = med([r[new][0] / r[old][0] for r in rs])
        c = med([r[new][1] / r[old][1] for r in rs])
        twice = med([r[own][0] / r[new][0] for r in rs if own in r])
        print(f"| {cfg} | {gap} | {med([r[old][0] for r in rs]):.0f} | {med([r[new][0] for r in rs]):.0f} |"
              f" {p:.2f}× | {med([r[old][1] for r in rs]):.2f} | {med([r[new][1] for r in rs]):.2f} | {c:.2f}× |"
              f" {'met' if p <= 1.05 and c <= 1.1 else 'not met'} | {twice:.2f}× |")


def sgemm_table(sg):
    print(f"\nK=1, SGEMM work: leanrt against ONNX Runtime in the same run, medians of {len(sg)} per-run ratios\n")
    print("| leanrt | gap | p50 µs | CPU ms/run | ORT | ORT default p50 µs | p50 ratio (≤ 1.0) | ORT no_spin CPU ms/run | CPU ratio (≤ 1.1) | met |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---|")
    versions = sorted({k[0].split(" ")[1] for k in sg[0] if k[0].startswith("ort ")})
    hinted = "spin_1000_backoff_8;session.force_spinning_stop=1"
    for cfg in ["default", hinted]:
        for gap in sorted({k[1] for k in sg[0]}):
            for v in versions:
                mine = f"leanrt {cfg}"
                rs = [r for r in sg if (mine, gap) in r and (f"ort {v} default", gap) in r and (f"ort {v} no_spin", gap) in r]
                p = med([r[(mine, gap)][0] / r[(f"ort {v} default", gap)][0] for r in rs])
                c = med([r[(mine, gap)][1] / r[(f"ort {v} no_spin", gap)][1] for r in rs])
                print(f"| {cfg} | {gap} | {med([r[(mine, gap)][0] for r in rs]):.0f} | {med([r[(mine, gap)][1] for r in rs]):.2f} |"
                      f" {v} | {med([r[(f'ort {v} default', gap)][0] for r in rs]):.0f} | {p:.2f}× |"
                      f" {med([r[(f'ort {v} no_spin', gap)][1] for r in rs]):.2f} | {c:.2f}× |"
                      f" {'met' if p <= 1.0 and c <= 1.1 else 'not met'} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
