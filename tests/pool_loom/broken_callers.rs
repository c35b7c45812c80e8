//! `callers.rs` compiled against a deliberately broken facade: its
//! `Ordering::SeqCst` is `Relaxed`, so a close no longer sees a caller's
//! entry, nor a caller the close. `tests/pool_loom.rs` expects loom to find
//! the race on the pool's state this allows.

pub mod sync {
    pub use crossbeam_utils::CachePadded;
    pub use loom::sync::atomic::{AtomicU8, AtomicUsize};

    /// Stands in for `std::sync::atomic::Ordering`: the one name the file
    /// uses, weakened.
    #[allow(non_snake_case)]
    pub mod Ordering {
        #[allow(non_upper_case_globals)]
        pub const SeqCst: loom::sync::atomic::Ordering = loom::sync::atomic::Ordering::Relaxed;
    }
}

#[allow(dead_code)]
#[path = "../../src/pool/engine/callers.rs"]
pub mod callers;
