//! `leanrt info` and the machine line every report starts with.
use leanrt::pool;
use serde::Serialize;

/// The facts about this machine that every report carries.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub leanrt_version: String,
    pub cpu_model: String,
    pub physical_cores: usize,
    pub logical_cores: usize,
    pub kernel: String,
    /// /proc/loadavg's 1-minute load when the report started: other work on
    /// the machine skews every figure.
    pub load_average_1m: f64,
}

impl Machine {
    /// Reads the machine facts (cheap; no calibration).
    pub fn detect() -> Machine {
        Machine {
            leanrt_version: leanrt::VERSION.to_string(),
            cpu_model: pool::cpu::cpu_model(),
            physical_cores: pool::cpu::physical_cores(),
            logical_cores: pool::cpu::logical_cores(),
            kernel: crate::stats::kernel_release(),
            load_average_1m: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|l| l.split_whitespace().next().and_then(|v| v.parse().ok()))
                .unwrap_or(f64::NAN),
        }
    }

    /// "machine: <cpu>, <p> physical / <l> logical cores, Linux <k>, load
    /// <l> (<version>)", wrapped to the output width.
    pub fn line(&self) -> String {
        crate::format::wrap(
            "machine: ",
            &format!(
                "{}, {} physical / {} logical cores, Linux {}, load {:.2} ({})",
                if self.cpu_model.is_empty() {
                    "unknown CPU"
                } else {
                    &self.cpu_model
                },
                self.physical_cores,
                self.logical_cores,
                self.kernel,
                self.load_average_1m,
                self.leanrt_version
            ),
        )
    }
}

/// A backend and whether it can be used here.
#[derive(Clone, Debug, Serialize)]
pub struct BackendInfo {
    pub name: String,
    pub available: bool,
    /// What it is (CUDA: device count, device 0's name and memory, driver).
    pub detail: Option<String>,
    /// Why it is unavailable, when it is.
    pub reason: Option<String>,
}

/// Everything `leanrt info` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Info {
    pub machine: Machine,
    /// The CPU architecture this build runs (`x86_64`, `aarch64`).
    pub arch: String,
    pub hybrid: bool,
    /// WAITPKG (TPAUSE); always false off x86-64.
    pub waitpkg: bool,
    /// The instruction one spin pause executes (`pause`, `tpause (C0.1)`,
    /// `isb sy`).
    pub pause_instruction: String,
    pub calibrated_pause_ns: f64,
    /// Degree of parallelism of a pool created with default options
    /// (num_threads 0 = physical cores, ×4 on hybrid CPUs).
    pub default_degree_of_parallelism: i32,
    pub backends: Vec<BackendInfo>,
    /// Whether the OpenMP peer was built, and libgomp's default thread count.
    pub openmp_peer: bool,
    pub openmp_max_threads: i32,
}

/// The host backend always works; CUDA where device 0 opens.
pub fn backends() -> Vec<BackendInfo> {
    let mut out = vec![BackendInfo {
        name: "host".into(),
        available: true,
        detail: None,
        reason: None,
    }];
    match crate::bind::cuda_detail(0) {
        Ok(detail) => out.push(BackendInfo {
            name: "cuda".into(),
            available: true,
            detail,
            reason: None,
        }),
        Err(e) => out.push(BackendInfo {
            name: "cuda".into(),
            available: false,
            detail: None,
            reason: Some(e),
        }),
    }
    out
}

/// Gathers the info (runs the one-time pause calibration).
pub fn gather() -> Result<Info, String> {
    let dop = crate::pool::peers::leanrt_pool::default_degree_of_parallelism()?;
    Ok(Info {
        machine: Machine::detect(),
        arch: std::env::consts::ARCH.to_owned(),
        hybrid: pool::cpu::is_hybrid(),
        waitpkg: pool::cpu::has_waitpkg(),
        pause_instruction: pool::spin::pause_instruction().to_owned(),
        calibrated_pause_ns: pool::spin::calibrated_pause_ns(),
        default_degree_of_parallelism: dop,
        backends: backends(),
        openmp_peer: crate::pool::peers::openmp::OPENMP_BUILT,
        openmp_max_threads: crate::pool::peers::openmp::omp_max_threads(),
    })
}

/// The human-readable report.
pub fn render(info: &Info) -> String {
    let m = &info.machine;
    let yn = |b: bool| if b { "yes" } else { "no" };
    let mut s = String::new();
    s.push_str(&format!("version:             {}\n", m.leanrt_version));
    s.push_str(&format!("cpu:                 {}\n", m.cpu_model));
    s.push_str(&format!("physical cores:      {}\n", m.physical_cores));
    s.push_str(&format!("logical cores:       {}\n", m.logical_cores));
    s.push_str(&format!("architecture:        {}\n", info.arch));
    s.push_str(&format!("hybrid:              {}\n", yn(info.hybrid)));
    if info.arch == "x86_64" {
        s.push_str(&format!("waitpkg (tpause):    {}\n", yn(info.waitpkg)));
    } else {
        s.push_str("waitpkg (tpause):    n/a (x86-64 only)\n");
    }
    s.push_str(&format!(
        "pause:               {}, {:.2} ns (calibrated)\n",
        info.pause_instruction, info.calibrated_pause_ns
    ));
    s.push_str(&format!(
        "default parallelism: {}\n",
        info.default_degree_of_parallelism
    ));
    s.push_str(&format!("kernel:              Linux {}\n", m.kernel));
    let list: Vec<String> = info
        .backends
        .iter()
        .map(|b| match (&b.reason, b.available) {
            (_, true) => match &b.detail {
                Some(d) => format!("{} ({d})", b.name),
                None => b.name.clone(),
            },
            (Some(r), false) => format!("{} unavailable ({r})", b.name),
            (None, false) => format!("{} unavailable", b.name),
        })
        .collect();
    s.push_str(&format!("backends:            {}\n", list.join(", ")));
    if info.openmp_peer {
        s.push_str(&format!(
            "openmp peer:         built ({} threads by default)\n",
            info.openmp_max_threads
        ));
    } else {
        s.push_str("openmp peer:         not built (no OpenMP C compiler)\n");
    }
    s
}
