//! CPU facts the pool needs: core counts, hybrid (P/E cores), WAITPKG.

/// The CPU the calling thread runs on right now (`sched_getcpu`, a vDSO
/// call), or `u32::MAX` when unknown. It may change at any moment: a hint.
pub fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu has no arguments and no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).unwrap_or(u32::MAX)
}

/// The CPU's model name (`/proc/cpuinfo`), or `"unknown"`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Logical processors online (SMT siblings counted separately).
pub fn logical_cores() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// Physical cores: distinct (package, core) pairs in sysfs topology, falling
/// back to `/proc/cpuinfo`, then to the logical count.
pub fn physical_cores() -> usize {
    let mut cores = std::collections::HashSet::new();
    for cpu in 0..logical_cores().max(1) {
        let base = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
        let pkg = std::fs::read_to_string(format!("{base}/physical_package_id"));
        let core = std::fs::read_to_string(format!("{base}/core_id"));
        if let (Ok(p), Ok(c)) = (pkg, core) {
            cores.insert((p.trim().to_owned(), c.trim().to_owned()));
        }
    }
    if !cores.is_empty() {
        return cores.len();
    }
    if let Ok(text) = std::fs::read_to_string("/proc/cpuinfo") {
        let mut pairs = std::collections::HashSet::new();
        let (mut pkg, mut core) = (None::<String>, None::<String>);
        for line in text.lines() {
            if let Some((k, v)) = line.split_once(':') {
                match k.trim() {
                    "physical id" => pkg = Some(v.trim().to_owned()),
                    "core id" => core = Some(v.trim().to_owned()),
                    _ => {}
                }
            }
            if line.trim().is_empty() {
                if let (Some(p), Some(c)) = (pkg.take(), core.take()) {
                    pairs.insert((p, c));
                }
            }
        }
        if !pairs.is_empty() {
            return pairs.len();
        }
    }
    logical_cores()
}

#[cfg(target_arch = "x86_64")]
fn cpuid(leaf: u32, sub: u32) -> (u32, u32, u32, u32) {
    #[allow(unused_unsafe)]
    // SAFETY: CPUID exists on every x86_64 CPU and only reads CPU state.
    let r = unsafe { std::arch::x86_64::__cpuid_count(leaf, sub) };
    (r.eax, r.ebx, r.ecx, r.edx)
}

#[cfg(target_arch = "x86_64")]
fn leaf7() -> Option<(u32, u32, u32, u32)> {
    if cpuid(0, 0).0 >= 7 {
        Some(cpuid(7, 0))
    } else {
        None
    }
}

/// True on a hybrid CPU (performance + efficiency cores): CPUID.07H:EDX bit 15
/// on x86, or both `cpu_core` and `cpu_atom` PMUs in sysfs.
pub fn is_hybrid() -> bool {
    #[cfg(target_arch = "x86_64")]
    if leaf7().is_some_and(|(_, _, _, edx)| edx & (1 << 15) != 0) {
        return true;
    }
    std::path::Path::new("/sys/devices/cpu_core").exists()
        && std::path::Path::new("/sys/devices/cpu_atom").exists()
}

/// True when the CPU has WAITPKG (UMONITOR/UMWAIT/TPAUSE): CPUID.07H:ECX bit 5.
pub fn has_waitpkg() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        leaf7().is_some_and(|(_, _, ecx, _)| ecx & (1 << 5) != 0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_consistent() {
        let (l, p) = (logical_cores(), physical_cores());
        assert!(l >= 1 && p >= 1 && p <= l, "logical {l} physical {p}");
        assert!(!cpu_model().is_empty());
    }
}
