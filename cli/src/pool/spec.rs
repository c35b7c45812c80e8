//! What a cell is: the scenarios, their sizes, the runtime under test, and
//! the spec a child process receives.
use serde::{Deserialize, Serialize};

/// The scenarios, in run order (`all` runs every one).
pub const SCENARIOS: [&str; 7] = [
    "fork_join",
    "bursty",
    "idle_after_burst",
    "wake",
    "throughput",
    "request",
    "section",
];

/// The concurrent scenario (`concurrent`): K callers in one process, one
/// cell per caller count and arrangement (`Concurrent`). Not one of `all`,
/// whose scenarios run one caller per cell.
pub const CONCURRENT: &str = "concurrent";

/// The scenarios `leanrt bench` runs.
pub const BENCH_SCENARIOS: [&str; 5] = [
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
    /// request: the shape of one inference run.
    pub run: RunShape,
    /// request: gaps between runs.
    pub request_gaps: Vec<Gap>,
    /// section: loops per section (one measurement per entry).
    pub section_loops: Vec<u32>,
    /// section: serial work of one index, µs (one index per thread and
    /// loop), and the kernel rounds it comes to.
    pub section_item_us: f64,
    pub section_iters: u32,
    /// throughput: back-to-back requests for this long.
    pub duration_ms: u64,
    /// The kernel of every index of the request-shaped work (requests,
    /// inference runs); fork_join, wake and section stay on the spin kernel.
    #[serde(default)]
    pub work: WorkKind,
    /// concurrent: gaps between one caller's runs, ms (0 = back to back),
    /// one measurement each.
    #[serde(default)]
    pub concurrent_gaps_ms: Vec<f64>,
    /// concurrent: runs per caller and gap (0: as many as fit in
    /// `concurrent_ms`).
    #[serde(default)]
    pub concurrent_runs: u32,
    #[serde(default)]
    pub concurrent_ms: u64,
    /// concurrent: turns each caller count's cells run in (`pool::run`);
    /// a cell's own spec holds its share of the runs or the time.
    #[serde(default = "one_slice")]
    pub concurrent_slices: u32,
    /// request: turns a request-only cell runs in (`pool::run`), every such
    /// cell of a thread count once per turn; a cell's own spec holds its
    /// share of the requests.
    #[serde(default = "one_slice")]
    pub request_slices: u32,
}

impl Sizes {
    /// The turns a concurrent cell runs in (`pool::run`):
    /// `concurrent_slices`, but never more than its runs per caller and gap
    /// (each turn runs one at least).
    pub fn concurrent_turns(&self) -> u32 {
        match self.concurrent_runs {
            0 => self.concurrent_slices.max(1),
            runs => self.concurrent_slices.clamp(1, runs),
        }
    }

    /// The turns a request-only cell runs in (`pool::run`):
    /// `request_slices`, but never more than its requests per gap (each
    /// turn runs one at least).
    pub fn request_turns(&self) -> u32 {
        self.request_slices.clamp(1, self.requests.max(1))
    }
}

fn one_slice() -> u32 {
    1
}

/// The kernel of one index (`workload::index`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WorkKind {
    /// Calibrated spin: rounds of a multiply-xorshift mix, no memory traffic.
    #[default]
    Spin,
    /// One SGEMM tile on per-thread buffers (`workload::GEMM_*`).
    Sgemm,
}

impl WorkKind {
    pub const NAMES: [&'static str; 2] = ["spin", "sgemm"];

    pub fn parse(s: &str) -> Result<WorkKind, String> {
        match s.trim() {
            "spin" => Ok(WorkKind::Spin),
            "sgemm" => Ok(WorkKind::Sgemm),
            _ => Err(format!(
                "unknown work kind '{s}' (expected {})",
                WorkKind::NAMES.join(" or ")
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WorkKind::Spin => "spin",
            WorkKind::Sgemm => "sgemm",
        }
    }
}

/// How the callers of a concurrent cell share the runtime.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Arrangement {
    /// One pool (ORT: one session) that every caller runs on.
    Shared,
    /// One pool (ORT: one session with its own intra-op pool) per caller.
    PerCaller,
    /// ORT only: a session per caller, every session on the environment's
    /// global thread pools (`DisablePerSessionThreads`).
    Global,
    /// ORT only: a session per caller with `intra_op_num_threads=1`.
    OneThread,
    /// The baseline: one thread per caller, no pool at all (the run on the
    /// caller alone).
    Serial,
}

impl Arrangement {
    /// leanrt's arrangements, in table order.
    pub const LEANRT: [Arrangement; 2] = [Arrangement::Shared, Arrangement::PerCaller];
    /// ONNX Runtime's, in table order.
    pub const ORT: [Arrangement; 4] = [
        Arrangement::PerCaller,
        Arrangement::Shared,
        Arrangement::Global,
        Arrangement::OneThread,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Arrangement::Shared => "shared",
            Arrangement::PerCaller => "per caller",
            Arrangement::Global => "global pools",
            Arrangement::OneThread => "1 thread each",
            Arrangement::Serial => "no pool",
        }
    }
}

/// A concurrent cell: `callers` request threads in one arrangement.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Concurrent {
    pub callers: usize,
    pub arrangement: Arrangement,
}

