// SPDX-License-Identifier: Apache-2.0
/// \file
/// The device values of `ferry::cuda` (link `ferry::cuda`): `cuda_tensor`, `cuda_error`, the
/// device count, the runtime backend, and the pinned and device memory pools. No builder: code
/// that receives device tensors without calling `to_cuda()` (`ferry::torch`'s `to_torch`, a
/// training loop's helpers) includes this header; <ferry/cuda.hpp>, which has `to_cuda()`,
/// includes it too.
///
/// Includes no CUDA header: streams and events appear as `void*` (a `cudaStream_t` or
/// `cudaEvent_t` converts to and from it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/export.hpp"
#include "ferry/tensor.hpp"

namespace ferry {
namespace detail {
struct cuda_lease;
}  // namespace detail

/// A tensor in GPU memory, produced by `to_cuda()`: device pointer, dtype, shape, the device,
/// and the event that completes when its copy (and normalize kernel) has finished.
///
/// The copy is asynchronous: before GPU work reads the data, make that work's stream wait with
/// `wait(stream)` (no host blocking), or block the host with `synchronize()`. Work on a stream
/// that was not passed to `wait()` must be finished before the last copy of the tensor goes, or
/// its memory may be reused under it (as PyTorch's `record_stream`).
///
/// Copies share the memory (as `ferry::tensor`). When the last copy (or DLPack export) goes, the
/// memory returns to the transfer's caching allocator, to be reused once the work queued on
/// every stream passed to `wait()` has finished. Safe to destroy after the CUDA runtime has
/// unloaded (at process exit): the memory is then left to the driver.
class FERRY_API cuda_tensor {
  public:
    cuda_tensor() = default;
    /// Wraps device memory; `lease` carries the event and the pool (see `cuda::transfer_context`).
    cuda_tensor(tensor device_tensor, std::shared_ptr<detail::cuda_lease> lease)
        : tensor_(std::move(device_tensor)), lease_(std::move(lease)) {}

    [[nodiscard]] ferry::dtype dtype() const noexcept { return tensor_.dtype(); }
    [[nodiscard]] const std::vector<std::int64_t>& shape() const noexcept {
        return tensor_.shape();
    }
    /// Strides in elements: contiguous (row-major) for every tensor `to_cuda()` copied; a tensor
    /// that was already on the device passes through with its own strides.
    [[nodiscard]] const std::vector<std::int64_t>& strides() const noexcept {
        return tensor_.strides();
    }
    [[nodiscard]] std::size_t dim() const noexcept { return tensor_.dim(); }
    [[nodiscard]] std::int64_t size(std::size_t i) const { return tensor_.size(i); }
    [[nodiscard]] std::int64_t numel() const noexcept { return tensor_.numel(); }
    [[nodiscard]] std::size_t nbytes() const noexcept { return tensor_.nbytes(); }
    [[nodiscard]] bool empty() const noexcept { return tensor_.empty(); }
    /// The device pointer.
    [[nodiscard]] void* data() const noexcept { return const_cast<void*>(tensor_.data()); }
    /// The CUDA device ordinal.
    [[nodiscard]] int device_index() const noexcept { return tensor_.device().index; }
    /// The `cudaStream_t` the copy was queued on (nullptr when there was no copy).
    [[nodiscard]] void* stream() const noexcept;
    /// The `cudaEvent_t` recorded after the copy (nullptr when there was no copy).
    [[nodiscard]] void* event() const noexcept;

    /// Makes `consumer_stream` (a `cudaStream_t`; nullptr is the legacy default stream) wait for
    /// the copy, without blocking the host (`cudaStreamWaitEvent`), and remembers the stream so
    /// that the memory is reused only after the work queued on it before the tensor is released:
    /// an event is recorded on it then, from whichever thread releases the last copy. So the
    /// stream must outlive the tensor (a block whose event cannot be recorded is never reused:
    /// `pool_stats::blocks_abandoned`), and `cudaStreamPerThread` is refused with
    /// `ferry::invalid_argument`: it names another stream on the releasing thread. Pass the
    /// stream's own handle (or nullptr, or `cudaStreamLegacy`).
    void wait(void* consumer_stream) const;
    /// Blocks the calling thread until the copy has finished (`cudaEventSynchronize`). Assumes
    /// the data is then used on the legacy default stream (remembered as with `wait(nullptr)`).
    void synchronize() const;
    /// True once the copy has finished (`cudaEventQuery`); never blocks.
    [[nodiscard]] bool ready() const;

