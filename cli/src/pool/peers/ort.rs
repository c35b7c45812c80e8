//! ONNX Runtime's own intra-op pool as a peer: the real ORT thread pool with
//! ORT's real spin policy, on the same loop bodies as every other peer.
//!
//! How the work gets onto ORT's pool: a custom operator domain
//! (`leanrt.bench`) whose kernels call `KernelContext_ParallelFor` (the
//! `ort` crate's `ComputeContext::par_for`), which ORT runs on the session's
//! intra-op pool (`ThreadPool::TryBatchParallelFor`, or
//! `TrySimpleParallelFor` for zero batches). Graphs are built in code (as
//! ONNX bytes in memory, no model file: see `chain` for why not with ORT's
//! model editor), one node per loop, and run with one `Session::Run`:
//!
//! * plain loops (fork_join, bursty, idle_after_burst, wake, throughput):
//!   a graph of one `Loop` node, one `Session::Run` per loop, so these
//!   figures include ORT's per-run overhead. The node runs whatever loop
//!   the caller put in `JOB` just before the run.
//! * request: one `Session::Run` per inference run, of a graph with one
//!   `Work` node per round (parallel) and per stretch of serial work, so
//!   that ORT itself brackets the run as a serving process sees it: with
//!   `session.force_spinning_stop=1` its session enables spinning when the
//!   run starts and disables it when the last concurrent run ends.
//! * concurrent: each caller's runs as in request, on a session of its own
//!   (its own intra-op pool, or `intra_op_num_threads=1`), on sessions of
//!   an environment with global thread pools (`Ort::new_global`: the `ort`
//!   crate's `with_global_thread_pool`, i.e. `CreateEnvWithGlobalThreadPools`,
//!   and `DisablePerSessionThreads` on every session), or on one session
//!   that every caller runs at once (`SharedSession`).
//! * SGEMM work (`--work sgemm`): the `Work` node runs the same tile kernel
//!   as every other peer (`workload::index`), on the running thread's own
//!   buffers; no ORT MatMul, so the kernel code is the same in both pools.
//! * section: not available. ORT's parallel sections
//!   (`ThreadPool::ParallelSection`) are internal to its C++ kernels; the C
//!   API a custom op has (`KernelContext_ParallelFor`) cannot open one.
//!
//! A loop of `total` indices with a cost (`Peer::parallel_for`) runs as
//! `min(total, 4 × threads)` batches: what ORT's cost model makes of a loop
//! that is worth parallelising (Eigen's block count with an oversharding
//! factor of 4), since the C API takes a batch count, not a cost.
//!
//! The library is found at run time (`find_library`); nothing of ORT is
//! linked or downloaded at build time.
use super::Peer;
use crate::pool::presets::{config_pairs, ort_keys};
use crate::pool::spec::{RunShape, Sizes, WorkKind};
use crate::pool::workload::{self, IS_CALLER};
use ort::environment::{Environment, GlobalThreadPoolOptions};
use ort::operator::{
    ComputeContext, Kernel, KernelContext, Operator, OperatorDomain, OperatorInput, OperatorOutput,
};
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::Session;
use ort::value::{Tensor, TensorElementType};
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The oldest ONNX Runtime the `ort` crate in use (2.0.0-rc.15, C API 31)
/// loads.
pub const MIN_VERSION: (u32, u32) = (1, 31);

/// The custom operator domain of the benchmark's nodes, and its opset.
const DOMAIN: &str = "leanrt.bench";
const OPSET: u32 = 1;

/// An ONNX Runtime shared library and its version.
#[derive(Clone, Debug, PartialEq)]
pub struct OrtLibrary {
    pub path: PathBuf,
    pub version: String,
}

/// Finds libonnxruntime: `ORT_DYLIB_PATH` (the library, or a folder holding
/// it), else the `capi/` folder of the `onnxruntime` Python package that
/// `$LEANRT_ORT_PYTHON` (default `python3`) imports. Err: why none was
/// found, for the skip note.
pub fn find_library() -> Result<OrtLibrary, String> {
    let hint = "install it with scripts/install-ort.sh [--version 1.31.1|1.32.0] (an onnxruntime wheel in a virtual environment) and set ORT_DYLIB_PATH or LEANRT_ORT_PYTHON as it prints";
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        return library_at(Path::new(&p)).map_err(|e| format!("ORT_DYLIB_PATH={e}"));
    }
    let python = std::env::var("LEANRT_ORT_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(&python)
        .args([
            "-c",
            "import onnxruntime, os; print(os.path.dirname(onnxruntime.__file__))",
        ])
        .stderr(std::process::Stdio::null())
        .output();
    let dir = match out {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        Ok(_) => {
            return Err(format!(
                "no ONNX Runtime library: ORT_DYLIB_PATH is not set and {python} cannot import onnxruntime; {hint}"
            ))
        }
        Err(e) => {
            return Err(format!(
                "no ONNX Runtime library: ORT_DYLIB_PATH is not set and {python} does not run ({e}); {hint}"
            ))
        }
    };
    let capi = dir.join("capi");
    let lib = library_in(&capi).ok_or_else(|| {
        format!(
            "the onnxruntime package of {python} has no libonnxruntime.so* in {}; {hint}",
            capi.display()
        )
    })?;
    described(lib)
}

