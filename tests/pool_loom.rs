//! Loom models of the pool engine's protocols, compiled here against loom
//! through the same `sync` facade names: the event count
//! (`src/pool/engine/sleep.rs`), the loop gate (`gate.rs`) on both paths a
//! loop takes (the broadcast slot, `slot.rs`, and the queue fallback), and
//! a parallel section's join/stay/leave protocol. The shipped files are
//! the ones model-checked.
//!
//! Run (CI does): `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
//! cargo test -p leanrt --release --test pool_loom`
//!
//! The sleep models are the worker's sleep sequence (check for work,
//! prepare, re-check, cancel or wait) against producers that publish work
//! and then notify. A lost wake-up would leave a thread blocked forever,
//! which loom reports as a deadlock in some interleaving; a use of a loop's
//! state outside its gate is a data race on a loom `UnsafeCell`. The last
//! model compiles `gate.rs` a second time against a deliberately broken
//! facade (its mutex excludes nothing); it is ignored in a plain run, and
//! `the_broken_gate_fails_with_a_deadlock` runs it in a child process and
//! passes only if loom reports the lost wake-up as a deadlock, which shows
//! the models can fail. The caller count (`callers.rs`) and the CPU share
//! (`budget.rs`, with the worker it stops from spinning) have broken twins
//! checked the same way, and so does the timed sleep (`wait_until`, the
//! adaptive budget's timers): a worker whose timer ran out and that sleeps
//! again without a re-scan, and the wake of `enable_spinning`: a worker
//! that goes to sleep without re-scanning the count of enables.
#![cfg(loom)]

mod sync {
    pub use crossbeam_utils::CachePadded;
    pub use loom::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
    pub use loom::sync::{Condvar, Mutex, MutexGuard};

    pub fn lock(m: &Mutex<()>) -> MutexGuard<'_, ()> {
        m.lock().unwrap()
    }

    pub fn wait<'a>(cv: &Condvar, g: MutexGuard<'a, ()>) -> MutexGuard<'a, ()> {
        cv.wait(g).unwrap()
    }

    /// The model's timer has always fired: a timed wait gives up at once,
    /// at whatever point of the other threads' steps it is reached.
    pub type Deadline = std::time::Instant;

    pub fn wait_until<'a>(
        _cv: &Condvar,
        g: MutexGuard<'a, ()>,
        _deadline: Deadline,
    ) -> (MutexGuard<'a, ()>, bool) {
        (g, true)
    }

    pub fn spin_hint() {
        loom::hint::spin_loop();
    }

    pub fn yield_now() {
        loom::thread::yield_now();
    }
}

#[allow(dead_code)]
#[path = "../src/pool/engine/sleep.rs"]
mod sleep;

#[allow(dead_code)]
#[path = "../src/pool/engine/gate.rs"]
mod gate;

#[allow(dead_code)]
#[path = "../src/pool/engine/slot.rs"]
mod slot;

#[allow(dead_code)]
#[path = "../src/pool/engine/callers.rs"]
mod callers;

#[allow(dead_code)]
#[path = "../src/pool/engine/budget.rs"]
mod budget;

/// `budget.rs` again, against a facade whose updates are a load and a
/// store.
#[path = "pool_loom/broken_budget.rs"]
mod broken_budget;

/// `gate.rs` again, against a facade whose mutex excludes nothing.
#[path = "pool_loom/broken.rs"]
mod broken;

/// `callers.rs` again, against a facade whose `SeqCst` is `Relaxed`.
#[path = "pool_loom/broken_callers.rs"]
mod broken_callers;

use gate::Gate;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use sleep::EventCount;
use slot::Slot;

/// Takes one unit of work if there is any (a stand-in for a queue pop).
fn take(work: &AtomicUsize) -> bool {
    work.fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| w.checked_sub(1))
        .is_ok()
}

/// The worker's loop: consume `need` units, sleeping when there are none.
fn worker(ec: &EventCount, work: &AtomicUsize, need: usize) {
    sleeper(ec, work, need, None);
}

