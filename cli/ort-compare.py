#!/usr/bin/env python3
"""The leanrt-vs-ONNX Runtime tables of docs/BENCHMARKS.md from the JSON
outputs of cli/run-ort-compare.sh (several runs of the same command):

    python3 cli/ort-compare.py --runs OUT/request-*.json --oversubscribed OUT/over-*.json

Every figure is the median over the runs; every ratio is taken within one
run (leanrt and ORT in the same run, on the same work) and then the median
of those ratios is shown. CPU between runs = process CPU over wall time in
the gaps between inference runs, percent (100 = one core busy)."""
import argparse
import json
import statistics

PRESETS = ["default", "no_spin", "spin_1000", "backoff_8", "spin_1000_backoff_8"]
HINTED = "spin_1000_backoff_8;session.force_spinning_stop=1"
ADAPTIVE = "adaptive"


def cells(path):
    """{(runtime, config, threads): cell} of one run; runtime 'leanrt' or 'ort'."""
    out = {}
    with open(path) as f:
        for c in json.load(f)["pool"]:
            peer = c["spec"]["peer"]
            if "Leanrt" in peer:
                key = ("leanrt", peer["Leanrt"]["config"])
            elif "Ort" in peer:
                key = ("ort", peer["Ort"]["config"])
                out.setdefault("_ort_version", peer["Ort"]["version"])
            else:
                continue
            out[key + (c["spec"]["threads"],)] = c
    return out


def at_gap(cell, gap_ms):
    for q in cell["request"]:
        if q["gap"]["mean_ms"] == gap_ms and not q["gap"]["exponential"]:
            return q
    return None