#[cfg(test)]
impl Sizes {
    /// Sizes small enough for a cell to run in a unit test.
    pub fn tiny() -> Sizes {
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
            work: WorkKind::Spin,
            concurrent_gaps_ms: vec![0.0, 0.1],
            concurrent_runs: 2,
            concurrent_ms: 1,
            concurrent_slices: 1,
            request_slices: 1,
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
}

/// Which runtime a cell runs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum PeerKind {
    Leanrt {
        config: String,
    },
    Rayon,
    OpenMp {
        wait_policy: String,
    },
    /// ONNX Runtime's own intra-op pool (`peers::ort`) with one
    /// configuration, its library and that library's version. `--peers ort`
    /// yields one with an empty `config`; `cells` makes one cell of it per
    /// configuration that uses ORT's keys only.
    Ort {
        config: String,
        library: String,
        version: String,
    },
    /// Another build of leanrt's pool (`peers::leanrt_lib`, `--leanrt-libs`):
    /// its library, called through the C ABI, with one configuration.
    /// `--leanrt-libs` yields one with an empty `config`; `cells` makes one
    /// cell of it per configuration, beside leanrt's own.
    LeanrtLib {
        config: String,
        library: String,
        tag: String,
    },
}

impl PeerKind {
    pub fn label(&self) -> String {
        match self {
            PeerKind::Leanrt { config } => format!("leanrt {config}"),
            PeerKind::Rayon => "rayon".into(),
            PeerKind::OpenMp { wait_policy } => format!("openmp {wait_policy}"),
            PeerKind::Ort {
                config, version, ..
            } => format!("ort {version} {config}"),
            PeerKind::LeanrtLib { config, tag, .. } => format!("leanrt@{tag} {config}"),
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
    /// Run with one competing busy thread per logical core (in a separate
    /// process, so that the cell's CPU figures stay its own).
    #[serde(default)]
    pub oversubscribe: bool,
    /// The concurrent scenario's cell (then `scenarios` is not used).
    #[serde(default)]
    pub concurrent: Option<Concurrent>,
}

impl CellSpec {
    /// A request-only cell (the request scenario and no other).
    fn request_only(&self) -> bool {
        self.concurrent.is_none() && self.scenarios.len() == 1 && self.scenarios[0] == "request"
    }

    /// The cells that run in turns together (`pool::run`), of one thread
    /// count: the concurrent cells of one caller count (Some(K)), the
    /// request-only cells (Some(0)); None: a cell that runs alone.
    pub fn turn_group(&self) -> Option<usize> {
        match &self.concurrent {
            Some(c) => Some(c.callers),
            None => self.request_only().then_some(0),
        }
    }

    /// How many turns this cell runs in (`pool::run`):
    /// `Sizes::concurrent_turns` for a concurrent cell,
    /// `Sizes::request_turns` for a request-only one, 1 for any other.
    pub fn turns(&self) -> u32 {
        match self.turn_group() {
            Some(0) => self.sizes.request_turns(),
            Some(_) => self.sizes.concurrent_turns(),
            None => 1,
        }
    }

    /// Turn `turn` of `self.turns()`: its share of the runs per caller and
    /// gap, or of the requests per gap (the shares add up to them), or of
    /// the time (rounded up).
    pub fn turn_of(&self, turn: u32) -> CellSpec {
        let mut s = self.clone();
        let turns = self.turns();
        let share = |n: u32| n / turns + u32::from(turn < n % turns);
        if self.concurrent.is_some() {
            s.sizes.concurrent_runs = share(s.sizes.concurrent_runs);
            s.sizes.concurrent_ms = s.sizes.concurrent_ms.div_ceil(u64::from(turns)).max(1);
        } else {
            s.sizes.requests = share(s.sizes.requests);
        }
        s
    }
}

/// request: one inference run = spinning enabled (where the configuration
/// asks for hints) → a serial preamble → `rounds` parallel loops with serial
/// work between them → spinning disabled. Sizes in µs of serial work on this
/// machine, and the kernel rounds they come to (`sizes_for`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunShape {
    pub preamble_us: f64,
    pub rounds: u32,
    /// Serial work of one parallel round (split over the loop's indices).
    pub round_us: f64,
    /// Serial work between two rounds.
    pub between_us: f64,
    /// Indices of kernel calls (`Sizes::iters` rounds each) for the above.
    pub preamble_items: u64,
    pub round_items: u64,
    pub between_items: u64,
}

/// A gap between requests: a fixed length, or exponentially distributed
/// around a mean (a fixed seed, so every cell sees the same gaps).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Gap {
    pub mean_ms: f64,
    pub exponential: bool,
}

impl Gap {
    /// Parses `5` (ms) or `exp5` (exponential, mean 5 ms).
    pub fn parse(s: &str) -> Result<Gap, String> {
        let t = s.trim();
        let (exponential, num) = match t.strip_prefix("exp") {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        match num.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(Gap {
                mean_ms: v,
                exponential,
            }),
            _ => Err(format!(
                "'{s}' is not a gap (a positive number of ms, or expN for exponential gaps of mean N ms)"
            )),
        }
    }

    pub fn label(&self) -> String {
        if self.exponential {
            format!("exp {} ms", self.mean_ms)
        } else {
            format!("{} ms", self.mean_ms)
        }
    }
}
