//! Pool options: ONNX Runtime's defaults, setters that validate, and
//! `set_config` with ORT's session config keys. Every setter leaves the
//! options unchanged when it returns an error.
use super::abi::{
    lrt_custom_create_thread_fn, lrt_custom_join_thread_fn, LRT_POOL_KEY_ADAPTIVE_SPIN,
    LRT_POOL_KEY_ALLOW_SPINNING, LRT_POOL_KEY_CPU_BUDGET, LRT_POOL_KEY_DYNAMIC_BLOCK_BASE,
    LRT_POOL_KEY_FORCE_SPINNING_STOP, LRT_POOL_KEY_SPIN_BACKOFF_MAX, LRT_POOL_KEY_SPIN_DURATION_US,
    LRT_POOL_KEY_THREAD_AFFINITIES, LRT_POOL_MAX_BACKOFF, LRT_POOL_MAX_SPIN_US,
    LRT_POOL_MAX_THREADS,
};
use super::affinity;
use crate::diag::Text;
use crate::error::quoted;
use crate::{Error, Result};
use std::ffi::{c_void, OsStr};
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Custom thread functions; both are set (`set_custom_thread_fns` keeps
/// none otherwise).
#[derive(Clone, Copy, Debug)]
pub struct CustomThreadFns {
    /// Called once per worker thread.
    pub create: lrt_custom_create_thread_fn,
    /// The `options` argument of `create`, as an address.
    pub create_options: usize,
    /// Called for each created thread at destroy.
    pub join: lrt_custom_join_thread_fn,
}

impl PartialEq for CustomThreadFns {
    fn eq(&self, other: &Self) -> bool {
        let addr = |f: Option<usize>| f.unwrap_or(0);
        addr(self.create.map(|f| f as usize)) == addr(other.create.map(|f| f as usize))
            && self.create_options == other.create_options
            && addr(self.join.map(|f| f as usize)) == addr(other.join.map(|f| f as usize))
    }
}

/// Environment variable forcing the hybrid-CPU degree of parallelism (×4):
/// `LEANRT_POOL_FORCE_HYBRID=1` (docs/POOL.md).
pub const FORCE_HYBRID_ENV: &str = "LEANRT_POOL_FORCE_HYBRID";

/// A value of [`FORCE_HYBRID_ENV`] as a switch: `Some(true)` for `1`,
/// `Some(false)` for `0`, `None` for anything else (empty included).
pub fn force_hybrid_switch(value: &OsStr) -> Option<bool> {
    match value.as_encoded_bytes() {
        b"1" => Some(true),
        b"0" => Some(false),
        _ => None,
    }
}

/// Whether [`FORCE_HYBRID_ENV`] forces the hybrid degree of parallelism,
/// read now. Unset or `0`: no. Any value but `0` or `1` is not forced
/// either, and the first such read in the process warns on leanrt's log
/// channel (`crate::diag`), naming the value.
pub(crate) fn force_hybrid_from_env() -> bool {
    static WARNED: AtomicBool = AtomicBool::new(false);
    let Some(value) = std::env::var_os(FORCE_HYBRID_ENV) else {
        return false;
    };
    match force_hybrid_switch(&value) {
        Some(on) => on,
        None => {
            if !WARNED.swap(true, Ordering::Relaxed) {
                let mut text = Text::join(&["ignoring ", FORCE_HYBRID_ENV, "=\""]);
                let _ = write!(text, "{}", quoted(&value.to_string_lossy()));
                text.push(
                    "\" (neither 0 nor 1); using 0: the degree of parallelism \
                     is 4 x the thread count only on a hybrid CPU",
                );
                crate::diag::warn(text.as_str());
            }
            false
        }
    }
}

/// Thread pool options. `Default` is ONNX Runtime's: thread count 0
/// (physical cores), spinning allowed, legacy spin count, no backoff, fixed
/// (Eigen) blocks, no affinity, denormals untouched, no custom threads.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolOptions {
    pub(crate) num_threads: i32,
    pub(crate) allow_spinning: bool,
    pub(crate) spin_duration_us: i32,
    pub(crate) spin_backoff_max: i32,
    pub(crate) dynamic_block_base: i32,
    pub(crate) affinity: Option<Vec<affinity::CpuSet>>,
    pub(crate) denormal_as_zero: bool,
    pub(crate) name: String,
    pub(crate) force_spinning_stop: bool,
    /// `leanrt.intra_op.adaptive_spin` as set; None: not set (see
    /// [`PoolOptions::adaptive_spin`]).
    pub(crate) adaptive_spin: Option<bool>,
    /// `leanrt.intra_op.cpu_budget` (on by default).
    pub(crate) cpu_budget: bool,
    pub(crate) force_hybrid: bool,
    pub(crate) custom_threads: Option<CustomThreadFns>,
    /// Stack size of each worker thread leanrt starts; 0: 2 MiB.
    pub(crate) stack_size: usize,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            num_threads: 0,
            allow_spinning: true,
            spin_duration_us: -1,
            spin_backoff_max: 1,
            dynamic_block_base: 0,
            affinity: None,
            denormal_as_zero: false,
            name: "leanrt-pool".to_owned(),
            force_spinning_stop: false,
            adaptive_spin: None,
            cpu_budget: true,
            force_hybrid: false,
            custom_threads: None,
            stack_size: 0,
        }
    }
}

