//! ORT's thread-affinity strings and applying them with sched_setaffinity.
//!
//! Format (ORT `session.intra_op_thread_affinities`): one entry per worker
//! thread, separated by `;`; an entry is a `,`-separated list of logical
//! processor ids or inclusive intervals `a-b`. Ids are 1-based as in ORT:
//! `1` is the first logical processor (CPU 0 for Linux).
//! Example: `"1,2;3-4"` pins worker 0 to CPUs {0,1} and worker 1 to {2,3}.
use crate::{Error, Result};

/// Largest processor id accepted (Linux `CPU_SETSIZE`).
pub const MAX_PROCESSOR: usize = libc::CPU_SETSIZE as usize;

fn parse_id(s: &str, whole: &str) -> Result<usize> {
    let bad = || {
        Error::invalid_argument(format!(
            "affinity \"{whole}\": \"{s}\" is not a processor id in 1..={MAX_PROCESSOR}"
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

/// Parses an affinity string into one sorted, de-duplicated list of 0-based
/// CPU ids per worker thread.
pub fn parse(affinity: &str) -> Result<Vec<Vec<usize>>> {
    if affinity.is_empty() {
        return Err(Error::invalid_argument("affinity string is empty"));
    }
    let mut threads = Vec::new();
    for entry in affinity.split(';') {
        let mut cpus = Vec::new();
        if entry.is_empty() {
            return Err(Error::invalid_argument(format!(
                "affinity \"{affinity}\": empty thread entry"
            )));
        }
        for item in entry.split(',') {
            match item.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (parse_id(a, affinity)?, parse_id(b, affinity)?);
                    if a > b {
                        return Err(Error::invalid_argument(format!(
                            "affinity \"{affinity}\": interval \"{item}\" is reversed"
                        )));
                    }
                    cpus.extend((a..=b).map(|id| id - 1));
                }
                None => cpus.push(parse_id(item, affinity)? - 1),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        threads.push(cpus);
    }
    Ok(threads)
}

fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus.iter().filter(|&&c| c < MAX_PROCESSOR) {
        // SAFETY: cpu < CPU_SETSIZE, checked by the filter.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

/// The CPUs this process may run on (0-based), from sched_getaffinity.
pub fn allowed_cpus() -> Vec<usize> {
    let mut set = cpu_set(&[]);
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

/// Checks that every CPU named is one this process may use.
pub fn validate(threads: &[Vec<usize>]) -> Result<()> {
    let allowed = allowed_cpus();
    for (i, cpus) in threads.iter().enumerate() {
        if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
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
    let set = cpu_set(cpus);
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the
    // calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn allowed_includes_current() {
        let a = allowed_cpus();
        assert!(!a.is_empty());
        assert!(validate(&[vec![a[0]]]).is_ok());
        assert!(validate(&[vec![MAX_PROCESSOR - 1]]).is_err() || a.contains(&(MAX_PROCESSOR - 1)));
    }
}
