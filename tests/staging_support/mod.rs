//! Shared by the staging tests: the fake device (one for every Rust test,
//! with a core face and a C face), the reference goldens (read from the
//! table the C tests include too), the task content the tests write and
//! readers for the device image.
#![allow(dead_code)]
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use leanrt::device::host::HostDevice;
use leanrt::device::{CopyCost, Device};
use leanrt::ffi::device::{lrt_host_api as HostApi, lrt_host_api_ops as HostApiOps};
use leanrt::staging::{lrt_sm_header, lrt_task_descriptor, lrt_task_payload};
use leanrt::{Error, Result};

pub const POISON: u8 = 0xAA;

/// Which device call a fault is injected into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    Malloc,
    Free,
    ToDevice,
    FromDevice,
}

/// What the fake device saw, and how it should misbehave.
#[derive(Default, Debug)]
pub struct DeviceState {
    /// Live allocations: base address -> buffer.
    pub live: BTreeMap<usize, DeviceBuf>,
    /// Calls made, per op (failed calls included).
    pub calls: BTreeMap<Op, u64>,
    /// (offset in its allocation, length) of every successful copy to the
    /// device.
    pub copies: Vec<(usize, usize)>,
    /// Fail the k-th call (1-based, counted per op) of each op listed.
    pub fail_at: BTreeMap<Op, u64>,
    /// Fail every call of these ops.
    pub fail_always: Vec<Op>,
    /// Larger allocations fail, as on a device that is out of memory.
    pub max_alloc: Option<usize>,
    /// Protocol violations seen (bad frees, out-of-bounds copies, ...): a
    /// non-empty list is a test failure.
    pub violations: Vec<String>,
    pub total_allocs: u64,
    pub total_frees: u64,
}

/// The one fake device of the Rust tests: device memory is 64-aligned host
/// memory owned by the test, poisoned with [`POISON`] on allocation; every
/// call is counted and checked (copies stay inside live allocations, frees
/// match allocations), and `fail_at`/`fail_always` inject failures. It
/// serves the core as a [`Device`] ([`FakeDevice::device`]) and the C
/// surface as an `lrt_host_api` ([`FakeDevice::host_api`]); both faces share
/// one state.
#[derive(Clone, Default)]
pub struct FakeDevice {
    state: Arc<Mutex<DeviceState>>,
    cost: Option<CopyCost>,
}

impl FakeDevice {
    pub fn new() -> Self {
        Self::default()
    }
    /// A device whose allocations above `max_alloc` bytes fail.
    pub fn limited(max_alloc: usize) -> Self {
        let d = Self::default();
        d.state().max_alloc = Some(max_alloc);
        d
    }
    pub fn state(&self) -> MutexGuard<'_, DeviceState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// The core face.
    pub fn device(&self) -> Arc<dyn Device> {
        Arc::new(self.clone())
    }
    /// The core face, claiming `cost` as its copy cost.
    pub fn device_with_cost(&self, cost: CopyCost) -> Arc<dyn Device> {
        Arc::new(FakeDevice {
            cost: Some(cost),
            ..self.clone()
        })
    }
    /// The C face; valid while `self` lives (and does not move).
    pub fn host_api(&self) -> HostApi {
        HostApi {
            ctx: self as *const FakeDevice as *mut c_void,
            ops: &FAKE_OPS,
        }
    }
    pub fn calls(&self, op: Op) -> u64 {
        self.state().calls.get(&op).copied().unwrap_or(0)
    }
    pub fn fail_at(&self, op: Op, k: u64) {
        self.state().fail_at.insert(op, k);
    }
    pub fn fail_always(&self, op: Op) {
        self.state().fail_always.push(op);
    }
    pub fn live_count(&self) -> usize {
        self.state().live.len()
    }
    /// The recorded copies to the device.
    pub fn copies(&self) -> Vec<(usize, usize)> {
        self.state().copies.clone()
    }
    /// Forgets the recorded copies.
    pub fn reset_copies(&self) {
        self.state().copies.clear();
    }
    pub fn copied_bytes(&self) -> usize {
        self.state().copies.iter().map(|x| x.1).sum()
    }
    /// Panics if a call was misused.
    pub fn assert_clean(&self, context: &str) {
        let st = self.state();
        assert!(
            st.violations.is_empty(),
            "{context}: device protocol violations: {:?}",
            st.violations
        );
    }
    /// Size and content of the live allocation starting at `base`.
    pub fn with_alloc<R>(&self, base: *mut c_void, f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        let mut st = self.state();
        st.live
            .get_mut(&(base as usize))
            .map(|buf| f(buf.bytes_mut()))
    }

