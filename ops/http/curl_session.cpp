// SPDX-License-Identifier: Apache-2.0
/// \file
/// The thread's curl handles and the transfer loop of `read_url` (curl_session.hpp).

#include "curl_session.hpp"

#include "ferry/this_call.hpp"

namespace ferry::ops::detail {
namespace {

/// Takes the easy handle off the multi handle however the transfer ends (halting it if it is
/// still running); the connection stays in the multi handle's cache where it can be reused.
struct remove_after {
    CURLM* multi;
    CURL* curl;
    remove_after(CURLM* m, CURL* c) : multi(m), curl(c) {}
    remove_after(const remove_after&) = delete;
    remove_after& operator=(const remove_after&) = delete;
    ~remove_after() { curl_multi_remove_handle(multi, curl); }
};

// The longest `perform` waits on the sockets before it asks `this_call::stop_requested()`
// again: the bound on how late a cancellation is seen on a silent connection.
constexpr int poll_slice_ms = 50;

[[noreturn]] void multi_failed(const std::string& where, const char* call, CURLMcode mc) {
    throw io_error(where + call + " failed: " + curl_multi_strerror(mc));
}

}  // namespace

void init_curl_once() {
    static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        throw io_error(std::string("read_url: curl_global_init failed: ") + curl_easy_strerror(rc));
    }
}

CURL* thread_handle::easy() {
    if (curl_ == nullptr) {
        init_curl_once();
        curl_ = curl_easy_init();
        if (curl_ == nullptr) throw io_error("read_url: curl_easy_init failed");
    }
    return curl_;
}

CURLM* thread_handle::multi() {
    if (multi_ == nullptr) {
        init_curl_once();
        multi_ = curl_multi_init();
        if (multi_ == nullptr) throw io_error("read_url: curl_multi_init failed");
    }
    return multi_;
}

int on_progress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return this_call::stop_requested() ? 1 : 0;
}

CURLcode perform(CURLM* m, CURL* c, const std::string& where) {
    if (const CURLMcode mc = curl_multi_add_handle(m, c); mc != CURLM_OK) {
        multi_failed(where, "curl_multi_add_handle", mc);
    }
    const remove_after removing(m, c);
    for (;;) {
        int running = 0;
        if (const CURLMcode mc = curl_multi_perform(m, &running); mc != CURLM_OK) {
            multi_failed(where, "curl_multi_perform", mc);
        }
        if (running == 0) break;
        if (this_call::stop_requested()) return CURLE_ABORTED_BY_CALLBACK;
        if (const CURLMcode mc = curl_multi_poll(m, nullptr, 0, poll_slice_ms, nullptr);
            mc != CURLM_OK) {
            multi_failed(where, "curl_multi_poll", mc);
        }
    }
    // The message must be read before the handle is removed (removing frees it).
    int queued = 0;
    while (const CURLMsg* msg = curl_multi_info_read(m, &queued)) {
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == c) return msg->data.result;
    }
    return CURLE_FAILED_INIT;  // not reached: a transfer that ended has a CURLMSG_DONE
}

}  // namespace ferry::ops::detail