/// The ONNX Runtime library at `p` (the library, or a folder holding it:
/// `ORT_DYLIB_PATH`, `--ort-libs`); Err starts with the path.
pub fn library_at(p: &Path) -> Result<OrtLibrary, String> {
    let lib = if p.is_dir() {
        library_in(p)
            .ok_or_else(|| format!("{}: no libonnxruntime.so* in that folder", p.display()))?
    } else if p.is_file() {
        p.to_path_buf()
    } else {
        return Err(format!("{}: no such file", p.display()));
    };
    described(lib)
}

/// The ONNX Runtime library in `dir` (the versioned file where there is one:
/// `libonnxruntime.so.1.31.1`).
fn library_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == "libonnxruntime.so" || n.starts_with("libonnxruntime.so."))
        })
        .collect();
    // The longest name is the most specific (libonnxruntime.so.1.31.1);
    // among equally long ones, the last in name order.
    found.sort_by(|a, b| {
        (a.as_os_str().len(), a.as_os_str()).cmp(&(b.as_os_str().len(), b.as_os_str()))
    });
    found.pop()
}

/// The library with its version, read from its (resolved) file name; Err
/// where it is older than `MIN_VERSION`.
fn described(lib: PathBuf) -> Result<OrtLibrary, String> {
    let real = std::fs::canonicalize(&lib).unwrap_or_else(|_| lib.clone());
    let version = version_of(&real).or_else(|| version_of(&lib)).ok_or_else(|| {
        format!(
            "{}: cannot tell the ONNX Runtime version from the file name (expected libonnxruntime.so.MAJOR.MINOR.PATCH)",
            lib.display()
        )
    })?;
    let mut parts = version.split('.').map(|x| x.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) < MIN_VERSION {
        return Err(format!(
            "{}: ONNX Runtime {version} is older than {}.{}, the oldest the ort crate in use loads",
            lib.display(),
            MIN_VERSION.0,
            MIN_VERSION.1
        ));
    }
    Ok(OrtLibrary { path: lib, version })
}

/// `1.31.1` from `.../libonnxruntime.so.1.31.1`.
pub fn version_of(lib: &Path) -> Option<String> {
    let name = lib.file_name()?.to_str()?;
    let v = name.strip_prefix("libonnxruntime.so.")?;
    (v.split('.').count() >= 2 && v.split('.').all(|x| x.parse::<u32>().is_ok()))
        .then(|| v.to_string())
}

/// Why a configuration does not run on ORT (it sets a key that is not one
/// of ORT's, such as leanrt's adaptive spin key), or None.
pub fn skip_reason(config: &str) -> Option<String> {
    let pairs = config_pairs(config).ok()?;
    let foreign: Vec<&str> = pairs
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !k.starts_with("session."))
        .collect();
    (!foreign.is_empty()).then(|| {
        format!(
            "configuration '{config}' not run on ONNX Runtime: {} is not an ORT key",
            foreign.join(", ")
        )
    })
}

/// The global thread pools of an environment: the intra-op pool's threads
/// and whether its workers spin (`allow_spinning`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GlobalPools {
    pub threads: usize,
    pub spinning: bool,
}

/// The process's ORT environment (one per process; the library is loaded
/// once, from the first path asked for), with global thread pools where
/// the first call asks for them (a cell is a process of its own, so each
/// cell gets the environment it asks for).
fn environment(lib: &Path, global: Option<GlobalPools>) -> Result<Environment, String> {
    static ENV: OnceLock<(Option<GlobalPools>, Result<Environment, String>)> = OnceLock::new();
    let (made_with, env) = ENV.get_or_init(|| {
        let make = || {
            let mut b = ort::init_from(lib)
                .map_err(|e| format!("loading {}: {e}", lib.display()))?
                .with_name("leanrt-pool");
            if let Some(g) = global {
                let err = |e: ort::Error| format!("ONNX Runtime global thread pool options: {e}");
                b = b.with_global_thread_pool(
                    GlobalThreadPoolOptions::default()
                        .with_intra_threads(g.threads)
                        .and_then(|o| o.with_inter_threads(1))
                        .and_then(|o| o.with_spin_control(g.spinning))
                        .map_err(err)?,
                );
            }
            b.build()
                .map_err(|e| format!("creating the ONNX Runtime environment: {e}"))
        };
        (global, make())
    });
    if *made_with != global {
        return Err(format!(
            "this process's ONNX Runtime environment has global pools {made_with:?}, not {global:?}"
        ));
    }
    env.clone()
}

