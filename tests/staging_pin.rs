//! Pinning that follows the runs, on the host backend: what a pinned maker
//! locks at create, that every copy reads pinned memory, how often the pinned
//! ranges grow, and that everything is unpinned at drop.
//!
//! `Recording` wraps the host backend and keeps the pinned ranges itself (it
//! does not lock memory, so these tests do not depend on RLIMIT_MEMLOCK);
//! one test also pins for real with `mlock` and reads `VmLck`.
mod prerequisites;

use std::sync::{Arc, Mutex};

use leanrt::device::host::HostDevice;
use leanrt::device::{Device, PinnedRegion};
use leanrt::staging::{lrt_upload_policy, Maker, MakerConfig, MakerV1, MakerV2};
use leanrt::Result;

#[derive(Default)]
struct Log {
    /// Live pinned ranges [start, end).
    pinned: Vec<(usize, usize)>,
    pins: u32,
    unpins: u32,
    copies: u32,
    /// Copies whose source is not inside one pinned range.
    unpinned_copies: u32,
}

#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Log>>);

impl Recording {
    fn with<R>(&self, f: impl FnOnce(&mut Log) -> R) -> R {
        f(&mut self.0.lock().unwrap())
    }
    fn pinned_bytes(&self) -> usize {
        self.with(|l| l.pinned.iter().map(|(s, e)| e - s).sum())
    }
}

impl Device for Recording {
    fn alloc(&self, size: usize) -> Result<*mut u8> {
        HostDevice.alloc(size)
    }
    unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: forwarded under the trait's contract.
        unsafe { HostDevice.free(ptr) }
    }
    unsafe fn copy_to(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        let (s, e) = (src as usize, src as usize + len);
        self.with(|l| {
            l.copies += 1;
            if !l.pinned.iter().any(|&(a, b)| a <= s && e <= b) {
                l.unpinned_copies += 1;
            }
        });
        // SAFETY: forwarded under the trait's contract.
        unsafe { HostDevice.copy_to(dst, src, len) }
    }
    unsafe fn copy_from(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: forwarded under the trait's contract.
        unsafe { HostDevice.copy_from(dst, src, len) }
    }
    unsafe fn pin(&self, ptr: *mut u8, len: usize) -> Result<PinnedRegion> {
        let (s, e) = (ptr as usize, ptr as usize + len);
        self.with(|l| {
            assert!(
                l.pinned.iter().all(|&(a, b)| e <= a || b <= s),
                "overlapping pins"
            );
            assert_eq!(s % 4096, 0, "pins start on a page");
            l.pinned.push((s, e));
            l.pins += 1;
        });
        let me = self.clone();
        Ok(PinnedRegion::new(Box::new(move || {
            me.with(|l| {
                l.pinned.retain(|&r| r != (s, e));
                l.unpins += 1;
            })
        })))
    }
}

fn run(m: &mut MakerV1, n: usize) {
    m.begin_run().unwrap();
    for _ in 0..n {
        m.claim_slot().unwrap();
    }
    assert_eq!(m.upload().unwrap().total_tasks as usize, n);
}

#[test]
fn a_large_window_pins_a_small_prefix_and_grows_logarithmically() {
    let rec = Recording::default();
    let cfg = MakerConfig {
        task_window: 131072,
        policy: lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        pin_mirror: true,
        ..MakerConfig::default()
    };
    let mut m = MakerV1::new(&cfg, Arc::new(rec.clone())).unwrap();
    let end = m.segments().end as usize;
    let at_create = rec.pinned_bytes();
    assert!(at_create > 0 && at_create < 1 << 20, "{at_create} bytes");
    assert!(at_create * 1000 < end);
    assert_eq!(at_create as u64, m.pinned_bytes());
    for _ in 0..3 {
        run(&mut m, 64);
    }
    assert_eq!(
        rec.pinned_bytes(),
        at_create,
        "N = 64 fits what create pinned"
    );
    let mut pins = rec.with(|l| l.pins);
    let mut n = 65;
    while n <= 16384 {
        run(&mut m, n);
        let grew = rec.with(|l| l.pins) - pins;
        assert!((1..=4).contains(&grew), "N = {n}: {grew} pins");
        pins += grew;
        run(&mut m, n);
        run(&mut m, n / 3);
        assert_eq!(rec.with(|l| l.pins), pins, "N = {n} again: no re-pin");
        n = n * 2 - 1;
    }
    // The last N was 8193: 16384 slots pinned in each segment, an eighth of
    // the image.
    assert!(rec.pinned_bytes() < end / 7);
    assert_eq!(rec.with(|l| l.unpinned_copies), 0);
    drop(m);
    rec.with(|l| {
        assert!(l.pinned.is_empty(), "drop unpins everything");
        assert_eq!(l.pins, l.unpins);
    });
}

