//! Fuzz harness for the thread-pool half of the C ABI (`lrt_pool_options_*`,
//! `lrt_pool_*`, `lrt_kernel_parallel_for`) and the config parser.
//!
//! Seeded random call sequences over up to three option sets and two pools
//! (plus the NULL pool), with NULL arguments, out-of-range integers, NaN and
//! infinite costs, random, malformed and non-UTF-8 config keys and values,
//! custom thread functions (some failing), nested loops and Schedule.
//! Checked after every call:
//! * a rejected setter leaves the options exactly as they were (compared
//!   with a clone of the Rust `PoolOptions` behind the handle) and leaves a
//!   message in `lrt_last_error`; an accepted config key is a known key;
//! * every loop runs each index exactly once (per-index counters), `total <=
//!   0` and a NULL function call nothing;
//! * every scheduled task runs (counted before the pool is destroyed);
//! * custom create/join calls balance; destroy joins every worker: the
//!   process thread count returns to where it started.
//!
//! `LEANRT_FUZZ_ITERS` (default 20000) and `LEANRT_FUZZ_SEED` size the run; a
//! watchdog aborts on a hang.
mod fuzz_common;

use leanrt::pool::abi::{
    LRT_POOL_KEY_ALLOW_SPINNING, LRT_POOL_KEY_DYNAMIC_BLOCK_BASE, LRT_POOL_KEY_FORCE_SPINNING_STOP,
    LRT_POOL_KEY_SPIN_BACKOFF_MAX, LRT_POOL_KEY_SPIN_DURATION_US, LRT_POOL_KEY_THREAD_AFFINITIES,
};
use std::ffi::{c_char, c_void, CString};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fuzz_common::*;
use leanrt::ffi::pool as ffi;
use leanrt::pool::PoolOptions;

const OK: i32 = 0;
const INVALID: i32 = 1;

const KNOWN_KEYS: &[&str] = &[
    LRT_POOL_KEY_ALLOW_SPINNING,
    LRT_POOL_KEY_SPIN_DURATION_US,
    LRT_POOL_KEY_SPIN_BACKOFF_MAX,
    LRT_POOL_KEY_DYNAMIC_BLOCK_BASE,
    LRT_POOL_KEY_THREAD_AFFINITIES,
    LRT_POOL_KEY_FORCE_SPINNING_STOP,
];

/// A config value: valid-looking, boundary or malformed.
fn random_value(rng: &mut Rng) -> Vec<u8> {
    let s: String = match rng.below(12) {
        0 => rng
            .pick(&["0", "1", "-1", "2", "8", "64", "65", "1000", "100000"])
            .to_string(),
        1 => rng
            .pick(&[
                "", " ", "1 ", " 1", "+1", "-", "--1", "0x10", "1e3", "1.5", "NaN", "true", "yes",
            ])
            .to_string(),
        2 => rng
            .pick(&[
                "2147483647",
                "2147483648",
                "-2147483648",
                "-2147483649",
                "99999999999999999999",
            ])
            .to_string(),
        3 => rng.edgy_i32().to_string(),
        4 => rng
            .pick(&[
                "0,1",
                "1;2",
                "0-1",
                "1,2;3,4",
                "",
                ";",
                ",",
                "a-b",
                "4294967295",
                "0-99999",
                "1-0",
            ])
            .to_string(),
        5 => {
            let len = rng.below(300) as usize;
            (0..len)
                .map(|_| (b' ' + rng.below(95) as u8) as char)
                .collect()
        }
        6 => {
            // raw bytes (non-UTF-8 too), returned below
            let len = rng.below(16) as usize;
            let v: Vec<u8> = (0..len).map(|_| 1 + rng.below(255) as u8).collect();
            return v;
        }
        _ => rng.range_i64(-3, 70).to_string(),
    };
    s.into_bytes()
}

fn random_key(rng: &mut Rng) -> Vec<u8> {
    let s: String = match rng.below(10) {
        0..=5 => rng.pick(KNOWN_KEYS).to_string(),
        6 => {
            let k = rng.pick(KNOWN_KEYS);
            match rng.below(4) {
                0 => k.to_uppercase(),
                1 => format!(" {k}"),
                2 => format!("{k}."),
                _ => k[..rng.below(k.len() as u64) as usize].to_string(),
            }
        }
        7 => rng
            .pick(&[
                "",
                "session.",
                "session.intra_op.",
                "session.inter_op.allow_spinning",
                "x",
            ])
            .to_string(),
        8 => {
            let len = rng.below(16) as usize;
            return (0..len).map(|_| 1 + rng.below(255) as u8).collect();
        }
        _ => format!("session.{}", rng.next_u64()),
    };
    s.into_bytes()
}