    /// Counts the call and reports whether it must fail.
    fn enter(st: &mut DeviceState, op: Op) -> bool {
        let n = st.calls.entry(op).or_insert(0);
        *n += 1;
        let n = *n;
        st.fail_always.contains(&op) || st.fail_at.get(&op) == Some(&n)
    }

    /// The live allocation containing `[addr, addr + size)`: its base and
    /// the range.
    fn find(st: &mut DeviceState, addr: usize, size: usize) -> Option<(usize, &mut [u8])> {
        let (&base, buf) = st.live.range_mut(..=addr).next_back()?;
        let off = addr - base;
        let bytes = buf.bytes_mut();
        if off.checked_add(size)? <= bytes.len() {
            Some((base, &mut bytes[off..off + size]))
        } else {
            None
        }
    }

    fn do_alloc(&self, size: usize) -> Option<*mut u8> {
        let mut st = self.state();
        if size == 0 {
            st.violations.push("device_malloc(0)".into());
        }
        let too_big = st.max_alloc.is_some_and(|m| size > m);
        if Self::enter(&mut st, Op::Malloc) || size == 0 || too_big {
            return None;
        }
        let buf = DeviceBuf::new(size);
        let base = buf.base();
        st.total_allocs += 1;
        st.live.insert(base, buf);
        Some(base as *mut u8)
    }

    fn do_free(&self, p: *mut u8) {
        let mut st = self.state();
        Self::enter(&mut st, Op::Free);
        if st.live.remove(&(p as usize)).is_some() {
            st.total_frees += 1;
        } else {
            st.violations
                .push(format!("device_free({p:p}) of no live allocation"));
        }
    }

    fn do_copy_to(&self, dst: *mut u8, src: *const u8, n: usize) -> bool {
        let mut st = self.state();
        if Self::enter(&mut st, Op::ToDevice) {
            return false;
        }
        if src.is_null() {
            st.violations.push("copy_to_device from NULL".into());
            return false;
        }
        match Self::find(&mut st, dst as usize, n) {
            Some((base, d)) => {
                // SAFETY: the maker passes a host range valid for `n` bytes.
                d.copy_from_slice(unsafe { std::slice::from_raw_parts(src, n) });
                st.copies.push((dst as usize - base, n));
                true
            }
            None => {
                st.violations.push(format!(
                    "copy_to_device({dst:p}, {n}) outside every live allocation"
                ));
                false
            }
        }
    }

    fn do_copy_from(&self, dst: *mut u8, src: *const u8, n: usize) -> bool {
        let mut st = self.state();
        if Self::enter(&mut st, Op::FromDevice) {
            return false;
        }
        if dst.is_null() {
            st.violations.push("copy_from_device to NULL".into());
            return false;
        }
        match Self::find(&mut st, src as usize, n) {
            Some((_, s)) => {
                // SAFETY: the maker passes a host destination valid for `n`
                // bytes.
                unsafe { std::slice::from_raw_parts_mut(dst, n) }.copy_from_slice(s);
                true
            }
            None => {
                st.violations.push(format!(
                    "copy_from_device({src:p}, {n}) outside every live allocation"
                ));
                false
            }
        }
    }
}

impl Device for FakeDevice {
    fn alloc(&self, size: usize) -> Result<*mut u8> {
        self.do_alloc(size)
            .ok_or_else(|| Error::no_memory("fake device: malloc refused"))
    }
    unsafe fn free(&self, p: *mut u8) {
        self.do_free(p)
    }
    unsafe fn copy_to(&self, dst: *mut u8, src: *const u8, n: usize) -> Result<()> {
        self.do_copy_to(dst, src, n)
            .then_some(())
            .ok_or_else(|| Error::device("fake device: copy refused (-5)"))
    }
    unsafe fn copy_from(&self, dst: *mut u8, src: *const u8, n: usize) -> Result<()> {
        self.do_copy_from(dst, src, n)
            .then_some(())
            .ok_or_else(|| Error::device("fake device: copy back refused (-5)"))
    }
    fn copy_cost(&self) -> Option<CopyCost> {
        self.cost
    }
}

/// Device memory: 64-byte aligned like real device allocations.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Chunk([u8; 64]);

pub struct DeviceBuf {
    chunks: Vec<Chunk>,
    size: usize,
}

impl DeviceBuf {
    fn new(size: usize) -> Self {
        DeviceBuf {
            chunks: vec![Chunk([POISON; 64]); size.div_ceil(64).max(1)],
            size,
        }
    }
    fn base(&self) -> usize {
        self.chunks.as_ptr() as usize
    }
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: Chunk is 64 plain bytes without padding, so the vector's
        // storage is `chunks.len() * 64` initialized bytes; size <= that.
        unsafe { std::slice::from_raw_parts_mut(self.chunks.as_mut_ptr().cast::<u8>(), self.size) }
    }
}

