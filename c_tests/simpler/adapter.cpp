// The reference runtime's adapter (integrations/simpler/leanrt_simpler.cpp)
// as the patched runtime_maker.cpp drives it, on stand-ins of the two
// reference headers it includes and a device that is host memory:
//  - main (v2): v2_begin_run hands out a mirror that persists across runs;
//    the "orchestrator" (this test) writes tasks into it at the reference's
//    layout; v2_set_pool_use checks the runtime's image size; v2_upload
//    ships [copied zone | image | submissions] where the runtime says, every
//    byte in place;
//  - #1659 (v1): bind lends the pooled region, begin_run / upload ship into
//    it;
//  - a run abandoned between begin and upload (an orchestration error) is
//    ended at the thread's next bind; a wrong image size is an error;
//  - two threads preparing runs at once get two makers.
// The real runtime, with its goldens, is integrations/simpler/run.sh.
#include <leanrt.h>
#include <leanrt_simpler.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "check.h"
#include "common/host_api.h"
#include "common/unified_log.h"

int stand_in_log_errors = 0;
char stand_in_last_log[2048];

namespace {

struct Device {
    int copies = 0;
    int allocs = 0;
};

void *dev_malloc(void *ctx, size_t size) {
    static_cast<Device *>(ctx)->allocs++;
    return std::malloc(size);
}
void dev_free(void *, void *p) { std::free(p); }
int dev_to(void *ctx, void *dst, const void *src, size_t n) {
    static_cast<Device *>(ctx)->copies++;
    std::memcpy(dst, src, n);
    return 0;
}
int dev_from(void *, void *dst, const void *src, size_t n) {
    std::memcpy(dst, src, n);
    return 0;
}
const HostApiOps kOps = {dev_malloc, dev_free, dev_to, dev_from};

constexpr uint64_t W = 64;
constexpr uint64_t HEAP = 1 << 20;

// Writes `n` tasks the way the reference's orchestrator does: descriptor,
// payload with one scalar region each (8 scalars, rounded), slot state,
// flag; advances the header's index. Returns the scalars used.
uint64_t write_tasks(void *mirror, uint64_t n) {
    lrt_v2_segments s;
    CHECK_STATUS(lrt_v2_ring_segment_offsets(W, &s), LRT_OK);
    auto *base = static_cast<unsigned char *>(mirror);
    for (uint64_t i = 0; i < n; ++i) {
        auto *d = reinterpret_cast<lrt_task_descriptor *>(base + s.descriptors) + i;
        std::memset(d, 0, sizeof *d);
        d->task_id = i;
        d->kernel_id[0] = static_cast<int32_t>(i);
        d->kernel_id[1] = d->kernel_id[2] = -1;
        auto *p = reinterpret_cast<lrt_v2_task_payload *>(base + s.payloads) + i;
        std::memset(p, 0, sizeof *p);
        p->scalar_count = 1;
        auto *sc = reinterpret_cast<uint64_t *>(base + s.scalar_pool) + 8 * i;
        for (int k = 0; k < 8; ++k) sc[k] = k == 0 ? 1000 + i : 0;
        p->scalars = static_cast<int32_t>(reinterpret_cast<intptr_t>(sc) -
                                          reinterpret_cast<intptr_t>(&p->scalars));
        auto *st = reinterpret_cast<lrt_v2_task_slot_state *>(base + s.slot_states) + i;
        std::memset(st, 0, sizeof *st);
        st->payload = static_cast<int32_t>(reinterpret_cast<intptr_t>(p) -
                                           reinterpret_cast<intptr_t>(&st->payload));
        st->task = static_cast<int32_t>(reinterpret_cast<intptr_t>(d) - reinterpret_cast<intptr_t>(&st->task));
        base[s.completion_flags + i] = 0;
    }
    static_cast<lrt_v2_sm_header *>(mirror)->current_task_index = static_cast<int32_t>(n);
    return 8 * n;
}

// The shipped image's scalar of task i, through its payload's offset.
uint64_t shipped_scalar(const unsigned char *image, const lrt_v2_segments &c, uint64_t i) {
    const auto *p = reinterpret_cast<const lrt_v2_task_payload *>(image + c.payloads) + i;
    const auto *field = reinterpret_cast<const unsigned char *>(&p->scalars);
    return *reinterpret_cast<const uint64_t *>(field + p->scalars);
}

void main_v2() {
    Device dev;
    HostApi api(&kOps, &dev);
    // The arena: a copied zone, then the image, then the submissions.
    std::vector<unsigned char> arena(1 << 20);
    unsigned char *copied = reinterpret_cast<unsigned char *>(
        (reinterpret_cast<uintptr_t>(arena.data()) + 63) & ~static_cast<uintptr_t>(63));
    unsigned char zone[704], subs[128];
    std::memset(zone, 0x5A, sizeof zone);
    std::memset(subs, 0xC3, sizeof subs);
    void *first_mirror = nullptr;
    for (uint64_t n : {40u, 3u, 40u}) {
        void *mirror = leanrt_simpler_v2_begin_run(&api, W, HEAP);
        CHECK(mirror != nullptr);
        if (first_mirror == nullptr) first_mirror = mirror;
        CHECK(mirror == first_mirror);  // the mirror persists across runs
        const uint64_t scalars = write_tasks(mirror, n);
        lrt_v2_segments c;
        CHECK_STATUS(lrt_v2_image_segments(n, 0, 0, scalars, &c), LRT_OK);
        CHECK(leanrt_simpler_v2_set_pool_use(0, 0, scalars, c.end) == 0);
        unsigned char *image = copied + ((sizeof zone + 63) & ~size_t{63});
        unsigned char *zone_at = image - sizeof zone;
        std::memset(arena.data(), 0, arena.size());
        CHECK(leanrt_simpler_v2_upload(image, c.end + sizeof subs, zone, sizeof zone, subs, sizeof subs) ==
              static_cast<int32_t>(n));
        CHECK(std::memcmp(zone_at, zone, sizeof zone) == 0);
        CHECK(std::memcmp(image + c.end, subs, sizeof subs) == 0);
        const auto *h = reinterpret_cast<const lrt_v2_sm_header *>(image);
        CHECK(h->current_task_index == static_cast<int32_t>(n) && h->orchestrator_done == 1);
        CHECK(h->task_payloads == nullptr && h->task_window_size == W && h->heap_size == HEAP);
        for (uint64_t i = 0; i < n; ++i) CHECK(shipped_scalar(image, c, i) == 1000 + i);
    }
    CHECK(dev.allocs == 0);  // leanrt allocated no device memory
    CHECK(dev.copies > 0);

    // A wrong image size is the adapter's error; the run it leaves open is
    // ended by the next begin_run, which works.
    void *mirror = leanrt_simpler_v2_begin_run(&api, W, HEAP);
    CHECK(mirror != nullptr);
    const uint64_t scalars = write_tasks(mirror, 2);
    const int before = stand_in_log_errors;
    CHECK(leanrt_simpler_v2_set_pool_use(0, 0, scalars, 12345) == -1);
    CHECK(stand_in_log_errors == before + 1 && std::strstr(stand_in_last_log, "12345") != nullptr);
    CHECK(leanrt_simpler_v2_begin_run(&api, W, HEAP) == mirror);
    // Claims and a host-written run do not mix: a pool past its capacity is
    // refused with leanrt's message.
    CHECK(leanrt_simpler_v2_set_pool_use(0, W * 32 + 1, 0, 0) == -1);
    CHECK(std::strstr(stand_in_last_log, "lrt_runtime_maker_v2_set_pool_use") != nullptr);
    // Upload without a run.
    CHECK(leanrt_simpler_v2_begin_run(nullptr, W, HEAP) == nullptr);
    CHECK(leanrt_simpler_v2_upload(copied, 1 << 16, nullptr, 0, nullptr, 0) == -1);
}

void v1_1659() {
    Device dev;
    HostApi api(&kOps, &dev);
    lrt_sm_segments s;
    CHECK_STATUS(lrt_sm_ring_segment_offsets(W, &s), LRT_OK);
    std::vector<unsigned char> pooled(s.end);
    CHECK(leanrt_simpler_bind(&api, pooled.data(), pooled.size(), W, HEAP) == 0);
    auto *h = static_cast<lrt_sm_header *>(leanrt_simpler_begin_run());
    CHECK(h != nullptr && h->task_window_size == W);
    CHECK(leanrt_simpler_upload() == 0);
    const auto *shipped = reinterpret_cast<const lrt_sm_header *>(pooled.data());
    CHECK(shipped->task_window_size == W && shipped->orchestrator_done == 1);
    CHECK(dev.copies >= 1 && dev.allocs == 0);
    // Too small a region is leanrt's refusal, reported through the log.
    CHECK(leanrt_simpler_bind(&api, pooled.data(), 64, W, HEAP) == -1);
    CHECK(std::strstr(stand_in_last_log, "lrt_runtime_maker") != nullptr);
}

void two_threads() {
    Device dev;
    HostApi api(&kOps, &dev);
    void *mirrors[2] = {nullptr, nullptr};
    // Each thread holds its run open while the other begins its own.
    std::thread a([&] { mirrors[0] = leanrt_simpler_v2_begin_run(&api, W, HEAP); });
    a.join();
    std::thread b([&] { mirrors[1] = leanrt_simpler_v2_begin_run(&api, W, HEAP); });
    b.join();
    CHECK(mirrors[0] != nullptr && mirrors[1] != nullptr && mirrors[0] != mirrors[1]);
}

// One run as the reference's orchestrator writes it after begin_run, with
// `junk` (non-zero) first filled over every byte a task may own (its
// descriptor, payload, slot state, flag, fanin and scalar regions), as a
// run leaves them; with 0, only the fields, as the reference writes them:
// a fanin region's tail, the payload's early-dispatch, predicate and dump
// lines and the slot state's device words are not written. Task 1 depends
// on task 0; task 2 names `dep` as its producer, taken as the reference's
// append_fanin_or_fail takes it (6ebaf7715, pto_orchestrator.cpp): only
// when that slot's `task` offset is bound and its descriptor's task_id is
// `dep`. Returns the image shipped (c.end bytes).
std::vector<unsigned char> reference_run(HostApi *api, unsigned char *image, uint64_t n, int32_t dep,
                                         unsigned char junk, int32_t *fanin_of_2) {
    void *mirror = leanrt_simpler_v2_begin_run(api, W, HEAP);
    CHECK(mirror != nullptr);
    lrt_v2_segments s;
    CHECK_STATUS(lrt_v2_ring_segment_offsets(W, &s), LRT_OK);
    auto *base = static_cast<unsigned char *>(mirror);
    uint64_t fanin_cursor = 0;
    for (uint64_t i = 0; i < n; ++i) {
        auto *d = reinterpret_cast<lrt_task_descriptor *>(base + s.descriptors) + i;
        auto *p = reinterpret_cast<lrt_v2_task_payload *>(base + s.payloads) + i;
        auto *st = reinterpret_cast<lrt_v2_task_slot_state *>(base + s.slot_states) + i;
        auto *sc = reinterpret_cast<uint64_t *>(base + s.scalar_pool) + 8 * i;
        auto *fa = reinterpret_cast<int32_t *>(base + s.fanin_pool) + fanin_cursor;
        if (junk != 0) {
            std::memset(d, junk, sizeof *d);
            std::memset(p, junk, sizeof *p);
            std::memset(st, junk, sizeof *st);
            std::memset(sc, junk, 64);
            std::memset(fa, junk, 64);
        }
        d->task_id = i;
        d->kernel_id[0] = static_cast<int32_t>(i);
        d->kernel_id[1] = d->kernel_id[2] = -1;
        d->packed_buffer_base = d->packed_buffer_end = nullptr;
        int32_t count = 0;
        int32_t producer = i == 1 ? 0 : i == 2 ? dep : -1;
        if (producer >= 0) {
            // append_fanin_or_fail: the producer slot's task, then its id.
            const auto *ps = reinterpret_cast<lrt_v2_task_slot_state *>(base + s.slot_states) + (producer & (W - 1));
            const auto *field = reinterpret_cast<const unsigned char *>(&ps->task);
            const auto *pd = reinterpret_cast<const lrt_task_descriptor *>(field + ps->task);
            if (ps->task != 0 && pd->task_id == static_cast<uint64_t>(producer)) fa[count++] = producer;
        }
        if (i == 2) *fanin_of_2 = count;
        p->tensor_count = 0;
        p->scalar_count = 1;
        p->fanin_count = count;
        p->tensors = 0;
        sc[0] = 1000 + i;
        p->scalars = static_cast<int32_t>(reinterpret_cast<intptr_t>(sc) - reinterpret_cast<intptr_t>(&p->scalars));
        p->fanin = static_cast<int32_t>(reinterpret_cast<intptr_t>(fa) - reinterpret_cast<intptr_t>(&p->fanin));
        fanin_cursor += (count + 15) / 16 * 16;
        st->last_consumer_local_id = static_cast<int32_t>(i);
        st->task_state = 0;
        st->payload = static_cast<int32_t>(reinterpret_cast<intptr_t>(p) - reinterpret_cast<intptr_t>(&st->payload));
        st->task = static_cast<int32_t>(reinterpret_cast<intptr_t>(d) - reinterpret_cast<intptr_t>(&st->task));
        st->active_mask = 2;
        st->task_kind = 0;
        st->total_required_subtasks = 1;
        st->logical_block_num = 1;
        st->graph_node_index = -1;
        base[s.completion_flags + i] = 0;
    }
    static_cast<lrt_v2_sm_header *>(mirror)->current_task_index = static_cast<int32_t>(n);
    lrt_v2_segments c;
    CHECK_STATUS(lrt_v2_image_segments(n, fanin_cursor, 0, 8 * n, &c), LRT_OK);
    CHECK(leanrt_simpler_v2_set_pool_use(fanin_cursor, 0, 8 * n, c.end) == 0);
    std::memset(image, 0, c.end);
    CHECK(leanrt_simpler_v2_upload(image, c.end, nullptr, 0, nullptr, 0) == static_cast<int32_t>(n));
    return std::vector<unsigned char>(image, image + c.end);
}

// The kept mirror looks fresh to the reference's orchestrator: after a run
// of 40 tasks, a dependency on task 20 (not yet submitted in a run of 4)
// finds no producer and ships no edge, as in the stock build's zeroed
// mirror; and the same run after two different histories ships the same
// image byte for byte.
void history_v2() {
    Device dev;
    HostApi api(&kOps, &dev);
    std::vector<unsigned char> arena(1 << 20);
    unsigned char *image = reinterpret_cast<unsigned char *>(
        (reinterpret_cast<uintptr_t>(arena.data()) + 63) & ~static_cast<uintptr_t>(63));
    int32_t fanin = -1;
    // The producer check itself: within a run, task 20 exists when named.
    reference_run(&api, image, 40, 1, 0x31, &fanin);
    CHECK(fanin == 1);
    const std::vector<unsigned char> after_40 = reference_run(&api, image, 4, 20, 0, &fanin);
    CHECK(fanin == 0);  // stock: fanin [] (leanrt before: fanin [20])
    reference_run(&api, image, 30, 0, 0x42, &fanin);
    reference_run(&api, image, 12, 1, 0x53, &fanin);
    const std::vector<unsigned char> after_30_12 = reference_run(&api, image, 4, 20, 0, &fanin);
    CHECK(fanin == 0);
    CHECK(after_40.size() == after_30_12.size());
    CHECK(after_40 == after_30_12);
}

}  // namespace

int main() {
    main_v2();
    history_v2();
    v1_1659();
    two_threads();
    return check_result();
}