fn parse_int(key: &str, value: &str) -> Result<i32> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::invalid_argument(format!(
            "{}: \"{}\" is not an integer",
            quoted(key),
            quoted(value)
        )));
    }
    value.parse().map_err(|_| {
        Error::invalid_argument(format!(
            "{}: \"{}\" is out of range",
            quoted(key),
            quoted(value)
        ))
    })
}

/// The one check of an on/off switch given as an integer: 0 or 1.
pub fn flag(value: i32, what: &str) -> Result<bool> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::invalid_argument(format!(
            "{what} {value} must be 0 or 1"
        ))),
    }
}

/// A switch given as a config string: exactly "0" or "1".
fn parse_bool(key: &str, value: &str) -> Result<bool> {
    let digit = match value.as_bytes() {
        [d @ b'0'..=b'9'] => i32::from(d - b'0'),
        _ => -1,
    };
    flag(digit, key).map_err(|_| {
        Error::invalid_argument(format!(
            "{}: \"{}\" must be \"0\" or \"1\"",
            quoted(key),
            quoted(value)
        ))
    })
}

/// Smallest worker stack the platform allows (PTHREAD_STACK_MIN).
pub fn min_stack_size() -> usize {
    libc::PTHREAD_STACK_MIN
}

impl PoolOptions {
    /// Sets one option by its ORT session config key, one of the
    /// `LRT_POOL_KEY_*` (each key's values are its doc in `super::abi`).
    pub fn set_config(&mut self, key: &str, value: &str) -> Result<()> {
        match key {
            LRT_POOL_KEY_ALLOW_SPINNING => {
                let v = parse_bool(key, value)?;
                self.allow_spinning = v;
                Ok(())
            }
            LRT_POOL_KEY_SPIN_DURATION_US => self.set_spin_duration_us(parse_int(key, value)?),
            LRT_POOL_KEY_SPIN_BACKOFF_MAX => self.set_spin_backoff_max(parse_int(key, value)?),
            LRT_POOL_KEY_DYNAMIC_BLOCK_BASE => self.set_dynamic_block_base(parse_int(key, value)?),
            LRT_POOL_KEY_THREAD_AFFINITIES => self.set_affinity(value),
            LRT_POOL_KEY_ADAPTIVE_SPIN => {
                self.adaptive_spin = Some(parse_bool(key, value)?);
                Ok(())
            }
            LRT_POOL_KEY_CPU_BUDGET => {
                self.cpu_budget = parse_bool(key, value)?;
                Ok(())
            }
            LRT_POOL_KEY_FORCE_SPINNING_STOP => {
                self.force_spinning_stop = parse_bool(key, value)?;
                Ok(())
            }
            _ => Err(Error::invalid_argument(format!(
                "unknown config key \"{}\"",
                quoted(key)
            ))),
        }
    }

    /// Degree of parallelism (ORT's SetIntraOpNumThreads): 0 = physical
    /// cores, 1 = no pool, n = n-1 workers plus the caller.
    pub fn set_num_threads(&mut self, n: i32) -> Result<()> {
        if !(0..=LRT_POOL_MAX_THREADS).contains(&n) {
            return Err(Error::invalid_argument(format!(
                "num_threads {n} outside [0, {LRT_POOL_MAX_THREADS}]"
            )));
        }
        self.num_threads = n;
        Ok(())
    }

    /// `allow_spinning`: 0 or 1 only.
    pub fn set_spin_control(&mut self, allow: i32) -> Result<()> {
        self.allow_spinning = flag(allow, "spin control")?;
        Ok(())
    }

    /// Stack size in bytes of every worker thread leanrt starts (0:
    /// 2 MiB). Below [`min_stack_size`] (PTHREAD_STACK_MIN) is
    /// `ErrorKind::InvalidArgument`. Custom thread functions own their
    /// threads' stacks; this setting does not reach them.
    pub fn set_stack_size(&mut self, bytes: usize) -> Result<()> {
        if bytes != 0 && bytes < min_stack_size() {
            return Err(Error::invalid_argument(format!(
                "stack size {bytes} is below the platform minimum {} (PTHREAD_STACK_MIN)",
                min_stack_size()
            )));
        }
        self.stack_size = bytes;
        Ok(())
    }

