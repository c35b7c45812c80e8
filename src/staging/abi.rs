//! The maker's C-visible plain data, under the names C sees: the config,
//! the claim descriptor, the claimed slot, the upload report and policy,
//! and the `LRT_*` constants of the task image (the task window's bounds
//! among them). Each generation's image structs are in its own layout file
//! (`v1/layout.rs`, `v2/layout.rs`). cbindgen reads these files directly;
//! the core uses these types as they are, and converts the two that a C
//! caller fills into Rust forms: `lrt_maker_config` (`maker/config.rs`, the
//! one conversion both ways) and `lrt_claim_desc` (`src/ffi/staging/`).
#![allow(non_camel_case_types)]

use std::ffi::c_void;

use super::v1::layout::{lrt_task_descriptor, lrt_task_payload, lrt_task_slot_state};
use super::v2::layout::{lrt_v2_task_payload, lrt_v2_task_slot_state};

/// How lrt_runtime_maker_upload ships the image. docs/STAGING.md compares
/// them ("Upload policies").
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum lrt_upload_policy {
    /// The old path, a baseline: zero the whole mirror every run, ship the
    /// whole image in one copy.
    LRT_UPLOAD_FULL = 0,
    /// Init-on-write; ship the header and descriptors[0,N), payloads[0,N),
    /// slot_states[0,N) and flags[0,N) at their full-window offsets:
    /// 320 + 4969*N bytes in at most 4 copies.
    #[default]
    LRT_UPLOAD_BOUNDED = 1,
    /// The live prefixes as one image laid out for N slots (the offsets of
    /// lrt_sm_ring_segment_offsets for a window of N), at the start of the
    /// device image: gathered on the host and shipped in one copy while that
    /// image is at most 192 KiB, copied straight to its
    /// compact offsets (at most 4 copies) beyond.
    LRT_UPLOAD_COMPACT = 2,
    /// Per run, BOUNDED or COMPACT (one gathered copy), whichever a cost
    /// model says is cheaper: a copy costs a fixed latency plus bytes over
    /// the device's bandwidth, a gather bytes over the host's gather
    /// bandwidth. The device's figures are the backend's own where it gives
    /// them, else measured once at create (the fastest of five 64-byte
    /// copies and one copy and one gather of up to 1 MiB into the not yet
    /// meaningful device image). lrt_upload_report.path says which ran.
    /// A LRT_LAYOUT_V2 maker chooses per upload, for a run the host wrote
    /// itself, between its one framed copy (path COMPACT) and the split
    /// route (path BOUNDED: the per-task part gathered and shipped in one
    /// copy, each used pool copied straight from the mirror), measured at
    /// its first upload (the latency as the median of small copies where
    /// the pool copies go).
    LRT_UPLOAD_AUTO = 3,
}

/// Which generation of the reference runtime's image a maker builds
/// (lrt_maker_config.layout; chosen once, at create). docs/STAGING.md,
/// "Layout v2", compares them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum lrt_layout {
    /// The reference at #1659 (6096d3271): lrt_sm_header, lrt_task_payload,
    /// lrt_task_slot_state; the lrt_runtime_maker_begin_run / claim_slot /
    /// upload calls. The default.
    #[default]
    LRT_LAYOUT_V1 = 0,
    /// The reference at 6ebaf7715: lrt_v2_sm_header, lrt_v2_task_payload,
    /// lrt_v2_task_slot_state and the three argument pools; the
    /// lrt_runtime_maker_v2_* calls, the compact image in one framed copy
    /// (under LRT_UPLOAD_AUTO: or its pools copied straight from the
    /// mirror).
    LRT_LAYOUT_V2 = 1,
}

/// Every layout, in value order (a generation adds its value here, beside
/// its variant): the values lrt_maker_config.layout may hold.
pub(crate) const LAYOUTS: [lrt_layout; 2] = [lrt_layout::LRT_LAYOUT_V1, lrt_layout::LRT_LAYOUT_V2];

/// lrt_maker_config flag: page-lock the host memory the uploads copy from, so
/// that copies are direct DMA. Create locks the header and the first 64
/// slots of each segment (LRT_UPLOAD_FULL: the whole mirror); an upload of N
/// tasks first grows each segment's locked prefix to the next power of two
/// at or above N, so a steady workload locks nothing after its first run.
/// Everything is unlocked at destroy. A device that cannot pin leaves the
/// memory pageable (one warning through leanrt's log channel; the maker then
/// stops trying); it is never an error.
pub const LRT_MAKER_PIN_MIRROR: u32 = 1;
/// lrt_maker_config flag: map a fresh mirror for every run instead of
/// reusing one (the baseline's behaviour; for measurements).
pub const LRT_MAKER_FRESH_MIRROR: u32 = 2;

