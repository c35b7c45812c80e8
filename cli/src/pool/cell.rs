//! One cell, in this process: the runtime under test, a warm-up, then the
//! scenarios the spec names, in order.
use super::concurrent;
use super::peers;
use super::request;
use super::results::CellResult;
use super::scenarios;
use super::section;
use super::spec::CellSpec;
use super::workload::{request, IS_CALLER};

/// Runs one cell in this process.
pub fn run_cell(spec: &CellSpec) -> Result<CellResult, String> {
    if let Some(c) = &spec.concurrent {
        let mut out = CellResult::empty(spec, spec.threads);
        out.concurrent = concurrent::concurrent(spec, c)?;
        return Ok(out);
    }
    let peer = peers::open(&spec.peer, spec.threads)?;
    let p = peer.as_ref();
    let s = &spec.sizes;
    let wants = |name: &str| spec.scenarios.iter().any(|x| x == name);
    let mut out = CellResult::empty(spec, p.dop());
    IS_CALLER.with(|c| c.set(true));
    // Warm up: threads started, caches warm.
    for _ in 0..3 {
        request(p, s);
    }
    if wants("fork_join") {
        scenarios::fork_join(p, s, &mut out);
    }
    if wants("bursty") {
        out.bursty = scenarios::bursty(p, s);
    }
    if wants("idle_after_burst") {
        out.idle_after_burst = Some(scenarios::idle_after_burst(p, s));
    }
    if wants("wake") {
        out.wake = scenarios::wake(p, s);
    }
    if wants("throughput") {
        out.throughput = Some(scenarios::throughput(p, s));
    }
    if wants("section") {
        match section::section(p, s) {
            Ok(v) => out.section = v,
            Err(note) => out.section_note = Some(note),
        }
    }
    if wants("request") {
        let (runs, serial) = request::request(p, s);
        out.request = runs;
        out.request_serial_us = Some(serial);
    }
    out.counters = p.stats();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::spec::{PeerKind, Sizes, SCENARIOS, WAKE_IDLE_MS};
    use crate::pool::{charts, table};

    #[test]
    fn a_cell_runs_every_scenario_in_process() {
        let spec = CellSpec {
            peer: PeerKind::Leanrt {
                config: "spin_1000_backoff_8".into(),
            },
            threads: 2,
            scenarios: SCENARIOS.iter().map(|s| s.to_string()).collect(),
            sizes: Sizes::tiny(),
            oversubscribe: false,
            concurrent: None,
        };
        let r = run_cell(&spec).unwrap();
        assert_eq!(r.fork_join_us.as_ref().unwrap().n, 5);
        assert_eq!(r.fork_join_small_overhead_us.as_ref().unwrap().n, 1);
        assert!(r.fork_join_small_item_us.unwrap() >= 0.0);
        assert_eq!(r.bursty.len(), 1);
        assert_eq!(r.bursty[0].latency_us.n, 2);
        assert!(r.idle_after_burst.as_ref().unwrap().requests_in_burst >= 1);
        assert_eq!(r.wake.len(), WAKE_IDLE_MS.len());
        assert_eq!(r.wake[2].latency_us.n, 3); // 50 ms: at least 3 probes
        for w in &r.wake {
            // Two threads: every probe has a helper or a missed team.
            assert_eq!(w.team_us.n + w.team_missed as usize, w.latency_us.n);
            assert!(w.first_helper_us.n <= w.latency_us.n);
        }
        assert_eq!(r.request.len(), 2);
        assert!(r.request[1].gap.exponential);
        assert_eq!(r.request[0].latency_us.n, 2);
        assert!(!r.request[0].hints);
        assert_eq!(r.request_serial_us.as_ref().unwrap().n, 3);
        // leanrt has parallel sections.
        assert!(r.section_note.is_none());
        assert_eq!(r.section.len(), 2);
        for (run, k) in r.section.iter().zip([1, 3]) {
            assert_eq!(run.loops, k);
            assert_eq!(run.separate_us.n, 1);
            assert_eq!(run.in_section_us.n, 1);
        }
        assert!(r.throughput.as_ref().unwrap().requests >= 1);
        // The JSON round trip the parent relies on.
        let back: CellResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.label, r.label);
        assert!(!table(std::slice::from_ref(&r)).is_empty());
        assert!(!charts(&[r]).is_empty());
    }

    /// A tiny cell of every scenario on ORT's pool, with and without the
    /// spinning hints.
    #[test]
    fn a_tiny_cell_runs_on_ort() {
        let Some(lib) = crate::pool::peers::ort::tests::library_for_test() else {
            return;
        };
        let stop = format!(
            "spin_1000_backoff_8;{}=1",
            leanrt::pool::abi::LRT_POOL_KEY_FORCE_SPINNING_STOP
        );
        for (config, hints) in [("default", false), (stop.as_str(), true)] {
            let spec = CellSpec {
                peer: PeerKind::Ort {
                    config: config.into(),
                    library: lib.path.to_string_lossy().into_owned(),
                    version: lib.version.clone(),
                },
                threads: 2,
                scenarios: SCENARIOS.iter().map(|s| s.to_string()).collect(),
                sizes: Sizes::tiny(),
                oversubscribe: false,
                concurrent: None,
            };
            let r = run_cell(&spec).unwrap();
            assert_eq!(r.label, format!("ort {} {config}", lib.version));
            assert_eq!(r.dop, 2);
            assert_eq!(r.fork_join_us.as_ref().unwrap().n, 5);
            assert_eq!(r.bursty[0].latency_us.n, 2);
            assert_eq!(r.wake.len(), 3);
            assert_eq!(r.request.len(), 2);
            assert_eq!(r.request[0].latency_us.n, 2);
            assert_eq!(r.request[0].hints, hints);
            // No sections through ORT's C API, and the table says why.
            assert!(r.section.is_empty());
            assert!(r
                .section_note
                .as_deref()
                .unwrap()
                .contains("KernelContext_ParallelFor"));
            assert!(r.counters.is_none());
        }
    }
}
