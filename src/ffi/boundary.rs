//! The one path every C entry point takes: argument checks, panic capture,
//! error-to-status mapping and the per-thread error message.
//!
//! Protocol for an entry point `lrt_x`:
//! 1. Its body runs inside [`run_status`] / [`run_value`] (through the
//!    [`ffi_status!`] and [`ffi_value!`] macros), which catch any panic.
//! 2. Pointer arguments become references only through [`arg_ref`],
//!    [`arg_mut`], [`arg_str`] and [`OutPtr`], which reject NULL with
//!    `LRT_ERR_INVALID_ARGUMENT` naming the argument.
//! 3. All arguments are checked before any state changes, so a rejected call
//!    leaves everything as it was.
//! 4. A failure records `"<function>: <message>"` in a thread-local slot read
//!    by `lrt_last_error`; a success leaves the slot alone. The slot is a
//!    fixed buffer: recording a message never allocates. `<function>` is the
//!    entry point's own name, which the macros take from the function they
//!    are in ([`entry_name`]), never from a restated string.
//! 5. Each call runs in an [`alloc::CallScope`](crate::alloc::CallScope):
//!    the allocation-failure protocol of `crate::alloc` (the reserve marks
//!    the thread, commit points such as [`try_into_handle`] refuse).
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::alloc;
pub use crate::error::abi::{lrt_status, LRT_LAST_ERROR_BYTES, LRT_MAX_STRING_BYTES};
use crate::{Error, Result};

/// A message in a fixed buffer, NUL-terminated.
struct Message {
    len: usize,
    bytes: [u8; LRT_LAST_ERROR_BYTES],
}

impl Message {
    const EMPTY: Message = Message {
        len: 0,
        bytes: [0; LRT_LAST_ERROR_BYTES],
    };

    /// Appends `text` (an interior NUL written as `\0`), cutting at the
    /// capacity (keeping room for the NUL) on a character boundary.
    fn push(&mut self, text: &str) {
        for ch in text.chars() {
            let mut utf8 = [0u8; 4];
            let piece: &[u8] = if ch == '\0' {
                b"\\0"
            } else {
                ch.encode_utf8(&mut utf8).as_bytes()
            };
            if self.len + piece.len() >= LRT_LAST_ERROR_BYTES {
                break;
            }
            self.bytes[self.len..self.len + piece.len()].copy_from_slice(piece);
            self.len += piece.len();
        }
        self.bytes[self.len] = 0;
    }
}

thread_local! {
    /// This thread's message for its last failed call (const-initialised,
    /// without a destructor: using it never allocates).
    static LAST_ERROR: RefCell<Message> = const { RefCell::new(Message::EMPTY) };
}

/// Records `message` as this thread's last error, without allocating.
pub fn set_last_error(function: &str, message: &str) {
    LAST_ERROR.with(|slot| {
        let mut slot = slot.borrow_mut();
        slot.len = 0;
        slot.push(function);
        slot.push(": ");
        slot.push(message);
    });
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "unknown panic payload"
    }
}

/// The type name of `_item` (`type_name`): for a function item, its path.
pub fn path_of<T>(_item: &T) -> &'static str {
    std::any::type_name::<T>()
}

