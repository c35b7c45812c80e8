//! The command line: every subcommand, flag, help text and default, once.
//!
//! Built with clap's builder API rather than its derive macros: the derive
//! macros would enable features of `syn` that the library's build script
//! shares, so `cargo build -p leanrt` and `cargo run -p leanrt-cli` would
//! build the library with different dependency features and rebuild it each
//! time one follows the other.
//!
//! Every value is checked while the line is parsed (numbers, names, the
//! library's limits, whether an output file can be written), so a bad line
//! fails at once with one line and exit status 2, before any work.
use crate::bind::{self, BindPlan, Policy};
use crate::lists::dedup;
use crate::pool::{self, Gap, PeerKind, WorkKind};
use clap::{Arg, ArgAction, ArgMatches, Command};
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// What the command line asks for.
pub enum Invocation {
    Bench(BenchArgs),
    Bind(BindArgs),
    Pool(Box<PoolArgs>),
    Info(InfoArgs),
    /// Internal: one pool-benchmark cell, its spec as JSON.
    PoolCell(String),
    /// Internal: N busy threads until stdin closes (`--oversubscribe`).
    Busy(usize),
}

/// `--json`, `--svg`, `--quiet`.
#[derive(Clone, Debug, Default)]
pub struct Output {
    pub json: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    pub quiet: bool,
}

#[derive(Clone, Debug)]
pub struct BenchArgs {
    /// Thread count of the pool half (already resolved: 0 = physical cores).
    pub threads: usize,
    pub peers: Vec<PeerKind>,
    /// Tiny sizes everywhere (for the test suite).
    pub smoke: bool,
    pub out: Output,
}

#[derive(Clone, Debug)]
pub struct BindArgs {
    /// What to measure (not checked yet for task counts that fit no window).
    pub plan: BindPlan,
    pub bandwidth: bool,
    /// `--layout v2`: the reference's current image (leanrt against the
    /// reference's own path; the policies are not used).
    pub layout_v2: bool,
    /// --bandwidth sizes, MB.
    pub sizes: Vec<u64>,
    pub out: Output,
}

#[derive(Clone, Debug)]
pub struct PoolArgs {
    /// Thread counts, resolved (0 = physical cores) and without repeats.
    pub threads: Vec<usize>,
    pub config: Vec<String>,
    pub scenario: Vec<String>,
    pub peers: Vec<PeerKind>,
    pub regions: u32,
    pub fj_item_us: f64,
    pub requests: u32,
    pub gaps_ms: Vec<f64>,
    pub work_us: f64,
    pub burst_ms: u64,
    pub idle_ms: u64,
    pub wake_reps: u32,
    pub duration_ms: u64,
    pub request_gaps: Vec<Gap>,
    pub preamble_us: f64,
    pub rounds: u32,
    pub round_us: f64,
    pub between_us: f64,
    pub section_loops: Vec<u32>,
    pub section_item_us: f64,
    pub oversubscribe: bool,
    /// The kernel of the request-shaped work.
    pub work: WorkKind,
    /// concurrent: caller counts (K), gaps (ms, 0 = back to back), runs per
    /// caller and gap (0: by `concurrent_ms`).
    pub callers: Vec<usize>,
    pub concurrent_gaps: Vec<f64>,
    pub runs: u32,
    pub concurrent_ms: u64,
    /// concurrent: slices each caller count's cells are run in, in turn.
    pub concurrent_slices: u32,
    /// request: slices a thread count's request-only cells are run in, in
    /// turn.
    pub request_slices: u32,
    /// ONNX Runtime libraries for the ort peer (empty: the one it finds).
    pub ort_libs: Vec<PathBuf>,
    /// Other builds of leanrt, `TAG=PATH` or `PATH` (checked by the plan).
    pub leanrt_libs: Vec<String>,
    pub out: Output,
}

#[derive(Clone, Debug)]
pub struct InfoArgs {
    pub json: Option<PathBuf>,
}

/// Parses the process's command line. Help and version exit 0; a usage
/// error prints one line and exits 2.
pub fn parse() -> Invocation {
    match command().try_get_matches() {
        Ok(m) => invocation(&m),
        Err(e) => usage_exit(e),
    }
}

/// The defaults of `leanrt pool` (`leanrt bench` starts from them).
pub fn pool_defaults() -> PoolArgs {
    pool_args(&pool_command().get_matches_from(["pool"]))
}

