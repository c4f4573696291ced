// SPDX-License-Identifier: Apache-2.0
/// \file
/// The host memory tensors and bytes live in: `allocate_host` and its cache of freed blocks.
#include <sys/mman.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

#include "ferry/tensor.hpp"

namespace ferry {
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

constexpr std::size_t huge_page = std::size_t{2} << 20;

/// A 2 MiB, 2 MiB-aligned mapping with transparent huge pages that blocks under 2 MiB are carved
/// from, front to back. Carved space is never carved again: a block lives in the cache's free
/// lists until it is evicted, and then its pages go back to the kernel (MADV_DONTNEED); the
/// mapping goes when its last block is evicted.
struct slab {
    std::byte* base = nullptr;
    std::size_t carved = 0;  ///< bytes handed out so far, from the front
    std::size_t live = 0;    ///< carved blocks not evicted (in use or in the cache)
};

/// `bytes` (a multiple of 2 MiB) of fresh, 2 MiB-aligned address space that asks for
/// transparent huge pages, or nullptr.
std::byte* map_huge(std::size_t bytes) noexcept {
    // Over-map by one huge page and trim, so that the mapping starts on a 2 MiB boundary.
    void* raw = ::mmap(nullptr, bytes + huge_page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto a = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (a + huge_page - 1) & ~(huge_page - 1);
    if (aligned > a) ::munmap(raw, aligned - a);
    const std::uintptr_t end = a + bytes + huge_page;
    if (end > aligned + bytes) {
        ::munmap(reinterpret_cast<void*>(aligned + bytes), end - (aligned + bytes));
    }
    auto* p = reinterpret_cast<std::byte*>(aligned);
#if defined(MADV_HUGEPAGE)
    ::madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

/// Freed host blocks kept for reuse, by exact block size, most recently freed last (hottest);
/// over its limit the cache lets the least recently freed blocks go first.
/// Never destroyed: buffers may outlive static destruction (a tensor in a static, a DLPack
/// capsule freed late), and their deleters come back here.
///
/// Where the memory comes from: a page fault per 4 KiB page costs most of a fresh block's first
/// use (about 10 us a page in a VM, 5 us even when prefaulted with MADV_POPULATE_WRITE; 0.3 us a
/// page in 2 MiB pages), and a loader's first batches are made of fresh blocks. So blocks under
/// 2 MiB are carved from 2 MiB huge-page slabs, and blocks of 2 MiB and more are mappings of
/// their own rounded up to whole huge pages (where the kernel's THP mode is `madvise` or
/// `always`; elsewhere the advice is ignored and the pages are 4 KiB). Builds with
/// AddressSanitizer use the heap instead, so that overflows and uses after free are caught.
class host_block_cache {
  public:
    struct block_ref {
        void* p = nullptr;
        slab* from = nullptr;  ///< the slab it was carved from; nullptr: a mapping or heap block
    };

    static host_block_cache& instance() {
        static auto* cache = new host_block_cache;  // NOLINT(cppcoreguidelines-owning-memory)
        return *cache;
    }

    /// A block of `block` bytes (a size class): from the cache, else fresh.
    block_ref take(std::size_t block) {
        std::lock_guard lock(mutex_);
        const auto it = free_.find(block);
        if (it != free_.end() && !it->second.empty()) {
            const block_ref r = it->second.back().r;
            it->second.pop_back();
            held_ -= block;
            return r;
        }
        return fresh(block);
    }

    /// Keeps a freed block for reuse; over the limit, the least recently freed blocks (of any
    /// size) go, so that a size class in use keeps its blocks when others have gone stale.
    void give(block_ref r, std::size_t block) noexcept {
        std::lock_guard lock(mutex_);
        if (block <= limit_) {
            try {
                free_[block].push_back({r, ++freed_count_});
                held_ += block;
                trim();
                return;
            } catch (...) {  // no room to remember it: release it instead
            }
        }
        release(r, block);
    }

    std::size_t set_limit(std::size_t bytes) noexcept {
        std::lock_guard lock(mutex_);
        const std::size_t old = limit_;
        limit_ = bytes;
        trim();
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
    struct cached {
        block_ref r;
        std::uint64_t freed = 0;  ///< when it was freed (a count of gives)
    };

    /// Releases the least recently freed blocks until the cache is within its limit. A scan of
    /// the size classes' oldest blocks per release: there are a few dozen classes at most.
    void trim() noexcept {
        while (held_ > limit_) {
            std::deque<cached>* oldest = nullptr;
            std::size_t oldest_block = 0;
            for (auto& [block, blocks] : free_) {
                if (!blocks.empty() &&
                    (oldest == nullptr || blocks.front().freed < oldest->front().freed)) {
                    oldest = &blocks;
                    oldest_block = block;
                }
            }
            if (oldest == nullptr) return;
            release(oldest->front().r, oldest_block);
            oldest->pop_front();
            held_ -= oldest_block;
        }
    }

    block_ref fresh(std::size_t block) {
        if (!recycle_host_blocks) return {heap_block(block), nullptr};
        if (block >= huge_page) {
            return {map_huge((block + huge_page - 1) / huge_page * huge_page), nullptr};
        }
        if (current_ == nullptr || current_->carved + block > huge_page) {
            auto next = std::make_unique<slab>();
            next->base = map_huge(huge_page);
            if (next->base == nullptr) return {};
            slab* old = std::exchange(current_, next.release());
            if (old != nullptr && old->live == 0) drop(old);
        }
        slab* s = current_;
        void* p = s->base + s->carved;
        s->carved += block;
        ++s->live;
        return {p, s};
    }

    /// Gives a block's memory back to the kernel (under the lock).
    void release(block_ref r, std::size_t block) noexcept {
        if (r.from == nullptr) {
            if (!recycle_host_blocks) {
                std::free(r.p);  // NOLINT(cppcoreguidelines-no-malloc)
            } else {
                ::munmap(r.p, (block + huge_page - 1) / huge_page * huge_page);
            }
            return;
        }
        slab* s = r.from;
        if (--s->live == 0 && s != current_) {
            drop(s);
        } else {
            ::madvise(r.p, block, MADV_DONTNEED);  // the RSS goes; the address range stays
        }
    }

    static void drop(slab* s) noexcept {
        ::munmap(s->base, huge_page);
        delete s;  // NOLINT(cppcoreguidelines-owning-memory)
    }

    /// The heap block of AddressSanitizer builds; 2 MiB-aligned from 2 MiB up, like a mapping.
    static void* heap_block(std::size_t block) noexcept {
        if (block < huge_page) return std::aligned_alloc(host_alignment, block);
        void* p = nullptr;
        return ::posix_memalign(&p, huge_page, block) == 0 ? p : nullptr;
    }

    std::mutex mutex_;
    std::unordered_map<std::size_t, std::deque<cached>> free_;  ///< oldest first
    std::uint64_t freed_count_ = 0;
    slab* current_ = nullptr;  ///< the slab blocks under 2 MiB are carved from now
    std::size_t held_ = 0;
    std::size_t limit_ = recycle_host_blocks ? std::size_t{64} << 20 : 0;
};

}  // namespace

buffer allocate_host(std::size_t bytes) {
    buffer b;
    b.size = bytes;
    if (bytes >= smallest_recycled) {
        const std::size_t block = size_class(bytes);  // a multiple of 4 KiB: of the alignment too
        const host_block_cache::block_ref r = host_block_cache::instance().take(block);
        if (r.p == nullptr) throw std::bad_alloc();
        b.data = static_cast<std::byte*>(r.p);
        b.owner = std::shared_ptr<void>(
            r.p, [r, block](void*) { host_block_cache::instance().give(r, block); });
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

}  // namespace ferry
