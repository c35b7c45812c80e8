//! Another build of leanrt's pool as a peer (`--leanrt-libs`): its
//! `libleanrt.so`, loaded into the cell's child with `dlopen` and called
//! through the pool's C ABI of `include/leanrt.h` (these functions'
//! signatures are the same at 6199ef1, the oldest build compared so far),
//! so that two builds of the pool (a commit under test and the one before
//! it) run in one invocation, on the same calibrated work sizes and in the
//! same turns as every other cell. Separate invocations calibrate their
//! work apart: on a VM whose speed moves between processes, a round was
//! 2605 indices in one and 3451 in another (`docs/BENCHMARKS.md`, "One
//! caller, two builds in one run").
//!
//! The library is opened with `RTLD_LOCAL | RTLD_DEEPBIND`: its own symbols
//! first, none of them visible to the command's statically linked leanrt
//! (whose state, such as the process-wide CPU share, stays its own). It is
//! never closed: a cell's child ends after its cell.
use super::Peer;
use crate::pool::presets::config_pairs;
use leanrt::pool::abi::LRT_POOL_KEY_FORCE_SPINNING_STOP;
use leanrt::pool::PoolOptions;
use std::ffi::{c_char, c_double, c_int, c_void, CStr, CString};
use std::sync::mpsc;
use std::time::{Duration, Instant};

type RangeFn = extern "C" fn(*mut c_void, isize, isize);
type IndexFn = extern "C" fn(*mut c_void, isize);
type TaskFn = extern "C" fn(*mut c_void);

/// The C functions the peer calls, resolved from one library; each call's
/// contract is its function's in include/leanrt.h.
struct Api {
    options_create: unsafe extern "C" fn(*mut *mut c_void) -> c_int,
    options_destroy: unsafe extern "C" fn(*mut c_void),
    options_set_num_threads: unsafe extern "C" fn(*mut c_void, c_int) -> c_int,
    options_set_config: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char) -> c_int,
    create: unsafe extern "C" fn(*const c_void, *mut *mut c_void) -> c_int,
    destroy: unsafe extern "C" fn(*mut c_void),
    try_parallel_for: unsafe extern "C" fn(*mut c_void, isize, c_double, RangeFn, *mut c_void),
    try_simple_parallel_for: unsafe extern "C" fn(*mut c_void, isize, IndexFn, *mut c_void),
    schedule: unsafe extern "C" fn(*mut c_void, TaskFn, *mut c_void),
    degree_of_parallelism: unsafe extern "C" fn(*const c_void) -> c_int,
    enable_spinning: unsafe extern "C" fn(*mut c_void),
    disable_spinning: unsafe extern "C" fn(*mut c_void),
    last_error: unsafe extern "C" fn(*mut c_char, usize) -> usize,
}

/// Opens `path` and resolves every function the peer calls.
fn load(path: &str) -> Result<Api, String> {
    let c_path = CString::new(path).map_err(|_| format!("{path}: a NUL in the path"))?;
    // SAFETY: dlopen with a valid C string; the handle is kept for the life
    // of the process (never dlclose'd), so the resolved pointers stay valid.
    let handle = unsafe {
        libc::dlopen(
            c_path.as_ptr(),
            libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND,
        )
    };
    if handle.is_null() {
        // SAFETY: dlerror returns NULL or a C string valid until the next
        // dl* call on this thread.
        let why = unsafe { libc::dlerror() };
        let why = if why.is_null() {
            "dlopen failed".into()
        } else {
            // SAFETY: non-NULL, NUL-terminated (above).
            unsafe { CStr::from_ptr(why) }
                .to_string_lossy()
                .into_owned()
        };
        return Err(format!("{path}: {why}"));
    }
    let sym = |name: &str| -> Result<*mut c_void, String> {
        let c = CString::new(name).expect("symbol names have no NUL");
        // SAFETY: `handle` is a live dlopen handle, `c` a C string.
        let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
        if p.is_null() {
            Err(format!("{path}: no symbol {name} (not a libleanrt?)"))
        } else {
            Ok(p)
        }
    };
    macro_rules! f {
        ($name:literal) => {{
            let p = sym($name)?;
            // SAFETY: the symbol is the function of that name in
            // include/leanrt.h, whose C signature the field's type spells;
            // the field is a function pointer, of a data pointer's size
            // (checked) on every platform leanrt supports.
            unsafe { fn_ptr(p) }
        }};
    }
    Ok(Api {
        options_create: f!("lrt_pool_options_create"),
        options_destroy: f!("lrt_pool_options_destroy"),
        options_set_num_threads: f!("lrt_pool_options_set_num_threads"),
        options_set_config: f!("lrt_pool_options_set_config"),
        create: f!("lrt_pool_create"),
        destroy: f!("lrt_pool_destroy"),
        try_parallel_for: f!("lrt_pool_try_parallel_for"),
        try_simple_parallel_for: f!("lrt_pool_try_simple_parallel_for"),
        schedule: f!("lrt_pool_schedule"),
        degree_of_parallelism: f!("lrt_pool_degree_of_parallelism"),
        enable_spinning: f!("lrt_pool_enable_spinning"),
        disable_spinning: f!("lrt_pool_disable_spinning"),
        last_error: f!("lrt_last_error"),
    })
}

