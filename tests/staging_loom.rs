//! Loom model of `src/staging/one_call.rs` (one call at a time on a maker,
//! the C handle's guard), compiled here against loom's atomics through the
//! same `sync` facade name: two calls race to enter; one that gets in uses
//! the value (a loom `UnsafeCell`, so two at once would be a data race loom
//! reports), and a call after both sees every write. The last model
//! compiles the same file against a broken facade whose compare-exchange is
//! a load and a store; it must fail (loom finds both calls inside), which
//! shows the model can fail.
//!
//! Run (CI does): `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
//! cargo test -p leanrt --release --test staging_loom`
#![cfg(loom)]

mod sync {
    pub use loom::sync::atomic::{AtomicBool, Ordering};
}

#[allow(dead_code)]
#[path = "../src/staging/one_call.rs"]
mod one_call;

/// `one_call.rs` again, against a compare-exchange that is not atomic.
#[path = "staging_loom/broken.rs"]
mod broken;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;

/// Two racing calls and a third after them, on the `OneCall` of module
/// `$m`: a racing call that gets in adds 1 to the value.
macro_rules! race {
    ($m:path) => {{
        use $m as guarded;
        let guard = Arc::new(guarded::OneCall::new(UnsafeCell::new(0u32)));
        let entered = Arc::new(AtomicUsize::new(0));
        let calls: Vec<_> = (0..2)
            .map(|_| {
                let (guard, entered) = (guard.clone(), entered.clone());
                loom::thread::spawn(move || {
                    if let Some(value) = guard.try_enter() {
                        entered.fetch_add(1, Ordering::Relaxed);
                        // SAFETY: loom checks that no other access overlaps.
                        value.with_mut(|v| unsafe { *v += 1 });
                    }
                })
            })
            .collect();
        for c in calls {
            c.join().unwrap();
        }
        let n = entered.load(Ordering::Relaxed);
        assert!(n >= 1, "one of two racing calls gets in");
        let after = guard.try_enter().expect("a call after both gets in");
        // SAFETY: loom checks the access; the Release of each leaving call
        // orders its write before this read.
        assert_eq!(after.with(|v| unsafe { *v }) as usize, n);
    }};
}

#[test]
fn one_call_at_a_time() {
    loom::model(|| {
        race!(crate::one_call);
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn the_broken_guard_lets_two_calls_in() {
    loom::model(|| {
        race!(crate::broken::one_call);
    });
}
