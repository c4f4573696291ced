// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::tensor`: an n-dimensional array with a dtype, shape, strides, owning (shared) storage
/// and a device tag, exportable through DLPack; and the allocator hook batches are built with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ferry/export.hpp"

struct DLManagedTensor;  // <dlpack/dlpack.h>; only the implementation includes it

namespace ferry {

/// Element types a tensor can hold.
enum class dtype : std::uint8_t { u8, i8, u16, i16, i32, i64, f16, f32, f64 };

/// Bytes per element of `t` (e.g. 4 for `dtype::f32`).
[[nodiscard]] FERRY_API std::size_t size_of(dtype t) noexcept;
/// The name of `t`, e.g. `"u8"`, `"f32"`.
[[nodiscard]] FERRY_API const char* to_string(dtype t) noexcept;

/// Where memory lives.
enum class device_kind : std::uint8_t {
    cpu,        ///< ordinary host memory
    cuda_host,  ///< page-locked ("pinned") host memory the GPU can copy from asynchronously
    cuda,       ///< GPU memory
};

/// A device: its kind and, for CUDA, its ordinal.
struct device {
    device_kind kind = device_kind::cpu;
    int index = 0;
    friend bool operator==(const device&, const device&) = default;
};

/// A block of memory and what keeps it alive. `owner` releases the memory when its last copy
/// goes, so a buffer can come from anywhere (the default heap, a pinned pool, a memory map).
struct buffer {
    std::byte* data = nullptr;
    std::size_t size = 0;
    std::shared_ptr<void> owner;
    ferry::device device{};
};

/// Allocates a buffer of at least the given number of bytes. The hook through which batches are
/// built in memory that is not the default heap (the CUDA transfer hands in pinned memory):
/// \code
///   ferry::allocator pinned = [&pool](std::size_t n) { return pool.acquire(n); };
///   auto batch = ferry::ops::collate(std::move(images), {.alloc = pinned});
/// \endcode
using allocator = std::function<buffer(std::size_t bytes)>;

/// Host memory from the heap, 64-byte aligned and uninitialised. What an empty `allocator` means.
///
/// Blocks of 32 KiB and more are recycled: when the last owner lets go, the block goes to a
/// process-wide cache (size classes at most 1/8 apart), and the next request of its class gets it
/// back, still mapped and likely still in the CPU's cache. A loader allocates the same few sizes
/// over and over (file buffers, decoded images, batches); without recycling, glibc maps fresh
/// pages for many of them, and the page faults and cold writes cost a data loader about as much
/// as its engine. Fresh blocks come in 2 MiB transparent huge pages (where the kernel's THP mode
/// is `madvise` or `always`): blocks under 2 MiB are carved from 2 MiB slabs, larger ones are
/// mappings of their own rounded up to whole 2 MiB pages, so a first batch pays a page fault per
/// 2 MiB instead of one per 4 KiB. The cache holds at most `host_cache_limit()` bytes (64 MiB
/// unless set); over it, the least recently freed blocks give their pages back to the kernel
/// first. Builds with AddressSanitizer take blocks from the heap and do not recycle unless a
/// limit is set (so that a use after free is still caught).
[[nodiscard]] FERRY_API buffer allocate_host(std::size_t bytes);

/// Sets how many bytes of freed host blocks `allocate_host` may keep for reuse (0 = none), and
/// frees what is cached beyond it. Returns the previous limit. Thread-safe.
FERRY_API std::size_t set_host_cache_limit(std::size_t bytes) noexcept;

/// The bytes of freed host blocks `allocate_host` may keep for reuse.
[[nodiscard]] FERRY_API std::size_t host_cache_limit() noexcept;

/// The bytes of freed host blocks held for reuse now.
[[nodiscard]] FERRY_API std::size_t host_cache_bytes() noexcept;

/// The allocator that a tensor made with an empty `allocator` uses on the calling thread: empty
/// (the heap, `allocate_host`) except while a stage that feeds `to_cuda()` runs, where ferry sets
/// it to that transfer's pinned pool, so that the batch is built where the copy to the GPU reads
/// it (one host copy, not two). See `cuda_options::pinned_batches`.
[[nodiscard]] FERRY_API const allocator& default_tensor_allocator() noexcept;

/// Sets `default_tensor_allocator()` on this thread until destroyed, then puts the previous one
/// back. For engines and tests; ferry sets it itself around the stage before `to_cuda()`.
class FERRY_API scoped_tensor_allocator {
  public:
    explicit scoped_tensor_allocator(const allocator& alloc) noexcept;
    ~scoped_tensor_allocator();
    scoped_tensor_allocator(const scoped_tensor_allocator&) = delete;
    scoped_tensor_allocator& operator=(const scoped_tensor_allocator&) = delete;

