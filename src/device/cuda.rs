//! The CUDA backend: the CUDA driver API (`libcuda.so.1`), loaded with
//! `dlopen` at run time, so leanrt has no link-time CUDA dependency and builds
//! and runs on machines without CUDA (where [`cuda_host_api`] reports
//! `ErrorKind::Unavailable`).
//!
//! * Library: `$LEANRT_CUDA_LIBRARY` when set and non-empty (tests point it at
//!   a mock), else `libcuda.so.1`, else `libcuda.so`. A loaded library is kept
//!   for the life of the process (libcuda is never unloaded); a failed load is
//!   retried on the next call.
//! * Context: each [`cuda_host_api`] retains the device's primary context
//!   (`cuDevicePrimaryCtxRetain`); [`release`] drops that reference. Every
//!   callback pushes the context for the duration of its driver calls and pops
//!   it afterwards, so the callbacks work from any thread and leave the
//!   calling thread's own current context as it was.
//! * `HostApi::ctx` is not a pointer but a token naming a live context in a
//!   process-wide registry. A callback given a released or foreign token fails
//!   cleanly ("released CUDA host api") instead of touching freed memory.
//! * Errors: a failing callback returns NULL / a non-zero code as the
//!   `lrt_host_api_ops` contract says, records `"<callback>: <message>"` for
//!   `lrt_last_error`, and keeps the message (with CUDA's error name and
//!   string) for [`take_last_error`], which the maker appends to its own
//!   `LRT_ERR_DEVICE` / `LRT_ERR_NO_MEMORY` message.
//!
//! All `unsafe` of the backend is in the `driver` module below: `dlopen`,
//! `dlsym` and the calls through the resolved driver entry points.
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::{HostApi, HostApiOps, PinnedRegion};
use crate::ffi::boundary::run_value;
use crate::{Error, ErrorKind, Result};

/// The environment variable that overrides the driver library's path.
pub const LIBRARY_ENV: &str = "LEANRT_CUDA_LIBRARY";
/// The libraries tried, in order, when [`LIBRARY_ENV`] is not set.
pub const DEFAULT_LIBRARIES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];

const CUDA_SUCCESS: i32 = 0;
const CUDA_ERROR_NO_DEVICE: i32 = 100;
const CUDA_ERROR_OUT_OF_MEMORY: i32 = 2;
const CU_MEMHOSTREGISTER_PORTABLE: u32 = 0x01;

mod driver {
    //! The dlopen'ed driver API: symbol resolution and thin wrappers around
    //! each entry point. This module holds every `unsafe` block of the CUDA
    //! backend.
    use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

    /// `CUresult`: 0 is success.
    pub type CuResult = c_int;
    /// `CUdeviceptr` (64-bit on every platform leanrt supports).
    pub type DevPtr = u64;

    type FnInit = unsafe extern "C" fn(c_uint) -> CuResult;
    type FnGetInt = unsafe extern "C" fn(*mut c_int) -> CuResult;
    type FnDeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> CuResult;
    type FnDeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> CuResult;
    type FnDeviceTotalMem = unsafe extern "C" fn(*mut usize, c_int) -> CuResult;
    type FnCtxRetain = unsafe extern "C" fn(*mut *mut c_void, c_int) -> CuResult;
    type FnCtxRelease = unsafe extern "C" fn(c_int) -> CuResult;
    type FnCtxPush = unsafe extern "C" fn(*mut c_void) -> CuResult;
    type FnCtxPop = unsafe extern "C" fn(*mut *mut c_void) -> CuResult;
    type FnVoid = unsafe extern "C" fn() -> CuResult;
    type FnMemAlloc = unsafe extern "C" fn(*mut DevPtr, usize) -> CuResult;
    type FnMemFree = unsafe extern "C" fn(DevPtr) -> CuResult;
    type FnHtoD = unsafe extern "C" fn(DevPtr, *const c_void, usize) -> CuResult;
    type FnDtoH = unsafe extern "C" fn(*mut c_void, DevPtr, usize) -> CuResult;
    type FnHostRegister = unsafe extern "C" fn(*mut c_void, usize, c_uint) -> CuResult;
    type FnHostUnregister = unsafe extern "C" fn(*mut c_void) -> CuResult;
    type FnErrorText = unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult;

