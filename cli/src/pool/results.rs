//! What a cell measured (the JSON a child prints and `--json` keeps).
use super::spec::{CellSpec, Gap};
use crate::stats::{cpu_pct, Summary};
use leanrt::pool::abi::lrt_pool_stats;
use serde::{Deserialize, Serialize};

/// bursty at one gap.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Bursty {
    pub gap_ms: f64,
    /// Request latency, µs.
    pub latency_us: Summary,
    /// Process CPU time over wall time, percent (100 = one core busy).
    pub cpu_pct: f64,
    pub wall_s: f64,
    pub cpu_s: f64,
    /// Share of the requests in which a thread other than the caller ran
    /// some indices, percent. Between 0 and 100 the latency is a mix of
    /// team runs and caller-alone runs: its p50 is whichever is the
    /// majority, and flips from run to run.
    #[serde(default)]
    pub joined_pct: Option<f64>,
}

/// idle_after_burst.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IdleAfterBurst {
    pub burst_ms: u64,
    pub requests_in_burst: u64,
    pub idle_ms: u64,
    /// CPU-seconds the process burnt during the idle period.
    pub cpu_s: f64,
}

/// wake after one idle period.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Wake {
    pub idle_ms: f64,
    /// Submission to a worker starting the probe, µs.
    pub latency_us: Summary,
    /// A region of one index per thread, each index waiting for the others:
    /// from the call to the first index that runs on a thread other than
    /// the caller, µs (probes where no helper came within 50 ms are left out).
    #[serde(default)]
    pub first_helper_us: Summary,
    /// ... and to the moment every thread of the team has started its
    /// index, µs (probes where the team was not complete within 50 ms are
    /// left out and counted in `team_missed`).
    #[serde(default)]
    pub team_us: Summary,
    #[serde(default)]
    pub team_missed: u32,
}

/// section at one loop count.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SectionRun {
    /// Loops per section.
    pub loops: u32,
    /// Time per loop of `loops` loops run one after the other, µs.
    pub separate_us: Summary,
    /// Time per loop of the same loops inside one parallel section, µs.
    pub in_section_us: Summary,
    /// Share of the sections that got a team (a section whose pool was busy
    /// runs its loops as plain loops), percent.
    pub attached_pct: f64,
}

/// request at one gap.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestRun {
    pub gap: Gap,
    /// Whether the runtime was told where each run starts and ends
    /// (leanrt with `session.force_spinning_stop`: enable/disable spinning,
    /// as ONNX Runtime's session does).
    pub hints: bool,
    /// Run latency (hints included), µs.
    pub latency_us: Summary,
    /// Process CPU over wall time inside the runs, percent.
    pub run_cpu_pct: f64,
    /// Process CPU over wall time in the gaps between runs, percent.
    pub gap_cpu_pct: f64,
    pub run_wall_s: f64,
    pub run_cpu_s: f64,
    pub gap_wall_s: f64,
    pub gap_cpu_s: f64,
}

/// concurrent at one gap: every caller's runs together.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConcurrentRun {
    /// Gap after each of a caller's runs, ms (0 = back to back).
    pub gap_ms: f64,
    /// Runs of all callers.
    pub runs: u64,
    /// From the moment every caller starts to the moment the last one is
    /// done, s.
    pub wall_s: f64,
    pub runs_per_s: f64,
    /// Run latency over all callers' runs, µs.
    pub latency_us: Summary,
    /// Process CPU (getrusage, every thread) over the same wall time, s:
    /// inside the runs and between them.
    pub cpu_s: f64,
}

impl ConcurrentRun {
    /// Total CPU per run (inside plus between runs), ms.
    pub fn cpu_per_run_ms(&self) -> f64 {
        1e3 * self.cpu_s / (self.runs.max(1) as f64)
    }

    /// Adds `turn`, the same gap measured in a later turn of the cell: the
    /// runs, wall times and CPU add up (throughput = all runs ÷ all wall
    /// time), the latencies are pooled.
    fn add_turn(&mut self, turn: ConcurrentRun) {
        self.runs += turn.runs;
        self.wall_s += turn.wall_s;
        self.cpu_s += turn.cpu_s;
        self.runs_per_s = self.runs as f64 / self.wall_s.max(1e-9);
        self.latency_us.add(turn.latency_us);
    }
}

impl RequestRun {
    /// Adds `turn`, a later turn's runs at the same gap (`pool::run`).
    fn add_turn(&mut self, turn: RequestRun) {
        self.run_wall_s += turn.run_wall_s;
        self.run_cpu_s += turn.run_cpu_s;
        self.gap_wall_s += turn.gap_wall_s;
        self.gap_cpu_s += turn.gap_cpu_s;
        self.run_cpu_pct = cpu_pct(self.run_cpu_s, self.run_wall_s);
        self.gap_cpu_pct = cpu_pct(self.gap_cpu_s, self.gap_wall_s);
        self.latency_us.add(turn.latency_us);
    }

    /// Total CPU per run, inside plus between runs (the process's CPU over
    /// the whole gap's measurement ÷ runs), ms: what power follows.
    pub fn cpu_per_run_ms(&self) -> f64 {
        1e3 * (self.run_cpu_s + self.gap_cpu_s) / (self.latency_us.n.max(1) as f64)
    }

