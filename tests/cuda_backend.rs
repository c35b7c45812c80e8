//! The CUDA backend, end to end: dlopen, callbacks, error reporting, pinning
//! and the maker's contracts over it.
//!
//! Two sets of tests share the bodies below:
//! * `mock_*`: against `c_tests/cuda/mock/mock_cuda.c`, a strict mock of the
//!   driver API on host memory, with failure injection: the library at
//!   `$LEANRT_MOCK_CUDA_LIB`, else built once from its one build definition
//!   (`c_tests/cuda/mock/CMakeLists.txt`, the one ctest uses) in the cargo
//!   target dir. Where it cannot be built they fail, saying why, unless
//!   `LEANRT_SKIP_CUDA_MOCK=1` asks to skip them (then each prints
//!   "skipped: no CUDA mock").
//! * `gpu_*`: against the real driver (`libcuda.so.1`, else `libcuda.so`,
//!   or `$LEANRT_CUDA_LIBRARY`). Where there is no device they fail, saying
//!   why, unless `LEANRT_SKIP_GPU=1` asks to skip them (then each prints
//!   "skipped: no CUDA device"; `scripts/test.sh` asks where there is no
//!   GPU). `scripts/gpu_check.sh` runs them on a GPU machine.
//!
//! All tests take one lock: they share the process-wide mock state (and the
//! GPU), so they run one at a time.
mod prerequisites;

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use std::sync::Arc;

use leanrt::device::{cuda, Device, PinnedRegion};
use leanrt::ffi::device::{self as cdev, lrt_host_api as HostApi, lrt_host_api_ops as HostApiOps};
use leanrt::ffi::staging::LRT_MAKER_PIN_MIRROR as MAKER_PIN_MIRROR;
use leanrt::staging::Maker;
use leanrt::staging::{
    lrt_sm_header, lrt_task_descriptor, lrt_task_payload, lrt_task_slot, lrt_task_slot_state,
    lrt_upload_policy, MakerConfig, MakerV1,
};
use leanrt::ErrorKind;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// The mock library and its control interface

struct Mock {
    path: String,
    set: unsafe extern "C" fn(*const c_char, i64) -> c_int,
    get: unsafe extern "C" fn(*const c_char) -> i64,
}

impl Mock {
    fn set(&self, key: &str, value: i64) {
        let k = CString::new(key).unwrap();
        // SAFETY: mock_cuda_set takes a NUL-terminated key and a value.
        let rc = unsafe { (self.set)(k.as_ptr(), value) };
        assert_eq!(rc, 0, "unknown mock key {key}");
    }
    fn get(&self, key: &str) -> i64 {
        let k = CString::new(key).unwrap();
        // SAFETY: mock_cuda_get takes a NUL-terminated key.
        let v = unsafe { (self.get)(k.as_ptr()) };
        assert_ne!(v, i64::MIN, "unknown mock key {key}");
        v
    }
    /// Back to a healthy one-device mock (live allocations are kept).
    fn reset(&self) {
        for key in [
            "fail_init",
            "fail_retain",
            "fail_register",
            "fail_alloc_at",
            "fail_htod_at",
            "fail_dtoh_at",
        ] {
            self.set(key, 0);
        }
        self.set("fail_code", 999);
        self.set("device_count", 1);
        self.set("total_mem", 4 << 30);
        self.set("fill", 1);
    }
    fn api(&self) -> HostApi {
        cdev::cuda_api(cuda::open_with_library(&self.path, 0).expect("the mock opens device 0"))
            .expect("this process owns the registry")
    }
}

/// Runs `cmd`; its output on failure.
fn run(mut cmd: std::process::Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{shown} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// The mock's path: `$LEANRT_MOCK_CUDA_LIB`, else built with CMake from
/// `c_tests/cuda/mock/` into the target dir (configured once; later runs only
/// rebuild what changed).
fn build_mock() -> Result<String, String> {
    if let Ok(p) = std::env::var("LEANRT_MOCK_CUDA_LIB") {
        if !p.is_empty() {
            return Ok(p);
        }
    }
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/c_tests/cuda/mock");
    let dir = concat!(env!("CARGO_TARGET_TMPDIR"), "/mock_cuda");
    let mut configure = std::process::Command::new("cmake");
    configure.args(["-S", src, "-B", dir]);
    if let Err(e) = run(configure) {
        // A failed configuration is not cached: the next run starts afresh.
        let _ = std::fs::remove_dir_all(dir);
        return Err(e);
    }
    let mut build = std::process::Command::new("cmake");
    build.args(["--build", dir]);
    run(build)?;
    Ok(format!("{dir}/libleanrt_mock_cuda.so"))
}

fn load_mock(path: String) -> Result<Mock, String> {
    let c = CString::new(path.clone()).unwrap();
    // SAFETY: dlopen of our own mock library (no initializers of note).
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return Err(format!("cannot dlopen {path}"));
    }
    // SAFETY: both symbols exist in the mock with exactly these signatures
    // (checked for NULL before the transmute).
    unsafe {
        let set = libc::dlsym(h, c"mock_cuda_set".as_ptr());
        let get = libc::dlsym(h, c"mock_cuda_get".as_ptr());
        if set.is_null() || get.is_null() {
            return Err(format!("{path} lacks the mock control functions"));
        }
        Ok(Mock {
            path,
            set: std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*const c_char, i64) -> c_int,
            >(set),
            get: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*const c_char) -> i64>(
                get,
            ),
        })
    }
}

/// Set to 1 to skip the `mock_*` tests where the mock cannot be built.
const SKIP_MOCK_ENV: &str = "LEANRT_SKIP_CUDA_MOCK";

/// The mock, reset. Where it cannot be built: a failure saying why, or,
/// with `LEANRT_SKIP_CUDA_MOCK=1`, `None` and a printed skip line.
fn mock() -> Option<&'static Mock> {
    static MOCK: OnceLock<Result<Mock, String>> = OnceLock::new();
    match MOCK.get_or_init(|| build_mock().and_then(load_mock)) {
        Ok(m) => {
            m.reset();
            Some(m)
        }
        Err(e) => {
            prerequisites::missing(SKIP_MOCK_ENV, &format!("no CUDA mock: {e}"));
            None
        }
    }
}

