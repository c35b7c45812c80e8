// leanrt inside the reference runtime: the adapter (see leanrt_simpler.h).
//
// Built into the reference's a2a3 host runtime by the integration patch, with
// the reference's include paths (common/host_api.h, common/unified_log.h).
//
// Protocol. A Stage is one pooled shared-memory region of the reference (one
// arena bank) and the maker that uploads into it. Stages live in g_stages,
// guarded by g_mutex; the current stage of a thread is t_current, set by
// bind. The reference leases a bank to one preparing thread at a time, so a
// stage's maker and its `api` field are only touched by the thread that bound
// it; `busy` (under g_mutex) keeps a stage that is between bind and upload
// from being evicted by another thread. At most kMaxStages idle stages are
// kept: a region the reference frees and reallocates elsewhere leaves its
// stage unused, and the least recently bound idle stage is destroyed when a
// new one is needed.
//
// The device calls are the run's own HostApi (the reference builds it per
// run), reached through the stage; the device image is the reference's pooled
// region, never allocated or freed by leanrt.

#include "leanrt_simpler.h"

#include <leanrt.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/host_api.h"
#include "common/unified_log.h"

namespace {

struct Stage {
    void *region = nullptr;  // the reference's pooled region (borrowed)
    uint64_t region_size = 0;
    uint64_t task_window = 0;
    uint64_t heap_size = 0;
    const HostApi *api = nullptr;  // this run's device calls
    lrt_runtime_maker *maker = nullptr;
    uint64_t last_bind = 0;
    bool busy = false;
};

// create allocates the image through the table: it gets the borrowed region.
void *stage_device_malloc(void *ctx, size_t size) {
    Stage *stage = static_cast<Stage *>(ctx);
    return size <= stage->region_size ? stage->region : nullptr;
}

// The only allocation is the borrowed region, which the reference frees.
void stage_device_free(void *, void *) {}

int32_t stage_copy_to_device(void *ctx, void *dev_dst, const void *host_src, size_t size) {
    return static_cast<Stage *>(ctx)->api->copy_to_device(dev_dst, host_src, size);
}

int32_t stage_copy_from_device(void *ctx, void *host_dst, const void *dev_src, size_t size) {
    return static_cast<Stage *>(ctx)->api->copy_from_device(host_dst, dev_src, size);
}

const lrt_host_api_ops kStageOps = {
    stage_device_malloc,
    stage_device_free,
    stage_copy_to_device,
    stage_copy_from_device,
};

constexpr size_t kMaxStages = 8;

std::mutex g_mutex;
std::vector<Stage *> g_stages;  // guarded by g_mutex
uint64_t g_binds = 0;           // guarded by g_mutex
thread_local Stage *t_current = nullptr;

int fail(const char *what, lrt_status status) {
    char message[512];
    lrt_last_error(message, sizeof message);
    LOG_ERROR("leanrt: %s failed: %s: %s", what, lrt_status_str(status), message);
    return -1;
}

void destroy_stage(Stage *stage) {
    lrt_runtime_maker_destroy(stage->maker);
    delete stage;
}

// Under g_mutex: drops idle stages beyond the bound, least recently bound first.
void evict_idle_locked() {
    for (;;) {
        size_t idle = 0;
        Stage *oldest = nullptr;
        for (Stage *stage : g_stages) {
            if (stage->busy) continue;
            ++idle;
            if (oldest == nullptr || stage->last_bind < oldest->last_bind) oldest = stage;
        }
        if (idle <= kMaxStages) return;
        for (size_t i = 0; i < g_stages.size(); ++i) {
            if (g_stages[i] == oldest) {
                g_stages.erase(g_stages.begin() + static_cast<std::ptrdiff_t>(i));
                break;
            }
        }
        destroy_stage(oldest);
    }
}

Stage *find_stage_locked(void *region, uint64_t task_window, uint64_t heap_size) {
    for (Stage *stage : g_stages) {
        if (stage->region == region && stage->task_window == task_window && stage->heap_size == heap_size) {
            return stage;
        }
    }
    return nullptr;
}

}  // namespace

int leanrt_simpler_bind(const HostApi *api, void *pooled_sm, uint64_t sm_size, uint64_t task_window,
                        uint64_t heap_size) {
    t_current = nullptr;
    if (api == nullptr || pooled_sm == nullptr) {
        LOG_ERROR("leanrt: bind needs the run's HostApi and its pooled shared-memory region");
        return -1;
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    Stage *stage = find_stage_locked(pooled_sm, task_window, heap_size);
    if (stage == nullptr) {
        stage = new Stage;
        stage->region = pooled_sm;
        stage->region_size = sm_size;
        stage->task_window = task_window;
        stage->heap_size = heap_size;
        stage->api = api;
        lrt_maker_config cfg;
        lrt_maker_config_init(&cfg);
        cfg.task_window = task_window;
        cfg.heap_size = heap_size;
        cfg.policy = LRT_UPLOAD_BOUNDED;
        const lrt_host_api device = {stage, &kStageOps};
        const lrt_status status = lrt_runtime_maker_create(&cfg, &device, &stage->maker);
        if (status != LRT_OK) {
            delete stage;
            return fail("lrt_runtime_maker_create", status);
        }
        g_stages.push_back(stage);
    }
    stage->api = api;
    stage->busy = true;
    stage->last_bind = ++g_binds;
    evict_idle_locked();
    t_current = stage;
    return 0;
}

void *leanrt_simpler_begin_run(void) {
    if (t_current == nullptr) {
        LOG_ERROR("leanrt: begin_run without a bound region");
        return nullptr;
    }
    lrt_sm_header *header = nullptr;
    const lrt_status status = lrt_runtime_maker_begin_run(t_current->maker, &header);
    if (status != LRT_OK) {
        fail("lrt_runtime_maker_begin_run", status);
        return nullptr;
    }
    return header;
}

int32_t leanrt_simpler_upload(void) {
    Stage *stage = t_current;
    if (stage == nullptr) {
        LOG_ERROR("leanrt: upload without a bound region");
        return -1;
    }
    lrt_upload_report report;
    const lrt_status status = lrt_runtime_maker_upload(stage->maker, &report);
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        stage->busy = false;
    }
    t_current = nullptr;
    if (status != LRT_OK) return fail("lrt_runtime_maker_upload", status);
    LOG_INFO(
        "leanrt: upload tasks=%d copies=%u bytes=%llu zero_ns=%llu relocate_ns=%llu copy_ns=%llu",
        report.total_tasks, report.copies, static_cast<unsigned long long>(report.bytes),
        static_cast<unsigned long long>(report.zero_ns), static_cast<unsigned long long>(report.relocate_ns),
        static_cast<unsigned long long>(report.copy_ns)
    );
    return report.total_tasks;
}
