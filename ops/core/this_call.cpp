// SPDX-License-Identifier: Apache-2.0
/// \file
/// `this_call`: the flags of the stage call running on this thread, and its stage's counters
/// (truncated results, and those counted by name).

#include "ferry/this_call.hpp"

namespace ferry {
namespace {

// The engine's flags for the call running on this thread (null outside a call).
thread_local const std::atomic<bool>* call_stopping = nullptr;
thread_local const std::atomic<bool>* call_aborting = nullptr;
thread_local const std::atomic<bool>* call_own = nullptr;
thread_local std::atomic<std::uint64_t>* call_truncated = nullptr;
thread_local detail::call_counters* call_counted = nullptr;
thread_local int call_cpu_share = 0;

bool set(const std::atomic<bool>* flag) noexcept {
    return flag != nullptr && flag->load(std::memory_order_relaxed);
}

}  // namespace

bool this_call::stop_requested() noexcept {
    return set(call_stopping) || set(call_aborting) || set(call_own);
}

void this_call::note_truncated() noexcept {
    if (call_truncated != nullptr) call_truncated->fetch_add(1, std::memory_order_relaxed);
}

void this_call::count(std::string_view name, std::uint64_t n) noexcept {
    if (call_counted != nullptr) call_counted->add(name, n);
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
    : previous_stopping_(call_stopping),
      previous_aborting_(call_aborting),
      previous_own_(call_own),
      previous_truncated_(call_truncated),
      previous_counters_(call_counted) {
    call_stopping = stopping;
    call_aborting = aborting;
    call_own = own;
    call_truncated = truncated;
    call_counted = counters;
}

detail::call_scope::~call_scope() {
    call_stopping = previous_stopping_;
    call_aborting = previous_aborting_;
    call_own = previous_own_;
    call_truncated = previous_truncated_;
    call_counted = previous_counters_;
}

}  // namespace ferry