/// The real device 0. Where there is none: a failure saying why, or, with
/// `LEANRT_SKIP_GPU=1`, `None` and a printed skip line.
fn gpu() -> Option<HostApi> {
    match cuda::open(0) {
        Ok(d) => Some(cdev::cuda_api(d).expect("this process owns the registry")),
        Err(e) if e.kind() == ErrorKind::Unavailable => {
            prerequisites::missing(
                prerequisites::SKIP_GPU_ENV,
                &format!("no CUDA device ({})", e.message()),
            );
            None
        }
        Err(e) => panic!("cuda::open(0) failed unexpectedly: {e:?}"),
    }
}

// ---------------------------------------------------------------------------
// Raw callback helpers

fn ops(api: &HostApi) -> HostApiOps {
    assert!(!api.ops.is_null(), "a live host api");
    // SAFETY: a table made by leanrt (static, never freed).
    unsafe { *api.ops }
}

/// The core device behind a C api (leanrt's own tables give the backend
/// itself; a foreign table is adapted).
fn dev_of(api: &HostApi) -> Arc<dyn Device> {
    // SAFETY: the tables used here are leanrt's or the test's Counting
    // table, whose ctx outlives every maker made on it.
    unsafe { cdev::device_for_api(api) }.expect("a usable host api")
}

/// Pins through the CUDA device behind `api`.
fn pin(api: &HostApi, p: *mut u8, len: usize) -> leanrt::Result<PinnedRegion> {
    // SAFETY: the test keeps the buffer alive until the region is dropped.
    unsafe { cdev::cuda_device_of(api)?.pin(p, len) }
}

/// This thread's lrt_last_error message, and a mark in its place, so a
/// later call that succeeds reads back as `None`.
fn take_last_error() -> Option<String> {
    const MARK: &str = "test: no error since the last take";
    let s = lrt_last_error();
    leanrt::ffi::boundary::set_last_error("test", "no error since the last take");
    (s != MARK).then_some(s)
}

fn malloc(api: &HostApi, size: usize) -> *mut c_void {
    // SAFETY: the callback accepts any size.
    unsafe { ops(api).device_malloc.unwrap()(api.ctx, size) }
}

fn free(api: &HostApi, p: *mut c_void) {
    // SAFETY: p came from this api's device_malloc (or is NULL).
    unsafe { ops(api).device_free.unwrap()(api.ctx, p) }
}

fn to_device(api: &HostApi, dst: *mut c_void, src: &[u8]) -> i32 {
    // SAFETY: src is valid for its length.
    unsafe { ops(api).copy_to_device.unwrap()(api.ctx, dst, src.as_ptr().cast(), src.len()) }
}

fn from_device(api: &HostApi, dst: &mut [u8], src: *const c_void) -> i32 {
    // SAFETY: dst is valid for its length.
    unsafe { ops(api).copy_from_device.unwrap()(api.ctx, dst.as_mut_ptr().cast(), src, dst.len()) }
}

