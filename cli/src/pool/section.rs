//! The section scenario: k loops inside one parallel section against the
//! same k loops run one after the other. Each loop has one index per
//! thread of about `--section-item-us`; the figure is the time per loop, so
//! what a section saves is the hand-off each separate loop pays.
use super::peers::Peer;
use super::results::SectionRun;
use super::spec::Sizes;
use super::workload::work;
use crate::stats::{us, Summary};
use std::hint::black_box;
use std::time::Instant;

/// Every loop count of the sizes; Err(note) where the runtime under test
/// has no sections.
pub fn section(p: &dyn Peer, s: &Sizes) -> Result<Vec<SectionRun>, String> {
    let (dop, iters) = (p.dop(), s.section_iters);
    let body = |i: usize| {
        black_box(work(i as u64, iters));
    };
    // One probe section decides whether the runtime has them at all.
    if p.section_loops(1, dop, cost_cycles(s), &body).is_none() {
        return Err(p.no_sections_reason());
    }
    Ok(s.section_loops
        .iter()
        .map(|&k| at_loop_count(p, s, k, &body))
        .collect())
}

/// `reps` rounds of: k separate loops, then k loops in one section
/// (interleaved, so that drifts of the machine hit both alike).
fn at_loop_count(p: &dyn Peer, s: &Sizes, loops: u32, body: &(dyn Fn(usize) + Sync)) -> SectionRun {
    let (dop, cost) = (p.dop(), cost_cycles(s));
    let reps = (s.regions / 4).max(1);
    let warm = (reps / 10).max(1);
    let (mut separate, mut inside, mut attached) = (Vec::new(), Vec::new(), 0u32);
    for r in 0..warm + reps {
        let t = Instant::now();
        for _ in 0..loops {
            p.parallel_for(dop, cost, body);
        }
        let sep = us(t.elapsed()) / f64::from(loops);
        let t = Instant::now();
        let team = p.section_loops(loops, dop, cost, body).unwrap_or(false);
        let sec = us(t.elapsed()) / f64::from(loops);
        if r >= warm {
            separate.push(sep);
            inside.push(sec);
            attached += u32::from(team);
        }
    }
    SectionRun {
        loops,
        separate_us: Summary::of(separate),
        in_section_us: Summary::of(inside),
        attached_pct: 100.0 * f64::from(attached) / f64::from(reps),
    }
}

/// The cost handed to leanrt's cost model: one the model always spreads
/// over every thread, one index per block. The scenario measures what a
/// section saves on the hand-off of loops that do run on a team; with the
/// honest cost of a 1 µs index (~3000 cycles) Eigen's model (100000 cycles
/// of startup) rightly runs such a loop serially, inside a section or not,
/// and there is no hand-off to save. The peers without a cost model ignore
/// it.
fn cost_cycles(_s: &Sizes) -> f64 {
    1e9
}
