//! Loom model of the pool's sleep/wake protocol (`src/pool/sleep.rs`,
//! compiled here against loom through the same `sync` facade names).
//!
//! Run (CI does): `RUSTFLAGS="--cfg loom" cargo test -p leanrt --test pool_loom
//! --target-dir target/loom`
//!
//! Each model is the worker's sleep sequence (check for work, prepare,
//! re-check, cancel or wait) against producers that publish work and then
//! notify. A lost wake-up would leave a waiter blocked forever with work
//! published, which loom reports as a deadlock in some interleaving.
#![cfg(loom)]

mod sync {
    pub use loom::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
    pub use loom::sync::{Condvar, Mutex, MutexGuard};

    pub fn lock(m: &Mutex<()>) -> MutexGuard<'_, ()> {
        m.lock().unwrap()
    }

    pub fn wait<'a>(cv: &Condvar, g: MutexGuard<'a, ()>) -> MutexGuard<'a, ()> {
        cv.wait(g).unwrap()
    }

    pub fn spin_hint() {
        loom::hint::spin_loop();
    }
}

#[allow(dead_code)]
#[path = "../src/pool/sleep.rs"]
mod sleep;

#[allow(dead_code)]
#[path = "../src/pool/section.rs"]
mod section;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use section::Section;
use sleep::EventCount;

/// Takes one unit of work if there is any (a stand-in for a queue pop).
fn take(work: &AtomicUsize) -> bool {
    work.fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| w.checked_sub(1))
        .is_ok()
}

/// The worker's loop: consume `need` units, sleeping when there are none.
fn worker(ec: &EventCount, work: &AtomicUsize, need: usize) {
    let mut got = 0;
    while got < need {
        if take(work) {
            got += 1;
            continue;
        }
        let ticket = ec.prepare();
        if take(work) {
            ec.cancel(ticket);
            got += 1;
            continue;
        }
        ec.wait(ticket);
    }
}

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b
}

#[test]
fn one_waiter_one_producer() {
    builder().check(|| {
        let ec = Arc::new(EventCount::new());
        let work = Arc::new(AtomicUsize::new(0));
        let (ec2, work2) = (ec.clone(), work.clone());
        let producer = loom::thread::spawn(move || {
            work2.fetch_add(1, Ordering::Release);
            ec2.notify(1);
        });
        worker(&ec, &work, 1);
        producer.join().unwrap();
        assert_eq!(ec.waiters(), 0);
    });
}

#[test]
fn two_waiters_two_notify_one() {
    // Two sleepers, two separate publications each with notify(1): each
    // publication must reach a waiter that re-scans.
    builder().check(|| {
        let ec = Arc::new(EventCount::new());
        let work = Arc::new(AtomicUsize::new(0));
        let (ec2, work2) = (ec.clone(), work.clone());
        let a = loom::thread::spawn(move || worker(&ec2, &work2, 1));
        let (ec3, work3) = (ec.clone(), work.clone());
        let b = loom::thread::spawn(move || worker(&ec3, &work3, 1));
        for _ in 0..2 {
            work.fetch_add(1, Ordering::Release);
            ec.notify(1);
        }
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(work.load(Ordering::Relaxed), 0);
    });
}

#[test]
fn one_batch_wakes_two_waiters() {
    // A loop fork: two units published, then one notify(2).
    builder().check(|| {
        let ec = Arc::new(EventCount::new());
        let work = Arc::new(AtomicUsize::new(0));
        let (ec2, work2) = (ec.clone(), work.clone());
        let other = loom::thread::spawn(move || worker(&ec2, &work2, 1));
        let (ec3, work3) = (ec.clone(), work.clone());
        let other2 = loom::thread::spawn(move || worker(&ec3, &work3, 1));
        work.fetch_add(2, Ordering::Release);
        ec.notify(2);
        other.join().unwrap();
        other2.join().unwrap();
    });
}

#[test]
fn shutdown_wakes_everyone() {
    builder().check(|| {
        let ec = Arc::new(EventCount::new());
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for _ in 0..2 {
            let (ec, stop) = (ec.clone(), stop.clone());
            threads.push(loom::thread::spawn(move || loop {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                let t = ec.prepare();
                if stop.load(Ordering::Acquire) {
                    ec.cancel(t);
                    break;
                }
                ec.wait(t);
            }));
        }
        stop.store(true, Ordering::Release);
        ec.notify(usize::MAX);
        for t in threads {
            t.join().unwrap();
        }
    });
}

