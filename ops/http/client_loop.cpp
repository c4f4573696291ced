// SPDX-License-Identifier: Apache-2.0
/// \file
/// `http_client`'s event loop (client_loop.hpp). Only the loop's thread touches a curl handle;
/// the handles' options and the ended transfers' meaning are read_url's (transfer.hpp).

#include "client_loop.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "curl_session.hpp"
#include "host_limits.hpp"

namespace ferry::ops::detail {
namespace {

// The longest the loop waits on the sockets before it looks again at what curl does not wake it
// for: whether each request is still wanted (its pipeline stopping), and hosts whose limit may
// have room because a `read_url` elsewhere ended. The bound on how late a cancellation is seen.
constexpr int slice_ms = 50;

/// `errc::cancelled` for a request ended because of `why`.
std::exception_ptr cancelled(const std::string& where, const char* why) {
    return std::make_exception_ptr(error(errc::cancelled, where + "cancelled: " + why));
}

const char* const pipeline_stopping = "the pipeline is stopping";
const char* const client_ending = "the http_client is being destroyed";

}  // namespace

client_loop::client_loop(const http_client_options& options)
    : max_outstanding_(options.max_outstanding),
      // Only a ferry::error says whether a request may pass next time (`others::never`); a
      // stage's retries also try what is not one (engine/attempts.hpp).
      retry_(::ferry::detail::retry_schedule::of(options.retry,
                                                 ::ferry::detail::retry_schedule::others::never)) {
    init_curl_once();
    multi_ = curl_multi_init();
    if (multi_ == nullptr) throw io_error("http_client: curl_multi_init failed");
    // Keep a connection for every transfer that may run at once, to be reused.
    constexpr std::size_t most_connections = 1 << 16;  // past any descriptor limit
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS,
                      static_cast<long>(std::min(max_outstanding_, most_connections)));
    try {
        thread_ = std::thread([this] { run(); });
    } catch (...) {
        curl_multi_cleanup(multi_);
        throw;
    }
}

client_loop::~client_loop() {
    {
        const std::lock_guard lock(mutex_);
        ending_ = true;
        curl_multi_wakeup(multi_);
    }
    thread_.join();
    curl_multi_cleanup(multi_);
}

void client_loop::submit(job_ptr j) {
    {
        const std::lock_guard lock(mutex_);
        if (!ending_) {
            incoming_.push_back(std::move(j));
            ++waiting_count_;
            // Under the mutex: once `ending_` is set, the multi handle may be cleaned up.
            curl_multi_wakeup(multi_);
            return;
        }
    }
    cancel(std::move(j), client_ending);
}

void client_loop::run() {
    auto last_sweep = std::chrono::steady_clock::now();
    while (take_incoming()) {
        try {
            release_due();
            admit();
            int still_running = 0;
            if (curl_multi_perform(multi_, &still_running) != CURLM_OK) {
                end_running(false, [](const std::string& where) {
                    return std::make_exception_ptr(io_error(where + "curl_multi_perform failed"));
                });
            }
            int left = 0;
            while (const CURLMsg* m = curl_multi_info_read(multi_, &left)) {
                // Copied out: removing the handle frees the message.
                if (m->msg == CURLMSG_DONE) finished(m->easy_handle, m->data.result);
            }
            admit();  // into the places just freed, before the wait
            const auto now = std::chrono::steady_clock::now();
            if (now - last_sweep >= std::chrono::milliseconds(slice_ms)) {
                last_sweep = now;
                sweep();
            }
            curl_multi_poll(multi_, nullptr, 0, slice_ms, nullptr);
        } catch (...) {
            // Out of memory in the loop's own bookkeeping: every structure is still consistent
            // (each step moves a job whole); go on, and let the next round retry.
        }
    }
    shut_down();
}

bool client_loop::take_incoming() {
    std::vector<job_ptr> in;
    {
        const std::lock_guard lock(mutex_);
        if (ending_) return false;
        in.swap(incoming_);
    }
    for (auto& j : in) waiting_.push_back(std::move(j));
    return true;
}

