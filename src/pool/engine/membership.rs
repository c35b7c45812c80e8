//! Which pool the calling thread belongs to: its worker record (set by the
//! worker loop for its whole life) and the pools it is inside right now (a
//! loop or an inline task of theirs on its stack).
use super::job::Job;
use crossbeam_deque::Worker;
use std::cell::RefCell;
use std::rc::Rc;

/// A worker's thread-local view: which pool, which index, its own deque.
pub(super) struct WorkerLocal {
    pub(super) pool: usize,
    pub(super) index: usize,
    pub(super) local: Worker<Job>,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<WorkerLocal>>> = const { RefCell::new(None) };
    /// Pools this thread is inside right now.
    static INSIDE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The calling thread's worker record if it is a worker of pool `id`.
pub(super) fn current(id: usize) -> Option<Rc<WorkerLocal>> {
    CURRENT.with(|c| c.borrow().as_ref().filter(|w| w.pool == id).cloned())
}

/// Makes the calling thread the worker `me` (until [`leave_worker`]).
pub(super) fn become_worker(me: Rc<WorkerLocal>) {
    CURRENT.with(|c| *c.borrow_mut() = Some(me));
}

/// The calling thread is no longer a worker.
pub(super) fn leave_worker() {
    CURRENT.with(|c| *c.borrow_mut() = None);
}

/// Marks the calling thread as inside pool `id` until dropped.
pub(crate) struct InUse(usize);

/// Marks the calling thread as inside pool `id` (running one of its loops
/// or an inline task) until the guard is dropped.
pub(super) fn enter(id: usize) -> InUse {
    INSIDE.with(|s| s.borrow_mut().push(id));
    InUse(id)
}

/// Whether the calling thread is inside pool `id` right now.
pub(super) fn is_inside(id: usize) -> bool {
    INSIDE.with(|s| s.borrow().contains(&id))
}

impl Drop for InUse {
    fn drop(&mut self) {
        INSIDE.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(at) = s.iter().rposition(|&p| p == self.0) {
                s.remove(at);
            }
        });
    }
}
