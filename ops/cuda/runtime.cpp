// SPDX-License-Identifier: Apache-2.0
/// \file
/// `cuda::backend` on the CUDA runtime (cudart), and `cuda::device_count()`. The only host file
/// that includes <cuda_runtime.h>.
///
/// Two rules every call here keeps:
///  * It runs under a `device_guard` for the backend's device: events, streams and copies belong
///    to that device whatever the calling thread had current, and the caller gets its own device
///    back (see device_guard.hpp for the one exception).
///  * A query that answers "not ready" (`cudaEventQuery`) clears the error it leaves behind: the
///    runtime keeps `cudaErrorNotReady` as the thread's last error, and the next launch check
///    (`cudaGetLastError()` after the normalize kernel) would report it as the launch's failure.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <string>

#include "device_guard.hpp"
#include "ferry/cuda_tensor.hpp"
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

/// The driver's cuDevicePrimaryCtxGetState, looked up through the runtime (ferry does not link
/// libcuda, so that a build with CUDA still loads on a machine without the driver); null when
/// the driver does not have it.
PFN_cuDevicePrimaryCtxGetState_v7000 primary_context_state() noexcept {
    static const auto fn = [] {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult found{};
        if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &p, 7000,
                                             cudaEnableDefault, &found) != cudaSuccess ||
            found != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();
            return static_cast<PFN_cuDevicePrimaryCtxGetState_v7000>(nullptr);
        }
        return reinterpret_cast<PFN_cuDevicePrimaryCtxGetState_v7000>(p);
    }();
    return fn;
}

/// The CUDA runtime's current-device calls, for `basic_device_guard`.
struct cudart_devices {
    static bool get(int& device) noexcept {
        if (cudaGetDevice(&device) == cudaSuccess) return true;
        (void)cudaGetLastError();
        return false;
    }
    static int set(int device) noexcept {
        const cudaError_t e = cudaSetDevice(device);
        if (e != cudaSuccess) (void)cudaGetLastError();
        return static_cast<int>(e);
    }
    static bool has_context(int device) noexcept {
        const auto state = primary_context_state();
        // Without the query, restore: a context on the caller's device is the lesser harm than
        // a thread left on another device than the one it chose.
        if (state == nullptr) return true;
        unsigned int flags = 0;
        int active = 0;
        return state(static_cast<CUdevice>(device), &flags, &active) == CUDA_SUCCESS && active != 0;
    }
};

using device_guard = detail::basic_device_guard<cudart_devices>;

class runtime final : public backend {
  public:
    explicit runtime(int device) : device_(device) {}

    int device() const noexcept override { return device_; }

    void* allocate(memory_kind kind, std::size_t bytes) override {
        const device_guard guard(device_);
        selected(guard, "allocate");
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
        const device_guard guard(device_);
        const cudaError_t e = kind == memory_kind::pinned_host ? cudaFreeHost(p) : cudaFree(p);
        if (e != cudaSuccess) (void)cudaGetLastError();
    }
    void* create_stream() override {
        const device_guard guard(device_);
        selected(guard, "cudaStreamCreateWithFlags");
        cudaStream_t s = nullptr;
        // Non-blocking: copies overlap the training loop's work on the legacy default stream
        // instead of serialising with it.
        check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        return s;
    }
    void destroy_stream(void* s) noexcept override {
        const device_guard guard(device_);
        if (cudaStreamDestroy(static_cast<cudaStream_t>(s)) != cudaSuccess) {
            (void)cudaGetLastError();
        }
    }
    void* create_event() override {
        const device_guard guard(device_);
        selected(guard, "cudaEventCreateWithFlags");
        cudaEvent_t e = nullptr;
        check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
        return e;
    }
    void destroy_event(void* e) noexcept override {
        const device_guard guard(device_);
        if (cudaEventDestroy(static_cast<cudaEvent_t>(e)) != cudaSuccess) {
            (void)cudaGetLastError();
        }
    }
    bool record(void* event, void* stream) override {
        const device_guard guard(device_);
        const cudaError_t e =
            cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream));
        if (runtime_gone(e)) {
            (void)cudaGetLastError();
            return false;
        }
        check(e, "cudaEventRecord");
        return true;
    }
    bool completed(void* event) override {
        const device_guard guard(device_);
        const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
        if (e == cudaSuccess) return true;
        (void)cudaGetLastError();  // NotReady stays as the thread's last error otherwise
        if (runtime_gone(e)) return true;
        if (e == cudaErrorNotReady) return false;
        check(e, "cudaEventQuery");
        return false;
    }
    void wait(void* stream, void* event) override {
        const device_guard guard(device_);
        check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream),
                                  static_cast<cudaEvent_t>(event), 0),
              "cudaStreamWaitEvent");
    }
    void synchronize_event(void* event) override {
        const device_guard guard(device_);
        check(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
    }
    void synchronize_stream(void* stream) noexcept override {
        const device_guard guard(device_);
        if (cudaStreamSynchronize(static_cast<cudaStream_t>(stream)) != cudaSuccess) {
            (void)cudaGetLastError();
        }
    }
    void copy_to_device(void* dst, const void* src, std::size_t bytes, void* stream) override {
        const device_guard guard(device_);
        selected(guard, "cudaMemcpyAsync");
        check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                              static_cast<cudaStream_t>(stream)),
              "cudaMemcpyAsync");
    }
    void normalize(float* dst, const std::uint8_t* src, std::int64_t n, std::int64_t h,
                   std::int64_t w, std::int64_t c, const float* scale, const float* shift, bool chw,
                   void* stream) override {
        const device_guard guard(device_);
        selected(guard, "normalize");
        check(detail::launch_normalize(dst, src, n, h, w, c, scale, shift, chw,
                                       static_cast<cudaStream_t>(stream)),
              "normalize kernel launch");
    }

  private:
    /// Throws when the guard could not make the backend's device current.
    void selected(const device_guard& guard, const char* what) const {
        check(static_cast<cudaError_t>(guard.error()), what);
    }

    void check(cudaError_t e, const char* call) const {
        if (e == cudaSuccess) return;
        (void)cudaGetLastError();  // a non-sticky error must not fail the caller's next check
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
        std::string hint = " (no GPU, no NVIDIA driver, or CUDA_VISIBLE_DEVICES hides them)";
        if (e == cudaErrorInsufficientDriver) {
            int driver = 0;
            int runtime = 0;
            (void)cudaDriverGetVersion(&driver);
            (void)cudaRuntimeGetVersion(&runtime);
            const auto version = [](int v) {
                return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
            };
            hint = driver == 0
                       ? " (no NVIDIA driver is loaded: no GPU here, or its driver is missing)"
                       : " (the driver supports CUDA " + version(driver) +
                             ", ferry was built with CUDA " + version(runtime) +
                             ": update the NVIDIA driver; CUDA 13 needs R580 or newer)";
        }
        throw cuda_error(static_cast<int>(e), "no CUDA device: cudaGetDeviceCount failed with " +
                                                  describe_error(e) + hint);
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
    // Checks that the device can be used, and puts the caller's device back.
    const device_guard guard(device);
    if (guard.error() != 0) {
        throw cuda_error(guard.error(),
                         "no CUDA device: cudaSetDevice(" + std::to_string(device) +
                             ") failed with " +
                             describe_error(static_cast<cudaError_t>(guard.error())));
    }
    return std::make_shared<runtime>(device);
}

}  // namespace ferry::cuda
