//! Parallel loops on top of the engine: the cost model decision, block
//! sizing, the sharded loop counter, and ORT's static helpers
//! (`TryParallelFor` & co.). Everything here calls the engine through
//! `ThreadPool::max_helpers` and `ThreadPool::run_in_parallel` only.
//!
//! A loop: decide (cost model, ORT's `ShouldParallelizeLoop`), size the
//! blocks (Eigen's rule, or ORT's dynamic blocks), build a [`Counter`] over
//! the blocks, and hand the engine one piece of work: "claim blocks from the
//! counter and run them until it is exhausted". The engine runs it on the
//! caller and on each helper that joins. Every block is claimed exactly
//! once (one RMW per claim on its shard), so every index runs exactly once;
//! the engine's gate guarantees the body is never called after the loop
//! returned.
//!
//! Fixed blocks are as many as Eigen's size makes (`ceil(total / size)`),
//! but cut evenly: block `b` of `u` is `[floor(total * b / u),
//! floor(total * (b + 1) / u))`, so blocks differ by at most one iteration
//! and none is longer than Eigen's size. Eigen (and ORT's loop counter) cut
//! blocks of exactly that size and leave the remainder in one short last
//! block; the shards then hold unequal work (67 iterations in 8 blocks of
//! 9: 36 in the caller's shard, 31 in the helper's), and the participant
//! with the lighter shard waits at the loop's end for most of a block. Cut
//! evenly, every participant's shard of blocks holds its share of the
//! iterations to within one per block (33 and 34).
use super::cost::{self, TensorOpCost};
use super::engine::ThreadPool;
use crate::{Error, Result};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicIsize, Ordering};

/// At most this many counter shards (each on its own cache line).
const MAX_SHARDS: usize = 8;

/// How blocks are sized.
#[derive(Clone, Copy, Debug)]
pub(super) enum Blocks {
    /// As many blocks as this size makes (Eigen's rule, or 1), cut evenly
    /// (module docs).
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
    shards: [CachePadded<Shard>; MAX_SHARDS],
    n: usize,
    total: isize,
    /// `blocks.units(total)`.
    units: isize,
    blocks: Blocks,
}

/// Where part `i` of `parts` even parts of `0..len` starts:
/// `floor(len * i / parts)` (parts differ by at most 1, the longer ones
/// spread over the range), without overflow.
fn split(len: isize, parts: usize, i: usize) -> isize {
    match len.checked_mul(i as isize) {
        Some(p) => p / parts as isize,
        None => ((len as u128 * i as u128) / parts as u128) as isize,
    }
}

