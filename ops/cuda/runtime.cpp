// SPDX-License-Identifier: Apache-2.0
/// \file
/// `cuda::backend` on the CUDA runtime (cudart), and `cuda::device_count()`. The only host file
/// that includes <cuda_runtime.h>.
#include <cuda_runtime.h>

#include <string>

#include "ferry/cuda.hpp"
#include "ferry/error.hpp"
#include "kernels.hpp"

namespace ferry::cuda {
namespace {

std::string describe_error(cudaError_t e) {
    return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e) + " (code " +
           std::to_string(static_cast<int>(e)) + ")";
}

/// At process exit the runtime may unload before ferry's static or leaked objects are destroyed
/// (DALI's CUDA_DTOR_CALL handles the same): calls then fail with these, and there is nothing
/// left to do.
bool runtime_gone(cudaError_t e) {
    return e == cudaErrorCudartUnloading || e == cudaErrorContextIsDestroyed;
}

class runtime final : public backend {
  public:
    explicit runtime(int device) : device_(device) {}

    int device() const noexcept override { return device_; }

    void* allocate(memory_kind kind, std::size_t bytes) override {
        select("allocate");
        void* p = nullptr;
        const cudaError_t e = kind == memory_kind::pinned_host
                                  ? cudaHostAlloc(&p, bytes, cudaHostAllocPortable)
                                  : cudaMalloc(&p, bytes);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();  // not sticky, but leave nothing for the next caller
            return nullptr;
        }
        check(e, kind == memory_kind::pinned_host ? "cudaHostAlloc" : "cudaMalloc");
        return p;
    }
    void deallocate(memory_kind kind, void* p) noexcept override {
        // Errors are ignored: the runtime may be gone (exit), and a destructor cannot throw.
        if (kind == memory_kind::pinned_host) {
            (void)cudaFreeHost(p);
        } else {
            (void)cudaSetDevice(device_);
            (void)cudaFree(p);
        }
    }
    void* create_stream() override {
        select("cudaStreamCreateWithFlags");
        cudaStream_t s = nullptr;
        // Non-blocking: copies overlap the training loop's work on the legacy default stream
        // instead of serialising with it.
        check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        return s;
    }
    void destroy_stream(void* s) noexcept override {
        (void)cudaStreamDestroy(static_cast<cudaStream_t>(s));
    }
    void* create_event() override {
        select("cudaEventCreateWithFlags");
        cudaEvent_t e = nullptr;
        check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
        return e;
    }
    void destroy_event(void* e) noexcept override {
        (void)cudaEventDestroy(static_cast<cudaEvent_t>(e));
    }
    bool record(void* event, void* stream) override {
        const cudaError_t e =
            cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream));
        if (runtime_gone(e)) return false;
        check(e, "cudaEventRecord");
        return true;
    }
    bool completed(void* event) override {
        const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
        if (e == cudaSuccess || runtime_gone(e)) return true;
        if (e == cudaErrorNotReady) return false;
        check(e, "cudaEventQuery");
        return false;
    }
    void wait(void* stream, void* event) override {
        check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream),
                                  static_cast<cudaEvent_t>(event), 0),
              "cudaStreamWaitEvent");
    }
    void synchronize_event(void* event) override {
        check(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
    }
    void synchronize_stream(void* stream) noexcept override {
        (void)cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
    }
    void copy_to_device(void* dst, const void* src, std::size_t bytes, void* stream) override {
        select("cudaMemcpyAsync");
        check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                              static_cast<cudaStream_t>(stream)),
              "cudaMemcpyAsync");
    }
    void normalize(float* dst, const std::uint8_t* src, std::int64_t n, std::int64_t h,
                   std::int64_t w, std::int64_t c, const float* scale, const float* shift, bool chw,
                   void* stream) override {
        select("normalize");
        check(detail::launch_normalize(dst, src, n, h, w, c, scale, shift, chw,
                                       static_cast<cudaStream_t>(stream)),
              "normalize kernel launch");
    }

  private:
    /// The calling thread (a TBB worker, the consumer) may have another device current.
    void select(const char* what) const { check(cudaSetDevice(device_), what); }

    void check(cudaError_t e, const char* call) const {
        if (e == cudaSuccess) return;
        throw cuda_error(static_cast<int>(e), std::string(call) + " failed on device " +
                                                  std::to_string(device_) + ": " +
                                                  describe_error(e));
    }

    int device_;
};

}  // namespace

int device_count() noexcept {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

bool built_with_cuda() noexcept {
    return true;
}

std::shared_ptr<backend> runtime_backend(int device) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw cuda_error(static_cast<int>(e),
                         "no CUDA device: cudaGetDeviceCount failed with " + describe_error(e) +
                             " (no GPU, no NVIDIA driver, or CUDA_VISIBLE_DEVICES hides them)");
    }
    if (n == 0) {
        throw cuda_error(0, "no CUDA device: the CUDA runtime sees no device");
    }
    if (device < 0 || device >= n) {
        throw cuda_error(static_cast<int>(cudaErrorInvalidDevice),
                         "no CUDA device: device " + std::to_string(device) + " was asked for, " +
                             std::to_string(n) + " present (ordinals 0 to " +
                             std::to_string(n - 1) + ")");
    }
    const cudaError_t set = cudaSetDevice(device);
    if (set != cudaSuccess) {
        throw cuda_error(static_cast<int>(set), "no CUDA device: cudaSetDevice(" +
                                                    std::to_string(device) + ") failed with " +
                                                    describe_error(set));
    }
    return std::make_shared<runtime>(device);
}

}  // namespace ferry::cuda