/// lrt_task_slot_state.task_state: submitted, waiting to run (the
/// reference's PTO2_TASK_PENDING).
pub const LRT_TASK_PENDING: i32 = 0;
/// lrt_task_slot_state.task_state: finished (PTO2_TASK_COMPLETED).
pub const LRT_TASK_COMPLETED: i32 = 1;
/// lrt_task_slot_state.task_state: output fully consumed (PTO2_TASK_CONSUMED).
pub const LRT_TASK_CONSUMED: i32 = 2;
/// lrt_task_slot_state.task_kind: a task with at least one active subtask.
pub const LRT_TASK_KIND_KERNEL: u8 = 0;
/// lrt_task_slot_state.task_kind: a dependency-only task (no active subtask).
pub const LRT_TASK_KIND_DUMMY: u8 = 1;
/// lrt_task_slot_state.task_kind: a graph submission.
pub const LRT_TASK_KIND_GRAPH: u8 = 2;
/// lrt_task_slot_state.task_kind: a node of a graph.
pub const LRT_TASK_KIND_GRAPH_NODE: u8 = 3;
/// active_mask bit: the AIC subtask slot.
pub const LRT_SUBTASK_AIC: u8 = 1;
/// active_mask bit: the first AIV subtask slot.
pub const LRT_SUBTASK_AIV0: u8 = 2;
/// active_mask bit: the second AIV subtask slot.
pub const LRT_SUBTASK_AIV1: u8 = 4;
/// task_attrs bit: the task may be resolved early (set for hidden
/// allocation tasks).
pub const LRT_TASK_ATTR_EARLY_RESOLVE: u8 = 1;
/// task_attrs bit: the task's cores start together.
pub const LRT_TASK_ATTR_SYNC_START: u8 = 2;
/// task_attrs bit: the task carries a dispatch predicate.
pub const LRT_TASK_ATTR_HAS_PREDICATE: u8 = 4;
/// task_attrs bit: bits 4-7 hold a timing tag.
pub const LRT_TASK_ATTR_TIMED: u8 = 8;
/// lrt_claim_desc flag: the task is complete before the run starts (like
/// the reference's hidden allocation tasks): task_state LRT_TASK_COMPLETED
/// and completion flag 1.
pub const LRT_CLAIM_COMPLETED: u32 = 1;
/// lrt_maker_config.heap_size when neither the config nor the environment
/// variable PTO2_RING_HEAP sets one: 256 MiB, the reference's default.
pub const LRT_DEFAULT_HEAP_SIZE: u64 = 268_435_456;
/// The smallest lrt_maker_config.heap_size (the reference's minimum).
pub const LRT_MIN_HEAP_SIZE: u64 = 1024;
/// The smallest task window (lrt_maker_config.task_window). A window is a
/// power of two in [LRT_MIN_TASK_WINDOW, LRT_MAX_TASK_WINDOW].
pub const LRT_MIN_TASK_WINDOW: u64 = 4;
/// The largest task window: the largest power of two whose image (v1's,
/// and v2's mirror) fits in INT32_MAX bytes, the reach of the reference's
/// 32-bit offsets; the reference refuses larger ones.
pub const LRT_MAX_TASK_WINDOW: u64 = 262_144;
/// The task window when neither lrt_maker_config.task_window nor the
/// environment variable PTO2_RING_TASK_WINDOW sets one (the reference's
/// default).
pub const LRT_DEFAULT_TASK_WINDOW: u64 = 16384;
/// The largest lrt_maker_config.frame_before or frame_after of a
/// LRT_LAYOUT_V2 maker, in bytes (1 GiB).
pub const LRT_V2_MAX_FRAME_BYTES: u64 = 1_073_741_824;

