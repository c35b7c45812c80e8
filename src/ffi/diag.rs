//! `lrt_set_log_callback`: where leanrt's warnings go. Core: `crate::diag`.
use super::boundary::HostContext;
use crate::diag;
pub use crate::diag::abi::{lrt_log_fn, lrt_log_level};
use crate::error::abi::lrt_status;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// Sends leanrt's warnings to `callback(ctx, level, message)` instead of the
/// default. By default leanrt prints nothing; with no callback installed and
/// the environment variable LEANRT_LOG set to anything but an empty value,
/// `0` or `off` (any case), e.g. LEANRT_LOG=stderr, it writes one line per
/// message to standard error (LEANRT_LOG=0 or off: silent, as unset). A NULL `callback` removes the callback (back
/// to the default). Installing replaces any earlier callback; the old one
/// may still receive a message that was being delivered while it was
/// replaced. Returns LRT_OK, or LRT_ERR_NO_MEMORY (nothing changed) when
/// the callback cannot be recorded for lack of memory.
#[no_mangle]
pub extern "C" fn lrt_set_log_callback(callback: lrt_log_fn, ctx: *mut c_void) -> lrt_status {
    ffi_status!({
        let Some(callback) = callback else {
            diag::set_sink(None);
            return Ok(());
        };
        let ctx = HostContext(ctx);
        let sink: diag::Sink = Arc::new(move |level, message: &str| {
            // NUL-terminated in a stack buffer, cut before any interior NUL:
            // delivering a warning never allocates.
            let mut text = [0u8; diag::WARNING_BYTES + 1];
            let bytes = message.as_bytes();
            let n = bytes
                .iter()
                .position(|&b| b == 0)
                .unwrap_or(bytes.len())
                .min(diag::WARNING_BYTES);
            text[..n].copy_from_slice(&bytes[..n]);
            // SAFETY: the host's callback with the contract stated above:
            // its own ctx and a NUL-terminated string valid for the call.
            unsafe { callback(ctx.get(), level, text.as_ptr().cast::<c_char>()) };
        });
        // Commit point: not with a sink the reserve had to pay for.
        crate::alloc::check()?;
        diag::set_sink(Some(sink));
        Ok(())
    })
}