    /// Exports the memory through DLPack (`kDLCUDA`, the device ordinal) without copying, after
    /// `wait(consumer_stream)`: hand the consumer's stream (PyTorch's current stream, for
    /// `torch.utils.dlpack.from_dlpack`). The export keeps the memory alive until its deleter
    /// runs.
    [[nodiscard]] DLManagedTensor* to_dlpack(void* consumer_stream) const;

    /// The memory as a `ferry::tensor` (device `cuda`, sharing the memory; no event attached:
    /// call `wait` or `synchronize` first).
    [[nodiscard]] const tensor& as_tensor() const noexcept { return tensor_; }

    /// E.g. `"cuda_tensor(f32, [32, 3, 224, 224], cuda:0)"`.
    [[nodiscard]] std::string describe() const;

  private:
    tensor tensor_{};
    std::shared_ptr<detail::cuda_lease> lease_{};
};

/// A CUDA runtime call failed: `errc::cuda`, with the runtime's own error code (a `cudaError_t`)
/// and a message naming the call, the device and the runtime's description.
class FERRY_API cuda_error : public error {
  public:
    cuda_error(int native_code, const std::string& what)
        : error(errc::cuda, what), native_code_(native_code) {}
    /// The `cudaError_t` value; 0 when the error did not come from a runtime call.
    [[nodiscard]] int native_code() const noexcept { return native_code_; }

  private:
    int native_code_;
};

namespace cuda {

/// Number of CUDA devices usable by this process: 0 when there is no driver, no device, or ferry
/// was built without CUDA. Never throws.
[[nodiscard]] FERRY_API int device_count() noexcept;

/// True when ferry was built with CUDA (`FERRY_CUDA`); `device_count()` may still be 0.
[[nodiscard]] FERRY_API bool built_with_cuda() noexcept;

/// Which memory a pool hands out.
enum class memory_kind : std::uint8_t {
    pinned_host,  ///< page-locked host memory (`cudaHostAlloc`), `device_kind::cuda_host`
    device,       ///< GPU memory (`cudaMalloc`), `device_kind::cuda`
};

/// The CUDA runtime calls the transfer and its pools make, behind a small interface so that
/// their bookkeeping (reuse, events gating reuse, staging) is testable without a GPU. Streams and
/// events are opaque handles (`cudaStream_t`, `cudaEvent_t` for the real runtime). Every call may
/// come from any thread.
class FERRY_API backend {
  public:
    virtual ~backend() = default;
    /// The device ordinal the memory, streams and events belong to.
    [[nodiscard]] virtual int device() const noexcept = 0;
    /// `bytes` of `kind` memory, or nullptr when out of memory (other failures throw).
    [[nodiscard]] virtual void* allocate(memory_kind kind, std::size_t bytes) = 0;
    virtual void deallocate(memory_kind kind, void* p) noexcept = 0;
    [[nodiscard]] virtual void* create_stream() = 0;
    virtual void destroy_stream(void* stream) noexcept = 0;
    [[nodiscard]] virtual void* create_event() = 0;
    virtual void destroy_event(void* event) noexcept = 0;
    /// Records `event` after the work queued on `stream` so far. false when the runtime is gone
    /// (process exit): the caller then gives up on reuse. Throws on other errors.
    virtual bool record(void* event, void* stream) = 0;
    /// True once everything `event` was recorded after has finished (true for a never-recorded
    /// event, as `cudaEventQuery`).
    [[nodiscard]] virtual bool completed(void* event) = 0;
    /// Makes `stream` wait for `event` without blocking the host.
    virtual void wait(void* stream, void* event) = 0;
    /// Blocks the host until `event` has completed.
    virtual void synchronize_event(void* event) = 0;
    /// Blocks the host until `stream` is idle; errors are ignored (used on shutdown).
    virtual void synchronize_stream(void* stream) noexcept = 0;
    /// Queues a host-to-device copy of `bytes` on `stream`.
    virtual void copy_to_device(void* dst, const void* src, std::size_t bytes, void* stream) = 0;
    /// Queues the `u8 -> f32` normalize kernel: `src` is `n` images of `h x w x c` bytes, `dst`
    /// `n` images of floats (`c x h x w` when `chw`, else `h x w x c`); `scale[c] = 1 / (255 *
    /// std[c])`, `shift[c] = -mean[c] / std[c]`.
    virtual void normalize(float* dst, const std::uint8_t* src, std::int64_t n, std::int64_t h,
                           std::int64_t w, std::int64_t c, const float* scale, const float* shift,
                           bool chw, void* stream) = 0;
};

/// The CUDA runtime on `device`. Every call it makes runs with `device` current and gives the
/// calling thread its own device back (a fresh thread, with no context yet, is left on `device`
/// rather than given a context on GPU 0). Throws `ferry::error` (`errc::cuda`) whose message starts
/// with "no CUDA device: " when there is no usable device or `device` is out of range, and "ferry
/// was built without CUDA" when it was.
[[nodiscard]] FERRY_API std::shared_ptr<backend> runtime_backend(int device = 0);

/// Options of a `memory_pool`.
struct pool_options {
    /// The device (for the CUDA runtime backend).
    int device = 0;
    /// Idle memory kept cached for reuse, at most; idle blocks beyond it go back to CUDA.
    std::size_t max_cached_bytes = std::size_t{1} << 30;
};

/// What a pool has done; all counts since it was made.
struct pool_stats {
    std::uint64_t acquires = 0;        ///< requests served
    std::uint64_t reuses = 0;          ///< requests served with a cached block
    std::uint64_t allocations = 0;     ///< blocks allocated from the backend (`cudaHostAlloc`, ...)
    std::uint64_t frees = 0;           ///< blocks given back to the backend
    std::uint64_t events_created = 0;  ///< events created for gating reuse (they are recycled)
    std::size_t bytes_in_use = 0;      ///< held by live buffers now
    std::size_t bytes_cached = 0;      ///< idle blocks kept for reuse now (some may wait on events)
    std::size_t blocks_waiting = 0;    ///< idle blocks whose last use has not finished yet
    /// Blocks never reused nor freed because no event could be recorded on a stream that used
    /// them (a consumer stream destroyed before the tensor, a failing runtime): a leak is better
    /// than a race.
    std::uint64_t blocks_abandoned = 0;
    /// Allocations that failed until the pool waited for its idle blocks' last uses and freed
    /// them (out of memory while blocks were cached).
    std::uint64_t retries_after_waiting = 0;
};

/// A caching allocator of pinned host or device memory. Steady state allocates nothing: a
/// released block is reused for the next request it fits (best fit, at most twice the size),
/// but only once the GPU work recorded against it (`record_use`) has finished.
///
/// A handle: copies share the pool. Buffers keep the pool alive.
class FERRY_API memory_pool {
  public:
    memory_pool(std::shared_ptr<backend> b, memory_kind kind, pool_options options = {});