    /// The resolved entry points of one loaded driver library. Loaded once
    /// per path and leaked: the library stays mapped for the process's life,
    /// so the function pointers never dangle.
    pub struct Driver {
        pub path: String,
        init: FnInit,
        driver_get_version: FnGetInt,
        device_get_count: FnGetInt,
        device_get: FnDeviceGet,
        device_get_name: FnDeviceGetName,
        device_total_mem: FnDeviceTotalMem,
        primary_ctx_retain: FnCtxRetain,
        primary_ctx_release: FnCtxRelease,
        ctx_push: FnCtxPush,
        ctx_pop: FnCtxPop,
        ctx_synchronize: FnVoid,
        mem_alloc: FnMemAlloc,
        mem_free: FnMemFree,
        memcpy_htod: FnHtoD,
        memcpy_dtoh: FnDtoH,
        host_register: FnHostRegister,
        host_unregister: FnHostUnregister,
        get_error_name: FnErrorText,
        get_error_string: FnErrorText,
    }

    fn dl_error() -> String {
        // SAFETY: dlerror returns NULL or a NUL-terminated string that stays
        // valid until the next dl* call on this thread; we copy it at once.
        unsafe {
            let msg = libc::dlerror();
            if msg.is_null() {
                "unknown dlopen error".to_owned()
            } else {
                CStr::from_ptr(msg).to_string_lossy().into_owned()
            }
        }
    }

    /// Resolves the first of `names` that the library exports.
    fn symbol(handle: *mut c_void, path: &str, names: &[&str]) -> Result<*mut c_void, String> {
        for name in names {
            let cname = CString::new(*name).expect("symbol names have no NUL");
            // SAFETY: handle is a live handle from dlopen (never closed) and
            // cname is NUL-terminated.
            let sym = unsafe { libc::dlsym(handle, cname.as_ptr()) };
            if !sym.is_null() {
                return Ok(sym);
            }
        }
        Err(format!("{path} does not export {}", names.join(" or ")))
    }

    impl Driver {
        /// dlopens `path` and resolves every entry point the backend uses.
        pub fn load(path: &str) -> Result<Driver, String> {
            let cpath = CString::new(path).map_err(|_| format!("{path:?} contains a NUL"))?;
            // SAFETY: cpath is NUL-terminated. Loading a library runs its
            // initializers, which is what loading the CUDA driver means.
            let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if handle.is_null() {
                return Err(dl_error());
            }
            macro_rules! sym {
                ($ty:ty, $($name:literal),+) => {{
                    let raw = symbol(handle, path, &[$($name),+])?;
                    // SAFETY: raw is a non-NULL function address exported by
                    // the driver under this name, whose C signature (CUDA
                    // driver API, cuda.h) is the one $ty spells out.
                    unsafe { std::mem::transmute::<*mut c_void, $ty>(raw) }
                }};
            }
            let loaded = (|| -> Result<Driver, String> {
                Ok(Driver {
                    path: path.to_owned(),
                    init: sym!(FnInit, "cuInit"),
                    driver_get_version: sym!(FnGetInt, "cuDriverGetVersion"),
                    device_get_count: sym!(FnGetInt, "cuDeviceGetCount"),
                    device_get: sym!(FnDeviceGet, "cuDeviceGet"),
                    device_get_name: sym!(FnDeviceGetName, "cuDeviceGetName"),
                    device_total_mem: sym!(FnDeviceTotalMem, "cuDeviceTotalMem_v2"),
                    primary_ctx_retain: sym!(FnCtxRetain, "cuDevicePrimaryCtxRetain"),
                    primary_ctx_release: sym!(
                        FnCtxRelease,
                        "cuDevicePrimaryCtxRelease_v2",
                        "cuDevicePrimaryCtxRelease"
                    ),
                    ctx_push: sym!(FnCtxPush, "cuCtxPushCurrent_v2"),
                    ctx_pop: sym!(FnCtxPop, "cuCtxPopCurrent_v2"),
                    ctx_synchronize: sym!(FnVoid, "cuCtxSynchronize"),
                    mem_alloc: sym!(FnMemAlloc, "cuMemAlloc_v2"),
                    mem_free: sym!(FnMemFree, "cuMemFree_v2"),
                    memcpy_htod: sym!(FnHtoD, "cuMemcpyHtoD_v2"),
                    memcpy_dtoh: sym!(FnDtoH, "cuMemcpyDtoH_v2"),
                    host_register: sym!(FnHostRegister, "cuMemHostRegister_v2"),
                    host_unregister: sym!(FnHostUnregister, "cuMemHostUnregister"),
                    get_error_name: sym!(FnErrorText, "cuGetErrorName"),
                    get_error_string: sym!(FnErrorText, "cuGetErrorString"),
                })
            })();
            if loaded.is_err() {
                // SAFETY: handle came from dlopen above and none of its
                // symbols escaped (the Driver was not built).
                unsafe { libc::dlclose(handle) };
            }
            loaded
        }

