//! The diagnostics channel as C sees it: the level and the callback type of
//! `lrt_set_log_callback`, under the names C sees. The core reports through
//! these types itself (`crate::diag`), and cbindgen reads this file for the
//! header, so each doc comment is written for C readers.
#![allow(non_camel_case_types)]
use std::ffi::{c_char, c_void};

/// How serious a message passed to an lrt_log_fn is.
#[repr(C)]
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
pub type lrt_log_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, level: lrt_log_level, message: *const c_char)>;
