// SPDX-License-Identifier: Apache-2.0
/// \file
/// `this_call`: the flags of the stage call running on this thread, and its stage's counter of
/// truncated results.

#include "ferry/this_call.hpp"

namespace ferry {
namespace {

// The engine's flags for the call running on this thread (null outside a call).
thread_local const std::atomic<bool>* call_stopping = nullptr;
thread_local const std::atomic<bool>* call_aborting = nullptr;
thread_local const std::atomic<bool>* call_own = nullptr;
thread_local std::atomic<std::uint64_t>* call_truncated = nullptr;

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

detail::call_scope::call_scope(const std::atomic<bool>* stopping, const std::atomic<bool>* aborting,
                               const std::atomic<bool>* own,
                               std::atomic<std::uint64_t>* truncated) noexcept
    : previous_stopping_(call_stopping),
      previous_aborting_(call_aborting),
      previous_own_(call_own),
      previous_truncated_(call_truncated) {
    call_stopping = stopping;
    call_aborting = aborting;
    call_own = own;
    call_truncated = truncated;
}

detail::call_scope::~call_scope() {
    call_stopping = previous_stopping_;
    call_aborting = previous_aborting_;
    call_own = previous_own_;
    call_truncated = previous_truncated_;
}

}  // namespace ferry
