//! Eigen's TensorCostModel (the decision whether a loop is worth
//! parallelising) and its block-size rule, as ONNX Runtime uses them, plus
//! ORT's `dynamic_block_base` block sizes.
//!
//! Constants (from Eigen's TensorCostModel): a parallel region costs 100000
//! cycles to start plus 100000 per thread, a task should be about 40000
//! cycles, and a loaded or stored byte costs 11/64 cycles.

/// Cost of one loop iteration, as ORT's `TensorOpCost` (defined for C in
/// `super::abi`).
pub use super::abi::lrt_tensor_op_cost as TensorOpCost;

/// Cycles per loaded byte.
pub(crate) const LOAD_CYCLES: f64 = 11.0 / 64.0;
/// Cycles per stored byte.
pub(crate) const STORE_CYCLES: f64 = 11.0 / 64.0;
/// Cycles to start a parallel region.
pub(crate) const STARTUP_CYCLES: f64 = 100_000.0;
/// Cycles each extra thread costs.
pub(crate) const PER_THREAD_CYCLES: f64 = 100_000.0;
/// Cycles a task should take.
pub(crate) const TASK_SIZE: f64 = 40_000.0;
/// Eigen's limit on blocks per thread.
const MAX_OVERSHARDING: isize = 4;

impl TensorOpCost {
    /// Cycles of one iteration.
    pub fn cycles(&self) -> f64 {
        self.bytes_loaded * LOAD_CYCLES + self.bytes_stored * STORE_CYCLES + self.compute_cycles
    }
}

/// Cycles of `n` iterations.
pub fn total_cost(n: f64, cost: &TensorOpCost) -> f64 {
    cost.cycles() * n
}

/// How many threads `n` iterations are worth, at most `max_threads`, at
/// least 1.
pub fn num_threads(n: f64, cost: &TensorOpCost, max_threads: i32) -> i32 {
    let threads = (total_cost(n, cost) - STARTUP_CYCLES) / PER_THREAD_CYCLES + 0.9;
    // A NaN cost (garbage in) means "do not parallelise"; `as` saturates.
    if threads.is_nan() {
        return 1;
    }
    let threads = threads.min(f64::from(i32::MAX)) as i32;
    threads.max(1).min(max_threads.max(1))
}

/// `n` iterations in units of the ideal task size.
pub fn task_size(n: f64, cost: &TensorOpCost) -> f64 {
    total_cost(n, cost) / TASK_SIZE
}

/// `ceil(a / b)` for `a >= 0`, `b > 0`, without overflow for any such `a`
/// (the textbook `(a + b - 1) / b` wraps for `a` near `isize::MAX`).
fn div_up(a: isize, b: isize) -> isize {
    a / b + isize::from(a % b != 0)
}

/// Eigen's block-size rule for `n > 0` iterations on `threads` threads:
/// start from about one task's worth of iterations (but at most 4 blocks per
/// thread), then coarsen while that does not lower the load balance
/// (`blocks / (ceil(blocks / threads) * threads)`), never beyond twice the
/// start size. Returns the block size (1..=n); the loop then has at most
/// `4 * threads` blocks, whatever `n` (up to `isize::MAX`) and the cost.
pub fn block_size(n: isize, cost: &TensorOpCost, threads: i32) -> isize {
    if n <= 1 {
        return n.max(1);
    }
    let threads = threads.max(1) as isize;
    let ideal = (1.0 / task_size(1.0, cost)) as isize; // saturating cast
    let mut size = n
        .min(div_up(n, MAX_OVERSHARDING * threads).max(ideal))
        .max(1);
    let max_size = n.min(size.saturating_mul(2));
    let efficiency = |blocks: isize| blocks as f64 / (div_up(blocks, threads) * threads) as f64;
    let mut count = div_up(n, size);
    let mut best = efficiency(count);
    let mut prev_count = count;
    while best < 1.0 && prev_count > 1 {
        let coarser = div_up(n, prev_count - 1);
        if coarser > max_size {
            break;
        }
        let coarser_count = div_up(n, coarser);
        prev_count = coarser_count;
        let e = efficiency(coarser_count);
        if e + 0.01 >= best {
            size = coarser;
            count = coarser_count;
            best = best.max(e);
        }
    }
    let _ = count;
    size
}

