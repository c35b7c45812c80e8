//! Which threads are inside a pool's C calls right now, so that a destroy
//! racing them is refused instead of freeing the pool under them.
//!
//! In Rust the borrow checker rules the race out; through the C ABI any
//! thread may call `lrt_pool_destroy` while others are still inside
//! `lrt_pool_try_parallel_for` & co. Every C call on a pool (other than
//! from one of the pool's own workers, which destroy joins anyway) holds an
//! [`Entered`] guard; destroy first [`Callers::close`]s the pool, which
//! fails while any guard is held.
//!
//! Protocol (Dekker's, with a veto; every operation a `SeqCst`
//! read-modify-write, so each read returns the latest value):
//! * enter: `shards[s] += 1`, then read `state`: `OPEN` → inside;
//!   `CLOSED` → `shards[s] -= 1`, refused; `CLOSING` (a destroy is
//!   deciding) → veto it with `CLOSING -> OPEN`, then inside (if the CAS
//!   finds `CLOSED`, refused as above).
//! * close: `state = CLOSING`, then read every shard: any caller →
//!   `CLOSING -> OPEN`, refused; none → `CLOSING -> CLOSED` (the pool may
//!   be freed), refused if a veto made it `OPEN` meanwhile.
//!
//! Invariant: a close that succeeds saw no enter's increment, and an enter
//! whose increment it did not see comes after close's `CLOSING` in the
//! single order of `SeqCst` operations, so it reads `CLOSING` (and its veto
//! makes the close fail) or `CLOSED` (and it is refused): it never proceeds
//! into a pool being freed. Nobody waits: an enter that meets a destroy
//! deciding gets in, and a refused destroy refuses no one else. (An enter
//! that starts after the pool was freed is a use after destroy, as in any
//! C library: not detectable.)
//!
//! The counts are sharded by thread on separate cache lines, so that
//! callers on different threads do not contend on one line.
//!
//! Model-checked with loom (`tests/pool_loom.rs`: a close that succeeds
//! never overlaps a caller inside), with a broken variant (every ordering
//! `Relaxed`) that must fail.
use super::sync::{AtomicU8, AtomicUsize, CachePadded, Ordering::SeqCst};

const SHARDS: usize = 8;
const OPEN: u8 = 0;
const CLOSING: u8 = 1;
const CLOSED: u8 = 2;

/// The count of callers inside a pool, and whether it is closing.
pub struct Callers {
    shards: [CachePadded<AtomicUsize>; SHARDS],
    state: CachePadded<AtomicU8>,
}

/// A caller inside the pool; leaves on drop.
pub struct Entered<'a> {
    shard: &'a AtomicUsize,
}

/// A C call in progress on a pool (`ThreadPool::enter_call`): counted for
/// a caller, not for one of the pool's own workers.
pub struct CallGuard<'a> {
    _inside: Option<Entered<'a>>,
}

impl<'a> CallGuard<'a> {
    pub(super) fn caller(entered: Entered<'a>) -> Self {
        CallGuard {
            _inside: Some(entered),
        }
    }
    pub(super) fn worker() -> Self {
        CallGuard { _inside: None }
    }
}

impl Callers {
    /// Open, nobody inside.
    pub fn new() -> Self {
        Callers {
            shards: std::array::from_fn(|_| CachePadded::new(AtomicUsize::new(0))),
            state: CachePadded::new(AtomicU8::new(OPEN)),
        }
    }

    /// Enters on shard `shard` (any number: the caller's thread picks
    /// it); `None` once the pool is closed for good.
    pub fn enter(&self, shard: usize) -> Option<Entered<'_>> {
        let shard = &*self.shards[shard % SHARDS];
        shard.fetch_add(1, SeqCst);
        // Read as a read-modify-write (adds 0): the latest value in the
        // variable's modification order (loom checks it so; it models
        // SeqCst loads as acquire loads).
        let mut state = self.state.fetch_add(0, SeqCst);
        loop {
            match state {
                OPEN => return Some(Entered { shard }),
                CLOSED => {
                    shard.fetch_sub(1, SeqCst);
                    return None;
                }
                // A destroy is deciding and may not have seen this caller:
                // veto it (its own CLOSING -> CLOSED then fails).
                _ => match self.state.compare_exchange(CLOSING, OPEN, SeqCst, SeqCst) {
                    Ok(_) => return Some(Entered { shard }),
                    Err(now) => state = now,
                },
            }
        }
    }

    /// Closes for good if nobody is inside; otherwise returns how many
    /// callers are (at least 1) and leaves the pool open.
    pub fn close(&self) -> Result<(), usize> {
        self.state.swap(CLOSING, SeqCst);
        // Read-modify-writes again (see `enter`).
        let inside: usize = self.shards.iter().map(|s| s.fetch_add(0, SeqCst)).sum();
        if inside > 0 {
            // Back to OPEN (unless a caller's veto already did it).
            let _ = self.state.compare_exchange(CLOSING, OPEN, SeqCst, SeqCst);
            return Err(inside);
        }
        // A caller that vetoed meanwhile is inside now.
        self.state
            .compare_exchange(CLOSING, CLOSED, SeqCst, SeqCst)
            .map(|_| ())
            .map_err(|_| 1)
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.shard.fetch_sub(1, SeqCst);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn close_is_refused_while_someone_is_inside() {
        let c = Callers::new();
        let a = c.enter(0).unwrap();
        let b = c.enter(0).unwrap();
        assert_eq!(c.close(), Err(2));
        drop(a);
        assert_eq!(c.close(), Err(1));
        // A refused close leaves the pool open.
        let again = c.enter(0).unwrap();
        drop(again);
        drop(b);
        assert_eq!(c.close(), Ok(()));
        assert!(c.enter(1).is_none(), "closed for good");
    }

    #[test]
    fn racing_enters_never_pass_a_successful_close() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        for _ in 0..200 {
            let c = Arc::new(Callers::new());
            let freed = Arc::new(AtomicBool::new(false));
            let threads: Vec<_> = (0..3)
                .map(|_| {
                    let (c, freed) = (c.clone(), freed.clone());
                    std::thread::spawn(move || {
                        for _ in 0..200 {
                            match c.enter(crate::pool::os_thread::current_id()) {
                                Some(_inside) => {
                                    assert!(!freed.load(SeqCst), "inside a freed pool")
                                }
                                None => return,
                            }
                        }
                    })
                })
                .collect();
            while c.close().is_err() {
                std::hint::spin_loop();
            }
            freed.store(true, SeqCst);
            for t in threads {
                t.join().unwrap();
            }
        }
    }
}
