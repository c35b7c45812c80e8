//! The dlopen'ed driver API: loading the library, resolving its entry
//! points, and thin wrappers around each of them. Every call into the
//! driver is made here; the rest of the backend calls only these wrappers,
//! which are safe except the three that take host pointers the driver
//! cannot check (`memcpy_htod`, `memcpy_dtoh`, `host_register`): their
//! callers (`device.rs`, `pin.rs`) state the pointer contract they rely on.
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::Error;

/// The environment variable that overrides the driver library's path.
pub const LIBRARY_ENV: &str = "LEANRT_CUDA_LIBRARY";
/// The libraries tried, in order, when [`LIBRARY_ENV`] is not set.
pub const DEFAULT_LIBRARIES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];

pub(super) const CUDA_SUCCESS: CuResult = 0;
pub(super) const CUDA_ERROR_OUT_OF_MEMORY: CuResult = 2;
const CUDA_ERROR_NO_DEVICE: CuResult = 100;

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
    /// The process that last initialized this driver successfully (0:
    /// none). CUDA does not survive `fork`: a child refuses to use it.
    init_pid: AtomicU32,
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

/// A driver call's result: `value` when the call returned CUDA_SUCCESS,
/// else the call's error code.
fn success_or_code<T>(rc: CuResult, value: T) -> Result<T, CuResult> {
    if rc == CUDA_SUCCESS {
        Ok(value)
    } else {
        Err(rc)
    }
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
                init_pid: AtomicU32::new(0),
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

    fn init(&self) -> CuResult {
        // SAFETY: plain value argument.
        unsafe { (self.init)(0) }
    }
    pub fn driver_version(&self) -> Result<i32, CuResult> {
        let mut v: c_int = 0;
        // SAFETY: v is a valid out pointer.
        let rc = unsafe { (self.driver_get_version)(&mut v) };
        success_or_code(rc, v)
    }
    pub fn device_count(&self) -> Result<i32, CuResult> {
        let mut n: c_int = 0;
        // SAFETY: n is a valid out pointer.
        let rc = unsafe { (self.device_get_count)(&mut n) };
        success_or_code(rc, n)
    }
    pub fn device(&self, ordinal: i32) -> Result<c_int, CuResult> {
        let mut d: c_int = 0;
        // SAFETY: d is a valid out pointer.
        let rc = unsafe { (self.device_get)(&mut d, ordinal) };
        success_or_code(rc, d)
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
        success_or_code(rc, n)
    }
    /// The device's primary context, retained; as an address.
    pub fn primary_ctx_retain(&self, dev: c_int) -> Result<usize, CuResult> {
        let mut ctx: *mut c_void = std::ptr::null_mut();
        // SAFETY: ctx is a valid out pointer.
        let rc = unsafe { (self.primary_ctx_retain)(&mut ctx, dev) };
        success_or_code(rc, ctx as usize)
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
        success_or_code(rc, p)
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

// ---------------------------------------------------------------------------
// Library loading and initialization

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

/// The process that first loaded a driver library through leanrt.
static LOADED_BY: AtomicU32 = AtomicU32::new(0);

/// Takes `owner` for this process if nobody has it yet; refuses when another
/// process has it: this is the child of a `fork`, which inherits the
/// parent's CUDA state (unsupported by CUDA) and possibly a lock that one of
/// the parent's threads held at the moment of the fork. Checked before any
/// lock is taken, so such a child gets an error, never a deadlock.
pub(super) fn claim_for_this_process(owner: &AtomicU32, what: &str) -> crate::Result<()> {
    let pid = std::process::id();
    match owner.compare_exchange(0, pid, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => Ok(()),
        Err(first) => refuse_other_process(first, what),
    }
}

fn load_path(path: &str) -> std::result::Result<&'static Driver, String> {
    claim_for_this_process(&LOADED_BY, "loading the CUDA driver").map_err(|e| e.to_string())?;
    let mut drivers = lock(&DRIVERS);
    if let Some(d) = drivers.iter().find(|d| d.path == path) {
        return Ok(d);
    }
    let d: &'static Driver = Box::leak(Box::new(Driver::load(path)?));
    drivers.push(d);
    Ok(d)
}

/// The driver library: `$LEANRT_CUDA_LIBRARY` if set, else the defaults.
pub(super) fn load_default() -> crate::Result<&'static Driver> {
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

pub(super) fn load_library(path: &str) -> crate::Result<&'static Driver> {
    load_path(path)
        .map_err(|e| Error::unavailable(format!("cannot load the CUDA driver {path}: {e}")))
}

/// Refuses a driver initialized by another process: the child of a `fork`
/// inherits the parent's driver state, which CUDA does not support.
pub(super) fn refuse_other_process(init_pid: u32, what: &str) -> crate::Result<()> {
    let pid = std::process::id();
    if init_pid != 0 && init_pid != pid {
        return Err(Error::unavailable(format!(
            "{what}: CUDA does not survive fork (set up in process {init_pid}, \
             this is process {pid}); create the CUDA host api in this process"
        )));
    }
    Ok(())
}

/// cuInit, then the device count. "No device" and an unusable driver are
/// `Unavailable`, and so is a driver that a parent process initialized.
pub(super) fn init_and_count(driver: &'static Driver, ordinal: i32) -> crate::Result<i32> {
    refuse_other_process(
        driver.init_pid.load(Ordering::Relaxed),
        "cuInit in a forked child",
    )?;
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
    driver.init_pid.store(std::process::id(), Ordering::Relaxed);
    driver
        .device_count()
        .map_err(|rc| Error::unavailable(format!("cuDeviceGetCount: {}", driver.describe(rc))))
}
