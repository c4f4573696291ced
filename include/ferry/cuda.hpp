// SPDX-License-Identifier: Apache-2.0
/// \file
/// The CUDA transfer (`ferry::cuda`, link `ferry::cuda`): `builder<T>::to_cuda()`, device tensors,
/// pinned and device memory pools, and the `ferry::cuda_transfer<T>` customization point.
///
/// Includes no CUDA header: streams and events appear as `void*` (a `cudaStream_t` or
/// `cudaEvent_t` converts to and from it), so code that never calls `to_cuda()` needs neither the
/// CUDA Toolkit nor `ferry::cuda`; <ferry/ferry.hpp> does not include this header.
///
/// Names: what a pipeline's user names — the options and result of `to_cuda()`, its error, the
/// customization point — is `ferry::cuda_*` (`cuda_options`, `cuda_tensor`, `cuda_error`,
/// `cuda_transfer<T>`, `cuda_normalize`); the machinery under it (pools, backends, the transfer
/// context) lives in `ferry::cuda::` without the prefix.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/builder.hpp"
#include "ferry/detail/spec.hpp"
#include "ferry/error.hpp"
#include "ferry/export.hpp"
#include "ferry/tensor.hpp"

namespace ferry {

/// Convert `u8` images to `f32` on the device, after the copy: `(pixel / 255 - mean[c]) /
/// std[c]`, the same arithmetic as `ops::normalize`. The bus carries a quarter of the bytes the
/// float tensor would need. Applies to every `u8` tensor of 3 (H x W x C) or 4 (N x H x W x C)
/// dimensions whose last extent is `mean.size()`; other tensors are copied as they are.
struct cuda_normalize {
    /// Per channel; ImageNet's by default (as `ops::normalize`).
    std::vector<float> mean{0.485F, 0.456F, 0.406F};
    std::vector<float> std{0.229F, 0.224F, 0.225F};
    /// `true`: the result is (N x) C x H x W, what PyTorch models take; `false`: (N x) H x W x C.
    bool chw = true;
};

namespace cuda {
class backend;
}  // namespace cuda

/// Options of `builder<T>::to_cuda({...})`. Declaration order is part of the API (designated
/// initializers):
/// \code
///   .to_cuda({.device = 0, .normalize = ferry::cuda_normalize{}})
/// \endcode
struct cuda_options {
    /// The CUDA device ordinal the data goes to.
    int device = 0;
    /// Pinned host memory the staging pool keeps cached while idle, at most. Staging is needed
    /// only for tensors not already in pinned memory (see `cuda::pinned_pool`).
    std::size_t pinned_cache_bytes = std::size_t{1} << 30;
    /// Device memory the caching allocator keeps cached while idle, at most. Blocks in use do not
    /// count; once batches are released they are reused without `cudaMalloc`.
    std::size_t device_cache_bytes = std::size_t{4} << 30;
    /// Set: `u8` images become normalized `f32` on the device (see `cuda_normalize`). Every
    /// `std` must be finite and non-zero and every `mean` finite (`build()` throws
    /// `ferry::invalid_argument` otherwise, as the host's `ops::normalize` does). Tensors that
    /// are already on the device are not copied and so not normalized: they pass through as
    /// they are.
    std::optional<cuda_normalize> normalize{};
    /// True: tensors made in the stage right before `to_cuda()` with the default allocator (the
    /// batch `ops::collate` makes) are allocated in this transfer's pinned pool, so they are
    /// copied to the device directly, with no staging copy. Only when that stage is a `map`.
    bool pinned_batches = true;
    /// Empty: the CUDA runtime. Tests pass a fake (see `cuda::backend`).
    std::shared_ptr<cuda::backend> backend{};
};

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

/// What a transfer has done; counts since it was made.
struct transfer_stats {
    std::uint64_t tensors = 0;        ///< tensors copied to the device
    std::uint64_t bytes = 0;          ///< bytes that crossed the bus
    std::uint64_t direct_copies = 0;  ///< copied straight from pinned memory
    std::uint64_t staged_copies = 0;  ///< copied into pinned staging first (pageable input)
    std::uint64_t staged_bytes = 0;   ///< bytes copied into staging on the host
    std::uint64_t normalized = 0;     ///< tensors converted to f32 on the device
    std::uint64_t in_flight = 0;      ///< copies whose source is still held (not finished)
};

/// The state one `to_cuda()` stage shares across its calls: the backend, a copy stream, the
/// pinned staging pool and the caching device allocator. Made by `build()`; what a
/// `cuda_transfer<T>` specialization copies its tensors with.
class FERRY_API transfer_context {
  public:
    /// Throws `ferry::error` (`errc::cuda`, "no CUDA device: ...") when the device is missing.
    explicit transfer_context(cuda_options options);

