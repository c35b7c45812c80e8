//! Parallel loops: the fork-join protocol, the sharded loop counter, and
//! ORT's static helpers (`TryParallelFor` & co.).
//!
//! Fork-join protocol of one loop (`ThreadPool::run_loop`):
//! 1. The caller builds a [`LoopState`] (body, counter, gate). Common case:
//!    it takes the pool's section slot (`super::section`) and publishes the
//!    loop there with one store, then notifies (which only costs an RMW
//!    when nobody sleeps); idle workers poll the slot and enter it with a
//!    CAS, up to `k` of them. If the slot is taken (another loop is in
//!    progress: a nested loop, or another thread's), it falls back to
//!    pushing up to `k` `Help` jobs into other workers' injectors, then
//!    notifies.
//! 2. Everybody who takes part (the caller as participant 0, each helper
//!    that *enters the gate*) claims blocks from the counter until it is
//!    exhausted. The caller always takes part, so the loop finishes even if
//!    no helper ever runs (all busy, or the caller is itself a worker that
//!    nests a loop): no deadlock.
//! 3. When the caller runs out of blocks it *closes the gate* (the
//!    section's, or the `LoopState`'s) and waits until every participant
//!    that entered has left. A `Help` job that runs after the gate closed
//!    does nothing; the section path leaves no job behind.
//!
//! Gate invariant (the section's is the same, see `section.rs`): `gate = 2 * entered + closed`. A helper enters only with
//! a CAS that sees `closed == 0`; the caller returns only after seeing
//! `gate == closed` (nobody inside), so the borrowed loop body is never
//! called after `run_loop` returned. Every block is claimed exactly once
//! (one RMW per claim on its shard), so every index runs exactly once.
use super::cost::{self, TensorOpCost};
use super::threadpool::{current, Job, Padded, ThreadPool, QUEUE_CAPACITY};
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// At most this many counter shards (each on its own cache line).
const MAX_SHARDS: usize = 8;
const CLOSED: usize = 1;
const ENTERED: usize = 2;
/// Polls of the section gate before the caller of a loop blocks.
const CLOSE_SPINS: u32 = 200;

/// How blocks are sized.
#[derive(Clone, Copy, Debug)]
pub(super) enum Blocks {
    /// Fixed blocks of this many iterations (Eigen's rule, or 1).
    Fixed(isize),
    /// ORT's dynamic blocks: `remaining / (dop * base)`.
    Dynamic { dop: i32, base: i32 },
}

/// One shard of the loop counter: a contiguous part of the iteration space
/// with its own claim position.
struct Shard {
    /// Fixed: next block (relative to `begin`, in blocks); Dynamic: next
    /// iteration (absolute).
    next: AtomicIsize,
    begin: isize,
    end: isize,
}

/// The sharded loop counter: participant `p` starts claiming in shard
/// `p % shards` and moves on to the next shard when its own is exhausted,
/// so participants mostly touch different cache lines.
struct Counter {
    /// Inline, so that a loop allocates nothing; only the first `n` are
    /// used.
    shards: [Padded<Shard>; MAX_SHARDS],
    n: usize,
    total: isize,
    blocks: Blocks,
}

fn split(len: isize, parts: usize, i: usize) -> isize {
    ((len as u128 * i as u128) / parts as u128) as isize
}

impl Counter {
    fn new(total: isize, blocks: Blocks, participants: usize) -> Counter {
        let units = match blocks {
            Blocks::Fixed(b) => (total - 1) / b + 1,
            Blocks::Dynamic { .. } => total,
        };
        let n = participants.min(MAX_SHARDS).min(units as usize).max(1);
        let shards = std::array::from_fn(|i| {
            if i >= n {
                return Padded(Shard {
                    next: AtomicIsize::new(0),
                    begin: 0,
                    end: 0,
                });
            }
            let (begin, end) = (split(units, n, i), split(units, n, i + 1));
            let next = match blocks {
                Blocks::Fixed(_) => 0,
                Blocks::Dynamic { .. } => begin,
            };
            Padded(Shard {
                next: AtomicIsize::new(next),
                begin,
                end,
            })
        });
        Counter {
            shards,
            n,
            total,
            blocks,
        }
    }