    /// The spin budget (the rule is `lrt_pool_options_set_spin_duration_us`'s
    /// in the header).
    pub fn set_spin_duration_us(&mut self, us: i32) -> Result<()> {
        if !(-1..=LRT_POOL_MAX_SPIN_US).contains(&us) {
            return Err(Error::invalid_argument(format!(
                "spin_duration_us {us} outside [-1, {LRT_POOL_MAX_SPIN_US}]"
            )));
        }
        self.spin_duration_us = us;
        Ok(())
    }

    /// 1 = off; >= 2: exponential backoff up to `max` pauses per iteration
    /// (values above 64 are capped at 64).
    pub fn set_spin_backoff_max(&mut self, max: i32) -> Result<()> {
        if max < 1 {
            return Err(Error::invalid_argument(format!(
                "spin_backoff_max {max} must be >= 1"
            )));
        }
        self.spin_backoff_max = max.min(LRT_POOL_MAX_BACKOFF);
        Ok(())
    }

    /// 0 = fixed blocks (Eigen's count, cut evenly); > 0 = ORT's dynamic
    /// blocks of `remaining / (dop * base)`.
    pub fn set_dynamic_block_base(&mut self, base: i32) -> Result<()> {
        if base < 0 {
            return Err(Error::invalid_argument(format!(
                "dynamic_block_base {base} must be >= 0"
            )));
        }
        self.dynamic_block_base = base;
        Ok(())
    }

    /// ORT affinity string (see [`super::affinity`]); one entry per worker.
    pub fn set_affinity(&mut self, affinity: &str) -> Result<()> {
        // One entry per worker: a pool has at most LRT_POOL_MAX_THREADS - 1.
        self.affinity = Some(affinity::parse(
            affinity,
            LRT_POOL_MAX_THREADS as usize - 1,
        )?);
        Ok(())
    }

    /// Sets FTZ and DAZ (flush denormals to zero) on the worker threads.
    pub fn set_denormal_as_zero(&mut self, on: bool) {
        self.denormal_as_zero = on;
    }

    /// Name prefix of the worker threads (non-empty, no NUL).
    pub fn set_name(&mut self, name: &str) -> Result<()> {
        if name.is_empty() || name.contains('\0') {
            return Err(Error::invalid_argument(
                "pool name must be non-empty, without NUL",
            ));
        }
        self.name = crate::alloc::try_string(name)?;
        Ok(())
    }

    /// Multiplies the degree of parallelism by 4 as on a hybrid CPU (also
    /// forced for every pool by `LEANRT_POOL_FORCE_HYBRID=1`).
    pub fn set_force_hybrid(&mut self, on: bool) {
        self.force_hybrid = on;
    }

    /// Custom thread functions. `create` without `join` is an error; both
    /// `None` restores the built-in threads; `join` alone is kept unused.
    ///
    /// # Safety
    /// The pool calls these functions: `create(create_options, worker,
    /// param)` must start a thread that calls `worker(param)` exactly once
    /// and return a non-NULL handle for it (NULL: no thread was started),
    /// and `join(handle)` must wait until that thread has finished. Both
    /// must stay callable, with `create_options` valid, for as long as any
    /// pool made from these options exists.
    pub unsafe fn set_custom_thread_fns(
        &mut self,
        create: lrt_custom_create_thread_fn,
        create_options: *mut c_void,
        join: lrt_custom_join_thread_fn,
    ) -> Result<()> {
        self.custom_threads = match (create, join) {
            (Some(_), Some(_)) => Some(CustomThreadFns {
                create,
                create_options: create_options as usize,
                join,
            }),
            (Some(_), None) => {
                return Err(Error::invalid_argument(
                    "a custom create-thread function needs a join-thread function",
                ))
            }
            (None, _) => None,
        };
        Ok(())
    }