fn lrt_last_error() -> String {
    let mut buf = vec![0 as c_char; 1024];
    // SAFETY: buf is valid for its length.
    unsafe { leanrt::ffi::lrt_last_error(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: lrt_last_error NUL-terminates within buf.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Bodies shared by the mock and GPU tests

/// Round trip through device memory, from this thread and from others
/// (every callback makes the context current itself).
fn round_trip(api: &HostApi, len: usize) {
    let data = pattern(len, len as u64);
    let d = malloc(api, len);
    assert!(
        !d.is_null(),
        "device_malloc({len}): {:?}",
        take_last_error()
    );
    assert_eq!(to_device(api, d, &data), 0, "{:?}", take_last_error());
    let mut back = vec![0u8; len];
    assert_eq!(from_device(api, &mut back, d), 0, "{:?}", take_last_error());
    assert!(back == data, "round trip of {len} bytes changed the data");
    // A sub-range at an offset.
    let off = len / 3;
    let mut part = vec![0u8; len / 4];
    // SAFETY: only address arithmetic on the device pointer.
    let src = (d as usize + off) as *const c_void;
    assert_eq!(from_device(api, &mut part, src), 0);
    assert!(part[..] == data[off..off + len / 4]);
    // Other threads, each with its own data in its own quarter.
    let (api_copy, base) = (SendApi(*api), d as usize);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let api = api_copy.get();
                let q = len / 4;
                let chunk = pattern(q, 1000 + t as u64);
                let dst = (base + t * q) as *mut c_void;
                assert_eq!(to_device(&api, dst, &chunk), 0, "{:?}", take_last_error());
                let mut back = vec![0u8; q];
                assert_eq!(from_device(&api, &mut back, dst), 0);
                assert!(back == chunk, "thread {t}");
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    cdev::cuda_device_of(api)
        .unwrap()
        .synchronize()
        .expect("cuCtxSynchronize");
    free(api, d);
}

#[derive(Clone, Copy)]
struct SendApi(HostApi);
impl SendApi {
    /// By value, so a closure captures the whole (Send) wrapper.
    fn get(self) -> HostApi {
        self.0
    }
}
// SAFETY: a CUDA host api's ctx is a token and its callbacks may be called
// from any thread; the wrapper only carries it into the test threads.
unsafe impl Send for SendApi {}

/// An allocation no device has: NULL, with CUDA's reason recorded.
fn oversized_alloc(api: &HostApi, size: usize) {
    let p = malloc(api, size);
    assert!(p.is_null(), "device_malloc({size}) succeeded");
    let last = lrt_last_error();
    assert!(last.contains("CUDA_ERROR_OUT_OF_MEMORY"), "{last}");
    let msg = take_last_error().expect("the failure is recorded");
    assert!(msg.contains("cuMemAlloc_v2"), "{msg}");
    assert!(msg.contains("CUDA_ERROR_OUT_OF_MEMORY"), "{msg}");
}

/// A copy outside any allocation fails with CUDA's reason, no crash.
fn bad_copy(api: &HostApi) {
    let d = malloc(api, 4096);
    assert!(!d.is_null());
    let data = [7u8; 64];
    // SAFETY: address arithmetic only; the driver validates it.
    let beyond = (d as usize + (1 << 40)) as *mut c_void;
    assert_ne!(to_device(api, beyond, &data), 0);
    let msg = take_last_error().expect("recorded");
    assert!(
        msg.contains("cuMemcpyHtoD_v2") && msg.contains("CUDA_ERROR"),
        "{msg}"
    );
    // NULL pointers are rejected before the driver sees them.
    assert_ne!(to_device(api, std::ptr::null_mut(), &data), 0);
    let mut back = [0u8; 64];
    assert_ne!(from_device(api, &mut back, std::ptr::null()), 0);
    // Zero bytes is a no-op success.
    assert_eq!(to_device(api, d, &[]), 0);
    free(api, d);
}

/// A representative task for slot `i` of run `run`: tensors and scalars,
/// fanins, or empty.
fn write_task(slot: &lrt_task_slot, i: usize, run: u64) {
    // SAFETY: a claimed slot's pointers are valid, aligned and exclusively
    // ours until upload.
    let (desc, pay, state) = unsafe {
        (
            &mut *slot.descriptor,
            &mut *slot.payload,
            &mut *slot.slot_state,
        )
    };
    desc.kernel_id = [i as i32, -1, (run as i32) + 7];
    state.task_kind = (i % 3) as u8;
    match i % 3 {
        0 => {
            pay.tensor_count = 1 + (i % 4) as i32;
            pay.scalar_count = (i % 5) as i32;
            pay.fanin_count = i.min(3) as i32;
            for f in 0..pay.fanin_count as usize {
                pay.fanin_local_ids[f] = (i - 1 - f) as i32;
            }
            for t in 0..pay.tensor_count as usize {
                for w in 0..16 {
                    pay.tensors[t][w] =
                        (run << 48) | ((i as u64) << 16) | ((t as u64) << 8) | w as u64;
                }
            }
            for s in 0..pay.scalar_count as usize {
                pay.scalars[s] = run * 1_000_000 + (i * 100 + s) as u64;
            }
        }
        1 => {} // empty task: the counts stay 0
        _ => {
            pay.fanin_count = (100 + i % 28) as i32;
            for f in 0..pay.fanin_count as usize {
                pay.fanin_local_ids[f] = (f as i32) ^ (i as i32);
            }
        }
    }
}

/// What the device reads for one slot, as found in a device image.
#[derive(Debug, PartialEq)]
struct SlotView {
    task_id: u64,
    kernel_id: [i32; 3],
    packed: [u64; 2],
    counts: [i32; 3],
    fanins: Vec<i32>,
    reserved: [u8; 12],
    early_dispatch: [u64; 5],
    predicate: [u64; 3],
    tensors: Vec<[u64; 16]>,
    scalars: Vec<u64>,
    /// The slot state without its two pointers.
    state: [u64; 6],
    flag: u8,
}

fn read_at<T: Copy>(image: &[u8], off: usize) -> T {
    assert!(
        off + size_of::<T>() <= image.len(),
        "offset {off} outside the image"
    );
    // SAFETY: in bounds (checked); read_unaligned has no alignment needs and
    // the types read are plain data valid for any bit pattern.
    unsafe { image.as_ptr().add(off).cast::<T>().read_unaligned() }
}

/// Reads the whole device image back and decodes slots `[0, n)` through the
/// device header's pointers, checking that every pointer is the device
/// address of the right element.
fn device_view(maker: &MakerV1, api: &HostApi, n: usize) -> (lrt_sm_header, Vec<SlotView>) {
    let len = maker.segments().end as usize;
    let base = maker.device_image() as usize;
    let mut image = vec![0u8; len];
    assert_eq!(from_device(api, &mut image, base as *const c_void), 0);
    let h: lrt_sm_header = read_at(&image, 0);
    assert_eq!(h.current_task_index as usize, n);
    assert_eq!(h.task_window_size, maker.task_window());
    assert_eq!(h.task_window_mask as u64, maker.task_window() - 1);
    let off = |p: usize| -> usize {
        assert!(
            p >= base && p < base + len,
            "{p:#x} is not a device address of the image"
        );
        p - base
    };
    let descs = off(h.task_descriptors as usize);
    let pays = off(h.task_payloads as usize);
    let states = off(h.slot_states as usize);
    let flags = off(h.completion_flags as usize);
    assert_eq!(h.task_descriptors_offset as usize, descs);
    let mut out = Vec::new();
    for i in 0..n {
        let d_off = descs + i * size_of::<lrt_task_descriptor>();
        let p_off = pays + i * size_of::<lrt_task_payload>();
        let s_off = states + i * size_of::<lrt_task_slot_state>();
        let d: lrt_task_descriptor = read_at(&image, d_off);
        let p: lrt_task_payload = read_at(&image, p_off);
        let s: lrt_task_slot_state = read_at(&image, s_off);
        assert_eq!(
            s.payload as usize,
            base + p_off,
            "slot {i}: payload pointer"
        );
        assert_eq!(s.task as usize, base + d_off, "slot {i}: task pointer");
        let clamp = |c: i32, max: usize| -> usize {
            assert!(
                c >= 0 && c as usize <= max,
                "slot {i}: count {c} out of range"
            );
            c as usize
        };
        out.push(SlotView {
            task_id: d.task_id,
            kernel_id: d.kernel_id,
            packed: [d.packed_buffer_base as u64, d.packed_buffer_end as u64],
            counts: [p.tensor_count, p.scalar_count, p.fanin_count],
            fanins: p.fanin_local_ids[..clamp(p.fanin_count, 128)].to_vec(),
            reserved: p.reserved,
            early_dispatch: p.early_dispatch,
            predicate: p.predicate,
            tensors: p.tensors[..clamp(p.tensor_count, 32)].to_vec(),
            scalars: p.scalars[..clamp(p.scalar_count, 16)].to_vec(),
            state: [
                s.last_consumer_local_id as u32 as u64 | (s.task_state as u32 as u64) << 32,
                s.wake_list_head as u64,
                s.next_in_wake_list as u64,
                u64::from_le_bytes([
                    s.active_mask,
                    s.task_attrs,
                    s.any_subtask_deferred,
                    s.task_kind,
                    s.completed_subtasks as u8,
                    (s.completed_subtasks >> 8) as u8,
                    s.total_required_subtasks as u8,
                    (s.total_required_subtasks >> 8) as u8,
                ]),
                s.logical_block_num as u64
                    | (s.next_block_idx as u64) << 16
                    | (s.graph_node_index as u32 as u64) << 32,
                s.graph_context as u64,
            ],
            flag: read_at(&image, flags + i),
        });
    }
    (h, out)
}

/// What slot `i` of run `run` must look like on the device.
fn expected(i: usize, run: u64) -> SlotView {
    let mut v = SlotView {
        task_id: i as u64,
        kernel_id: [i as i32, -1, run as i32 + 7],
        packed: [0, 0],
        counts: [0, 0, 0],
        fanins: vec![],
        reserved: [0; 12],
        early_dispatch: [0; 5],
        predicate: [0; 3],
        tensors: vec![],
        scalars: vec![],
        // last_consumer = own index, task_state 0; no wake links; active
        // mask 2 (one AIV core), task_kind as the host wrote it, one required
        // subtask; one logical block, graph node -1; no graph context.
        state: [
            i as u64,
            0,
            0,
            2 | ((i % 3) as u64) << 24 | 1 << 48,
            1 | (u32::MAX as u64) << 32,
            0,
        ],
        flag: 0,
    };
    match i % 3 {
        0 => {
            let (tc, sc, fc) = (1 + i % 4, i % 5, i.min(3));
            v.counts = [tc as i32, sc as i32, fc as i32];
            v.fanins = (0..fc).map(|f| (i - 1 - f) as i32).collect();
            v.tensors = (0..tc)
                .map(|t| {
                    let mut r = [0u64; 16];
                    for (w, x) in r.iter_mut().enumerate() {
                        *x = (run << 48) | ((i as u64) << 16) | ((t as u64) << 8) | w as u64;
                    }
                    r
                })
                .collect();
            v.scalars = (0..sc)
                .map(|s| run * 1_000_000 + (i * 100 + s) as u64)
                .collect();
        }
        1 => {}
        _ => {
            let fc = 100 + i % 28;
            v.counts = [0, 0, fc as i32];
            v.fanins = (0..fc).map(|f| (f as i32) ^ (i as i32)).collect();
        }
    }
    v
}

/// Fills the mirror's per-slot segments with 0xAA.
fn poison_mirror(maker: &MakerV1, header: *mut lrt_sm_header) {
    let seg = maker.segments();
    let start = seg.descriptors as usize;
    // SAFETY: the mirror is one mapping of seg.end bytes starting at the
    // header; nothing else references the per-slot segments between runs.
    unsafe {
        std::ptr::write_bytes(
            header.cast::<u8>().add(start),
            0xAA,
            seg.end as usize - start,
        )
    };
}

/// The init-on-write contract over `api`: with the mirror's slots poisoned
/// before runs 1, 2 and 10 (different N each), every field the device reads
/// for slots [0, N) holds what the host wrote or what claim_slot initialized.
fn poison_contract(api: HostApi, window: u64, policy: lrt_upload_policy, flags: u32) {
    let cfg = MakerConfig {
        task_window: window,
        policy,
        pin_mirror: flags & MAKER_PIN_MIRROR != 0,
        ..MakerConfig::default()
    };
    let mut maker = MakerV1::new(&cfg, dev_of(&api)).expect("maker on the CUDA api");
    let w = window as usize;
    let plan = |run: u64| -> usize {
        match run {
            1 => w / 2 + 1,
            2 => 3,
            10 => w,
            _ => (run as usize * 7) % w,
        }
    };
    for run in 1..=10u64 {
        let n = plan(run);
        let header = maker.begin_run().unwrap();
        if matches!(run, 1 | 2 | 10) {
            poison_mirror(&maker, header);
        }
        for i in 0..n {
            let slot = maker.claim_slot().unwrap();
            assert_eq!(slot.index as usize, i);
            write_task(&slot, i, run);
        }
        let report = maker
            .upload()
            .unwrap_or_else(|e| panic!("upload: {e:?} / {:?}", take_last_error()));
        assert_eq!(report.total_tasks as usize, n);
        if matches!(run, 1 | 2 | 10) {
            let (_, slots) = device_view(&maker, &api, n);
            for (i, got) in slots.iter().enumerate() {
                assert_eq!(
                    got,
                    &expected(i, run),
                    "{policy:?} run {run}: slot {i} of {n}"
                );
            }
        }
        assert_eq!(maker.read_status().unwrap(), 0);
    }
}

/// Counts the copies and bytes going through to an inner api.
struct Counting {
    inner: HostApi,
    copies: AtomicU64,
    bytes: AtomicU64,
}

unsafe extern "C" fn count_malloc(ctx: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: ctx is a live Counting (the test keeps it alive).
    let c = unsafe { &*ctx.cast::<Counting>() };
    // SAFETY: forwarded under the same contract.
    unsafe { (*c.inner.ops).device_malloc.unwrap()(c.inner.ctx, size) }
}
unsafe extern "C" fn count_free(ctx: *mut c_void, p: *mut c_void) {
    // SAFETY: as above.
    let c = unsafe { &*ctx.cast::<Counting>() };
    // SAFETY: forwarded under the same contract.
    unsafe { (*c.inner.ops).device_free.unwrap()(c.inner.ctx, p) }
}
unsafe extern "C" fn count_to(ctx: *mut c_void, d: *mut c_void, s: *const c_void, n: usize) -> i32 {
    // SAFETY: as above.
    let c = unsafe { &*ctx.cast::<Counting>() };
    c.copies.fetch_add(1, Ordering::Relaxed);
    c.bytes.fetch_add(n as u64, Ordering::Relaxed);
    // SAFETY: forwarded under the same contract.
    unsafe { (*c.inner.ops).copy_to_device.unwrap()(c.inner.ctx, d, s, n) }
}
unsafe extern "C" fn count_from(
    ctx: *mut c_void,
    d: *mut c_void,
    s: *const c_void,
    n: usize,
) -> i32 {
    // SAFETY: as above.
    let c = unsafe { &*ctx.cast::<Counting>() };
    // SAFETY: forwarded under the same contract.
    unsafe { (*c.inner.ops).copy_from_device.unwrap()(c.inner.ctx, d, s, n) }
}
static COUNT_OPS: HostApiOps = HostApiOps {
    device_malloc: Some(count_malloc),
    device_free: Some(count_free),
    copy_to_device: Some(count_to),
    copy_from_device: Some(count_from),
};

/// The copy contract over `api`: BOUNDED ships 320 + 4969·N bytes in at most
/// 4 copies, COMPACT one copy, FULL the whole image; what the device reads is
/// the same under all three.
fn copy_contract(api: HostApi, window: u64) {
    let mut views = Vec::new();
    // At W = 64, 50 slots make a 249 KB compact image: COMPACT copies the
    // live prefixes straight to their compact offsets instead of gathering.
    for n in [0usize, 1, 5, 50, window as usize] {
        let mut per_policy = Vec::new();
        for policy in [
            lrt_upload_policy::LRT_UPLOAD_FULL,
            lrt_upload_policy::LRT_UPLOAD_BOUNDED,
            lrt_upload_policy::LRT_UPLOAD_COMPACT,
            lrt_upload_policy::LRT_UPLOAD_AUTO,
        ] {
            let counting = Box::new(Counting {
                inner: api,
                copies: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
            });
            let wrapped = HostApi {
                ctx: (&*counting as *const Counting).cast_mut().cast(),
                ops: &COUNT_OPS,
            };
            let cfg = MakerConfig {
                task_window: window,
                policy,
                ..MakerConfig::default()
            };
            let mut maker = MakerV1::new(&cfg, dev_of(&wrapped)).unwrap();
            maker.begin_run().unwrap();
            for i in 0..n {
                let slot = maker.claim_slot().unwrap();
                write_task(&slot, i, 5);
            }
            let before = (
                counting.copies.load(Ordering::Relaxed),
                counting.bytes.load(Ordering::Relaxed),
            );
            let r = maker.upload().unwrap();
            let copies = counting.copies.load(Ordering::Relaxed) - before.0;
            let bytes = counting.bytes.load(Ordering::Relaxed) - before.1;
            assert_eq!(
                (r.copies as u64, r.bytes),
                (copies, bytes),
                "{policy:?} N={n}: report"
            );
            let seg = maker.segments();
            // AUTO ships as BOUNDED or as a gathered COMPACT and says which.
            let shape = if policy == lrt_upload_policy::LRT_UPLOAD_AUTO {
                r.path
            } else {
                policy
            };
            assert_eq!(r.path, shape);
            let direct = policy == lrt_upload_policy::LRT_UPLOAD_COMPACT
                && n != window as usize
                && 320 + 4969 * n as u64 > leanrt::staging::COMPACT_GATHER_MAX_BYTES;
            match shape {
                lrt_upload_policy::LRT_UPLOAD_FULL => assert_eq!((copies, bytes), (1, seg.end)),
                lrt_upload_policy::LRT_UPLOAD_BOUNDED => {
                    assert_eq!(bytes, 320 + 4969 * n as u64, "N={n}");
                    assert!((1..=4).contains(&copies), "N={n}: {copies} copies");
                }
                _ if direct => {
                    assert_eq!(bytes, 320 + 4969 * n as u64, "N={n}");
                    assert_eq!(copies, 4, "N={n}: COMPACT straight to its offsets");
                }
                _ => assert_eq!(copies, 1),
            }
            let (_, view) = device_view(&maker, &wrapped, n);
            per_policy.push(view);
            drop(maker);
        }
        assert!(
            per_policy[0] == per_policy[1],
            "N={n}: FULL and BOUNDED differ on the device"
        );
        assert!(
            per_policy[0] == per_policy[2],
            "N={n}: FULL and COMPACT differ on the device"
        );
        assert!(
            per_policy[0] == per_policy[3],
            "N={n}: FULL and AUTO differ on the device"
        );
        for (i, v) in per_policy[0].iter().enumerate() {
            assert_eq!(v, &expected(i, 5));
        }
        views.push(per_policy);
    }
    assert_eq!(views.len(), 5);
}

// ---------------------------------------------------------------------------
// Mock tests

#[test]
fn mock_round_trip_from_any_thread() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let (allocs, no_ctx) = (m.get("live_allocs"), m.get("no_ctx_errors"));
    let mut api = m.api();
    assert!(cdev::cuda_device_of(&api).is_ok());
    assert_eq!(cdev::cuda_device_of(&api).unwrap().ordinal(), 0);
    round_trip(&api, 1 << 20);
    assert_eq!(m.get("live_allocs"), allocs, "the allocation was freed");
    assert_eq!(
        m.get("no_ctx_errors"),
        no_ctx,
        "every driver call had a current context"
    );
    assert_eq!(m.get("thread_depth"), 0, "every push was popped");
    cdev::release(&mut api);
    assert!(api.ctx.is_null() && api.ops.is_null());
}

#[test]
fn mock_invalid_ordinal_and_no_device_are_unavailable() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let retained = m.get("retained");
    for (dev, want) in [
        (1, "no CUDA device 1 (found 1)"),
        (-1, "no CUDA device -1 (found 1)"),
    ] {
        let e = cuda::open_with_library(&m.path, dev).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert!(e.message().contains(want), "{}", e.message());
    }
    m.set("device_count", 3);
    let mut api = cuda::open_with_library(&m.path, 2)
        .and_then(cdev::cuda_api)
        .expect("device 2 of 3");
    assert_eq!(cdev::cuda_device_of(&api).unwrap().ordinal(), 2);
    cdev::release(&mut api);
    m.set("device_count", 0);
    let e = cuda::open_with_library(&m.path, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(
        e.message().contains("no CUDA device 0 (found 0)"),
        "{}",
        e.message()
    );
    assert!(
        e.message().contains("CUDA_ERROR_NO_DEVICE"),
        "{}",
        e.message()
    );
    m.set("device_count", 1);
    m.set("fail_init", 3);
    let e = cuda::open_with_library(&m.path, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(
        e.message().contains("CUDA_ERROR_NOT_INITIALIZED"),
        "{}",
        e.message()
    );
    m.set("fail_init", 0);
    m.set("fail_retain", 201);
    let e = cuda::open_with_library(&m.path, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device);
    assert!(
        e.message().contains("CUDA_ERROR_INVALID_CONTEXT"),
        "{}",
        e.message()
    );
    assert_eq!(
        m.get("retained"),
        retained,
        "no context retained by a failed open"
    );
}

#[test]
fn mock_errors_carry_cuda_names() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let mut api = m.api();
    oversized_alloc(&api, 1 << 46);
    bad_copy(&api);
    // Injected copy failures, with a code the driver has no name for.
    let d = malloc(&api, 256);
    m.set("fail_htod_at", 2);
    assert_eq!(to_device(&api, d, &[1; 16]), 0);
    assert_ne!(to_device(&api, d, &[1; 16]), 0);
    assert!(lrt_last_error().contains("CUDA_ERROR_UNKNOWN"));
    let msg = take_last_error().unwrap();
    assert!(
        msg.starts_with("cuda copy_to_device: cuMemcpyHtoD_v2"),
        "{msg}"
    );
    assert!(msg.contains("CUDA_ERROR_UNKNOWN (unknown error)"), "{msg}");
    assert_eq!(to_device(&api, d, &[1; 16]), 0, "the failure was once");
    assert_eq!(take_last_error(), None, "a successful call leaves no error");
    m.set("fail_code", 12345);
    m.set("fail_dtoh_at", 1);
    let mut back = [0u8; 16];
    assert_ne!(from_device(&api, &mut back, d), 0);
    let msg = take_last_error().unwrap();
    assert!(msg.contains("CUDA error 12345"), "{msg}");
    free(&api, d);
    cdev::release(&mut api);
}

#[test]
fn mock_release_returns_the_context_and_kills_the_token() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let retained = m.get("retained");
    let mut api = m.api();
    let copy = api;
    assert_eq!(m.get("retained"), retained + 1);
    cdev::release(&mut api);
    assert_eq!(
        m.get("retained"),
        retained,
        "the primary context retain was returned"
    );
    // A stale copy: callbacks fail cleanly, release is a no-op.
    assert!(malloc(&copy, 64).is_null());
    assert!(take_last_error().unwrap().contains("not live"));
    let mut copy = copy;
    cdev::release(&mut copy);
    assert_eq!(m.get("retained"), retained);
    cdev::release(&mut api); // already cleared: no-op
}

#[test]
fn mock_pinning_registers_portably_and_unpins_on_drop() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let mut api = m.api();
    let mut buf = vec![0u8; 1 << 16];
    let (regs, no_ctx) = (m.get("live_registrations"), m.get("no_ctx_errors"));
    let region = pin(&api, buf.as_mut_ptr(), buf.len()).expect("pin");
    assert_eq!(m.get("live_registrations"), regs + 1);
    assert_eq!(
        m.get("last_register_flags"),
        1,
        "CU_MEMHOSTREGISTER_PORTABLE"
    );
    // Pinning the same range twice is CUDA's error, reported as Device.
    let e = pin(&api, buf.as_mut_ptr(), buf.len()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Device);
    assert!(
        e.message()
            .contains("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"),
        "{}",
        e.message()
    );
    // The region outlives the api: it keeps the context until it unpins.
    let retained = m.get("retained");
    cdev::release(&mut api);
    assert_eq!(m.get("retained"), retained, "still held by the region");
    drop(region);
    assert_eq!(m.get("live_registrations"), regs);
    assert_eq!(m.get("retained"), retained - 1);
    assert_eq!(m.get("no_ctx_errors"), no_ctx);
    // Bad ranges are rejected up front.
    let api = m.api();
    assert_eq!(
        pin(&api, std::ptr::null_mut(), 64).err().unwrap().kind(),
        ErrorKind::InvalidArgument
    );
    let mut api = api;
    cdev::release(&mut api);
}

