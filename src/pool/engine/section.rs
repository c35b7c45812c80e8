//! Parallel sections (ORT's `ThreadPool::ParallelSection`): a thread runs
//! several loops in a row and the workers that joined the first of them
//! stay with it until it ends, so each loop is handed to a waiting team
//! instead of being offered to the whole pool.
//!
//! * Begin: the section takes the pool's broadcast slot for its whole
//!   life (`Slot::try_own`) and gets a non-zero id (`Sections::id`,
//!   team size 0). If the slot is busy (another thread's loop or section),
//!   or the pool was inherited across fork, the section is *detached*: its
//!   loops run as loops outside a section do. Either way the calling thread
//!   records the section, so that a second one on the same thread is
//!   refused: sections do not nest (as in ORT).
//! * A loop run on the leading thread while the section is open (and not
//!   from inside one of its loops) is published in the slot tagged with the
//!   section's id (`ThreadPool::run_in_parallel`). A worker that enters a
//!   tagged loop joins the team: an RMW on `team` that succeeds only while
//!   `team < cap` of this loop (read from the gate while inside, so exact);
//!   on failure it leaves at once without working. The worker's "does the
//!   slot want me" hint is false for a tagged loop whose team is full
//!   unless the worker is a member, so non-members stop entering and
//!   leaving. A member stays with the section between loops: spinning
//!   within the pool's spin policy, then parked on the team event count
//!   (the event count's protocol), never back on the general sleep path,
//!   until the section ends (or a job is queued, which it runs, staying a
//!   member). The team event count's producers: a section loop's publish,
//!   the section's end, shutdown, and every Schedule or `Help` push
//!   (`Shared::wake` notifies both event counts).
//! * End: the id goes back to 0 (a CAS, so only one of end and the pool's
//!   destroy does it with a swap), the slot is released, members are woken
//!   and go back to the general worker loop.
//! * Invariant: only members run blocks of a tagged loop, and the team only
//!   grows up to the largest `cap` of the section's loops.
use super::pool::ThreadPool;
use super::shared::Shared;
use crate::{Error, Result};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The section open on this thread.
#[derive(Clone, Copy)]
struct Current {
    pool: usize,
    id: u64,
    /// Owns the slot.
    attached: bool,
    /// One of its loops is running on this thread (a loop nested in its
    /// body takes the other paths).
    busy: bool,
}

thread_local! {
    static CURRENT_SECTION: Cell<Option<Current>> = const { Cell::new(None) };
}

/// `ErrorKind::State` when the calling thread has a parallel section open
/// (on any pool): sections do not nest.
fn refuse_nested() -> Result<()> {
    if CURRENT_SECTION.with(|c| c.get().is_some()) {
        return Err(Error::state(
            "parallel sections do not nest: this thread already has one open",
        ));
    }
    Ok(())
}

/// ORT's `ParallelSection` on a nullable pool (the C API's section begin):
/// on a pool, [`ThreadPool::begin_section`]; `None` is a section with
/// nothing to do (`Ok(None)`). Either way `ErrorKind::State` when this
/// thread already has a section open (on any pool): sections do not nest.
pub fn begin_section(pool: Option<&ThreadPool>) -> Result<Option<SectionHandle>> {
    refuse_nested()?;
    Ok(pool.map(open))
}

/// Opens a section on `pool` for the calling thread, which has none open.
fn open(pool: &ThreadPool) -> SectionHandle {
    let shared = &pool.shared;
    let id = shared.sections.next.fetch_add(1, Ordering::Relaxed) + 1;
    let attached = !pool.forked() && shared.slot.try_own();
    if attached {
        shared.sections.team.store(0, Ordering::Relaxed);
        // Published to the workers by the slot's release store of the
        // section's first loop.
        shared.sections.id.store(id, Ordering::Release);
    }
    CURRENT_SECTION.with(|c| {
        c.set(Some(Current {
            pool: shared.id,
            id,
            attached,
            busy: false,
        }))
    });
    SectionHandle {
        shared: shared.clone(),
        id,
        attached,
        thread: crate::pool::os_thread::current_id(),
        ended: false,
        _not_send: PhantomData,
    }
}

