// This program demonstrates map_async: calls that complete later, with many outstanding and no
// thread blocked while they wait — first with a std::future-returning call, then with callbacks.
//
// The "remote store" is simulated: a client with one background thread that answers each request
// after a few milliseconds (a different delay per key, so answers arrive out of order). ferry
// keeps the pipeline's output in input order anyway. Missing keys fail their item, and a request
// the client loses (never calls back) fails too, instead of hanging the epoch.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <iostream>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include <ferry/ferry.hpp>

#include "checks.hpp"

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

using ferry_examples::check;

/// A toy asynchronous key-value client: requests are answered by one background thread after a
/// per-key latency of 2..12 ms. Keys 13 and 42 do not exist; the request for key 50 is lost.
class kv_client {
  public:
    using callback = std::function<void(std::optional<std::string>)>;

    kv_client() : thread_([this] { run(); }) {}
    kv_client(const kv_client&) = delete;
    kv_client& operator=(const kv_client&) = delete;
    ~kv_client() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }

    /// Callback style: `cb` runs on the client's thread with the value, or nullopt if missing.
    void get_async(int key, callback cb) {
        const auto due = steady::now() + std::chrono::milliseconds(2 + (key * 7919) % 11);
        {
            std::lock_guard lock(mutex_);
            ++sequence_;
            pending_.push({due, sequence_, key, std::move(cb)});
        }
        cv_.notify_one();
    }

    /// Future style: throws ferry::io_error from get() if the key is missing.
    std::future<std::string> get(int key) {
        auto promise = std::make_shared<std::promise<std::string>>();
        auto fut = promise->get_future();
        get_async(key, [promise, key](std::optional<std::string> v) {
            if (v) {
                promise->set_value(std::move(*v));
            } else {
                promise->set_exception(std::make_exception_ptr(
                    ferry::io_error("key " + std::to_string(key) + " not found")));
            }
        });
        return fut;
    }

    /// Keys in the order their answers were sent.
    std::vector<int> completion_order() {
        std::lock_guard lock(mutex_);
        return completed_;
    }

  private:
    struct request {
        steady::time_point due;
        std::uint64_t sequence;
        int key;
        callback cb;
        bool operator>(const request& o) const {
            return due != o.due ? due > o.due : sequence > o.sequence;
        }
    };

    void run() {
        std::unique_lock lock(mutex_);
        while (true) {
            if (pending_.empty()) {
                if (done_) return;
                cv_.wait(lock);
                continue;
            }
            const auto due = pending_.top().due;
            if (steady::now() < due) {
                cv_.wait_until(lock, due);
                continue;
            }
            request r = pending_.top();
            pending_.pop();
            completed_.push_back(r.key);
            lock.unlock();
            if (r.key == 50) {
                // Lost: the callback is destroyed without being called.
            } else if (r.key == 13 || r.key == 42) {
                r.cb(std::nullopt);
            } else {
                r.cb("value-" + std::to_string(r.key));
            }
            r.cb = nullptr;
            lock.lock();
        }
    }

    std::mutex mutex_;
    std::condition_variable cv_;
    std::priority_queue<request, std::vector<request>, std::greater<>> pending_;
    std::vector<int> completed_;
    std::uint64_t sequence_ = 0;
    bool done_ = false;
    std::thread thread_;
};

std::vector<int> keys(int n, int skip_missing_from = -1) {
    std::vector<int> v;
    for (int k = 0; v.size() < static_cast<std::size_t>(n); ++k) {
        if (skip_missing_from >= 0 && (k == 13 || k == 42 || k == 50)) continue;
        v.push_back(k);
    }
    return v;
}

void futures() {
    std::cout << "1. futures: map_async(f) with f(key) -> std::future<std::string>\n";
    kv_client client;
    const auto input = keys(64, 0);  // only keys that exist
    auto pipe = ferry::from(input)
                    .map_async([&client](int key) { return client.get(key); }, {.concurrency = 16})
                    .build({.threads = 1});

    const auto t0 = steady::now();
    std::vector<std::string> got;
    for (auto& v : pipe) got.push_back(std::move(v));
    const double ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();

    bool in_order = got.size() == input.size();
    for (std::size_t i = 0; in_order && i < got.size(); ++i) {
        in_order = got[i] == "value-" + std::to_string(input[i]);
    }
    const auto answered = client.completion_order();
    const bool out_of_order = answered != input;
    std::cout << "  16 requests outstanding at a time, 2..12 ms each: " << got.size()
              << " values in " << static_cast<int>(ms) << " ms (one at a time would take ~"
              << 64 * 7 << " ms)\n";
    std::cout << "  the client answered out of order: " << (out_of_order ? "yes" : "no")
              << " (first answers:";
    for (std::size_t i = 0; i < 8 && i < answered.size(); ++i) std::cout << ' ' << answered[i];
    std::cout << ")\n";
    std::cout << "  " << got.size() << " values in input order: " << (in_order ? "yes" : "no")
              << '\n';
    check(in_order && out_of_order, "ordered output from out-of-order completions");
}

void callbacks() {
    std::cout << "\n2. callbacks: map_async<std::string>(f) with f(key, ferry::completion<U>)\n";
    kv_client client;
    const auto input = keys(64);  // includes 13 and 42 (missing) and 50 (lost)
    auto pipe = ferry::from(input)
                    .map_async<std::string>(
                        [&client](int key, ferry::completion<std::string> done) {
                            // `done` is copyable, so it fits a std::function callback.
                            client.get_async(key, [done, key](std::optional<std::string> v) {
                                if (v) {
                                    done(std::move(*v));
                                } else {
                                    done.fail(std::make_exception_ptr(ferry::io_error(
                                        "key " + std::to_string(key) + " not found")));
                                }
                            });
                        },
                        {.concurrency = 16, .name = "kv_get", .on_error = ferry::skip})
                    .build({.threads = 1, .logger = [](ferry::log_level, std::string_view) {}});

    std::vector<std::string> got;
    for (auto& v : pipe) got.push_back(std::move(v));
    auto failures = pipe.failures();
    std::sort(failures.begin(), failures.end(),
              [](const ferry::failure& a, const ferry::failure& b) { return a.item < b.item; });
    std::cout << "  delivered " << got.size() << " of " << input.size() << '\n';
    std::cout << "  failures: " << failures.size() << '\n';
    for (const auto& f : failures) {
        std::cout << "    stage '" << f.stage << "' item " << f.item << ": " << f.message << '\n';
    }
    const auto st = pipe.stats();
    std::cout << "  accounting: produced " << st.produced << " = delivered " << st.delivered
              << " + failed " << st.failed << '\n';
    check(got.size() == 61 && failures.size() == 3 &&
              st.produced == st.delivered + st.filtered + st.failed,
          "two missing keys and one lost request fail; the rest arrive");
}

}  // namespace

int main() {
    futures();
    callbacks();
    return ferry_examples::checks_verdict();
}