/// [`worker`], with `timer` Some(rescan): a timer on its first sleep
/// (`wait_until`, whose timer the model fires at once). After the timer,
/// back to the top (take, prepare, re-take) as `worker.rs` does; `rescan`
/// false is the broken twin, which goes straight back to sleep on a new
/// ticket.
fn sleeper(ec: &EventCount, work: &AtomicUsize, need: usize, mut timer: Option<bool>) {
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
        match timer.take() {
            None => ec.wait(ticket),
            Some(rescan) => {
                if !ec.wait_until(ticket, std::time::Instant::now()) && !rescan {
                    let again = ec.prepare();
                    ec.wait(again);
                }
            }
        }
    }
}

/// One sleeper (`timer` as for [`sleeper`]) against a producer that
/// publishes a unit and notifies: the unit taken, nobody left registered.
/// With a timer, it runs out while the producer publishes and notifies.
fn one_unit_against_a_producer(timer: Option<bool>) {
    builder().check(move || {
        let ec = Arc::new(EventCount::new());
        let work = Arc::new(AtomicUsize::new(0));
        let (ec2, work2) = (ec.clone(), work.clone());
        let producer = loom::thread::spawn(move || {
            work2.fetch_add(1, Ordering::Release);
            ec2.notify(1);
        });
        sleeper(&ec, &work, 1, timer);
        producer.join().unwrap();
        assert_eq!(ec.waiters(), 0);
        assert_eq!(work.load(Ordering::Relaxed), 0);
    });
}

#[test]
fn a_timed_out_waiter_rescans_and_takes_the_work() {
    one_unit_against_a_producer(Some(true));
}

/// The expected failure of the timed wait's broken twin: a worker that
/// treats its timer as "nothing to do" and sleeps again without the
/// re-scan misses work published while its first ticket still counted it
/// (the notify's signal went to a wait it had left), and blocks forever.
#[test]
fn the_timer_without_a_rescan_fails_with_a_deadlock() {
    broken_model_deadlocks(
        "broken_timer_sleeps_again_without_a_rescan",
        "the timed sleep without a re-scan",
    );
}

#[test]
#[ignore = "deliberately broken worker: must fail (deadlock); run by the_timer_without_a_rescan_fails_with_a_deadlock"]
fn broken_timer_sleeps_again_without_a_rescan() {
    one_unit_against_a_producer(Some(false));
}

/// A worker's sleep sequence around `enable_spinning` (`worker.rs`): it
/// reads the count of waking enables, then its spin finds spinning not
/// allowed (no request open) and it prepares to sleep; the re-scan after
/// `prepare` compares the count (`rescan` false: the broken twin, which
/// does not). Returns once it saw the request, as a worker that spins for
/// it. Against it, `enable_spinning`'s steps: the request opened, the
/// count bumped, every sleeper notified.
fn a_request_opened_while_a_worker_goes_to_sleep(rescan: bool) {
    builder().check(move || {
        let ec = Arc::new(EventCount::new());
        let requests = Arc::new(AtomicUsize::new(0));
        let enables = Arc::new(AtomicUsize::new(0));
        let (ec2, requests2, enables2) = (ec.clone(), requests.clone(), enables.clone());
        let worker = loom::thread::spawn(move || loop {
            let seen = enables2.load(Ordering::Acquire);
            if requests2.load(Ordering::Relaxed) > 0 {
                return;
            }
            let ticket = ec2.prepare();
            if rescan && enables2.load(Ordering::Relaxed) != seen {
                ec2.cancel(ticket);
                continue;
            }
            ec2.wait(ticket);
        });
        requests.fetch_add(1, Ordering::Relaxed);
        enables.fetch_add(1, Ordering::Release);
        ec.notify(usize::MAX);
        worker.join().unwrap();
        assert_eq!(ec.waiters(), 0);
    });
}

#[test]
fn a_worker_going_to_sleep_sees_the_request_that_opened() {
    a_request_opened_while_a_worker_goes_to_sleep(true);
}

/// The expected failure of its broken twin: a worker whose spin found no
/// request, and that the enable's notify reached before its `prepare`,
/// sleeps through the request (here: for ever).
#[test]
fn a_sleep_without_the_enable_count_fails_with_a_deadlock() {
    broken_model_deadlocks(
        "broken_sleep_without_the_enable_count",
        "the sleep without the enable count",
    );
}

#[test]
#[ignore = "deliberately broken worker: must fail (deadlock); run by a_sleep_without_the_enable_count_fails_with_a_deadlock"]
fn broken_sleep_without_the_enable_count() {
    a_request_opened_while_a_worker_goes_to_sleep(false);
}

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b
}

