// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::ops::collate`: a batch of equally shaped tensors (or images) stacked into one
/// contiguous tensor, allocated where the next step wants it.
#pragma once

#include <vector>

#include "ferry/export.hpp"
#include "ferry/tensor.hpp"

namespace ferry {

class image;       // <ferry/image.hpp>
class image_slot;  // <ferry/batch_slots.hpp>

/// Options for `collate`.
struct collate_options {
    /// Where the batch is allocated: the CUDA transfer hands in pinned memory here.
    allocator alloc{};
};

namespace ops {
namespace detail {
/// One function object for every kind of batch, so that `map(ferry::ops::collate)` works on
/// each. The tensor overload lives in `ferry::core` (every ferry library links it); the image
/// and slot overloads in `ferry::image`, with `ferry::image` itself (`#include
/// <ferry/image.hpp>`, `<ferry/batch_slots.hpp>`).
struct FERRY_API collate_fn {
    tensor operator()(std::vector<image> images, const collate_options& options = {}) const;
    tensor operator()(std::vector<tensor> tensors, const collate_options& options = {}) const;
    /// Slots of `ferry::batch_slots`: their batch's tensor itself where they are its slots 0,
    /// 1, ... in order (`options.alloc` unused: the batch is where batch_slots allocated it),
    /// else a copy allocated with `options.alloc`.
    tensor operator()(std::vector<image_slot> slots, const collate_options& options = {}) const;
};
}  // namespace detail

/// Stacks equally sized images into one contiguous `u8` N x H x W x C tensor (or equally shaped
/// tensors into an N x ... tensor), allocated with `options.alloc`. Different sizes, formats,
/// dtypes or shapes throw `ferry::invalid_argument` naming the first mismatching element; an
/// empty batch too, and so does a tensor on a CUDA device (collate works on host memory).
/// \code
///   auto pipe = ferry::from(paths)
///                   .map(load_features)              // -> ferry::tensor f32 [128]
///                   .batch(32)
///                   .map(ferry::ops::collate)        // -> ferry::tensor f32 [32, 128]
///                   .build();
/// \endcode
inline constexpr detail::collate_fn collate{};

}  // namespace ops
}  // namespace ferry