impl std::fmt::Debug for DeviceBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuf({:#x}, {})", self.base(), self.size)
    }
}

fn fake<'a>(ctx: *mut c_void) -> &'a FakeDevice {
    // SAFETY: ctx is the FakeDevice whose `host_api()` leanrt was given; the
    // test keeps it alive for as long as leanrt may call back.
    unsafe { &*(ctx as *const FakeDevice) }
}

unsafe extern "C" fn fake_malloc(ctx: *mut c_void, size: usize) -> *mut c_void {
    fake(ctx)
        .do_alloc(size)
        .map_or(std::ptr::null_mut(), |p| p.cast())
}

unsafe extern "C" fn fake_free(ctx: *mut c_void, p: *mut c_void) {
    fake(ctx).do_free(p.cast())
}

unsafe extern "C" fn fake_to_device(
    ctx: *mut c_void,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> i32 {
    i32::from(!fake(ctx).do_copy_to(dst.cast(), src.cast(), n))
}

unsafe extern "C" fn fake_from_device(
    ctx: *mut c_void,
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
) -> i32 {
    i32::from(!fake(ctx).do_copy_from(dst.cast(), src.cast(), n))
}

static FAKE_OPS: HostApiOps = HostApiOps {
    device_malloc: Some(fake_malloc),
    device_free: Some(fake_free),
    copy_to_device: Some(fake_to_device),
    copy_from_device: Some(fake_from_device),
};

/// The host backend as a core device.
pub fn host_device() -> Arc<dyn Device> {
    Arc::new(HostDevice)
}

/// The content the tests write into task `k` of a run (a representative mix:
/// empty tasks, tensors + scalars, fanins, everything).
#[derive(Clone, Debug, PartialEq)]
pub struct TaskContent {
    pub kernel_id: [i32; 3],
    pub fanins: Vec<i32>,
    pub tensors: Vec<[u64; 16]>,
    pub scalars: Vec<u64>,
}

pub fn content_for(run: u64, k: usize) -> TaskContent {
    let seed = run * 1_000_003 + k as u64;
    let kind = k % 4;
    let nt = if kind == 1 || kind == 3 {
        1 + (k % 32)
    } else {
        0
    };
    let ns = if kind == 1 || kind == 3 {
        1 + (k % 16)
    } else {
        0
    };
    let nf = if (kind == 2 || kind == 3) && k > 0 {
        1 + k.min(127) % 128
    } else {
        0
    };
    TaskContent {
        kernel_id: if kind == 0 {
            [-1; 3]
        } else {
            [k as i32, 7, -1]
        },
        fanins: (0..nf).map(|j| (j % k.max(1)) as i32).collect(),
        tensors: (0..nt)
            .map(|t| std::array::from_fn(|w| seed ^ ((t as u64) << 8) ^ w as u64))
            .collect(),
        scalars: (0..ns).map(|s| seed.wrapping_mul(31) + s as u64).collect(),
    }
}

/// Writes `c` through the slot's host pointers (the host's part after claim).
pub fn write_content(desc: *mut lrt_task_descriptor, pay: *mut lrt_task_payload, c: &TaskContent) {
    // SAFETY: pointers from claim_slot, valid until the next begin_run.
    let (d, p) = unsafe { (&mut *desc, &mut *pay) };
    d.kernel_id = c.kernel_id;
    p.fanin_count = c.fanins.len() as i32;
    p.fanin_local_ids[..c.fanins.len()].copy_from_slice(&c.fanins);
    p.tensor_count = c.tensors.len() as i32;
    p.tensors[..c.tensors.len()].copy_from_slice(&c.tensors);
    p.scalar_count = c.scalars.len() as i32;
    p.scalars[..c.scalars.len()].copy_from_slice(&c.scalars);
}

/// One task as the device sees it, read through the device header's
/// pointers; slot-state pointers are turned into element indices.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceTask {
    pub task_id: u64,
    pub kernel_id: [i32; 3],
    pub packed: (usize, usize),
    pub content: TaskContent,
    pub early_dispatch: [u64; 5],
    pub predicate: [u64; 3],
    /// The slot state with `payload`/`task` cleared (they differ per
    /// layout; see the indices below), as bytes.
    pub state: Vec<u8>,
    /// Whether the raw slot state held a poisoned word anywhere.
    pub state_poisoned: bool,
    pub payload_index: Option<usize>,
    pub task_index: Option<usize>,
    pub flag: u8,
}

/// Reads the device header at `image`.
pub fn device_header(image: *const c_void) -> lrt_sm_header {
    // SAFETY: the device image is host memory holding a shipped header.
    unsafe { *(image as *const lrt_sm_header) }
}