    fn claim_in(&self, shard: &Shard) -> Option<(isize, isize)> {
        match self.blocks {
            Blocks::Fixed(size) => {
                let len = shard.end - shard.begin;
                if shard.next.load(Ordering::Relaxed) >= len {
                    return None;
                }
                let k = shard.next.fetch_add(1, Ordering::Relaxed);
                if k >= len {
                    return None;
                }
                let first = (shard.begin + k) * size;
                Some((first, first + size.min(self.total - first)))
            }
            Blocks::Dynamic { dop, base } => {
                let n = self.n as u128;
                let mut cur = shard.next.load(Ordering::Relaxed);
                loop {
                    if cur >= shard.end {
                        return None;
                    }
                    let left = (shard.end - cur) as u128;
                    // The shard's share of ORT's remaining / (dop * base).
                    let size =
                        cost::dynamic_block((left * n).min(isize::MAX as u128) as isize, dop, base)
                            .min(shard.end - cur);
                    match shard.next.compare_exchange_weak(
                        cur,
                        cur + size,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => return Some((cur, cur + size)),
                        Err(now) => cur = now,
                    }
                }
            }
        }
    }

    /// Next block for a participant whose current shard is `*cursor`.
    fn claim(&self, cursor: &mut usize) -> Option<(isize, isize)> {
        let n = self.n;
        for _ in 0..n {
            if let Some(r) = self.claim_in(&self.shards[*cursor].0) {
                return Some(r);
            }
            *cursor = (*cursor + 1) % n;
        }
        None
    }
}

type Body<'a> = dyn Fn(isize, isize) + Sync + 'a;

/// Shared state of one parallel loop.
pub(crate) struct LoopState {
    /// The caller's loop body with its lifetime erased; see the gate
    /// invariant in the module docs for why it is never used after the
    /// caller's `run_loop` returns.
    body: &'static Body<'static>,
    counter: Counter,
    gate: AtomicUsize,
    /// The caller, unparked by the last helper to leave (Help-job path
    /// only; the section has its own wake-up).
    owner: Option<std::thread::Thread>,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl LoopState {
    fn enter(&self) -> bool {
        let mut g = self.gate.load(Ordering::Acquire);
        loop {
            if g & CLOSED != 0 {
                return false;
            }
            match self.gate.compare_exchange_weak(
                g,
                g + ENTERED,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => g = now,
            }
        }
    }

    fn leave(&self) {
        // Release: this participant's writes happen-before the caller's
        // return. After this RMW the body must not be touched.
        let prev = self.gate.fetch_sub(ENTERED, Ordering::AcqRel);
        if prev == CLOSED + ENTERED {
            if let Some(owner) = &self.owner {
                owner.unpark();
            }
        }
    }

    /// Claims and runs blocks until the counter is exhausted. A panic in
    /// the body is kept for the caller to rethrow.
    pub(crate) fn work(&self, participant: usize) {
        let mut cursor = participant % self.counter.n;
        let r = catch_unwind(AssertUnwindSafe(|| {
            while let Some((first, last)) = self.counter.claim(&mut cursor) {
                (self.body)(first, last);
            }
        }));
        if let Err(p) = r {
            let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert(p);
        }
    }

    /// A `Help` job: take part if the loop is still open.
    pub(crate) fn help(&self, participant: usize) {
        if self.enter() {
            self.work(participant);
            self.leave();
        }
    }

    /// Caller: close the gate and wait until nobody is inside.
    fn close_and_wait(&self) {
        let prev = self.gate.fetch_or(CLOSED, Ordering::AcqRel);
        if prev & !CLOSED == 0 {
            return;
        }
        let mut spins = 0u32;
        while self.gate.load(Ordering::Acquire) != CLOSED {
            if spins < 200 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                // The last helper to leave unparks us; park tolerates an
                // unpark that came first, and spurious returns are re-checked.
                std::thread::park();
            }
        }
    }
}