/// A loop handed to the `Loop` node of the next `Session::Run` on this
/// thread.
#[derive(Clone, Copy)]
struct Job {
    /// The loop body. Its true lifetime is that of the `run_loop` call that
    /// put it here (see there), as is `submitted`'s.
    body: &'static (dyn Fn(usize) + Sync),
    total: usize,
    /// Batches for `KernelContext_ParallelFor` (0: one index per batch).
    batches: usize,
    /// Set to the moment the loop is handed to ORT (the wake probe's zero).
    submitted: Option<&'static Mutex<Option<Instant>>>,
}

thread_local! {
    /// The loop the `Loop` node runs: set by `run_loop` for the duration of
    /// one `Session::Run`, empty otherwise. Per thread: ORT runs a
    /// sequential session's nodes on the thread that called Run (a Loop
    /// node finding no loop fails the run).
    static JOB: Cell<Option<Job>> = const { Cell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Copies the node's input to its output.
fn pass_through(ctx: &ComputeContext) -> ort::Result<()> {
    let x = ctx
        .input(0)?
        .ok_or_else(|| ort::Error::new("missing input"))?;
    let (_, x) = x.try_extract_tensor::<f32>()?;
    let v = x.first().copied().unwrap_or(0.0);
    let mut y = ctx
        .output(0, vec![1i64])?
        .ok_or_else(|| ort::Error::new("missing output"))?;
    y.try_extract_tensor_mut::<f32>()?.1[0] = v;
    Ok(())
}

/// The benchmark's two operators (both take and yield one float):
///
/// * `Loop` runs the loop in this thread's `JOB` on ORT's intra-op pool;
/// * `Work` runs `items` indices of the work kernel (`workload::index`:
///   `kind` 0 = spin, `iters` rounds each; 1 = an SGEMM tile on the
///   running thread's buffers), on the caller (`parallel` 0) or on ORT's
///   pool in `batches` batches.
#[derive(Clone, Copy)]
enum BenchOp {
    Loop,
    Work,
}

impl Operator for BenchOp {
    type Kernel<'attr> = Step;
    fn name(&self) -> &str {
        match self {
            BenchOp::Loop => "Loop",
            BenchOp::Work => "Work",
        }
    }
    fn versions(&self) -> std::ops::RangeInclusive<u32> {
        OPSET..=OPSET
    }
    fn inputs(&self) -> impl IntoIterator<Item = OperatorInput> {
        [OperatorInput::required(TensorElementType::Float32)]
    }
    fn outputs(&self) -> impl IntoIterator<Item = OperatorOutput> {
        [OperatorOutput::required(TensorElementType::Float32)]
    }
    fn create_kernel<'attr>(&self, k: &KernelContext<'attr>) -> ort::Result<Step> {
        if let BenchOp::Loop = self {
            return Ok(Step::Loop);
        }
        let get = |name: &str| {
            k.get::<i64>(name)
                .filter(|v| *v >= 0)
                .ok_or_else(|| ort::Error::new(format!("Work node without a valid '{name}'")))
        };
        Ok(Step::Work {
            kind: match get("kind")? {
                0 => WorkKind::Spin,
                1 => WorkKind::Sgemm,
                k => return Err(ort::Error::new(format!("Work node with kind {k}"))),
            },
            items: get("items")? as u64,
            iters: get("iters")? as u32,
            parallel: get("parallel")? != 0,
            batches: get("batches")? as usize,
        })
    }
}

/// One node: of a graph under construction (`chain`), and the kernel ORT
/// makes of it (`BenchOp::create_kernel`).
enum Step {
    Loop,
    Work {
        kind: WorkKind,
        items: u64,
        iters: u32,
        parallel: bool,
        batches: usize,
    },
}

impl Kernel for Step {
    fn compute(&mut self, ctx: &ComputeContext) -> ort::Result<()> {
        match *self {
            Step::Loop => {
                let job = JOB.take().ok_or_else(|| {
                    ort::Error::new(
                        "Loop node run without a loop (not on the thread that called Run?)",
                    )
                })?;
                if let Some(at) = job.submitted {
                    *lock(at) = Some(Instant::now());
                }
                ctx.par_for(job.total, job.batches, job.body)?;
            }
            Step::Work {
                kind,
                items,
                iters,
                parallel: true,
                batches,
            } => ctx.par_for(items as usize, batches, move |i| {
                workload::index(kind, i as u64, iters);
            })?,
            Step::Work {
                kind,
                items,
                iters,
                parallel: false,
                ..
            } => workload::serial(kind, items, iters),
        }
        pass_through(ctx)
    }
}

/// A chain of `steps` from graph input `x` to graph output `y` (each node
/// takes and yields one float: the chain keeps them in order, and no node
/// has constant inputs, so nothing is folded away), as the bytes of an ONNX
/// ModelProto.
///
/// Built here rather than with ORT's model editor: ORT 1.31's
/// `CreateSessionFromModel` (the `ort` crate's `Model::into_session`) loads
/// the graph before it adds the session options' custom op domains, so a
/// graph of custom-op nodes fails there with "leanrt.bench:Loop(-1) is not
/// a registered function/op"; `commit_from_memory` adds them first.
fn chain(steps: &[Step]) -> Vec<u8> {
    use onnx_proto::*;
    let mut graph = Vec::new();
    let n = steps.len();
    for (k, step) in steps.iter().enumerate() {
        let input = if k == 0 {
            "x".to_string()
        } else {
            format!("t{k}")
        };
        let output = if k + 1 == n {
            "y".to_string()
        } else {
            format!("t{}", k + 1)
        };
        let mut node = Vec::new();
        string(&mut node, NODE_INPUT, &input);
        string(&mut node, NODE_OUTPUT, &output);
        string(&mut node, NODE_NAME, &format!("n{k}"));
        match step {
            Step::Loop => string(&mut node, NODE_OP_TYPE, "Loop"),
            Step::Work {
                kind,
                items,
                iters,
                parallel,
                batches,
            } => {
                string(&mut node, NODE_OP_TYPE, "Work");
                for (name, v) in [
                    ("kind", i64::from(*kind == WorkKind::Sgemm)),
                    ("items", *items as i64),
                    ("iters", i64::from(*iters)),
                    ("parallel", i64::from(*parallel)),
                    ("batches", *batches as i64),
                ] {
                    let mut a = Vec::new();
                    string(&mut a, ATTR_NAME, name);
                    varint_field(&mut a, ATTR_I, v as u64);
                    varint_field(&mut a, ATTR_TYPE, ATTR_TYPE_INT);
                    message(&mut node, NODE_ATTRIBUTE, &a);
                }
            }
        }
        string(&mut node, NODE_DOMAIN, DOMAIN);
        message(&mut graph, GRAPH_NODE, &node);
    }
    string(&mut graph, GRAPH_NAME, "leanrt_bench");
    message(&mut graph, GRAPH_INPUT, &scalar_value_info("x"));
    message(&mut graph, GRAPH_OUTPUT, &scalar_value_info("y"));
    let mut model = Vec::new();
    varint_field(&mut model, MODEL_IR_VERSION, IR_VERSION);
    for (domain, version) in [("", 17u64), (DOMAIN, u64::from(OPSET))] {
        let mut o = Vec::new();
        string(&mut o, OPSET_DOMAIN, domain);
        varint_field(&mut o, OPSET_VERSION, version);
        message(&mut model, MODEL_OPSET_IMPORT, &o);
    }
    string(&mut model, MODEL_PRODUCER_NAME, "leanrt pool");
    message(&mut model, MODEL_GRAPH, &graph);
    model
}

/// A graph input or output: a float tensor of shape [1].
fn scalar_value_info(name: &str) -> Vec<u8> {
    use onnx_proto::*;
    let mut dim = Vec::new();
    varint_field(&mut dim, DIM_VALUE, 1);
    let mut shape = Vec::new();
    message(&mut shape, SHAPE_DIM, &dim);
    let mut tensor = Vec::new();
    varint_field(&mut tensor, TENSOR_ELEM_TYPE, ELEM_FLOAT);
    message(&mut tensor, TENSOR_SHAPE, &shape);
    let mut ty = Vec::new();
    message(&mut ty, TYPE_TENSOR, &tensor);
    let mut v = Vec::new();
    string(&mut v, VALUE_INFO_NAME, name);
    message(&mut v, VALUE_INFO_TYPE, &ty);
    v
}

/// The few ONNX protobuf fields the benchmark's graphs use (onnx.proto's
/// field numbers) and protobuf's wire format for them.
mod onnx_proto {
    pub const MODEL_IR_VERSION: u32 = 1;
    pub const MODEL_PRODUCER_NAME: u32 = 2;
    pub const MODEL_GRAPH: u32 = 7;
    pub const MODEL_OPSET_IMPORT: u32 = 8;
    pub const OPSET_DOMAIN: u32 = 1;
    pub const OPSET_VERSION: u32 = 2;
    pub const GRAPH_NODE: u32 = 1;
    pub const GRAPH_NAME: u32 = 2;
    pub const GRAPH_INPUT: u32 = 11;
    pub const GRAPH_OUTPUT: u32 = 12;
    pub const NODE_INPUT: u32 = 1;
    pub const NODE_OUTPUT: u32 = 2;
    pub const NODE_NAME: u32 = 3;
    pub const NODE_OP_TYPE: u32 = 4;
    pub const NODE_ATTRIBUTE: u32 = 5;
    pub const NODE_DOMAIN: u32 = 7;
    pub const ATTR_NAME: u32 = 1;
    pub const ATTR_I: u32 = 3;
    pub const ATTR_TYPE: u32 = 20;
    /// AttributeProto.AttributeType INT.
    pub const ATTR_TYPE_INT: u64 = 2;
    pub const VALUE_INFO_NAME: u32 = 1;
    pub const VALUE_INFO_TYPE: u32 = 2;
    pub const TYPE_TENSOR: u32 = 1;
    pub const TENSOR_ELEM_TYPE: u32 = 1;
    pub const TENSOR_SHAPE: u32 = 2;
    /// TensorProto.DataType FLOAT.
    pub const ELEM_FLOAT: u64 = 1;
    pub const SHAPE_DIM: u32 = 1;
    pub const DIM_VALUE: u32 = 1;
    /// IR version 8 (ONNX 1.10+): every ORT since 1.10 reads it.
    pub const IR_VERSION: u64 = 8;

    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// A varint field (wire type 0).
    pub fn varint_field(out: &mut Vec<u8>, field: u32, v: u64) {
        varint(out, u64::from(field) << 3);
        varint(out, v);
    }

    /// A length-delimited field (wire type 2).
    pub fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
        varint(out, (u64::from(field) << 3) | 2);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }

    pub fn string(out: &mut Vec<u8>, field: u32, s: &str) {
        bytes(out, field, s.as_bytes());
    }

    pub fn message(out: &mut Vec<u8>, field: u32, m: &[u8]) {
        bytes(out, field, m);
    }

    #[cfg(test)]
    #[test]
    fn wire_format() {
        let mut v = Vec::new();
        varint_field(&mut v, 1, 300);
        assert_eq!(v, [0x08, 0xAC, 0x02]);
        let mut s = Vec::new();
        string(&mut s, 2, "ab");
        assert_eq!(s, [0x12, 2, b'a', b'b']);
        let mut n = Vec::new();
        varint_field(&mut n, 3, (-1i64) as u64);
        assert_eq!(n.len(), 1 + 10);
    }
}

