// SPDX-License-Identifier: Apache-2.0
/// \file
/// The CUDA transfer (`ferry::cuda`, link `ferry::cuda`): `builder<T>::to_cuda()`, its options,
/// the transfer context, and the `ferry::cuda_transfer<T>` customization point. The device values
/// it delivers (`cuda_tensor`, `cuda_error`, the pinned and device memory pools) are in
/// <ferry/cuda_tensor.hpp>, which this header includes; code that only receives device tensors
/// (`ferry::torch`) includes that one and sees no builder.
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
#include "ferry/cuda_tensor.hpp"
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

namespace cuda {

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
