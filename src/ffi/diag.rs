//! `lrt_set_log_callback`: where leanrt's warnings go. Core: `crate::diag`.
use super::boundary::HostContext;
use super::status::lrt_status;
use crate::diag::{self, Level};
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

/// How serious a message passed to an lrt_log_fn is.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum lrt_log_level {
    /// Something was ignored or degraded (an invalid PTO2_RING_TASK_WINDOW,
    /// a mirror that could not be pinned, a scheduled task or a leanrt call
    /// that panicked) and leanrt carried on.
    LRT_LOG_WARNING = 1,
}

/// Receives one message: `ctx` as given to lrt_set_log_callback, the level,
/// and a NUL-terminated text that is valid only during the call. It may be
/// called from any thread, including the pool's workers, and concurrently.
pub type LogFn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, level: lrt_log_level, message: *const c_char)>;

/// Sends leanrt's warnings to `callback(ctx, level, message)` instead of the
/// default. By default leanrt prints nothing; with the environment variable
/// LEANRT_LOG=stderr and no callback installed, it writes one line per
/// message to standard error. A NULL `callback` removes the callback (back
/// to the default). Installing replaces any earlier callback; the old one
/// may still receive a message that was being delivered while it was
/// replaced. Always returns LRT_OK.
#[no_mangle]
pub extern "C" fn lrt_set_log_callback(callback: LogFn, ctx: *mut c_void) -> lrt_status {
    ffi_status!("lrt_set_log_callback", {
        let Some(callback) = callback else {
            diag::set_sink(None);
            return Ok(());
        };
        let ctx = HostContext(ctx);
        diag::set_sink(Some(Arc::new(move |level, message: &str| {
            let level = match level {
                Level::Warning => lrt_log_level::LRT_LOG_WARNING,
            };
            let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
            // SAFETY: the host's callback with the contract stated above:
            // its own ctx and a NUL-terminated string valid for the call.
            unsafe { callback(ctx.get(), level, text.as_ptr()) };
        })));
        Ok(())
    })
}