/// The steps of one inference run of `s`: the serial preamble, then the
/// rounds (on the pool) with the serial work between them.
fn request_steps(s: &Sizes, dop: usize) -> Vec<Step> {
    let r = &s.run;
    let serial = |items: u64| Step::Work {
        kind: s.work,
        items,
        iters: s.iters,
        parallel: false,
        batches: 0,
    };
    let mut v = Vec::new();
    if r.preamble_items > 0 {
        v.push(serial(r.preamble_items));
    }
    for k in 0..r.rounds {
        if k > 0 && r.between_items > 0 {
            v.push(serial(r.between_items));
        }
        v.push(Step::Work {
            kind: s.work,
            items: r.round_items,
            iters: s.iters,
            parallel: true,
            batches: batches_for(r.round_items as usize, dop),
        });
    }
    if v.is_empty() {
        v.push(serial(0));
    }
    v
}

/// Batches of a loop of `total` indices with a cost: see the module doc.
fn batches_for(total: usize, dop: usize) -> usize {
    total.min(4 * dop).max(1)
}

/// The session a cell currently runs on. Each session has its own intra-op
/// pool, so only one is kept: the plain-loop one, or the request one (built
/// when the request scenario starts, and rebuilt if its shape changes).
enum Active {
    None,
    Loops(Session),
    Request(RunShape, Session),
}

