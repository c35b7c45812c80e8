//! What the staging benchmark measures: the upload policies as it names
//! them, and the figures of one run.
use serde::Serialize;

/// A policy as the benchmark names it: FULL with a fresh mirror (the old
/// path), FULL on a reused mirror, BOUNDED, COMPACT, AUTO (BOUNDED or
/// COMPACT per run, by the library's cost model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    FullFresh,
    Full,
    Bounded,
    Compact,
    Auto,
}

impl Policy {
    /// Every policy, in the order the tables show them.
    pub const ALL: [Policy; 5] = [
        Policy::FullFresh,
        Policy::Full,
        Policy::Bounded,
        Policy::Compact,
        Policy::Auto,
    ];

    /// A policy by its name.
    pub fn parse(s: &str) -> Result<Policy, String> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
                format!("unknown policy '{s}' (expected {})", names.join(", "))
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::FullFresh => "full-fresh",
            Policy::Full => "full",
            Policy::Bounded => "bounded",
            Policy::Compact => "compact",
            Policy::Auto => "auto",
        }
    }
}

/// One run's figures.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct RunSample {
    /// begin_run wall time.
    pub begin_ns: u64,
    /// claim_slot ×N plus the content writes, wall time.
    pub claim_ns: u64,
    /// upload wall time.
    pub upload_ns: u64,
    /// begin + claim + upload, wall time.
    pub total_ns: u64,
    /// From the upload report.
    pub zero_ns: u64,
    pub relocate_ns: u64,
    pub copy_ns: u64,
    pub bytes: u64,
    pub copies: u32,
    pub total_tasks: i32,
    /// The path the upload took (AUTO reports BOUNDED or COMPACT).
    pub path: &'static str,
    /// CUDA only: cuCtxSynchronize after the upload (not part of total_ns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_ns: Option<u64>,
    /// CUDA only: wall time inside the driver's H2D copy calls of this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h2d_ns: Option<u64>,
}