/// `p` as the function pointer type `F`.
///
/// # Safety
/// `p` must be the address of a function whose C signature `F` spells.
unsafe fn fn_ptr<F: Copy>(p: *mut c_void) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: sizes equal (above); the caller vouches for the signature.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) }
}

/// The library at `path`, loaded once per process (a child runs one cell).
fn api(path: &str) -> Result<&'static Api, String> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static LOADED: Mutex<Option<HashMap<String, &'static Api>>> = Mutex::new(None);
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    let map = loaded.get_or_insert_with(HashMap::new);
    if let Some(a) = map.get(path) {
        return Ok(a);
    }
    let a: &'static Api = Box::leak(Box::new(load(path)?));
    map.insert(path.to_string(), a);
    Ok(a)
}

/// Checks that `path` is a leanrt library with the pool's C functions.
pub fn check(path: &str) -> Result<(), String> {
    api(path).map(|_| ())
}

/// One pool of the loaded library, with one configuration.
pub struct LeanrtLib {
    api: &'static Api,
    /// NULL: the NULL pool (one thread), which runs loops on the caller.
    pool: *mut c_void,
    hints: bool,
}

impl LeanrtLib {
    /// A pool of `threads` with `config`'s keys, each set through the
    /// library's own `lrt_pool_options_set_config` (a key it does not know
    /// is its error, quoted).
    pub fn new(path: &str, threads: usize, config: &str) -> Result<LeanrtLib, String> {
        let api = api(path)?;
        let why = || {
            let mut buf = [0 as c_char; 512];
            // SAFETY: `buf` has `buf.len()` writable bytes; lrt_last_error
            // writes a NUL-terminated string into them (truncated), which
            // CStr then reads.
            unsafe {
                (api.last_error)(buf.as_mut_ptr(), buf.len());
                CStr::from_ptr(buf.as_ptr())
            }
            .to_string_lossy()
            .into_owned()
        };
        let mut opts = std::ptr::null_mut();
        // SAFETY: `opts` is a valid place for the new handle.
        if unsafe { (api.options_create)(&mut opts) } != 0 {
            return Err(format!("{path}: lrt_pool_options_create: {}", why()));
        }
        let made = (|| {
            // SAFETY: `opts` is the live handle made above.
            if unsafe { (api.options_set_num_threads)(opts, threads as c_int) } != 0 {
                return Err(format!("{path}: threads {threads}: {}", why()));
            }
            let mut hints = false;
            for (k, v) in config_pairs(config)? {
                let (ck, cv) = (CString::new(k.clone()), CString::new(v.clone()));
                let (Ok(ck), Ok(cv)) = (ck, cv) else {
                    return Err(format!("configuration '{config}': a NUL in {k}={v}"));
                };
                // SAFETY: `opts` is live; key and value are C strings that
                // outlive the call.
                if unsafe { (api.options_set_config)(opts, ck.as_ptr(), cv.as_ptr()) } != 0 {
                    return Err(format!(
                        "{path}: configuration '{config}': {k}={v}: {}",
                        why()
                    ));
                }
                if k == LRT_POOL_KEY_FORCE_SPINNING_STOP {
                    // The key's values as this build's options read them
                    // (the library just accepted this one).
                    let mut o = PoolOptions::default();
                    hints = o.set_config(&k, &v).is_ok() && o.force_spinning_stop();
                }
            }
            let mut pool = std::ptr::null_mut();
            // SAFETY: `opts` is live; `pool` is a valid place for the pool.
            if unsafe { (api.create)(opts, &mut pool) } != 0 {
                return Err(format!("{path}: creating the pool: {}", why()));
            }
            Ok(LeanrtLib {
                api,
                pool,
                hints: hints && !pool.is_null(),
            })
        })();
        // SAFETY: `opts` is live and not used after this.
        unsafe { (api.options_destroy)(opts) };
        made
    }
}

