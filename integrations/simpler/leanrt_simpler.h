/* leanrt inside the reference runtime's host_build_graph runtime: the adapter.
 *
 * The reference's host orchestrator writes every task into a host mirror of
 * its shared-memory task image and then ships the image into the pooled
 * device region it reserved for the run. With this adapter leanrt owns that
 * mirror (persistent across runs instead of a fresh allocation per run), the
 * relocation of its pointers and the bounded upload; the reference's
 * orchestrator keeps writing into the mirror exactly as before.
 *
 * Per run, on the thread that prepares it:
 *   leanrt_simpler_bind(api, pooled_sm, sm_size, window, heap)  once the
 *       pooled shared-memory region is known;
 *   leanrt_simpler_begin_run()   in place of allocating and zeroing a mirror;
 *   leanrt_simpler_upload()      in place of relocating and copying it.
 * Each returns -1 (NULL for begin_run) after logging leanrt's message through
 * the reference's log. Makers (one host mirror each) are lent to one run at a
 * time and pointed at that run's pooled region, so one maker serves every
 * arena bank in turn and runs prepared on different threads at once get
 * different makers. leanrt never allocates or frees the device memory.
 */
#pragma once

#include <stdint.h>

struct HostApi;

/* Lends this thread a maker for `task_window` and `heap_size` (creating one
 * when none is idle), pointed at the region `pooled_sm` (`sm_size` bytes, at
 * least the image size for `task_window`) and copying through `api`, this
 * run's device calls. A run of this thread left between bind and upload is
 * ended first. */
int leanrt_simpler_bind(const HostApi *api, void *pooled_sm, uint64_t sm_size, uint64_t task_window,
                        uint64_t heap_size);

/* Starts the run: the mirror's header address, with every header field the
 * device reads written; the orchestrator is pointed at it. */
void *leanrt_simpler_begin_run(void);

/* Relocates the mirror's pointers to the pooled region's addresses, ships
 * header + the live prefix of each segment into it and returns the number of
 * tasks shipped. */
int32_t leanrt_simpler_upload(void);

/* The reference's main (the compact v2 image inside its arena), per run:
 *   leanrt_simpler_v2_begin_run(api, window, heap)  in place of allocating
 *       and zeroing the mirror and init_per_ring: the mirror's header, every
 *       field written (the maker, lent to this thread, copies through `api`);
 *   leanrt_simpler_v2_set_pool_use(...)  once the orchestrator's pool cursors
 *       are final: what its pools hold, checked against the runtime's own
 *       image size;
 *   leanrt_simpler_v2_upload(...)  in place of the framed buffer, the
 *       compaction and the copy: the arena's copied zone (`before`), the
 *       compact image at `device_image`, the submission block (`after`),
 *       `device_room` bytes writable from `device_image` on.
 * Each returns -1 (NULL for begin_run) after logging leanrt's message. */
void *leanrt_simpler_v2_begin_run(const HostApi *api, uint64_t task_window, uint64_t heap_size);
int leanrt_simpler_v2_set_pool_use(uint64_t fanin_elems, uint64_t tensor_elems, uint64_t scalar_elems,
                                   uint64_t image_bytes);
int32_t leanrt_simpler_v2_upload(void *device_image, uint64_t device_room, const void *before, uint64_t before_len,
                                 const void *after, uint64_t after_len);