/// Maker configuration. Fill it with lrt_maker_config_init, then change the
/// members you need.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_maker_config {
    /// Slots in the ring: a power of two in [LRT_MIN_TASK_WINDOW,
    /// LRT_MAX_TASK_WINDOW]. 0 (the default): the environment variable
    /// PTO2_RING_TASK_WINDOW, else LRT_DEFAULT_TASK_WINDOW.
    pub task_window: u64,
    /// Default LRT_UPLOAD_BOUNDED.
    pub policy: lrt_upload_policy,
    /// LRT_MAKER_PIN_MIRROR and/or LRT_MAKER_FRESH_MIRROR; default 0.
    pub flags: u32,
    /// The header's heap_size, at least LRT_MIN_HEAP_SIZE. 0 (the default): the
    /// environment variable PTO2_RING_HEAP, else LRT_DEFAULT_HEAP_SIZE.
    pub heap_size: u64,
    /// LRT_LAYOUT_V1 (the default) or LRT_LAYOUT_V2.
    pub layout: lrt_layout,
    /// LRT_LAYOUT_V2: room for the bytes lrt_runtime_maker_v2_upload ships
    /// before the image (the reference's 704-byte runtime block), and after
    /// it (its graph-submission block), at most LRT_V2_MAX_FRAME_BYTES each.
    /// Default 0.
    pub frame_before: u64,
    pub frame_after: u64,
    /// LRT_LAYOUT_V2: the argument pools' capacities in elements (fanin ids,
    /// tensor records, scalars). 0 (the default) each: the reference's,
    /// every task at its cap (W x LRT_MAX_FANIN, W x LRT_MAX_TENSORS,
    /// W x LRT_MAX_SCALARS). The pools are host
    /// memory only (the compact image does not depend on them); smaller
    /// ones shrink the mirror, and a claim that does not fit is
    /// LRT_ERR_OUT_OF_RANGE. At most the reference's.
    pub v2_pool_fanin_ids: u64,
    pub v2_pool_tensors: u64,
    pub v2_pool_scalars: u64,
}

/// What lrt_runtime_maker_claim_slot_ex writes for a task: the fields the
/// reference runtime's submit path sets per task. Fill it with
/// lrt_claim_desc_init (a root kernel task on one AIV core), then change
/// what differs.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_claim_desc {
    /// Active subtask slots (LRT_SUBTASK_AIC | LRT_SUBTASK_AIV0 |
    /// LRT_SUBTASK_AIV1). 0 makes a dependency-only task (task_kind
    /// LRT_TASK_KIND_DUMMY). Default LRT_SUBTASK_AIV0.
    pub active_mask: u8,
    /// The reference's task-attribute byte (LRT_TASK_ATTR_*, timing tag in
    /// bits 4-7). Default 0.
    pub task_attrs: u8,
    /// Logical blocks, at least 1; total_required_subtasks is this times the
    /// number of active subtask slots and must fit in int16_t. Default 1.
    pub logical_block_num: i16,
    /// LRT_CLAIM_COMPLETED or 0 (the default).
    pub flags: u32,
    /// Kernel per subtask slot (AIC, AIV0, AIV1); -1 = none (the default).
    pub kernel_id: [i32; 3],
    /// Number of producers in fanin_local_ids: in [0, LRT_MAX_FANIN] for a
    /// v1 claim; any count >= 0 for a v2 claim, which takes the list as the
    /// reference's append_fanin_or_fail does (repeats and ids of no slot
    /// claimed earlier in this run are left out; more than LRT_MAX_FANIN
    /// distinct producers are refused).
    pub fanin_count: i32,
    /// Local ids (slot indices) of producers claimed earlier in this run;
    /// duplicates count once (v1: an id of no earlier slot is refused).
    /// May be NULL when fanin_count is 0. Read only during the call.
    pub fanin_local_ids: *const i32,
    /// Written to the descriptor unchanged (device addresses of the task's
    /// packed output buffer; upload never rewrites them). Default NULL.
    pub packed_buffer_base: *mut c_void,
    pub packed_buffer_end: *mut c_void,
}

/// A claimed slot: its index and the host-mirror addresses of its
/// descriptor, payload and slot state, which the host writes the task's
/// content through. The pointers stay valid until the next
/// lrt_runtime_maker_begin_run or lrt_runtime_maker_destroy.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_task_slot {
    pub index: i32,
    pub descriptor: *mut lrt_task_descriptor,
    pub payload: *mut lrt_task_payload,
    pub slot_state: *mut lrt_task_slot_state,
}

