// leanrt inside the reference runtime: the adapter (see leanrt_simpler.h).
//
// Built into the reference's a2a3 host runtime by the integration patch, with
// the reference's include paths (common/host_api.h, common/unified_log.h).
//
// Protocol. A maker is created per (layout, task window, heap size) and
// borrowed by one run at a time: bind (v1) or v2_begin_run takes an idle
// maker with the run's layout, window and heap (or creates one), points it
// at the run's device calls (lrt_runtime_maker_set_api) and, for v1, at the
// run's pooled shared-memory region (lrt_runtime_maker_set_device_image),
// and marks it busy; upload ships the run and marks it idle again. A v2
// maker has no region of its own: each upload names where the image goes
// (lrt_runtime_maker_v2_upload_frame). The pool g_makers and every `busy` flag are guarded by
// g_mutex; a busy maker is used only by the thread that bound it (t_current),
// so runs prepared on different threads (different arena banks) at once get
// different makers, and leanrt's one-call-at-a-time rule per maker holds. At
// most kMaxIdle idle makers are kept; beyond that the least recently bound
// is destroyed. A maker owns its host mirror only: the device memory is the
// reference's (its pooled region, its arena), never allocated or freed by
// leanrt.

#include "leanrt_simpler.h"

#include <leanrt.h>

#include <sys/resource.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/host_api.h"
#include "common/unified_log.h"

