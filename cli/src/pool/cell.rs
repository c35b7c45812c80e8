//! One cell, in this process: the runtime under test, a warm-up, then the
//! scenarios the spec names, in order.
use super::peers;
use super::request;
use super::results::CellResult;
use super::scenarios;
use super::section;
use super::spec::CellSpec;
use super::workload::{request, IS_CALLER};

/// Runs one cell in this process.
pub fn run_cell(spec: &CellSpec) -> Result<CellResult, String> {
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
    use crate::pool::spec::{Gap, PeerKind, RunShape, Sizes, SCENARIOS, WAKE_IDLE_MS};
    use crate::pool::{charts, table};

    fn tiny() -> Sizes {
        Sizes {
            regions: 5,
            fj_iters: 8,
            requests: 2,
            gaps_ms: vec![0.1],
            items: 64,
            iters: 4,
            cost_cycles: 50.0,
            burst_ms: 1,
            idle_ms: 1,
            wake_reps: 1,
            duration_ms: 1,
            run: RunShape {
                preamble_us: 1.0,
                rounds: 4,
                round_us: 2.0,
                between_us: 1.0,
                preamble_items: 2,
                round_items: 8,
                between_items: 1,
            },
            section_loops: vec![1, 3],
            section_item_us: 0.5,
            section_iters: 4,
            request_gaps: vec![
                Gap {
                    mean_ms: 0.1,
                    exponential: false,
                },
                Gap {
                    mean_ms: 0.2,
                    exponential: true,
                },
            ],
        }
    }

    #[test]
    fn a_cell_runs_every_scenario_in_process() {
        let spec = CellSpec {
            peer: PeerKind::Leanrt {
                config: "spin_1000_backoff_8".into(),
            },
            threads: 2,
            scenarios: SCENARIOS.iter().map(|s| s.to_string()).collect(),
            sizes: tiny(),
            oversubscribe: false,
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
}