/// ORT's pool with one configuration.
pub struct Ort {
    env: Environment,
    threads: usize,
    /// The sessions run on the environment's global thread pools.
    global: bool,
    pairs: Vec<(String, String)>,
    hints: bool,
    input: Tensor<f32>,
    active: RefCell<Active>,
}

impl Ort {
    pub fn new(threads: usize, config: &str, library: &Path) -> Result<Ort, String> {
        Ort::open(threads, config, library, false)
    }

    /// As `new`, but every session of this process runs on the
    /// environment's global thread pools (`threads` intra-op threads,
    /// spinning as the configuration's `allow_spinning` says; the
    /// sessions' own pools are disabled: `DisablePerSessionThreads`).
    pub fn new_global(threads: usize, config: &str, library: &Path) -> Result<Ort, String> {
        Ort::open(threads, config, library, true)
    }

    fn open(threads: usize, config: &str, library: &Path, global: bool) -> Result<Ort, String> {
        if let Some(why) = skip_reason(config) {
            return Err(why);
        }
        let pairs = config_pairs(config)?;
        let hints = pairs
            .iter()
            .any(|(k, v)| k == ort_keys::FORCE_SPINNING_STOP && v == "1");
        let pools = global.then(|| GlobalPools {
            threads: threads.max(1),
            spinning: !pairs
                .iter()
                .any(|(k, v)| k == ort_keys::ALLOW_SPINNING && v == "0"),
        });
        let env = environment(library, pools)?;
        let input = Tensor::from_array(([1usize], vec![0.0f32]))
            .map_err(|e| format!("creating the input tensor: {e}"))?;
        let p = Ort {
            env,
            threads: threads.max(1),
            global,
            pairs,
            hints,
            input,
            active: RefCell::new(Active::None),
        };
        // Build the plain-loop session now, so that bad keys or values fail
        // the cell before anything is measured.
        *p.active.borrow_mut() = Active::Loops(p.session(&[Step::Loop])?);
        Ok(p)
    }