fn usage_exit(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ => {
            let text = e.render().to_string();
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            eprintln!("{first} (see --help)");
            std::process::exit(2)
        }
    }
}

fn invocation(m: &ArgMatches) -> Invocation {
    match m.subcommand() {
        Some(("bench", m)) => Invocation::Bench(BenchArgs {
            threads: one::<usize>(m, "threads"),
            peers: dedup(flat::<Vec<PeerKind>>(m, "peers")),
            smoke: m.get_flag("smoke"),
            out: output(m),
        }),
        Some(("bind", m)) => Invocation::Bind(BindArgs {
            plan: BindPlan {
                windows: dedup(many(m, "window")),
                tasks: dedup(many(m, "tasks")),
                policies: dedup(many(m, "policy")),
                backend: one(m, "backend"),
                runs: one(m, "runs"),
                min_time_ms: one(m, "min-time-ms"),
                max_runs: one(m, "max-runs"),
                warmup: one(m, "warmup"),
                pin_mirror: m.get_flag("pin-mirror"),
            },
            bandwidth: m.get_flag("bandwidth"),
            layout_v2: m.get_one::<String>("layout").map(String::as_str) == Some("v2"),
            sizes: dedup(many(m, "sizes")),
            out: output(m),
        }),
        Some(("pool", m)) => Invocation::Pool(Box::new(pool_args(m))),
        Some(("info", m)) => Invocation::Info(InfoArgs {
            json: m.get_one::<PathBuf>("json").cloned(),
        }),
        Some(("__pool-cell", m)) => Invocation::PoolCell(one(m, "spec")),
        Some(("__busy", m)) => Invocation::Busy(one(m, "threads")),
        _ => unreachable!("clap requires a subcommand"),
    }
}

fn pool_args(m: &ArgMatches) -> PoolArgs {
    PoolArgs {
        threads: dedup(many(m, "threads")),
        config: dedup(many(m, "config")),
        scenario: dedup(flat::<Vec<String>>(m, "scenario")),
        peers: dedup(flat::<Vec<PeerKind>>(m, "peers")),
        regions: one(m, "regions"),
        fj_item_us: one(m, "fj-item-us"),
        requests: one(m, "requests"),
        gaps_ms: dedup(many(m, "gaps")),
        work_us: one(m, "work-us"),
        burst_ms: one(m, "burst-ms"),
        idle_ms: one(m, "idle-ms"),
        wake_reps: one(m, "wake-reps"),
        duration_ms: one(m, "duration-ms"),
        request_gaps: dedup(many(m, "request-gaps")),
        preamble_us: one(m, "preamble-us"),
        rounds: one(m, "rounds"),
        round_us: one(m, "round-us"),
        between_us: one(m, "between-us"),
        section_loops: dedup(many(m, "section-loops")),
        section_item_us: one(m, "section-item-us"),
        oversubscribe: m.get_flag("oversubscribe"),
        work: one(m, "work"),
        callers: dedup(many(m, "callers")),
        concurrent_gaps: dedup(many(m, "concurrent-gaps")),
        runs: one(m, "runs"),
        concurrent_ms: one(m, "concurrent-ms"),
        concurrent_slices: one(m, "concurrent-slices"),
        request_slices: one(m, "request-slices"),
        ort_libs: dedup(many(m, "ort-libs")),
        leanrt_libs: dedup(many(m, "leanrt-libs")),
        out: output(m),
    }
}

fn output(m: &ArgMatches) -> Output {
    Output {
        json: m.get_one::<PathBuf>("json").cloned(),
        svg: m.get_one::<PathBuf>("svg").cloned(),
        quiet: m.get_flag("quiet"),
    }
}

fn one<T: Clone + Send + Sync + 'static>(m: &ArgMatches, id: &str) -> T {
    m.get_one::<T>(id)
        .cloned()
        .unwrap_or_else(|| panic!("--{id} has a default"))
}

fn many<T: Clone + Send + Sync + 'static>(m: &ArgMatches, id: &str) -> Vec<T> {
    m.get_many::<T>(id)
        .map(|v| v.cloned().collect())
        .unwrap_or_default()
}

/// For list items that each stand for several values (`openmp`, `all`).
fn flat<T: Clone + Send + Sync + 'static + IntoIterator>(m: &ArgMatches, id: &str) -> Vec<T::Item> {
    many::<T>(m, id).into_iter().flatten().collect()
}

