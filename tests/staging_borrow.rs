//! A device image the caller lends, moving a maker between images, and
//! rebinding its device between runs.
mod staging_support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use leanrt::device::Device;
use leanrt::staging::Maker;
use leanrt::staging::{lrt_upload_policy, BorrowedImage, MakerConfig, MakerV1};
use leanrt::{ErrorKind, Result};
use staging_support::*;

const W: u64 = 64;

fn cfg(policy: lrt_upload_policy) -> MakerConfig {
    MakerConfig {
        task_window: W,
        policy,
        ..MakerConfig::default()
    }
}

/// A region of the fake device the test owns.
fn region(dev: &FakeDevice, len: usize) -> BorrowedImage {
    let ptr = dev.device().alloc(len).expect("region").cast();
    BorrowedImage { ptr, len }
}

/// One run of `n` tasks, task k's first scalar = `tag + k`.
fn run(m: &mut MakerV1, n: usize, tag: u64) {
    m.begin_run().unwrap();
    for k in 0..n {
        let s = m.claim_slot().unwrap();
        // SAFETY: a claimed slot's payload, ours until upload.
        unsafe {
            (*s.payload).scalar_count = 1;
            (*s.payload).scalars[0] = tag + k as u64;
        }
    }
    assert_eq!(m.upload().unwrap().total_tasks, n as i32);
}

/// Asserts that the image at `image` holds the run `run` shipped.
fn holds_run(image: *mut std::ffi::c_void, n: usize, tag: u64) {
    let h = device_header(image);
    assert_eq!(h.current_task_index, n as i32);
    assert_eq!(h.orchestrator_done, 1);
    for k in 0..n {
        assert_eq!(device_task(&h, k).content.scalars, vec![tag + k as u64]);
    }
}

#[test]
fn a_borrowed_image_receives_the_uploads_and_is_never_freed() {
    for policy in [
        lrt_upload_policy::LRT_UPLOAD_FULL,
        lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        lrt_upload_policy::LRT_UPLOAD_COMPACT,
        lrt_upload_policy::LRT_UPLOAD_AUTO,
    ] {
        let dev = FakeDevice::new();
        let end = leanrt::staging::segment_offsets(W).unwrap().end as usize;
        let img = region(&dev, end);
        let mallocs = dev.calls(Op::Malloc);
        let mut m = MakerV1::with_image(&cfg(policy), dev.device(), img).unwrap();
        assert_eq!(
            dev.calls(Op::Malloc),
            mallocs,
            "{policy:?}: nothing allocated"
        );
        assert_eq!(m.device_image(), img.ptr);
        run(&mut m, 5, 100);
        holds_run(img.ptr, 5, 100);
        assert_eq!(m.read_status().unwrap(), 0);
        drop(m);
        assert_eq!(
            dev.calls(Op::Free),
            0,
            "{policy:?}: a borrowed image is not freed"
        );
        assert_eq!(dev.live_count(), 1);
        dev.assert_clean(&format!("{policy:?}"));
    }
}

#[test]
fn a_borrowed_image_must_hold_the_image() {
    let dev = FakeDevice::new();
    let end = leanrt::staging::segment_offsets(W).unwrap().end as usize;
    let small = region(&dev, end - 1);
    let e = MakerV1::with_image(
        &cfg(lrt_upload_policy::LRT_UPLOAD_BOUNDED),
        dev.device(),
        small,
    )
    .err()
    .unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains(&format!("{}", end - 1)), "{e}");
    assert!(e.message().contains(&format!("{end}")), "{e}");
    let null = BorrowedImage {
        ptr: std::ptr::null_mut(),
        len: end,
    };
    let e = MakerV1::with_image(
        &cfg(lrt_upload_policy::LRT_UPLOAD_BOUNDED),
        dev.device(),
        null,
    )
    .err()
    .unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(dev.calls(Op::Malloc), 1, "only the test's region");
}