impl ThreadPool {
    /// Runs `body` over blocks of `0..total` (total > 1) on the caller plus
    /// up to one helper per other worker.
    fn run_loop<'a>(&self, total: isize, blocks: Blocks, body: &'a Body<'a>) {
        let shared = &self.shared;
        let me = current(shared.id).map(|w| w.index);
        let workers = shared.workers();
        let units = match blocks {
            Blocks::Fixed(b) => (total - 1) / b + 1,
            Blocks::Dynamic { .. } => total,
        };
        let wanted = (workers - usize::from(me.is_some())).min((units - 1) as usize);
        if wanted == 0 {
            body(0, total);
            return;
        }
        // SAFETY: extends the borrow of `body` to 'static for the LoopState.
        // The gate protocols (module docs) guarantee that no participant
        // calls it after this function returns or unwinds: helpers call it
        // only between a successful enter (`Section::try_enter` or
        // `LoopState::enter`) and the matching leave, and we return only
        // after the matching `close_and_wait` saw nobody inside; our own use
        // is wrapped in catch_unwind, and nothing between publishing and
        // that wait unwinds, so we cannot unwind past it. The same holds for
        // the `LoopState` itself, which lives on this stack frame when it
        // is published through the section slot.
        let body: &'static Body<'static> =
            unsafe { std::mem::transmute::<&'a Body<'a>, &'static Body<'static>>(body) };
        let state = LoopState {
            body,
            counter: Counter::new(total, blocks, wanted + 1),
            gate: AtomicUsize::new(0),
            owner: None,
            panic: Mutex::new(None),
        };
        if shared.force_stop() {
            shared.loops_active.fetch_add(1, Ordering::Relaxed);
        }
        if shared.section.try_open(&state, wanted) {
            // Common case: one store published the loop; spinning workers
            // see it on their next poll, sleepers are woken.
            shared.event.notify(wanted);
            state.work(0);
            shared.section.close_and_wait(CLOSE_SPINS);
            shared.section.release();
        } else {
            // The slot is taken (a loop nested in a section helper, or
            // another thread's loop): invite helpers through the queues.
            let state = Arc::new(LoopState {
                owner: Some(std::thread::current()),
                ..state
            });
            let start = shared.next_victim.fetch_add(wanted, Ordering::Relaxed);
            let mut pushed = 0;
            for k in 0..workers {
                if pushed == wanted {
                    break;
                }
                let v = (start + k) % workers;
                if Some(v) == me || shared.injectors[v].len() >= QUEUE_CAPACITY {
                    continue;
                }
                pushed += 1;
                shared.injectors[v].push(Job::Help(state.clone(), pushed));
            }
            shared.event.notify(pushed);
            state.work(0);
            state.close_and_wait();
            self.finish_loop(&state);
            return;
        }
        self.finish_loop(&state);
    }

    /// After the join: loop accounting, then rethrow a panic of the body.
    fn finish_loop(&self, state: &LoopState) {
        let shared = &self.shared;
        if shared.force_stop() {
            shared.loops_active.fetch_sub(1, Ordering::Relaxed);
        }
        let panic = state.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }

    /// ORT's `ShouldParallelizeLoop`: a worker of this pool needs another
    /// worker to share with.
    fn can_fan_out(&self) -> bool {
        let workers = self.shared.workers();
        workers > usize::from(current(self.shared.id).is_some())
    }

    /// ORT's `ParallelFor`: cost model decision, then Eigen's fixed blocks
    /// or (with `dynamic_block_base > 0`) ORT's dynamic blocks.
    pub fn parallel_for(&self, total: isize, cost: &TensorOpCost, f: &Body<'_>) {
        if total <= 0 {
            return;
        }
        let dop = self.shared.dop;
        if total == 1 || !self.can_fan_out() || cost::num_threads(total as f64, cost, dop) == 1 {
            return f(0, total);
        }
        let base = self.shared.dynamic_block_base;
        if base > 0 {
            return self.run_loop(total, Blocks::Dynamic { dop, base }, f);
        }
        let size = cost::block_size(total, cost, dop);
        if size >= total {
            return f(0, total);
        }
        self.run_loop(total, Blocks::Fixed(size), f)
    }

    /// ORT's `SimpleParallelFor`: `f(i)` for every i in `0..total`, blocks
    /// of one iteration.
    pub fn simple_parallel_for(&self, total: isize, f: &(dyn Fn(isize) + Sync)) {
        if total <= 0 {
            return;
        }
        if total == 1 || !self.can_fan_out() {
            return (0..total).for_each(f);
        }
        self.run_loop(total, Blocks::Fixed(1), &|a, b| (a..b).for_each(f))
    }
}

/// ORT's `TryParallelFor(tp, total, cost_per_unit, fn)`: cost is
/// `cost_per_unit` compute cycles per iteration.
pub fn try_parallel_for(
    pool: Option<&ThreadPool>,
    total: isize,
    cost_per_unit: f64,
    f: &(dyn Fn(isize, isize) + Sync),
) {
    let cost = TensorOpCost {
        bytes_loaded: 0.0,
        bytes_stored: 0.0,
        compute_cycles: cost_per_unit,
    };
    try_parallel_for_cost(pool, total, &cost, f)
}

/// ORT's `TryParallelFor(tp, total, TensorOpCost, fn)`.
pub fn try_parallel_for_cost(
    pool: Option<&ThreadPool>,
    total: isize,
    cost: &TensorOpCost,
    f: &(dyn Fn(isize, isize) + Sync),
) {
    if total <= 0 {
        return;
    }
    match pool {
        None => f(0, total),
        Some(p) => p.parallel_for(total, cost, f),
    }
}

