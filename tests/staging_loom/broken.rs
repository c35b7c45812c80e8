//! `src/staging/one_call.rs` compiled against a facade whose
//! compare-exchange is a separate load and store, so two calls can both
//! see `false` and both enter.
pub mod sync {
    pub use loom::sync::atomic::Ordering;

    pub struct AtomicBool(loom::sync::atomic::AtomicBool);

    impl AtomicBool {
        pub fn new(v: bool) -> Self {
            AtomicBool(loom::sync::atomic::AtomicBool::new(v))
        }
        pub fn compare_exchange(
            &self,
            current: bool,
            new: bool,
            success: Ordering,
            _failure: Ordering,
        ) -> Result<bool, bool> {
            let v = self.0.load(success);
            if v != current {
                return Err(v);
            }
            self.0.store(new, Ordering::Release);
            Ok(v)
        }
        pub fn store(&self, v: bool, order: Ordering) {
            self.0.store(v, order)
        }
    }
}

#[allow(dead_code)]
#[path = "../../src/staging/one_call.rs"]
pub mod one_call;
