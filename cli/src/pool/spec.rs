//! What a cell is: the scenarios, their sizes, the runtime under test, and
//! the spec a child process receives.
use serde::{Deserialize, Serialize};

/// The scenarios, in run order.
pub const SCENARIOS: [&str; 5] = [
    "fork_join",
    "bursty",
    "idle_after_burst",
    "wake",
    "throughput",
];

/// Idle periods before a wake-latency probe, in ms.
pub const WAKE_IDLE_MS: [f64; 3] = [0.1, 1.0, 50.0];

/// Sizes of the scenarios.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sizes {
    /// fork_join: regions timed (after 10% warm-up).
    pub regions: u32,
    /// fork_join, second variant: rounds of the work kernel per index so that
    /// one index takes about `--fj-item-us` (0: variant skipped).
    pub fj_iters: u32,
    /// bursty: requests per gap.
    pub requests: u32,
    /// bursty: gaps between requests, ms.
    pub gaps_ms: Vec<f64>,
    /// One request: a parallel loop of `items` indices ...
    pub items: u64,
    /// ... each doing `iters` rounds of the work kernel.
    pub iters: u32,
    /// Estimated cycles per index (passed to leanrt's cost model).
    pub cost_cycles: f64,
    /// idle_after_burst: back-to-back requests for this long ...
    pub burst_ms: u64,
    /// ... then CPU time is measured over this idle period.
    pub idle_ms: u64,
    /// wake: probes per idle period (50 ms: a third of it, at least 3).
    pub wake_reps: u32,
    /// throughput: back-to-back requests for this long.
    pub duration_ms: u64,
}

/// Which runtime a cell runs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum PeerKind {
    Leanrt { config: String },
    Rayon,
    OpenMp { wait_policy: String },
}

impl PeerKind {
    pub fn label(&self) -> String {
        match self {
            PeerKind::Leanrt { config } => format!("leanrt {config}"),
            PeerKind::Rayon => "rayon".into(),
            PeerKind::OpenMp { wait_policy } => format!("openmp {wait_policy}"),
        }
    }
}

/// What one child measures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellSpec {
    pub peer: PeerKind,
    pub threads: usize,
    pub scenarios: Vec<String>,
    pub sizes: Sizes,
}
