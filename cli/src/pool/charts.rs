//! The SVG charts of `leanrt pool`.
use super::results::{Bursty, CellResult, RequestRun};
use super::spec::{Gap, WAKE_IDLE_MS};
use crate::svg::{Bar, Chart, Group};

/// The cells and their thread counts, with the two ways of grouping bars.
struct Panels<'a> {
    results: &'a [CellResult],
    threads: Vec<usize>,
}

impl Panels<'_> {
    fn bar(r: &CellResult, v: Option<f64>) -> Bar {
        Bar {
            label: r.label.clone(),
            value: v.unwrap_or(f64::NAN),
        }
    }

    /// One group per thread count, a bar per runtime/configuration.
    fn by_threads(&self, f: &dyn Fn(&CellResult) -> Option<f64>) -> Vec<Group> {
        self.threads
            .iter()
            .map(|&t| Group {
                label: format!("{t} threads"),
                bars: self
                    .results
                    .iter()
                    .filter(|r| r.spec.threads == t)
                    .map(|r| Self::bar(r, f(r)))
                    .collect(),
            })
            .collect()
    }

    /// At thread count `t`, one group per key (a gap, an idle period), each
    /// with a bar per runtime/configuration (NaN where the cell lacks it).
    fn per_key(
        &self,
        t: usize,
        keys: &[f64],
        label: &dyn Fn(f64) -> String,
        value: &dyn Fn(&CellResult, f64) -> Option<f64>,
    ) -> Vec<Group> {
        keys.iter()
            .map(|&k| Group {
                label: label(k),
                bars: self
                    .results
                    .iter()
                    .filter(|r| r.spec.threads == t)
                    .map(|r| Self::bar(r, value(r, k)))
                    .collect(),
            })
            .collect()
    }

    fn any(&self, f: &dyn Fn(&CellResult) -> bool) -> bool {
        self.results.iter().any(f)
    }
    /// Per thread count, a latency chart and a CPU chart over the same keys
    /// (the gaps of the bursty and request scenarios).
    fn latency_and_cpu(
        &self,
        (latency_title, cpu_title): (&str, &str),
        keys: &[f64],
        label: &dyn Fn(f64) -> String,
        latency: &dyn Fn(&CellResult, f64) -> Option<f64>,
        cpu: &dyn Fn(&CellResult, f64) -> Option<f64>,
    ) -> Vec<Chart> {
        let chart = |t: usize, title: &str, unit: &str, value| Chart {
            title: format!("{title}, {t} threads"),
            unit: unit.into(),
            groups: self.per_key(t, keys, label, value),
        };
        self.threads
            .iter()
            .flat_map(|&t| {
                [
                    chart(t, latency_title, "µs, p50", latency),
                    chart(t, cpu_title, "%", cpu),
                ]
            })
            .collect()
    }
    /// One bar group per thread count of `value`, or None when no cell has
    /// the value (its scenario did not run).
    fn threads_chart(
        &self,
        title: &str,
        unit: &str,
        value: &dyn Fn(&CellResult) -> Option<f64>,
    ) -> Option<Chart> {
        self.any(&|r| value(r).is_some()).then(|| Chart {
            title: title.into(),
            unit: unit.into(),
            groups: self.by_threads(value),
        })
    }
}

/// Charts: fork-join p50, bursty p50 per gap, CPU% in bursty, CPU-s after a
/// burst, throughput, wake p50 per idle period; bars per runtime/config.
pub fn charts(all: &[CellResult]) -> Vec<Chart> {
    // The concurrent scenario has no charts (its table has the figures).
    let single: Vec<CellResult> = all
        .iter()
        .filter(|r| r.spec.concurrent.is_none())
        .cloned()
        .collect();
    let results = single.as_slice();
    let mut threads: Vec<usize> = results.iter().map(|r| r.spec.threads).collect();
    threads.dedup();
    let p = Panels { results, threads };
    let mut charts = fork_join_charts(&p);
    charts.extend(bursty_charts(&p));
    charts.extend(load_charts(&p));
    charts.extend(wake_charts(&p));
    charts.extend(request_charts(&p));
    charts.extend(section_charts(&p));
    charts
}