fn cstring(bytes: Vec<u8>) -> CString {
    CString::new(bytes.into_iter().filter(|&b| b != 0).collect::<Vec<u8>>()).unwrap()
}

// ---------------------------------------------------------------------------
// Loop bodies: per-index counters shared through ctx.

struct Counters {
    hits: Vec<AtomicU32>,
    /// Calls with a range outside [0, total).
    bad: AtomicU64,
    /// For nested loops: the pool to nest into, as an address.
    nest_pool: AtomicU64,
    nested_ok: AtomicU64,
}

impl Counters {
    fn new(n: usize) -> Self {
        Counters {
            hits: (0..n).map(|_| AtomicU32::new(0)).collect(),
            bad: AtomicU64::new(0),
            nest_pool: AtomicU64::new(0),
            nested_ok: AtomicU64::new(0),
        }
    }
    fn hit(&self, i: isize) {
        match usize::try_from(i).ok().and_then(|i| self.hits.get(i)) {
            Some(c) => {
                c.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                self.bad.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    fn assert_exactly_once(&self, total: isize, context: &str) {
        assert_eq!(
            self.bad.load(Ordering::Relaxed),
            0,
            "{context}: index outside [0, total)"
        );
        for (i, c) in self.hits.iter().enumerate() {
            let want = if (i as isize) < total { 1 } else { 0 };
            let got = c.load(Ordering::Relaxed);
            assert_eq!(got, want, "{context}: index {i} ran {got} times");
        }
    }
}

fn counters<'a>(ctx: *mut c_void) -> &'a Counters {
    // SAFETY: ctx is the Counters the test passed; it outlives the loop.
    unsafe { &*(ctx as *const Counters) }
}

/// A nested loop from inside the body: must complete (no deadlock).
fn nest(c: &Counters) {
    let pool = c.nest_pool.load(Ordering::Relaxed) as *mut ffi::lrt_pool;
    if pool.is_null() {
        return;
    }
    let inner = Counters::new(8);
    // SAFETY: pool is live for the duration of the outer loop; inner outlives the call.
    unsafe {
        ffi::lrt_pool_try_parallel_for(
            pool,
            8,
            1e6,
            Some(range_cb),
            &inner as *const Counters as *mut c_void,
        )
    };
    inner.assert_exactly_once(8, "nested loop");
    c.nested_ok.fetch_add(1, Ordering::Relaxed);
}

unsafe extern "C" fn range_cb(ctx: *mut c_void, first: isize, last: isize) {
    let c = counters(ctx);
    if first > last {
        c.bad.fetch_add(1, Ordering::Relaxed);
    }
    for i in first..last {
        c.hit(i);
    }
    if first == 0 {
        nest(c);
    }
}

unsafe extern "C" fn index_cb(ctx: *mut c_void, i: isize) {
    let c = counters(ctx);
    c.hit(i);
    if i == 0 {
        nest(c);
    }
}

unsafe extern "C" fn kernel_cb(ctx: *mut c_void, i: usize) {
    counters(ctx).hit(i as isize);
}

/// Scheduled tasks count themselves in the counter their ctx points to.
unsafe extern "C" fn task_cb(ctx: *mut c_void) {
    // SAFETY: ctx is an AtomicU64 owned by the test that outlives the pool.
    unsafe { &*(ctx as *const AtomicU64) }.fetch_add(1, Ordering::SeqCst);
}

// Custom thread functions: each worker on a std::thread; counted.
#[path = "pool_support/custom_threads.rs"]
mod custom_threads;
use custom_threads::{
    create as custom_create, join as custom_join, CALLS as CUSTOM_CALLS, CREATES as CUSTOM_CREATES,
    FAIL_AT as CUSTOM_FAIL_AT, JOINS as CUSTOM_JOINS,
};

// ---------------------------------------------------------------------------

struct Pool {
    h: *mut ffi::lrt_pool,
    /// Tasks scheduled on this pool, and the counter they increment.
    scheduled: u64,
    ran: Box<AtomicU64>,
    /// Workers started through the custom create function.
    custom_threads: i64,
    /// The options it was made from (for failure messages).
    options: String,
}

struct Fuzz {
    rng: Rng,
    calls: u64,
    opts: Vec<*mut ffi::lrt_pool_options>,
    pools: Vec<Pool>,
    scheduled: u64,
    accepted_configs: u64,
    rejected: u64,
    loops: u64,
}

fn snapshot(o: *mut ffi::lrt_pool_options) -> PoolOptions {
    // SAFETY: o is a live handle from lrt_pool_options_create, used by this thread only.
    unsafe { (*o).options().clone() }
}

impl Fuzz {
    fn st(&mut self, s: leanrt::ffi::lrt_status) -> i32 {
        self.calls += 1;
        s as i32
    }

    fn pick_opts(&mut self) -> Option<*mut ffi::lrt_pool_options> {
        if self.opts.is_empty() {
            None
        } else {
            Some(*self.rng.pick(&self.opts))
        }
    }

    /// A setter call: on failure nothing changed and a message exists.
    fn setter(
        &mut self,
        o: *mut ffi::lrt_pool_options,
        name: &str,
        must_fail: bool,
        call: impl FnOnce() -> leanrt::ffi::lrt_status,
    ) -> i32 {
        let before = snapshot(o);
        mark_last_error();
        let s = self.st(call());
        if s != OK {
            assert_eq!(
                before,
                snapshot(o),
                "{name}: rejected call changed the options"
            );
            assert_error_names("lrt_pool_options_", name);
            self.rejected += 1;
        } else {
            assert!(!must_fail, "{name}: accepted");
        }
        s
    }

    fn fuzz_options(&mut self) {
        let r = self.rng.below(20);
        if r == 0 || self.opts.is_empty() {
            if self.opts.len() < 3 {
                let mut o = null_mut();
                // SAFETY: valid out pointer.
                let s = self.st(unsafe { ffi::lrt_pool_options_create(&mut o) });
                assert_eq!(s, OK);
                assert_eq!(
                    snapshot(o),
                    PoolOptions::default(),
                    "fresh options are the defaults"
                );
                self.opts.push(o);
            }
            // SAFETY: NULL out must be rejected.
            let st = unsafe { ffi::lrt_pool_options_create(null_mut()) };
            assert_eq!(self.st(st), INVALID);
            return;
        }
        if r == 1 {
            let i = self.rng.below(self.opts.len() as u64) as usize;
            let o = self.opts.swap_remove(i);
            // SAFETY: live handle, not used again; NULL is a no-op.
            unsafe {
                ffi::lrt_pool_options_destroy(o);
                ffi::lrt_pool_options_destroy(null_mut());
            }
            self.calls += 2;
            return;
        }
        let o = self.pick_opts().unwrap();
        let v = self.rng.edgy_i32();
        let o_or_null = if self.rng.chance(1, 12) {
            null_mut()
        } else {
            o
        };
        if o_or_null.is_null() {
            // Every setter with a NULL handle: INVALID, nothing else happens.
            let key = CString::new(KNOWN_KEYS[0]).unwrap();
            // SAFETY: NULL handles must be rejected without dereference.
            let r = unsafe {
                [
                    ffi::lrt_pool_options_set_config(null_mut(), key.as_ptr(), c"1".as_ptr())
                        as i32,
                    ffi::lrt_pool_options_set_num_threads(null_mut(), 2) as i32,
                    ffi::lrt_pool_options_set_spin_control(null_mut(), 1) as i32,
                    ffi::lrt_pool_options_set_spin_duration_us(null_mut(), 10) as i32,
                    ffi::lrt_pool_options_set_spin_backoff_max(null_mut(), 2) as i32,
                    ffi::lrt_pool_options_set_dynamic_block_base(null_mut(), 2) as i32,
                    ffi::lrt_pool_options_set_affinity(null_mut(), c"0".as_ptr()) as i32,
                    ffi::lrt_pool_options_set_denormal_as_zero(null_mut(), 1) as i32,
                    ffi::lrt_pool_options_set_name(null_mut(), c"x".as_ptr()) as i32,
                    ffi::lrt_pool_options_set_custom_thread_fns(
                        null_mut(),
                        Some(custom_create),
                        null_mut(),
                        Some(custom_join),
                    ) as i32,
                ]
            };
            self.calls += 10;
            assert_eq!(r, [INVALID; 10], "setters with a NULL options handle");
            return;
        }
        match self.rng.below(11) {
            0..=3 => {
                let key = random_key(&mut self.rng);
                let value = random_value(&mut self.rng);
                let (nk, nv) = (self.rng.chance(1, 20), self.rng.chance(1, 20));
                let (k, vv) = (cstring(key), cstring(value));
                let s = self.setter(o, "set_config", nk || nv, || {
                    // SAFETY: live handle; NUL-terminated strings or NULL.
                    unsafe {
                        ffi::lrt_pool_options_set_config(
                            o,
                            if nk { null() } else { k.as_ptr() },
                            if nv { null() } else { vv.as_ptr() },
                        )
                    }
                });
                if s == OK {
                    let key = k.to_str().expect("accepted key is UTF-8");
                    assert!(KNOWN_KEYS.contains(&key), "unknown key {key:?} accepted");
                    let val = vv.to_str().expect("accepted value is UTF-8");
                    if key == LRT_POOL_KEY_ALLOW_SPINNING {
                        assert!(val == "0" || val == "1", "allow_spinning accepted {val:?}");
                    }
                    if key != LRT_POOL_KEY_THREAD_AFFINITIES {
                        assert!(
                            val.parse::<i64>().is_ok(),
                            "{key} accepted non-integer {val:?}"
                        );
                    }
                    self.accepted_configs += 1;
                } else {
                    assert_eq!(s, INVALID, "set_config failure status");
                }
            }
            4 => {
                let n = v;
                self.setter(o, "set_num_threads", n < 0, || {
                    // SAFETY: live handle.
                    unsafe { ffi::lrt_pool_options_set_num_threads(o, n) }
                });
            }
            5 => {
                self.setter(o, "set_spin_control", !(v == 0 || v == 1), || {
                    // SAFETY: live handle.
                    unsafe { ffi::lrt_pool_options_set_spin_control(o, v) }
                });
            }
            6 => {
                self.setter(o, "set_spin_duration_us", false, || {
                    // SAFETY: live handle.
                    unsafe { ffi::lrt_pool_options_set_spin_duration_us(o, v) }
                });
                self.setter(o, "set_spin_backoff_max", false, || {
                    // SAFETY: live handle.
                    unsafe { ffi::lrt_pool_options_set_spin_backoff_max(o, v) }
                });
            }
            7 => {
                self.setter(o, "set_dynamic_block_base", false, || {
                    // SAFETY: live handle.
                    unsafe { ffi::lrt_pool_options_set_dynamic_block_base(o, v) }
                });
                self.setter(o, "set_denormal_as_zero", false, || {
                    // SAFETY: live handle.
                    unsafe { ffi::lrt_pool_options_set_denormal_as_zero(o, v) }
                });
            }
            8 => {
                let a = cstring(random_value(&mut self.rng));
                let nul = self.rng.chance(1, 10);
                self.setter(o, "set_affinity", nul, || {
                    // SAFETY: live handle; string or NULL.
                    unsafe {
                        ffi::lrt_pool_options_set_affinity(o, if nul { null() } else { a.as_ptr() })
                    }
                });
            }
            9 => {
                let a = cstring(random_value(&mut self.rng));
                let nul = self.rng.chance(1, 10);
                self.setter(o, "set_name", nul, || {
                    // SAFETY: live handle; string or NULL.
                    unsafe {
                        ffi::lrt_pool_options_set_name(o, if nul { null() } else { a.as_ptr() })
                    }
                });
            }
            _ => {
                let which = self.rng.below(4);
                let (c, j) = match which {
                    0 => (Some(custom_create as _), None),
                    1 => (None, Some(custom_join as _)),
                    2 => (None, None),
                    _ => (Some(custom_create as _), Some(custom_join as _)),
                };
                self.setter(o, "set_custom_thread_fns", which == 0, || {
                    // SAFETY: live handle; valid function pointers or NULL.
                    unsafe {
                        ffi::lrt_pool_options_set_custom_thread_fns(o, c, 0xAB as *mut c_void, j)
                    }
                });
            }
        }
    }

    fn fuzz_pool_create(&mut self) {
        if self.pools.len() >= 2 {
            let i = self.rng.below(2) as usize;
            let p = self.pools.swap_remove(i);
            self.destroy_pool(p);
            return;
        }
        let Some(o) = self.pick_opts() else { return };
        // Keep thread counts small (the fuzzer may have set anything).
        let n = self.rng.range_i64(1, 4) as i32;
        // SAFETY: live handle.
        let st = unsafe { ffi::lrt_pool_options_set_num_threads(o, n) };
        assert_eq!(self.st(st), OK);
        // and spinning short: the fuzzer may have configured 35 minutes.
        let spin = *self.rng.pick(&[-1, 0, 10, 200]);
        // SAFETY: live handle.
        let st = unsafe { ffi::lrt_pool_options_set_spin_duration_us(o, spin) };
        assert_eq!(self.st(st), OK);
        let null_opts = self.rng.chance(1, 12);
        let null_out = self.rng.chance(1, 12);
        let fail_create = self.rng.chance(1, 6) && n > 2;
        let creates0 = CUSTOM_CREATES.load(Ordering::SeqCst);
        let joins0 = CUSTOM_JOINS.load(Ordering::SeqCst);
        if fail_create {
            CUSTOM_CALLS.store(0, Ordering::SeqCst);
            CUSTOM_FAIL_AT.store(2, Ordering::SeqCst);
        }
        let before = snapshot(o);
        let sentinel = 0x5150 as *mut ffi::lrt_pool;
        let mut out = sentinel;
        mark_last_error();
        // SAFETY: live options or NULL; out valid or NULL.
        let s = self.st(unsafe {
            ffi::lrt_pool_create(
                if null_opts { null() } else { o },
                if null_out { null_mut() } else { &mut out },
            )
        });
        CUSTOM_FAIL_AT.store(0, Ordering::SeqCst);
        assert_eq!(before, snapshot(o), "pool_create changed its options");
        if null_out || null_opts {
            assert_eq!(s, INVALID, "pool_create with NULL");
            assert_eq!(out, sentinel);
            return;
        }
        let custom_made = CUSTOM_CREATES.load(Ordering::SeqCst) - creates0;
        if s != OK {
            // Only a failing custom create (or a platform refusal, e.g. of an
            // affinity) may make a valid create fail; nothing may leak.
            assert_eq!(out, sentinel, "pool_create wrote *out on failure");
            assert_error_names("lrt_pool_create", "failed create");
            assert_eq!(
                CUSTOM_JOINS.load(Ordering::SeqCst) - joins0,
                custom_made,
                "workers created before the failure were not joined"
            );
            return;
        }
        if n == 1 {
            assert!(out.is_null(), "num_threads 1 must give the NULL pool");
            return;
        }
        assert!(!out.is_null() && out != sentinel);
        // SAFETY: live pool.
        let dop = unsafe { ffi::lrt_pool_degree_of_parallelism(out) };
        self.calls += 1;
        assert!(dop >= n, "DOP {dop} < num_threads {n}");
        if custom_made > 0 {
            assert_eq!(
                custom_threads::LAST_OPTIONS.load(Ordering::SeqCst),
                0xAB,
                "create_options not passed through"
            );
        }
        self.pools.push(Pool {
            h: out,
            scheduled: 0,
            ran: Box::new(AtomicU64::new(0)),
            custom_threads: custom_made,
            options: format!("{before:?}"),
        });
    }

    fn destroy_pool(&mut self, p: Pool) {
        let joins0 = CUSTOM_JOINS.load(Ordering::SeqCst);
        // SAFETY: live pool, not used again.
        unsafe { ffi::lrt_pool_destroy(p.h) };
        self.calls += 1;
        assert_eq!(
            p.ran.load(Ordering::SeqCst),
            p.scheduled,
            "a scheduled task was lost (destroy returned before it ran); pool options {}",
            p.options
        );
        assert_eq!(
            CUSTOM_JOINS.load(Ordering::SeqCst) - joins0,
            p.custom_threads,
            "custom threads of this pool not all joined by destroy"
        );
    }

    /// A live pool's index, or None for the NULL pool.
    fn pick_pool(&mut self) -> (Option<usize>, *mut ffi::lrt_pool) {
        if self.pools.is_empty() || self.rng.chance(1, 5) {
            (None, null_mut())
        } else {
            let i = self.rng.below(self.pools.len() as u64) as usize;
            (Some(i), self.pools[i].h)
        }
    }

    fn fuzz_loop(&mut self) {
        let (which, pool) = self.pick_pool();
        let total: isize = match self.rng.below(6) {
            0 => (-(self.rng.below(5) as isize)).saturating_sub(if self.rng.chance(1, 3) {
                isize::MAX
            } else {
                0
            }),
            1 => 0,
            2 => 1,
            3 => self.rng.below(2000) as isize,
            _ => self.rng.below(64) as isize,
        };
        let cap = total.clamp(0, 2000) as usize;
        let c = Counters::new(cap.max(1));
        if self.rng.chance(1, 6) {
            c.nest_pool.store(pool as u64, Ordering::Relaxed);
        }
        let ctx = &c as *const Counters as *mut c_void;
        let null_fn = self.rng.chance(1, 15);
        let cost = match self.rng.below(8) {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => -1.0,
            3 => 0.0,
            4 => 1e30,
            _ => self.rng.below(1_000_000) as f64,
        };
        let kind = self.rng.below(6);
        let context =
            format!("loop kind {kind} total {total} cost {cost} null_fn {null_fn} pool {pool:p}");
        note_step(|| context.clone());
        // SAFETY: pool is live or NULL; ctx outlives the call; fn valid or NULL.
        unsafe {
            match kind {
                0 => ffi::lrt_pool_try_parallel_for(
                    pool,
                    total,
                    cost,
                    if null_fn { None } else { Some(range_cb) },
                    ctx,
                ),
                1 => {
                    let tc = ffi::lrt_tensor_op_cost {
                        bytes_loaded: cost,
                        bytes_stored: cost / 2.0,
                        compute_cycles: cost * 3.0,
                    };
                    let null_cost = self.rng.chance(1, 10);
                    ffi::lrt_pool_try_parallel_for_cost(
                        pool,
                        total,
                        if null_cost { null() } else { &tc },
                        if null_fn { None } else { Some(range_cb) },
                        ctx,
                    );
                    if null_cost && !null_fn && total > 0 {
                        // A NULL cost is rejected: nothing ran.
                        c.assert_exactly_once(0, &context);
                        self.calls += 1;
                        return;
                    }
                }
                2 => ffi::lrt_pool_try_simple_parallel_for(
                    pool,
                    total,
                    if null_fn { None } else { Some(index_cb) },
                    ctx,
                ),
                3 => {
                    let nb = match self.rng.below(4) {
                        0 => -(self.rng.below(3) as isize),
                        // More batches than indices (huge counts: see
                        // tests/fuzz_pool_edges.rs).
                        1 => total.max(0) + self.rng.below(1000) as isize,
                        _ => self.rng.below(70) as isize,
                    };
                    note_step(|| format!("{context} num_batches {nb}"));
                    ffi::lrt_pool_try_batch_parallel_for(
                        pool,
                        total,
                        if null_fn { None } else { Some(index_cb) },
                        ctx,
                        nb,
                    )
                }
                4 => {
                    let t = total.max(0) as usize;
                    let nb = self.rng.edgy_u64() as usize % 100;
                    mark_last_error();
                    let s = ffi::lrt_kernel_parallel_for(
                        pool,
                        if null_fn { None } else { Some(kernel_cb) },
                        t,
                        nb,
                        ctx,
                    ) as i32;
                    if null_fn {
                        assert_eq!(s, INVALID, "{context}: kernel_parallel_for NULL fn");
                        assert_error_names("lrt_kernel_parallel_for", &context);
                    } else {
                        assert_eq!(s, OK, "{context}: {}", last_error());
                    }
                }
                _ => {
                    let n = self.rng.below(50);
                    let inline = AtomicU64::new(0);
                    let counter: *const AtomicU64 = match which {
                        Some(i) => &*self.pools[i].ran,
                        None => &inline,
                    };
                    for _ in 0..n {
                        ffi::lrt_pool_schedule(
                            pool,
                            if null_fn { None } else { Some(task_cb) },
                            counter as *mut c_void,
                        );
                    }
                    if !null_fn {
                        self.scheduled += n;
                        match which {
                            Some(i) => self.pools[i].scheduled += n,
                            // The NULL pool runs each task inline.
                            None => {
                                assert_eq!(inline.load(Ordering::SeqCst), n, "NULL-pool schedule")
                            }
                        }
                    } else {
                        assert_eq!(inline.load(Ordering::SeqCst), 0);
                    }
                    self.calls += n;
                    return;
                }
            }
        }
        self.calls += 1;
        self.loops += 1;
        c.assert_exactly_once(if null_fn { 0 } else { total }, &context);
        if total > 0 && !null_fn && kind <= 3 && c.nest_pool.load(Ordering::Relaxed) != 0 {
            assert!(
                c.nested_ok.load(Ordering::Relaxed) >= 1,
                "{context}: nested loop did not run"
            );
        }
    }

    fn fuzz_queries(&mut self) {
        let (_, pool) = self.pick_pool();
        let mut stats = ffi::lrt_pool_stats {
            tasks_run: 77,
            ..Default::default()
        };
        let null_out = self.rng.chance(1, 4);
        // SAFETY: pool live or NULL; stats valid or NULL.
        unsafe {
            let dop = ffi::lrt_pool_degree_of_parallelism(pool);
            let par = ffi::lrt_pool_should_parallelize(pool);
            let n = ffi::lrt_pool_num_threads(pool);
            let id = ffi::lrt_pool_current_thread_id(pool);
            assert_eq!(id, -1, "caller is not a worker");
            if pool.is_null() {
                assert_eq!((dop, par), (1, 0), "NULL pool is serial");
            } else {
                assert!(
                    dop >= 2 && par == 1 && n >= 1,
                    "pool dop {dop} par {par} n {n}"
                );
            }
            mark_last_error();
            let s = ffi::lrt_pool_get_stats(pool, if null_out { null_mut() } else { &mut stats })
                as i32;
            if null_out {
                assert_eq!(s, INVALID, "stats with NULL out");
                assert_eq!(stats.tasks_run, 77);
                assert_error_names("lrt_pool_get_stats", "NULL");
            } else {
                assert_eq!(s, OK);
                if pool.is_null() {
                    // The NULL (serial) pool has all-zero counters.
                    assert_eq!(
                        stats.tasks_run + stats.steals + stats.parks + stats.wakeups,
                        0
                    );
                }
            }
            match self.rng.below(3) {
                0 => ffi::lrt_pool_enable_spinning(pool),
                1 => ffi::lrt_pool_disable_spinning(pool),
                _ => {}
            }
        }
        self.calls += 6;
    }

    fn step(&mut self) {
        let calls = self.calls;
        note_step(|| format!("after {calls} calls"));
        match self.rng.below(100) {
            0..=34 => self.fuzz_options(),
            35..=41 => self.fuzz_pool_create(),
            42..=89 => self.fuzz_loop(),
            _ => self.fuzz_queries(),
        }
    }
}

#[test]
fn fuzz_pool_c_abi() {
    let seed = fuzz_seed("fuzz_pool_c_abi", 0x9001_c0de);
    let iters = fuzz_iters(20_000);
    let dog = Watchdog::new("fuzz_pool_c_abi", Duration::from_secs(60 + iters / 40));
    let base = proc_status();
    let start = Instant::now();
    let mut f = Fuzz {
        rng: Rng::new(seed),
        calls: 0,
        opts: Vec::new(),
        pools: Vec::new(),
        scheduled: 0,
        accepted_configs: 0,
        rejected: 0,
        loops: 0,
    };
    for _ in 0..iters {
        f.step();
    }
    for p in std::mem::take(&mut f.pools) {
        f.destroy_pool(p);
    }
    for o in std::mem::take(&mut f.opts) {
        // SAFETY: live handle, not used again.
        unsafe { ffi::lrt_pool_options_destroy(o) };
    }
    let threads = wait_threads_at_most(base.threads, Duration::from_secs(5));
    assert!(
        threads <= base.threads,
        "worker threads not joined: {} -> {threads}",
        base.threads
    );
    drop(dog);
    eprintln!(
        "fuzz_pool_c_abi: {} C calls in {iters} steps, {:?} ({} loops checked, {} tasks scheduled, {} configs accepted, {} calls rejected)",
        f.calls,
        start.elapsed(),
        f.loops,
        f.scheduled,
        f.accepted_configs,
        f.rejected
    );
    assert!(f.loops > 0 && f.rejected > 0 && f.accepted_configs > 0);
    let _: *const c_char = null();
}
