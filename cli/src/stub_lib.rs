//! TEMPORARY stand-ins for the agreed `leanrt::staging` / `leanrt::pool` /
//! host-backend APIs, used only with `--features stub-lib` until those land
//! in the library. Naive on purpose; never used for measurements.
#![allow(dead_code, clippy::all)]

pub mod device {
    pub use leanrt::device::*;
    pub mod host {
        use leanrt::device::{HostApi, HostApiOps, PinnedRegion};
        use std::ffi::c_void;
        unsafe extern "C" fn dm(_c: *mut c_void, size: usize) -> *mut c_void {
            libc::calloc(size.max(1), 1)
        }
        unsafe extern "C" fn df(_c: *mut c_void, p: *mut c_void) {
            libc::free(p)
        }
        unsafe extern "C" fn c2d(_c: *mut c_void, d: *mut c_void, s: *const c_void, n: usize) -> i32 {
            std::ptr::copy_nonoverlapping(s as *const u8, d as *mut u8, n);
            0
        }
        unsafe extern "C" fn c2h(_c: *mut c_void, d: *mut c_void, s: *const c_void, n: usize) -> i32 {
            std::ptr::copy_nonoverlapping(s as *const u8, d as *mut u8, n);
            0
        }
        static OPS: HostApiOps = HostApiOps {
            device_malloc: Some(dm),
            device_free: Some(df),
            copy_to_device: Some(c2d),
            copy_from_device: Some(c2h),
        };
        pub fn host_api() -> HostApi {
            HostApi { ctx: std::ptr::null_mut(), ops: &OPS }
        }
        pub fn pin(_p: *mut u8, _l: usize) -> leanrt::Result<PinnedRegion> {
            Err(leanrt::Error::unavailable("stub"))
        }
    }
    pub mod cuda {
        pub use leanrt::device::cuda::*;
    }
}

