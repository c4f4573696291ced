// SPDX-License-Identifier: Apache-2.0
/// \file
/// Requests in flight per host, adapted to throttling (AIMD): a 429 or 503 halves how many
/// requests (`read_url` calls and `http_client` transfers together) may be in flight to that
/// host, each other answer raises it by 1/limit, and requests over the limit wait (a `read_url`
/// call blocks, an `http_client` keeps them in a queue). A throttled store then sees fewer
/// requests, not the same storm.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ferry::ops::detail {

/// `scheme://host[:port]` of a URL (what the limits are kept per), without a `user:password@`;
/// empty for `file://`.
std::string host_of(std::string_view url);

/// The non-blocking form, for an event loop that keeps a queue per host instead of waiting:
/// takes a place among `host`'s requests in flight if it is under its limit (true; `generation`
/// is set for `host_answered`), else takes nothing (false).
bool host_try_take(const std::string& host, std::uint64_t& generation);
/// Gives back a place `host_try_take` took.
void host_give_back(const std::string& host);
/// The answer's status for a place taken at `generation` (as `host_slot::answered`).
void host_answered(const std::string& host, std::uint64_t generation, long status);

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
