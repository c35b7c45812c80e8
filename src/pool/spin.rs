//! The spin phase of an idle worker: the pause instruction, a one-time
//! calibration of its cost, the three `spin_duration_us` modes and the
//! exponential backoff waiter.
//!
//! A spin budget is a number of *pauses*. With backoff off (max 1) each spin
//! iteration is one pause; with backoff max `b` the iterations do 1, 2, 4, …,
//! `b`, `b`, … pauses, and the worker stops once the pauses add up to the
//! budget: fewer iterations (fewer polls of the queues), same wall-clock
//! time.
//!
//! The pause, per architecture ([`pause_instruction`] names it):
//! * x86-64: TPAUSE (C0.1, at most `TPAUSE_CYCLES` TSC cycles) where CPUID
//!   reports WAITPKG, else `pause`, as ONNX Runtime 1.31's `SpinPause`
//!   (which waits 1000 TSC cycles in C0.2).
//! * AArch64: `isb sy`. ONNX Runtime 1.31.1 uses `yield` there (its
//!   manylinux aarch64 wheel: the calibration does 256 warm-up and 1024 timed
//!   `yield`s between two `steady_clock::now()` calls, nanoseconds per pause
//!   floored at 1). But `yield` is a NOP on cores without SMT, which is
//!   nearly every AArch64 server core (Neoverse, Kunpeng's TaiShan, Ampere),
//!   so ORT's spin there is a bare polling loop and its calibrated pause the
//!   1 ns floor. `isb` stalls the pipeline for tens of cycles, like x86's
//!   `pause`: what Rust's `spin_loop` hint, the JVM and Go use there for that
//!   reason. A spin iteration then polls the queues at a rate comparable to
//!   x86, and a microsecond budget counts pauses that actually wait.
//! * elsewhere: `std::hint::spin_loop`.
//!
//! The time source, on both: `Instant` (`clock_gettime(CLOCK_MONOTONIC)`, a
//! vDSO call), the clock of ORT's `steady_clock` calibration. On AArch64 the vDSO
//! reads the generic timer (CNTVCT_EL0) itself; reading it directly would
//! skip the kernel's workarounds for timer errata (HiSilicon 161010101,
//! Cortex-A73 858921, ...) and its fallback to a system call where the
//! counter is unusable, for a saving of a few nanoseconds per clock read
//! that the spin loop makes once every [`DEADLINE_CHECK_EVERY`] iterations.
//! The TSC is read only for TPAUSE's deadline, which is in TSC cycles.
use super::abi::LRT_POOL_MAX_BACKOFF;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The legacy spin count, in pause iterations (`spin_duration_us = -1`; the
/// rule is `lrt_pool_options_set_spin_duration_us`'s in the header).
pub(crate) const LEGACY_SPIN_PAUSES: u64 = 1 << 20;
/// Upper bound of `spin_backoff_max` (`LRT_POOL_MAX_BACKOFF`), as a pause count.
const MAX_BACKOFF: u32 = LRT_POOL_MAX_BACKOFF as u32;
/// TSC cycles one TPAUSE waits at most.
#[cfg(target_arch = "x86_64")]
const TPAUSE_CYCLES: u64 = 200;

// Both facts are cached in plain atomics, computed by whichever thread
// needs them first (racing threads compute the same CPUID answer; the
// first calibration stored wins). Not a lazy cell: one that makes a second
// thread wait parks it through `std::thread::current()`, which allocates
// through the system allocator, past the emergency reserve (`crate::alloc`),
// and aborts when the heap is exhausted.
/// 0: not yet known, 1: no WAITPKG, 2: WAITPKG.
#[cfg(target_arch = "x86_64")]
static WAITPKG: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
/// The calibrated pause in ns as `f64` bits; 0: not yet measured.
static PAUSE_NS: AtomicU64 = AtomicU64::new(0);

#[cfg(target_arch = "x86_64")]
#[inline]
fn use_tpause() -> bool {
    match WAITPKG.load(Ordering::Relaxed) {
        0 => {
            let has = super::cpu::has_waitpkg();
            WAITPKG.store(if has { 2 } else { 1 }, Ordering::Relaxed);
            has
        }
        known => known == 2,
    }
}

/// One pause: TPAUSE (C0.1, about `TPAUSE_CYCLES` cycles) where the CPU has
/// WAITPKG, else the `pause` hint; `isb sy` on AArch64 (module doc).
#[inline]
pub fn pause() {
    #[cfg(target_arch = "x86_64")]
    if use_tpause() {
        tpause();
        return;
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: ISB only waits for the pipeline to drain; it touches no memory,
    // no stack and no flags.
    unsafe {
        std::arch::asm!("isb sy", options(nomem, nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "aarch64"))]
    std::hint::spin_loop();
}

/// The instruction [`pause`] executes on this CPU, for reports.
pub fn pause_instruction() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if use_tpause() {
        return "tpause (C0.1)";
    }
    PAUSE_INSTRUCTION
}

/// The pause instruction of this architecture (x86-64: where the CPU has no
/// WAITPKG).
pub const PAUSE_INSTRUCTION: &str = if cfg!(target_arch = "x86_64") {
    "pause"
} else if cfg!(target_arch = "aarch64") {
    "isb sy"
} else {
    "spin_loop hint"
};

#[cfg(target_arch = "x86_64")]
#[inline]
fn tpause() {
    // SAFETY: only called after CPUID reported WAITPKG. RDTSC and TPAUSE read
    // the TSC and wait; they touch no memory and no stack. TPAUSE writes the
    // flags register, which the asm block does not claim to preserve.
    unsafe {
        let deadline = std::arch::x86_64::_rdtsc().wrapping_add(TPAUSE_CYCLES);
        std::arch::asm!(
            "tpause {ctl:e}",
            ctl = in(reg) 1u32, // 1: C0.1, the lighter state with faster wake-up
            in("edx") (deadline >> 32) as u32,
            in("eax") deadline as u32,
            options(nomem, nostack),
        );
    }
}

/// The calibrated cost of one [`pause`] in nanoseconds (measured once per
/// process, then cached; the smallest of several samples, clamped to
/// [0.5, 2000] ns).
pub fn calibrated_pause_ns() -> f64 {
    let known = PAUSE_NS.load(Ordering::Relaxed);
    if known != 0 {
        return f64::from_bits(known);
    }
    const N: u32 = 2000;
    let mut best = f64::INFINITY;
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..N {
            pause();
        }
        let ns = t.elapsed().as_nanos() as f64 / f64::from(N);
        best = best.min(ns);
    }
    let mine = best.clamp(0.5, 2000.0);
    // The first calibration stored is the process's (clamped > 0, so its
    // bits are never 0).
    match PAUSE_NS.compare_exchange(0, mine.to_bits(), Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => mine,
        Err(first) => f64::from_bits(first),
    }
}

