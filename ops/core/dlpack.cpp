// SPDX-License-Identifier: Apache-2.0
/// \file
/// `tensor::to_dlpack`: a tensor exported through DLPack without copying its elements.
#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "ferry/tensor.hpp"

namespace ferry {
namespace {

/// What a DLManagedTensor's manager_ctx points to: the tensor (so its storage lives) and the
/// shape and stride arrays DLPack refers to.
struct dlpack_context {
    tensor keep;
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> strides;
    DLManagedTensor managed{};
};

DLDataType to_dlpack_type(dtype t) {
    DLDataType d{};
    d.lanes = 1;
    d.bits = static_cast<std::uint8_t>(size_of(t) * 8);
    switch (t) {
        case dtype::u8:
        case dtype::u16:
            d.code = kDLUInt;
            break;
        case dtype::i8:
        case dtype::i16:
        case dtype::i32:
        case dtype::i64:
            d.code = kDLInt;
            break;
        case dtype::f16:
        case dtype::f32:
        case dtype::f64:
            d.code = kDLFloat;
            break;
    }
    return d;
}

}  // namespace

DLManagedTensor* tensor::to_dlpack() const {
    auto ctx = std::make_unique<dlpack_context>();
    ctx->keep = *this;
    ctx->shape = shape_;
    ctx->strides = strides_;
    DLTensor& t = ctx->managed.dl_tensor;
    t.data = storage_.data;
    switch (storage_.device.kind) {
        case device_kind::cpu:
            t.device = {kDLCPU, 0};
            break;
        case device_kind::cuda_host:
            t.device = {kDLCUDAHost, 0};
            break;
        case device_kind::cuda:
            t.device = {kDLCUDA, storage_.device.index};
            break;
    }
    t.ndim = static_cast<std::int32_t>(shape_.size());
    t.dtype = to_dlpack_type(dtype_);
    t.shape = ctx->shape.data();
    t.strides = ctx->strides.data();
    t.byte_offset = 0;
    ctx->managed.manager_ctx = ctx.get();
    ctx->managed.deleter = [](DLManagedTensor* self) {
        delete static_cast<dlpack_context*>(self->manager_ctx);  // NOLINT: DLPack's C contract
    };
    return &ctx.release()->managed;
}

}  // namespace ferry
