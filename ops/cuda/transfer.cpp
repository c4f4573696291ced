// SPDX-License-Identifier: Apache-2.0
/// \file
/// The host side of `to_cuda()`: staging, copies, events and `cuda_tensor`. Plain C++ over
/// `cuda::backend` (the CUDA runtime or a test's fake).
#include <cmath>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/cuda.hpp"
#include "ferry/error.hpp"

namespace ferry {
namespace detail {

/// What a `cuda_tensor` holds besides the memory's shape: the device block, the event recorded
/// after its copy, and the transfer (to give the event back). The block returns to the pool when
/// the last copy of the tensor goes.
struct cuda_lease {
    cuda_lease(buffer b, void* ev, std::shared_ptr<cuda::transfer_context::state> c)
        : ctx(std::move(c)), block(std::move(b)), event(ev) {}
    cuda_lease(const cuda_lease&) = delete;
    cuda_lease& operator=(const cuda_lease&) = delete;
    ~cuda_lease();

    // Destroyed last: releasing the block records events on the transfer's stream.
    std::shared_ptr<cuda::transfer_context::state> ctx;
    buffer block;
    void* event;
};

}  // namespace detail

namespace cuda {

struct transfer_context::state {
    explicit state(cuda_options o) : options(std::move(o)) {
        be = options.backend ? options.backend : runtime_backend(options.device);
        if (be->device() != options.device) {
            throw invalid_argument("to_cuda: the backend is for device " +
                                   std::to_string(be->device()) + ", the options ask for " +
                                   std::to_string(options.device));
        }
        if (options.normalize) {
            const auto& n = *options.normalize;
            if (n.mean.empty() || n.mean.size() != n.std.size() || n.mean.size() > 16) {
                throw invalid_argument(
                    "to_cuda: normalize needs one mean and one std per channel (1 to 16), got " +
                    std::to_string(n.mean.size()) + " and " + std::to_string(n.std.size()));
            }
            for (std::size_t c = 0; c < n.mean.size(); ++c) {
                // As the host's ops::normalize: a zero, NaN or infinite std gives no image.
                if (n.std[c] == 0.0F || !std::isfinite(n.std[c])) {
                    throw invalid_argument("to_cuda: normalize std[" + std::to_string(c) +
                                           "] must be finite and non-zero, got " +
                                           std::to_string(n.std[c]));
                }
                if (!std::isfinite(n.mean[c])) {
                    throw invalid_argument("to_cuda: normalize mean[" + std::to_string(c) +
                                           "] must be finite, got " + std::to_string(n.mean[c]));
                }
                scale.push_back(1.0F / (255.0F * n.std[c]));
                shift.push_back(-n.mean[c] / n.std[c]);
            }
        }
        pinned.emplace(be, memory_kind::pinned_host,
                       pool_options{options.device, options.pinned_cache_bytes});
        device_memory.emplace(be, memory_kind::device,
                              pool_options{options.device, options.device_cache_bytes});
        stream = be->create_stream();
    }
    state(const state&) = delete;
    state& operator=(const state&) = delete;

    ~state() {
        // Copies still reading host memory must finish before that memory is released.
        be->synchronize_stream(stream);
        for (auto& f : in_flight) be->destroy_event(f.event);
        in_flight.clear();
        for (void* e : spare_events) be->destroy_event(e);
        be->destroy_stream(stream);
    }

    void* take_event() {
        std::lock_guard lock(mutex);
        if (spare_events.empty()) return be->create_event();
        void* e = spare_events.back();
        spare_events.pop_back();
        return e;
    }
    void give_event(void* e) noexcept {
        std::lock_guard lock(mutex);
        try {
            spare_events.push_back(e);
        } catch (...) {
            be->destroy_event(e);
        }
    }

    /// Lets go of the host sources whose copies have finished (in order: one stream).
    void reap() {
        std::lock_guard lock(mutex);
        while (!in_flight.empty() && be->completed(in_flight.front().event)) {
            spare_events.push_back(in_flight.front().event);
            in_flight.pop_front();
        }
        stats.in_flight = in_flight.size();
    }

    bool normalizes(const tensor& t) const {
        return options.normalize && t.dtype() == dtype::u8 && (t.dim() == 3 || t.dim() == 4) &&
               static_cast<std::size_t>(t.shape().back()) == scale.size();
    }

    struct pending {
        void* event;
        buffer source;  // the host memory the copy reads
    };

