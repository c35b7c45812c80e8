//! `budget.rs` compiled against a deliberately broken facade: its
//! `AtomicU64`'s read-modify-writes are a load and then a store, so two
//! threads that update the CPU share at once can lose one's update.
//! `tests/pool_loom.rs` expects loom to find a share that does not return
//! to empty once every caller and helper is gone.

pub mod sync {
    pub use loom::sync::atomic::Ordering;

    /// An atomic whose updates are not atomic.
    pub struct AtomicU64(loom::sync::atomic::AtomicU64);

    impl AtomicU64 {
        pub fn new(v: u64) -> Self {
            AtomicU64(loom::sync::atomic::AtomicU64::new(v))
        }
        pub fn load(&self, o: Ordering) -> u64 {
            self.0.load(o)
        }
        pub fn fetch_add(&self, v: u64, o: Ordering) -> u64 {
            let old = self.0.load(o);
            self.0.store(old.wrapping_add(v), o);
            old
        }
        pub fn fetch_sub(&self, v: u64, o: Ordering) -> u64 {
            let old = self.0.load(o);
            self.0.store(old.wrapping_sub(v), o);
            old
        }
    }
}

#[allow(dead_code)]
#[path = "../../src/pool/engine/budget.rs"]
pub mod budget;