    /// A buffer of at least `bytes` (its `device` says what memory it is). The memory returns
    /// to the pool when the buffer's `owner` (every copy) is gone. Out of memory, the pool frees
    /// its idle blocks (waiting for the last use of those still in use on the GPU) and tries
    /// again; throws `ferry::cuda_error` (`errc::cuda`) when that fails too.
    [[nodiscard]] buffer acquire(std::size_t bytes) const;
    /// `acquire` as a `ferry::allocator`, the hook of `ops::collate` and `tensor`:
    /// \code
    ///   ferry::cuda::pinned_pool pool;
    ///   .map([&](std::vector<ferry::image> imgs) {
    ///       return ferry::ops::collate(std::move(imgs), {.alloc = pool.as_allocator()});
    ///   })
    /// \endcode
    [[nodiscard]] allocator as_allocator() const;
    /// Work queued on `stream` (until `b` is released) uses `b`: the block is reused only after
    /// that work has finished. `b` must come from this pool.
    void record_use(const buffer& b, void* stream) const;
    /// Gives every idle block whose last use has finished back to the backend.
    void trim() const;
    [[nodiscard]] pool_stats stats() const;
    [[nodiscard]] memory_kind kind() const noexcept;

    struct state;  ///< the implementation (shared with the buffers' owners)

  private:
    std::shared_ptr<state> state_;
};

/// A pool of pinned host memory on the CUDA runtime: collate batches into it and `to_cuda()`
/// copies them to the device directly, without a staging copy. Throws as `runtime_backend`.
class FERRY_API pinned_pool : public memory_pool {
  public:
    explicit pinned_pool(pool_options options = {})
        : memory_pool(runtime_backend(options.device), memory_kind::pinned_host, options) {}
};

}  // namespace cuda

}  // namespace ferry