  private:
    const allocator* previous_;
};

/// An n-dimensional array: dtype, shape, strides (in elements), storage and device.
///
/// Copying a tensor shares its storage (as in PyTorch); `clone()` copies the elements.
/// A default-constructed tensor is empty (no dimensions, no storage).
class FERRY_API tensor {
  public:
    tensor() = default;

    /// A contiguous (row-major) tensor with uninitialised elements, allocated by `alloc` (when
    /// empty: `default_tensor_allocator()`, else the heap). Throws `ferry::invalid_argument` on a
    /// negative extent.
    tensor(ferry::dtype type, std::vector<std::int64_t> shape, const allocator& alloc = {});

    /// Adopts `storage`: the tensor's elements start at `storage.data`. Empty `strides` means
    /// contiguous. Throws `ferry::invalid_argument` when the elements do not fit in `storage`.
    tensor(buffer storage, ferry::dtype type, std::vector<std::int64_t> shape,
           std::vector<std::int64_t> strides = {});

    [[nodiscard]] ferry::dtype dtype() const noexcept { return dtype_; }
    [[nodiscard]] const std::vector<std::int64_t>& shape() const noexcept { return shape_; }
    /// Strides in elements (not bytes), one per dimension.
    [[nodiscard]] const std::vector<std::int64_t>& strides() const noexcept { return strides_; }
    [[nodiscard]] std::size_t dim() const noexcept { return shape_.size(); }
    /// Extent of dimension `i`.
    [[nodiscard]] std::int64_t size(std::size_t i) const { return shape_.at(i); }
    /// Number of elements (1 for a 0-dimensional tensor with storage, 0 when empty).
    [[nodiscard]] std::int64_t numel() const noexcept;
    /// Bytes the elements span: `numel() * size_of(dtype())` when contiguous.
    [[nodiscard]] std::size_t nbytes() const noexcept;
    [[nodiscard]] bool empty() const noexcept { return storage_.data == nullptr; }
    [[nodiscard]] bool is_contiguous() const noexcept;
    [[nodiscard]] ferry::device device() const noexcept { return storage_.device; }

    [[nodiscard]] void* data() noexcept { return storage_.data; }
    [[nodiscard]] const void* data() const noexcept { return storage_.data; }
    /// The elements as `T`. Throws `ferry::invalid_argument` when `T`'s size is not the dtype's.
    template <class T>
    [[nodiscard]] T* data_as() {
        check_element_size(sizeof(T));
        return reinterpret_cast<T*>(storage_.data);
    }
    template <class T>
    [[nodiscard]] const T* data_as() const {
        check_element_size(sizeof(T));
        return reinterpret_cast<const T*>(storage_.data);
    }
    /// The raw bytes of a contiguous tensor.
    [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
        return {storage_.data, nbytes()};
    }
    /// The storage (shared with every copy of this tensor).
    [[nodiscard]] const buffer& storage() const noexcept { return storage_; }

    /// A contiguous copy of the elements in fresh memory from `alloc`.
    [[nodiscard]] tensor clone(const allocator& alloc = {}) const;

    /// Exports the tensor through DLPack without copying. The returned tensor keeps the storage
    /// alive until its `deleter` is called (the consumer calls it: PyTorch's `from_dlpack`,
    /// CuPy, JAX, or you).
    [[nodiscard]] DLManagedTensor* to_dlpack() const;

    /// E.g. `"tensor(u8, [32, 224, 224, 3], cpu)"`.
    [[nodiscard]] std::string describe() const;

  private:
    void check_element_size(std::size_t bytes) const;

    buffer storage_{};
    ferry::dtype dtype_ = ferry::dtype::u8;
    std::vector<std::int64_t> shape_;
    std::vector<std::int64_t> strides_;
};

}  // namespace ferry
