// SPDX-License-Identifier: Apache-2.0
/// \file
/// NVTX ranges of a pipeline's calls. nvtx3 is header-only: a build with the CUDA Toolkit
/// (FERRY_NVTX) calls it, and an NVTX tool (Nsight Systems) attached to the process records the
/// ranges; with none attached, a push costs a call through a null function pointer.

#include "call_ranges.hpp"

#include <mutex>
#include <utility>

#ifndef FERRY_NVTX
#define FERRY_NVTX 0
#endif
#if FERRY_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace ferry::detail {
namespace {

std::mutex observer_mutex;
std::function<void(const range_event&)>& observer_slot() {
    static std::function<void(const range_event&)> slot;
    return slot;
}

#if FERRY_NVTX
nvtxDomainHandle_t domain() {
    static const nvtxDomainHandle_t d = nvtxDomainCreateA("ferry");
    return d;
}
#endif

}  // namespace

void observe_ranges(std::function<void(const range_event&)> observer) {
    const std::lock_guard lock(observer_mutex);
    observer_slot() = std::move(observer);
}

bool nvtx_compiled() noexcept {
    return FERRY_NVTX != 0;
}

std::unique_ptr<call_ranges> call_ranges::make(std::vector<std::string> rows) {
    std::function<void(const range_event&)> observer;
    {
        const std::lock_guard lock(observer_mutex);
        observer = observer_slot();
    }
    if (!nvtx_compiled() && !observer) return nullptr;
    return std::unique_ptr<call_ranges>(new call_ranges(std::move(rows), std::move(observer)));
}

call_ranges::call_ranges(std::vector<std::string> rows,
                         std::function<void(const range_event&)> observer)
    : rows_(std::move(rows)), observer_(std::move(observer)) {
#if FERRY_NVTX
    for (const auto& r : rows_) {
        handles_.push_back(static_cast<void*>(nvtxDomainRegisterStringA(domain(), r.c_str())));
    }
#endif
}

call_ranges::~call_ranges() = default;

void call_ranges::push(std::uint32_t row, std::uint64_t position) const noexcept {
#if FERRY_NVTX
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = position;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = static_cast<nvtxStringHandle_t>(handles_[row]);
    nvtxDomainRangePushEx(domain(), &a);
#endif
    if (observer_) {
        try {
            observer_(range_event{true, rows_[row], position});
        } catch (...) {  // an observer's failure is not the pipeline's
        }
    }
}

void call_ranges::pop(std::uint32_t row) const noexcept {
#if FERRY_NVTX
    nvtxDomainRangePop(domain());
#endif
    if (observer_) {
        try {
            observer_(range_event{false, rows_[row], 0});
        } catch (...) {
        }
    }
}

}  // namespace ferry::detail
