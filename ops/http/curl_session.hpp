// SPDX-License-Identifier: Apache-2.0
/// \file
/// The calling thread's curl handles, reused across `read_url` calls, and running one transfer
/// on them (curl_session.cpp): the transfer is polled in short slices so that a call told to give
/// up (`this_call::stop_requested()`) does so promptly even while no byte arrives.
#pragma once

#include <curl/curl.h>

#include <string>

#include "ferry/error.hpp"

namespace ferry::ops::detail {

/// curl_global_init, run once before any handle exists (and not concurrently with other curl
/// calls, as older libcurl needs: a function-local static gives both). Throws `io_error`.
void init_curl_once();

/// The calling thread's easy and multi handles. The easy handle is reset after every call
/// (`reset_after`), which clears every option (so nothing of a call, failed or not, such as its
/// header list, limits or buffers, leaks into the next) but keeps the connection, DNS and
/// TLS-session caches, which the two handles hold between them and which make the reuse pay.
class thread_handle {
  public:
    thread_handle() = default;
    thread_handle(const thread_handle&) = delete;
    thread_handle& operator=(const thread_handle&) = delete;
    ~thread_handle() {
        // Each call removes its easy handle from the multi handle, so the order is free.
        if (multi_ != nullptr) curl_multi_cleanup(multi_);
        if (curl_ != nullptr) curl_easy_cleanup(curl_);
    }

    /// The easy handle (made at first use; throws `io_error` when curl cannot make it).
    CURL* easy();
    /// The multi handle (made at first use).
    CURLM* multi();

  private:
    CURL* curl_ = nullptr;
    CURLM* multi_ = nullptr;
};

/// Resets the handle however the call ends, so that it holds no pointer into the finished call
/// (error buffer, header list, callbacks' state).
struct reset_after {
    CURL* curl;
    explicit reset_after(CURL* c) : curl(c) {}
    reset_after(const reset_after&) = delete;
    reset_after& operator=(const reset_after&) = delete;
    ~reset_after() { curl_easy_reset(curl); }
};

/// Frees a request's header list however the call ends.
struct header_list {
    curl_slist* list = nullptr;
    header_list() = default;
    header_list(const header_list&) = delete;
    header_list& operator=(const header_list&) = delete;
    ~header_list() { curl_slist_free_all(list); }
};

/// `curl_easy_setopt`, throwing `io_error` when this libcurl lacks the option.
template <typename T>
void set(CURL* c, CURLoption option, T value) {
    const CURLcode rc = curl_easy_setopt(c, option, value);
    // Only an option this libcurl was built without can fail here (e.g. no TLS backend).
    if (rc != CURLE_OK) {
        throw io_error(std::string("read_url: curl_easy_setopt failed: ") + curl_easy_strerror(rc));
    }
}

/// Asks curl to give up once the stage call should (stop(), destruction, an abandoned epoch,
/// its stage's timeout) while bytes are flowing. While none arrive curl calls it only about once
/// a second, so `perform` also asks between its waits.
int on_progress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

/// Runs `c`'s transfer to its end on the multi handle `m` and returns its result, or
/// CURLE_ABORTED_BY_CALLBACK once the call should give up (as the progress callback does).
/// curl's own timeouts still apply: `curl_multi_poll` never waits past curl's next deadline.
CURLcode perform(CURLM* m, CURL* c, const std::string& where);

}  // namespace ferry::ops::detail