    /// A session on a graph of `steps`, with this peer's threads and keys.
    fn session(&self, steps: &[Step]) -> Result<Session, String> {
        let err = |e: ort::Error<SessionBuilder>| format!("ONNX Runtime session options: {e}");
        let mut b = SessionBuilder::new(&self.env)
            .map_err(|e| format!("ONNX Runtime session options: {e}"))?;
        if !self.global {
            // (With global pools, the ort crate calls DisablePerSessionThreads
            // when it commits the session.)
            b = b.with_intra_threads(self.threads).map_err(err)?;
        }
        let mut b = b
            .with_optimization_level(GraphOptimizationLevel::Disable)
            .map_err(err)?
            .with_operators(
                OperatorDomain::new(DOMAIN)
                    .and_then(|d| d.add(BenchOp::Loop))
                    .and_then(|d| d.add(BenchOp::Work))
                    .map_err(|e| format!("registering the benchmark's custom operators: {e}"))?,
            )
            .map_err(err)?;
        for (k, v) in &self.pairs {
            b = b.with_config_entry(k, v).map_err(err)?;
        }
        // One session at a time in the process: ORT registers a session's
        // custom op domain in a process-wide map, and two sessions made at
        // once by the concurrent scenario's callers race there ("the
        // domain is already exist").
        static CREATING: Mutex<()> = Mutex::new(());
        let _one = lock(&CREATING);
        b.commit_from_memory(&chain(steps))
            .map_err(|e| format!("creating the ONNX Runtime session: {e}"))
    }

    /// One `Session::Run` of the active session.
    fn run(&self, session: &mut Session) {
        if let Err(e) = session.run(ort::inputs![&self.input]) {
            panic!("ONNX Runtime run failed: {e}");
        }
    }

    /// Runs `body(i)` for i in [0, total) as one `Loop` node run, setting
    /// `submitted` (where given) when the loop is handed to ORT's pool.
    fn run_loop(
        &self,
        total: usize,
        batches: usize,
        body: &(dyn Fn(usize) + Sync),
        submitted: Option<&Mutex<Option<Instant>>>,
    ) {
        let mut active = self.active.borrow_mut();
        if !matches!(*active, Active::Loops(_)) {
            *active = Active::None; // the old pool's threads end first
            *active = Active::Loops(
                self.session(&[Step::Loop])
                    .unwrap_or_else(|e| panic!("{e}")),
            );
        }
        let Active::Loops(session) = &mut *active else {
            unreachable!("the plain-loop session was just made")
        };
        // SAFETY: only the lifetimes are changed. The 'static references
        // are reachable through this thread's JOB alone; the Loop kernel
        // takes them out of JOB inside the Session::Run below (on this
        // thread) and uses them only until KernelContext_ParallelFor
        // returns, which is after every call of the body has returned; the
        // slot is emptied again before this function returns (also when the
        // run failed before the kernel ran), so no use outlives `body` or
        // `submitted`.
        let job = unsafe {
            Job {
                body: std::mem::transmute::<&(dyn Fn(usize) + Sync), &'static (dyn Fn(usize) + Sync)>(
                    body,
                ),
                total,
                batches,
                submitted: submitted.map(|m| {
                    std::mem::transmute::<&Mutex<Option<Instant>>, &'static Mutex<Option<Instant>>>(
                        m,
                    )
                }),
            }
        };
        JOB.set(Some(job));
        let result = session.run(ort::inputs![&self.input]).map(drop);
        JOB.set(None);
        if let Err(e) = result {
            panic!("ONNX Runtime run failed: {e}");
        }
    }
}

