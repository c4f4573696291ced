// SPDX-License-Identifier: Apache-2.0
/// \file
/// `cuda::memory_pool`: the caching allocator behind pinned staging and device memory. Plain
/// C++ over `cuda::backend`, so that its bookkeeping is tested without a GPU.
#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ferry/cuda_tensor.hpp"
#include "ferry/error.hpp"

namespace ferry::cuda {
namespace {

constexpr std::size_t small_limit = std::size_t{1} << 20;
constexpr std::size_t small_granule = 512;
constexpr std::size_t large_granule = std::size_t{1} << 20;

/// Requests are rounded up so that batches of slightly different sizes (a short last batch, a
/// variable-length field) land on the same blocks.
std::size_t rounded_size(std::size_t bytes) {
    const std::size_t g = bytes < small_limit ? small_granule : large_granule;
    return std::max<std::size_t>(g, (bytes + g - 1) / g * g);
}

const char* kind_name(memory_kind k) {
    return k == memory_kind::pinned_host ? "pinned host" : "device";
}

}  // namespace

struct memory_pool::state : std::enable_shared_from_this<state> {
    struct idle_block {
        void* ptr = nullptr;
        std::size_t size = 0;
        std::vector<void*> events;  // reuse waits until every one has completed
    };
    struct live_block {
        std::size_t size = 0;
        std::vector<void*> streams;  // work queued on these uses the block
    };

    state(std::shared_ptr<backend> b, memory_kind k, pool_options o)
        : be(std::move(b)), kind(k), options(o) {}
    state(const state&) = delete;
    state& operator=(const state&) = delete;

    ~state() {
        // Every buffer is gone (each holds this state). Events of blocks still waiting are
        // destroyed with them; freeing memory the GPU may still read would be wrong, so those
        // blocks are synchronized first by the backend's deallocate (cudaFree synchronizes).
        for (auto& b : idle) {
            for (void* e : b.events) be->destroy_event(e);
            be->deallocate(kind, b.ptr);
        }
        for (void* e : spare_events) be->destroy_event(e);
    }

    /// True when every event of `b` has completed; completed events go back to the spares.
    bool settled(idle_block& b) {
        auto done = std::partition(b.events.begin(), b.events.end(),
                                   [this](void* e) { return !be->completed(e); });
        spare_events.insert(spare_events.end(), done, b.events.end());
        b.events.erase(done, b.events.end());
        return b.events.empty();
    }

    /// Blocks the host until every idle block's last use has finished (out of memory only).
    void wait_for_idle() noexcept {
        for (auto& b : idle) {
            for (void* e : b.events) {
                try {
                    be->synchronize_event(e);
                } catch (...) {  // settled() below still sees it pending: the block stays
                }
            }
        }
    }

    /// Frees settled idle blocks, oldest first, until at most `keep` bytes stay cached.
    void shrink_to(std::size_t keep) {
        for (std::size_t i = 0; i < idle.size() && stats.bytes_cached > keep;) {
            if (settled(idle[i])) {
                be->deallocate(kind, idle[i].ptr);
                stats.bytes_cached -= idle[i].size;
                ++stats.frees;
                idle.erase(idle.begin() + static_cast<std::ptrdiff_t>(i));
            } else {
                ++i;
            }
        }
    }

    /// A settled idle block of `size` bytes up to twice that, the smallest; idle.end() if none.
    std::vector<idle_block>::iterator find_fit(std::size_t size) {
        auto best = idle.end();
        for (auto it = idle.begin(); it != idle.end(); ++it) {
            if (it->size < size || it->size > 2 * size) continue;
            if (best != idle.end() && it->size >= best->size) continue;
            if (settled(*it)) best = it;
        }
        return best;
    }

    buffer acquire(std::size_t bytes) {
        const std::size_t size = rounded_size(bytes);
        void* p = nullptr;
        {
            std::lock_guard lock(mutex);
            ++stats.acquires;
            if (auto it = find_fit(size); it != idle.end()) {
                p = it->ptr;
                in_use[p] = live_block{it->size, {}};
                stats.bytes_cached -= it->size;
                stats.bytes_in_use += it->size;
                ++stats.reuses;
                idle.erase(it);
                return make_buffer(p, bytes);
            }
        }
        // cudaHostAlloc and cudaMalloc are slow (they map pages); not under the lock.
        p = be->allocate(kind, size);
        if (p == nullptr) {
            // Out of memory: free every idle block, waiting for the last uses of those the GPU
            // still works with (a cache full of blocks that are only waiting must not fail an
            // allocation), then try once more.
            bool freed = false;
            {
                std::lock_guard lock(mutex);
                const std::size_t before = idle.size();
                wait_for_idle();
                shrink_to(0);
                freed = idle.size() < before;
            }
            p = be->allocate(kind, size);
            if (p != nullptr && freed) {
                std::lock_guard lock(mutex);
                ++stats.retries_after_waiting;
            }
        }
        std::lock_guard lock(mutex);
        if (p == nullptr) {
            throw cuda_error(2 /* cudaErrorMemoryAllocation */,
                             std::string("memory_pool: out of ") + kind_name(kind) +
                                 " memory allocating " + std::to_string(size) +
                                 " bytes on device " + std::to_string(be->device()) + " (" +
                                 std::to_string(stats.bytes_in_use) + " bytes in use, " +
                                 std::to_string(stats.bytes_cached) + " cached)");
        }
        ++stats.allocations;
        in_use[p] = live_block{size, {}};
        stats.bytes_in_use += size;
        return make_buffer(p, bytes);
    }

