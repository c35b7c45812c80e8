//! ORT's thread-affinity strings and applying them with sched_setaffinity.
//!
//! Format (ORT `session.intra_op_thread_affinities`): one entry per worker
//! thread, separated by `;`; an entry is a `,`-separated list of logical
//! processor ids or inclusive intervals `a-b`. Ids are 1-based as in ORT:
//! `1` is the first logical processor (CPU 0 for Linux).
//! Example: `"1,2;3-4"` pins worker 0 to CPUs {0,1} and worker 1 to {2,3}.
//!
//! Hostile strings are bounded before anything is allocated: at most
//! `max_entries` entries (the options pass one per worker of the largest
//! pool), and an
//! interval is added as a bit range to the entry's processor set, never
//! expanded id by id, so the work is linear in the string's length and the
//! memory one [`CpuSet`] (128 bytes) per entry. (The C boundary also caps
//! the string at `LRT_MAX_STRING_BYTES`.)
use crate::alloc::try_vec;
use crate::error::quoted;
use crate::{Error, Result};

/// Largest processor id accepted (Linux `CPU_SETSIZE`).
pub const MAX_PROCESSOR: usize = libc::CPU_SETSIZE as usize;

/// A set of 0-based processor ids below [`MAX_PROCESSOR`], one bit each:
/// one worker's affinity.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CpuSet([u64; MAX_PROCESSOR / 64]);

impl std::fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.ids()).finish()
    }
}

impl CpuSet {
    /// The empty set.
    pub const EMPTY: CpuSet = CpuSet([0; MAX_PROCESSOR / 64]);

    /// The set of `ids` (those below [`MAX_PROCESSOR`]).
    pub fn of(ids: &[usize]) -> CpuSet {
        let mut set = CpuSet::EMPTY;
        for &c in ids.iter().filter(|&&c| c < MAX_PROCESSOR) {
            set.add_range(c, c);
        }
        set
    }

    /// The ids in increasing order.
    pub fn ids(&self) -> impl Iterator<Item = usize> + '_ {
        (0..MAX_PROCESSOR).filter(|&c| self.contains(c))
    }

    /// Adds `lo..=hi` (both < MAX_PROCESSOR), a word at a time.
    fn add_range(&mut self, lo: usize, hi: usize) {
        for (w, word) in self.0.iter_mut().enumerate() {
            let (first, last) = (w * 64, w * 64 + 63);
            if last < lo || first > hi {
                continue;
            }
            let (from, to) = (lo.max(first) - first, hi.min(last) - first);
            *word |= (u64::MAX >> (63 - (to - from))) << from;
        }
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        cpu < MAX_PROCESSOR && self.0[cpu / 64] & (1 << (cpu % 64)) != 0
    }
}

fn parse_id(s: &str, whole: &str) -> Result<usize> {
    let bad = || {
        Error::invalid_argument(format!(
            "affinity \"{}\": \"{}\" is not a processor id in 1..={MAX_PROCESSOR}",
            quoted(whole),
            quoted(s)
        ))
    };
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let id: usize = s.parse().map_err(|_| bad())?;
    if id == 0 || id > MAX_PROCESSOR {
        return Err(bad());
    }
    Ok(id)
}

/// Parses an affinity string of at most `max_entries` thread entries into
/// one set of 0-based CPU ids per worker thread.
pub fn parse(affinity: &str, max_entries: usize) -> Result<Vec<CpuSet>> {
    if affinity.is_empty() {
        return Err(Error::invalid_argument("affinity string is empty"));
    }
    let entries = affinity.bytes().filter(|&b| b == b';').count() + 1;
    if entries > max_entries {
        return Err(Error::invalid_argument(format!(
            "affinity string has {entries} thread entries; at most {max_entries} \
             (one per worker of a pool of LRT_POOL_MAX_THREADS threads)"
        )));
    }
    let mut threads = try_vec(entries)?;
    for entry in affinity.split(';') {
        if entry.is_empty() {
            return Err(Error::invalid_argument(format!(
                "affinity \"{}\": empty thread entry",
                quoted(affinity)
            )));
        }
        let mut cpus = CpuSet::EMPTY;
        for item in entry.split(',') {
            let (a, b) = match item.split_once('-') {
                Some((a, b)) => (parse_id(a, affinity)?, parse_id(b, affinity)?),
                None => {
                    let id = parse_id(item, affinity)?;
                    (id, id)
                }
            };
            if a > b {
                return Err(Error::invalid_argument(format!(
                    "affinity \"{}\": interval \"{}\" is reversed",
                    quoted(affinity),
                    quoted(item)
                )));
            }
            cpus.add_range(a - 1, b - 1);
        }
        threads.push(cpus);
    }
    Ok(threads)
}

