// SPDX-License-Identifier: Apache-2.0
/// \file
/// Per-host AIMD limits on requests in flight, `read_url`'s and `http_client`'s together (see
/// host_limits.hpp).

#include "host_limits.hpp"

#include "ferry/detail/url_parts.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>

#include "ferry/error.hpp"
#include "ferry/http.hpp"
#include "ferry/this_call.hpp"

namespace ferry::ops::detail {

namespace {

constexpr double unlimited = std::numeric_limits<double>::infinity();
// Past this many, a host that has not throttled for a while is unlimited again.
constexpr double ceiling = 4096;

struct host_state {
    double limit = unlimited;
    int in_flight = 0;
    std::uint64_t requests = 0;
    std::uint64_t throttled = 0;
    // Bumped at each decrease: the throttled answers of calls that started before it are the
    // same burst, already answered for, and do not halve the limit again.
    std::uint64_t generation = 0;
};

struct registry {
    std::mutex mutex;
    std::condition_variable freed;
    std::map<std::string, host_state, std::less<>> hosts;
};

registry& hosts() {
    static registry r;  // lives as long as any thread may call read_url
    return r;
}

}  // namespace

std::string host_of(std::string_view url) {
    const auto scheme = url.find("://");
    if (scheme == std::string_view::npos || url.substr(0, scheme) == "file") return {};
    const auto end = url.find_first_of("/?#", scheme + 3);
    std::string_view authority = url.substr(scheme + 3, end - scheme - 3);
    // Without a user part: `user:password@` or a token is no part of the host, and no name of it.
    if (const auto user = ferry::detail::user_part(url)) authority.remove_prefix(user->size + 1);
    return std::string(url.substr(0, scheme + 3)) + std::string(authority);
}

namespace {

/// Takes a place for `host` if it is under its limit (the registry's mutex held).
bool take_locked(registry& r, const std::string& host, std::uint64_t& generation) {
    host_state& h = r.hosts[host];
    if (!(h.in_flight < h.limit)) return false;
    ++h.in_flight;
    ++h.requests;
    generation = h.generation;
    return true;
}

}  // namespace

bool host_try_take(const std::string& host, std::uint64_t& generation) {
    auto& r = hosts();
    const std::lock_guard lock(r.mutex);
    return take_locked(r, host, generation);
}

void host_give_back(const std::string& host) {
    auto& r = hosts();
    {
        const std::lock_guard lock(r.mutex);
        --r.hosts[host].in_flight;
    }
    r.freed.notify_all();
}

void host_answered(const std::string& host, std::uint64_t generation, long status) {
    if (status == 0) return;
    auto& r = hosts();
    const std::lock_guard lock(r.mutex);
    host_state& h = r.hosts[host];
    if (status == 429 || status == 503) {
        ++h.throttled;
        if (generation == h.generation) {
            // Multiplicative decrease, from what was in flight when the store said "too many".
            const double from = std::isinf(h.limit) ? static_cast<double>(h.in_flight) : h.limit;
            h.limit = std::max(1.0, std::floor(from / 2));
            ++h.generation;
        }
    } else if (!std::isinf(h.limit)) {
        h.limit += 1.0 / h.limit;  // additive increase: about +1 per limit's worth of answers
        if (h.limit >= ceiling) h.limit = unlimited;
    }
}

host_slot::host_slot(std::string host, const std::string& where) : host_(std::move(host)) {
    if (host_.empty()) return;
    auto& r = hosts();
    std::unique_lock lock(r.mutex);
    while (!take_locked(r, host_, generation_)) {
        if (this_call::stop_requested()) {
            host_.clear();
            throw error(errc::cancelled, where + "cancelled: the pipeline is stopping");
        }
        // Woken by a freed slot; the timeout is for a stop request, which nothing signals.
        r.freed.wait_for(lock, std::chrono::milliseconds(20));
    }
}

host_slot::~host_slot() {
    if (!host_.empty()) host_give_back(host_);
}

void host_slot::answered(long status) {
    if (!host_.empty()) host_answered(host_, generation_, status);
}

}  // namespace ferry::ops::detail

namespace ferry::ops {

std::vector<http_host> http_hosts() {
    auto& r = detail::hosts();
    const std::lock_guard lock(r.mutex);
    std::vector<http_host> out;
    for (const auto& [name, h] : r.hosts) {
        out.push_back({name, std::isinf(h.limit) ? 0 : static_cast<int>(h.limit), h.in_flight,
                       h.requests, h.throttled});
    }
    return out;
}

}  // namespace ferry::ops