    /// Queues the copy of `t` to the device and returns at once. A pageable tensor is first
    /// copied into pinned staging; a pinned one (`device_kind::cuda_host`) is copied directly
    /// and kept alive until its copy has finished. With `normalize` set, `u8` images arrive as
    /// `f32`. An empty tensor gives an empty `cuda_tensor`.
    [[nodiscard]] cuda_tensor copy(const tensor& t) const;

    [[nodiscard]] int device() const noexcept;
    /// The `cudaStream_t` copies are queued on.
    [[nodiscard]] void* stream() const noexcept;
    [[nodiscard]] const cuda_options& options() const noexcept;
    [[nodiscard]] memory_pool pinned() const;
    [[nodiscard]] memory_pool device_memory() const;
    [[nodiscard]] transfer_stats stats() const;

    struct state;

  private:
    std::shared_ptr<state> state_;
};

}  // namespace cuda

/// The customization point: how a value of type `T` goes to the GPU. A specialization has
/// `operator()(T, cuda::transfer_context&)` returning the device-side value. ferry specializes
/// it for `ferry::tensor` (-> `cuda_tensor`), `std::vector` of transferable values, and
/// `std::pair` / `std::tuple` with at least one transferable member (the others — labels, ids —
/// come along unchanged). Specialize it for your own sample or batch type:
/// \code
///   struct batch { ferry::tensor images; ferry::tensor labels; std::vector<std::string> paths; };
///   struct device_batch { ferry::cuda_tensor images; ferry::cuda_tensor labels;
///                         std::vector<std::string> paths; };
///   template <>
///   struct ferry::cuda_transfer<batch> {
///       device_batch operator()(batch b, ferry::cuda::transfer_context& ctx) const {
///           return {ctx.copy(b.images), ctx.copy(b.labels), std::move(b.paths)};
///       }
///   };
///   auto pipe = ferry::from(...).map(make_batch).to_cuda().build();   // yields device_batch
/// \endcode
template <class T>
struct cuda_transfer;

namespace cuda {

/// True when `ferry::cuda_transfer<T>` is defined for `T` (`T` can go through `to_cuda()`).
template <class T>
concept transferable = requires(std::remove_cvref_t<T>&& v, transfer_context& ctx) {
    cuda_transfer<std::remove_cvref_t<T>>{}(std::move(v), ctx);
};

/// What `cuda_transfer<T>` turns a `T` into.
template <transferable T>
using transfer_result_t = std::remove_cvref_t<decltype(cuda_transfer<std::remove_cvref_t<T>>{}(
    std::declval<std::remove_cvref_t<T>&&>(), std::declval<transfer_context&>()))>;

/// `cuda_transfer<T>{}(value, ctx)`: for use inside your own specializations.
template <transferable T>
[[nodiscard]] auto transfer(T&& value, transfer_context& ctx) {
    return cuda_transfer<std::remove_cvref_t<T>>{}(std::forward<T>(value), ctx);
}

/// `transfer(value, ctx)` for a transferable value; anything else is returned unchanged.
template <class T>
[[nodiscard]] auto transfer_or_keep(T&& value, transfer_context& ctx) {
    if constexpr (transferable<T>) {
        return transfer(std::forward<T>(value), ctx);
    } else {
        return std::remove_cvref_t<T>(std::forward<T>(value));
    }
}

/// Makes the context `to_cuda()` stages share; throws as `transfer_context`'s constructor.
[[nodiscard]] inline std::shared_ptr<transfer_context> make_transfer_context(
    const cuda_options& options) {
    return std::make_shared<transfer_context>(options);
}

}  // namespace cuda

