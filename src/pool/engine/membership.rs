//! Which pool the calling thread belongs to: its worker record (set by the
//! worker loop for its whole life) and the pools it is inside right now (a
//! loop or an inline task of theirs on its stack).
use super::budget::{CpuShare, Linger, CENSUS_SHIFT};
use super::job::Job;
use crossbeam_deque::Worker;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A worker's thread-local view: which pool, which index, its own deque.
pub(super) struct WorkerLocal {
    pub(super) pool: usize,
    pub(super) index: usize,
    pub(super) local: Worker<Job>,
}

/// Pools a thread is inside, innermost last, in a fixed table; entries
/// deeper than [`INSIDE_DEPTH`] are only counted (a destroy from that deep
/// inside a pool's own loop is then not recognised as such).
struct Inside {
    ids: [usize; INSIDE_DEPTH],
    len: usize,
    deeper: usize,
}

/// Nesting depth [`Inside`] records.
const INSIDE_DEPTH: usize = 16;

// Both thread-locals are plain data without a destructor: a thread-local
// with one registers it on first use, which the C library does by
// allocating (and aborting when that fails); see `crate::thread_exit`.
thread_local! {
    /// Whether this thread is counted in the CPU share now (`budget.rs`):
    /// a caller inside a loop, however deeply nested.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
    /// Where this thread's last counted loop left its linger in the CPU
    /// share (`budget.rs`), for its next loop to take back.
    static LINGER: Cell<Option<Linger>> = const { Cell::new(None) };
    /// The census epoch this thread last enlisted in (`budget.rs`);
    /// `u64::MAX`: none yet.
    static ENLISTED: Cell<u64> = const { Cell::new(u64::MAX) };
    /// This thread's worker record while `worker::main`, which owns it,
    /// runs here ([`become_worker`]); NULL elsewhere.
    static CURRENT: Cell<*const WorkerLocal> = const { Cell::new(std::ptr::null()) };
    /// Pools this thread is inside right now.
    static INSIDE: RefCell<Inside> = const {
        RefCell::new(Inside { ids: [0; INSIDE_DEPTH], len: 0, deeper: 0 })
    };
}

/// The calling thread's worker record if it is a worker of pool `id`.
pub(super) fn current(id: usize) -> Option<Rc<WorkerLocal>> {
    let p = CURRENT.with(Cell::get);
    // SAFETY: non-NULL only while a `Member` guard is alive on this thread,
    // and its worker record (an Rc the guard's owner holds) outlives it.
    if p.is_null() || unsafe { (*p).pool } != id {
        return None;
    }
    // SAFETY: `p` is Rc::as_ptr of that live Rc; the count is raised for
    // the Rc made here.
    unsafe {
        Rc::increment_strong_count(p);
        Some(Rc::from_raw(p))
    }
}

/// The calling thread is the worker `me` while the guard lives (also when
/// unwinding it stops being one). `me` must outlive the guard.
pub(super) struct Member(());

/// Makes the calling thread the worker `me` until the guard is dropped.
pub(super) fn become_worker(me: &Rc<WorkerLocal>) -> Member {
    CURRENT.with(|c| c.set(Rc::as_ptr(me)));
    Member(())
}

impl Drop for Member {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(std::ptr::null()));
    }
}

/// Marks the calling thread as inside pool `id` until dropped.
pub(crate) struct InUse(usize);

/// Marks the calling thread as inside pool `id` (running one of its loops
/// or an inline task) until the guard is dropped.
pub(super) fn enter(id: usize) -> InUse {
    INSIDE.with(|s| {
        let mut s = s.borrow_mut();
        if s.len < INSIDE_DEPTH {
            let at = s.len;
            s.ids[at] = id;
            s.len += 1;
        } else {
            s.deeper += 1;
        }
    });
    InUse(id)
}

/// Whether the calling thread is inside pool `id` right now.
pub(super) fn is_inside(id: usize) -> bool {
    INSIDE.with(|s| {
        let s = s.borrow();
        s.ids[..s.len].contains(&id)
    })
}

impl Drop for InUse {
    // Guards end innermost first, so the uncounted deeper entries go first.
    fn drop(&mut self) {
        INSIDE.with(|s| {
            let mut s = s.borrow_mut();
            if s.deeper > 0 {
                s.deeper -= 1;
            } else if let Some(at) = s.ids[..s.len].iter().rposition(|&p| p == self.0) {
                let len = s.len;
                s.ids.copy_within(at + 1..len, at);
                s.len -= 1;
            }
        });
    }
}

/// Marks this thread counted as a caller in the CPU share (`budget.rs`)
/// unless it already is (a loop nested in one of its loops) or is a
/// worker of some pool (counted as a busy helper instead). Marked: the
/// linger its previous counted loop left (if any, taken from the thread),
/// and [`uncount_caller`] must follow once its loop is done.
pub(super) fn count_caller() -> Option<Option<Linger>> {
    (CURRENT.with(Cell::get).is_null() && !COUNTED.with(|c| c.replace(true)))
        .then(|| LINGER.with(Cell::take))
}

/// Enlists this (counted) caller thread in the CPU share's census at epoch
/// `now` unless it already did in that census epoch or a later one (a
/// bucket another thread's clock had moved on counts it there;
/// `budget.rs`).
pub(super) fn enlist_caller(share: &CpuShare, now: u64) {
    let census = now >> CENSUS_SHIFT;
    let last = ENLISTED.with(Cell::get);
    if last == u64::MAX || census > last {
        ENLISTED.with(|e| e.set(share.enlist(now)));
    }
}

/// Undoes a [`count_caller`] that marked the thread when its loop does not
/// claim after all (a crowd, `budget.rs`): the linger it took (`back`)
/// goes back to the thread.
pub(super) fn unmark_caller(back: Option<Linger>) {
    LINGER.with(|l| l.set(back));
    COUNTED.with(|c| c.set(false));
}

/// Ends what a [`count_caller`] that marked the thread began; `linger` is
/// where its loop's end left the thread's linger.
pub(super) fn uncount_caller(linger: Linger) {
    LINGER.with(|l| l.set(Some(linger)));
    COUNTED.with(|c| c.set(false));
}