namespace {

struct Maker {
    lrt_runtime_maker *maker = nullptr;
    lrt_layout layout = LRT_LAYOUT_V1;
    uint64_t task_window = 0;
    uint64_t heap_size = 0;
    uint64_t last_bind = 0;
    bool busy = false;
    uint64_t begin_ns = 0;  // when this run's begin_run returned
    long begin_minflt = 0;  // the process's minor faults then
};

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

long minor_faults() {
    rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

// The run's HostApi is the context of the device calls.
const HostApi *host_api(void *ctx) { return static_cast<const HostApi *>(ctx); }

void *api_device_malloc(void *ctx, size_t size) { return host_api(ctx)->device_malloc(size); }

void api_device_free(void *ctx, void *dev_ptr) { host_api(ctx)->device_free(dev_ptr); }

int32_t api_copy_to_device(void *ctx, void *dev_dst, const void *host_src, size_t size) {
    return host_api(ctx)->copy_to_device(dev_dst, host_src, size);
}

int32_t api_copy_from_device(void *ctx, void *host_dst, const void *dev_src, size_t size) {
    return host_api(ctx)->copy_from_device(host_dst, dev_src, size);
}

const lrt_host_api_ops kHostApiOps = {
    api_device_malloc,
    api_device_free,
    api_copy_to_device,
    api_copy_from_device,
};

constexpr size_t kMaxIdle = 4;

std::mutex g_mutex;
// The pool lives as long as the process (the runtime library is unloaded
// only at exit, and a run may still be prepared while other libraries'
// static destructors run): it is reached through a pointer that is never
// destroyed, so no exit-time destructor frees it under a late run and the
// makers in it stay reachable.
std::vector<Maker *> &g_makers = *new std::vector<Maker *>;  // guarded by g_mutex
uint64_t g_binds = 0;           // guarded by g_mutex
thread_local Maker *t_current = nullptr;

int fail(const char *what, lrt_status status) {
    char message[LRT_LAST_ERROR_BYTES];
    lrt_last_error(message, sizeof message);
    LOG_ERROR("leanrt: %s failed: %s: %s", what, lrt_status_str(status), message);
    return -1;
}

// Under g_mutex: removes `m` from the pool and destroys it.
void drop_locked(Maker *m) {
    for (size_t i = 0; i < g_makers.size(); ++i) {
        if (g_makers[i] == m) {
            g_makers.erase(g_makers.begin() + static_cast<std::ptrdiff_t>(i));
            break;
        }
    }
    lrt_runtime_maker_destroy(m->maker);
    delete m;
}

// Under g_mutex: destroys idle makers beyond kMaxIdle, least recently bound first.
void evict_idle_locked() {
    for (;;) {
        size_t idle = 0;
        size_t oldest = g_makers.size();
        for (size_t i = 0; i < g_makers.size(); ++i) {
            if (g_makers[i]->busy) continue;
            ++idle;
            if (oldest == g_makers.size() || g_makers[i]->last_bind < g_makers[oldest]->last_bind) oldest = i;
        }
        if (idle <= kMaxIdle) return;
        drop_locked(g_makers[oldest]);
    }
}

// Under g_mutex: an idle maker for this layout, window and heap, most recently bound first.
Maker *take_idle_locked(lrt_layout layout, uint64_t task_window, uint64_t heap_size) {
    Maker *best = nullptr;
    for (Maker *m : g_makers) {
        if (m->busy || m->layout != layout || m->task_window != task_window || m->heap_size != heap_size) continue;
        if (best == nullptr || m->last_bind > best->last_bind) best = m;
    }
    return best;
}

// Lends this thread a maker of `layout` for `task_window` and `heap_size`
// copying through `api` (creating one when none is idle): v1 makers upload
// into `region` (`region_size` bytes), v2 makers have no region of their own
// and are told the destination per upload. A run of this thread left between
// bind and upload is ended first.
int lend(lrt_layout layout, const HostApi *api, void *region, uint64_t region_size, uint64_t task_window,
         uint64_t heap_size) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (t_current != nullptr) {
        // This thread's previous run stopped between bind and upload: end
        // it, so that its maker can be rebound.
        lrt_runtime_maker_abort_run(t_current->maker);
        t_current->busy = false;
        t_current = nullptr;
    }
    if (api == nullptr || (layout == LRT_LAYOUT_V1 && region == nullptr)) {
        LOG_ERROR("leanrt: bind needs the run's HostApi (and, for v1, its pooled shared-memory region)");
        return -1;
    }
    // A plain struct: the maker keeps the context pointer, this run's HostApi.
    const lrt_host_api device = {const_cast<HostApi *>(api), &kHostApiOps};
    Maker *m = take_idle_locked(layout, task_window, heap_size);
    if (m == nullptr) {
        lrt_maker_config cfg;
        lrt_maker_config_init(&cfg);
        cfg.task_window = task_window;
        cfg.heap_size = heap_size;
        cfg.layout = layout;
        if (layout == LRT_LAYOUT_V2) {
            // The reference's framing: its arena's copied zone before the
            // image, its graph-submission block after it. The rooms are
            // host address space, touched only as far as runs use them.
            cfg.policy = LRT_UPLOAD_AUTO;
            // For measurements: LEANRT_SIMPLER_POLICY=compact forces the one
            // framed copy (AUTO's other choice being the direct copies).
            const char *policy = std::getenv("LEANRT_SIMPLER_POLICY");
            if (policy != nullptr && std::strcmp(policy, "compact") == 0) cfg.policy = LRT_UPLOAD_COMPACT;
            cfg.frame_before = 1u << 20;
            cfg.frame_after = 1u << 20;
        } else {
            cfg.policy = LRT_UPLOAD_BOUNDED;
        }
        // For measurements: a fresh mirror every run, like the reference's own path.
        const char *fresh = std::getenv("LEANRT_SIMPLER_FRESH_MIRROR");
        if (fresh != nullptr && std::strcmp(fresh, "1") == 0) cfg.flags |= LRT_MAKER_FRESH_MIRROR;
        lrt_runtime_maker *maker = nullptr;
        const lrt_status status = lrt_runtime_maker_create_borrowed(&cfg, &device, region, region_size, &maker);
        if (status != LRT_OK) return fail("lrt_runtime_maker_create_borrowed", status);
        m = new Maker;
        m->maker = maker;
        m->layout = layout;
        m->task_window = task_window;
        m->heap_size = heap_size;
        g_makers.push_back(m);
    } else {
        lrt_status status = LRT_OK;
        if (layout == LRT_LAYOUT_V1) {
            status = lrt_runtime_maker_set_device_image(m->maker, region, region_size);
            if (status != LRT_OK) return fail("lrt_runtime_maker_set_device_image", status);
        }
        status = lrt_runtime_maker_set_api(m->maker, &device);
        if (status != LRT_OK) return fail("lrt_runtime_maker_set_api", status);
    }
    m->busy = true;
    m->last_bind = ++g_binds;
    evict_idle_locked();
    t_current = m;
    return 0;
}

// Ends this thread's run after its upload: the maker is idle again.
void release(Maker *m) {
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        m->busy = false;
    }
    t_current = nullptr;
}

// With LEANRT_SIMPLER_LOG=1, the adapter's line per upload: leanrt's report
// and, between begin_run and upload, the reference's orchestration into the
// mirror. Off by default: the line is written inside the reference's bind
// timers, and a production bind logs nothing per run.
void log_upload(const Maker *m, const lrt_upload_report &report) {
    static const bool enabled = [] {
        const char *v = std::getenv("LEANRT_SIMPLER_LOG");
        return v != nullptr && std::strcmp(v, "1") == 0;
    }();
    if (!enabled) return;
    const uint64_t orch_ns = now_ns() - m->begin_ns;
    const long orch_minflt = minor_faults() - m->begin_minflt;
    LOG_INFO(
        "leanrt: upload tasks=%d copies=%u bytes=%llu path=%s zero_ns=%llu relocate_ns=%llu copy_ns=%llu "
        "orchestration_ns=%llu orchestration_minflt=%ld",
        report.total_tasks, report.copies, static_cast<unsigned long long>(report.bytes),
        report.path == LRT_UPLOAD_COMPACT ? "one-copy" : "split",
        static_cast<unsigned long long>(report.zero_ns), static_cast<unsigned long long>(report.relocate_ns),
        static_cast<unsigned long long>(report.copy_ns), static_cast<unsigned long long>(orch_ns), orch_minflt
    );
}

