// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ops::collate` of tensors and of numbers: equally shaped host tensors stacked into one
/// contiguous batch, numbers gathered into a 1-D tensor. (The image overload is ferry::image's,
/// in ops/image/transform.cpp; pairs, tuples and structs are the header's template, over these.)
#include "ferry/collate.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ferry/error.hpp"

namespace ferry::ops::detail {

tensor collate_fn::operator()(std::vector<tensor> tensors, const collate_options& options) const {
    if (tensors.empty()) throw invalid_argument("collate: the batch is empty");
    const tensor& first = tensors.front();
    for (std::size_t i = 1; i < tensors.size(); ++i) {
        const tensor& t = tensors[i];
        if (t.dtype() != first.dtype() || t.shape() != first.shape()) {
            throw invalid_argument("collate: tensor " + std::to_string(i) + " is " + t.describe() +
                                   " but tensor 0 is " + first.describe());
        }
    }
    std::vector<std::int64_t> shape{static_cast<std::int64_t>(tensors.size())};
    shape.insert(shape.end(), first.shape().begin(), first.shape().end());
    tensor out(first.dtype(), std::move(shape), options.alloc);
    const std::size_t each = first.nbytes();
    auto* dst = static_cast<std::byte*>(out.data());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const tensor& t = tensors[i];
        if (t.device().kind == device_kind::cuda) {
            throw invalid_argument("collate: tensor " + std::to_string(i) +
                                   " is on a CUDA device; collate works on host memory");
        }
        if (t.is_contiguous()) {
            std::memcpy(dst + i * each, t.data(), each);
        } else {
            const tensor c = t.clone();
            std::memcpy(dst + i * each, c.data(), each);
        }
    }
    return out;
}

tensor collate_numbers(ferry::dtype type, const void* values, std::size_t count,
                       const collate_options& options) {
    if (count == 0) throw invalid_argument("collate: the batch is empty");
    tensor out(type, {static_cast<std::int64_t>(count)}, options.alloc);
    std::memcpy(out.data(), values, count * size_of(type));
    return out;
}

}  // namespace ferry::ops::detail
