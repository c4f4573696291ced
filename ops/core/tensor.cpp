// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::tensor` (construction, shape checks, clone, describe), the dtypes and the allocator
/// a tensor takes its storage from.
#include "ferry/tensor.hpp"

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ferry/error.hpp"

namespace ferry {

std::size_t size_of(dtype t) noexcept {
    switch (t) {
        case dtype::u8:
        case dtype::i8:
            return 1;
        case dtype::u16:
        case dtype::i16:
        case dtype::f16:
            return 2;
        case dtype::i32:
        case dtype::f32:
            return 4;
        case dtype::i64:
        case dtype::f64:
            return 8;
    }
    return 1;
}

const char* to_string(dtype t) noexcept {
    switch (t) {
        case dtype::u8:
            return "u8";
        case dtype::i8:
            return "i8";
        case dtype::u16:
            return "u16";
        case dtype::i16:
            return "i16";
        case dtype::i32:
            return "i32";
        case dtype::i64:
            return "i64";
        case dtype::f16:
            return "f16";
        case dtype::f32:
            return "f32";
        case dtype::f64:
            return "f64";
    }
    return "?";
}

namespace {

std::int64_t count_elements(const std::vector<std::int64_t>& shape) {
    std::int64_t n = 1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] < 0) {
            throw invalid_argument("tensor: dimension " + std::to_string(i) + " has extent " +
                                   std::to_string(shape[i]) + "; extents must be >= 0");
        }
        n *= shape[i];
    }
    return n;
}

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& shape) {
    std::vector<std::int64_t> strides(shape.size());
    std::int64_t s = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        strides[i] = s;
        s *= shape[i];
    }
    return strides;
}

std::string shape_string(const std::vector<std::int64_t>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i != 0) s += ", ";
        s += std::to_string(v[i]);
    }
    return s + "]";
}

}  // namespace

namespace {
thread_local const allocator* current_tensor_allocator = nullptr;
const allocator no_allocator{};
}  // namespace

const allocator& default_tensor_allocator() noexcept {
    return current_tensor_allocator != nullptr ? *current_tensor_allocator : no_allocator;
}

scoped_tensor_allocator::scoped_tensor_allocator(const allocator& alloc) noexcept
    : previous_(current_tensor_allocator) {
    current_tensor_allocator = &alloc;
}

scoped_tensor_allocator::~scoped_tensor_allocator() {
    current_tensor_allocator = previous_;
}

tensor::tensor(ferry::dtype type, std::vector<std::int64_t> shape, const allocator& alloc)
    : dtype_(type), shape_(std::move(shape)) {
    const auto n = static_cast<std::size_t>(count_elements(shape_));
    const std::size_t bytes = n * size_of(type);
    const allocator& chosen = alloc ? alloc : default_tensor_allocator();
    storage_ = chosen ? chosen(bytes) : allocate_host(bytes);
    if (storage_.data == nullptr || storage_.size < bytes) {
        throw invalid_argument("tensor: the allocator returned " + std::to_string(storage_.size) +
                               " bytes for a request of " + std::to_string(bytes));
    }
    strides_ = contiguous_strides(shape_);
}

tensor::tensor(buffer storage, ferry::dtype type, std::vector<std::int64_t> shape,
               std::vector<std::int64_t> strides)
    : storage_(std::move(storage)), dtype_(type), shape_(std::move(shape)) {
    count_elements(shape_);
    if (strides.empty()) {
        strides_ = contiguous_strides(shape_);
    } else {
        if (strides.size() != shape_.size()) {
            throw invalid_argument("tensor: " + std::to_string(strides.size()) + " strides for " +
                                   std::to_string(shape_.size()) + " dimensions");
        }
        strides_ = std::move(strides);
    }
    // The furthest element any index can reach must lie inside the storage.
    std::int64_t last = 0;
    bool any_empty = false;
    for (std::size_t i = 0; i < shape_.size(); ++i) {
        if (shape_[i] == 0) any_empty = true;
        if (strides_[i] < 0) throw invalid_argument("tensor: negative strides are not supported");
        last += (shape_[i] - 1) * strides_[i];
    }
    const std::size_t needed =
        any_empty ? 0 : (static_cast<std::size_t>(last) + 1) * size_of(dtype_);
    if (needed > storage_.size || (needed > 0 && storage_.data == nullptr)) {
        throw invalid_argument("tensor: shape " + shape_string(shape_) + " with strides " +
                               shape_string(strides_) + " needs " + std::to_string(needed) +
                               " bytes; the buffer has " + std::to_string(storage_.size));
    }
}

std::int64_t tensor::numel() const noexcept {
    if (storage_.data == nullptr) return 0;
    std::int64_t n = 1;
    for (auto e : shape_) n *= e;
    return n;
}

std::size_t tensor::nbytes() const noexcept {
    return static_cast<std::size_t>(numel()) * size_of(dtype_);
}

bool tensor::is_contiguous() const noexcept {
    std::int64_t s = 1;
    for (std::size_t i = shape_.size(); i-- > 0;) {
        if (shape_[i] != 1 && strides_[i] != s) return false;
        s *= shape_[i];
    }
    return true;
}

void tensor::check_element_size(std::size_t bytes) const {
    if (bytes != size_of(dtype_)) {
        throw invalid_argument("tensor::data_as: a " + std::to_string(bytes) +
                               "-byte type for a tensor of " + to_string(dtype_));
    }
}

tensor tensor::clone(const allocator& alloc) const {
    tensor out(dtype_, shape_, alloc);
    if (numel() == 0) return out;
    const std::size_t esize = size_of(dtype_);
    if (is_contiguous()) {
        std::memcpy(out.storage_.data, storage_.data, nbytes());
        return out;
    }
    // Walk the elements in row-major order with an index counter.
    std::vector<std::int64_t> index(shape_.size(), 0);
    const auto n = numel();
    std::byte* dst = out.storage_.data;
    for (std::int64_t k = 0; k < n; ++k) {
        std::int64_t offset = 0;
        for (std::size_t i = 0; i < shape_.size(); ++i) offset += index[i] * strides_[i];
        std::memcpy(dst, storage_.data + static_cast<std::size_t>(offset) * esize, esize);
        dst += esize;
        for (std::size_t i = shape_.size(); i-- > 0;) {
            if (++index[i] < shape_[i]) break;
            index[i] = 0;
        }
    }
    return out;
}

std::string tensor::describe() const {
    std::ostringstream s;
    s << "tensor(" << to_string(dtype_) << ", " << shape_string(shape_) << ", ";
    switch (storage_.device.kind) {
        case device_kind::cpu:
            s << "cpu";
            break;
        case device_kind::cuda_host:
            s << "cuda_host";
            break;
        case device_kind::cuda:
            s << "cuda:" << storage_.device.index;
            break;
    }
    s << ')';
    return s.str();
}

}  // namespace ferry
