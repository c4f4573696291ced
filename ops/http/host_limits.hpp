// SPDX-License-Identifier: Apache-2.0
/// \file
/// Requests in flight per host, adapted to throttling (AIMD): a 429 or 503 halves how many
/// `read_url` calls may be in flight to that host, each other answer raises it by 1/limit, and
/// calls over the limit wait. A throttled store then sees fewer requests, not the same storm.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ferry::ops::detail {

/// `scheme://host[:port]` of a URL (what the limits are kept per); empty for `file://`.
std::string host_of(std::string_view url);

/// One call's place among its host's requests in flight: taken in the constructor (waiting while
/// the host is at its limit; a stop request ends the wait with `errc::cancelled`), given back in
/// the destructor. `answered(status)` reports the HTTP status so the limit can adapt.
class host_slot {
  public:
    /// `host` empty: no limit (file://, or adaptation off). `where` prefixes a cancellation.
    host_slot(std::string host, const std::string& where);
    ~host_slot();
    host_slot(const host_slot&) = delete;
    host_slot& operator=(const host_slot&) = delete;

    /// The answer's status: 429 and 503 lower the host's limit, others raise it; 0 (no answer:
    /// a refused or reset connection) changes nothing.
    void answered(long status);

  private:
    std::string host_;
    std::uint64_t generation_ = 0;  // the host's generation when this call started
};

}  // namespace ferry::ops::detail
