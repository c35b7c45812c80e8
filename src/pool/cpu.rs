//! CPU facts the pool needs: core counts, hybrid (P/E cores), WAITPKG, and
//! the model name reports print. x86-64 answers from CPUID where it can;
//! AArch64 from what the kernel prints of each core's MIDR (its
//! implementer and part numbers) in `/proc/cpuinfo`.

/// The CPU the calling thread runs on right now (`sched_getcpu`, a vDSO
/// call), or `u32::MAX` when unknown. It may change at any moment: a hint.
pub fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu has no arguments and no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).unwrap_or(u32::MAX)
}

/// The CPU's model name: `/proc/cpuinfo`'s "model name" (x86) or "Model"
/// (some ARM boards), else the name of the first core's type from its MIDR
/// fields (AArch64 servers print only those), else `"unknown"`.
pub fn cpu_model() -> String {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .or_else(|| core_types(&text).first().map(|&t| core_type_name(t)))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The distinct (implementer, part) pairs of the cores `/proc/cpuinfo` lists
/// ("CPU implementer" and "CPU part", AArch64's MIDR fields), in order of
/// first appearance; empty where the kernel prints none (x86).
fn core_types(cpuinfo: &str) -> Vec<(u32, u32)> {
    let hex = |v: &str| u32::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok();
    let mut types = Vec::new();
    let mut implementer = None;
    for line in cpuinfo.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "CPU implementer" => implementer = hex(value),
            "CPU part" => {
                if let (Some(i), Some(p)) = (implementer, hex(value)) {
                    if !types.contains(&(i, p)) {
                        types.push((i, p));
                    }
                }
            }
            _ => {}
        }
    }
    types
}

/// A core type by name where it is one of the common ones (the numbers are
/// the Linux kernel's, `arch/arm64/include/asm/cputype.h`), else by number.
fn core_type_name((implementer, part): (u32, u32)) -> String {
    let vendor = match implementer {
        0x41 => "Arm",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4e => "NVIDIA",
        0x51 => "Qualcomm",
        0x61 => "Apple",
        0xc0 => "Ampere",
        _ => "",
    };
    let core = match (implementer, part) {
        (0x41, 0xd03) => "Cortex-A53",
        (0x41, 0xd05) => "Cortex-A55",
        (0x41, 0xd07) => "Cortex-A57",
        (0x41, 0xd08) => "Cortex-A72",
        (0x41, 0xd09) => "Cortex-A73",
        (0x41, 0xd0b) => "Cortex-A76",
        (0x41, 0xd0c) => "Neoverse-N1",
        (0x41, 0xd40) => "Neoverse-V1",
        (0x41, 0xd41) => "Cortex-A78",
        (0x41, 0xd49) => "Neoverse-N2",
        (0x41, 0xd4f) => "Neoverse-V2",
        (0x41, 0xd84) => "Neoverse-V3",
        (0x41, 0xd8e) => "Neoverse-N3",
        (0x43, 0x0af) => "ThunderX2",
        (0x46, 0x001) => "A64FX",
        (0x48, 0xd01) => "TaiShan-v110 (Kunpeng 920)",
        (0x4e, 0x004) => "Carmel",
        (0xc0, 0xac3) => "Ampere-1",
        (0xc0, 0xac4) => "Ampere-1a",
        _ => "",
    };
    match (vendor, core) {
        ("", _) | (_, "") => {
            format!("AArch64 core (implementer {implementer:#04x}, part {part:#05x})")
        }
        (v, c) => format!("{v} {c}"),
    }
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

/// True on a hybrid CPU (cores of more than one type): CPUID.07H:EDX bit 15
/// on x86, or both `cpu_core` and `cpu_atom` PMUs in sysfs; on AArch64 more
/// than one (implementer, part) pair among the cores (big.LITTLE), the rule
/// of ONNX Runtime 1.31 there (pytorch cpuinfo's count of core types).
pub fn is_hybrid() -> bool {
    #[cfg(target_arch = "x86_64")]
    if leaf7().is_some_and(|(_, _, _, edx)| edx & (1 << 15) != 0) {
        return true;
    }
    if std::path::Path::new("/sys/devices/cpu_core").exists()
        && std::path::Path::new("/sys/devices/cpu_atom").exists()
    {
        return true;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    core_types(&cpuinfo).len() > 1
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

    /// Two processors of an AArch64 /proc/cpuinfo, as the kernel prints them.
    fn arm_cpuinfo(parts: [&str; 2]) -> String {
        parts
            .iter()
            .enumerate()
            .map(|(n, part)| {
                format!(
                    "processor\t: {n}\nBogoMIPS\t: 200.00\nFeatures\t: fp asimd evtstrm\n\
                     CPU implementer\t: 0x48\nCPU architecture: 8\nCPU variant\t: 0x1\n\
                     CPU part\t: {part}\nCPU revision\t: 0\n\n"
                )
            })
            .collect()
    }

    #[test]
    fn aarch64_core_types_come_from_the_midr_fields() {
        let same = arm_cpuinfo(["0xd01", "0xd01"]);
        assert_eq!(core_types(&same), [(0x48, 0xd01)]);
        assert_eq!(
            core_type_name(core_types(&same)[0]),
            "HiSilicon TaiShan-v110 (Kunpeng 920)"
        );
        // Two core types (big.LITTLE): hybrid by ORT's rule.
        assert_eq!(core_types(&arm_cpuinfo(["0xd01", "0xd02"])).len(), 2);
        assert_eq!(core_type_name((0x41, 0xd0c)), "Arm Neoverse-N1");
        assert_eq!(
            core_type_name((0x48, 0xd99)),
            "AArch64 core (implementer 0x48, part 0xd99)"
        );
        // x86's /proc/cpuinfo has no MIDR fields.
        assert!(core_types("processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\n").is_empty());
    }

    #[test]
    fn counts_are_consistent() {
        let (l, p) = (logical_cores(), physical_cores());
        assert!(l >= 1 && p >= 1 && p <= l, "logical {l} physical {p}");
        assert!(!cpu_model().is_empty());
    }
}
