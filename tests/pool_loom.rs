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
    pub use loom::sync::atomic::{AtomicU64, Ordering};
    pub use loom::sync::{Condvar, Mutex, MutexGuard};

    pub fn lock(m: &Mutex<()>) -> MutexGuard<'_, ()> {
        m.lock().unwrap()
    }

    pub fn wait<'a>(cv: &Condvar, g: MutexGuard<'a, ()>) -> MutexGuard<'a, ()> {
        cv.wait(g).unwrap()
    }
}

#[allow(dead_code)]
#[path = "../src/pool/sleep.rs"]
mod sleep;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
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