/// A loop's shared state in the section models: `data` is written by the
/// owner before publishing and after the join, read by helpers in between;
/// loom reports a data race if a helper's read is not ordered between them.
struct Payload {
    data: UnsafeCell<usize>,
}

/// A pool worker in the section models: join the published section if it
/// admits helpers, else sleep through the event count, until `stop`.
fn section_worker(ec: &EventCount, sec: &Section<Payload>, stop: &AtomicBool) -> usize {
    let mut helped = 0;
    loop {
        if let Some((p, _)) = sec.try_enter() {
            // SAFETY (model): valid between try_enter and leave.
            let v = unsafe { &*p }.data.with(|d| unsafe { *d });
            assert!(v == 1 || v == 3, "payload read outside its section: {v}");
            sec.leave();
            helped += 1;
            continue;
        }
        if stop.load(Ordering::Acquire) {
            return helped;
        }
        let t = ec.prepare();
        if stop.load(Ordering::Acquire) || sec.joinable() {
            ec.cancel(t);
            continue;
        }
        ec.wait(t);
    }
}

/// The owner's side of one loop: publish, notify, close, wait, release.
fn section_loop(ec: &EventCount, sec: &Section<Payload>, payload: &Payload, value: usize) {
    payload.data.with_mut(|d| unsafe { *d = value });
    if sec.try_open(payload, 1) {
        ec.notify(1);
        // No spinning: go straight to the parked wait.
        sec.close_and_wait(0);
        assert_eq!(sec.inside(), 0);
        sec.release();
    }
    // After the join nobody may read it: loom checks this write.
    payload.data.with_mut(|d| unsafe { *d = value + 1 });
}

/// One helper thread (`section_worker`) beside an owner that runs one loop
/// through the slot per value, each with its own payload; then the helper is
/// stopped. The helper joins each loop at most once.
fn run_section_loops(values: &[usize]) {
    let ec = Arc::new(EventCount::new());
    let sec = Arc::new(Section::<Payload>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let (ec2, sec2, stop2) = (ec.clone(), sec.clone(), stop.clone());
    let w = loom::thread::spawn(move || section_worker(&ec2, &sec2, &stop2));
    // Every payload lives until the end, as a host's loop state may.
    let payloads: Vec<Payload> = values
        .iter()
        .map(|_| Payload {
            data: UnsafeCell::new(0),
        })
        .collect();
    for (payload, &value) in payloads.iter().zip(values) {
        section_loop(&ec, &sec, payload, value);
    }
    stop.store(true, Ordering::Release);
    ec.notify(usize::MAX);
    assert!(w.join().unwrap() <= values.len());
}

#[test]
fn section_join_and_owner_wakeup() {
    // One helper that may join, sleep, or miss the section; the owner parks
    // in close_and_wait if the helper is inside: it must be woken, and the
    // payload must not be touched after the join.
    builder().check(|| run_section_loops(&[1]));
}

#[test]
fn section_reopened_for_a_second_loop() {
    // Two loops in a row through the same slot with different payloads: a
    // helper that read the gate of the first loop must never use the first
    // payload after that loop's join, nor join the second one twice.
    builder().check(|| run_section_loops(&[1, 3]));
}

#[test]
fn section_has_one_owner() {
    // Two threads start loops at once: exactly one of them owns the slot
    // until it releases it.
    builder().check(|| {
        let sec = Arc::new(Section::<Payload>::new());
        let owners = Arc::new(AtomicUsize::new(0));
        let (sec2, owners2) = (sec.clone(), owners.clone());
        let other = loom::thread::spawn(move || {
            let p = Payload {
                data: UnsafeCell::new(0),
            };
            if sec2.try_open(&p, 1) {
                assert_eq!(owners2.fetch_add(1, Ordering::AcqRel), 0);
                owners2.fetch_sub(1, Ordering::AcqRel);
                sec2.close_and_wait(0);
                sec2.release();
            }
        });
        let p = Payload {
            data: UnsafeCell::new(0),
        };
        if sec.try_open(&p, 1) {
            assert_eq!(owners.fetch_add(1, Ordering::AcqRel), 0);
            owners.fetch_sub(1, Ordering::AcqRel);
            sec.close_and_wait(0);
            sec.release();
        }
        other.join().unwrap();
    });
}
