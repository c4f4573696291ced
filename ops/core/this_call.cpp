// SPDX-License-Identifier: Apache-2.0
/// \file
/// `this_call::stop_requested()`: the flags of the stage call running on this thread.

#include "ferry/this_call.hpp"

namespace ferry {
namespace {

// The engine's flags for the call running on this thread (null outside a call).
thread_local const std::atomic<bool>* call_stopping = nullptr;
thread_local const std::atomic<bool>* call_aborting = nullptr;
thread_local const std::atomic<bool>* call_own = nullptr;

bool set(const std::atomic<bool>* flag) noexcept {
    return flag != nullptr && flag->load(std::memory_order_relaxed);
}

}  // namespace

bool this_call::stop_requested() noexcept {
    return set(call_stopping) || set(call_aborting) || set(call_own);
}

detail::call_scope::call_scope(const std::atomic<bool>* stopping, const std::atomic<bool>* aborting,
                               const std::atomic<bool>* own) noexcept
    : previous_stopping_(call_stopping),
      previous_aborting_(call_aborting),
      previous_own_(call_own) {
    call_stopping = stopping;
    call_aborting = aborting;
    call_own = own;
}

detail::call_scope::~call_scope() {
    call_stopping = previous_stopping_;
    call_aborting = previous_aborting_;
    call_own = previous_own_;
}

}  // namespace ferry