def med(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def fmt(x, digits=0):
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None or b <= 0 else a / b


def verdict(x, bound):
    if x is None:
        return "not measured"
    return "met" if x <= bound else "**not met**"


class Runs:
    def __init__(self, paths):
        self.runs = [cells(p) for p in paths]
        self.version = next((r["_ort_version"] for r in self.runs if "_ort_version" in r), "?")
        keys = set()
        for r in self.runs:
            keys |= {k for k in r if k != "_ort_version"}
        self.threads = sorted({k[2] for k in keys})
        gaps = set()
        for r in self.runs:
            for k, c in r.items():
                if k != "_ort_version":
                    gaps |= {q["gap"]["mean_ms"] for q in c["request"] if not q["gap"]["exponential"]}
        self.gaps = sorted(gaps)

    def per_run(self, f):
        """f(run) for each run (None where it cannot be computed)."""
        out = []
        for r in self.runs:
            try:
                out.append(f(r))
            except (KeyError, TypeError):
                out.append(None)
        return out

    def value(self, rt, config, t, gap, pick):
        return med(self.per_run(lambda r: pick(at_gap(r[(rt, config, t)], gap))))

    def serial(self, rt, config, t, pick):
        return med(self.per_run(lambda r: pick(r[(rt, config, t)]["request_serial_us"])))

    def configs(self, t):
        """(runtime, config) of every cell at t threads, in run order."""
        out = []
        for r in self.runs:
            for k in r:
                if k != "_ort_version" and k[2] == t and k[:2] not in out:
                    out.append(k[:2])
        return out

    def vs_serial(self, rt, c, t, g, q):
        """(quantile q of the runs at gap g, the same of the cell's serial
        baseline, their ratio), medians over the runs."""
        cell = lambda r: r[(rt, c, t)]
        return (
            self.value(rt, c, t, g, lambda x: x["latency_us"][q]),
            self.serial(rt, c, t, lambda x: x[q]),
            med(self.per_run(lambda r: ratio(at_gap(cell(r), g)["latency_us"][q], cell(r)["request_serial_us"][q]))),
        )

    def name(self, rt, c):
        return ("leanrt " if rt == "leanrt" else f"ORT {self.version} ") + c

    def has(self, rt, config, t):
        return any((rt, config, t) in r for r in self.runs)


P50 = lambda q: q["latency_us"]["p50"]
P99 = lambda q: q["latency_us"]["p99"]
GAPCPU = lambda q: q["gap_cpu_pct"]


def presets_table(R, t):
    lines = [
        f"| preset | gap | leanrt p50 / p99 µs | ORT {R.version} p50 / p99 µs | p50 ratio (≤ 1.0) | p99 ratio (≤ 1.1) | CPU between runs, leanrt / ORT | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in PRESETS:
        if not (R.has("leanrt", p, t) and R.has("ort", p, t)):
            continue
        for g in R.gaps:
            l50, l99 = R.value("leanrt", p, t, g, P50), R.value("leanrt", p, t, g, P99)
            o50, o99 = R.value("ort", p, t, g, P50), R.value("ort", p, t, g, P99)
            lc, oc = R.value("leanrt", p, t, g, GAPCPU), R.value("ort", p, t, g, GAPCPU)
            r50 = med(R.per_run(lambda r: ratio(P50(at_gap(r[("leanrt", p, t)], g)), P50(at_gap(r[("ort", p, t)], g)))))
            r99 = med(R.per_run(lambda r: ratio(P99(at_gap(r[("leanrt", p, t)], g)), P99(at_gap(r[("ort", p, t)], g)))))
            cpu_ok = None if lc is None or oc is None else lc <= oc
            v = [verdict(r50, 1.0), verdict(r99, 1.1), "met" if cpu_ok else ("**not met**" if cpu_ok is not None else "not measured")]
            overall = "met" if all(x == "met" for x in v) else "**not met** (" + ", ".join(
                n for n, x in zip(["p50", "p99", "CPU"], v) if x != "met") + ")"
            lines.append(
                f"| {p} | {g:g} ms | {fmt(l50)} / {fmt(l99)} | {fmt(o50)} / {fmt(o99)} | {fmt(r50, 2)}× | {fmt(r99, 2)}× | {fmt(lc, 1)}% / {fmt(oc, 1)}% | {overall} |"
            )
    return lines


def hinted_table(R, t):
    lines = [
        f"| configuration | gap | p50 / p99 µs | ORT {R.version} default p50 µs | p50 ratio (≤ 1.05) | CPU between runs | ORT default's | CPU share (≤ 10%) | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = [("leanrt", HINTED, "leanrt " + HINTED + " (hints)"), ("leanrt", ADAPTIVE, "leanrt adaptive"),
            ("ort", HINTED, f"ORT {R.version} " + HINTED + " (for reference)")]
    for rt, c, name in rows:
        if not (R.has(rt, c, t) and R.has("ort", "default", t)):
            continue
        for g in R.gaps:
            v50, v99 = R.value(rt, c, t, g, P50), R.value(rt, c, t, g, P99)
            d50 = R.value("ort", "default", t, g, P50)
            cpu, dcpu = R.value(rt, c, t, g, GAPCPU), R.value("ort", "default", t, g, GAPCPU)
            r50 = med(R.per_run(lambda r: ratio(P50(at_gap(r[(rt, c, t)], g)), P50(at_gap(r[("ort", "default", t)], g)))))
            share = med(R.per_run(lambda r: ratio(GAPCPU(at_gap(r[(rt, c, t)], g)), GAPCPU(at_gap(r[("ort", "default", t)], g)))))
            if rt == "ort":
                overall = "-"
            else:
                a, b = verdict(r50, 1.05), verdict(share, 0.10)
                overall = "met" if a == b == "met" else "**not met** (" + ", ".join(
                    n for n, x in [("p50", a), ("CPU", b)] if x != "met") + ")"
            lines.append(
                f"| {name} | {g:g} ms | {fmt(v50)} / {fmt(v99)} | {fmt(d50)} | {fmt(r50, 2)}× | {fmt(cpu, 1)}% | {fmt(dcpu, 1)}% | {fmt(None if share is None else 100 * share, 1)}% | {overall} |"
            )
    return lines


def vs_serial_table(R, t, qs, judge):
    """Each configuration's quantiles qs at each gap against the same of
    its cell's serial baseline; judge(rt, config, ratios) -> verdict."""
    q = " / ".join(qs)
    lines = [
        f"| configuration | gap | {q} µs | serial {q} µs (same cell) | {q} vs serial | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for rt, c in R.configs(t):
        for g in R.gaps:
            v = [R.vs_serial(rt, c, t, g, x) for x in qs]
            col = lambda i, d=0, unit="": " / ".join(fmt(x[i], d) + unit for x in v)
            lines.append(
                f"| {R.name(rt, c)} | {g:g} ms | {col(0)} | {col(1)} | {col(2, 2, '×')} | {judge(rt, c, [x[2] for x in v])} |"
            )
    return lines


def serial_table(R, t):
    """No leanrt configuration slower than serial at p50 or p90."""
    def judge(rt, c, ratios):
        if rt != "leanrt":
            return "-"
        return "met" if all(verdict(r, 1.0) == "met" for r in ratios) else "**not met**"
    return vs_serial_table(R, t, ["p50", "p90"], judge)


def oversubscribed_table(R, t):
    """Oversubscribed, the adaptive key: p99 at most serial p99."""
    def judge(rt, c, ratios):
        return verdict(ratios[1], 1.0) if (rt, c) == ("leanrt", ADAPTIVE) else "-"
    return vs_serial_table(R, t, ["p50", "p99"], judge)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", required=True, help="JSON of the request runs")
    ap.add_argument("--oversubscribed", nargs="*", default=[], help="JSON of the --oversubscribe runs")
    a = ap.parse_args()
    R = Runs(a.runs)
    out = []
    for t in R.threads:
        out.append(f"### {t} threads, ONNX Runtime {R.version} (medians of {len(R.runs)} runs)\n")
        out.append("Every ORT preset against leanrt's same preset:\n")
        out += presets_table(R, t)
        out.append("\nHinted requests (session.force_spinning_stop) and the adaptive key against ORT's default:\n")
        out += hinted_table(R, t)
        out.append("\nNo configuration slower than serial (the same run on the caller alone):\n")
        out += serial_table(R, t)
        out.append("")
    if a.oversubscribed:
        O = Runs(a.oversubscribed)
        for t in O.threads:
            out.append(f"### {t} threads, oversubscribed (one busy thread per core; medians of {len(O.runs)} runs)\n")
            out += oversubscribed_table(O, t)
            out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