/// A tensor goes to the device as a `cuda_tensor`.
template <>
struct cuda_transfer<tensor> {
    cuda_tensor operator()(const tensor& t, cuda::transfer_context& ctx) const {
        return ctx.copy(t);
    }
};

/// A vector of transferable values, element by element.
template <class T>
requires cuda::transferable<T>
struct cuda_transfer<std::vector<T>> {
    auto operator()(std::vector<T> values, cuda::transfer_context& ctx) const {
        std::vector<cuda::transfer_result_t<T>> out;
        out.reserve(values.size());
        for (auto& v : values) out.push_back(cuda::transfer(std::move(v), ctx));
        return out;
    }
};

/// A pair with at least one transferable member; the other comes along unchanged.
template <class A, class B>
requires(cuda::transferable<A> || cuda::transferable<B>) struct cuda_transfer<std::pair<A, B>> {
    auto operator()(std::pair<A, B> p, cuda::transfer_context& ctx) const {
        auto first = cuda::transfer_or_keep(std::move(p.first), ctx);
        auto second = cuda::transfer_or_keep(std::move(p.second), ctx);
        return std::pair<decltype(first), decltype(second)>(std::move(first), std::move(second));
    }
};

/// A tuple with at least one transferable member; the others come along unchanged.
template <class... Ts>
requires(cuda::transferable<Ts> || ...) struct cuda_transfer<std::tuple<Ts...>> {
    auto operator()(std::tuple<Ts...> t, cuda::transfer_context& ctx) const {
        // Braced initialization evaluates (and so copies) the members in order.
        return std::apply(
            [&ctx](Ts&... members) {
                return std::tuple<decltype(cuda::transfer_or_keep(std::move(members), ctx))...>{
                    cuda::transfer_or_keep(std::move(members), ctx)...};
            },
            t);
    }
};

namespace detail {

/// `builder<T>::to_cuda(options)`: a serial, ordered map named "to_cuda". Its build step makes one
/// transfer context (stream, events, pools) per built pipeline, and asks for its input in the
/// context's pinned pool (`input_allocator`), so that the collate before it builds the batch
/// where the copy reads it: one host copy, not two.
template <class T>
struct cuda_stage<T, void> {
    using options = cuda_options;

    template <class Builder>
    static auto append(const Builder& b, cuda_options options) {
        if constexpr (!cuda::transferable<T>) {
            static_assert(cuda::transferable<T>,
                          "ferry::builder<T>::to_cuda(): no ferry::cuda_transfer<T> for the "
                          "pipeline's element type T; specialize ferry::cuda_transfer<T> for it "
                          "(see <ferry/cuda.hpp>)");
            return b;
        } else {
            using R = cuda::transfer_result_t<T>;
            stage_spec s;
            s.kind = stage_kind::map;
            s.options = stage_options{.concurrency = 1, .name = "to_cuda", .ordered = true};
            s.map_fn = [](any_value&, any_value&, bool) {
                throw error(errc::internal, "to_cuda: the stage ran without being built");
            };
            s.on_build = [options = std::move(options)](stage_spec& self) {
                std::shared_ptr<cuda::transfer_context> ctx = cuda::make_transfer_context(options);
                self.map_fn = [ctx](any_value& in, any_value& out, bool) {
                    R result = cuda_transfer<T>{}(in.take_as<T>(), *ctx);
                    out.emplace<R>(std::move(result));
                };
                if (ctx->options().pinned_batches)
                    self.input_allocator = ctx->pinned().as_allocator();
            };
            return b.template then<R>(std::move(s));
        }
    }
};

}  // namespace detail

}  // namespace ferry
