//! `budget.rs` compiled against a deliberately broken facade: its
//! `AtomicU64`'s read-modify-writes (and compare-exchanges) are a load and
//! then a store, so two threads that update the CPU share or a linger
//! bucket at once can lose one's update. `tests/pool_loom.rs` expects loom
//! to find a share that does not return to empty once every caller and
//! helper is gone, and lingers miscounted.

pub mod sync {
    pub use crossbeam_utils::CachePadded;
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
        pub fn compare_exchange_weak(
            &self,
            current: u64,
            new: u64,
            o: Ordering,
            _fail: Ordering,
        ) -> Result<u64, u64> {
            let old = self.0.load(o);
            if old != current {
                return Err(old);
            }
            self.0.store(new, o);
            Ok(old)
        }
    }
}

#[allow(dead_code)]
#[path = "../../src/pool/engine/budget.rs"]
pub mod budget;