#[test]
fn mock_maker_poison_contract() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let mut api = m.api();
    let bad = m.get("bad_copies");
    for policy in [
        lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        lrt_upload_policy::LRT_UPLOAD_COMPACT,
        lrt_upload_policy::LRT_UPLOAD_FULL,
        lrt_upload_policy::LRT_UPLOAD_AUTO,
    ] {
        poison_contract(api, 64, policy, 0);
    }
    poison_contract(
        api,
        64,
        lrt_upload_policy::LRT_UPLOAD_COMPACT,
        MAKER_PIN_MIRROR,
    );
    assert_eq!(m.get("bad_copies"), bad, "no copy left its allocation");
    cdev::release(&mut api);
}

#[test]
fn mock_maker_copy_contract() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let mut api = m.api();
    copy_contract(api, 64);
    cdev::release(&mut api);
}

#[test]
fn mock_maker_fault_paths() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let mut api = m.api();
    let (allocs, regs, no_ctx) = (
        m.get("live_allocs"),
        m.get("live_registrations"),
        m.get("no_ctx_errors"),
    );
    let cfg = MakerConfig {
        task_window: 64,
        policy: lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        pin_mirror: true,
        ..MakerConfig::default()
    };
    // An image larger than the device: NoMemory at create, nothing leaked.
    m.set("total_mem", 4096);
    let e = MakerV1::new(&cfg, dev_of(&api))
        .err()
        .expect("create fails");
    assert_eq!(e.kind(), ErrorKind::NoMemory);
    // The maker's message carries CUDA's reason.
    assert!(e.message().contains("CUDA_ERROR_OUT_OF_MEMORY"), "{e}");
    assert_eq!(m.get("live_allocs"), allocs);
    assert_eq!(m.get("live_registrations"), regs);
    m.set("total_mem", 4 << 30);

    // Pinned mirror: registered once at create, unregistered at drop.
    let bytes = m.get("registered_bytes");
    let mut maker = MakerV1::new(&cfg, dev_of(&api)).unwrap();
    assert_eq!(m.get("live_registrations"), regs + 1);
    assert_eq!(
        (m.get("registered_bytes") - bytes) as u64,
        maker.segments().end
    );
    // The k-th copy fails: Device, and the next run succeeds.
    maker.begin_run().unwrap();
    for i in 0..5 {
        write_task(&maker.claim_slot().unwrap(), i, 1);
    }
    m.set("fail_htod_at", 2);
    let e = maker.upload().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device);
    assert!(e.message().contains("CUDA_ERROR_UNKNOWN"), "{e}");
    maker.begin_run().unwrap();
    for i in 0..4 {
        write_task(&maker.claim_slot().unwrap(), i, 2);
    }
    let r = maker.upload().unwrap();
    assert_eq!(r.bytes, 320 + 4969 * 4);
    let (_, slots) = device_view(&maker, &api, 4);
    for (i, s) in slots.iter().enumerate() {
        assert_eq!(s, &expected(i, 2));
    }
    // The maker may move to another thread: callbacks work there too.
    let maker = std::thread::spawn(move || {
        let mut maker = maker;
        maker.begin_run().unwrap();
        maker.claim_slot().unwrap();
        assert_eq!(maker.upload().unwrap().total_tasks, 1);
        assert_eq!(maker.read_status().unwrap(), 0);
        maker
    })
    .join()
    .unwrap();
    drop(maker);
    assert_eq!(m.get("live_registrations"), regs);
    assert_eq!(m.get("live_allocs"), allocs);

    // Pinning refused: a warning, and the maker works unpinned.
    m.set("fail_register", 2);
    let mut maker = MakerV1::new(&cfg, dev_of(&api)).unwrap();
    assert_eq!(m.get("live_registrations"), regs);
    maker.begin_run().unwrap();
    maker.claim_slot().unwrap();
    maker.upload().unwrap();
    drop(maker);
    assert_eq!(m.get("no_ctx_errors"), no_ctx);
    cdev::release(&mut api);
}