// ---- the command ----------------------------------------------------------

/// The whole command line.
pub fn command() -> Command {
    Command::new("leanrt")
        .version(leanrt::VERSION.trim_start_matches("leanrt "))
        .about("Benchmarks of leanrt's staging (runtime maker) and thread pool on this machine")
        .propagate_version(true)
        .max_term_width(crate::format::WIDTH)
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(bench_command())
        .subcommand(bind_command())
        .subcommand(pool_command())
        .subcommand(
            Command::new("info")
                .about("Version, CPU facts, calibrated pause time, default parallelism, backends")
                .arg(file_arg("json", "Write the facts as JSON to FILE")),
        )
        .subcommand(
            Command::new("__pool-cell")
                .hide(true)
                .about("Internal: runs one pool-benchmark cell and prints its JSON result")
                .arg(Arg::new("spec").required(true)),
        )
        .subcommand(
            Command::new("__busy")
                .hide(true)
                .about("Internal: keeps N threads busy until stdin closes (--oversubscribe)")
                .arg(
                    Arg::new("threads")
                        .required(true)
                        .value_parser(whole::<usize>(1, None)),
                ),
        )
}

fn bench_command() -> Command {
    with_output(
        Command::new("bench")
            .about(
                "Both halves with quick defaults (about a minute): a staging table, three pool \
                 tables and a headline per half",
            )
            .arg(
                flag_arg(
                    "threads",
                    "N",
                    "Thread count of the pool half (0 = physical cores)",
                )
                .default_value("0")
                .value_parser(threads),
            )
            .arg(
                list_arg(
                    "peers",
                    "Peers of the pool half: rayon, openmp, openmp-passive, openmp-active, ort, none",
                )
                .default_value("rayon,openmp")
                .value_parser(pool::parse_peer),
            )
            .arg(
                Arg::new("smoke")
                    .long("smoke")
                    .hide(true)
                    .action(ArgAction::SetTrue)
                    .help("Tiny sizes everywhere (for the test suite): checks the plumbing only"),
            ),
    )
}

fn bind_command() -> Command {
    with_output(
        Command::new("bind")
            .about("Staging: per-run cost of each upload policy across windows and task counts")
            .arg(
                list_arg("window", "Task windows (powers of two >= 4 whose image fits in INT32_MAX bytes)")
                    .default_value("16384,131072")
                    .value_parser(bind::parse_window),
            )
            .arg(
                list_arg("tasks", "Tasks claimed per run (counts above a window are skipped for it)")
                    .default_value("0,64,1024,16384")
                    .value_parser(whole::<u64>(0, None)),
            )
            .arg(
                list_arg("policy", "Upload policies: full-fresh, full, bounded, compact, auto")
                    .default_value("full-fresh,full,bounded,compact,auto")
                    .value_parser(Policy::parse),
            )
            .arg(
                flag_arg("backend", "NAME", "Device backend: host, cuda or cuda:N")
                    .default_value("host")
                    .value_parser(bind::parse_backend),
            )
            .arg(count("runs", "Measured runs per cell, at least (after the warm-up runs)", "20"))
            .arg(
                flag_arg(
                    "min-time-ms",
                    "MS",
                    "Cheap cells run more times, until this much time was measured (0: exactly --runs)",
                )
                .default_value("200")
                .value_parser(whole::<u64>(0, None)),
            )
            .arg(count("max-runs", "Cap on the runs added by --min-time-ms", "1000"))
            .arg(count(
                "warmup",
                "Warm-up runs per cell (the first one's page faults are reported apart)",
                "2",
            ))
            .arg(switch(
                "pin-mirror",
                "Create the makers with LRT_MAKER_PIN_MIRROR (page-locks what the uploads copy \
                 from, growing with N, for faster DMA with cuda; on the host backend it mlocks, \
                 so touches, those pages)",
            ))
            .arg(
                flag_arg(
                    "layout",
                    "V1|V2",
                    "Image layout: v1 (the reference at #1659) or v2 (its current image: \
                     leanrt's maker against the reference's own per-run path, beside one plain \
                     copy of the compact bytes; --policy and --pin-mirror not used)",
                )
                .default_value("v1")
                .value_parser(["v1", "v2"]),
            )
            .arg(switch(
                "bandwidth",
                "Instead: copy_to_device bandwidth from pageable and pinned host memory",
            ))
            .arg(
                list_arg("sizes", "Sizes for --bandwidth, in MB (10^6 bytes), 1 to 4096")
                    .default_value("1,16,81")
                    .value_parser(whole::<u64>(1, Some(4096))),
            ),
    )
}