/// Reads task `i` through the device header's pointers.
pub fn device_task(h: &lrt_sm_header, i: usize) -> DeviceTask {
    // SAFETY: i < N, the header's pointers address the shipped segments of a
    // host-memory device image.
    let (d, p, s, f) = unsafe {
        (
            &*h.task_descriptors.add(i),
            &*h.task_payloads.add(i),
            *h.slot_states.add(i),
            *h.completion_flags.add(i),
        )
    };
    let count = |v: i32, max: usize| {
        assert!(v >= 0 && v as usize <= max, "count {v:#x} out of range");
        v as usize
    };
    let index_of = |ptr: usize, base: usize, size: usize| {
        (ptr != 0).then(|| {
            assert_eq!((ptr - base) % size, 0);
            (ptr - base) / size
        })
    };
    DeviceTask {
        task_id: d.task_id,
        kernel_id: d.kernel_id,
        packed: (d.packed_buffer_base as usize, d.packed_buffer_end as usize),
        content: TaskContent {
            kernel_id: d.kernel_id,
            fanins: p.fanin_local_ids[..count(p.fanin_count, 128)].to_vec(),
            tensors: p.tensors[..count(p.tensor_count, 32)].to_vec(),
            scalars: p.scalars[..count(p.scalar_count, 16)].to_vec(),
        },
        early_dispatch: p.early_dispatch,
        predicate: p.predicate,
        payload_index: index_of(s.payload as usize, h.task_payloads as usize, 4864),
        task_index: index_of(s.task as usize, h.task_descriptors as usize, 40),
        state: {
            let mut c = s;
            c.payload = std::ptr::null_mut();
            c.task = std::ptr::null_mut();
            bytes_of(&c).to_vec()
        },
        state_poisoned: has_poison(bytes_of(&s)),
        flag: f,
    }
}

/// Whether `bytes` holds a run of >= 4 poison bytes (a whole poisoned word).
pub fn has_poison(bytes: &[u8]) -> bool {
    bytes
        .windows(4.min(bytes.len()))
        .any(|w| w.iter().all(|&b| b == POISON))
}

pub fn bytes_of<T>(v: &T) -> &[u8] {
    // SAFETY: any T is readable as bytes for its size.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

/// The reference goldens table, shared with the C tests.
const GOLDENS: &str = include_str!("reference_goldens.inc");

/// The integers of each `NAME(a, b, ...)` line of the goldens table.
fn golden_rows(name: &str) -> Vec<Vec<i64>> {
    GOLDENS
        .lines()
        .filter_map(|l| l.trim().strip_prefix(name)?.strip_prefix('('))
        .map(|args| {
            args.trim_end_matches(')')
                .split(',')
                .map(|v| v.trim().parse().expect("an integer in the goldens table"))
                .collect()
        })
        .collect()
}

/// `[W, descriptors, payloads, slot_states, completion_flags, end]` for
/// every window the reference accepts.
pub fn golden_segments() -> Vec<[u64; 6]> {
    let rows = golden_rows("GOLDEN_SEGMENTS");
    assert_eq!(rows.len(), 17, "one row per window 4 .. 2^18");
    rows.iter()
        .map(|r| std::array::from_fn(|i| r[i] as u64))
        .collect()
}

/// The reference's segments for window `w`, if it accepts `w`.
pub fn golden_segments_for(w: u64) -> Option<[u64; 6]> {
    golden_segments().into_iter().find(|g| g[0] == w)
}

/// One device-read slot of the poison test's run, as the reference leaves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoldenSlot {
    pub last_consumer_local_id: i32,
    pub task_state: i32,
    pub active_mask: u8,
    pub task_attrs: u8,
    pub task_kind: u8,
    pub total_required_subtasks: i16,
    pub logical_block_num: i16,
    pub fanin_count: i32,
    pub fanin0: i32,
    pub completion_flag: u8,
}

/// The poison test's four slots.
pub fn golden_slots() -> Vec<GoldenSlot> {
    let rows = golden_rows("GOLDEN_SLOT");
    assert_eq!(rows.len(), 4, "the poison test's four tasks");
    rows.iter()
        .map(|r| GoldenSlot {
            last_consumer_local_id: r[0] as i32,
            task_state: r[1] as i32,
            active_mask: r[2] as u8,
            task_attrs: r[3] as u8,
            task_kind: r[4] as u8,
            total_required_subtasks: r[5] as i16,
            logical_block_num: r[6] as i16,
            fanin_count: r[7] as i32,
            fanin0: r[8] as i32,
            completion_flag: r[9] as u8,
        })
        .collect()
}