/// ORT's `TrySimpleParallelFor`: `f(i)` for each i in `0..total`.
pub fn try_simple_parallel_for(
    pool: Option<&ThreadPool>,
    total: isize,
    f: &(dyn Fn(isize) + Sync),
) {
    match pool {
        None => (0..total.max(0)).for_each(f),
        Some(p) => p.simple_parallel_for(total, f),
    }
}

/// The `[start, end)` of batch `i` of `n` over `total` items: the first
/// `total % n` batches get one extra item (ORT's PartitionWork).
pub fn partition_work(i: isize, n: isize, total: isize) -> (isize, isize) {
    let (per, extra) = (total / n, total % n);
    if i < extra {
        (i * (per + 1), i * (per + 1) + per + 1)
    } else {
        let start = i * per + extra;
        (start, start + per)
    }
}

/// ORT's `TryBatchParallelFor`: `total` items in `num_batches` batches (<= 0:
/// the degree of parallelism), each batch a loop over its items.
pub fn try_batch_parallel_for(
    pool: Option<&ThreadPool>,
    total: isize,
    f: &(dyn Fn(isize) + Sync),
    num_batches: isize,
) {
    if total <= 0 {
        return;
    }
    let Some(p) = pool else {
        return (0..total).for_each(f);
    };
    if total == 1 {
        return f(0);
    }
    // As ORT does: never more batches than items (a batch count near
    // PTRDIFF_MAX would otherwise mean that many empty batches).
    let batches = if num_batches <= 0 {
        total.min(p.degree_of_parallelism() as isize)
    } else {
        num_batches.min(total)
    };
    if batches <= 1 {
        return (0..total).for_each(f);
    }
    p.simple_parallel_for(batches, &|b| {
        let (start, end) = partition_work(b, batches, total);
        (start..end).for_each(f)
    })
}

/// ORT's `Schedule`: on a worker, or inline when `pool` is `None`.
pub fn schedule(pool: Option<&ThreadPool>, task: Box<dyn FnOnce() + Send + 'static>) {
    match pool {
        None => task(),
        Some(p) => p.schedule(task),
    }
}

/// ORT's `DegreeOfParallelism`: 1 for `None`.
pub fn degree_of_parallelism(pool: Option<&ThreadPool>) -> i32 {
    pool.map_or(1, ThreadPool::degree_of_parallelism)
}

/// ORT's `ShouldParallelize`: degree of parallelism above 1.
pub fn should_parallelize(pool: Option<&ThreadPool>) -> bool {
    degree_of_parallelism(pool) != 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(total: isize, blocks: Blocks, participants: usize) -> Vec<(isize, isize)> {
        let c = Counter::new(total, blocks, participants);
        let mut out = Vec::new();
        for p in 0..participants {
            let mut cur = p % c.n;
            if let Some(r) = c.claim(&mut cur) {
                out.push(r);
            }
        }
        let mut cur = 0;
        while let Some(r) = c.claim(&mut cur) {
            out.push(r);
        }
        out.sort_unstable();
        out
    }

    fn covers(v: &[(isize, isize)], total: isize) {
        let mut at = 0;
        for &(a, b) in v {
            assert_eq!(a, at);
            assert!(b > a);
            at = b;
        }
        assert_eq!(at, total);
    }

    #[test]
    fn counter_partitions_exactly() {
        for total in [2isize, 3, 50, 81, 1000, 12345] {
            for p in [1usize, 2, 3, 8, 16] {
                for b in [1isize, 2, 7, 64] {
                    covers(&claims(total, Blocks::Fixed(b), p), total);
                }
                for base in [1, 4] {
                    covers(
                        &claims(
                            total,
                            Blocks::Dynamic {
                                dop: p as i32,
                                base,
                            },
                            p,
                        ),
                        total,
                    );
                }
            }
        }
        // No overflow near isize::MAX.
        let c = Counter::new(isize::MAX, Blocks::Fixed(isize::MAX / 3), 8);
        let mut cur = 0;
        let mut n = 0;
        while c.claim(&mut cur).is_some() {
            n += 1;
        }
        assert_eq!(n, 4);
    }

    #[test]
    fn partition_matches_ort() {
        assert_eq!(partition_work(0, 3, 10), (0, 4));
        assert_eq!(partition_work(1, 3, 10), (4, 7));
        assert_eq!(partition_work(2, 3, 10), (7, 10));
        assert_eq!(partition_work(4, 5, 3), (3, 3));
    }
}
