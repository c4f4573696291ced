// SPDX-License-Identifier: Apache-2.0
/// \file
/// `this_call`: the flags of the stage call running on this thread, and its stage's counters
/// (truncated results, and those counted by name).

#include "ferry/this_call.hpp"

namespace ferry {
namespace {

// The innermost stage call running on this thread (null outside a call): its flags and counters.
thread_local const detail::call_scope* current_call = nullptr;
thread_local int call_cpu_share = 0;

bool set(const std::atomic<bool>* flag) noexcept {
    return flag != nullptr && flag->load(std::memory_order_relaxed);
}

}  // namespace

bool this_call::stop_requested() noexcept {
    const auto* c = current_call;
    return c != nullptr && (set(c->stopping_) || set(c->aborting_) || set(c->own_));
}

void this_call::note_truncated() noexcept {
    const auto* c = current_call;
    if (c != nullptr && c->truncated_ != nullptr) {
        c->truncated_->fetch_add(1, std::memory_order_relaxed);
    }
}

void this_call::count(std::string_view name, std::uint64_t n) noexcept {
    const auto* c = current_call;
    if (c != nullptr && c->counters_ != nullptr) c->counters_->add(name, n);
}

int this_call::cpu_share() noexcept {
    return call_cpu_share;
}

detail::call_share::call_share(int threads, int concurrency) noexcept : previous_(call_cpu_share) {
    call_cpu_share = concurrency > 0 && threads > concurrency ? threads / concurrency : 1;
}

detail::call_share::~call_share() {
    call_cpu_share = previous_;
}

void detail::call_counters::add(std::string_view name, std::uint64_t n) noexcept {
    const std::lock_guard lock(mutex_);
    for (auto& [key, value] : counts_) {
        if (key == name) {
            value += n;
            return;
        }
    }
    try {
        counts_.emplace_back(std::string(name), n);
    } catch (...) {  // out of memory: the count is lost, the call goes on
    }
}

std::vector<std::pair<std::string, std::uint64_t>> detail::call_counters::snapshot() const {
    const std::lock_guard lock(mutex_);
    return counts_;
}

detail::call_scope::call_scope(const std::atomic<bool>* stopping, const std::atomic<bool>* aborting,
                               const std::atomic<bool>* own, std::atomic<std::uint64_t>* truncated,
                               call_counters* counters) noexcept
    : stopping_(stopping),
      aborting_(aborting),
      own_(own),
      truncated_(truncated),
      counters_(counters),
      outer_(current_call) {
    current_call = this;
}

detail::call_scope::~call_scope() {
    current_call = outer_;
}

}  // namespace ferry
