// SPDX-License-Identifier: Apache-2.0
/// \file
/// The event loop behind `ferry::ops::http_client`: one thread that owns a curl multi handle and
/// every easy handle, runs up to `max_outstanding` transfers on it, and keeps the requests over
/// that (first in, first out) or over their host's adaptive limit (one queue per host) waiting.
/// Other threads only hand requests in, under a mutex, and wake the loop (curl_multi_wakeup). The
/// redirects of a request with credentials are followed here, hop by hop (redirects.hpp).
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ferry/detail/retry_schedule.hpp"
#include "ferry/http_client.hpp"
#include "redirects.hpp"
#include "request.hpp"
#include "transfer.hpp"

namespace ferry::ops::detail {

/// One request, from `fetch` to its completion. Held by pointer: the running transfer's handle
/// points into `t`.
struct client_job {
    request req;
    std::string where;  // read_url's message prefix
    http_options options;
    completion<bytes> done;
    std::string host;  // its adaptive limit's key; empty: not limited
    std::uint64_t generation = 0;
    bool holds_place = false;  // took a place among the host's requests in flight
    int attempt = 1;           // this one's number (retries count on)
    std::unique_ptr<transfer> t = std::make_unique<transfer>();  // a new one for each attempt
    redirect_chain chain{req, options};  // where this attempt's redirects led; a new one each

    client_job(request r, http_options o, completion<bytes> d)
        : req(std::move(r)), where(where_of(req)), options(std::move(o)), done(std::move(d)) {}
    client_job(const client_job&) = delete;  // `chain` refers to `req` and `options`
    client_job& operator=(const client_job&) = delete;
};

class client_loop {
  public:
    /// Starts the thread. Throws `io_error` when curl cannot be set up.
    explicit client_loop(const http_client_options& options);
    /// Fails what is left with `errc::cancelled` and joins.
    ~client_loop();
    client_loop(const client_loop&) = delete;
    client_loop& operator=(const client_loop&) = delete;

    /// Hands a request to the loop (any thread); fails it at once when the loop is ending.
    void submit(std::unique_ptr<client_job> j);

    [[nodiscard]] std::size_t running() const noexcept { return running_count_.load(); }
    [[nodiscard]] std::size_t waiting() const noexcept { return waiting_count_.load(); }
    [[nodiscard]] std::size_t retried() const noexcept { return retried_count_.load(); }

  private:
    using job_ptr = std::unique_ptr<client_job>;

    void run();
    bool take_incoming();  // false once the loop is to end
    void admit();
    void start(job_ptr j);
    void finished(CURL* c, CURLcode rc);
    /// Re-issues the redirect its chain follows on the same handle, which keeps its place among
    /// the running transfers and its host's requests.
    void follow(CURL* c, client_job& j);
    /// Whether the failure `e` of `j` is tried again: if so, `j` waits in `delayed_`.
    bool retry_later(job_ptr& j, const std::exception_ptr& e);
    /// Moves the retries that are due to the front of `waiting_`.
    void release_due();
    void sweep();
    /// What a request ended early fails with, given its message prefix.
    using failure = std::function<std::exception_ptr(const std::string& where)>;
    /// Ends the running transfers (only those whose completion no longer wants a result, with
    /// `only_unwanted`), failing each with `why`.
    void end_running(bool only_unwanted, const failure& why);
    void shut_down();
    /// Takes the transfer off the multi handle and gives back its host's place and its handle.
    job_ptr detach(CURL* c, long status);
    void deliver(job_ptr j, bytes b, std::exception_ptr e);
    void cancel(job_ptr j, const char* why);

    const std::size_t max_outstanding_;
    const ::ferry::detail::retry_schedule retry_;
    CURLM* multi_ = nullptr;

    // Shared with the threads that submit.
    std::mutex mutex_;
    bool ending_ = false;            // under mutex_
    std::vector<job_ptr> incoming_;  // under mutex_
    std::atomic<std::size_t> running_count_{0};
    std::atomic<std::size_t> waiting_count_{0};
    std::atomic<std::size_t> retried_count_{0};

    // The loop thread's own.
    std::deque<job_ptr> waiting_;                                   // first in, first out
    std::map<std::string, std::deque<job_ptr>, std::less<>> held_;  // over their host's limit
    std::unordered_map<CURL*, job_ptr> running_;
    std::multimap<std::chrono::steady_clock::time_point, job_ptr> delayed_;  // retries, by when
    std::vector<CURL*> idle_;  // reset handles, reused (with the multi handle's connections)

    std::thread thread_;  // last: started once everything above exists
};

}  // namespace ferry::ops::detail
