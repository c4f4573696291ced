// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::tensor, host allocation and the DLPack export.
#include "ferry/tensor.hpp"

#include <dlpack/dlpack.h>
#include <sys/mman.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <sstream>
#include <unordered_map>
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

#if defined(__SANITIZE_ADDRESS__)
constexpr bool recycle_host_blocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool recycle_host_blocks = false;
#else
constexpr bool recycle_host_blocks = true;
#endif
#else
constexpr bool recycle_host_blocks = true;
#endif

constexpr std::size_t host_alignment = 64;
constexpr std::size_t smallest_recycled = std::size_t{32} << 10;

/// The block size a request of `bytes` (>= smallest_recycled) gets: eight classes per power of
/// two, so at most 1/8 of a block is slack.
std::size_t size_class(std::size_t bytes) noexcept {
    const int top = std::bit_width(bytes) - 1;  // 2^top <= bytes
    const std::size_t step = std::size_t{1} << (top - 3);
    return (bytes + step - 1) / step * step;
}

/// Freed host blocks kept for reuse, by exact block size, most recently freed last (hottest).
/// Never destroyed: buffers may outlive static destruction (a tensor in a static, a DLPack
/// capsule freed late), and their deleters come back here.
class host_block_cache {
  public:
    static host_block_cache& instance() {
        static auto* cache = new host_block_cache;  // NOLINT(cppcoreguidelines-owning-memory)
        return *cache;
    }

    void* take(std::size_t block) {
        std::lock_guard lock(mutex_);
        const auto it = free_.find(block);
        if (it == free_.end() || it->second.empty()) return nullptr;
        void* p = it->second.back();
        it->second.pop_back();
        held_ -= block;
        return p;
    }

    void give(void* p, std::size_t block) noexcept {
        {
            std::lock_guard lock(mutex_);
            if (held_ + block <= limit_) {
                try {
                    free_[block].push_back(p);
                    held_ += block;
                    return;
                } catch (...) {  // no room to remember it: free it instead
                }
            }
        }
        std::free(p);  // NOLINT(cppcoreguidelines-no-malloc)
    }

    std::size_t set_limit(std::size_t bytes) noexcept {
        std::lock_guard lock(mutex_);
        const std::size_t old = limit_;
        limit_ = bytes;
        // Oldest first within each size; any order across sizes will do. Rare: free under the
        // lock.
        for (auto& [block, blocks] : free_) {
            auto it = blocks.begin();
            for (; it != blocks.end() && held_ > limit_; ++it) {
                std::free(*it);  // NOLINT(cppcoreguidelines-no-malloc)
                held_ -= block;
            }
            blocks.erase(blocks.begin(), it);
            if (held_ <= limit_) break;
        }
        return old;
    }

    std::size_t limit() noexcept {
        std::lock_guard lock(mutex_);
        return limit_;
    }

    std::size_t held() noexcept {
        std::lock_guard lock(mutex_);
        return held_;
    }

  private:
    std::mutex mutex_;
    std::unordered_map<std::size_t, std::vector<void*>> free_;
    std::size_t held_ = 0;
    std::size_t limit_ = recycle_host_blocks ? std::size_t{64} << 20 : 0;
};

/// A fresh block for the cache. Smaller blocks are prefaulted in one call (MADV_POPULATE_WRITE,
/// Linux 5.14+; ignored before): a page fault per 4 KiB costs most of a fresh block's first use,
/// most of all in a VM, and a loader's first batch is made of fresh blocks (time to first batch
/// -17% on a 2-core VM). Blocks of 2 MiB and more (batches) start on a 2 MiB boundary and ask for
/// transparent huge pages: one page fault per 2 MiB instead of 512 when first written (where the
/// kernel's THP mode is `madvise` or `always`; elsewhere the advice is ignored).
void* allocate_block(std::size_t block) {
    constexpr std::size_t huge = std::size_t{2} << 20;
    if (block < huge) {
        void* p = std::aligned_alloc(host_alignment, block);
#if defined(MADV_POPULATE_WRITE)
        if (p != nullptr) {
            constexpr std::uintptr_t page = 4096;
            const auto a = reinterpret_cast<std::uintptr_t>(p);
            const std::uintptr_t first = (a + page - 1) & ~(page - 1);
            const std::uintptr_t last = (a + block) & ~(page - 1);
            if (last > first) {
                ::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
            }
        }
#endif
        return p;
    }
    // posix_memalign, not aligned_alloc: the block need not be a multiple of the alignment.
    void* p = nullptr;
    if (::posix_memalign(&p, huge, block) != 0) return nullptr;
#if defined(MADV_HUGEPAGE)
    if (p != nullptr) ::madvise(p, block / huge * huge, MADV_HUGEPAGE);
#endif
    return p;
}

}  // namespace

buffer allocate_host(std::size_t bytes) {
    buffer b;
    b.size = bytes;
    if (bytes >= smallest_recycled) {
        const std::size_t block = size_class(bytes);  // a multiple of 4 KiB: of the alignment too
        auto& cache = host_block_cache::instance();
        void* p = cache.take(block);
        if (p == nullptr) p = allocate_block(block);
        if (p == nullptr) throw std::bad_alloc();
        b.data = static_cast<std::byte*>(p);
        b.owner = std::shared_ptr<void>(
            p, [block](void* q) { host_block_cache::instance().give(q, block); });
        return b;
    }
    // aligned_alloc wants a multiple of the alignment; a zero-byte request still gets a
    // distinct, freeable pointer so that "no storage" and "empty storage" stay apart.
    const std::size_t rounded = ((bytes + host_alignment - 1) / host_alignment) * host_alignment;
    void* p = std::aligned_alloc(host_alignment, rounded == 0 ? host_alignment : rounded);
    if (p == nullptr) throw std::bad_alloc();
    b.data = static_cast<std::byte*>(p);
    b.owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
    return b;
}

std::size_t set_host_cache_limit(std::size_t bytes) noexcept {
    return host_block_cache::instance().set_limit(bytes);
}

std::size_t host_cache_limit() noexcept {
    return host_block_cache::instance().limit();
}

std::size_t host_cache_bytes() noexcept {
    return host_block_cache::instance().held();
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