impl Drop for LeanrtLib {
    fn drop(&mut self) {
        // SAFETY: `pool` is this peer's own (NULL or made by lrt_pool_create),
        // destroyed once, with no call on it in flight (`&mut self`).
        unsafe { (self.api.destroy)(self.pool) };
    }
}

extern "C" fn range_body(ctx: *mut c_void, first: isize, last: isize) {
    // SAFETY: `ctx` is the `&&dyn Fn` that `parallel_for` passed, alive
    // until the loop returns (the library calls this only inside it).
    let body = unsafe { &*(ctx as *const &(dyn Fn(usize) + Sync)) };
    for i in first..last {
        body(i as usize);
    }
}

extern "C" fn index_body(ctx: *mut c_void, i: isize) {
    // SAFETY: as `range_body`'s, from `tiny_region`.
    let body = unsafe { &*(ctx as *const &(dyn Fn(usize) + Sync)) };
    body(i as usize);
}

/// `wake_latency`'s task: sends the time since it was scheduled.
extern "C" fn wake_task(ctx: *mut c_void) {
    // SAFETY: `ctx` is the box `wake_latency` leaked for this one call.
    let (tx, t0) = *unsafe { Box::from_raw(ctx as *mut (mpsc::Sender<Duration>, Instant)) };
    let _ = tx.send(t0.elapsed());
}

impl Peer for LeanrtLib {
    fn dop(&self) -> usize {
        // SAFETY: `pool` is live (NULL or this peer's own).
        unsafe { (self.api.degree_of_parallelism)(self.pool) }.max(1) as usize
    }
    fn parallel_for(&self, total: usize, cost_cycles: f64, body: &(dyn Fn(usize) + Sync)) {
        let ctx = &body as *const &(dyn Fn(usize) + Sync) as *mut c_void;
        // SAFETY: `pool` is live; `ctx` points to `body`, which outlives the
        // loop, and `range_body` reads it as that type.
        unsafe {
            (self.api.try_parallel_for)(self.pool, total as isize, cost_cycles, range_body, ctx)
        };
    }
    fn tiny_region(&self, body: &(dyn Fn(usize) + Sync)) {
        let ctx = &body as *const &(dyn Fn(usize) + Sync) as *mut c_void;
        let n = self.dop() as isize;
        // SAFETY: as `parallel_for`'s, with `index_body`.
        unsafe { (self.api.try_simple_parallel_for)(self.pool, n, index_body, ctx) };
    }
    fn wake_latency(&self) -> Duration {
        let (tx, rx) = mpsc::channel();
        let ctx = Box::into_raw(Box::new((tx, Instant::now())));
        // SAFETY: `pool` is live; `wake_task` takes back the box `ctx` once
        // (lrt_pool_schedule runs the task exactly once).
        unsafe { (self.api.schedule)(self.pool, wake_task, ctx as *mut c_void) };
        rx.recv().unwrap_or_default()
    }
    fn no_sections_reason(&self) -> String {
        "sections are not called through another build's library (--leanrt-libs)".into()
    }
    fn hints(&self) -> bool {
        self.hints
    }
    fn begin_run(&self) {
        if self.hints {
            // SAFETY: `pool` is live and not NULL (`hints`).
            unsafe { (self.api.enable_spinning)(self.pool) };
        }
    }
    fn end_run(&self) {
        if self.hints {
            // SAFETY: as `begin_run`'s.
            unsafe { (self.api.disable_spinning)(self.pool) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_refused_with_its_path() {
        let e = check("/nonexistent/libleanrt.so.0").expect_err("refused");
        assert!(e.starts_with("/nonexistent/libleanrt.so.0: "), "{e}");
    }

    #[test]
    fn a_library_without_the_pool_functions_is_refused() {
        // libc is loaded in every process and has none of them.
        let e = check("libc.so.6").expect_err("refused");
        assert!(e.contains("no symbol lrt_pool_options_create"), "{e}");
    }
}