impl Counter {
    /// `units` is `blocks.units(total)`.
    fn new(total: isize, blocks: Blocks, units: isize, participants: usize) -> Counter {
        let n = participants.min(MAX_SHARDS).min(units as usize).max(1);
        let shards = std::array::from_fn(|i| {
            if i >= n {
                return CachePadded::new(Shard {
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
            CachePadded::new(Shard {
                next: AtomicIsize::new(next),
                begin,
                end,
            })
        });
        Counter {
            shards,
            n,
            total,
            units,
            blocks,
        }
    }

    fn claim_in(&self, shard: &Shard) -> Option<(isize, isize)> {
        match self.blocks {
            Blocks::Fixed(_) => {
                let len = shard.end - shard.begin;
                if shard.next.load(Ordering::Relaxed) >= len {
                    return None;
                }
                let k = shard.next.fetch_add(1, Ordering::Relaxed);
                if k >= len {
                    return None;
                }
                // Block b of the loop's `units`, cut evenly (module docs).
                let (b, units) = ((shard.begin + k) as usize, self.units as usize);
                Some((split(self.total, units, b), split(self.total, units, b + 1)))
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
            if let Some(r) = self.claim_in(&self.shards[*cursor]) {
                return Some(r);
            }
            *cursor = (*cursor + 1) % n;
        }
        None
    }
}

type Body<'a> = dyn Fn(isize, isize) + Sync + 'a;

impl Blocks {
    /// How many claimable units `total` iterations make: blocks (fixed) or
    /// iterations (dynamic).
    fn units(self, total: isize) -> isize {
        match self {
            Blocks::Fixed(b) => (total - 1) / b + 1,
            Blocks::Dynamic { .. } => total,
        }
    }
}

/// Runs `body` over blocks of `0..total` (total > 1) on the caller plus up
/// to one helper per other worker, through the engine.
fn run_loop(pool: &ThreadPool, total: isize, blocks: Blocks, body: &Body<'_>) {
    let units = blocks.units(total);
    let helpers = pool.max_helpers().min((units - 1) as usize);
    if helpers == 0 {
        return pool.run_in_parallel(0, &|_| {
            body(0, total);
            1
        });
    }
    let counter = Counter::new(total, blocks, units, helpers + 1);
    pool.run_in_parallel(helpers, &|participant| {
        let mut cursor = participant % counter.n;
        let mut ran = 0;
        while let Some((first, last)) = counter.claim(&mut cursor) {
            body(first, last);
            ran += 1;
        }
        ran
    });
}

impl ThreadPool {
    /// ORT's `ParallelFor`: cost model decision, then Eigen's fixed blocks
    /// or (with `dynamic_block_base > 0`) ORT's dynamic blocks.
    pub fn parallel_for(&self, total: isize, cost: &TensorOpCost, f: &Body<'_>) {
        if total <= 0 {
            return;
        }
        let _in = self.in_use();
        let dop = self.degree_of_parallelism();
        if total == 1 || self.max_helpers() == 0 || cost::num_threads(total as f64, cost, dop) == 1
        {
            return f(0, total);
        }
        let base = self.dynamic_block_base();
        if base > 0 {
            return run_loop(self, total, Blocks::Dynamic { dop, base }, f);
        }
        let size = cost::block_size(total, cost, dop);
        if size >= total {
            return f(0, total);
        }
        run_loop(self, total, Blocks::Fixed(size), f)
    }

    /// ORT's `SimpleParallelFor`: `f(i)` for every i in `0..total`, blocks
    /// of one iteration.
    pub fn simple_parallel_for(&self, total: isize, f: &(dyn Fn(isize) + Sync)) {
        if total <= 0 {
            return;
        }
        let _in = self.in_use();
        if total == 1 || self.max_helpers() == 0 {
            return (0..total).for_each(f);
        }
        run_loop(self, total, Blocks::Fixed(1), &|a, b| (a..b).for_each(f))
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

/// ORT's `PartitionWork`: the `[start, end)` of batch `batch_idx` of
/// `num_batches` over `total` items; the first `total % num_batches`
/// batches get one item more. Requires `num_batches > 0`,
/// `0 <= batch_idx < num_batches` and `total >= 0` (see
/// [`try_partition_work`] for the checked form).
pub fn partition_work(batch_idx: isize, num_batches: isize, total: isize) -> (isize, isize) {
    let (per, extra) = (total / num_batches, total % num_batches);
    if batch_idx < extra {
        let start = batch_idx * (per + 1);
        (start, start + per + 1)
    } else {
        let start = batch_idx * per + extra;
        (start, start + per)
    }
}

/// [`partition_work`] with its arguments checked: `ErrorKind::InvalidArgument`
/// unless `num_batches > 0`, `0 <= batch_idx < num_batches` and `total >= 0`.
pub fn try_partition_work(
    batch_idx: isize,
    num_batches: isize,
    total: isize,
) -> Result<(isize, isize)> {
    if num_batches <= 0 || !(0..num_batches).contains(&batch_idx) || total < 0 {
        return Err(Error::invalid_argument(format!(
            "partition of batch {batch_idx} of {num_batches} over {total} items: \
             needs num_batches > 0, 0 <= batch_idx < num_batches, total >= 0"
        )));
    }
    Ok(partition_work(batch_idx, num_batches, total))
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
    let longer = total % batches;
    p.simple_parallel_for(batches, &|u| {
        let (start, end) = partition_work(spread_batch(u, longer, batches), batches, total);
        (start..end).for_each(f)
    })
}

/// The batch that claim `u` of `batches` runs: PartitionWork's `longer`
/// batches of one item more (its first ones) spread evenly over the
/// claims, the others in order between them. The participants of a loop
/// start in their own runs of consecutive claims (the sharded counter), so
/// each run then holds its share of the longer batches to within one, as
/// evenly cut fixed blocks do (module docs): 67 items in 8 batches of 9, 9,
/// 9, 8, ... on two threads make 33 and 34 items, not 35 and 32. Only the
/// order changes; every batch is still PartitionWork's.
fn spread_batch(u: isize, longer: isize, batches: isize) -> isize {
    let (u, parts) = (u as usize, batches as usize);
    // Longer batches among the claims before u, and up to u.
    let before = split(longer, parts, u);
    if split(longer, parts, u + 1) > before {
        before
    } else {
        longer + u as isize - before
    }
}

/// ORT's `Schedule`: on a worker, or inline when `pool` is `None`.
pub fn schedule(pool: Option<&ThreadPool>, task: Box<dyn FnOnce() + Send + 'static>) {
    match pool {
        None => task(),
        Some(p) => p.schedule(task),
    }
}

/// ORT's `KernelContext_ParallelFor`: `f(i)` for every i in `0..total`;
/// `num_batch` 0 runs one index per block (TrySimpleParallelFor), else
/// TryBatchParallelFor with `num_batch` batches. `ErrorKind::InvalidArgument`
/// (and nothing runs) when a count exceeds `isize::MAX`.
pub fn kernel_parallel_for(
    pool: Option<&ThreadPool>,
    total: usize,
    num_batch: usize,
    f: &(dyn Fn(usize) + Sync),
) -> Result<()> {
    let total = isize::try_from(total)
        .map_err(|_| Error::invalid_argument(format!("total {total} > PTRDIFF_MAX")))?;
    let batches = isize::try_from(num_batch)
        .map_err(|_| Error::invalid_argument(format!("num_batch {num_batch} > PTRDIFF_MAX")))?;
    let body = |i: isize| f(i as usize);
    if batches == 0 {
        try_simple_parallel_for(pool, total, &body);
    } else {
        try_batch_parallel_for(pool, total, &body, batches);
    }
    Ok(())
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
        let c = Counter::new(total, blocks, blocks.units(total), participants);
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
        let b = Blocks::Fixed(isize::MAX / 3);
        let c = Counter::new(isize::MAX, b, b.units(isize::MAX), 8);
        let mut cur = 0;
        let mut n = 0;
        while c.claim(&mut cur).is_some() {
            n += 1;
        }
        assert_eq!(n, 4);
    }

    /// Every block of each shard of a counter for `p` participants,
    /// claimed inside that shard only: what each participant starts on.
    fn shard_blocks(total: isize, blocks: Blocks, p: usize) -> Vec<Vec<(isize, isize)>> {
        let c = Counter::new(total, blocks, blocks.units(total), p);
        (0..c.n)
            .map(|s| std::iter::from_fn(|| c.claim_in(&c.shards[s])).collect())
            .collect()
    }

    /// Fixed blocks keep Eigen's count and size limit but are cut evenly:
    /// lengths differ by at most one, and with as many blocks per shard
    /// the shards' iterations differ by at most one. Eigen's cut
    /// (blocks of exactly the size, a short last one) gives 36 and 31 for
    /// 67 iterations in blocks of 9 on two participants.
    #[test]
    fn fixed_blocks_are_cut_evenly() {
        let shard_loads = |total: isize, size: isize, p: usize| {
            shard_blocks(total, Blocks::Fixed(size), p)
                .iter()
                .map(|v| v.iter().map(|&(a, z)| z - a).sum())
                .collect::<Vec<isize>>()
        };
        assert_eq!(shard_loads(67, 9, 2), vec![33, 34]);
        for total in [2isize, 3, 50, 67, 81, 1000, 12345] {
            for size in [1isize, 2, 7, 9, 64] {
                if size > total {
                    continue;
                }
                let v = claims(total, Blocks::Fixed(size), 1);
                covers(&v, total);
                assert_eq!(v.len() as isize, Blocks::Fixed(size).units(total));
                let lens: Vec<isize> = v.iter().map(|&(a, z)| z - a).collect();
                let (lo, hi) = (*lens.iter().min().unwrap(), *lens.iter().max().unwrap());
                assert!(hi <= size && hi - lo <= 1, "{total}/{size}: {lens:?}");
                for p in [2usize, 3, 4, 8] {
                    let units = Blocks::Fixed(size).units(total);
                    if units % p as isize != 0 {
                        continue;
                    }
                    let loads = shard_loads(total, size, p);
                    let (lo, hi) = (*loads.iter().min().unwrap(), *loads.iter().max().unwrap());
                    assert!(hi - lo <= 1, "{total}/{size} on {p}: {loads:?}");
                }
            }
        }
    }

    /// Every batch once, and any half of the claims holds half the items
    /// to within one.
    #[test]
    fn batches_are_claimed_with_the_longer_ones_spread() {
        for total in [2isize, 3, 10, 67, 68, 100, 1001] {
            for batches in [2isize, 3, 4, 8, 16, 32] {
                if batches > total {
                    continue;
                }
                let longer = total % batches;
                let order: Vec<isize> = (0..batches)
                    .map(|u| spread_batch(u, longer, batches))
                    .collect();
                let mut seen = order.clone();
                seen.sort_unstable();
                assert_eq!(seen, (0..batches).collect::<Vec<_>>(), "{total}/{batches}");
                let len = |b: isize| {
                    let (s, e) = partition_work(b, batches, total);
                    e - s
                };
                for parts in [2usize, 4] {
                    if batches as usize % parts != 0 {
                        continue;
                    }
                    // The claims each participant starts on, as the loop
                    // over the batches (one per block) shards them.
                    let loads: Vec<isize> = shard_blocks(batches, Blocks::Fixed(1), parts)
                        .iter()
                        .map(|v| v.iter().map(|&(u, _)| len(order[u as usize])).sum())
                        .collect();
                    let (lo, hi) = (*loads.iter().min().unwrap(), *loads.iter().max().unwrap());
                    assert!(hi - lo <= 1, "{total}/{batches} on {parts}: {loads:?}");
                }
            }
        }
        // 67 in 8: 33 and 34, where claims in batch order make 35 and 32.
        let order: Vec<isize> = (0..8).map(|u| spread_batch(u, 3, 8)).collect();
        let half: isize = order[..4]
            .iter()
            .map(|&b| partition_work(b, 8, 67))
            .map(|(s, e)| e - s)
            .sum();
        assert_eq!(half, 33, "{order:?}");
    }

    #[test]
    fn partition_matches_ort() {
        assert_eq!(partition_work(0, 3, 10), (0, 4));
        assert_eq!(partition_work(1, 3, 10), (4, 7));
        assert_eq!(partition_work(2, 3, 10), (7, 10));
        assert_eq!(partition_work(4, 5, 3), (3, 3));
    }
}
