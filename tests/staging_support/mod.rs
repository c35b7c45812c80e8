//! Shared by the staging tests: a counting device whose "device" is
//! poisoned host memory, and readers for the device image.
#![allow(dead_code)]
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use leanrt::device::host::HostDevice;
use leanrt::device::{CopyCost, Device};
use leanrt::staging::{lrt_sm_header, lrt_task_descriptor, lrt_task_payload};
use leanrt::{Error, Result};

pub const POISON: u8 = 0xAA;

/// What the counting api saw, and how it should misbehave.
#[derive(Default)]
pub struct Counter {
    /// (device offset, length) of every copy_to_device call.
    pub copies: Vec<(usize, usize)>,
    pub mallocs: usize,
    pub frees: usize,
    pub live: usize,
    /// Make device_malloc return NULL.
    pub fail_malloc: bool,
    /// Make the copy_to_device call with this 1-based number fail.
    pub fail_copy_at: Option<usize>,
    pub copy_calls: usize,
    pub base: usize,
    pub len: usize,
}

/// A core device over a shared `Mutex<Counter>`: 64-aligned host memory
/// poisoned with 0xAA, every copy recorded.
pub struct CountingApi {
    pub state: Arc<Mutex<Counter>>,
}

struct CountingDevice {
    state: Arc<Mutex<Counter>>,
    cost: Option<CopyCost>,
}

impl Device for CountingDevice {
    fn alloc(&self, size: usize) -> Result<*mut u8> {
        let mut c = self.state.lock().unwrap();
        c.mallocs += 1;
        if c.fail_malloc {
            return Err(Error::no_memory("counting device: malloc refused"));
        }
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: plain 64-aligned allocation (like a device allocator's),
        // poisoned below so that unshipped bytes show.
        if unsafe { libc::posix_memalign(&mut p, 64, size) } != 0 {
            return Err(Error::no_memory("posix_memalign failed"));
        }
        // SAFETY: p is valid for size bytes.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), POISON, size) };
        c.live += 1;
        c.base = p as usize;
        c.len = size;
        Ok(p.cast())
    }

    unsafe fn free(&self, p: *mut u8) {
        let mut c = self.state.lock().unwrap();
        c.frees += 1;
        if !p.is_null() {
            c.live -= 1;
        }
        // SAFETY: p came from alloc.
        unsafe { libc::free(p.cast()) };
    }

    unsafe fn copy_to(&self, dst: *mut u8, src: *const u8, n: usize) -> Result<()> {
        let mut c = self.state.lock().unwrap();
        c.copy_calls += 1;
        if c.fail_copy_at == Some(c.copy_calls) {
            return Err(Error::device("counting device: copy refused (-5)"));
        }
        let off = dst as usize - c.base;
        assert!(off + n <= c.len, "copy outside the device image");
        c.copies.push((off, n));
        // SAFETY: both ranges valid per the trait's contract (checked above
        // for dst).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
        Ok(())
    }

    unsafe fn copy_from(&self, dst: *mut u8, src: *const u8, n: usize) -> Result<()> {
        // SAFETY: both ranges valid per the trait's contract.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
        Ok(())
    }

    fn copy_cost(&self) -> Option<CopyCost> {
        self.cost
    }
}

impl CountingApi {
    pub fn new() -> Self {
        CountingApi {
            state: Arc::new(Mutex::new(Counter::default())),
        }
    }
    pub fn api(&self) -> Arc<dyn Device> {
        Arc::new(CountingDevice {
            state: Arc::clone(&self.state),
            cost: None,
        })
    }
    /// The same device, claiming `cost` as its copy cost.
    pub fn api_with_cost(&self, cost: CopyCost) -> Arc<dyn Device> {
        Arc::new(CountingDevice {
            state: Arc::clone(&self.state),
            cost: Some(cost),
        })
    }
    pub fn with<R>(&self, f: impl FnOnce(&mut Counter) -> R) -> R {
        f(&mut self.state.lock().unwrap())
    }
    /// Forgets the recorded copies.
    pub fn reset(&self) {
        self.with(|c| c.copies.clear());
    }
    pub fn copied_bytes(&self) -> usize {
        self.with(|c| c.copies.iter().map(|x| x.1).sum())
    }
}

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