#[test]
fn one_waiter_one_producer() {
    one_unit_against_a_producer(None);
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

/// Cascade wake: the producer publishes two units but wakes only one
/// sleeper; a worker that wakes while units remain wakes one more. Both
/// sleepers must end up with a unit (without the cascade line, loom finds
/// the second one blocked forever).
#[test]
fn cascade_wake_reaches_the_second_sleeper() {
    builder().check(|| {
        let ec = Arc::new(EventCount::new());
        let work = Arc::new(AtomicUsize::new(0));
        let mut workers = Vec::new();
        for _ in 0..2 {
            let (ec, work) = (ec.clone(), work.clone());
            workers.push(loom::thread::spawn(move || loop {
                if take(&work) {
                    return;
                }
                let t = ec.prepare();
                if take(&work) {
                    ec.cancel(t);
                    return;
                }
                ec.wait(t);
                if work.load(Ordering::Acquire) > 0 {
                    ec.notify(1); // the cascade
                }
            }));
        }
        work.fetch_add(2, Ordering::Release);
        ec.notify(1);
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(work.load(Ordering::Relaxed), 0);
    });
}

/// A loop's shared state in the gate models: `data` is written by the
/// owner before publishing and after the join, read by helpers in between;
/// loom reports a data race if a helper's read is not ordered between them.
struct Payload {
    data: UnsafeCell<usize>,
}

/// A pool worker in the slot models: join the published section if it
/// admits helpers, else sleep through the event count, until `stop`.
fn slot_worker(ec: &EventCount, sec: &Slot<Payload>, stop: &AtomicBool) -> usize {
    let mut helped = 0;
    loop {
        if let Some((p, _, _)) = sec.try_enter() {
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
fn slot_loop(ec: &EventCount, sec: &Slot<Payload>, payload: &Payload, value: usize) {
    payload.data.with_mut(|d| unsafe { *d = value });
    if sec.try_open(payload, 1, 0) {
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
fn run_slot_loops(values: &[usize]) {
    let ec = Arc::new(EventCount::new());
    let sec = Arc::new(Slot::<Payload>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let (ec2, sec2, stop2) = (ec.clone(), sec.clone(), stop.clone());
    let w = loom::thread::spawn(move || slot_worker(&ec2, &sec2, &stop2));
    // Every payload lives until the end, as a host's loop state may.
    let payloads: Vec<Payload> = values
        .iter()
        .map(|_| Payload {
            data: UnsafeCell::new(0),
        })
        .collect();
    for (payload, &value) in payloads.iter().zip(values) {
        slot_loop(&ec, &sec, payload, value);
    }
    stop.store(true, Ordering::Release);
    ec.notify(usize::MAX);
    assert!(w.join().unwrap() <= values.len());
}

#[test]
fn slot_join_and_owner_wakeup() {
    // One helper that may join, sleep, or miss the section; the owner parks
    // in close_and_wait if the helper is inside: it must be woken, and the
    // payload must not be touched after the join.
    builder().check(|| run_slot_loops(&[1]));
}

#[test]
fn slot_reopened_for_a_second_loop() {
    // Two loops in a row through the same slot with different payloads: a
    // helper that read the gate of the first loop must never use the first
    // payload after that loop's join, nor join the second one twice.
    builder().check(|| run_slot_loops(&[1, 3]));
}

#[test]
fn slot_has_one_owner() {
    // Two threads start loops at once: exactly one of them owns the slot
    // until it releases it.
    builder().check(|| {
        let sec = Arc::new(Slot::<Payload>::new());
        let owners = Arc::new(AtomicUsize::new(0));
        let (sec2, owners2) = (sec.clone(), owners.clone());
        let other = loom::thread::spawn(move || {
            let p = Payload {
                data: UnsafeCell::new(0),
            };
            if sec2.try_open(&p, 1, 0) {
                assert_eq!(owners2.fetch_add(1, Ordering::AcqRel), 0);
                owners2.fetch_sub(1, Ordering::AcqRel);
                sec2.close_and_wait(0);
                sec2.release();
            }
        });
        let p = Payload {
            data: UnsafeCell::new(0),
        };
        if sec.try_open(&p, 1, 0) {
            assert_eq!(owners.fetch_add(1, Ordering::AcqRel), 0);
            owners.fetch_sub(1, Ordering::AcqRel);
            sec.close_and_wait(0);
            sec.release();
        }
        other.join().unwrap();
    });
}

/// The queue fallback: the owner makes a gate for one loop, already open
/// for two helpers, and hands it out in two `Help` jobs (here: two
/// threads); each helper that enters reads the loop's state and leaves; the
/// owner closes the gate, waits, and then reuses the state. A helper that
/// comes after the close does nothing.
#[test]
fn queue_path_gate() {
    builder().check(|| {
        let payload = Arc::new(Payload {
            data: UnsafeCell::new(1),
        });
        let g = Arc::new(Gate::opened(2));
        let mut helpers = Vec::new();
        for _ in 0..2 {
            let (g, payload) = (g.clone(), payload.clone());
            helpers.push(loom::thread::spawn(move || {
                if let Some(p) = g.try_enter() {
                    assert!(p == 1 || p == 2);
                    // SAFETY (model): inside the gate.
                    let v = payload.data.with(|d| unsafe { *d });
                    assert_eq!(v, 1, "state read outside its loop");
                    g.leave();
                }
            }));
        }
        g.close_and_wait(0);
        assert_eq!(g.inside(), 0);
        // After the join nobody may read it: loom checks this write.
        payload.data.with_mut(|d| unsafe { *d = 2 });
        for h in helpers {
            h.join().unwrap();
        }
    });
}

/// A parallel section: the owner takes the slot once and runs two loops
/// through it; a worker that joins the first (as a team member) stays with
/// the section between the loops, waiting on the team event count, and
/// goes back when the section ends. No lost wake-up of the member (between
/// loops, and at the end) or of the owner, and no use of a loop's state
/// outside its loop.
#[test]
fn section_team_stays_between_loops() {
    const SECTION: u64 = 7;
    builder().check(|| {
        let team_event = Arc::new(EventCount::new());
        let slot = Arc::new(Slot::<Payload>::new());
        let section_id = Arc::new(loom::sync::atomic::AtomicU64::new(0));
        let team = Arc::new(AtomicUsize::new(0));
        assert!(slot.try_own());
        team.store(0, Ordering::Relaxed);
        section_id.store(SECTION, Ordering::Release);
        let member = {
            let (ev, slot, id, team) = (
                team_event.clone(),
                slot.clone(),
                section_id.clone(),
                team.clone(),
            );
            loom::thread::spawn(move || {
                let mut mine = false;
                let mut helped = 0;
                loop {
                    if let Some((p, _, tag)) = slot.try_enter() {
                        assert_eq!(tag, SECTION);
                        if !mine {
                            let cap = slot.cap();
                            mine = team
                                .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |t| {
                                    (t < cap).then_some(t + 1)
                                })
                                .is_ok();
                        }
                        if mine {
                            // SAFETY (model): inside the gate.
                            let v = unsafe { &*p }.data.with(|d| unsafe { *d });
                            assert!(v == 1 || v == 3, "state read outside its loop: {v}");
                            helped += 1;
                        }
                        slot.leave();
                        continue;
                    }
                    if id.load(Ordering::Acquire) != SECTION {
                        return helped;
                    }
                    let t = ev.prepare();
                    if slot.joinable() || id.load(Ordering::Acquire) != SECTION {
                        ev.cancel(t);
                        continue;
                    }
                    ev.wait(t);
                }
            })
        };
        let payloads = [1usize, 3].map(|v| Payload {
            data: UnsafeCell::new(v),
        });
        for p in &payloads {
            slot.publish(p, 1, SECTION);
            team_event.notify(usize::MAX);
            slot.close_and_wait(0);
            assert_eq!(slot.inside(), 0);
            p.data.with_mut(|d| unsafe { *d += 1 });
        }
        // End of the section.
        section_id.store(0, Ordering::Release);
        slot.release();
        team_event.notify(usize::MAX);
        assert!(member.join().unwrap() <= 2);
    });
}

/// The expected failure: runs [`broken_gate_loses_the_owner_wakeup`] in a
/// child process (this test binary, that one test alone) and passes only if
/// it fails with loom's deadlock report. A child, because loom aborts the
/// process while unwinding the blocked execution, so the model cannot be a
/// `should_panic` test.
#[test]
fn the_broken_gate_fails_with_a_deadlock() {
    broken_model_deadlocks("broken_gate_loses_the_owner_wakeup", "the broken gate");
}

/// [`broken_model_output`] for a model whose failure is a lost wake-up:
/// loom's deadlock report.
fn broken_model_deadlocks(name: &str, what: &str) {
    let text = broken_model_output(name, what);
    assert!(
        text.contains("deadlock"),
        "{what} failed, but not with loom's deadlock report:\n{text}"
    );
}

/// Runs the ignored model `name` in a child process (this test binary, that
/// one test alone), checks that it ran and failed, and returns what it
/// printed. `what` names the broken variant in the failure messages.
fn broken_model_output(name: &str, what: &str) -> String {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            name,
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .expect("run the broken model in a child");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("running 1 test"),
        "the child did not run {what}:\n{text}"
    );
    assert!(
        !out.status.success(),
        "{what} passed the model: the models cannot fail\n{text}"
    );
    text
}

/// The broken gate (see the module docs) must fail the model: the owner
/// can block after the last helper's signal went out, forever. Loom reports
/// "deadlock; threads = [(Id(0), Blocked ..), (Id(1), Terminated)]".
/// Ignored in a plain run; [`the_broken_gate_fails_with_a_deadlock`] runs
/// it in a child process and requires that failure.
#[test]
#[ignore = "deliberately broken gate: must fail (deadlock); run by the_broken_gate_fails_with_a_deadlock"]
fn broken_gate_loses_the_owner_wakeup() {
    // The losing interleaving needs three preemptions (helper enters; owner
    // closes and marks itself parked; helper leaves and signals; owner
    // blocks): explore without a bound, the model is small.
    let mut b = loom::model::Builder::new();
    b.preemption_bound = None;
    b.check(|| {
        let g = Arc::new(broken::gate::Gate::opened(1));
        let g2 = g.clone();
        let h = loom::thread::spawn(move || {
            if g2.try_enter().is_some() {
                g2.leave();
            }
        });
        g.close_and_wait(0);
        h.join().unwrap();
    });
}

/// One caller and one destroy on the caller count of `$callers` (the
/// module: the shipped one or its broken twin): the caller enters and
/// reads the pool's state, the destroy frees it (writes) only if its close
/// succeeded. `twice`: the caller enters twice in a row.
macro_rules! close_against_callers {
    ($callers:path, $twice:expr) => {{
        use $callers as c;
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(|| {
            let count = Arc::new(c::Callers::new());
            let state = Arc::new(UnsafeCell::new(7usize));
            let (count2, state2) = (count.clone(), state.clone());
            let caller = loom::thread::spawn(move || {
                for _ in 0..if $twice { 2 } else { 1 } {
                    match count2.enter(1) {
                        // SAFETY: loom checks the access itself.
                        Some(_inside) => assert_eq!(state2.with(|p| unsafe { *p }), 7),
                        None => return,
                    }
                }
            });
            if count.close().is_ok() {
                // The destroy: the state is freed.
                // SAFETY: loom checks the access itself.
                state.with_mut(|p| unsafe { *p = 0 });
            }
            caller.join().unwrap();
        });
    }};
}

#[test]
fn a_successful_close_excludes_callers() {
    close_against_callers!(callers, false);
}

#[test]
fn a_refused_close_does_not_refuse_a_caller() {
    // A caller that entered before the close, twice: its second entry
    // after a refused close must get in (it holds no guard then, so the
    // close may also succeed in between: then it is refused, never inside
    // a freed pool).
    close_against_callers!(callers, true);
}

/// The broken caller count must fail the model (see the module docs).
#[test]
#[ignore = "deliberately broken caller count: must fail (race); run by the_broken_close_fails_with_a_race"]
fn broken_close_lets_a_caller_in() {
    close_against_callers!(broken_callers::callers, false);
}

/// The expected failure: runs [`broken_close_lets_a_caller_in`] in a child
/// (as `the_broken_gate_fails_with_a_deadlock` does) and passes only if
/// loom reports a race on the pool's state.
#[test]
fn the_broken_close_fails_with_a_race() {
    let text = broken_model_output("broken_close_lets_a_caller_in", "the broken caller count");
    assert!(
        text.contains("Causality violation") || text.contains("data race"),
        "the broken caller count failed, but not with loom's race report:\n{text}"
    );
}

/// The CPU share (`budget.rs`) with the worker it governs, on a share of
/// `$budget` (the module: the shipped one or its broken twin) of 2 CPUs:
/// two callers each start a loop that wants one helper; a caller invited
/// a helper publishes a unit of work and notifies, then takes the unit
/// back itself if no helper came (the caller always takes part). The
/// worker takes published units (counted busy meanwhile), spins while the
/// share leaves a CPU free, and otherwise sleeps through the event count.
/// Checked: nobody blocks forever (a worker that stopped spinning because
/// the CPUs were claimed is still woken by the next invitation, or by the
/// shutdown), every unit is run once, and once everyone is done the share
/// is empty again.
macro_rules! cpu_share_model {
    ($budget:path) => {{
        use $budget as b;
        builder().check(|| {
            let share = Arc::new(b::CpuShare::new(2));
            let ec = Arc::new(EventCount::new());
            let work = Arc::new(AtomicUsize::new(0));
            let ran = Arc::new(AtomicUsize::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            let caller = {
                let (share, ec, work, ran) = (share.clone(), ec.clone(), work.clone(), ran.clone());
                move || {
                    if share.claim(true, None, 0, 1).expect("no census, no crowd") > 0 {
                        work.fetch_add(1, Ordering::Release);
                        ec.notify(1);
                        if take(&work) {
                            ran.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    share.unclaim(0);
                }
            };
            let worker = {
                let (share, ec, work, ran, stop) = (
                    share.clone(),
                    ec.clone(),
                    work.clone(),
                    ran.clone(),
                    stop.clone(),
                );
                loom::thread::spawn(move || loop {
                    if take(&work) {
                        share.busy();
                        ran.fetch_add(1, Ordering::Relaxed);
                        share.idle();
                        continue;
                    }
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    if !share.full(0) {
                        // One poll of a spin; then the sleep path.
                        loom::hint::spin_loop();
                        if take(&work) {
                            share.busy();
                            ran.fetch_add(1, Ordering::Relaxed);
                            share.idle();
                            continue;
                        }
                    }
                    let t = ec.prepare();
                    if stop.load(Ordering::Acquire) || work.load(Ordering::Acquire) > 0 {
                        ec.cancel(t);
                        continue;
                    }
                    ec.wait(t);
                })
            };
            let other = loom::thread::spawn(caller.clone());
            caller();
            other.join().unwrap();
            stop.store(true, Ordering::Release);
            ec.notify(usize::MAX);
            worker.join().unwrap();
            assert_eq!(
                work.load(Ordering::Relaxed),
                0,
                "a published unit was never run"
            );
            assert_eq!(
                share.counts(),
                (0, 0),
                "the CPU share is not empty once every caller and helper is gone"
            );
            let _ = ran.load(Ordering::Relaxed);
        });
    }};
}

#[test]
fn cpu_share_balances_and_keeps_wakeups() {
    cpu_share_model!(budget);
}

/// The broken CPU share must fail the model (see the module docs).
#[test]
#[ignore = "deliberately broken CPU share: must fail (lost update); run by the_broken_cpu_share_fails"]
fn broken_cpu_share_loses_an_update() {
    cpu_share_model!(broken_budget::budget);
}

/// The expected failure: runs [`broken_cpu_share_loses_an_update`] in a
/// child (as `the_broken_gate_fails_with_a_deadlock` does) and passes only
/// if the model's balance check is what failed.
#[test]
fn the_broken_cpu_share_fails() {
    let text = broken_model_output("broken_cpu_share_loses_an_update", "the broken CPU share");
    assert!(
        text.contains("the CPU share is not empty"),
        "the broken CPU share failed, but not on the balance check:\n{text}"
    );
}

/// The lingers (`budget.rs`) of two callers, on `$budget` (the shipped
/// module or its broken twin): A ends a loop in epoch 0, starts its next in
/// epoch 1 (taking the linger back) and ends it in epoch 2; B ends a loop
/// in epoch 1, takes it back in epoch 2 and ends again in epoch 2, which
/// reuses A's first bucket. In every interleaving, once both are done:
/// both lingers of epoch 2 count, nothing else does (A's late take-back
/// of epoch 0 must not touch the reused bucket, concurrent additions must
/// not be lost), and no caller is left in the word.
macro_rules! linger_model {
    ($budget:path) => {{
        use $budget as b;
        builder().check(|| {
            let share = Arc::new(b::CpuShare::new(2));
            let other = {
                let share = share.clone();
                loom::thread::spawn(move || {
                    share.claim(true, None, 1, 1);
                    let l = share.unclaim(1);
                    share.claim(true, Some(l), 2, 1);
                    share.unclaim(2)
                })
            };
            share.claim(true, None, 0, 1);
            let l = share.unclaim(0);
            share.claim(true, Some(l), 1, 1);
            let a = share.unclaim(2);
            let b_end = other.join().unwrap();
            assert_eq!(
                (a.0, b_end.0),
                (2, 2),
                "a linger recorded in the wrong epoch"
            );
            assert_eq!(
                share.lingering(2),
                2,
                "the lingers of epoch 2 are miscounted"
            );
            assert_eq!(share.counts(), (0, 0), "a caller is left in the share");
        });
    }};
}

#[test]
fn linger_counts_each_caller_once() {
    linger_model!(budget);
}

/// The broken lingers must fail the model (see the module docs).
#[test]
#[ignore = "deliberately broken lingers: must fail (lost update); run by the_broken_linger_fails"]
fn broken_linger_loses_an_update() {
    linger_model!(broken_budget::budget);
}

/// The expected failure: runs [`broken_linger_loses_an_update`] in a child
/// (as `the_broken_gate_fails_with_a_deadlock` does) and passes only if
/// the model's count check is what failed.
#[test]
fn the_broken_linger_fails() {
    let text = broken_model_output("broken_linger_loses_an_update", "the broken lingers");
    assert!(
        text.contains("miscounted") || text.contains("a caller is left"),
        "the broken lingers failed, but not on a count check:\n{text}"
    );
}

/// The census (`budget.rs`) of three caller threads on two CPUs, on
/// `$budget` (the shipped module or its broken twin): a stale enlistment
/// of census epoch 1 sits in bucket 1; two threads enlist in epoch 3 at
/// once (the first to come resets that bucket) while the main thread
/// enlists in epoch 2. In every interleaving, once all are done: epoch 3
/// counts both (neither the reset nor the race loses one), the census at
/// epoch 3 is the larger of epochs 3 and 2; the main thread enlisting in
/// epoch 3 too makes three callers on two CPUs, and its loop is inline.
macro_rules! census_model {
    ($budget:path) => {{
        use $budget as b;
        builder().check(|| {
            let share = Arc::new(b::CpuShare::new(2));
            let e = |census: u64| census << b::CENSUS_SHIFT;
            // A stale enlistment in bucket 1 (epoch 1), which epoch 3
            // reuses.
            share.enlist(e(1));
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let share = share.clone();
                    loom::thread::spawn(move || {
                        share.enlist(e(3));
                        // At most two callers so far: not a crowd.
                        share.claim(true, None, e(3), 1).expect("not a crowd");
                        share.unclaim(e(3));
                    })
                })
                .collect();
            share.enlist(e(2));
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(share.census(e(3)), 2, "the census of epoch 3 is miscounted");
            // A third caller of epoch 3: more callers than CPUs, inline.
            share.enlist(e(3));
            assert_eq!(share.census(e(3)), 3, "the census of epoch 3 is miscounted");
            assert_eq!(
                share.claim(true, None, e(3), 1),
                None,
                "a crowd invited a helper"
            );
            assert_eq!(share.counts(), (0, 0), "a caller is left in the share");
        });
    }};
}

#[test]
fn census_counts_each_caller_once() {
    census_model!(budget);
}

/// The broken census must fail the model (see the module docs).
#[test]
#[ignore = "deliberately broken census: must fail (lost update); run by the_broken_census_fails"]
fn broken_census_loses_an_update() {
    census_model!(broken_budget::budget);
}

/// The expected failure: runs [`broken_census_loses_an_update`] in a child
/// and passes only if the model's count check is what failed.
#[test]
fn the_broken_census_fails() {
    let text = broken_model_output("broken_census_loses_an_update", "the broken census");
    assert!(
        text.contains("miscounted") || text.contains("a crowd"),
        "the broken census failed, but not on a count check:
{text}"
    );
}