pub mod staging {
    use leanrt::device::HostApi;
    use leanrt::{Error, Result};
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SmSegments {
        pub header: u64,
        pub descriptors: u64,
        pub payloads: u64,
        pub slot_states: u64,
        pub completion_flags: u64,
        pub end: u64,
    }
    #[repr(C)]
    pub struct TaskDescriptor {
        pub task_id: u64,
    }
    #[repr(C)]
    pub struct TaskPayload {
        pub tensor_count: i32,
        pub scalar_count: i32,
        pub scalars: [u64; 16],
    }
    #[repr(C)]
    pub struct TaskSlotState {
        pub x: u64,
    }
    #[repr(C)]
    pub struct SmHeader {
        pub current_task_index: i32,
    }
    fn up(x: u64) -> u64 {
        (x + 63) & !63
    }
    pub fn segment_offsets(w: u64) -> Result<SmSegments> {
        if w < 4 || !w.is_power_of_two() || w > i32::MAX as u64 {
            return Err(Error::invalid_argument("bad window"));
        }
        let d = up(320);
        let p = up(d + 40 * w);
        let s = up(p + 4864 * w);
        let c = up(s + 64 * w);
        let e = c + w;
        Ok(SmSegments { header: 0, descriptors: d, payloads: p, slot_states: s, completion_flags: c, end: e })
    }
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum UploadPolicy {
        Full,
        Bounded,
        Compact,
    }
    pub const MAKER_PIN_MIRROR: u32 = 1;
    pub const MAKER_FRESH_MIRROR: u32 = 2;
    #[derive(Clone, Copy, Debug)]
    pub struct MakerConfig {
        pub task_window: u64,
        pub policy: UploadPolicy,
        pub flags: u32,
    }
    impl Default for MakerConfig {
        fn default() -> Self {
            MakerConfig { task_window: 0, policy: UploadPolicy::Bounded, flags: 0 }
        }
    }
    #[repr(C)]
    pub struct TaskSlot {
        pub index: i32,
        pub descriptor: *mut TaskDescriptor,
        pub payload: *mut TaskPayload,
        pub slot_state: *mut TaskSlotState,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct UploadReport {
        pub total_tasks: i32,
        pub copies: u32,
        pub bytes: u64,
        pub zero_ns: u64,
        pub relocate_ns: u64,
        pub copy_ns: u64,
    }
    pub struct RuntimeMaker {
        cfg: MakerConfig,
        seg: SmSegments,
        mirror: Vec<u8>,
        dev: Vec<u8>,
        n: usize,
        zero_ns: u64,
    }
    impl RuntimeMaker {
        pub fn new(cfg: &MakerConfig, _api: HostApi) -> Result<Self> {
            let w = if cfg.task_window == 0 { 16384 } else { cfg.task_window };
            let seg = segment_offsets(w)?;
            let mut c = *cfg;
            c.task_window = w;
            Ok(RuntimeMaker { cfg: c, seg, mirror: vec![0; seg.end as usize], dev: vec![0; seg.end as usize], n: 0, zero_ns: 0 })
        }
        pub fn begin_run(&mut self) -> Result<*mut SmHeader> {
            let t = std::time::Instant::now();
            if self.cfg.flags & MAKER_FRESH_MIRROR != 0 {
                self.mirror = vec![0; self.seg.end as usize];
            } else if self.cfg.policy == UploadPolicy::Full {
                self.mirror.fill(0);
            } else {
                self.mirror[..320].fill(0);
            }
            self.zero_ns = t.elapsed().as_nanos() as u64;
            self.n = 0;
            Ok(self.mirror.as_mut_ptr().cast())
        }
        pub fn claim_slot(&mut self) -> Result<TaskSlot> {
            if self.n as u64 >= self.cfg.task_window {
                return Err(Error::out_of_range("full"));
            }
            let i = self.n;
            self.n += 1;
            let b = self.mirror.as_mut_ptr();
            Ok(TaskSlot {
                index: i as i32,
                descriptor: b.wrapping_add(self.seg.descriptors as usize + 40 * i).cast(),
                payload: b.wrapping_add(self.seg.payloads as usize + 4864 * i).cast(),
                slot_state: b.wrapping_add(self.seg.slot_states as usize + 64 * i).cast(),
            })
        }
        pub fn upload(&mut self) -> Result<UploadReport> {
            let t = std::time::Instant::now();
            let (bytes, copies) = match self.cfg.policy {
                UploadPolicy::Full => (self.seg.end, 1),
                _ => (320 + 4969 * self.n as u64, 4),
            };
            let n = bytes.min(self.seg.end) as usize;
            self.dev[..n].copy_from_slice(&self.mirror[..n]);
            Ok(UploadReport {
                total_tasks: self.n as i32,
                copies,
                bytes,
                zero_ns: self.zero_ns,
                relocate_ns: 0,
                copy_ns: t.elapsed().as_nanos() as u64,
            })
        }
        pub fn read_status(&mut self) -> Result<i32> {
            Ok(0)
        }
        pub fn segments(&self) -> SmSegments {
            self.seg
        }
        pub fn task_window(&self) -> u64 {
            self.cfg.task_window
        }
        pub fn policy(&self) -> UploadPolicy {
            self.cfg.policy
        }
        pub fn device_image(&self) -> *mut std::ffi::c_void {
            self.dev.as_ptr() as *mut _
        }
    }
}

pub mod pool {
    use leanrt::{Error, Result};
    #[derive(Clone, Debug, PartialEq, Default)]
    pub struct PoolOptions {
        pub n: i32,
    }
    impl PoolOptions {
        pub fn set_config(&mut self, key: &str, value: &str) -> Result<()> {
            match key {
                "session.intra_op.allow_spinning" | "session.intra_op.spin_duration_us" | "session.intra_op.spin_backoff_max" => {
                    value.parse::<i32>().map_err(|_| Error::invalid_argument("bad"))?;
                    Ok(())
                }
                _ => Err(Error::invalid_argument(format!("unknown key {key}"))),
            }
        }
        pub fn set_num_threads(&mut self, n: i32) -> Result<()> {
            self.n = n;
            Ok(())
        }
    }
    pub struct ThreadPool {
        n: i32,
    }
    impl ThreadPool {
        pub fn create(o: &PoolOptions) -> Result<Option<ThreadPool>> {
            let n = if o.n == 0 { super::pool::cpu::physical_cores() as i32 } else { o.n };
            Ok(if n <= 1 { None } else { Some(ThreadPool { n }) })
        }
        pub fn num_threads(&self) -> i32 {
            self.n - 1
        }
        pub fn stats(&self) -> PoolStats {
            PoolStats::default()
        }
    }
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct PoolStats {
        pub tasks_run: u64,
        pub steals: u64,
        pub spin_iterations: u64,
        pub parks: u64,
        pub wakeups: u64,
        pub workers_asleep: u64,
    }
    pub fn try_parallel_for(_p: Option<&ThreadPool>, total: isize, _c: f64, f: &(dyn Fn(isize, isize) + Sync)) {
        if total > 0 {
            f(0, total)
        }
    }
    pub fn try_simple_parallel_for(_p: Option<&ThreadPool>, total: isize, f: &(dyn Fn(isize) + Sync)) {
        for i in 0..total {
            f(i)
        }
    }
    pub fn schedule(_p: Option<&ThreadPool>, task: Box<dyn FnOnce() + Send + 'static>) {
        std::thread::spawn(task);
    }
    pub fn degree_of_parallelism(p: Option<&ThreadPool>) -> i32 {
        p.map_or(1, |p| p.n)
    }
    pub mod cpu {
        pub fn cpu_model() -> String {
            std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
                .unwrap_or_default()
        }
        pub fn physical_cores() -> usize {
            logical_cores()
        }
        pub fn logical_cores() -> usize {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
        pub fn is_hybrid() -> bool {
            false
        }
        pub fn has_waitpkg() -> bool {
            false
        }
    }
    pub mod spin {
        pub fn calibrated_pause_ns() -> f64 {
            1.0
        }
    }
}