        fn text(&self, f: FnErrorText, code: CuResult) -> Option<String> {
            let mut s: *const c_char = std::ptr::null();
            // SAFETY: f is cuGetErrorName/cuGetErrorString, which write a
            // pointer to a static NUL-terminated string (or leave NULL).
            let rc = unsafe { f(code, &mut s) };
            if rc != 0 || s.is_null() {
                return None;
            }
            // SAFETY: non-NULL, static and NUL-terminated per the driver API.
            Some(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
        }

        /// `"CUDA_ERROR_X (description)"`, or `"CUDA error N"` for a code the
        /// driver does not know.
        pub fn describe(&self, code: CuResult) -> String {
            match (
                self.text(self.get_error_name, code),
                self.text(self.get_error_string, code),
            ) {
                (Some(name), Some(text)) => format!("{name} ({text})"),
                (Some(name), None) => name,
                _ => format!("CUDA error {code}"),
            }
        }

        pub fn init(&self) -> CuResult {
            // SAFETY: plain value argument.
            unsafe { (self.init)(0) }
        }
        pub fn driver_version(&self) -> Result<i32, CuResult> {
            let mut v: c_int = 0;
            // SAFETY: v is a valid out pointer.
            let rc = unsafe { (self.driver_get_version)(&mut v) };
            if rc == 0 {
                Ok(v)
            } else {
                Err(rc)
            }
        }
        pub fn device_count(&self) -> Result<i32, CuResult> {
            let mut n: c_int = 0;
            // SAFETY: n is a valid out pointer.
            let rc = unsafe { (self.device_get_count)(&mut n) };
            if rc == 0 {
                Ok(n)
            } else {
                Err(rc)
            }
        }
        pub fn device(&self, ordinal: i32) -> Result<c_int, CuResult> {
            let mut d: c_int = 0;
            // SAFETY: d is a valid out pointer.
            let rc = unsafe { (self.device_get)(&mut d, ordinal) };
            if rc == 0 {
                Ok(d)
            } else {
                Err(rc)
            }
        }
        pub fn device_name(&self, dev: c_int) -> Result<String, CuResult> {
            let mut buf = [0 as c_char; 256];
            // SAFETY: buf is valid for 256 bytes; the driver writes at most
            // len bytes including the NUL.
            let rc = unsafe { (self.device_get_name)(buf.as_mut_ptr(), buf.len() as c_int, dev) };
            if rc != 0 {
                return Err(rc);
            }
            buf[buf.len() - 1] = 0;
            // SAFETY: buf is NUL-terminated (forced above).
            Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
                .to_string_lossy()
                .into_owned())
        }
        pub fn device_total_mem(&self, dev: c_int) -> Result<usize, CuResult> {
            let mut n: usize = 0;
            // SAFETY: n is a valid out pointer.
            let rc = unsafe { (self.device_total_mem)(&mut n, dev) };
            if rc == 0 {
                Ok(n)
            } else {
                Err(rc)
            }
        }
        /// The device's primary context, retained; as an address.
        pub fn primary_ctx_retain(&self, dev: c_int) -> Result<usize, CuResult> {
            let mut ctx: *mut c_void = std::ptr::null_mut();
            // SAFETY: ctx is a valid out pointer.
            let rc = unsafe { (self.primary_ctx_retain)(&mut ctx, dev) };
            if rc == 0 {
                Ok(ctx as usize)
            } else {
                Err(rc)
            }
        }
        pub fn primary_ctx_release(&self, dev: c_int) -> CuResult {
            // SAFETY: plain value argument.
            unsafe { (self.primary_ctx_release)(dev) }
        }
        /// Pushes `ctx` (an address from [`Driver::primary_ctx_retain`]
        /// whose retain is still held) onto this thread's context stack.
        pub fn ctx_push(&self, ctx: usize) -> CuResult {
            // SAFETY: the driver validates the handle; the caller holds a
            // retain on it, so it names a live context.
            unsafe { (self.ctx_push)(ctx as *mut c_void) }
        }
        pub fn ctx_pop(&self) -> CuResult {
            let mut old: *mut c_void = std::ptr::null_mut();
            // SAFETY: old is a valid out pointer.
            unsafe { (self.ctx_pop)(&mut old) }
        }
        pub fn ctx_synchronize(&self) -> CuResult {
            // SAFETY: no arguments; needs a current context (pushed by caller).
            unsafe { (self.ctx_synchronize)() }
        }
        pub fn mem_alloc(&self, size: usize) -> Result<DevPtr, CuResult> {
            let mut p: DevPtr = 0;
            // SAFETY: p is a valid out pointer.
            let rc = unsafe { (self.mem_alloc)(&mut p, size) };
            if rc == 0 {
                Ok(p)
            } else {
                Err(rc)
            }
        }
        pub fn mem_free(&self, p: DevPtr) -> CuResult {
            // SAFETY: the driver validates device addresses.
            unsafe { (self.mem_free)(p) }
        }
        /// # Safety
        /// `src` is valid for reads of `size` bytes.
        pub unsafe fn memcpy_htod(&self, dst: DevPtr, src: *const c_void, size: usize) -> CuResult {
            // SAFETY: src per the caller; the driver validates dst.
            unsafe { (self.memcpy_htod)(dst, src, size) }
        }
        /// # Safety
        /// `dst` is valid for writes of `size` bytes.
        pub unsafe fn memcpy_dtoh(&self, dst: *mut c_void, src: DevPtr, size: usize) -> CuResult {
            // SAFETY: dst per the caller; the driver validates src.
            unsafe { (self.memcpy_dtoh)(dst, src, size) }
        }
        /// # Safety
        /// `[ptr, ptr + size)` is host memory the caller owns and keeps mapped
        /// until [`Driver::host_unregister`].
        pub unsafe fn host_register(&self, ptr: *mut c_void, size: usize, flags: u32) -> CuResult {
            // SAFETY: per the caller; the driver validates the range.
            unsafe { (self.host_register)(ptr, size, flags) }
        }
        pub fn host_unregister(&self, ptr: *mut c_void) -> CuResult {
            // SAFETY: the driver only looks the address up among its
            // registrations (unknown ones give an error code).
            unsafe { (self.host_unregister)(ptr) }
        }
    }
}

