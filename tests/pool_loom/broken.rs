//! `gate.rs` compiled against a deliberately broken facade: `lock` takes a
//! fresh mutex each time, so the owner's check-then-block and a helper's
//! signal no longer exclude each other. `tests/pool_loom.rs` expects loom to
//! find the lost wake-up this causes.

pub mod sync {
    pub use crossbeam_utils::CachePadded;
    pub use loom::sync::atomic::{AtomicU64, Ordering};
    pub use loom::sync::{Condvar, Mutex, MutexGuard};

    pub fn lock(_m: &Mutex<()>) -> MutexGuard<'static, ()> {
        let fresh: &'static Mutex<()> = Box::leak(Box::new(Mutex::new(())));
        fresh.lock().unwrap()
    }

    pub fn wait<'a>(cv: &Condvar, g: MutexGuard<'a, ()>) -> MutexGuard<'a, ()> {
        cv.wait(g).unwrap()
    }

    pub fn spin_hint() {
        loom::hint::spin_loop();
    }

    pub fn yield_now() {
        loom::thread::yield_now();
    }
}

#[allow(dead_code)]
#[path = "../../src/pool/engine/gate.rs"]
pub mod gate;