/// Runs `ns` in order on `maker` (one run each, tasks written), checking
/// the device image of the last slot of every run.
fn runs_of(maker: &mut MakerV1, api: &HostApi, ns: &[usize]) {
    for (run, &n) in ns.iter().enumerate() {
        maker.begin_run().unwrap();
        for i in 0..n {
            write_task(&maker.claim_slot().unwrap(), i, run as u64 + 1);
        }
        let r = maker.upload().unwrap();
        assert_eq!(r.total_tasks as usize, n);
        if n > 0 {
            let (_, slots) = device_view(maker, api, n);
            assert_eq!(
                slots[n - 1],
                expected(n - 1, run as u64 + 1),
                "run {run}, N = {n}"
            );
        }
    }
}

#[test]
fn mock_pinning_follows_the_runs() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let mut api = m.api();
    let (regs, bytes) = (m.get("live_registrations"), m.get("registered_bytes"));

    // A large window pins its header and small prefixes at create, not the
    // 651 MB image.
    let big = MakerConfig {
        task_window: 131072,
        policy: lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        pin_mirror: true,
        ..MakerConfig::default()
    };
    let maker = MakerV1::new(&big, dev_of(&api)).unwrap();
    let pinned = (m.get("registered_bytes") - bytes) as u64;
    assert!(pinned > 0);
    assert!(pinned < 1 << 20, "{pinned} bytes registered at create");
    assert!(pinned * 1000 < maker.segments().end);
    assert_eq!(pinned, maker.pinned_bytes());
    drop(maker);
    assert_eq!(m.get("registered_bytes"), bytes);
    assert_eq!(m.get("live_registrations"), regs);

    // Growing runs re-pin O(log W) times, repeated runs never; no copy ever
    // reads unregistered memory.
    let w = 16384usize;
    let cfg = MakerConfig {
        task_window: w as u64,
        ..big
    };
    let unpinned = m.get("htod_unpinned_calls");
    let mut maker = MakerV1::new(&cfg, dev_of(&api)).unwrap();
    let at_create = m.get("register_calls");
    runs_of(&mut maker, &api, &[0, 1, 5, 64, 64, 64]);
    assert_eq!(
        m.get("register_calls"),
        at_create,
        "N <= 64 is pinned at create"
    );
    let mut n = 65;
    let mut growths = 0;
    while n <= w {
        let before = m.get("register_calls");
        runs_of(&mut maker, &api, &[n, n, n]);
        let grew = m.get("register_calls") - before;
        // One growth per segment at most, and only in the first run of an N.
        assert!(grew <= 4, "N = {n}: {grew} registrations");
        growths += grew;
        let again = m.get("register_calls");
        runs_of(&mut maker, &api, &[n, n / 2, 1, n]);
        assert_eq!(m.get("register_calls"), again, "N = {n} again: no re-pin");
        n = n * 2 - 1;
    }
    // Doubling from 64 to W: log2(W / 64) = 8 growths of at most 4 segments.
    assert!(
        growths <= 4 * 8 + 4,
        "{growths} registrations while growing"
    );
    assert_eq!(
        m.get("htod_unpinned_calls"),
        unpinned,
        "every copy read pinned memory"
    );
    assert!(maker.pinned_bytes() >= maker.segments().end - 4096);
    drop(maker);
    assert_eq!(m.get("registered_bytes"), bytes);
    assert_eq!(m.get("live_registrations"), regs);
    cdev::release(&mut api);
}