impl Peer for Ort {
    fn dop(&self) -> usize {
        self.threads
    }
    fn parallel_for(&self, total: usize, _cost: f64, body: &(dyn Fn(usize) + Sync)) {
        self.run_loop(total, batches_for(total, self.threads), body, None);
    }
    fn tiny_region(&self, body: &(dyn Fn(usize) + Sync)) {
        // Zero batches: TrySimpleParallelFor, one index per task.
        self.run_loop(self.threads, 0, body, None);
    }
    /// A loop of one index per thread in which the caller's index waits (up
    /// to 50 ms) for an index on another thread: the time from the hand-off
    /// to ORT to the first index running on a pool thread.
    fn wake_latency(&self) -> Duration {
        const WAIT: Duration = Duration::from_millis(50);
        if self.threads < 2 {
            return Duration::ZERO;
        }
        let submitted: Mutex<Option<Instant>> = Mutex::new(None);
        let seen: Mutex<Option<Duration>> = Mutex::new(None);
        let body = |_: usize| {
            let t0 = lock(&submitted).unwrap_or_else(Instant::now);
            if !IS_CALLER.with(|c| c.get()) {
                lock(&seen).get_or_insert(t0.elapsed());
                return;
            }
            while lock(&seen).is_none() && t0.elapsed() < WAIT {
                std::thread::yield_now();
            }
        };
        self.run_loop(self.threads, 0, &body, Some(&submitted));
        let v = *lock(&seen);
        v.unwrap_or(WAIT)
    }
    fn no_sections_reason(&self) -> String {
        "ONNX Runtime's parallel sections are internal to its C++ kernels; a custom op's C API (KernelContext_ParallelFor) cannot open one".into()
    }
    fn hints(&self) -> bool {
        self.hints
    }
    fn inference_run(&self, s: &Sizes) -> bool {
        let mut active = self.active.borrow_mut();
        let fresh = !matches!(&*active, Active::Request(shape, _) if *shape == s.run);
        if fresh {
            *active = Active::None;
            let session = self
                .session(&request_steps(s, self.threads))
                .unwrap_or_else(|e| panic!("{e}"));
            *active = Active::Request(s.run.clone(), session);
        }
        let Active::Request(_, session) = &mut *active else {
            unreachable!("the request session was just made")
        };
        if fresh {
            // Warm up the new session's pool, as the cell warmed the first
            // (untimed: the request scenario's first run is).
            for _ in 0..3 {
                self.run(session);
            }
        }
        self.run(session);
        true
    }
}

/// One request session that several caller threads run at once (the
/// concurrent scenario's shared arrangement): ONNX Runtime's `Run` on one
/// session from many threads, as its documentation allows and serving
/// code does.
///
/// Through the sys layer: the `ort` crate's `Session::run` takes `&mut
/// self` (its authors do not trust concurrent `Run`), so the shared
/// session calls `OrtApi::Run` itself.
pub struct SharedSession {
    session: Session,
    input: Tensor<f32>,
}

impl SharedSession {
    /// The request session of `s` on a pool of `threads` with `config`,
    /// warmed up with three runs.
    pub fn new(threads: usize, config: &str, library: &Path, s: &Sizes) -> Result<Self, String> {
        let o = Ort::new(threads, config, library)?;
        let session = o.session(&request_steps(s, o.threads))?;
        let shared = SharedSession {
            session,
            input: o.input,
        };
        for _ in 0..3 {
            shared.run();
        }
        Ok(shared)
    }