/// lrt_v2_claim_desc flag: an outer graph task (the reference's
/// graph_submit_definition): task_kind LRT_TASK_KIND_GRAPH, no tensor or
/// scalar region (both offsets unbound; both counts must be 0), its
/// producers in a fanin region as any task's; mask, attributes and subtasks
/// 0, one block, kernel ids -1 whatever `task` says. The host writes the
/// slot's graph_context.
pub const LRT_V2_CLAIM_GRAPH_SHELL: u32 = 1;

/// What lrt_runtime_maker_v2_claim_slot writes for a task: v1's fields
/// (`task`) and the task's arguments. Fill it with lrt_v2_claim_desc_init
/// (a root kernel task on one AIV core, no arguments), then change what
/// differs.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_v2_claim_desc {
    /// As for lrt_runtime_maker_claim_slot_ex.
    pub task: lrt_claim_desc,
    /// LRT_V2_CLAIM_GRAPH_SHELL or 0 (the default).
    pub flags: u32,
    /// Tensor records of the task, in [0, LRT_MAX_TENSORS].
    pub tensor_count: i32,
    /// tensor_count records of LRT_V2_TENSOR_BYTES (opaque to leanrt), copied into the
    /// task's region; NULL reserves the region for the host to write
    /// through lrt_v2_task_slot.tensors. Read only during the call.
    pub tensors: *const c_void,
    /// Scalars of the task, in [0, LRT_MAX_SCALARS].
    pub scalar_count: i32,
    /// scalar_count values, copied; NULL reserves the region. The region's
    /// tail up to a multiple of 8 is zeroed either way.
    pub scalars: *const u64,
}

/// A claimed v2 slot: its index and the host addresses of its descriptor,
/// payload, slot state and argument regions (in the maker's image buffer
/// or its mirror: lrt_runtime_maker_v2_begin_run), which the host may write
/// the task's content through. They stay valid until the next
/// lrt_runtime_maker_v2_begin_run or lrt_runtime_maker_destroy; the
/// payload's and slot state's self-relative offsets must be left as the
/// claim set them.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_v2_task_slot {
    pub index: i32,
    pub descriptor: *mut lrt_task_descriptor,
    pub payload: *mut lrt_v2_task_payload,
    pub slot_state: *mut lrt_v2_task_slot_state,
    /// The task's tensor records (NULL for a graph shell).
    pub tensors: *mut c_void,
    /// The task's scalars (NULL for a graph shell).
    pub scalars: *mut u64,
    /// The task's distinct producers (fanin_count of them).
    pub fanin: *mut i32,
}

/// Where lrt_runtime_maker_v2_upload_frame ships a v2 run: the compact
/// image at `device_image`, `before_len` bytes of `before` right below it,
/// `after_len` bytes of `after` right after it, as one region of device
/// memory (e.g. the reference's arena: its copied zone, the image, its
/// graph-submission block).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_v2_frame {
    /// Device address of the image: non-NULL, a multiple of 64.
    pub device_image: *mut c_void,
    /// Bytes the upload may write from `device_image` on: at least the
    /// image (lrt_runtime_maker_v2_image_segments' `end`) + `after_len`.
    /// The `before_len` bytes below `device_image` are the caller's too.
    pub device_room: u64,
    /// NULL only with a length of 0; read only during the call.
    pub before: *const c_void,
    pub before_len: u64,
    pub after: *const c_void,
    pub after_len: u64,
}

/// What one lrt_runtime_maker_upload did.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct lrt_upload_report {
    /// current_task_index at upload: the live slots [0, N).
    pub total_tasks: i32,
    /// copy_to_device calls made.
    pub copies: u32,
    /// Bytes shipped.
    pub bytes: u64,
    /// Nanoseconds the run's begin_run spent zeroing.
    pub zero_ns: u64,
    /// Nanoseconds spent validating and rewriting host pointers to device
    /// addresses.
    pub relocate_ns: u64,
    /// Nanoseconds spent gathering (COMPACT) and copying to the device.
    pub copy_ns: u64,
    /// The layout shipped: LRT_UPLOAD_FULL, LRT_UPLOAD_BOUNDED or
    /// LRT_UPLOAD_COMPACT (under LRT_UPLOAD_AUTO, the one it chose). A v2
    /// upload: LRT_UPLOAD_COMPACT for the one framed copy,
    /// LRT_UPLOAD_BOUNDED for the split route (its pools copied straight
    /// from the mirror).
    pub path: lrt_upload_policy,
}