use driver::{DevPtr, Driver};

// ---------------------------------------------------------------------------
// Library loading

/// Loaded drivers by path. Protocol: entries are only appended, under the
/// lock; each `&'static Driver` is leaked and never freed, so references
/// handed out stay valid after the lock is released.
static DRIVERS: Mutex<Vec<&'static Driver>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the protected
    // data half-updated (pushes and removals are single operations), so a
    // poisoned lock is still safe to use.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn load_path(path: &str) -> std::result::Result<&'static Driver, String> {
    let mut drivers = lock(&DRIVERS);
    if let Some(d) = drivers.iter().find(|d| d.path == path) {
        return Ok(d);
    }
    let d: &'static Driver = Box::leak(Box::new(Driver::load(path)?));
    drivers.push(d);
    Ok(d)
}

/// The driver library: `$LEANRT_CUDA_LIBRARY` if set, else the defaults.
fn load_default() -> Result<&'static Driver> {
    match std::env::var(LIBRARY_ENV) {
        Ok(path) if !path.is_empty() => load_library(&path),
        _ => {
            let mut reasons = Vec::new();
            for path in DEFAULT_LIBRARIES {
                match load_path(path) {
                    Ok(d) => return Ok(d),
                    Err(e) => reasons.push(e),
                }
            }
            Err(Error::unavailable(format!(
                "no CUDA driver library ({})",
                reasons.join("; ")
            )))
        }
    }
}

fn load_library(path: &str) -> Result<&'static Driver> {
    load_path(path)
        .map_err(|e| Error::unavailable(format!("cannot load the CUDA driver {path}: {e}")))
}

fn cu_error(driver: &Driver, what: &str, code: i32) -> Error {
    Error::device(format!("{what}: {}", driver.describe(code)))
}

/// cuInit, then the device count. "No device" and an unusable driver are
/// `Unavailable`.
fn init(driver: &'static Driver, ordinal: i32) -> Result<i32> {
    let rc = driver.init();
    if rc == CUDA_ERROR_NO_DEVICE {
        return Err(Error::unavailable(format!(
            "no CUDA device {ordinal} (found 0): cuInit: {} [{}]",
            driver.describe(rc),
            driver.path
        )));
    }
    if rc != CUDA_SUCCESS {
        return Err(Error::unavailable(format!(
            "the CUDA driver failed to initialize: cuInit: {} [{}]",
            driver.describe(rc),
            driver.path
        )));
    }
    driver
        .device_count()
        .map_err(|rc| Error::unavailable(format!("cuDeviceGetCount: {}", driver.describe(rc))))
}

// ---------------------------------------------------------------------------
// Contexts and the registry

/// One `cuda_host_api`: a retained primary context of one device.
struct Context {
    driver: &'static Driver,
    ordinal: i32,
    device: i32,
    /// The primary context (`CUcontext`), as an address; retained until drop.
    cu_ctx: usize,
    /// Copy counters (successful copies only), read by [`copy_stats`].
    stats: [AtomicU64; 6],
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("library", &self.driver.path)
            .field("ordinal", &self.ordinal)
            .finish()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Runs when the last user (registry entry, in-flight callback or
        // pinned region) lets go: the retain taken in `open` is returned.
        let _ = self.driver.primary_ctx_release(self.device);
    }
}