    /// One `Session::Run`; any number of threads may call it at once.
    pub fn run(&self) {
        use ort::AsPointer;
        let api = ort::api();
        let input_names = [c"x".as_ptr()];
        let output_names = [c"y".as_ptr()];
        let inputs = [self.input.ptr()];
        let mut output: *mut ort::sys::OrtValue = std::ptr::null_mut();
        // SAFETY: the session and the input value are alive (borrowed from
        // `self`) for the whole call; the name and value arrays have the
        // lengths passed; ORT writes one output value pointer into
        // `output`, which is released below. ORT's `Run` may be called on
        // one session from several threads at once (ORT's C API
        // documentation); the graph's `Work` kernels only read their
        // attributes (Step::Work is copied out before use), so the `&mut`
        // the ort crate makes of a kernel per call aliases no data that is
        // written.
        let status = unsafe {
            (api.Run)(
                self.session.ptr().cast_mut(),
                std::ptr::null(),
                input_names.as_ptr(),
                inputs.as_ptr(),
                inputs.len(),
                output_names.as_ptr(),
                output_names.len(),
                &mut output,
            )
        };
        if !status.0.is_null() {
            // SAFETY: a non-null status from ORT is a valid OrtStatus whose
            // message lives until it is released, after the copy.
            let msg = unsafe {
                let m = std::ffi::CStr::from_ptr((api.GetErrorMessage)(status.0))
                    .to_string_lossy()
                    .into_owned();
                (api.ReleaseStatus)(status.0);
                m
            };
            panic!("ONNX Runtime run failed: {msg}");
        }
        if !output.is_null() {
            // SAFETY: `output` is the value ORT made for this run and no
            // one else holds it.
            unsafe { (api.ReleaseValue)(output) };
        }
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// The presets compared with ORT's own pool.
    const PRESETS_ON_ORT: [&str; 5] = [
        "default",
        "no_spin",
        "spin_1000",
        "backoff_8",
        "spin_1000_backoff_8",
    ];

    /// The ONNX Runtime library for the tests that run ORT: they fail where
    /// none is found, unless LEANRT_SKIP_ORT=1 asks to skip them.
    pub fn library_for_test() -> Option<OrtLibrary> {
        match find_library() {
            Ok(lib) => Some(lib),
            Err(why) if std::env::var("LEANRT_SKIP_ORT").as_deref() == Ok("1") => {
                eprintln!("skipped (LEANRT_SKIP_ORT=1): {why}");
                None
            }
            Err(why) => {
                panic!("{why}\n(set LEANRT_SKIP_ORT=1 to skip the tests that run ONNX Runtime)")
            }
        }
    }

    /// Where the library is here, that it holds each key the presets set
    /// as a C string: ORT accepts any key without complaint, so a misspelt
    /// one would silently configure nothing. (That the keys are named as
    /// ORT 1.31 names them is `tests/header.rs`'s check of the library's
    /// constants.)
    #[test]
    fn ort_key_names_are_ort_1_31s() {
        // Every preset that runs on ORT sets ORT keys only.
        for c in PRESETS_ON_ORT {
            for (k, _) in config_pairs(c).unwrap() {
                assert!(ort_keys::ALL.contains(&k.as_str()), "{c}: {k}");
            }
        }
        let Some(lib) = library_for_test() else {
            return;
        };
        let bytes = std::fs::read(&lib.path).unwrap();
        for k in ort_keys::ALL {
            let mut needle = k.as_bytes().to_vec();
            needle.push(0);
            assert!(
                bytes.windows(needle.len()).any(|w| w == needle.as_slice()),
                "{} does not know {k}",
                lib.path.display()
            );
        }
    }

    #[test]
    fn ort_peer_runs_every_index_once() {
        let Some(lib) = library_for_test() else {
            return;
        };
        for config in ["default", "no_spin"] {
            let p = Ort::new(2, config, &lib.path).unwrap();
            super::super::covers_every_index(&p);
            // The wake probe got a pool thread within its 50 ms.
            assert!(p.wake_latency() < Duration::from_millis(50));
        }
        super::super::covers_every_index(&Ort::new(1, "default", &lib.path).unwrap());
    }

    #[test]
    fn versions_come_from_library_names() {
        assert_eq!(
            version_of(Path::new("/x/capi/libonnxruntime.so.1.31.1")).as_deref(),
            Some("1.31.1")
        );
        assert_eq!(version_of(Path::new("/x/libonnxruntime.so")), None);
        assert_eq!(version_of(Path::new("/x/libonnxruntime.so.1.x")), None);
        assert_eq!(
            version_of(Path::new("libonnxruntime_providers_shared.so")),
            None
        );
        let d = std::env::temp_dir().join(format!("leanrt-ort-lib-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(library_in(&d), None);
        for n in [
            "libonnxruntime_providers_shared.so",
            "libonnxruntime.so.1.20.0",
        ] {
            std::fs::write(d.join(n), b"").unwrap();
        }
        assert_eq!(library_in(&d), Some(d.join("libonnxruntime.so.1.20.0")));
        // Too old for the ort crate in use: refused with the reason.
        let old = described(d.join("libonnxruntime.so.1.20.0")).unwrap_err();
        assert!(old.contains("older than 1.31"), "{old}");
        std::fs::write(d.join("libonnxruntime.so.1.31.1"), b"").unwrap();
        assert_eq!(
            described(library_in(&d).unwrap()).unwrap().version,
            "1.31.1"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn configurations_with_foreign_keys_do_not_run_on_ort() {
        for c in PRESETS_ON_ORT {
            assert_eq!(skip_reason(c), None, "{c}");
        }
        assert_eq!(
            skip_reason(&format!(
                "spin_1000_backoff_8;{}=1",
                ort_keys::FORCE_SPINNING_STOP
            )),
            None
        );
        let why = skip_reason("adaptive").unwrap();
        assert!(
            why.contains(leanrt::pool::abi::LRT_POOL_KEY_ADAPTIVE_SPIN),
            "{why}"
        );
    }

    #[test]
    fn request_graph_has_one_node_per_round_and_serial_stretch() {
        let mut s = Sizes::tiny();
        let steps = request_steps(&s, 2);
        // preamble + 4 rounds + 3 stretches between them
        assert_eq!(steps.len(), 1 + 4 + 3);
        let parallel = steps
            .iter()
            .filter(|x| matches!(x, Step::Work { parallel: true, .. }))
            .count();
        assert_eq!(parallel, 4);
        s.run.preamble_items = 0;
        s.run.between_items = 0;
        assert_eq!(request_steps(&s, 2).len(), 4);
        assert_eq!(batches_for(3, 2), 3);
        assert_eq!(batches_for(1000, 2), 8);
        assert_eq!(batches_for(0, 2), 1);
    }
}