#[test]
fn mock_every_policy_copies_from_pinned_memory() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let mut api = m.api();
    let (regs, bytes, unpinned) = (
        m.get("live_registrations"),
        m.get("registered_bytes"),
        m.get("htod_unpinned_calls"),
    );
    let w = 2048usize;
    for policy in [
        lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        lrt_upload_policy::LRT_UPLOAD_COMPACT,
        lrt_upload_policy::LRT_UPLOAD_FULL,
        lrt_upload_policy::LRT_UPLOAD_AUTO,
    ] {
        for fresh_mirror in [false, true] {
            let cfg = MakerConfig {
                task_window: w as u64,
                policy,
                pin_mirror: true,
                fresh_mirror,
                ..MakerConfig::default()
            };
            let mut maker = MakerV1::new(&cfg, dev_of(&api)).unwrap();
            if policy != lrt_upload_policy::LRT_UPLOAD_FULL {
                assert!(
                    maker.pinned_bytes() < maker.segments().end / 4,
                    "{policy:?}"
                );
            }
            // Small (gathered), large (straight), whole-window runs.
            runs_of(&mut maker, &api, &[0, 3, 40, 1000, w, 7, 100, w - 1]);
            assert!(!maker.pin_failed());
            assert_eq!(
                m.get("htod_unpinned_calls"),
                unpinned,
                "{policy:?} fresh {fresh_mirror}: a copy read pageable memory"
            );
        }
    }
    assert_eq!(m.get("registered_bytes"), bytes);
    assert_eq!(m.get("live_registrations"), regs);
    // Without pinning, copies read pageable memory (the counter works).
    let cfg = MakerConfig {
        task_window: 64,
        ..MakerConfig::default()
    };
    let mut maker = MakerV1::new(&cfg, dev_of(&api)).unwrap();
    runs_of(&mut maker, &api, &[3]);
    assert!(m.get("htod_unpinned_calls") > unpinned);
    drop(maker);
    cdev::release(&mut api);
}