/// ORT's dynamic block size: a decreasing share of what is left,
/// `remaining / (threads * base)`, at least 1.
pub fn dynamic_block(remaining: isize, threads: i32, base: i32) -> isize {
    let div = (i64::from(threads.max(1)) * i64::from(base.max(1))) as isize;
    (remaining / div).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(cycles: f64) -> TensorOpCost {
        TensorOpCost {
            compute_cycles: cycles,
            ..Default::default()
        }
    }

    #[test]
    fn cost_model_thresholds() {
        // 1000 iterations of 100 cycles = 1e5 cycles: (1e5-1e5)/1e5+0.9 -> 0 -> 1.
        assert_eq!(num_threads(1000.0, &c(100.0), 8), 1);
        // 1e6 cycles: 9 + 0.9 -> 9, capped at 8.
        assert_eq!(num_threads(10000.0, &c(100.0), 8), 8);
        // 3e5 cycles: 2 + 0.9 -> 2.
        assert_eq!(num_threads(3000.0, &c(100.0), 8), 2);
        // bytes: 64 bytes loaded = 11 cycles.
        let b = TensorOpCost {
            bytes_loaded: 64.0,
            bytes_stored: 64.0,
            compute_cycles: 0.0,
        };
        assert_eq!(b.cycles(), 22.0);
        assert_eq!(num_threads(1.0, &c(f64::NAN), 8), 1);
        assert_eq!(num_threads(1e300, &c(1e300), 4), 4);
    }

    #[test]
    fn block_size_rule() {
        // 40000-cycle iterations: ideal block 1; 4 blocks per thread max:
        // n=1000, 4 threads -> ceil(1000/16)=63 -> coarsening keeps 63
        // (16 blocks, efficiency 1.0).
        assert_eq!(block_size(1000, &c(40000.0), 4), 63);
        // Cheap iterations: the ideal size (40000 cycles / 1 cycle) wins,
        // capped at n.
        assert_eq!(block_size(1000, &c(1.0), 4), 1000);
        // Imbalanced: n=10, 4 threads -> size 1 (10 blocks, eff 10/12);
        // coarser 2 (5 blocks, 5/8 worse) stops at max size 2.
        assert_eq!(block_size(10, &c(1e6), 4), 1);
        for n in [2isize, 7, 81, 1000, 1_000_000] {
            for t in [1, 2, 3, 8, 32] {
                for cy in [1.0, 100.0, 1e5] {
                    let b = block_size(n, &c(cy), t);
                    assert!((1..=n).contains(&b), "n={n} t={t} b={b}");
                }
            }
        }
    }

    #[test]
    fn block_size_near_isize_max_stays_in_range() {
        assert_eq!(div_up(isize::MAX, 16), isize::MAX / 16 + 1);
        assert_eq!(div_up(isize::MAX, 1), isize::MAX);
        assert_eq!(div_up(0, 3), 0);
        for n in (isize::MAX - 14..=isize::MAX).chain([isize::MAX / 2, 1 << 40]) {
            for cy in [0.0, 1.0, 1e9, f64::INFINITY, f64::MAX, f64::NAN, -1.0] {
                for t in [1, 2, 4, 16, 4096] {
                    let b = block_size(n, &c(cy), t);
                    assert!((1..=n).contains(&b), "n={n} cost={cy} t={t} b={b}");
                    let blocks = div_up(n, b);
                    assert!(
                        blocks <= 4 * t as isize,
                        "n={n} cost={cy} t={t}: {blocks} blocks"
                    );
                }
            }
        }
    }

    #[test]
    fn dynamic_blocks_shrink() {
        assert_eq!(dynamic_block(1000, 4, 2), 125);
        assert_eq!(dynamic_block(7, 4, 2), 1);
        assert_eq!(dynamic_block(isize::MAX, i32::MAX, i32::MAX), 2);
    }
}