void client_loop::admit() {
    // Requests held for their host's limit came before everything in `waiting_`: first.
    for (auto it = held_.begin(); it != held_.end();) {
        auto& queue = it->second;
        while (!queue.empty() && running_.size() < max_outstanding_ &&
               host_try_take(it->first, queue.front()->generation)) {
            job_ptr j = std::move(queue.front());
            queue.pop_front();
            j->holds_place = true;
            start(std::move(j));
        }
        it = queue.empty() ? held_.erase(it) : std::next(it);
    }
    while (running_.size() < max_outstanding_ && !waiting_.empty()) {
        job_ptr j = std::move(waiting_.front());
        waiting_.pop_front();
        if (!j->host.empty()) {
            // Behind those of its host already held, in order; else held only when at the limit.
            const auto held = held_.find(j->host);
            if (held != held_.end() || !host_try_take(j->host, j->generation)) {
                held_[j->host].push_back(std::move(j));
                continue;
            }
            j->holds_place = true;
        }
        start(std::move(j));
    }
}

void client_loop::start(job_ptr j) {
    CURL* c = nullptr;
    if (!idle_.empty()) {
        c = idle_.back();
        idle_.pop_back();
    } else {
        c = curl_easy_init();
    }
    try {
        if (c == nullptr) throw io_error(j->where + "curl_easy_init failed");
        j->t->followed_by_ferry = j->chain.followed_here();
        configure(c, j->chain.hop(), j->chain.hop_options(), *j->t, j->where);
        if (const CURLMcode mc = curl_multi_add_handle(multi_, c); mc != CURLM_OK) {
            throw io_error(j->where + "curl_multi_add_handle failed: " + curl_multi_strerror(mc));
        }
        running_.emplace(c, std::move(j));
        ++running_count_;
        --waiting_count_;
    } catch (...) {
        const std::exception_ptr e = std::current_exception();
        if (c != nullptr) {
            curl_multi_remove_handle(multi_, c);  // a no-op unless it was added
            curl_easy_reset(c);
            idle_.push_back(c);
        }
        if (j) {  // not moved into running_
            if (j->holds_place) host_give_back(j->host);
            j->holds_place = false;
            --waiting_count_;
            deliver(std::move(j), bytes(), e);
        }
    }
}

client_loop::job_ptr client_loop::detach(CURL* c, long status) {
    auto node = running_.extract(c);
    job_ptr j = std::move(node.mapped());
    curl_multi_remove_handle(multi_, c);
    if (j->holds_place) {
        host_answered(j->host, j->generation, status);
        host_give_back(j->host);
        j->holds_place = false;
    }
    --running_count_;
    return j;
}

void client_loop::finished(CURL* c, CURLcode rc) {
    std::exception_ptr e;
    try {
        client_job& running = *running_.at(c);
        if (running.chain.next(c, rc, *running.t, running.where)) {
            follow(c, running);
            return;
        }
    } catch (...) {  // a redirect not followed, or the next hop that could not start
        e = std::current_exception();
    }
    job_ptr j = detach(c, response_status(c));
    bytes b;
    if (!e) {
        try {
            b = outcome(c, rc, j->chain.hop(), j->chain.hop_options(), *j->t, j->where);
        } catch (...) {
            e = std::current_exception();
        }
    }
    // Reset (so that it points into nothing of the job) before the job goes.
    curl_easy_reset(c);
    idle_.push_back(c);
    if (e && retry_later(j, e)) return;
    deliver(std::move(j), std::move(b), std::move(e));
}

void client_loop::follow(CURL* c, client_job& j) {
    curl_multi_remove_handle(multi_, c);
    // Reset (so that it points into nothing of the old transfer) before that goes.
    curl_easy_reset(c);
    j.t = std::make_unique<transfer>();
    j.t->followed_by_ferry = true;
    configure(c, j.chain.hop(), j.chain.hop_options(), *j.t, j.where);
    if (const CURLMcode mc = curl_multi_add_handle(multi_, c); mc != CURLM_OK) {
        throw io_error(j.where + "curl_multi_add_handle failed: " + curl_multi_strerror(mc));
    }
}