#[test]
fn mock_failed_growth_falls_back_to_pageable() {
    let _g = serial();
    let Some(m) = mock() else { return };
    let mut api = m.api();
    let (regs, bytes) = (m.get("live_registrations"), m.get("registered_bytes"));
    let cfg = MakerConfig {
        task_window: 4096,
        policy: lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        pin_mirror: true,
        ..MakerConfig::default()
    };
    let mut maker = MakerV1::new(&cfg, dev_of(&api)).unwrap();
    let at_create = maker.pinned_bytes();
    assert!(at_create > 0 && !maker.pin_failed());
    m.set("fail_register", 2);
    // The growth fails: the run still ships (from pageable memory), what was
    // pinned stays pinned, and no later run tries again.
    runs_of(&mut maker, &api, &[500]);
    assert!(maker.pin_failed());
    let calls = m.get("register_calls");
    m.set("fail_register", 0);
    runs_of(&mut maker, &api, &[1000, 4096, 10]);
    assert_eq!(m.get("register_calls"), calls, "no retry after a failure");
    assert!(maker.pinned_bytes() <= at_create);
    drop(maker);
    assert_eq!(m.get("registered_bytes"), bytes);
    assert_eq!(m.get("live_registrations"), regs);
    cdev::release(&mut api);
}

