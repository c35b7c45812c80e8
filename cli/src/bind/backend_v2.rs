//! The reference runtime's current image (v2) on a device, one run at a
//! time, two ways: leanrt's maker (reused mirror, one framed copy from a
//! reused staging buffer), and the reference's own per-run path as its
//! `run_host_orchestration` does it. With `backend`, the only module of the
//! command that calls leanrt's staging API.
//!
//! The reference's path per run (6ebaf7715, `host/runtime_maker.cpp` and
//! `pto_runtime2_init.cpp`): a fresh full-window mirror (`new uint8_t[]`:
//! modelled by a fresh anonymous mapping, the maker's fresh-mirror mode,
//! header zeroed only), the orchestrator's O(W) re-initialisation (its
//! fanin-seen epochs, W x 4 bytes, and tensor-map buckets, 32 KiB, cleared),
//! the same claims, a zero-filled upload buffer of the framed size
//! (`std::vector<std::byte>(n, 0)`), the runtime block copied into it, the
//! compaction (seven copies and the pass re-taking offsets, leanrt's
//! `v2_compact_into`), one copy to the device; the buffer is freed.
use super::backend::{sample_of, DevBuf, Device};
use super::model::RunSample;
use leanrt::staging::{
    self, lrt_upload_policy, ClaimDesc, MakerConfig, MakerV2, TensorRecord, V2ClaimDesc,
};
use std::alloc::Layout;
use std::time::Instant;

/// Bytes of the runtime block the reference ships before the image.
pub const RUNTIME_BLOCK_BYTES: usize = 704;
/// The reference's tensor-map buckets (4096 x 8 bytes), cleared per run.
const TENSORMAP_BUCKET_BYTES: usize = 4096 * 8;

/// Which v2 path a maker runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum V2Path {
    /// leanrt: the maker as users run it.
    Leanrt,
    /// The reference runtime's own per-run path.
    Reference,
}

/// The reference's per-run host state: its orchestrator's arrays and the
/// device region its one copy lands in (allocated once, as its arena is).
struct ReferenceState<'a> {
    seen_epoch: Vec<u32>,
    buckets: Vec<u8>,
    device: DevBuf<'a>,
}

/// A v2 maker on a device, for one path.
pub struct V2Maker<'a> {
    maker: MakerV2,
    block: Vec<u8>,
    records: [TensorRecord; 2],
    reference: Option<ReferenceState<'a>>,
}

/// The v2 mirror's size for `window` (an error when it is not usable).
pub fn mirror_bytes(window: u64) -> Result<u64, String> {
    staging::v2_ring_segment_offsets(window)
        .map(|s| s.end)
        .map_err(|e| e.to_string())
}

impl<'a> V2Maker<'a> {
    /// A maker for `window` on `dev` running `path`.
    pub fn new(dev: &'a Device, path: V2Path, window: u64) -> Result<Self, String> {
        let config = MakerConfig {
            task_window: window,
            layout: staging::lrt_layout::LRT_LAYOUT_V2,
            policy: lrt_upload_policy::LRT_UPLOAD_COMPACT,
            fresh_mirror: path == V2Path::Reference,
            frame_before: RUNTIME_BLOCK_BYTES as u64,
            ..MakerConfig::default()
        };
        let maker = MakerV2::new(&config, dev.device_arc()).map_err(|e| e.to_string())?;
        let reference = match path {
            V2Path::Leanrt => None,
            V2Path::Reference => Some(ReferenceState {
                seen_epoch: vec![1; window as usize],
                buckets: vec![1; TENSORMAP_BUCKET_BYTES],
                device: dev.alloc(RUNTIME_BLOCK_BYTES + mirror_bytes(window)? as usize)?,
            }),
        };
        let mut records = [[0u8; 128]; 2];
        for (k, r) in records.iter_mut().enumerate() {
            for (b, x) in r.iter_mut().enumerate() {
                *x = (k * 131 + b) as u8;
            }
        }
        Ok(V2Maker {
            maker,
            block: vec![0x5a; RUNTIME_BLOCK_BYTES],
            records,
            reference,
        })
    }

    /// Claims `n` tasks of 2 tensors, 1 scalar and 1 producer (the previous
    /// task; the first has none).
    fn claim(&mut self, n: u64) -> Result<(), String> {
        for i in 0..n {
            let producer = [i as i32 - 1];
            let scalar = [i];
            let d = V2ClaimDesc {
                task: ClaimDesc {
                    fanins: if i == 0 { &[] } else { &producer },
                    ..ClaimDesc::default()
                },
                tensor_count: 2,
                tensors: Some(&self.records),
                scalar_count: 1,
                scalars: Some(&scalar),
                graph_shell: false,
            };
            self.maker
                .claim_slot(&d)
                .map_err(|e| format!("v2 claim: {e}"))?;
        }
        Ok(())
    }