fn fork_join_charts(p: &Panels) -> Vec<Chart> {
    [
        p.threads_chart("fork-join overhead of a tiny region", "µs, p50", &|r| {
            r.fork_join_us.as_ref().map(|f| f.p50)
        }),
        p.threads_chart(
            "fork-join overhead with small indices (region time minus one index)",
            "µs, p50",
            &|r| r.fork_join_small_overhead_us.as_ref().map(|f| f.p50),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn bursty_charts(p: &Panels) -> Vec<Chart> {
    let Some(first) = p.results.iter().find(|r| !r.bursty.is_empty()) else {
        return vec![];
    };
    let gaps: Vec<f64> = first.bursty.iter().map(|b| b.gap_ms).collect();
    let gap_label = |g: f64| format!("gap {g} ms");
    fn gap(r: &CellResult, g: f64) -> Option<&Bursty> {
        r.bursty.iter().find(|b| b.gap_ms == g)
    }
    p.latency_and_cpu(
        (
            "bursty load: request latency",
            "bursty load: CPU (user+sys over wall)",
        ),
        &gaps,
        &gap_label,
        &|r, g| gap(r, g).map(|b| b.latency_us.p50),
        &|r, g| gap(r, g).map(|b| b.cpu_pct),
    )
}

fn load_charts(p: &Panels) -> Vec<Chart> {
    [
        p.threads_chart(
            "CPU burnt in the idle period after a burst",
            "CPU-seconds",
            &|r| r.idle_after_burst.as_ref().map(|i| i.cpu_s),
        ),
        p.threads_chart("throughput of back-to-back requests", "requests/s", &|r| {
            r.throughput.as_ref().map(|t| t.requests_per_s)
        }),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn wake_charts(p: &Panels) -> Vec<Chart> {
    if !p.any(&|r| !r.wake.is_empty()) {
        return vec![];
    }
    p.threads
        .iter()
        .map(|&t| Chart {
            title: format!("wake latency, {t} threads"),
            unit: "µs, p50".into(),
            groups: p.per_key(
                t,
                &WAKE_IDLE_MS,
                &|i| format!("after {i} ms idle"),
                &|r, i| {
                    r.wake
                        .iter()
                        .find(|w| w.idle_ms == i)
                        .map(|w| w.latency_us.p50)
                },
            ),
        })
        .chain(p.threads.iter().map(|&t| Chart {
            title: format!("waking the whole team after idle, {t} threads"),
            unit: "µs, p50".into(),
            groups: p.per_key(
                t,
                &WAKE_IDLE_MS,
                &|i| format!("after {i} ms idle"),
                &|r, i| {
                    r.wake
                        .iter()
                        .find(|w| w.idle_ms == i && w.team_us.n > 0)
                        .map(|w| w.team_us.p50)
                },
            ),
        }))
        .collect()
}

fn request_charts(p: &Panels) -> Vec<Chart> {
    let Some(first) = p.results.iter().find(|r| !r.request.is_empty()) else {
        return vec![];
    };
    let gaps: Vec<Gap> = first.request.iter().map(|q| q.gap).collect();
    // Keys are indices into `gaps` (the panels key on numbers).
    let keys: Vec<f64> = (0..gaps.len()).map(|i| i as f64).collect();
    let label = |k: f64| format!("gap {}", gaps[k as usize].label());
    let find = |r: &CellResult, k: f64| -> Option<RequestRun> {
        r.request
            .iter()
            .find(|q| q.gap == gaps[k as usize])
            .cloned()
    };
    p.latency_and_cpu(
        (
            "requests: run latency",
            "requests: CPU between runs (user+sys over wall)",
        ),
        &keys,
        &label,
        &|r, k| find(r, k).map(|q| q.latency_us.p50),
        &|r, k| find(r, k).map(|q| q.gap_cpu_pct),
    )
}

fn section_charts(p: &Panels) -> Vec<Chart> {
    let Some(first) = p.results.iter().find(|r| !r.section.is_empty()) else {
        return vec![];
    };
    let ks: Vec<f64> = first.section.iter().map(|x| f64::from(x.loops)).collect();
    let find = |r: &CellResult, k: f64| r.section.iter().find(|x| f64::from(x.loops) == k).cloned();
    let mut charts = Vec::new();
    for &t in &p.threads {
        charts.push(Chart {
            title: format!("parallel sections: time per loop, k loops in one section, {t} threads"),
            unit: "µs, p50".into(),
            groups: p.per_key(t, &ks, &|k| format!("k={k}"), &|r, k| {
                find(r, k).map(|x| x.in_section_us.p50)
            }),
        });
        charts.push(Chart {
            title: format!("parallel sections: time per loop, k separate loops, {t} threads"),
            unit: "µs, p50".into(),
            groups: p.per_key(t, &ks, &|k| format!("k={k}"), &|r, k| {
                find(r, k).map(|x| x.separate_us.p50)
            }),
        });
    }
    charts
}