#[test]
fn mock_device_info() {
    let _g = serial();
    let Some(m) = mock() else { return };
    m.set("device_count", 2);
    let info = cuda::device_info_with_library(&m.path, 1).unwrap();
    assert_eq!(info.device_count, 2);
    assert_eq!(info.ordinal, 1);
    assert_eq!(info.name, "leanrt mock CUDA device 1");
    assert_eq!(info.total_mem, 4 << 30);
    assert_eq!(info.driver_version, 12040);
    assert_eq!(
        cuda::device_info_with_library(&m.path, 2)
            .unwrap_err()
            .kind(),
        ErrorKind::Unavailable
    );
}

// ---------------------------------------------------------------------------
// Real-GPU tests

#[test]
fn gpu_round_trip() {
    let _g = serial();
    let Some(mut api) = gpu() else { return };
    round_trip(&api, 64 << 20);
    round_trip(&api, 4097);
    cdev::release(&mut api);
}

#[test]
fn gpu_fault_paths() {
    let _g = serial();
    let Some(mut api) = gpu() else { return };
    let info = cuda::device_info(0).unwrap();
    println!("device 0: {info:?}");
    let e = cuda::open(info.device_count).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    let want = format!(
        "no CUDA device {} (found {})",
        info.device_count, info.device_count
    );
    assert!(e.message().contains(&want), "{}", e.message());
    oversized_alloc(&api, (info.total_mem + (64 << 30)) as usize);
    bad_copy(&api);
    // The api still works after the faults.
    round_trip(&api, 1 << 20);
    cdev::release(&mut api);
}

#[test]
fn gpu_pinning() {
    let _g = serial();
    let Some(mut api) = gpu() else { return };
    let len = 16 << 20;
    let data = pattern(len, 99);
    // Page-aligned, like the maker's mirror.
    // SAFETY: an anonymous mapping has no preconditions; checked below.
    let buf = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(buf, libc::MAP_FAILED);
    // SAFETY: the mapping is len bytes, ours alone until munmap below.
    let host = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    host.copy_from_slice(&data);
    let region = pin(&api, host.as_mut_ptr(), len).expect("cuMemHostRegister");
    let d = malloc(&api, len);
    assert!(!d.is_null());
    assert_eq!(to_device(&api, d, host), 0);
    let mut back = vec![0u8; len];
    assert_eq!(from_device(&api, &mut back, d), 0);
    assert!(back == data);
    // Pinning the same range again is refused by the driver, not a crash.
    let again = pin(&api, host.as_mut_ptr(), len);
    assert_eq!(again.err().map(|e| e.kind()), Some(ErrorKind::Device));
    free(&api, d);
    drop(region);
    // SAFETY: unpinned above; the mapping made here, unmapped once.
    unsafe { libc::munmap(buf, len) };
    cdev::release(&mut api);
}

#[test]
fn gpu_maker_poison_contract() {
    let _g = serial();
    let Some(mut api) = gpu() else { return };
    for policy in [
        lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        lrt_upload_policy::LRT_UPLOAD_COMPACT,
        lrt_upload_policy::LRT_UPLOAD_FULL,
        lrt_upload_policy::LRT_UPLOAD_AUTO,
    ] {
        poison_contract(api, 1024, policy, 0);
        poison_contract(api, 1024, policy, MAKER_PIN_MIRROR);
    }
    cdev::release(&mut api);
}

#[test]
fn gpu_maker_copy_contract() {
    let _g = serial();
    let Some(mut api) = gpu() else { return };
    copy_contract(api, 1024);
    cdev::release(&mut api);
}