#[test]
fn a_maker_moves_between_images_between_runs() {
    let dev = FakeDevice::new();
    let mut m = MakerV1::new(&cfg(lrt_upload_policy::LRT_UPLOAD_BOUNDED), dev.device()).unwrap();
    let own = m.device_image();
    let end = m.segments().end as usize;
    let (a, b) = (region(&dev, end), region(&dev, end + 64));
    run(&mut m, 3, 10);
    holds_run(own, 3, 10);

    m.set_device_image(Some(a)).unwrap();
    assert_eq!(m.device_image(), a.ptr);
    assert_eq!(m.read_status().unwrap_err().kind(), ErrorKind::State);
    run(&mut m, 7, 20);
    holds_run(a.ptr, 7, 20);
    holds_run(own, 3, 10); // the image it left is not touched

    // Not in the middle of a run: refused, nothing changes.
    m.begin_run().unwrap();
    m.claim_slot().unwrap();
    let e = m.set_device_image(Some(b)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
    assert_eq!(m.device_image(), a.ptr);
    assert_eq!(m.upload().unwrap().total_tasks, 1);

    // An abandoned run (the host's orchestration failed): abort it, and the
    // maker may move; claims and uploads wait for the next begin_run.
    m.begin_run().unwrap();
    m.claim_slot().unwrap();
    m.abort_run();
    assert_eq!(m.claim_slot().unwrap_err().kind(), ErrorKind::State);
    assert_eq!(m.upload().unwrap_err().kind(), ErrorKind::State);
    assert_eq!(m.read_status().unwrap(), 0, "the last upload's status");
    m.abort_run(); // no open run: nothing to do

    m.set_device_image(Some(b)).unwrap();
    run(&mut m, 2, 30);
    holds_run(b.ptr, 2, 30);
    let too_small = BorrowedImage { len: end - 1, ..a };
    assert_eq!(
        m.set_device_image(Some(too_small)).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(m.device_image(), b.ptr);
    m.set_device_image(None).unwrap();
    assert_eq!(m.device_image(), own);
    run(&mut m, 4, 40);
    holds_run(own, 4, 40);
    drop(m);
    assert_eq!(
        dev.calls(Op::Free),
        1,
        "only the maker's own image is freed"
    );

    // A maker that only borrows has no image of its own to return to.
    let mut m =
        MakerV1::with_image(&cfg(lrt_upload_policy::LRT_UPLOAD_BOUNDED), dev.device(), a).unwrap();
    let e = m.set_device_image(None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(m.device_image(), a.ptr);
    dev.assert_clean("moves");
}

/// A device that counts the calls it forwards.
struct Via {
    inner: Arc<dyn Device>,
    calls: Arc<AtomicU64>,
}

impl Device for Via {
    fn alloc(&self, size: usize) -> Result<*mut u8> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.alloc(size)
    }
    unsafe fn free(&self, ptr: *mut u8) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded under the trait's contract.
        unsafe { self.inner.free(ptr) }
    }
    unsafe fn copy_to(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded under the trait's contract.
        unsafe { self.inner.copy_to(dst, src, len) }
    }
    unsafe fn copy_from(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded under the trait's contract.
        unsafe { self.inner.copy_from(dst, src, len) }
    }
}

#[test]
fn the_device_is_rebound_between_runs_and_the_image_freed_by_its_allocator() {
    let dev = FakeDevice::new();
    let (first, second) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let via = |calls: &Arc<AtomicU64>| -> Arc<dyn Device> {
        Arc::new(Via {
            inner: dev.device(),
            calls: Arc::clone(calls),
        })
    };
    let mut m = MakerV1::new(&cfg(lrt_upload_policy::LRT_UPLOAD_BOUNDED), via(&first)).unwrap();
    run(&mut m, 3, 1);
    let before = first.load(Ordering::Relaxed);
    m.set_device(via(&second)).unwrap();
    run(&mut m, 5, 2);
    assert_eq!(m.read_status().unwrap(), 0);
    assert_eq!(
        first.load(Ordering::Relaxed),
        before,
        "nothing through the old table"
    );
    assert!(
        second.load(Ordering::Relaxed) >= 5,
        "the copies and read-back"
    );
    holds_run(m.device_image(), 5, 2);

    // Not in the middle of a run.
    m.begin_run().unwrap();
    assert_eq!(
        m.set_device(via(&first)).unwrap_err().kind(),
        ErrorKind::State
    );
    m.upload().unwrap();
    assert_eq!(first.load(Ordering::Relaxed), before);

    let second_before = second.load(Ordering::Relaxed);
    drop(m);
    assert_eq!(
        first.load(Ordering::Relaxed),
        before + 1,
        "freed by its allocator"
    );
    assert_eq!(second.load(Ordering::Relaxed), second_before);
    assert_eq!(dev.live_count(), 0);
    dev.assert_clean("rebind");
}