/// `leanrt pool`; its defaults are the pool half's of `leanrt bench`
/// unless `bench` says otherwise (`bench::pool_args`).
fn pool_command() -> Command {
    let presets = pool::PRESETS.join(", ");
    with_output(
        Command::new("pool")
            .about("Thread pool: ORT spin presets against rayon and OpenMP across scenarios")
            .arg(
                list_arg("threads", "Thread counts (degree of parallelism; 0 = physical cores)")
                    .default_value("0")
                    .value_parser(threads),
            )
            .arg(
                list_arg(
                    "config",
                    format!(
                        "leanrt configurations: a preset ({presets}) or custom \
                         \"key=value;key=value\" ORT config entries, which may start with a \
                         preset (\"spin_1000_backoff_8;{stop}=1\")",
                        stop = leanrt::pool::abi::LRT_POOL_KEY_FORCE_SPINNING_STOP
                    ),
                )
                .default_value("default,legacy_spin,no_spin,spin_1000,backoff_8,spin_1000_backoff_8")
                .value_parser(pool::check_config),
            )
            .arg(
                list_arg(
                    "scenario",
                    format!(
                        "Scenarios: {}, or all; and {concurrent} (not part of all): K request \
                         threads in one process (--callers), each running the request scenario's \
                         runs, on one shared pool, a pool per caller and no pool (one thread per \
                         caller, the baseline), and with --peers ort on ORT's arrangements. \
                         request models inference runs: where the \
                         configuration sets {stop}=1, enable spinning → a \
                         serial preamble → --rounds parallel loops with serial work between them → \
                         disable spinning; then a gap (--request-gaps). section times k loops \
                         inside one parallel section against k separate loops (--section-loops)",
                        pool::SCENARIOS.join(", "),
                        stop = leanrt::pool::abi::LRT_POOL_KEY_FORCE_SPINNING_STOP,
                        concurrent = pool::CONCURRENT,
                    ),
                )
                .default_value("all")
                .value_parser(pool::parse_scenario),
            )
            .arg(
                list_arg(
                    "peers",
                    "Other runtimes: rayon, openmp (= openmp-passive + openmp-active), ort (ONNX Runtime's own pool with each configuration; its library from ORT_DYLIB_PATH or an installed onnxruntime wheel), none",
                )
                .default_value("rayon,openmp")
                .value_parser(pool::parse_peer),
            )
            .arg(count("regions", "fork_join: regions timed", "2000"))
            .arg(micros(
                "fj-item-us",
                "fork_join, second variant: work per index, µs (0 = skip the variant)",
                "5",
                0.0,
            ))
            .arg(count("requests", "bursty and request: requests per gap", "100"))
            .arg(
                flag_arg(
                    "request-slices",
                    "N",
                    "request (as the only scenario): run a thread count's cells in N turns, \
                     every cell once per turn for 1/N of --requests (the order mirrored every \
                     other turn), and merge each cell's turns, so that a machine whose speed \
                     drifts during the run weighs on every cell alike",
                )
                .default_value("5")
                .value_parser(whole::<u32>(1, Some(1000))),
            )
            .arg(
                list_arg("gaps", "bursty: gaps between requests, ms")
                    .default_value("1,10")
                    .value_parser(positive_number),
            )
            .arg(micros(
                "work-us",
                "Serial work of one request, µs (the loop is sized on this machine)",
                "500",
                f64::MIN_POSITIVE,
            ))
            .arg(millis("burst-ms", "idle_after_burst: burst length, ms", "200"))
            .arg(millis(
                "idle-ms",
                "idle_after_burst: idle period measured after the burst, ms",
                "1000",
            ))
            .arg(count(
                "wake-reps",
                "wake: probes per idle period (0.1, 1 ms; a third of it for 50 ms)",
                "30",
            ))
            .arg(millis("duration-ms", "throughput: duration, ms", "1000"))
            .arg(
                list_arg(
                    "request-gaps",
                    "request: gaps between runs: N (ms) or expN (exponential, mean N ms)",
                )
                .default_value("1,10,exp5")
                .value_parser(Gap::parse),
            )
            .arg(micros(
                "preamble-us",
                "request: serial work at the start of a run, µs",
                "20",
                0.0,
            ))
            .arg(count("rounds", "request: parallel rounds (loops) per run", "32"))
            .arg(micros(
                "round-us",
                "request: serial work of one round, µs (split over the loop's indices). The \
                 default is large enough for ORT's cost model to run the round on the team: below \
                 ~70 µs of honestly costed work (Eigen's 100000 cycles of startup) a loop runs on \
                 the caller alone, pool or not",
                "200",
                f64::MIN_POSITIVE,
            ))
            .arg(micros(
                "between-us",
                "request: serial work between two rounds, µs",
                "5",
                0.0,
            ))
            .arg(
                list_arg(
                    "section-loops",
                    "section: loops per parallel section (each compared with as many separate loops)",
                )
                .default_value("4,16")
                .value_parser(whole::<u32>(1, None)),
            )
            .arg(micros(
                "section-item-us",
                "section: serial work of one index, µs (one index per thread and loop)",
                "1",
                f64::MIN_POSITIVE,
            ))
            .arg(
                flag_arg(
                    "work",
                    "KIND",
                    "Kernel of every index of the requests and inference runs: spin (calibrated, \
                     no memory traffic) or sgemm (one SGEMM tile per index on the running \
                     thread's own buffers: a cache footprint)",
                )
                .default_value("spin")
                .value_parser(WorkKind::parse),
            )
            .arg(
                list_arg("callers", "concurrent: request threads per cell (K)")
                    .visible_alias("k")
                    .default_value("1,2,4,8")
                    .value_parser(whole::<usize>(1, Some(256))),
            )
            .arg(
                list_arg(
                    "concurrent-gaps",
                    "concurrent: gap after each of a caller's runs, ms (0 = back to back)",
                )
                .default_value("0,1")
                .value_parser(non_negative_number),
            )
            .arg(
                flag_arg(
                    "runs",
                    "N",
                    "concurrent: runs per caller and gap (0 = as many as --concurrent-ms allows)",
                )
                .default_value("0")
                .value_parser(whole::<u32>(0, None)),
            )
            .arg(millis(
                "concurrent-ms",
                "concurrent: how long each caller runs per gap, ms (unless --runs)",
                "1000",
            ))
            .arg(
                flag_arg(
                    "concurrent-slices",
                    "N",
                    "concurrent: run each caller count's cells in N turns, every cell once per \
                     turn for 1/N of --concurrent-ms (or of --runs; the order mirrored every \
                     other turn), and merge each cell's turns, so that a machine whose speed \
                     drifts during the run weighs on every cell alike",
                )
                .default_value("5")
                .value_parser(whole::<u32>(1, Some(1000))),
            )
            .arg(
                list_arg(
                    "ort-libs",
                    "ONNX Runtime libraries for --peers ort, one row set each (e.g. 1.31.1 and \
                     1.32.0 as scripts/install-ort.sh --version installs them); default: the one \
                     ORT_DYLIB_PATH or the onnxruntime wheel gives",
                )
                .value_parser(clap::value_parser!(PathBuf)),
            )
            .arg(list_arg(
                "leanrt-libs",
                "Other builds of leanrt's pool, each TAG=PATH (or PATH: tagged lib1, lib2, ...) \
                 naming its libleanrt.so: every configuration also runs on each of them, \
                 through the C ABI, in the same run as this build (rows 'leanrt@TAG \
                 CONFIG'; an A/B of two commits on the same work sizes and turns; not the \
                 concurrent scenario)",
            ))
            .arg(switch(
                "oversubscribe",
                "Run every cell with one competing busy thread per logical core (a separate \
                 process, as other programs on a shared server)",
            )),
    )
}

