// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry and libtorch (PyTorch's C++ frontend): `to_torch` and `from_torch` hand tensors across
/// without copying. The header that exists to expose libtorch: it includes `<torch/types.h>`.
///
/// \code
///   #include <ferry/torch.hpp>   // find_package(ferry COMPONENTS ferry image torch)
///                                // target_link_libraries(app PRIVATE ferry::torch ...)
///   auto pipe = ferry::from(train, sampling)
///                   .map(load_and_augment, 8)          // -> ferry::image
///                   .batch(64)
///                   .map(ferry::ops::collate)          // -> ferry::tensor u8 [64, H, W, C]
///                   .map(ferry::to_torch)              // -> torch::Tensor, same memory
///                   .build();
///   for (torch::Tensor& x : pipe) {
///       auto input = x.permute({0, 3, 1, 2}).to(torch::kFloat).div_(255);
///       ...
///   }
/// \endcode
///
/// **Memory.** Neither direction copies: the torch tensor's `data_ptr()` is the ferry tensor's
/// `data()` (and back), with the same shape and strides. Each side keeps the other's storage
/// alive: a torch tensor made by `to_torch` holds a reference to ferry's buffer (its deleter
/// drops it), a ferry tensor made by `from_torch` holds a reference to torch's storage. So
/// either may outlive the other, the batch it came from and the pipeline that made it. Writes
/// through one are seen through the other.
///
/// **Pinned memory.** A `cuda_host` (page-locked) ferry tensor becomes a CPU torch tensor over
/// the same pinned pages; where libtorch is built with CUDA, `is_pinned()` is then true (torch
/// asks the CUDA runtime about the pointer) and `.to(torch::kCUDA, /*non_blocking=*/true)` is
/// an asynchronous copy. This is what a pipeline ending in `collate` before `to_cuda()` makes
/// (`cuda_options::pinned_batches`). A CPU-only libtorch (Debian's) has no notion of pinned
/// memory: the tensor is an ordinary CPU tensor, `is_pinned()` false.
///
/// **CUDA streams (libtorch built with CUDA only).** For a `ferry::cuda_tensor` (what
/// `to_cuda()` delivers), `to_torch` makes torch's *current* CUDA stream on the tensor's device
/// wait for ferry's copy (`cuda_tensor::wait(current stream)`: an event wait on the GPU, the
/// host does not block), and the torch tensor keeps the `cuda_tensor` alive, so ferry reuses the
/// memory only once the work queued on that stream before the torch tensor's release has
/// finished. The rule: use the tensor on the stream that was current when you called
/// `to_torch` (torch's default, unless you set one). To use it on another stream too, call
/// `cuda_tensor::wait(stream)` with that stream before `to_torch` (not torch's
/// `record_stream`: ferry's pool, not torch's caching allocator, owns the memory). A plain
/// `ferry::tensor` on a CUDA device carries no event: it is converted as it is, and ordering is
/// the caller's. Without CUDA in libtorch, converting device memory throws
/// `ferry::invalid_argument`.
///
/// **Types.** u8, i8, i16, i32, i64, f16, f32 and f64 map to torch's kByte, kChar, kShort,
/// kInt, kLong, kHalf, kFloat and kDouble. ferry's u16 has no torch type before libtorch 2.3 and
/// torch's bool, bfloat16, complex, quantized and sparse tensors have no ferry type: those throw
/// `ferry::invalid_argument` naming the type.
#pragma once

#include <torch/types.h>

#include <tuple>
#include <utility>

#include "ferry/cuda_tensor.hpp"
#include "ferry/export.hpp"
#include "ferry/tensor.hpp"

namespace ferry {

/// torch's element type for `t`. Throws `ferry::invalid_argument` for a type torch lacks.
[[nodiscard]] FERRY_API torch::ScalarType torch_dtype(dtype t);

/// ferry's element type for `t`. Throws `ferry::invalid_argument` for a type ferry lacks
/// (bool, bfloat16, complex, quantized types).
[[nodiscard]] FERRY_API dtype ferry_dtype(torch::ScalarType t);

namespace detail {
/// One function object for both kinds of tensor, so that `map(ferry::to_torch)` works after
/// `collate` (a `ferry::tensor`) and after `to_cuda()` (a `ferry::cuda_tensor`), and for pairs
/// and tuples of them (what `collate` gives for a batch of labelled samples).
struct FERRY_API to_torch_fn {
    torch::Tensor operator()(const tensor& t) const;
    torch::Tensor operator()(const cuda_tensor& t) const;
    /// Each element converted, first first: `std::pair<torch::Tensor, torch::Tensor>` for a pair
    /// of tensors (pairs and tuples inside convert likewise).
    template <class A, class B>
    auto operator()(const std::pair<A, B>& p) const
        -> std::pair<decltype((*this)(p.first)), decltype((*this)(p.second))> {
        return {(*this)(p.first), (*this)(p.second)};
    }
    /// Each element converted, in order: `std::tuple<torch::Tensor, ...>` for a tuple of tensors.
    template <class... T>
    auto operator()(const std::tuple<T...>& t) const
        -> std::tuple<decltype((*this)(std::declval<const T&>()))...> {
        return std::apply(
            [this](const T&... e) {
                // Braces: converted in order, so of two that cannot convert the first is named.
                return std::tuple<decltype((*this)(std::declval<const T&>()))...>{(*this)(e)...};
            },
            t);
    }
};
}  // namespace detail

/// The same memory as a `torch::Tensor`: same data pointer, shape, strides and element type,
/// device `cpu` (also for pinned `cuda_host` memory) or `cuda:<index>`. The torch tensor keeps
/// ferry's storage alive. A tensor with no elements becomes an empty torch tensor of its shape;
/// an empty (default-constructed) ferry tensor, an undefined `torch::Tensor`. Throws
/// `ferry::invalid_argument` for u16 (before libtorch 2.3) and for device memory when libtorch has
/// no CUDA. A plain function object: \code
///   auto pipe = ferry::from(paths).map(load).batch(32).map(ferry::ops::collate)
///                   .map(ferry::to_torch).build();
/// \endcode
/// A `std::pair` or `std::tuple` of tensors (what `collate` makes of a batch of pairs, tuples or
/// structs) becomes a `std::pair` or `std::tuple` of `torch::Tensor`s, each converted as above,
/// without a copy: \code
///   auto pipe = ferry::from(train).map(load_sample, 8)  // -> std::pair<ferry::image, int64_t>
///                   .batch(64).map(ferry::ops::collate).map(ferry::to_torch).build();
///   for (auto& [images, labels] : pipe) { ... }         // u8 [64, H, W, C], kLong [64]
/// \endcode
inline constexpr detail::to_torch_fn to_torch{};

/// The same memory as a `ferry::tensor`: same data pointer, shape, strides (any: transposed,
/// sliced, expanded) and element type; device `cpu`, `cuda_host` where torch says the memory
/// is pinned, or `cuda`. The ferry tensor keeps torch's storage alive (not the autograd graph:
/// it is the data of `t`, as `t.detach()`). An undefined `torch::Tensor` becomes an empty
/// (default-constructed) ferry tensor. Throws `ferry::invalid_argument` for a sparse, quantized or
/// non-strided tensor, a type ferry lacks, or a device other than CPU and CUDA.
[[nodiscard]] FERRY_API tensor from_torch(const torch::Tensor& t);

}  // namespace ferry