/// The name of the entry point from the path of an item its body defines
/// (`ffi_status!`, `ffi_value!`): `leanrt::ffi::x::lrt_f::here` -> `lrt_f`.
pub fn entry_name(item_path: &'static str) -> &'static str {
    let function = item_path.rsplit_once("::").map_or(item_path, |(f, _)| f);
    function
        .rsplit_once("::")
        .map_or(function, |(_, name)| name)
}

/// Runs the body of a status-returning entry point (`item_path`: as
/// [`entry_name`] takes it).
pub fn run_status(item_path: &'static str, body: impl FnOnce() -> Result<()>) -> lrt_status {
    run_value(item_path, |e| e, || body().map(|()| lrt_status::LRT_OK))
}

/// Runs the body of an entry point that returns a value: on error or panic
/// the message is recorded under the entry point's name and
/// `on_error(status)` is returned.
pub fn run_value<T>(
    item_path: &'static str,
    on_error: impl FnOnce(lrt_status) -> T,
    body: impl FnOnce() -> Result<T>,
) -> T {
    // A panic is reported through the status and lrt_last_error, never
    // printed by Rust's hook onto the host's stderr.
    let scope = alloc::CallScope::enter();
    let quiet = crate::diag::QuietPanics::enter();
    let outcome = catch_unwind(AssertUnwindSafe(body));
    drop(quiet);
    let status = match outcome {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => {
            let function = entry_name(item_path);
            set_last_error(function, error.message());
            on_error(error.kind().into())
        }
        Err(payload) => {
            let function = entry_name(item_path);
            let msg = panic_message(&*payload);
            LAST_ERROR.with(|slot| {
                let mut slot = slot.borrow_mut();
                slot.len = 0;
                for part in [function, ": internal error (panic): ", msg] {
                    slot.push(part);
                }
            });
            match crate::diag::take_caught_panic() {
                Some(detail) => crate::diag::warn_parts(&[function, ": caught ", &detail]),
                None => crate::diag::warn_parts(&[function, ": caught panic: ", msg]),
            }
            on_error(lrt_status::LRT_ERR_INTERNAL)
        }
    };
    drop(scope);
    status
}

/// Body of an entry point returning `lrt_status`: `ffi_status!({ ...;
/// Ok(()) })`. The entry point's name is the function's own: the path of
/// an item defined here, inside it.
#[allow(unused_macros)]
macro_rules! ffi_status {
    ($body:block) => {{
        fn here() {}
        $crate::ffi::boundary::run_status($crate::ffi::boundary::path_of(&here), move || $body)
    }};
}

/// Body of an entry point returning a value; `$fallback` is returned on
/// error: `ffi_value!(-1, { ...; Ok(v) })`. Named as for [`ffi_status!`].
#[allow(unused_macros)]
macro_rules! ffi_value {
    ($fallback:expr, $body:block) => {{
        fn here() {}
        $crate::ffi::boundary::run_value(
            $crate::ffi::boundary::path_of(&here),
            |_| $fallback,
            move || $body,
        )
    }};
}

/// The error for a NULL pointer argument named `what`.
pub(crate) fn null_arg(what: &str) -> Error {
    Error::invalid_argument(format!("`{what}` is NULL"))
}

/// A shared reference from a C pointer; NULL is `LRT_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// `ptr` is NULL or points to a valid, initialized `T` that outlives `'a` and
/// is not mutated meanwhile.
pub unsafe fn arg_ref<'a, T>(ptr: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: the caller guarantees ptr is NULL or valid for 'a.
    unsafe { ptr.as_ref() }.ok_or_else(|| null_arg(what))
}

/// A mutable reference from a C pointer; NULL is `LRT_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// `ptr` is NULL or points to a valid, initialized `T`, not aliased for `'a`.
pub unsafe fn arg_mut<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: the caller guarantees ptr is NULL or valid and unaliased for 'a.
    unsafe { ptr.as_mut() }.ok_or_else(|| null_arg(what))
}

/// A UTF-8 string from a NUL-terminated C string of at most
/// [`LRT_MAX_STRING_BYTES`] bytes; reads no further than that many bytes
/// (plus the NUL) whatever the string's length.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string valid for `'a`.
pub unsafe fn arg_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(null_arg(what));
    }
    // SAFETY: strnlen reads the string up to its NUL or the bound,
    // whichever comes first: bytes the caller's contract makes readable.
    let len = unsafe { libc::strnlen(ptr, LRT_MAX_STRING_BYTES + 1) };
    if len > LRT_MAX_STRING_BYTES {
        return Err(Error::invalid_argument(format!(
            "`{what}` is longer than LRT_MAX_STRING_BYTES ({LRT_MAX_STRING_BYTES} bytes)"
        )));
    }
    // SAFETY: `len` bytes are readable and followed by the NUL (above).
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    std::str::from_utf8(bytes)
        .map_err(|_| Error::invalid_argument(format!("`{what}` is not valid UTF-8")))
}

/// An output pointer, checked for NULL up front and written only once the
/// call has succeeded (so a failing call leaves `*out` untouched).
pub struct OutPtr<T>(*mut T);

impl<T> OutPtr<T> {
    /// Checks `ptr` for NULL.
    pub fn new(ptr: *mut T, what: &str) -> Result<Self> {
        if ptr.is_null() {
            Err(null_arg(what))
        } else {
            Ok(OutPtr(ptr))
        }
    }
    /// Writes the result.
    ///
    /// # Safety
    /// The pointer given to [`OutPtr::new`] is valid for a write of `T`.
    pub unsafe fn write(self, value: T) {
        // SAFETY: non-NULL (checked in new) and valid per the caller.
        unsafe { self.0.write(value) }
    }
}