bool client_loop::retry_later(job_ptr& j, const std::exception_ptr& e) {
    if (j->attempt >= retry_.attempts || j->done.stop_requested()) return false;
    if (!retry_.transient(e)) return false;
    const std::chrono::duration<double, std::milli> pause = retry_.pause_after(j->attempt, e);
    ++j->attempt;
    j->t = std::make_unique<transfer>();
    j->chain = redirect_chain(j->req, j->options);  // from the request's own URL again
    const auto due = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(pause);
    delayed_.emplace(due, std::move(j));
    ++waiting_count_;
    ++retried_count_;
    return true;
}

void client_loop::release_due() {
    const auto now = std::chrono::steady_clock::now();
    std::vector<job_ptr> due;
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
        due.push_back(std::move(delayed_.begin()->second));
        delayed_.erase(delayed_.begin());
    }
    // Older than what waits: to the front, in the order they fell due.
    for (auto it = due.rbegin(); it != due.rend(); ++it) waiting_.push_front(std::move(*it));
}

void client_loop::end_running(bool only_unwanted, const failure& why) {
    std::vector<CURL*> ending;
    for (const auto& [c, j] : running_) {
        if (!only_unwanted || j->done.stop_requested()) ending.push_back(c);
    }
    for (CURL* c : ending) {
        job_ptr j = detach(c, 0);  // cut short: no answer to adapt to
        curl_easy_reset(c);
        idle_.push_back(c);
        std::exception_ptr e = why(j->where);
        deliver(std::move(j), bytes(), std::move(e));
    }
}

void client_loop::sweep() {
    end_running(true, [](const std::string& where) { return cancelled(where, pipeline_stopping); });
    const auto drop_unwanted = [this](std::deque<job_ptr>& queue) {
        std::deque<job_ptr> kept;
        for (job_ptr& j : queue) {
            if (j->done.stop_requested()) {
                --waiting_count_;
                cancel(std::move(j), pipeline_stopping);
            } else {
                kept.push_back(std::move(j));
            }
        }
        queue.swap(kept);
    };
    drop_unwanted(waiting_);
    for (auto& [host, queue] : held_) drop_unwanted(queue);
    for (auto it = delayed_.begin(); it != delayed_.end();) {
        if (it->second->done.stop_requested()) {
            --waiting_count_;
            cancel(std::move(it->second), pipeline_stopping);
            it = delayed_.erase(it);
        } else {
            ++it;
        }
    }
    std::erase_if(held_, [](const auto& entry) { return entry.second.empty(); });
}

void client_loop::shut_down() {
    {
        const std::lock_guard lock(mutex_);
        for (auto& j : incoming_) waiting_.push_back(std::move(j));
        incoming_.clear();
    }
    end_running(false, [](const std::string& where) { return cancelled(where, client_ending); });
    const auto fail_all = [this](std::deque<job_ptr>& queue) {
        for (job_ptr& j : queue) {
            --waiting_count_;
            cancel(std::move(j), client_ending);
        }
        queue.clear();
    };
    fail_all(waiting_);
    for (auto& [host, queue] : held_) fail_all(queue);
    for (auto& [when, j] : delayed_) {
        --waiting_count_;
        cancel(std::move(j), client_ending);
    }
    delayed_.clear();
    held_.clear();
    for (CURL* c : idle_) curl_easy_cleanup(c);
    idle_.clear();
}

void client_loop::deliver(job_ptr j, bytes b, std::exception_ptr e) {
    // A completion runs the caller's code (a pipeline's next call may start from it, and submit
    // here again): nothing of the loop is locked, and nothing it throws stops the loop.
    try {
        if (e) {
            j->done.fail(std::move(e));
        } else {
            j->done(std::move(b));
        }
    } catch (...) {
    }
}

void client_loop::cancel(job_ptr j, const char* why) {
    std::exception_ptr e = cancelled(j->where, why);
    deliver(std::move(j), bytes(), std::move(e));
}

}  // namespace ferry::ops::detail