/// The context made current on this thread until dropped.
struct Current<'a> {
    driver: &'a Driver,
}

impl Drop for Current<'_> {
    fn drop(&mut self) {
        let _ = self.driver.ctx_pop();
    }
}

impl Context {
    fn current(&self) -> Result<Current<'_>> {
        let rc = self.driver.ctx_push(self.cu_ctx);
        if rc != CUDA_SUCCESS {
            return Err(self.error("cuCtxPushCurrent_v2", rc));
        }
        Ok(Current {
            driver: self.driver,
        })
    }

    fn error(&self, what: &str, code: i32) -> Error {
        let e = cu_error(
            self.driver,
            &format!("{what} on CUDA device {}", self.ordinal),
            code,
        );
        if code == CUDA_ERROR_OUT_OF_MEMORY {
            Error::no_memory(e.message())
        } else {
            e
        }
    }

    /// Adds one copy to the counters starting at `first` (0: H2D, 3: D2H).
    fn count(&self, first: usize, bytes: usize, since: Instant) {
        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.stats[first].fetch_add(1, Ordering::Relaxed);
        self.stats[first + 1].fetch_add(bytes as u64, Ordering::Relaxed);
        self.stats[first + 2].fetch_add(ns, Ordering::Relaxed);
    }

    fn alloc(&self, size: usize) -> Result<DevPtr> {
        if size == 0 {
            return Err(Error::invalid_argument("device_malloc of 0 bytes"));
        }
        let _cur = self.current()?;
        self.driver
            .mem_alloc(size)
            .map_err(|rc| self.error(&format!("cuMemAlloc_v2({size} bytes)"), rc))
    }

    fn free(&self, p: DevPtr) -> Result<()> {
        if p == 0 {
            return Ok(());
        }
        let _cur = self.current()?;
        match self.driver.mem_free(p) {
            CUDA_SUCCESS => Ok(()),
            rc => Err(self.error(&format!("cuMemFree_v2({p:#x})"), rc)),
        }
    }

    /// # Safety
    /// `src` is valid for reads of `size` bytes.
    unsafe fn copy_to_device(&self, dst: DevPtr, src: *const c_void, size: usize) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        if dst == 0 || src.is_null() {
            return Err(Error::invalid_argument(format!(
                "copy_to_device with a NULL pointer (dst {dst:#x}, src {src:p})"
            )));
        }
        let _cur = self.current()?;
        let t0 = Instant::now();
        // SAFETY: src is valid for size bytes per this function's contract.
        match unsafe { self.driver.memcpy_htod(dst, src, size) } {
            CUDA_SUCCESS => {
                self.count(0, size, t0);
                Ok(())
            }
            rc => Err(self.error(&format!("cuMemcpyHtoD_v2({dst:#x}, {size} bytes)"), rc)),
        }
    }

    /// # Safety
    /// `dst` is valid for writes of `size` bytes.
    unsafe fn copy_from_device(&self, dst: *mut c_void, src: DevPtr, size: usize) -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        if src == 0 || dst.is_null() {
            return Err(Error::invalid_argument(format!(
                "copy_from_device with a NULL pointer (dst {dst:p}, src {src:#x})"
            )));
        }
        let _cur = self.current()?;
        let t0 = Instant::now();
        // SAFETY: dst is valid for size bytes per this function's contract.
        match unsafe { self.driver.memcpy_dtoh(dst, src, size) } {
            CUDA_SUCCESS => {
                self.count(3, size, t0);
                Ok(())
            }
            rc => Err(self.error(&format!("cuMemcpyDtoH_v2({src:#x}, {size} bytes)"), rc)),
        }
    }
}

/// Live contexts by token. Protocol: a token is issued once (counter, never
/// reused) and names its context from `cuda_host_api` until `release`
/// removes it. Users clone the `Arc` under the lock and use it outside, so a
/// `release` racing with a callback on another thread never frees a context
/// in use: the driver retain is returned when the last clone drops.
static REGISTRY: Mutex<Vec<(usize, Arc<Context>)>> = Mutex::new(Vec::new());
/// Tokens start at a recognisable odd value so that a zeroed or foreign
/// `ctx` (NULL, a real pointer) never names a context by accident.
static NEXT_TOKEN: AtomicUsize = AtomicUsize::new(0x1ea5_0001);

fn lookup(token: *mut c_void) -> Result<Arc<Context>> {
    let token = token as usize;
    lock(&REGISTRY)
        .iter()
        .find(|(t, _)| *t == token)
        .map(|(_, c)| Arc::clone(c))
        .ok_or_else(|| {
            Error::state(format!(
                "CUDA host api context {token:#x} is not live (released, or not made by lrt_host_api_cuda)"
            ))
        })
}

