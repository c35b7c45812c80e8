//! Fuzz harness for the common part of the C ABI: `lrt_status_str`,
//! `lrt_last_error`, `lrt_version` and the device backends
//! (`lrt_host_api_host`, `lrt_host_api_cuda`, `lrt_host_api_release`).
//!
//! Random integers for every status, random buffer lengths for the error
//! message (bytes past `len` must stay untouched; the result is the full
//! length as snprintf gives it), NULL out-parameters, random device numbers,
//! repeated releases, and per-thread error messages that must not leak
//! between threads. `LEANRT_FUZZ_ITERS` / `LEANRT_FUZZ_SEED` as in the other
//! fuzz tests.
mod fuzz_common;

use std::ffi::{c_char, CStr};
use std::ptr::{null, null_mut};
use std::time::Duration;

use fuzz_common::*;
use leanrt::ffi::device as dev;
use leanrt::ffi::device::lrt_host_api as HostApi;
use leanrt::ffi::{lrt_last_error, lrt_status_str, lrt_version};

const INVALID: i32 = 1;
const UNAVAILABLE: i32 = 5;

fn empty_api() -> HostApi {
    HostApi {
        ctx: 0x1111 as *mut _,
        ops: 0x2222 as *const _,
    }
}

#[test]
fn fuzz_core_c_abi() {
    let seed = fuzz_seed("fuzz_core_c_abi", 0xc0_4e);
    let iters = fuzz_iters(20_000);
    let _dog = Watchdog::new("fuzz_core_c_abi", Duration::from_secs(60 + iters / 1000));
    let mut rng = Rng::new(seed);
    let mut calls = 0u64;
    for _ in 0..iters {
        match rng.below(6) {
            0 => {
                let raw = rng.edgy_i32();
                let p = lrt_status_str(raw);
                calls += 1;
                assert!(!p.is_null());
                // SAFETY: lrt_status_str returns a static C string.
                let s = unsafe { CStr::from_ptr(p) }.to_str().unwrap();
                if (0..=7).contains(&raw) {
                    assert!(s.starts_with("LRT_"), "{raw}: {s}");
                } else {
                    assert_eq!(s, "unknown status", "{raw}");
                }
            }
            1 => {
                // A failing call, then read its message with a random length.
                // SAFETY: NULL must be rejected.
                let st = unsafe { dev::lrt_host_api_host(null_mut()) } as i32;
                calls += 1;
                assert_eq!(st, INVALID);
                let full = last_error();
                assert!(full.starts_with("lrt_host_api_host: "), "{full}");
                let len = rng.below(full.len() as u64 + 8) as usize;
                let mut buf = vec![0x7f as c_char; len + 16];
                // SAFETY: buf is valid for len + 16 >= len bytes.
                let n = unsafe {
                    lrt_last_error(
                        if len == 0 && rng.chance(1, 2) {
                            null_mut()
                        } else {
                            buf.as_mut_ptr()
                        },
                        len,
                    )
                };
                calls += 1;
                assert_eq!(n, full.len(), "lrt_last_error returns the full length");
                if len > 0 {
                    let k = full.len().min(len - 1);
                    // SAFETY: NUL-terminated within buf.
                    let got = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes();
                    assert_eq!(got, &full.as_bytes()[..k], "truncated message");
                    assert_eq!(buf[k], 0);
                }
                assert!(
                    buf[len.max(1)..].iter().all(|&b| b == 0x7f || len == 0),
                    "wrote past len"
                );
                if len == 0 {
                    assert!(
                        buf.iter().all(|&b| b == 0x7f),
                        "len 0 wrote into the buffer"
                    );
                }
            }
            2 => {
                // SAFETY: static string.
                let v = unsafe { CStr::from_ptr(lrt_version()) }.to_str().unwrap();
                calls += 1;
                assert_eq!(v, concat!("leanrt ", env!("CARGO_PKG_VERSION")));
            }
            3 => {
                let device = rng.edgy_i32();
                let mut out = empty_api();
                let null_out = rng.chance(1, 4);
                mark_last_error();
                // SAFETY: out valid or NULL.
                let st = unsafe {
                    dev::lrt_host_api_cuda(device, if null_out { null_mut() } else { &mut out })
                } as i32;
                calls += 1;
                if null_out {
                    assert_eq!(st, INVALID);
                } else if st == 0 {
                    // A CUDA machine: a valid api, released below.
                    assert!(!out.ops.is_null());
                    // SAFETY: filled by leanrt.
                    unsafe { dev::lrt_host_api_release(&mut out) };
                    calls += 1;
                    assert!(
                        out.ops.is_null() && out.ctx.is_null(),
                        "release clears the api"
                    );
                } else {
                    assert!(st == UNAVAILABLE || st == INVALID, "cuda({device}): {st}");
                    assert_eq!(
                        (out.ctx as usize, out.ops as usize),
                        (0x1111, 0x2222),
                        "out written on failure"
                    );
                    assert_error_names("lrt_host_api_cuda", "no CUDA");
                }
            }
            4 => {
                let mut out = empty_api();
                // SAFETY: valid out.
                let st = unsafe { dev::lrt_host_api_host(&mut out) } as i32;
                calls += 1;
                assert_eq!(st, 0, "lrt_host_api_host: {}", last_error());
                assert!(!out.ops.is_null());
                // SAFETY: a table filled by leanrt.
                let ops = unsafe { &*out.ops };
                assert!(
                    ops.device_malloc.is_some()
                        && ops.device_free.is_some()
                        && ops.copy_to_device.is_some()
                        && ops.copy_from_device.is_some(),
                    "host api has all four callbacks"
                );
                let times = rng.below(3) + 1;
                for _ in 0..times {
                    // SAFETY: filled by leanrt, or already released (a no-op).
                    unsafe { dev::lrt_host_api_release(&mut out) };
                    calls += 1;
                    assert!(out.ops.is_null() && out.ctx.is_null());
                }
            }
            _ => {
                // SAFETY: NULL is a no-op.
                unsafe { dev::lrt_host_api_release(null_mut()) };
                // A zeroed api: releasing it is a no-op.
                let mut z = HostApi {
                    ctx: null_mut(),
                    ops: null(),
                };
                // SAFETY: a zeroed api is allowed.
                unsafe { dev::lrt_host_api_release(&mut z) };
                calls += 2;
            }
        }
    }
    // Messages are per thread: a failure here is not seen on another thread,
    // and a failure there does not overwrite this thread's message.
    mark_last_error();
    let other = std::thread::spawn(|| {
        let before = last_error();
        // SAFETY: NULL must be rejected.
        let st = unsafe { dev::lrt_host_api_cuda(0, null_mut()) } as i32;
        (before, st, last_error())
    })
    .join()
    .unwrap();
    assert_eq!(other.0, "", "a new thread starts with no message");
    assert_eq!(other.1, INVALID);
    assert!(other.2.starts_with("lrt_host_api_cuda"));
    assert_eq!(last_error(), "hardening: marker");
    eprintln!("fuzz_core_c_abi: {calls} C calls in {iters} steps");
}