// The end of a begin_run call on the thread's maker: its header, or NULL
// after logging; from here the orchestration's time and faults are counted.
void *started(void *header, lrt_status status, const char *what) {
    if (status != LRT_OK) {
        fail(what, status);
        return nullptr;
    }
    t_current->begin_minflt = minor_faults();
    t_current->begin_ns = now_ns();
    return header;
}

// The end of an upload call on `m`: the tasks shipped, with the maker idle
// again, or -1 after logging (the run stays the thread's until its next bind).
int32_t finished(Maker *m, lrt_status status, const lrt_upload_report &report, const char *what) {
    if (status != LRT_OK) return fail(what, status);
    log_upload(m, report);
    release(m);
    return report.total_tasks;
}

}  // namespace

int leanrt_simpler_bind(const HostApi *api, void *pooled_sm, uint64_t sm_size, uint64_t task_window,
                        uint64_t heap_size) {
    return lend(LRT_LAYOUT_V1, api, pooled_sm, sm_size, task_window, heap_size);
}

void *leanrt_simpler_begin_run(void) {
    if (t_current == nullptr) {
        LOG_ERROR("leanrt: begin_run without a bound region");
        return nullptr;
    }
    lrt_sm_header *header = nullptr;
    const lrt_status status = lrt_runtime_maker_begin_run(t_current->maker, &header);
    return started(header, status, "lrt_runtime_maker_begin_run");
}

int32_t leanrt_simpler_upload(void) {
    Maker *m = t_current;
    if (m == nullptr || m->layout != LRT_LAYOUT_V1) {
        LOG_ERROR("leanrt: upload without a bound v1 region");
        return -1;
    }
    lrt_upload_report report;
    const lrt_status status = lrt_runtime_maker_upload(m->maker, &report);
    return finished(m, status, report, "lrt_runtime_maker_upload");
}

void *leanrt_simpler_v2_begin_run(const HostApi *api, uint64_t task_window, uint64_t heap_size) {
    if (lend(LRT_LAYOUT_V2, api, nullptr, 0, task_window, heap_size) != 0) return nullptr;
    lrt_v2_sm_header *header = nullptr;
    const lrt_status status = lrt_runtime_maker_v2_begin_run(t_current->maker, &header);
    return started(header, status, "lrt_runtime_maker_v2_begin_run");
}

int leanrt_simpler_v2_set_pool_use(uint64_t fanin_elems, uint64_t tensor_elems, uint64_t scalar_elems,
                                   uint64_t image_bytes) {
    Maker *m = t_current;
    if (m == nullptr || m->layout != LRT_LAYOUT_V2) {
        LOG_ERROR("leanrt: v2_set_pool_use without a v2 run");
        return -1;
    }
    lrt_status status = lrt_runtime_maker_v2_set_pool_use(m->maker, fanin_elems, tensor_elems, scalar_elems);
    if (status != LRT_OK) return fail("lrt_runtime_maker_v2_set_pool_use", status);
    lrt_v2_segments image;
    status = lrt_runtime_maker_v2_image_segments(m->maker, &image);
    if (status != LRT_OK) return fail("lrt_runtime_maker_v2_image_segments", status);
    if (image.end != image_bytes) {
        LOG_ERROR(
            "leanrt: the compact image is %llu bytes; the runtime computed %llu",
            static_cast<unsigned long long>(image.end), static_cast<unsigned long long>(image_bytes)
        );
        return -1;
    }
    return 0;
}

int32_t leanrt_simpler_v2_upload(void *device_image, uint64_t device_room, const void *before, uint64_t before_len,
                                 const void *after, uint64_t after_len) {
    Maker *m = t_current;
    if (m == nullptr || m->layout != LRT_LAYOUT_V2) {
        LOG_ERROR("leanrt: v2_upload without a v2 run");
        return -1;
    }
    const lrt_v2_frame frame = {device_image, device_room, before, before_len, after, after_len};
    lrt_upload_report report;
    const lrt_status status = lrt_runtime_maker_v2_upload_frame(m->maker, &frame, &report);
    return finished(m, status, report, "lrt_runtime_maker_v2_upload_frame");
}