    /// CPU between runs per run, ms.
    pub fn gap_cpu_per_run_ms(&self) -> f64 {
        1e3 * self.gap_cpu_s / (self.latency_us.n.max(1) as f64)
    }
}

/// throughput.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Throughput {
    pub requests: u64,
    pub wall_s: f64,
    pub requests_per_s: f64,
    pub latency_us: Summary,
    pub cpu_pct: f64,
}

/// The library's pool counters (`lrt_pool_stats`) in a cell's JSON. The
/// library has no serde, so serde's remote derive describes the type here;
/// it stops compiling when these fields no longer match the library's.
mod pool_stats_json {
    use leanrt::pool::abi::lrt_pool_stats;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(remote = "lrt_pool_stats")]
    struct Fields {
        tasks_run: u64,
        steals: u64,
        spin_iterations: u64,
        parks: u64,
        wakeups: u64,
        workers_asleep: u64,
    }

    #[derive(Serialize, Deserialize)]
    struct Stats(#[serde(with = "Fields")] lrt_pool_stats);

    pub fn serialize<S: Serializer>(v: &Option<lrt_pool_stats>, s: S) -> Result<S::Ok, S::Error> {
        v.map(Stats).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<lrt_pool_stats>, D::Error> {
        Ok(Option::<Stats>::deserialize(d)?.map(|x| x.0))
    }
}

/// Everything one cell measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellResult {
    pub label: String,
    pub spec: CellSpec,
    pub dop: usize,
    /// Fork-join overhead of a tiny region, µs per region.
    pub fork_join_us: Option<Summary>,
    /// Share of the timed tiny regions in which some index ran on a thread
    /// other than the caller (leanrt's caller takes part in its loops, as
    /// ORT's does, and may finish a tiny region before a worker arrives).
    pub fork_join_helped_pct: Option<f64>,
    /// Second variant: one index per thread, each about `fj_item_us` of
    /// work; overhead = region time minus one index's serial time, µs.
    pub fork_join_small_overhead_us: Option<Summary>,
    /// One index's serial time in that variant, µs (median, this process).
    pub fork_join_small_item_us: Option<f64>,
    pub fork_join_small_helped_pct: Option<f64>,
    pub bursty: Vec<Bursty>,
    pub idle_after_burst: Option<IdleAfterBurst>,
    pub wake: Vec<Wake>,
    pub throughput: Option<Throughput>,
    /// request: one entry per gap.
    #[serde(default)]
    pub request: Vec<RequestRun>,
    /// request: the same run serially on the caller (no pool, no hints), µs.
    #[serde(default)]
    pub request_serial_us: Option<Summary>,
    /// section: one entry per loop count (empty where the runtime has no
    /// sections; `section_note` says so).
    #[serde(default)]
    pub section: Vec<SectionRun>,
    #[serde(default)]
    pub section_note: Option<String>,
    /// concurrent: one entry per gap.
    #[serde(default)]
    pub concurrent: Vec<ConcurrentRun>,
    /// leanrt's pool counters at the end of the cell.
    #[serde(with = "pool_stats_json", default)]
    pub counters: Option<lrt_pool_stats>,
}

/// The key columns of every pool table: a row per cell.
pub const KEY_HEADERS: [&str; 2] = ["runtime / configuration", "thr"];

impl CellResult {
    /// This cell's key cells in a table.
    pub fn keys(&self) -> Vec<String> {
        vec![self.label.clone(), self.spec.threads.to_string()]
    }

    /// Adds `turn`, a later turn of the same cell (`pool::run`), gap by
    /// gap: its concurrent runs, or its requests and serial runs.
    pub fn add_turn(&mut self, turn: CellResult) -> Result<(), String> {
        let concurrent = |r: &CellResult| r.concurrent.iter().map(|c| c.gap_ms).collect::<Vec<_>>();
        let request = |r: &CellResult| r.request.iter().map(|q| q.gap).collect::<Vec<_>>();
        if concurrent(self) != concurrent(&turn) || request(self) != request(&turn) {
            return Err(format!(
                "{}: a turn measured other gaps than the first ({:?} {:?}, the first {:?} {:?})",
                self.label,
                concurrent(&turn),
                request(&turn),
                concurrent(self),
                request(self)
            ));
        }
        for (c, t) in self.concurrent.iter_mut().zip(turn.concurrent) {
            c.add_turn(t);
        }
        for (q, t) in self.request.iter_mut().zip(turn.request) {
            q.add_turn(t);
        }
        if let (Some(s), Some(t)) = (&mut self.request_serial_us, turn.request_serial_us) {
            s.add(t);
        }
        Ok(())
    }

    /// A result with nothing measured yet.
    pub fn empty(spec: &CellSpec, dop: usize) -> CellResult {
        CellResult {
            label: spec.peer.label(),
            spec: spec.clone(),
            dop,
            fork_join_us: None,
            fork_join_helped_pct: None,
            fork_join_small_overhead_us: None,
            fork_join_small_item_us: None,
            fork_join_small_helped_pct: None,
            bursty: vec![],
            idle_after_burst: None,
            wake: vec![],
            throughput: None,
            request: vec![],
            request_serial_us: None,
            section: vec![],
            section_note: None,
            concurrent: vec![],
            counters: None,
        }
    }
}