// ---------------------------------------------------------------------------
// The callbacks

thread_local! {
    /// This thread's message for its last failed CUDA callback.
    static LAST_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Takes (and clears) this thread's message for the last failed CUDA
/// host-api callback, e.g. `"copy_to_device: cuMemcpyHtoD_v2(0x..., 4096
/// bytes) on CUDA device 0: CUDA_ERROR_INVALID_VALUE (invalid argument)"`.
/// A callback clears it when it starts, so after a failed callback it always
/// describes that failure. The maker appends it to the message of the
/// `LRT_ERR_DEVICE` / `LRT_ERR_NO_MEMORY` it reports for a callback failure.
pub fn take_last_error() -> Option<String> {
    LAST_ERROR.with(|s| s.borrow_mut().take())
}

/// Runs one callback body: clears the last error, records a failure both for
/// [`take_last_error`] and for `lrt_last_error`, and catches panics (none
/// may cross into the C caller).
fn callback<T>(name: &'static str, fallback: T, body: impl FnOnce() -> Result<T>) -> T {
    LAST_ERROR.with(|s| *s.borrow_mut() = None);
    run_value(
        name,
        |_| fallback,
        || {
            body().map_err(|e| {
                let msg = format!("{name}: {}", e.message());
                LAST_ERROR.with(|s| *s.borrow_mut() = Some(msg));
                e
            })
        },
    )
}

/// `device_malloc`: NULL on failure.
///
/// # Safety
/// Any `ctx` is accepted (it is looked up, never dereferenced).
unsafe extern "C" fn cb_device_malloc(ctx: *mut c_void, size: usize) -> *mut c_void {
    callback("cuda device_malloc", std::ptr::null_mut(), || {
        let p = lookup(ctx)?.alloc(size)?;
        Ok(p as usize as *mut c_void)
    })
}

/// `device_free`; NULL is a no-op.
///
/// # Safety
/// Any `ctx` is accepted; the driver validates `dev_ptr`.
unsafe extern "C" fn cb_device_free(ctx: *mut c_void, dev_ptr: *mut c_void) {
    callback("cuda device_free", (), || {
        lookup(ctx)?.free(dev_ptr as usize as DevPtr)
    })
}

/// `copy_to_device`: 0, or -1 on failure (see [`take_last_error`]).
///
/// # Safety
/// `host_src` is valid for reads of `size` bytes.
unsafe extern "C" fn cb_copy_to_device(
    ctx: *mut c_void,
    dev_dst: *mut c_void,
    host_src: *const c_void,
    size: usize,
) -> i32 {
    callback("cuda copy_to_device", -1, || {
        let c = lookup(ctx)?;
        // SAFETY: host_src is valid for size bytes per the callback contract.
        unsafe { c.copy_to_device(dev_dst as usize as DevPtr, host_src, size) }?;
        Ok(0)
    })
}

/// `copy_from_device`: 0, or -1 on failure (see [`take_last_error`]).
///
/// # Safety
/// `host_dst` is valid for writes of `size` bytes.
unsafe extern "C" fn cb_copy_from_device(
    ctx: *mut c_void,
    host_dst: *mut c_void,
    dev_src: *const c_void,
    size: usize,
) -> i32 {
    callback("cuda copy_from_device", -1, || {
        let c = lookup(ctx)?;
        // SAFETY: host_dst is valid for size bytes per the callback contract.
        unsafe { c.copy_from_device(host_dst, dev_src as usize as DevPtr, size) }?;
        Ok(0)
    })
}

/// The callback table of every CUDA host api (its address identifies them).
static CUDA_OPS: HostApiOps = HostApiOps {
    device_malloc: Some(cb_device_malloc),
    device_free: Some(cb_device_free),
    copy_to_device: Some(cb_copy_to_device),
    copy_from_device: Some(cb_copy_from_device),
};

// ---------------------------------------------------------------------------
// Public API

/// Facts about one CUDA device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaDeviceInfo {
    /// The driver library that was loaded.
    pub library: String,
    /// `cuDriverGetVersion`, e.g. 12040 for CUDA 12.4.
    pub driver_version: i32,
    /// Number of CUDA devices visible to the process.
    pub device_count: i32,
    /// The device's ordinal.
    pub ordinal: i32,
    /// `cuDeviceGetName`.
    pub name: String,
    /// `cuDeviceTotalMem`, bytes.
    pub total_mem: u64,
}

fn check_ordinal(driver: &'static Driver, device: i32) -> Result<i32> {
    let count = init(driver, device)?;
    if device < 0 || device >= count {
        return Err(Error::unavailable(format!(
            "no CUDA device {device} (found {count})"
        )));
    }
    driver.device(device).map_err(|rc| {
        Error::unavailable(format!(
            "no CUDA device {device} (found {count}): cuDeviceGet: {}",
            driver.describe(rc)
        ))
    })
}