/// How long an idle worker spins before it sleeps.
///
/// A microsecond budget is turned into a pause count with the calibrated
/// pause cost, but an idle worker does more than pause: every iteration also
/// polls the queues and the broadcast slot, which costs more on a big pool
/// than the pause itself. So a microsecond budget is also a wall-clock
/// deadline (`deadline_ns`), checked every [`DEADLINE_CHECK_EVERY`]
/// iterations; whichever runs out first ends the spin. The legacy mode
/// (`-1`) is ORT's iteration count and has no deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpinPolicy {
    /// Pauses before sleeping; 0 = sleep at once.
    pub pauses: u64,
    /// Wall-clock budget of one spin, for a microsecond budget.
    pub deadline_ns: Option<u64>,
    /// Backoff cap (1 = off).
    pub backoff_max: u32,
}

/// Spin iterations between two reads of the clock (a vDSO call, ~20 ns).
pub(crate) const DEADLINE_CHECK_EVERY: u64 = 16;

impl SpinPolicy {
    /// Resolves the options into a number of pauses and a deadline, by the
    /// rule of `lrt_pool_options_set_spin_duration_us` (the header); spinning
    /// not allowed: none.
    pub fn new(allow: bool, spin_duration_us: i32, backoff_max: i32) -> Self {
        let pauses = if !allow || spin_duration_us == 0 {
            0
        } else if spin_duration_us < 0 {
            LEGACY_SPIN_PAUSES
        } else {
            let ns = f64::from(spin_duration_us) * 1000.0;
            ((ns / calibrated_pause_ns()).ceil() as u64).max(1)
        };
        let deadline_ns = (allow && spin_duration_us > 0).then(|| spin_duration_us as u64 * 1000);
        SpinPolicy {
            pauses,
            deadline_ns,
            backoff_max: backoff_max.clamp(1, MAX_BACKOFF as i32) as u32,
        }
    }
}

/// Exponential backoff: each [`Backoff::pause`] does 1, 2, 4, … pauses, up
/// to the cap.
#[derive(Debug)]
pub struct Backoff {
    next: u32,
    max: u32,
}

impl Backoff {
    /// Starts at one pause per iteration.
    pub fn new(max: u32) -> Self {
        Backoff {
            next: 1,
            max: max.clamp(1, MAX_BACKOFF),
        }
    }
    /// Pauses for this iteration, returns how many pauses it did.
    #[inline]
    pub fn pause(&mut self) -> u32 {
        let n = self.next;
        for _ in 0..n {
            pause();
        }
        self.next = (n * 2).min(self.max);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microsecond_budgets_are_also_deadlines() {
        let p = SpinPolicy::new(true, 1000, 8);
        assert_eq!(p.deadline_ns, Some(1_000_000));
        assert!(p.pauses > 0);
        let legacy = SpinPolicy::new(true, -1, 1);
        assert_eq!(legacy.deadline_ns, None);
        assert_eq!(legacy.pauses, LEGACY_SPIN_PAUSES);
        assert_eq!(SpinPolicy::new(true, 0, 1).deadline_ns, None);
        assert_eq!(SpinPolicy::new(false, 1000, 1).deadline_ns, None);
        assert_eq!(SpinPolicy::new(false, 1000, 1).pauses, 0);
    }

    #[test]
    fn backoff_doubles_up_to_cap() {
        let mut b = Backoff::new(8);
        let seq: Vec<u32> = (0..6).map(|_| b.pause()).collect();
        assert_eq!(seq, [1, 2, 4, 8, 8, 8]);
        let mut off = Backoff::new(1);
        assert_eq!((0..3).map(|_| off.pause()).sum::<u32>(), 3);
        assert_eq!(Backoff::new(1000).max, MAX_BACKOFF);
    }

    #[test]
    fn policy_modes() {
        assert_eq!(SpinPolicy::new(true, 0, 1).pauses, 0);
        assert_eq!(SpinPolicy::new(false, 1000, 1).pauses, 0);
        assert_eq!(SpinPolicy::new(true, -1, 1).pauses, LEGACY_SPIN_PAUSES);
        let p = SpinPolicy::new(true, 1000, 8);
        let expect = (1_000_000.0 / calibrated_pause_ns()).ceil() as u64;
        assert_eq!(p.pauses, expect.max(1));
        assert_eq!(p.backoff_max, 8);
        assert_eq!(SpinPolicy::new(true, 1, 99).backoff_max, 64);
        let ns = calibrated_pause_ns();
        assert!((0.5..=2000.0).contains(&ns));
        assert_eq!(ns, calibrated_pause_ns(), "calibration is cached");
    }
}