    buffer make_buffer(void* p, std::size_t bytes) {
        buffer b;
        b.data = static_cast<std::byte*>(p);
        b.size = bytes;
        b.device = ferry::device{
            kind == memory_kind::pinned_host ? device_kind::cuda_host : device_kind::cuda,
            be->device()};
        // If making the owner throws, the deleter runs, and the block goes back as released.
        b.owner = std::shared_ptr<void>(
            p, [self = shared_from_this()](void* q) noexcept { self->release(q); });
        return b;
    }

    void release(void* p) noexcept {
        std::lock_guard lock(mutex);
        auto it = in_use.find(p);
        if (it == in_use.end()) return;
        idle_block b{p, it->second.size, {}};
        const std::vector<void*> streams = std::move(it->second.streams);
        in_use.erase(it);
        stats.bytes_in_use -= b.size;
        try {
            for (void* s : streams) {
                void* e = nullptr;
                if (!spare_events.empty()) {
                    e = spare_events.back();
                    spare_events.pop_back();
                } else {
                    e = be->create_event();
                    ++stats.events_created;
                }
                b.events.push_back(e);
                if (!be->record(e, s)) {
                    // The CUDA runtime has unloaded (process exit): nothing can be reused or
                    // freed any more; the driver reclaims the memory.
                    ++stats.blocks_abandoned;
                    return;
                }
            }
        } catch (...) {
            // Without an event there is no telling when the GPU is done with the block (a
            // consumer stream destroyed first, a failing runtime): never reuse it (a leak is
            // better than a race), count it, and keep going.
            ++stats.blocks_abandoned;
            return;
        }
        stats.bytes_cached += b.size;
        idle.push_back(std::move(b));
        if (stats.bytes_cached > options.max_cached_bytes) {
            try {
                shrink_to(options.max_cached_bytes);
            } catch (...) {  // a failing query: keep the blocks cached; the next acquire retries
            }
        }
    }

    void record_use(const buffer& b, void* stream) {
        std::lock_guard lock(mutex);
        auto it = in_use.find(b.data);
        if (it == in_use.end()) {
            throw invalid_argument("memory_pool::record_use: the buffer does not come from this " +
                                   std::string(kind_name(kind)) + " pool (or is released)");
        }
        auto& streams = it->second.streams;
        if (std::find(streams.begin(), streams.end(), stream) == streams.end()) {
            streams.push_back(stream);
        }
    }

    pool_stats snapshot() {
        std::lock_guard lock(mutex);
        pool_stats s = stats;
        s.blocks_waiting = 0;
        for (auto& b : idle) {
            if (!settled(b)) ++s.blocks_waiting;
        }
        return s;
    }

    std::shared_ptr<backend> be;
    memory_kind kind;
    pool_options options;
    std::mutex mutex;
    std::vector<idle_block> idle;
    std::unordered_map<void*, live_block> in_use;
    std::vector<void*> spare_events;
    pool_stats stats;
};

memory_pool::memory_pool(std::shared_ptr<backend> b, memory_kind kind, pool_options options) {
    if (!b) throw invalid_argument("memory_pool: the backend is null");
    state_ = std::make_shared<state>(std::move(b), kind, options);
}

buffer memory_pool::acquire(std::size_t bytes) const {
    return state_->acquire(bytes);
}

allocator memory_pool::as_allocator() const {
    return [s = state_](std::size_t bytes) { return s->acquire(bytes); };
}

void memory_pool::record_use(const buffer& b, void* stream) const {
    state_->record_use(b, stream);
}

void memory_pool::trim() const {
    std::lock_guard lock(state_->mutex);
    state_->shrink_to(0);
}

pool_stats memory_pool::stats() const {
    return state_->snapshot();
}

memory_kind memory_pool::kind() const noexcept {
    return state_->kind;
}

}  // namespace ferry::cuda