    /// The configured thread count (0 = physical cores).
    pub fn num_threads(&self) -> i32 {
        self.num_threads
    }
    /// Whether spinning is allowed.
    pub fn allow_spinning(&self) -> bool {
        self.allow_spinning
    }
    /// The spin budget setting.
    pub fn spin_duration_us(&self) -> i32 {
        self.spin_duration_us
    }
    /// The backoff cap.
    pub fn spin_backoff_max(&self) -> i32 {
        self.spin_backoff_max
    }
    /// The dynamic block base (0 = off).
    pub fn dynamic_block_base(&self) -> i32 {
        self.dynamic_block_base
    }
    /// The parsed affinity (0-based CPUs per worker), if set.
    pub fn affinity(&self) -> Option<&[affinity::CpuSet]> {
        self.affinity.as_deref()
    }
    /// Whether workers flush denormals to zero.
    pub fn denormal_as_zero(&self) -> bool {
        self.denormal_as_zero
    }
    /// The thread name prefix.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Whether `force_spinning_stop` is set.
    pub fn force_spinning_stop(&self) -> bool {
        self.force_spinning_stop
    }
    /// Whether the spin budget adapts to the gaps between loops: the
    /// `leanrt.intra_op.adaptive_spin` key where it was set, else on for
    /// the legacy budget (ONNX Runtime's default, `spin_duration_us` -1)
    /// and off for a budget in microseconds (the key's doc in `super::abi`).
    pub fn adaptive_spin(&self) -> bool {
        self.adaptive_spin.unwrap_or(self.spin_duration_us < 0)
    }
    /// The worker stack size (0: 2 MiB).
    pub fn stack_size(&self) -> usize {
        self.stack_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_keys_and_malformed_values() {
        let mut o = PoolOptions::default();
        o.set_config("session.intra_op.spin_duration_us", "1000")
            .unwrap();
        o.set_config("session.intra_op.spin_backoff_max", "8")
            .unwrap();
        o.set_config("session.intra_op.allow_spinning", "0")
            .unwrap();
        o.set_config("session.dynamic_block_base", "4").unwrap();
        o.set_config("session.force_spinning_stop", "1").unwrap();
        o.set_config("leanrt.intra_op.adaptive_spin", "1").unwrap();
        assert!(o.adaptive_spin(), "set, with a budget in microseconds");
        o.set_config("session.intra_op_thread_affinities", "1;2")
            .unwrap();
        assert_eq!(
            (
                o.spin_duration_us,
                o.spin_backoff_max,
                o.allow_spinning,
                o.dynamic_block_base
            ),
            (1000, 8, false, 4)
        );
        assert!(o.force_spinning_stop);
        let before = o.clone();
        for (k, v) in [
            ("session.intra_op.spin_duration_us", "-2"),
            ("session.intra_op.spin_duration_us", "abc"),
            ("session.intra_op.spin_duration_us", ""),
            ("session.intra_op.spin_duration_us", "10 "),
            ("session.intra_op.spin_duration_us", "99999999999"),
            ("session.intra_op.spin_backoff_max", "0"),
            ("session.intra_op.allow_spinning", "yes"),
            ("session.dynamic_block_base", "-1"),
            ("session.force_spinning_stop", "2"),
            ("leanrt.intra_op.adaptive_spin", "yes"),
            ("session.intra_op_thread_affinities", "0;1"),
            ("session.no_such_key", "1"),
        ] {
            let e = o.set_config(k, v).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{k}={v}");
            assert_eq!(o, before, "{k}={v} changed the options");
        }
        o.set_config("session.intra_op.spin_backoff_max", "1000")
            .unwrap();
        assert_eq!(o.spin_backoff_max, 64);
    }

    #[test]
    fn adaptive_spin_defaults_to_the_legacy_budget_only() {
        let mut o = PoolOptions::default();
        assert!(o.adaptive_spin(), "ORT's default budget adapts");
        o.set_spin_duration_us(1000).unwrap();
        assert!(!o.adaptive_spin(), "a budget in microseconds is kept");
        o.set_spin_duration_us(-1).unwrap();
        o.set_config("leanrt.intra_op.adaptive_spin", "0").unwrap();
        assert!(!o.adaptive_spin(), "turned off");
        o.set_spin_duration_us(1000).unwrap();
        o.set_config("leanrt.intra_op.adaptive_spin", "1").unwrap();
        assert!(o.adaptive_spin(), "turned on");
    }

    #[test]
    fn setters_validate() {
        let mut o = PoolOptions::default();
        assert!(o.set_num_threads(-1).is_err());
        assert!(o.set_num_threads(LRT_POOL_MAX_THREADS + 1).is_err());
        assert!(o.set_spin_control(2).is_err());
        assert!(o.set_name("").is_err());
        assert!(o.set_stack_size(1).is_err());
        assert_eq!(o, PoolOptions::default());
        o.set_stack_size(0).unwrap();
        o.set_stack_size(min_stack_size()).unwrap();
        assert_eq!(o.stack_size(), min_stack_size());
        o.set_num_threads(4).unwrap();
        assert_eq!(o.num_threads(), 4);
    }
}
