//! OpenMP (libgomp, or any runtime serving the GOMP calls) as a peer,
//! through the C shim `csrc/omp_shim.c`.
use super::Peer;
use std::time::{Duration, Instant};

#[cfg(leanrt_openmp)]
mod omp_ffi {
    use std::ffi::c_void;
    pub type IndexFn = unsafe extern "C" fn(ctx: *mut c_void, index: std::ffi::c_long);
    pub type ThreadFn = unsafe extern "C" fn(ctx: *mut c_void, thread: i32);
    extern "C" {
        pub fn leanrt_bench_omp_for(
            threads: i32,
            total: std::ffi::c_long,
            f: IndexFn,
            ctx: *mut c_void,
        );
        pub fn leanrt_bench_omp_region(threads: i32, f: ThreadFn, ctx: *mut c_void);
        pub fn leanrt_bench_omp_section(
            threads: i32,
            loops: i32,
            total: std::ffi::c_long,
            f: IndexFn,
            ctx: *mut c_void,
        );
        pub fn leanrt_bench_omp_max_threads() -> i32;
    }
}

/// Whether this binary was built with the OpenMP shim.
pub const OPENMP_BUILT: bool = cfg!(leanrt_openmp);

/// OpenMP (libgomp) with the OMP_WAIT_POLICY this process was started with.
pub struct OpenMp {
    threads: usize,
}

impl OpenMp {
    pub fn new(threads: usize) -> Result<OpenMp, String> {
        if !OPENMP_BUILT {
            return Err("this leanrt was built without an OpenMP compiler".into());
        }
        Ok(OpenMp { threads })
    }
}

#[cfg(leanrt_openmp)]
mod omp_impl {
    use super::omp_ffi::*;
    use std::ffi::c_void;

    type Body<'a> = &'a (dyn Fn(usize) + Sync);

    unsafe extern "C" fn call_index(ctx: *mut c_void, index: std::ffi::c_long) {
        // SAFETY: ctx is the `&Body` passed to the shim by `omp_for`, alive
        // for the whole parallel construct, which returns only after every
        // call has returned.
        let body = unsafe { &*(ctx as *const Body) };
        // A panic must not unwind into C: abort instead.
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(index as usize))).is_err()
        {
            std::process::abort();
        }
    }

    unsafe extern "C" fn call_thread(ctx: *mut c_void, thread: i32) {
        // SAFETY: as in call_index.
        let body = unsafe { &*(ctx as *const Body) };
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(thread as usize))).is_err()
        {
            std::process::abort();
        }
    }

    pub fn omp_for(threads: usize, total: usize, body: Body) {
        let ctx = &body as *const Body as *mut c_void;
        // SAFETY: the shim calls call_index with ctx for each index and
        // returns after the parallel loop has joined; `body` outlives it.
        unsafe { leanrt_bench_omp_for(threads as i32, total as std::ffi::c_long, call_index, ctx) }
    }

    pub fn omp_section(threads: usize, loops: u32, total: usize, body: Body) {
        let ctx = &body as *const Body as *mut c_void;
        // SAFETY: as in omp_for: the shim calls call_index with ctx for each
        // index of each loop and returns after the region has joined.
        unsafe {
            leanrt_bench_omp_section(
                threads as i32,
                loops as i32,
                total as std::ffi::c_long,
                call_index,
                ctx,
            )
        }
    }

    pub fn omp_region(threads: usize, body: Body) {
        let ctx = &body as *const Body as *mut c_void;
        // SAFETY: as in omp_for.
        unsafe { leanrt_bench_omp_region(threads as i32, call_thread, ctx) }
    }

    pub fn max_threads() -> i32 {
        // SAFETY: plain query without arguments.
        unsafe { leanrt_bench_omp_max_threads() }
    }
}

/// libgomp's default thread count (0 without OpenMP).
pub fn omp_max_threads() -> i32 {
    #[cfg(leanrt_openmp)]
    {
        omp_impl::max_threads()
    }
    #[cfg(not(leanrt_openmp))]
    {
        0
    }
}

impl Peer for OpenMp {
    fn dop(&self) -> usize {
        self.threads
    }
    #[allow(unused_variables)]
    fn parallel_for(&self, total: usize, _cost: f64, body: &(dyn Fn(usize) + Sync)) {
        #[cfg(leanrt_openmp)]
        omp_impl::omp_for(self.threads, total, body);
    }
    #[allow(unused_variables)]
    fn tiny_region(&self, body: &(dyn Fn(usize) + Sync)) {
        #[cfg(leanrt_openmp)]
        omp_impl::omp_for(self.threads, self.threads, body);
    }
    #[allow(unused_variables)]
    fn section_loops(
        &self,
        loops: u32,
        total: usize,
        _cost: f64,
        body: &(dyn Fn(usize) + Sync),
    ) -> Option<bool> {
        #[cfg(leanrt_openmp)]
        omp_impl::omp_section(self.threads, loops, total, body);
        Some(true)
    }
    fn wake_latency(&self) -> Duration {
        // Thread 1 (the first non-caller thread) records when it starts; with
        // one thread, the caller does.
        let probe_thread = usize::from(self.threads > 1);
        let seen = std::sync::Mutex::new(None);
        let t0 = Instant::now();
        let _body = |t: usize| {
            if t == probe_thread {
                *seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(t0.elapsed());
            }
        };
        #[cfg(leanrt_openmp)]
        omp_impl::omp_region(self.threads, &_body);
        let v = *seen.lock().unwrap_or_else(|e| e.into_inner());
        v.unwrap_or_default()
    }
}