fn with_output(c: Command) -> Command {
    c.arg(file_arg("json", "Write every raw figure as JSON to FILE"))
        .arg(file_arg("svg", "Draw the results as SVG charts into FILE"))
        .arg(
            Arg::new("quiet")
                .long("quiet")
                .short('q')
                .action(ArgAction::SetTrue)
                .help("No progress on stderr"),
        )
}

// ---- argument shapes --------------------------------------------------------

fn flag_arg(name: &'static str, value: &'static str, help: impl Into<String>) -> Arg {
    Arg::new(name)
        .long(name)
        .value_name(value)
        .help(help.into())
        .allow_negative_numbers(true)
}

/// A comma-separated list.
fn list_arg(name: &'static str, help: impl Into<String>) -> Arg {
    flag_arg(name, "LIST", help).value_delimiter(',')
}

fn switch(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .action(ArgAction::SetTrue)
        .help(help)
}

fn file_arg(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .value_name("FILE")
        .help(help)
        .value_parser(writable_file)
}

/// A count >= 1.
fn count(name: &'static str, help: &'static str, default: &'static str) -> Arg {
    flag_arg(name, "N", help)
        .default_value(default)
        .value_parser(whole::<u32>(1, None))
}

/// A duration >= 1 ms.
fn millis(name: &'static str, help: &'static str, default: &'static str) -> Arg {
    flag_arg(name, "MS", help)
        .default_value(default)
        .value_parser(whole::<u64>(1, None))
}