fn open(driver: &'static Driver, device: i32) -> Result<HostApi> {
    let dev = check_ordinal(driver, device)?;
    let cu_ctx = driver.primary_ctx_retain(dev).map_err(|rc| {
        cu_error(
            driver,
            &format!("cuDevicePrimaryCtxRetain on CUDA device {device}"),
            rc,
        )
    })?;
    let context = Arc::new(Context {
        driver,
        ordinal: device,
        device: dev,
        cu_ctx,
        stats: Default::default(),
    });
    let token = NEXT_TOKEN.fetch_add(2, Ordering::Relaxed);
    lock(&REGISTRY).push((token, context));
    Ok(HostApi {
        ctx: token as *mut c_void,
        ops: &CUDA_OPS,
    })
}

/// A host api on CUDA device `device` (an ordinal, 0-based), through the
/// driver library named by `$LEANRT_CUDA_LIBRARY` or `libcuda.so.1`.
/// `ErrorKind::Unavailable` without a CUDA driver, without devices, or for an
/// ordinal outside `[0, count)` ("no CUDA device N (found M)").
/// Release it with [`crate::device::release`].
pub fn cuda_host_api(device: i32) -> Result<HostApi> {
    open(load_default()?, device)
}

/// [`cuda_host_api`] through the driver library at `library` (a path or a
/// soname), ignoring `$LEANRT_CUDA_LIBRARY`. Tests use it to load a mock.
pub fn cuda_host_api_with_library(library: &str, device: i32) -> Result<HostApi> {
    open(load_library(library)?, device)
}

/// Facts about CUDA device `device` (see [`cuda_host_api`] for the library
/// and the errors).
pub fn device_info(device: i32) -> Result<CudaDeviceInfo> {
    info_from(load_default()?, device)
}

/// [`device_info`] through the driver library at `library`.
pub fn device_info_with_library(library: &str, device: i32) -> Result<CudaDeviceInfo> {
    info_from(load_library(library)?, device)
}

fn info_from(driver: &'static Driver, device: i32) -> Result<CudaDeviceInfo> {
    let dev = check_ordinal(driver, device)?;
    let describe = |what: &str, rc| Error::device(format!("{what}: {}", driver.describe(rc)));
    Ok(CudaDeviceInfo {
        library: driver.path.clone(),
        driver_version: driver
            .driver_version()
            .map_err(|rc| describe("cuDriverGetVersion", rc))?,
        device_count: driver
            .device_count()
            .map_err(|rc| describe("cuDeviceGetCount", rc))?,
        ordinal: device,
        name: driver
            .device_name(dev)
            .map_err(|rc| describe("cuDeviceGetName", rc))?,
        total_mem: driver
            .device_total_mem(dev)
            .map_err(|rc| describe("cuDeviceTotalMem_v2", rc))? as u64,
    })
}

/// Whether `api` was made by [`cuda_host_api`] (and not yet released through
/// this copy).
pub fn is_cuda_api(api: &HostApi) -> bool {
    std::ptr::eq(api.ops, &CUDA_OPS)
}

/// The device ordinal behind a live CUDA host api.
pub fn ordinal(api: &HostApi) -> Result<i32> {
    Ok(context_of(api)?.ordinal)
}

fn context_of(api: &HostApi) -> Result<Arc<Context>> {
    if !is_cuda_api(api) {
        return Err(Error::invalid_argument("not a CUDA host api"));
    }
    lookup(api.ctx)
}

/// Returns the context reference behind `api` (called by
/// [`crate::device::release`], which then clears `api`). The driver's
/// primary-context retain is dropped once no callback or pinned region still
/// uses it. Releasing twice, or a copy of a released api, is a no-op.
pub fn release(api: &mut HostApi) {
    if !is_cuda_api(api) {
        return;
    }
    let token = api.ctx as usize;
    let removed = {
        let mut reg = lock(&REGISTRY);
        reg.iter()
            .position(|(t, _)| *t == token)
            .map(|i| reg.swap_remove(i).1)
    };
    // Dropped outside the lock: the last Arc calls into the driver.
    drop(removed);
}

/// Counters of the successful copies made through one CUDA host api (all
/// copies of it, from every thread), with the wall time spent inside the
/// driver's copy calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CudaCopyStats {
    pub h2d_copies: u64,
    pub h2d_bytes: u64,
    pub h2d_ns: u64,
    pub d2h_copies: u64,
    pub d2h_bytes: u64,
    pub d2h_ns: u64,
}

