// SPDX-License-Identifier: Apache-2.0
/// \file
/// A `cuda::backend` on the host for tests without a GPU: "device" memory is heap memory,
/// copies are memcpy, the normalize kernel is a CPU loop, and events complete when the test says
/// so (or at once). It counts everything the pools and the transfer ask of it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "ferry/cuda.hpp"

namespace ferry_test {

class fake_backend final : public ferry::cuda::backend {
  public:
    struct copy_record {
        void* dst;
        const void* src;
        std::size_t bytes;
        void* stream;
        bool done = false;  ///< the "GPU" has finished reading `src`
    };
    struct event {
        bool pending = false;
        void* stream = nullptr;
        std::size_t copies_before = 0;  ///< copies queued when it was recorded
    };

    explicit fake_backend(int device = 0) : device_(device) {}
    ~fake_backend() override {
        for (auto& [p, a] : live_) std::free(p);
    }

    // --- what the tests steer ---
    /// true: an event completes as soon as it is recorded; false: only at `complete_all()`.
    bool auto_complete = true;
    /// Allocations fail (return nullptr) once this many bytes of a kind are live.
    std::size_t memory_limit = SIZE_MAX;
    /// The next copy throws a `ferry::cuda_error`.
    bool fail_next_copy = false;
    /// The next normalize launch throws a `ferry::cuda_error` (after its copy was queued).
    bool fail_next_normalize = false;
    /// Recording an event on this stream throws (a consumer stream destroyed before the tensor).
    void* fail_record_on = nullptr;

    void complete_all() {
        std::lock_guard lock(mutex_);
        for (auto& e : events_) e->pending = false;
        for (auto& c : copies_) c.done = true;
    }

    // --- what the tests read ---
    int allocations(ferry::cuda::memory_kind k) const {
        std::lock_guard lock(mutex_);
        return allocations_[index(k)];
    }
    int frees(ferry::cuda::memory_kind k) const {
        std::lock_guard lock(mutex_);
        return frees_[index(k)];
    }
    std::size_t live_bytes(ferry::cuda::memory_kind k) const {
        std::lock_guard lock(mutex_);
        return live_bytes_[index(k)];
    }
    int events_created() const {
        std::lock_guard lock(mutex_);
        return static_cast<int>(events_.size());
    }
    int streams_created() const {
        std::lock_guard lock(mutex_);
        return streams_;
    }
    std::vector<copy_record> copies() const {
        std::lock_guard lock(mutex_);
        return copies_;
    }
    /// Copies that read a source an earlier copy was still reading: host memory rewritten
    /// under a transfer in flight (the race a pool must never allow).
    int overwrites_in_flight() const {
        std::lock_guard lock(mutex_);
        return overwrites_;
    }
    int stream_synchronizations() const {
        std::lock_guard lock(mutex_);
        return stream_syncs_;
    }
    /// (stream, event) pairs passed to `wait`.
    std::vector<std::pair<void*, void*>> waits() const {
        std::lock_guard lock(mutex_);
        return waits_;
    }
    /// Streams events were recorded on, in order.
    std::vector<void*> recorded_streams() const {
        std::lock_guard lock(mutex_);
        return recorded_;
    }
    bool is_pinned_block(const void* p) const {
        std::lock_guard lock(mutex_);
        auto it = live_.find(const_cast<void*>(p));
        return it != live_.end() && it->second.kind == ferry::cuda::memory_kind::pinned_host;
    }