#[test]
fn every_policy_copies_from_pinned_memory() {
    for policy in [
        lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        lrt_upload_policy::LRT_UPLOAD_COMPACT,
        lrt_upload_policy::LRT_UPLOAD_FULL,
        lrt_upload_policy::LRT_UPLOAD_AUTO,
    ] {
        for fresh_mirror in [false, true] {
            let rec = Recording::default();
            let w = 4096;
            let cfg = MakerConfig {
                task_window: w as u64,
                policy,
                pin_mirror: true,
                fresh_mirror,
                ..MakerConfig::default()
            };
            let mut m = MakerV1::new(&cfg, Arc::new(rec.clone())).unwrap();
            let end = m.segments().end as usize;
            if policy == lrt_upload_policy::LRT_UPLOAD_FULL {
                assert_eq!(rec.pinned_bytes(), end, "FULL ships the whole image");
            } else {
                assert!(rec.pinned_bytes() < end / 4, "{policy:?}");
            }
            for n in [0, 3, 40, 1000, w, 7, 100, w - 1, 2] {
                run(&mut m, n);
            }
            let (copies, unpinned) = rec.with(|l| (l.copies, l.unpinned_copies));
            assert!(copies > 0);
            assert_eq!(unpinned, 0, "{policy:?} fresh {fresh_mirror}");
            drop(m);
            assert!(rec.with(|l| l.pinned.is_empty()));
        }
    }
}

#[test]
fn without_pinning_nothing_is_pinned() {
    let rec = Recording::default();
    let cfg = MakerConfig {
        task_window: 1024,
        ..MakerConfig::default()
    };
    let mut m = MakerV1::new(&cfg, Arc::new(rec.clone())).unwrap();
    run(&mut m, 100);
    assert_eq!(rec.with(|l| l.pins), 0);
    assert_eq!(m.pinned_bytes(), 0);
    assert!(rec.with(|l| l.unpinned_copies) > 0);
}

fn vm_lck() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmLck:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

/// The real host backend locks with mlock: VmLck follows what the maker
/// says it pinned. (mlock may be refused, e.g. by RLIMIT_MEMLOCK: the maker
/// warns and runs unpinned, and this test cannot check what it is for; it
/// fails then, unless `LEANRT_SKIP_MLOCK=1` asks to skip it.)
#[test]
fn host_backend_locks_what_it_reports() {
    let cfg = MakerConfig {
        task_window: 131072,
        policy: lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        pin_mirror: true,
        ..MakerConfig::default()
    };
    let mut m = MakerV1::new(&cfg, Arc::new(HostDevice)).unwrap();
    run(&mut m, 64);
    run(&mut m, 1000);
    if m.pin_failed() {
        prerequisites::missing(
            prerequisites::SKIP_MLOCK_ENV,
            "mlock was refused (RLIMIT_MEMLOCK?): the maker runs unpinned",
        );
        return;
    }
    let pinned = m.pinned_bytes();
    assert!(pinned > 0 && pinned < 16 << 20, "{pinned} bytes");
    // Other tests of this binary lock only through `Recording`, so the
    // process's locked memory is this maker's (to the page).
    if let Some(locked) = vm_lck() {
        assert!(
            locked >= pinned && locked < pinned + (1 << 20),
            "{locked} vs {pinned}"
        );
    }
    drop(m);
    if let Some(locked) = vm_lck() {
        assert_eq!(locked, 0);
    }
}

/// A device whose pins fail after `ok` successes.
struct Refusing {
    inner: Recording,
    ok: Mutex<u32>,
}

impl Device for Refusing {
    fn alloc(&self, size: usize) -> Result<*mut u8> {
        self.inner.alloc(size)
    }
    unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: forwarded under the trait's contract.
        unsafe { self.inner.free(ptr) }
    }
    unsafe fn copy_to(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: forwarded under the trait's contract.
        unsafe { self.inner.copy_to(dst, src, len) }
    }
    unsafe fn copy_from(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: forwarded under the trait's contract.
        unsafe { self.inner.copy_from(dst, src, len) }
    }
    unsafe fn pin(&self, ptr: *mut u8, len: usize) -> Result<PinnedRegion> {
        let mut ok = self.ok.lock().unwrap();
        if *ok == 0 {
            return Err(leanrt::Error::unavailable("mlock refused (test)"));
        }
        *ok -= 1;
        // SAFETY: forwarded under the trait's contract.
        unsafe { self.inner.pin(ptr, len) }
    }
}

