// A stand-in for the reference runtime's common/host_api.h: the four device
// calls the adapter uses, with the reference's signatures (a runner context
// and a table of functions, called through HostApi's const members), over
// whatever the test provides. Only what the adapter needs is declared.
#pragma once

#include <cstddef>

struct HostApiOps {
    void *(*device_malloc)(void *runner_ctx, size_t size);
    void (*device_free)(void *runner_ctx, void *dev_ptr);
    int (*copy_to_device)(void *runner_ctx, void *dev_ptr, const void *host_ptr, size_t size);
    int (*copy_from_device)(void *runner_ctx, void *host_ptr, const void *dev_ptr, size_t size);
};

class HostApi {
public:
    HostApi(const HostApiOps *ops, void *runner_ctx) : ops_(ops), runner_ctx_(runner_ctx) {}
    void *device_malloc(size_t size) const { return ops_->device_malloc(runner_ctx_, size); }
    void device_free(void *dev_ptr) const { ops_->device_free(runner_ctx_, dev_ptr); }
    int copy_to_device(void *dev_ptr, const void *host_ptr, size_t size) const {
        return ops_->copy_to_device(runner_ctx_, dev_ptr, host_ptr, size);
    }
    int copy_from_device(void *host_ptr, const void *dev_ptr, size_t size) const {
        return ops_->copy_from_device(runner_ctx_, host_ptr, dev_ptr, size);
    }

private:
    const HostApiOps *ops_;
    void *runner_ctx_;
};