/// A copy of a parsed affinity, allocated fallibly.
pub fn try_clone(threads: &[CpuSet]) -> Result<Vec<CpuSet>> {
    let mut out = try_vec(threads.len())?;
    out.extend_from_slice(threads);
    Ok(out)
}

fn cpu_set(cpus: &CpuSet) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus.ids() {
        // SAFETY: cpu < MAX_PROCESSOR = CPU_SETSIZE.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

/// The CPUs this process may run on (0-based), from sched_getaffinity.
pub fn allowed_cpus() -> Vec<usize> {
    let mut set = cpu_set(&CpuSet::EMPTY);
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return (0..super::cpu::logical_cores()).collect();
    }
    // SAFETY: CPU_ISSET reads the bit array; cpu < CPU_SETSIZE.
    (0..MAX_PROCESSOR)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Checks that every CPU named is one this process may use (linear in the
/// number of ids named).
pub fn validate(threads: &[CpuSet]) -> Result<()> {
    let allowed = CpuSet::of(&allowed_cpus());
    for (i, cpus) in threads.iter().enumerate() {
        if let Some(c) = cpus.ids().find(|&c| !allowed.contains(c)) {
            return Err(Error::invalid_argument(format!(
                "affinity of worker {i}: processor {} (1-based) is not available to this process",
                c + 1
            )));
        }
    }
    Ok(())
}

/// Pins the calling thread to `cpus`; returns false if the kernel refused.
pub fn pin_current_thread(cpus: &[usize]) -> bool {
    pin_current_thread_to(&CpuSet::of(cpus))
}

/// Pins the calling thread to the set `cpus`; returns false if the kernel
/// refused.
pub fn pin_current_thread_to(cpus: &CpuSet) -> bool {
    let set = cpu_set(cpus);
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the
    // calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

/// The calling thread's affinity as it was before [`avoid_cpu`] narrowed it.
pub struct SavedAffinity(libc::cpu_set_t);

impl SavedAffinity {
    /// Gives the calling thread back the affinity it had. Widening never
    /// moves a thread, so it stays on the CPU it runs on.
    pub fn restore(self) {
        // SAFETY: the set is a valid cpu_set_t of the size passed, read by
        // sched_getaffinity; pid 0 is the calling thread.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0) };
    }
}

/// Narrows the calling thread's affinity to leave out `cpu`, where it allows
/// another CPU: a running thread on `cpu` is migrated before the call
/// returns, and a thread about to sleep is woken onto one of the others.
/// Returns the affinity to restore; `None` (nothing changed) where `cpu` is
/// the only CPU the thread may use or the kernel refused.
pub fn avoid_cpu(cpu: usize) -> Option<SavedAffinity> {
    if cpu >= MAX_PROCESSOR {
        return None;
    }
    let size = std::mem::size_of::<libc::cpu_set_t>();
    let mut own = cpu_set(&CpuSet::EMPTY);
    // SAFETY: `own` is a valid cpu_set_t of the size passed; pid 0 is the
    // calling thread.
    if unsafe { libc::sched_getaffinity(0, size, &mut own) } != 0 {
        return None;
    }
    let mut others = own;
    // SAFETY: CPU_ISSET, CPU_CLR and CPU_COUNT work on the bit array;
    // cpu < CPU_SETSIZE.
    let any_other = unsafe {
        let had = libc::CPU_ISSET(cpu, &own);
        libc::CPU_CLR(cpu, &mut others);
        had && libc::CPU_COUNT(&others) > 0
    };
    // SAFETY: `others` is a valid cpu_set_t of the size passed; pid 0 is
    // the calling thread.
    (any_other && unsafe { libc::sched_setaffinity(0, size, &others) } == 0)
        .then_some(SavedAffinity(own))
}

/// Moves the calling thread off `cpu` at once, where its affinity allows
/// another CPU ([`avoid_cpu`], then restored). Returns whether it moved.
pub fn step_off_cpu(cpu: usize) -> bool {
    avoid_cpu(cpu).map(SavedAffinity::restore).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX_ENTRIES: usize = 1023;

    /// `avoid_cpu` moves the calling thread off the CPU it names and
    /// `restore` gives back the affinity it had; with one allowed CPU it
    /// changes nothing. Runs in a thread of its own (it changes affinity).
    #[test]
    fn avoid_cpu_moves_the_thread_and_restore_gives_the_affinity_back() {
        std::thread::spawn(|| {
            let before = allowed_cpus();
            let here = super::super::cpu::current_cpu() as usize;
            match avoid_cpu(here) {
                Some(saved) => {
                    assert!(before.len() > 1, "narrowed with one allowed CPU");
                    let now = super::super::cpu::current_cpu() as usize;
                    assert_ne!(now, here, "still on the avoided CPU");
                    assert!(
                        !allowed_cpus().contains(&here),
                        "the avoided CPU is still allowed"
                    );
                    saved.restore();
                    assert_eq!(allowed_cpus(), before, "the affinity was not restored");
                }
                None => {
                    assert_eq!(
                        before,
                        vec![here],
                        "refused although another CPU is allowed"
                    );
                    assert_eq!(allowed_cpus(), before);
                }
            }
            assert!(
                !step_off_cpu(MAX_PROCESSOR),
                "a CPU beyond the set moved the thread"
            );
            assert_eq!(allowed_cpus(), before);
        })
        .join()
        .expect("the test thread");
    }

    fn parse(s: &str) -> Result<Vec<Vec<usize>>> {
        super::parse(s, MAX_ENTRIES).map(|t| t.iter().map(|c| c.ids().collect()).collect())
    }

    #[test]
    fn parses_ort_format() {
        assert_eq!(parse("1,2,3;4,5").unwrap(), vec![vec![0, 1, 2], vec![3, 4]]);
        assert_eq!(
            parse("1-3;8-8;2,1,2").unwrap(),
            vec![vec![0, 1, 2], vec![7], vec![0, 1]]
        );
        for bad in [
            "", ";", "1;", "0", "a", "1-", "-2", "3-1", "1,,2", " 1", "1;2;", "99999", "1.5", "+1",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn ranges_are_not_expanded_and_entries_are_capped() {
        // Overlapping and repeated ranges collapse to one set.
        assert_eq!(
            parse("1-64,60-70,1-1024,5;2,3-3,2").unwrap(),
            vec![(0..MAX_PROCESSOR).collect::<Vec<_>>(), vec![1, 2]]
        );
        assert_eq!(parse("64-65").unwrap(), vec![vec![63, 64]]);
        let max = vec!["1-1024"; MAX_ENTRIES].join(";");
        assert_eq!(parse(&max).unwrap().len(), MAX_ENTRIES);
        let over = vec!["1"; MAX_ENTRIES + 1].join(";");
        let e = parse(&over).unwrap_err();
        assert!(e.message().contains("at most 1023"), "{}", e.message());
        // A long string is quoted in part only.
        let long = format!("{};x", vec!["1-1024"; 1000].join(";"));
        let e = parse(&long).unwrap_err();
        assert!(e.message().len() < 300, "{}", e.message());
    }

    #[test]
    fn allowed_includes_current() {
        let a = allowed_cpus();
        assert!(!a.is_empty());
        assert!(validate(&[CpuSet::of(&[a[0]])]).is_ok());
        assert!(
            validate(&[CpuSet::of(&[MAX_PROCESSOR - 1])]).is_err()
                || a.contains(&(MAX_PROCESSOR - 1))
        );
    }
}
