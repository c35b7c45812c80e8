//! The CUDA devices that C holds by token: a C `lrt_host_api` made by
//! `lrt_host_api_cuda` carries a token in its `ctx`, not a pointer, and every
//! callback looks its device up here.
//!
//! Protocol: a token is issued once (a counter, never reused) and names its
//! device from [`Registry::insert`] until [`Registry::remove`]. Users clone
//! the `Arc` under the lock and use it outside, so a removal racing with a
//! callback on another thread never frees a device in use; a maker created on
//! the api holds its own clone, so releasing the api before destroying the
//! maker is safe.
//!
//! Fork: the registry belongs to the process that first used it. A forked
//! child must not take the lock (a parent thread may have held it at the
//! fork) and the devices in it are the parent's (CUDA does not survive
//! fork): in a child every call is refused before the lock is taken.
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::driver::claim_for_this_process;
use crate::{Error, Result};

/// Tokens start at a recognisable odd value and go up by two, so that a
/// zeroed or foreign `ctx` (NULL, a real pointer) never names a device by
/// accident.
const FIRST_TOKEN: usize = 0x1ea5_0001;

/// The live values, each beside its token.
type Entries<T> = Vec<(usize, Arc<T>)>;

/// Values by token, owned by one process. `what` names it in errors.
pub struct Registry<T> {
    what: &'static str,
    /// The process that first used the registry (0: none yet).
    owner: AtomicU32,
    entries: Mutex<Entries<T>>,
    next_token: AtomicUsize,
}

impl<T> Registry<T> {
    /// An empty registry; `what` names it in errors ("CUDA host api").
    pub const fn new(what: &'static str) -> Self {
        Registry {
            what,
            owner: AtomicU32::new(0),
            entries: Mutex::new(Vec::new()),
            next_token: AtomicUsize::new(FIRST_TOKEN),
        }
    }

    /// The entries, for this process only: in a forked child of a process
    /// that used the registry, an error (and no lock taken).
    fn entries(&self) -> Result<MutexGuard<'_, Entries<T>>> {
        claim_for_this_process(&self.owner, self.what)?;
        // Pushes and removals are single operations: a poisoned lock still
        // guards consistent data.
        Ok(self.entries.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Registers `value` under a new token. `ErrorKind::Unavailable` in a
    /// forked child.
    pub fn insert(&self, value: T) -> Result<usize> {
        let token = self.next_token.fetch_add(2, Ordering::Relaxed);
        self.entries()?.push((token, Arc::new(value)));
        Ok(token)
    }

    /// The value registered under `token`: `ErrorKind::State` when none is
    /// (removed, or never issued), `ErrorKind::Unavailable` in a forked
    /// child.
    pub fn get(&self, token: usize) -> Result<Arc<T>> {
        self.entries()?
            .iter()
            .find(|(t, _)| *t == token)
            .map(|(_, v)| Arc::clone(v))
            .ok_or_else(|| {
                Error::state(format!(
                    "{} context {token:#x} is not live (released, or not made by lrt_host_api_cuda)",
                    self.what
                ))
            })
    }

    /// Takes `token` out and returns its value, if it was live. The lock is
    /// released before the caller drops the value (the last reference of a
    /// CUDA device calls the driver). Nothing in a forked child.
    pub fn remove(&self, token: usize) -> Option<Arc<T>> {
        let mut entries = self.entries().ok()?;
        let i = entries.iter().position(|(t, _)| *t == token)?;
        Some(entries.swap_remove(i).1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn tokens_name_values_until_removed() {
        let r = Registry::new("test registry");
        let a = r.insert("a").unwrap();
        let b = r.insert("b").unwrap();
        assert_eq!(a, FIRST_TOKEN);
        assert_eq!(b, FIRST_TOKEN + 2, "tokens are never reused");
        assert_eq!(*r.get(a).unwrap(), "a");
        let held = r.get(b).unwrap();
        assert_eq!(*r.remove(b).unwrap(), "b");
        assert_eq!(*held, "b", "a removed value lives on in its users");
        let e = r.get(b).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::State);
        assert!(e.message().contains("is not live"), "{}", e.message());
        assert!(r.remove(b).is_none(), "removing twice is a no-op");
        assert_eq!(*r.get(a).unwrap(), "a");
    }

    #[test]
    fn forged_tokens_name_nothing() {
        let r = Registry::new("test registry");
        r.insert(1u8).unwrap();
        for forged in [0, 1, FIRST_TOKEN + 1, 12345, usize::MAX] {
            assert_eq!(r.get(forged).unwrap_err().kind(), ErrorKind::State);
            assert!(r.remove(forged).is_none());
        }
    }

    /// A forked child is refused by every call without taking the lock, even
    /// while the parent holds it.
    #[test]
    fn a_forked_child_is_refused_without_taking_the_lock() {
        let r = Registry::new("test registry");
        let token = r.insert(7u32).unwrap();
        let held = r.entries().unwrap();
        // SAFETY: the child only reads atomics, formats errors and leaves
        // with _exit; it must never take the lock that this thread holds.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // A child that blocked on the lock would hang: SIGALRM ends it.
            // SAFETY: alarm only schedules a signal for this process.
            unsafe { libc::alarm(5) };
            let refused = |e: Error| {
                e.kind() == ErrorKind::Unavailable && e.message().contains("does not survive fork")
            };
            let ok = r.get(token).is_err_and(refused)
                && r.insert(8).is_err_and(refused)
                && r.remove(token).is_none();
            // SAFETY: ends the child at once, running nothing of the parent's.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        drop(held);
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(rc, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child was not refused cleanly (status {status:#x})"
        );
        assert_eq!(*r.get(token).unwrap(), 7, "the parent keeps its entries");
    }
}