/// The copy counters of a live CUDA host api (benchmarks subtract two
/// readings to time what a maker's upload spent in the driver).
pub fn copy_stats(api: &HostApi) -> Result<CudaCopyStats> {
    let c = context_of(api)?;
    let v: Vec<u64> = c.stats.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    Ok(CudaCopyStats {
        h2d_copies: v[0],
        h2d_bytes: v[1],
        h2d_ns: v[2],
        d2h_copies: v[3],
        d2h_bytes: v[4],
        d2h_ns: v[5],
    })
}

/// Waits for all work on the api's device to finish (`cuCtxSynchronize`).
/// Benchmarks call it after copies from pageable memory, which may return
/// before the DMA has completed.
pub fn synchronize(api: &HostApi) -> Result<()> {
    let c = context_of(api)?;
    let _cur = c.current()?;
    match c.driver.ctx_synchronize() {
        CUDA_SUCCESS => Ok(()),
        rc => Err(c.error("cuCtxSynchronize", rc)),
    }
}

/// Page-locks `[ptr, ptr + len)` with `cuMemHostRegister_v2(...,
/// CU_MEMHOSTREGISTER_PORTABLE)` so that copies from it are direct DMA;
/// the returned region unregisters it when dropped (and keeps the device's
/// context alive until then, even if `api` is released first). The range
/// must stay mapped until the region is dropped.
pub fn pin(api: &HostApi, ptr: *mut u8, len: usize) -> Result<PinnedRegion> {
    let c = context_of(api)?;
    if ptr.is_null() || len == 0 {
        return Err(Error::invalid_argument(format!(
            "cannot pin {len} bytes at {ptr:p}"
        )));
    }
    {
        let _cur = c.current()?;
        // SAFETY: the caller keeps the range mapped until the region drops
        // (documented above); the driver checks that it is host memory.
        let rc = unsafe {
            c.driver
                .host_register(ptr.cast(), len, CU_MEMHOSTREGISTER_PORTABLE)
        };
        if rc != CUDA_SUCCESS {
            let e = c.error(&format!("cuMemHostRegister_v2({ptr:p}, {len} bytes)"), rc);
            // Pinning failures are reported as device errors (the caller
            // falls back to pageable memory), also for out-of-memory.
            return Err(Error::new(ErrorKind::Device, e.message()));
        }
    }
    let addr = ptr as usize;
    Ok(PinnedRegion::new(Box::new(move || {
        // Unpin under our own context; a failure cannot be reported from a
        // destructor and leaves nothing to clean up on our side.
        if let Ok(_cur) = c.current() {
            let _ = c.driver.host_unregister(addr as *mut c_void);
        }
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_unavailable() {
        let e = cuda_host_api_with_library("/nonexistent/libcuda-leanrt-test.so", 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert!(
            e.message().contains("/nonexistent/libcuda-leanrt-test.so"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn library_without_driver_symbols_is_unavailable() {
        // libc is loadable but exports no cuInit.
        let e = cuda_host_api_with_library("libc.so.6", 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert!(
            e.message().contains("does not export cuInit"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn foreign_apis_are_not_cuda() {
        let api = HostApi {
            ctx: std::ptr::null_mut(),
            ops: std::ptr::null(),
        };
        assert!(!is_cuda_api(&api));
        let e = pin(&api, 8 as *mut u8, 8).err().expect("not a CUDA api");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let forged = HostApi {
            ctx: 12345 as *mut c_void,
            ops: &CUDA_OPS,
        };
        assert_eq!(lookup(forged.ctx).unwrap_err().kind(), ErrorKind::State);
        // The callbacks of a forged api fail cleanly and say why.
        // SAFETY: the pointer arguments are never dereferenced for a dead ctx.
        let p = unsafe { cb_device_malloc(forged.ctx, 64) };
        assert!(p.is_null());
        let msg = take_last_error().expect("a failure is recorded");
        assert!(msg.starts_with("cuda device_malloc: "), "{msg}");
        assert!(msg.contains("not live"), "{msg}");
        assert_eq!(take_last_error(), None, "take clears the message");
        let mut buf = [0u8; 4];
        // SAFETY: buf is valid for 4 bytes.
        let rc =
            unsafe { cb_copy_to_device(forged.ctx, 64 as *mut c_void, buf.as_ptr().cast(), 4) };
        assert_eq!(rc, -1);
        // SAFETY: buf is valid for 4 bytes.
        let rc = unsafe {
            cb_copy_from_device(forged.ctx, buf.as_mut_ptr().cast(), 64 as *const c_void, 4)
        };
        assert_eq!(rc, -1);
        // Releasing a forged api is a no-op.
        let mut forged = forged;
        release(&mut forged);
    }
}
