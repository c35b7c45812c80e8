//! What every runtime under test provides.
use leanrt::pool::abi::lrt_pool_stats;
use std::time::Duration;

/// A parallel runtime under test.
pub trait Peer {
    /// Degree of parallelism (threads including the caller).
    fn dop(&self) -> usize;
    /// `body(i)` once for every i in [0, total), in parallel, returning when
    /// all are done. `cost_cycles` is the estimated cost of one index (used by
    /// leanrt's cost model, as an ORT kernel passes it).
    fn parallel_for(&self, total: usize, cost_cycles: f64, body: &(dyn Fn(usize) + Sync));
    /// A tiny region: one index per thread, `body(i)` for i in [0, dop).
    fn tiny_region(&self, body: &(dyn Fn(usize) + Sync));
    /// Submits a probe to the runtime's workers and returns how long after
    /// the submission a worker (not the caller, where the runtime has
    /// workers) started running it.
    fn wake_latency(&self) -> Duration;
    /// The pool's counters, for leanrt.
    fn stats(&self) -> Option<lrt_pool_stats> {
        None
    }
    /// Whether `begin_run` / `end_run` tell the runtime anything (leanrt
    /// with `session.force_spinning_stop`, where ONNX Runtime's session
    /// enables spinning when a run starts and disables it when it ends).
    fn hints(&self) -> bool {
        false
    }
    /// `loops` loops of `total` indices each (`body(i)` once per index and
    /// loop) inside one parallel section: the team that joins the first
    /// loop stays for the next ones. Returns whether the loops ran attached
    /// to a team (a section can fall back to plain loops), or None, having
    /// run nothing, where the runtime has no sections.
    fn section_loops(
        &self,
        _loops: u32,
        _total: usize,
        _cost_cycles: f64,
        _body: &(dyn Fn(usize) + Sync),
    ) -> Option<bool> {
        None
    }
    /// An inference run starts.
    fn begin_run(&self) {}
    /// An inference run ended.
    fn end_run(&self) {}
}