/// An amount of work in µs: >= 0 where `min` is 0, else > 0.
fn micros(name: &'static str, help: &'static str, default: &'static str, min: f64) -> Arg {
    let parser = if min > 0.0 {
        positive_number
    } else {
        non_negative_number
    };
    flag_arg(name, "US", help)
        .default_value(default)
        .value_parser(parser)
}

// ---- value checks ---------------------------------------------------------

/// A whole number in [min, max] (no max: the type's).
fn whole<T>(min: T, max: Option<T>) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync
where
    T: FromStr + PartialOrd + Display + Copy + Send + Sync + 'static,
{
    move |s: &str| {
        let expected = match max {
            Some(max) => format!("a whole number from {min} to {max}"),
            None => format!("a whole number >= {min}"),
        };
        match s.trim().parse::<T>() {
            Ok(v) if v >= min && max.is_none_or(|m| v <= m) => Ok(v),
            _ => Err(format!("expected {expected}")),
        }
    }
}

fn non_negative_number(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err("expected a number >= 0".into()),
    }
}

fn positive_number(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err("expected a positive number".into()),
    }
}

/// A thread count the library accepts, 0 resolved to the physical cores.
fn threads(s: &str) -> Result<usize, String> {
    let n = whole::<usize>(0, None)(s)?;
    pool::check_threads(n)?;
    Ok(if n == 0 {
        leanrt::pool::cpu::physical_cores().max(1)
    } else {
        n
    })
}

/// A file that can be created or overwritten: checked before any work, so
/// a long run never ends in "cannot write".
fn writable_file(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    if s.is_empty() || p.is_dir() {
        return Err(format!("'{s}' is a directory, not a file"));
    }
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!("directory {} does not exist", dir.display()));
    }
    let target = if p.exists() { p.as_path() } else { dir };
    if !writable(target) {
        return Err(format!("{} is not writable", target.display()));
    }
    Ok(p)
}

fn writable(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated path that outlives the call; access()
    // only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_well_formed() {
        command().debug_assert();
    }

    #[test]
    fn lists_keep_their_first_order_without_repeats() {
        let m = command().get_matches_from(["leanrt", "pool", "--threads", "3,1,3"]);
        let Some(("pool", m)) = m.subcommand() else {
            panic!("pool")
        };
        assert_eq!(pool_args(m).threads, vec![3, 1]);
    }

    #[test]
    fn numbers_are_checked_with_their_bounds() {
        let w = whole::<u32>(1, None);
        assert_eq!(w("7"), Ok(7));
        assert_eq!(w("0").unwrap_err(), "expected a whole number >= 1");
        assert!(w("-5").is_err() && w("abc").is_err() && w("1.5").is_err());
        assert_eq!(
            whole::<u64>(1, Some(4096))("4097").unwrap_err(),
            "expected a whole number from 1 to 4096"
        );
        assert!(positive_number("0").is_err() && non_negative_number("0").is_ok());
    }

    #[test]
    fn output_files_are_checked_before_any_work() {
        assert!(writable_file("/nonexistent/x.json")
            .unwrap_err()
            .contains("/nonexistent does not exist"));
        assert!(writable_file("/").is_err());
        let d = std::env::temp_dir();
        assert!(writable_file(d.join("leanrt-args-test.json").to_str().unwrap()).is_ok());
    }
}