    // --- ferry::cuda::backend ---
    int device() const noexcept override { return device_; }
    void* allocate(ferry::cuda::memory_kind kind, std::size_t bytes) override {
        std::lock_guard lock(mutex_);
        if (live_bytes_[index(kind)] + bytes > memory_limit) return nullptr;
        void* p = std::malloc(bytes == 0 ? 1 : bytes);
        if (p == nullptr) return nullptr;
        live_[p] = {kind, bytes};
        live_bytes_[index(kind)] += bytes;
        ++allocations_[index(kind)];
        return p;
    }
    void deallocate(ferry::cuda::memory_kind kind, void* p) noexcept override {
        std::lock_guard lock(mutex_);
        auto it = live_.find(p);
        if (it == live_.end() || it->second.kind != kind) std::abort();  // a pool bug: say so
        live_bytes_[index(kind)] -= it->second.bytes;
        live_.erase(it);
        ++frees_[index(kind)];
        std::free(p);
    }
    void* create_stream() override {
        std::lock_guard lock(mutex_);
        ++streams_;
        return reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x1000 + streams_));
    }
    void destroy_stream(void*) noexcept override {}
    void* create_event() override {
        std::lock_guard lock(mutex_);
        events_.push_back(std::make_unique<event>());
        return events_.back().get();
    }
    void destroy_event(void*) noexcept override {}  // freed with the fake
    bool record(void* e, void* stream) override {
        std::lock_guard lock(mutex_);
        if (fail_record_on != nullptr && stream == fail_record_on) {
            throw ferry::cuda_error(400, "fake cudaEventRecord failed: invalid resource handle");
        }
        auto* ev = static_cast<event*>(e);
        ev->pending = !auto_complete;
        ev->stream = stream;
        ev->copies_before = copies_.size();
        recorded_.push_back(stream);
        if (auto_complete) finish_copies(*ev);
        return true;
    }
    bool completed(void* e) override {
        std::lock_guard lock(mutex_);
        auto* ev = static_cast<event*>(e);
        if (!ev->pending) finish_copies(*ev);
        return !ev->pending;
    }
    void wait(void* stream, void* e) override {
        std::lock_guard lock(mutex_);
        waits_.emplace_back(stream, e);
    }
    void synchronize_event(void* e) override {
        std::lock_guard lock(mutex_);
        auto* ev = static_cast<event*>(e);
        ev->pending = false;
        finish_copies(*ev);
    }
    void synchronize_stream(void* stream) noexcept override {
        std::lock_guard lock(mutex_);
        ++stream_syncs_;
        for (auto& e : events_) {
            if (e->stream == stream) e->pending = false;
        }
        for (auto& c : copies_) {
            if (c.stream == stream) c.done = true;
        }
    }
    void copy_to_device(void* dst, const void* src, std::size_t bytes, void* stream) override {
        std::lock_guard lock(mutex_);
        if (fail_next_copy) {
            fail_next_copy = false;
            throw ferry::cuda_error(999, "fake cudaMemcpyAsync failed");
        }
        for (const auto& c : copies_) {
            if (!c.done && c.src == src) ++overwrites_;
        }
        std::memcpy(dst, src, bytes);
        copies_.push_back({dst, src, bytes, stream});
    }
    void normalize(float* dst, const std::uint8_t* src, std::int64_t n, std::int64_t h,
                   std::int64_t w, std::int64_t c, const float* scale, const float* shift, bool chw,
                   void*) override {
        {
            std::lock_guard lock(mutex_);
            if (fail_next_normalize) {
                fail_next_normalize = false;
                throw ferry::cuda_error(998, "fake normalize kernel launch failed");
            }
        }
        const std::int64_t hw = h * w;
        for (std::int64_t i = 0; i < n; ++i) {
            for (std::int64_t p = 0; p < hw; ++p) {
                for (std::int64_t ch = 0; ch < c; ++ch) {
                    const float v =
                        static_cast<float>(src[(i * hw + p) * c + ch]) * scale[ch] + shift[ch];
                    dst[chw ? (i * c + ch) * hw + p : (i * hw + p) * c + ch] = v;
                }
            }
        }
    }

  private:
    static std::size_t index(ferry::cuda::memory_kind k) { return static_cast<std::size_t>(k); }
    /// A completed event: the copies queued on its stream before it have finished too.
    void finish_copies(const event& ev) {
        for (std::size_t i = 0; i < ev.copies_before && i < copies_.size(); ++i) {
            if (copies_[i].stream == ev.stream) copies_[i].done = true;
        }
    }
    struct allocation {
        ferry::cuda::memory_kind kind;
        std::size_t bytes;
    };

    int device_;
    mutable std::mutex mutex_;
    std::map<void*, allocation> live_;
    std::size_t live_bytes_[2] = {0, 0};
    int allocations_[2] = {0, 0};
    int frees_[2] = {0, 0};
    int streams_ = 0;
    std::vector<std::unique_ptr<event>> events_;
    std::vector<copy_record> copies_;
    std::vector<std::pair<void*, void*>> waits_;
    std::vector<void*> recorded_;
    int overwrites_ = 0;
    int stream_syncs_ = 0;
};

}  // namespace ferry_test