#[test]
fn a_failed_pin_warns_once_and_runs_pageable() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&seen);
    leanrt::diag::set_sink(Some(Arc::new(move |_, m: &str| {
        sink.lock().unwrap().push(m.to_string())
    })));
    let rec = Recording::default();
    // Create's four prefixes pin; the first growth is refused.
    let dev = Refusing {
        inner: rec.clone(),
        ok: Mutex::new(4),
    };
    let cfg = MakerConfig {
        task_window: 8192,
        policy: lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        pin_mirror: true,
        ..MakerConfig::default()
    };
    let mut m = MakerV1::new(&cfg, Arc::new(dev)).unwrap();
    assert!(!m.pin_failed());
    run(&mut m, 64);
    assert_eq!(rec.with(|l| l.unpinned_copies), 0);
    run(&mut m, 3000);
    assert!(m.pin_failed());
    run(&mut m, 5000);
    run(&mut m, 8192);
    leanrt::diag::set_sink(None);
    let warnings: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|m| m.contains("could not pin"))
        .cloned()
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("mlock refused (test)"), "{warnings:?}");
    // The runs after the failure copied (partly) from pageable memory, and
    // shipped all the same.
    assert!(rec.with(|l| l.unpinned_copies) > 0);
    drop(m);
    assert!(rec.with(|l| l.pinned.is_empty()));

    // One warning per maker whatever the policy or mirror mode: COMPACT has
    // two mappings to pin, a fresh mirror is a new mapping every run; after
    // the first refusal nothing is pinned again.
    for (policy, fresh_mirror) in [
        (lrt_upload_policy::LRT_UPLOAD_COMPACT, false),
        (lrt_upload_policy::LRT_UPLOAD_BOUNDED, true),
        (lrt_upload_policy::LRT_UPLOAD_COMPACT, true),
        (lrt_upload_policy::LRT_UPLOAD_AUTO, true),
    ] {
        seen.lock().unwrap().clear();
        leanrt::diag::set_sink(Some(Arc::new({
            let sink = Arc::clone(&seen);
            move |_, m: &str| sink.lock().unwrap().push(m.to_string())
        })));
        let rec = Recording::default();
        let dev = Refusing {
            inner: rec.clone(),
            ok: Mutex::new(0),
        };
        let cfg = MakerConfig {
            task_window: 1024,
            policy,
            pin_mirror: true,
            fresh_mirror,
            ..MakerConfig::default()
        };
        let mut m = MakerV1::new(&cfg, Arc::new(dev)).unwrap();
        for n in [3, 5, 300, 1024, 2] {
            run(&mut m, n);
        }
        leanrt::diag::set_sink(None);
        assert!(m.pin_failed());
        assert_eq!(m.pinned_bytes(), 0);
        let warnings = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.contains("could not pin"))
            .count();
        assert_eq!(warnings, 1, "{policy:?} fresh {fresh_mirror}");
    }
}

#[test]
fn a_v2_maker_pins_the_staging_buffer_its_one_copy_reads() {
    let rec = Recording::default();
    let cfg = MakerConfig {
        task_window: 16384,
        layout: leanrt::staging::lrt_layout::LRT_LAYOUT_V2,
        frame_before: 704,
        pin_mirror: true,
        ..MakerConfig::default()
    };
    let mut m = MakerV2::new(&cfg, Arc::new(rec.clone())).unwrap();
    // Nothing is pinned before a run uses it: the mirror is only read by
    // the host's gather, the staging buffer by the copy.
    assert_eq!(rec.pinned_bytes(), 0);
    let block = [0u8; 704];
    let v2_run = |m: &mut MakerV2, n: u64| {
        m.begin_run().unwrap();
        for _ in 0..n {
            m.claim_slot(&leanrt::staging::V2ClaimDesc::default())
                .unwrap();
        }
        m.upload(&block, &[]).unwrap()
    };
    let mut pins = 0;
    for n in [10u64, 1000, 5000] {
        // The first run of a shape is gathered into the staging buffer, the
        // next ones are claimed in place in the image buffer: each buffer is
        // pinned as far as its copies read, once.
        let r = v2_run(&mut m, n);
        assert!(rec.pinned_bytes() as u64 >= r.bytes, "N = {n}");
        v2_run(&mut m, n);
        assert!(
            (rec.pinned_bytes() as u64) < 2 * (2 * r.bytes + 8192),
            "N = {n}: each grown to a power of two"
        );
        pins = rec.with(|l| l.pins);
        // The same runs again, and a smaller one, pin nothing more.
        v2_run(&mut m, n);
        v2_run(&mut m, n / 2);
        assert_eq!(rec.with(|l| l.pins), pins, "N = {n} again");
    }
    assert!(pins >= 2);
    assert_eq!(rec.with(|l| l.unpinned_copies), 0);
    assert_eq!(m.pinned_bytes(), rec.pinned_bytes() as u64);
    drop(m);
    rec.with(|l| assert!(l.pinned.is_empty() && l.pins == l.unpins));
}