/// The host's context pointer (a callback's `ctx`), handed back to the
/// host's own callbacks untouched, from any thread.
#[derive(Clone, Copy)]
pub struct HostContext(pub *mut c_void);

impl HostContext {
    /// The pointer, to pass to the callback.
    pub fn get(self) -> *mut c_void {
        self.0
    }
}
// SAFETY: leanrt never dereferences the pointer; it only passes it back to
// the host's callbacks, whose C contracts (lrt_set_log_callback, the pool's
// loop bodies and tasks) accept calls from any thread, at the same time.
unsafe impl Send for HostContext {}
// SAFETY: as above; shared access only copies the pointer value.
unsafe impl Sync for HostContext {}

/// The commit point of a create function: moves `value` to the heap
/// (fallibly) and hands it to C as an opaque handle, unless the call ran
/// short of memory on the way (`crate::alloc::check`): then `value` is
/// dropped and the call fails with `LRT_ERR_NO_MEMORY`.
pub fn try_into_handle<T>(value: T) -> Result<*mut T> {
    alloc::check()?;
    Ok(Box::into_raw(alloc::try_box(value)?))
}

/// Takes back and drops a handle made by [`try_into_handle`]; NULL is a no-op.
///
/// # Safety
/// `handle` is NULL or came from [`try_into_handle::<T>`] and is not used again.
pub unsafe fn drop_handle<T>(handle: *mut T) {
    if !handle.is_null() {
        // SAFETY: per the caller's contract the box is ours to drop, once.
        drop(unsafe { Box::from_raw(handle) });
    }
}

/// The static description of a status code; never NULL. Any integer is
/// accepted (values outside the enum give `"unknown status"`), which is why
/// the parameter is a plain `int`.
#[no_mangle]
pub extern "C" fn lrt_status_str(status: c_int) -> *const c_char {
    lrt_status::from_raw(status)
        .map_or(c"unknown status", lrt_status::description)
        .as_ptr()
}

/// Copies this thread's message for its last failed call into `buf`
/// (NUL-terminated, truncated to `len - 1` bytes) and returns the message's
/// full length without the NUL, as snprintf does. With no failure yet the
/// message is empty. `buf` may be NULL when `len` is 0, to ask for the length;
/// otherwise it must point to `len` writable bytes. Messages are per thread:
/// read it on the thread that made the failed call, before its next failure.
/// A message is at most LRT_LAST_ERROR_BYTES - 1 bytes (kept in a fixed
/// per-thread buffer, so recording it never allocates); a buffer of
/// LRT_LAST_ERROR_BYTES always holds it whole.
#[no_mangle]
pub unsafe extern "C" fn lrt_last_error(buf: *mut c_char, len: usize) -> usize {
    LAST_ERROR.with(|slot| {
        let slot = slot.borrow();
        let bytes = &slot.bytes[..slot.len];
        if !buf.is_null() && len > 0 {
            let n = bytes.len().min(len - 1);
            // SAFETY: buf is valid for len bytes per the contract; n + 1 <= len,
            // and the source is a separate Rust allocation.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buf, n);
                *buf.add(n) = 0;
            }
        }
        bytes.len()
    })
}