    /// One run: begin, claim `n`, upload.
    pub fn run_once(&mut self, n: u64) -> Result<RunSample, String> {
        let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
        let t0 = Instant::now();
        self.maker
            .begin_run()
            .map_err(|e| format!("v2 begin_run: {e}"))?;
        if let Some(r) = &mut self.reference {
            r.seen_epoch.fill(0);
            r.buckets.fill(0);
        }
        let t1 = Instant::now();
        self.claim(n)?;
        let t2 = Instant::now();
        let mut sample = match self.reference.is_some() {
            false => {
                let r = self
                    .maker
                    .upload(&self.block, &[])
                    .map_err(|e| format!("v2 upload: {e}"))?;
                sample_of(&r)
            }
            true => self.reference_upload(n)?,
        };
        let t3 = Instant::now();
        sample.begin_ns = ns(t0, t1);
        sample.claim_ns = ns(t1, t2);
        sample.upload_ns = ns(t2, t3);
        sample.total_ns = ns(t0, t3);
        Ok(sample)
    }

    /// The reference's upload: a zero-filled framed buffer, the runtime
    /// block, the compaction into it, one copy, the buffer freed.
    fn reference_upload(&mut self, n: u64) -> Result<RunSample, String> {
        let seg = self.maker.image_segments();
        let len = RUNTIME_BLOCK_BYTES + seg.end as usize;
        let layout = Layout::from_size_align(len, 64).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        // SAFETY: a non-zero size with a valid alignment; checked for NULL.
        let buf = unsafe { std::alloc::alloc(layout) };
        if buf.is_null() {
            return Err(format!("allocating the {len}-byte upload buffer failed"));
        }
        // SAFETY: buf holds len bytes; the vector's value-initialisation.
        let out = unsafe {
            std::ptr::write_bytes(buf, 0, len);
            std::slice::from_raw_parts_mut(buf, len)
        };
        let t1 = Instant::now();
        out[..RUNTIME_BLOCK_BYTES].copy_from_slice(&self.block);
        let compacted = self.maker.compact_into(&mut out[RUNTIME_BLOCK_BYTES..]);
        let t2 = Instant::now();
        let copied = match (&compacted, &self.reference) {
            (Ok(_), Some(r)) => r.device.copy_from(out),
            (Err(e), _) => Err(format!("v2 compaction: {e}")),
            (_, None) => Err("not a reference maker".into()),
        };
        let t3 = Instant::now();
        // SAFETY: allocated above with this layout, freed once.
        unsafe { std::alloc::dealloc(buf, layout) };
        copied?;
        let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
        Ok(RunSample {
            zero_ns: ns(t0, t1),
            relocate_ns: ns(t1, t2),
            copy_ns: ns(t2, t3),
            bytes: len as u64,
            copies: 1,
            total_tasks: n as i32,
            path: "ref-v2",
            ..RunSample::default()
        })
    }
}

/// The floor a one-copy upload of `bytes` bytes pays: a plain copy of
/// them from a host buffer (64-byte aligned, as the maker's) written just
/// before it, as a run writes its image, into a device allocation of its
/// own. Timed once after each run of a cell (`copy_ns`), so that the run
/// and its floor see the machine as it is then: on a loaded or shared
/// machine a copy of megabytes varies by tens of percent from one moment
/// to the next, which a floor timed apart would add to the ratio.
pub struct Floor<'a> {
    src: Vec<u8>,
    at: usize,
    len: usize,
    dst: DevBuf<'a>,
    round: u8,
}

impl<'a> Floor<'a> {
    /// The buffers for `bytes` bytes, written and copied once (so that
    /// no timed copy faults a page in).
    pub fn new(dev: &'a Device, bytes: u64) -> Result<Self, String> {
        let len = bytes as usize;
        let src = vec![0u8; len + 64];
        let at = src.as_ptr().align_offset(64);
        let mut floor = Floor {
            src,
            at,
            len,
            dst: dev.alloc(len.max(1))?,
            round: 0,
        };
        floor.copy_ns()?;
        Ok(floor)
    }

    /// One timed copy, its source written first (not timed) with plain
    /// stores in 2 KiB pieces, as a host writes an image.
    pub fn copy_ns(&mut self) -> Result<f64, String> {
        self.round = self.round.wrapping_add(1);
        let piece = [self.round; 2048];
        let src = &mut self.src[self.at..self.at + self.len];
        for c in src.chunks_mut(piece.len()) {
            c.copy_from_slice(&piece[..c.len()]);
        }
        let t0 = Instant::now();
        self.dst.copy_from(src)?;
        Ok(t0.elapsed().as_nanos() as f64)
    }
}