    cuda_options options;
    std::shared_ptr<backend> be;
    std::optional<memory_pool> pinned;
    std::optional<memory_pool> device_memory;
    void* stream = nullptr;
    std::vector<float> scale;
    std::vector<float> shift;
    std::mutex mutex;
    std::vector<void*> spare_events;
    std::deque<pending> in_flight;
    transfer_stats stats;
};

}  // namespace cuda

detail::cuda_lease::~cuda_lease() {
    ctx->give_event(event);
}

namespace cuda {

transfer_context::transfer_context(cuda_options options) {
    state_ = std::make_shared<state>(std::move(options));
}

cuda_tensor transfer_context::copy(const tensor& t) const {
    state& s = *state_;
    if (t.empty()) return {};
    if (t.device().kind == device_kind::cuda) {
        if (t.device().index != s.options.device) {
            throw invalid_argument("to_cuda: " + t.describe() + " is on another device than " +
                                   std::to_string(s.options.device));
        }
        return cuda_tensor(t, nullptr);  // already there: nothing to wait for
    }
    s.reap();

    // The copy reads pinned memory: the tensor's own when it is pinned and contiguous, else a
    // staging block filled here (one host copy; clone also makes a strided tensor contiguous).
    tensor src = t;
    const bool direct = t.device().kind == device_kind::cuda_host && t.is_contiguous();
    if (!direct) src = t.clone(s.pinned->as_allocator());
    const std::size_t bytes = src.nbytes();

    const bool norm = s.normalizes(src);
    buffer raw = s.device_memory->acquire(bytes);
    s.device_memory->record_use(raw, s.stream);
    s.be->copy_to_device(raw.data, src.data(), bytes, s.stream);
    // Everything after the copy is queued: the kernel, the events, the bookkeeping.
    auto finish = [&]() -> cuda_tensor {
        ferry::dtype out_type = src.dtype();
        std::vector<std::int64_t> out_shape = src.shape();
        buffer out = raw;
        if (norm) {
            const bool four = src.dim() == 4;
            const std::int64_t n = four ? src.size(0) : 1;
            const std::int64_t h = src.size(four ? 1 : 0);
            const std::int64_t w = src.size(four ? 2 : 1);
            const std::int64_t c = src.size(four ? 3 : 2);
            const bool chw = s.options.normalize->chw;
            out = s.device_memory->acquire(static_cast<std::size_t>(src.numel()) * sizeof(float));
            s.device_memory->record_use(out, s.stream);
            s.be->normalize(reinterpret_cast<float*>(out.data),
                            reinterpret_cast<const std::uint8_t*>(raw.data), n, h, w, c,
                            s.scale.data(), s.shift.data(), chw, s.stream);
            out_type = dtype::f32;
            out_shape =
                chw ? std::vector<std::int64_t>{c, h, w} : std::vector<std::int64_t>{h, w, c};
            if (four) out_shape.insert(out_shape.begin(), n);
            // `raw` is released when this function returns: its reuse waits for the kernel.
        }

        void* ready = s.take_event();
        void* source_done = nullptr;
        try {
            s.be->record(ready, s.stream);
            source_done = s.take_event();
            s.be->record(source_done, s.stream);
        } catch (...) {
            s.give_event(ready);
            if (source_done != nullptr) s.give_event(source_done);
            throw;
        }
        {
            std::lock_guard lock(s.mutex);
            s.in_flight.push_back({source_done, src.storage()});
            ++s.stats.tensors;
            s.stats.bytes += bytes;
            if (direct) {
                ++s.stats.direct_copies;
            } else {
                ++s.stats.staged_copies;
                s.stats.staged_bytes += bytes;
            }
            if (norm) ++s.stats.normalized;
            s.stats.in_flight = s.in_flight.size();
        }

        auto lease = std::make_shared<detail::cuda_lease>(out, ready, state_);
        buffer view;
        view.data = out.data;
        view.size = out.size;
        view.device = out.device;
        view.owner = lease;
        return cuda_tensor(tensor(std::move(view), out_type, std::move(out_shape)),
                           std::move(lease));
    };
    try {
        return finish();
    } catch (...) {
        // The copy is queued and reads `src` (a pinned staging block, or the caller's pinned
        // tensor): nothing guards it yet, so let the stream finish before `src` can be reused.
        s.be->synchronize_stream(s.stream);
        throw;
    }
}

int transfer_context::device() const noexcept {
    return state_->options.device;
}
void* transfer_context::stream() const noexcept {
    return state_->stream;
}
const cuda_options& transfer_context::options() const noexcept {
    return state_->options;
}
memory_pool transfer_context::pinned() const {
    return *state_->pinned;
}
memory_pool transfer_context::device_memory() const {
    return *state_->device_memory;
}

transfer_stats transfer_context::stats() const {
    state_->reap();
    std::lock_guard lock(state_->mutex);
    return state_->stats;
}

}  // namespace cuda

void* cuda_tensor::stream() const noexcept {
    return lease_ ? lease_->ctx->stream : nullptr;
}

void* cuda_tensor::event() const noexcept {
    return lease_ ? lease_->event : nullptr;
}

void cuda_tensor::wait(void* consumer_stream) const {
    // cudaStreamPerThread's handle (cuda_runtime_api.h): it means the calling thread's own
    // stream, and the event that guards reuse is recorded on the thread that releases the tensor.
    static void* const per_thread_stream = reinterpret_cast<void*>(std::uintptr_t{0x2});
    if (consumer_stream == per_thread_stream) {
        throw invalid_argument(
            "cuda_tensor::wait: cudaStreamPerThread names another stream on each thread, and "
            "ferry guards the memory's reuse from the thread that releases the tensor; pass a "
            "stream of your own (cudaStreamCreate), nullptr or cudaStreamLegacy");
    }
    if (!lease_) return;
    lease_->ctx->device_memory->record_use(lease_->block, consumer_stream);
    lease_->ctx->be->wait(consumer_stream, lease_->event);
}

void cuda_tensor::synchronize() const {
    if (!lease_) return;
    lease_->ctx->device_memory->record_use(lease_->block, nullptr);
    lease_->ctx->be->synchronize_event(lease_->event);
}

bool cuda_tensor::ready() const {
    return !lease_ || lease_->ctx->be->completed(lease_->event);
}

DLManagedTensor* cuda_tensor::to_dlpack(void* consumer_stream) const {
    wait(consumer_stream);
    return tensor_.to_dlpack();
}

std::string cuda_tensor::describe() const {
    std::string s = tensor_.describe();  // "tensor(...)"
    return "cuda_" + s;
}

}  // namespace ferry
