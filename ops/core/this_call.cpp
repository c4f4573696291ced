// SPDX-License-Identifier: Apache-2.0
/// \file
/// `this_call::stop_requested()`: the flags of the stage call running on this thread.

#include "ferry/this_call.hpp"

namespace ferry {
namespace {

// The engine's flags for the call running on this thread (null outside a call).
thread_local const std::atomic<bool>* call_stopping = nullptr;
thread_local const std::atomic<bool>* call_aborting = nullptr;

}  // namespace

bool this_call::stop_requested() noexcept {
    return (call_stopping != nullptr && call_stopping->load(std::memory_order_relaxed)) ||
           (call_aborting != nullptr && call_aborting->load(std::memory_order_relaxed));
}

detail::call_scope::call_scope(const std::atomic<bool>* stopping,
                               const std::atomic<bool>* aborting) noexcept
    : previous_stopping_(call_stopping), previous_aborting_(call_aborting) {
    call_stopping = stopping;
    call_aborting = aborting;
}

detail::call_scope::~call_scope() {
    call_stopping = previous_stopping_;
    call_aborting = previous_aborting_;
}

}  // namespace ferry
