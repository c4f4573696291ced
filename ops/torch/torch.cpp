// SPDX-License-Identifier: Apache-2.0
/// \file
/// `to_torch` and `from_torch`: ferry's tensors as libtorch's and back, sharing the memory.
#include "ferry/torch.hpp"

#include <ATen/Context.h>
#include <torch/version.h>

#include <memory>
#include <string>
#include <vector>

#include "ferry/cuda_tensor.hpp"
#include "ferry/error.hpp"
#include "stream.hpp"

// torch::kUInt16 came with libtorch 2.3.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define FERRY_TORCH_HAS_UINT16 1
#else
#define FERRY_TORCH_HAS_UINT16 0
#endif

namespace ferry {
namespace {

std::string scalar_name(torch::ScalarType t) {
    return c10::toString(t);
}

torch::Device torch_device(const device& d, const char* what) {
    switch (d.kind) {
        case device_kind::cpu:
        case device_kind::cuda_host:
            // Pinned pages are CPU memory to torch; it asks the CUDA runtime whether a pointer
            // is pinned (is_pinned()) rather than keeping a flag.
            return torch::Device(torch::kCPU);
        case device_kind::cuda:
            if (!at::hasCUDA()) {
                throw invalid_argument(std::string(what) +
                                       ": the tensor is on cuda:" + std::to_string(d.index) +
                                       ", and this libtorch has no CUDA (a CPU-only build, or "
                                       "no device); copy it to the host first");
            }
            return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(d.index));
    }
    throw invalid_argument(std::string(what) + ": unknown device kind");
}

/// Shares `t`'s memory; `keep` is what the torch tensor's storage holds until torch frees it.
torch::Tensor share(const tensor& t, std::shared_ptr<void> keep, const char* what) {
    const auto options =
        torch::TensorOptions().dtype(torch_dtype(t.dtype())).device(torch_device(t.device(), what));
    if (t.data() == nullptr) return torch::empty(t.shape(), options);
    // The deleter owns the only reference torch adds: dropping it when the storage goes is what
    // lets the torch tensor outlive the ferry tensor, the batch and the pipeline.
    return torch::from_blob(
        const_cast<void*>(t.data()), t.shape(), t.strides(),
        [keep = std::move(keep)](void*) mutable { keep.reset(); }, options);
}

}  // namespace

torch::ScalarType torch_dtype(dtype t) {
    switch (t) {
        case dtype::u8:
            return torch::kByte;
        case dtype::i8:
            return torch::kChar;
        case dtype::u16:
#if FERRY_TORCH_HAS_UINT16
            return torch::kUInt16;
#else
            throw invalid_argument("to_torch: libtorch " TORCH_VERSION
                                   " has no uint16 type (it came in 2.3); convert the u16 tensor "
                                   "to i32 first");
#endif
        case dtype::i16:
            return torch::kShort;
        case dtype::i32:
            return torch::kInt;
        case dtype::i64:
            return torch::kLong;
        case dtype::f16:
            return torch::kHalf;
        case dtype::f32:
            return torch::kFloat;
        case dtype::f64:
            return torch::kDouble;
    }
    throw invalid_argument("to_torch: unknown dtype " + std::to_string(static_cast<int>(t)));
}

dtype ferry_dtype(torch::ScalarType t) {
    switch (t) {
        case torch::kByte:
            return dtype::u8;
        case torch::kChar:
            return dtype::i8;
#if FERRY_TORCH_HAS_UINT16
        case torch::kUInt16:
            return dtype::u16;
#endif
        case torch::kShort:
            return dtype::i16;
        case torch::kInt:
            return dtype::i32;
        case torch::kLong:
            return dtype::i64;
        case torch::kHalf:
            return dtype::f16;
        case torch::kFloat:
            return dtype::f32;
        case torch::kDouble:
            return dtype::f64;
        default:
            break;
    }
    throw invalid_argument("from_torch: ferry has no element type for torch's " + scalar_name(t) +
                           " (it has u8, i8, u16, i16, i32, i64, f16, f32, f64); convert with "
                           ".to(...) first");
}

namespace detail {

torch::Tensor to_torch_fn::operator()(const tensor& t) const {
    if (t.dim() == 0 && t.data() == nullptr) return {};  // default-constructed: undefined
    return share(t, t.storage().owner, "to_torch");
}

torch::Tensor to_torch_fn::operator()(const cuda_tensor& t) const {
    const tensor& memory = t.as_tensor();
    if (memory.dim() == 0 && memory.data() == nullptr) return {};
    torch_device(memory.device(), "to_torch");  // a CPU-only libtorch: say so before waiting
    // torch's current stream waits for ferry's copy, and the torch tensor holds the
    // cuda_tensor: ferry reuses the block once that stream's work before the release is done.
    t.wait(torch_current_cuda_stream(t.device_index()));
    return share(memory, std::make_shared<cuda_tensor>(t), "to_torch");
}

}  // namespace detail

tensor from_torch(const torch::Tensor& t) {
    if (!t.defined()) return {};
    if (t.is_sparse() || t.is_quantized() || t.layout() != torch::kStrided || t.is_mkldnn()) {
        throw invalid_argument("from_torch: only dense strided tensors share their memory (got " +
                               t.toString() + "); call .to_dense() or .dequantize() first");
    }
    const dtype type = ferry_dtype(t.scalar_type());
    device where{};
    if (t.is_cuda()) {
        where = {device_kind::cuda, static_cast<int>(t.get_device())};
    } else if (t.is_cpu()) {
        where = {t.is_pinned() ? device_kind::cuda_host : device_kind::cpu, 0};
    } else {
        throw invalid_argument("from_torch: a tensor on " + t.device().str() +
                               " (ferry has cpu, pinned cuda_host and cuda)");
    }
    const c10::Storage& storage = t.storage();
    const auto item = static_cast<std::size_t>(t.element_size());
    const auto offset = static_cast<std::size_t>(t.storage_offset()) * item;
    buffer memory;
    memory.data = static_cast<std::byte*>(t.data_ptr());
    memory.size = storage.nbytes() > offset ? storage.nbytes() - offset : 0;
    // The ferry tensor holds torch's storage (not the tensor, and so not the autograd graph).
    auto keep = std::make_shared<c10::Storage>(storage);
    memory.owner = std::shared_ptr<void>(keep, keep.get());
    memory.device = where;
    std::vector<std::int64_t> shape(t.sizes().begin(), t.sizes().end());
    std::vector<std::int64_t> strides(t.strides().begin(), t.strides().end());
    if (memory.data == nullptr) memory.size = 0;
    return tensor(std::move(memory), type, std::move(shape), std::move(strides));
}

}  // namespace ferry
