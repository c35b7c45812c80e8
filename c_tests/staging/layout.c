/* The SM image layout as C sees it: sizes, alignments and field offsets of
 * the structs, and the values of the policy and flag constants. */
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "check.h"

#define OFF(T, f, v) _Static_assert(offsetof(T, f) == (v), #T "." #f)

_Static_assert(sizeof(lrt_sm_header) == 320, "header size");
_Static_assert(alignof(lrt_sm_header) == 64, "header align");
OFF(lrt_sm_header, current_task_index, 0);
OFF(lrt_sm_header, last_task_alive, 64);
OFF(lrt_sm_header, completed_watermark, 128);
OFF(lrt_sm_header, task_window_size, 192);
OFF(lrt_sm_header, task_window_mask, 200);
OFF(lrt_sm_header, heap_size, 208);
OFF(lrt_sm_header, task_descriptors_offset, 216);
OFF(lrt_sm_header, task_descriptors, 224);
OFF(lrt_sm_header, task_payloads, 232);
OFF(lrt_sm_header, slot_states, 240);
OFF(lrt_sm_header, completion_flags, 248);
OFF(lrt_sm_header, orchestrator_done, 256);
OFF(lrt_sm_header, total_size, 264);
OFF(lrt_sm_header, orch_error_code, 272);
OFF(lrt_sm_header, sched_error_bitmap, 276);
OFF(lrt_sm_header, sched_error_code, 280);
OFF(lrt_sm_header, sched_error_thread, 284);

_Static_assert(sizeof(lrt_task_descriptor) == 40, "descriptor size");
OFF(lrt_task_descriptor, task_id, 0);
OFF(lrt_task_descriptor, kernel_id, 8);
OFF(lrt_task_descriptor, packed_buffer_base, 24);
OFF(lrt_task_descriptor, packed_buffer_end, 32);

_Static_assert(sizeof(lrt_task_payload) == 4864, "payload size");
_Static_assert(alignof(lrt_task_payload) == 64, "payload align");
OFF(lrt_task_payload, tensor_count, 0);
OFF(lrt_task_payload, scalar_count, 4);
OFF(lrt_task_payload, fanin_count, 8);
OFF(lrt_task_payload, fanin_local_ids, 12);
OFF(lrt_task_payload, reserved, 524);
OFF(lrt_task_payload, early_dispatch, 536);
OFF(lrt_task_payload, predicate, 576);
OFF(lrt_task_payload, tensors, 640);
OFF(lrt_task_payload, scalars, 4736);
_Static_assert(sizeof(((lrt_task_payload *)0)->early_dispatch) == 40, "early dispatch");
_Static_assert(sizeof(((lrt_task_payload *)0)->predicate) == 24, "predicate");
_Static_assert(sizeof(((lrt_task_payload *)0)->tensors[0]) == 128, "tensor record");
_Static_assert(LRT_MAX_FANIN == 128 && LRT_MAX_TENSORS == 32 && LRT_MAX_SCALARS == 16, "caps");

_Static_assert(sizeof(lrt_task_slot_state) == 64, "slot state size");
_Static_assert(alignof(lrt_task_slot_state) == 64, "slot state align");
OFF(lrt_task_slot_state, last_consumer_local_id, 0);
OFF(lrt_task_slot_state, task_state, 4);
OFF(lrt_task_slot_state, payload, 8);
OFF(lrt_task_slot_state, task, 16);
OFF(lrt_task_slot_state, wake_list_head, 24);
OFF(lrt_task_slot_state, next_in_wake_list, 32);
OFF(lrt_task_slot_state, active_mask, 40);
OFF(lrt_task_slot_state, task_attrs, 41);
OFF(lrt_task_slot_state, any_subtask_deferred, 42);
OFF(lrt_task_slot_state, task_kind, 43);
OFF(lrt_task_slot_state, completed_subtasks, 44);
OFF(lrt_task_slot_state, total_required_subtasks, 46);
OFF(lrt_task_slot_state, logical_block_num, 48);
OFF(lrt_task_slot_state, next_block_idx, 50);
OFF(lrt_task_slot_state, graph_node_index, 52);
OFF(lrt_task_slot_state, graph_context, 56);

_Static_assert(sizeof(lrt_sm_segments) == 48, "segments");
_Static_assert(LRT_UPLOAD_FULL == 0 && LRT_UPLOAD_BOUNDED == 1 && LRT_UPLOAD_COMPACT == 2, "policies");
_Static_assert(LRT_MAKER_PIN_MIRROR == 1 && LRT_MAKER_FRESH_MIRROR == 2, "flags");

/* The checks are the static assertions above: this program builds only if
 * C sees the layout the Rust core pins (src/staging/v1/layout.rs). What
 * lrt_sm_ring_segment_offsets returns is checked against the reference's
 * goldens in reference.c, its bad input in ../hardening/staging_bad_input.c. */
int main(void) { return 0; }
