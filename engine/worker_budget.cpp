// SPDX-License-Identifier: Apache-2.0
/// \file
/// worker_budget: one tbb::global_control at the largest worker count a live pipeline needs.

#include "worker_budget.hpp"

namespace ferry::detail {

worker_budget& worker_budget::instance() {
    static worker_budget b;
    return b;
}

worker_budget::worker_budget() = default;
worker_budget::~worker_budget() = default;

void worker_budget::acquire(int threads) {
    std::lock_guard lock(mutex_);
    wanted_.insert(threads + 1);
    apply();
}

void worker_budget::release(int threads) noexcept {
    std::lock_guard lock(mutex_);
    wanted_.erase(wanted_.find(threads + 1));
    apply();
}

void worker_budget::apply() noexcept {
    const int want = wanted_.empty() ? 0 : *wanted_.rbegin();
    if (want == current_) return;
    try {
        std::unique_ptr<tbb::global_control> next;
        if (want > 0) {
            next = std::make_unique<tbb::global_control>(
                tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(want));
        }
        control_ = std::move(next);
        current_ = want;
    } catch (...) {
        // Keeping the old limit only costs parallelism.
    }
}

}  // namespace ferry::detail