/// If the calling thread leads an attached section of this pool and is not
/// inside one of its loops: marks it busy and returns the section's id.
pub(super) fn lead_loop(shared: &Shared) -> Option<u64> {
    CURRENT_SECTION.with(|c| {
        let mut cur = c.get()?;
        if cur.pool != shared.id
            || !cur.attached
            || cur.busy
            || shared.sections.id.load(Ordering::Relaxed) != cur.id
        {
            return None;
        }
        cur.busy = true;
        c.set(Some(cur));
        Some(cur.id)
    })
}

/// The loop started by [`lead_loop`] is done.
pub(super) fn loop_done() {
    CURRENT_SECTION.with(|c| {
        if let Some(mut cur) = c.get() {
            cur.busy = false;
            c.set(Some(cur));
        }
    })
}

/// An open parallel section, not tied to a borrow of the pool (the form the
/// C API hands out): it keeps the pool's shared state alive, so ending it
/// after the pool was dropped is safe and does nothing. Must be ended on
/// the thread that began it; dropping it ends it.
pub struct SectionHandle {
    shared: Arc<Shared>,
    id: u64,
    attached: bool,
    thread: usize,
    ended: bool,
    /// Bound to the thread that began it.
    _not_send: PhantomData<*const ()>,
}

impl ThreadPool {
    /// Begins a parallel section on the calling thread (ORT's
    /// `ParallelSection`); see [`ParallelSection`]. `ErrorKind::State` if
    /// this thread already has a section open (on any pool).
    pub fn parallel_section(&self) -> Result<ParallelSection<'_>> {
        Ok(ParallelSection {
            handle: self.begin_section()?,
            _pool: PhantomData,
        })
    }

    /// [`parallel_section`](Self::parallel_section) without the borrow: the
    /// handle may outlive the pool (ending it then does nothing).
    pub fn begin_section(&self) -> Result<SectionHandle> {
        refuse_nested()?;
        Ok(open(self))
    }
}

impl SectionHandle {
    /// Whether the section owns the pool's slot (its loops go to a team);
    /// false for a detached section (see the module docs).
    pub fn is_attached(&self) -> bool {
        self.attached
    }

    /// Ends the section. `ErrorKind::State` (and nothing changes) when
    /// called on another thread than the one that began it. Ending twice,
    /// or after the pool was dropped, does nothing.
    pub fn end(&mut self) -> Result<()> {
        if self.ended {
            return Ok(());
        }
        if crate::pool::os_thread::current_id() != self.thread {
            return Err(Error::state(
                "a parallel section must be ended on the thread that began it",
            ));
        }
        self.ended = true;
        CURRENT_SECTION.with(|c| {
            if c.get()
                .is_some_and(|cur| cur.id == self.id && cur.pool == self.shared.id)
            {
                c.set(None);
            }
        });
        let shared = &*self.shared;
        if self.attached
            && shared
                .sections
                .id
                .compare_exchange(self.id, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            shared.slot.release();
            shared.sections.team_event.notify(usize::MAX);
        }
        Ok(())
    }
}

impl Drop for SectionHandle {
    fn drop(&mut self) {
        // Dropped on its own thread (it cannot move), so this succeeds.
        let _ = self.end();
    }
}

/// A parallel section open on the calling thread for the life of this
/// guard (ORT's `ThreadPool::ParallelSection`). Loops the same thread runs
/// on the same pool meanwhile (through `try_parallel_for` & co.) reuse one
/// team of workers, which wait for the next loop instead of going back to
/// sleep. Sections do not nest. Dropping the guard ends the section.
pub struct ParallelSection<'a> {
    handle: SectionHandle,
    _pool: PhantomData<&'a ThreadPool>,
}

impl ParallelSection<'_> {
    /// Whether the section got the pool's slot (its loops go to a fixed
    /// team). False when another thread's loop or section held it at
    /// begin: the loops then run as outside a section.
    pub fn is_attached(&self) -> bool {
        self.handle.is_attached()
    }
}
