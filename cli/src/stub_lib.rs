//! TEMPORARY stand-ins for the agreed `leanrt::pool` API, used only with `--features stub-lib` until those land
//! in the library. Naive on purpose; never used for measurements.
#![allow(dead_code, clippy::all)]

pub mod pool {
    use leanrt::{Error, Result};
    #[derive(Clone, Debug, PartialEq, Default)]
    pub struct PoolOptions {
        pub n: i32,
    }
    impl PoolOptions {
        pub fn set_config(&mut self, key: &str, value: &str) -> Result<()> {
            match key {
                "session.intra_op.allow_spinning"
                | "session.intra_op.spin_duration_us"
                | "session.intra_op.spin_backoff_max" => {
                    value
                        .parse::<i32>()
                        .map_err(|_| Error::invalid_argument("bad"))?;
                    Ok(())
                }
                _ => Err(Error::invalid_argument(format!("unknown key {key}"))),
            }
        }
        pub fn set_num_threads(&mut self, n: i32) -> Result<()> {
            self.n = n;
            Ok(())
        }
    }
    pub struct ThreadPool {
        n: i32,
    }
    impl ThreadPool {
        pub fn create(o: &PoolOptions) -> Result<Option<ThreadPool>> {
            let n = if o.n == 0 {
                super::pool::cpu::physical_cores() as i32
            } else {
                o.n
            };
            Ok(if n <= 1 { None } else { Some(ThreadPool { n }) })
        }
        pub fn num_threads(&self) -> i32 {
            self.n - 1
        }
        pub fn stats(&self) -> PoolStats {
            PoolStats::default()
        }
    }
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct PoolStats {
        pub tasks_run: u64,
        pub steals: u64,
        pub spin_iterations: u64,
        pub parks: u64,
        pub wakeups: u64,
        pub workers_asleep: u64,
    }
    pub fn try_parallel_for(
        _p: Option<&ThreadPool>,
        total: isize,
        _c: f64,
        f: &(dyn Fn(isize, isize) + Sync),
    ) {
        if total > 0 {
            f(0, total)
        }
    }
    pub fn try_simple_parallel_for(
        _p: Option<&ThreadPool>,
        total: isize,
        f: &(dyn Fn(isize) + Sync),
    ) {
        for i in 0..total {
            f(i)
        }
    }
    pub fn schedule(_p: Option<&ThreadPool>, task: Box<dyn FnOnce() + Send + 'static>) {
        std::thread::spawn(task);
    }
    pub fn degree_of_parallelism(p: Option<&ThreadPool>) -> i32 {
        p.map_or(1, |p| p.n)
    }
    pub mod cpu {
        pub fn cpu_model() -> String {
            std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("model name"))
                        .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
                })
                .unwrap_or_default()
        }
        pub fn physical_cores() -> usize {
            logical_cores()
        }
        pub fn logical_cores() -> usize {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
        pub fn is_hybrid() -> bool {
            false
        }
        pub fn has_waitpkg() -> bool {
            false
        }
    }
    pub mod spin {
        pub fn calibrated_pause_ns() -> f64 {
            1.0
        }
    }
}