/// The version, "leanrt X.Y.Z": a static string, never NULL, never freed.
#[no_mangle]
pub extern "C" fn lrt_version() -> *const c_char {
    crate::VERSION_C.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last_error() -> String {
        let mut buf = [0 as c_char; 256];
        // SAFETY: buf is valid for 256 bytes.
        let n = unsafe { lrt_last_error(buf.as_mut_ptr(), buf.len()) };
        // SAFETY: lrt_last_error NUL-terminates within buf.
        let s = unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(n, s.len());
        s
    }

    // Entry points as the C surface writes them: the name comes from the
    // function.
    fn lrt_test_fn() -> lrt_status {
        ffi_status!({ Err(Error::out_of_range("index 9 outside [0, 4]")) })
    }
    fn lrt_ok_fn() -> lrt_status {
        ffi_status!({ Ok(()) })
    }
    fn lrt_panics() -> lrt_status {
        ffi_status!({
            if std::hint::black_box(true) {
                panic!("boom");
            }
            Ok(())
        })
    }
    fn lrt_value_fn() -> i32 {
        ffi_value!(-1, { Err(Error::state("not yet")) })
    }

    #[test]
    fn error_maps_to_status_and_message() {
        let st = lrt_test_fn();
        assert_eq!(st, lrt_status::LRT_ERR_OUT_OF_RANGE);
        assert_eq!(last_error(), "lrt_test_fn: index 9 outside [0, 4]");
        // A later success leaves the last failure's message in place.
        assert_eq!(lrt_ok_fn(), lrt_status::LRT_OK);
        assert_eq!(last_error(), "lrt_test_fn: index 9 outside [0, 4]");
    }

    #[test]
    fn panic_becomes_internal() {
        let st = lrt_panics();
        assert_eq!(st, lrt_status::LRT_ERR_INTERNAL);
        assert!(last_error().contains("lrt_panics: internal error (panic): boom"));
        let v: i32 = lrt_value_fn();
        assert_eq!(v, -1);
        assert_eq!(last_error(), "lrt_value_fn: not yet");
    }

    #[test]
    fn entry_names_come_from_the_function() {
        assert_eq!(entry_name("leanrt::ffi::staging::lrt_f::here"), "lrt_f");
        assert_eq!(entry_name("lrt_f::here"), "lrt_f");
    }

    #[test]
    fn null_arguments_are_rejected() {
        // SAFETY: NULL is allowed by the helpers' contracts.
        let e = unsafe { arg_ref::<u32>(std::ptr::null(), "cfg") }.unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        assert_eq!(e.message(), "`cfg` is NULL");
        assert!(OutPtr::<u32>::new(std::ptr::null_mut(), "out").is_err());
        // SAFETY: NULL is allowed.
        assert!(unsafe { arg_str(std::ptr::null(), "key") }.is_err());
    }

    #[test]
    fn last_error_truncates_like_snprintf() {
        set_last_error("f", "0123456789");
        let mut buf = [0x7f as c_char; 5];
        // SAFETY: buf is valid for 5 bytes.
        let n = unsafe { lrt_last_error(buf.as_mut_ptr(), buf.len()) };
        assert_eq!(n, "f: 0123456789".len());
        assert_eq!(buf[4], 0);
        // SAFETY: NUL-terminated above.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(text.to_str().unwrap(), "f: 0");
        // SAFETY: NULL with len 0 only asks for the length.
        assert_eq!(unsafe { lrt_last_error(std::ptr::null_mut(), 0) }, n);
    }

    #[test]
    fn last_error_slot_is_bounded_and_escapes_nul() {
        set_last_error("f", "a\0b");
        assert_eq!(last_error(), "f: a\\0b");
        let long = "x".repeat(10 * LRT_LAST_ERROR_BYTES);
        set_last_error("g", &long);
        // SAFETY: NULL with len 0 only asks for the length.
        let n = unsafe { lrt_last_error(std::ptr::null_mut(), 0) };
        assert_eq!(n, LRT_LAST_ERROR_BYTES - 1);
    }

    #[test]
    fn string_arguments_are_bounded() {
        let ok = std::ffi::CString::new("k".repeat(LRT_MAX_STRING_BYTES)).unwrap();
        // SAFETY: a NUL-terminated string.
        let read = unsafe { arg_str(ok.as_ptr(), "key") };
        assert_eq!(read.unwrap().len(), LRT_MAX_STRING_BYTES);
        let long = std::ffi::CString::new("k".repeat(LRT_MAX_STRING_BYTES + 1)).unwrap();
        // SAFETY: as above.
        let e = unsafe { arg_str(long.as_ptr(), "key") }.unwrap_err();
        assert!(
            e.message().contains("LRT_MAX_STRING_BYTES"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn status_strings_cover_every_status() {
        for status in lrt_status::ALL {
            let raw = status as c_int;
            // SAFETY: lrt_status_str returns a static C string.
            let s = unsafe { CStr::from_ptr(lrt_status_str(raw)) }
                .to_str()
                .unwrap();
            assert!(s.starts_with("LRT_"), "{raw}: {s}");
            assert!(s.starts_with(&format!("{status:?}: ")), "{raw}: {s}");
        }
        let past = lrt_status::ALL.len() as c_int;
        // SAFETY: as above.
        let s = unsafe { CStr::from_ptr(lrt_status_str(past)) };
        assert_eq!(s.to_str().unwrap(), "unknown status");
        // SAFETY: as above.
        let s = unsafe { CStr::from_ptr(lrt_status_str(99)) };
        assert_eq!(s.to_str().unwrap(), "unknown status");
    }
}
