// SPDX-License-Identifier: Apache-2.0
/// \file
/// Helpers shared by the engine tests: a live-instance-counting element, a stand-in asynchronous
/// service, a concurrency probe, a waitable count, a log capture, drains, the accounting check
/// the time bounds the tests hold the engine to, and a spin that uses a given CPU time.
#pragma once

#include <time.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <ferry/ferry.hpp>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "../support/expect.hpp"

namespace ferry_test {

/// Uses `d` of the calling thread's CPU time.
inline void spin_thread_cpu(std::chrono::nanoseconds d) {
    const auto now = [] {
        timespec ts{};
        ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
    };
    for (const auto end = now() + d; now() < end;) {
    }
}

/// A logger that keeps nothing: for tests that check failures() and exceptions, not log lines.
inline const ferry::logger quiet = [](ferry::log_level, std::string_view) {};

/// True when the cause nested in `e` has type `Cause`.
template <class Cause>
bool nests(const std::exception& e) {
    try {
        std::rethrow_if_nested(e);
    } catch (const Cause&) {
        return true;
    } catch (...) {
        return false;
    }
    return false;
}

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// Generous limit for "returns promptly" checks: hang detection, not performance. Sanitizer
/// builds run 5-20x slower, which this still absorbs.
inline constexpr auto prompt = std::chrono::seconds(5);

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FERRY_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FERRY_TEST_SANITIZED 1
#endif
#endif
#ifndef FERRY_TEST_SANITIZED
#define FERRY_TEST_SANITIZED 0
#endif

/// How much slower this build runs than a plain one: time bounds scale by it (ASan and TSan
/// builds run 5-20x slower).
inline constexpr int slowdown = FERRY_TEST_SANITIZED ? 10 : 1;

/// What a documented "promptly" allows beyond the work it may wait for (the longest call in
/// progress): a wake-up and some scheduling delay on a loaded machine. Measured, stop() ends a
/// loop ~3 ms after it is called.
inline constexpr std::chrono::milliseconds prompt_margin{100 * slowdown};

/// How long a test waits for something that should happen at once before it gives up: a broken
/// promise then ends in a failed check, not a hang. Not a performance limit.
inline constexpr auto bounded_wait = std::chrono::seconds(5);

/// Polls `pred()` every millisecond until it holds or `limit` passes; true when it held. For
/// what a test can observe only by looking (a flag, a count), without a hang when it never comes.
template <class P>
bool wait_until(P pred, steady::duration limit = bounded_wait) {
    const auto deadline = steady::now() + limit;
    while (!pred()) {
        if (steady::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

/// A count that threads wait on: a latch that cannot hang a test.
class waitable_count {
  public:
    /// Adds `k`; returns the new count.
    int add(int k = 1) {
        int now = 0;
        {
            std::lock_guard lock(mutex_);
            now = value_ += k;
        }
        cv_.notify_all();
        return now;
    }
    [[nodiscard]] int value() {
        std::lock_guard lock(mutex_);
        return value_;
    }
    /// Blocks until the count is at least `n` or `deadline` passes; true when it came.
    bool wait_for(int n, steady::time_point deadline = steady::now() + bounded_wait) {
        std::unique_lock lock(mutex_);
        return cv_.wait_until(lock, deadline, [&] { return value_ >= n; });
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    int value_ = 0;
};

/// Concurrencies and thread counts the sweeps run over.
inline const std::vector<int> concurrencies{1, 2, 4, 8, 16};
inline const std::vector<int> thread_counts{1, 2, 3, 4};

/// Live instances of every `counted_value<Pad>` type together.
inline std::atomic<long> live_instances{0};

/// An element that counts its live instances (copies and moved-from objects included, until
/// they are destroyed), to show the engine frees everything it holds. `Pad` bytes make it too
/// big for the engine's inline storage, so the heap path is exercised too.
template <std::size_t Pad>
struct counted_value {
    int value = 0;
    std::array<char, Pad> pad{};

    explicit counted_value(int v) noexcept : value(v) { live_instances.fetch_add(1); }
    counted_value(const counted_value& o) noexcept : value(o.value), pad(o.pad) {
        live_instances.fetch_add(1);
    }
    counted_value(counted_value&& o) noexcept : value(o.value), pad(o.pad) {
        live_instances.fetch_add(1);
    }
    counted_value& operator=(const counted_value&) = default;
    counted_value& operator=(counted_value&&) noexcept = default;
    ~counted_value() { live_instances.fetch_sub(1); }
};
using counted = counted_value<1>;        ///< stored inline by the engine
using counted_big = counted_value<200>;  ///< stored on the heap by the engine

/// `0, 1, ..., n-1`.
inline std::vector<int> iota(int n) {
    std::vector<int> v(static_cast<std::size_t>(n));
    std::iota(v.begin(), v.end(), 0);
    return v;
}

template <class T>
std::vector<T> sorted(std::vector<T> v) {
    std::sort(v.begin(), v.end());
    return v;
}

/// Reads one epoch through `next()`.
template <class T>
std::vector<T> drain(ferry::pipeline<T>& p) {
    std::vector<T> out;
    while (auto x = p.next()) out.push_back(std::move(*x));
    return out;
}

/// Reads one epoch of batches and concatenates them.
template <class T>
std::vector<T> drain_flat(ferry::pipeline<std::vector<T>>& p) {
    std::vector<T> out;
    while (auto b = p.next()) out.insert(out.end(), b->begin(), b->end());
    return out;
}

/// The accounting invariant, in source items, once nothing is pending (take the stats of a
/// stopped pipeline with `settled_stats`): every item the source produced ended somewhere.
inline void check_accounting(const ferry::pipeline_stats& s) {
    BOOST_TEST(s.produced == s.delivered + s.filtered + s.failed + s.cancelled + s.pending);
    BOOST_TEST(s.pending == 0u);
}

/// The stats once no item is pending: after `stop()`, the calls in progress return and ferry
/// counts their items (and those queued behind them) as cancelled. Polls up to `bounded_wait`;
/// a pipeline that never settles returns stats with `pending > 0`, which `check_accounting`
/// then reports.
template <class P>
ferry::pipeline_stats settled_stats(const P& p) {
    auto s = p.stats();
    for (const auto until = steady::now() + bounded_wait; s.pending > 0 && steady::now() < until;
         s = p.stats()) {
        std::this_thread::sleep_for(1ms);
    }
    return s;
}

/// Same, for an epoch that ran to its end: nothing may count as cancelled.
inline void check_complete_accounting(const ferry::pipeline_stats& s) {
    check_accounting(s);
    BOOST_TEST(s.cancelled == 0u);
}

/// Concurrencies the error-policy sweeps run at (errors.cpp, retry.cpp).
inline const std::vector<int> error_concurrencies{1, 4, 16};

/// Counts calls per item, from any thread.
class attempt_counter {
  public:
    int operator()(int item) {
        std::lock_guard lock(mutex_);
        return ++calls_[item];
    }
    int of(int item) {
        std::lock_guard lock(mutex_);
        return calls_[item];
    }

  private:
    std::mutex mutex_;
    std::map<int, int> calls_;
};

/// The stats row of the stage named `name` (fails the test when there is none).
inline const ferry::stage_stats& row_named(const ferry::pipeline_stats& s,
                                           const std::string& name) {
    for (const auto& r : s.stages) {
        if (r.name == name) return r;
    }
    BOOST_FAIL("no stage named " << name);
    return s.stages.front();
}

inline std::chrono::milliseconds since(steady::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
}

/// Records how many calls run at once (`peak`), to check a stage's concurrency cap. With a
/// `fill_to`, each call waits on entry until `fill_to` calls are inside at once (or
/// `bounded_wait` after the probe was made), so a stage that can run that many reaches exactly
/// that peak: the cap is shown reached, not only kept.
class concurrency_probe {
  public:
    explicit concurrency_probe(int fill_to = 0) : fill_to_(fill_to) {}

    class scope {
      public:
        explicit scope(concurrency_probe& p) : p_(p) {
            const int now = p_.now_.fetch_add(1) + 1;
            int peak = p_.peak_.load();
            while (now > peak && !p_.peak_.compare_exchange_weak(peak, now)) {
            }
            if (p_.fill_to_ > 0) p_.wait_until_filled(now);
        }
        ~scope() { p_.now_.fetch_sub(1); }
        scope(const scope&) = delete;
        scope& operator=(const scope&) = delete;

      private:
        concurrency_probe& p_;
    };
    [[nodiscard]] int peak() const { return peak_.load(); }
    [[nodiscard]] int running() const { return now_.load(); }
    /// True when `fill_to` calls were inside at once before the wait gave up.
    [[nodiscard]] bool filled() {
        std::lock_guard lock(mutex_);
        return filled_;
    }

  private:
    void wait_until_filled(int now) {
        std::unique_lock lock(mutex_);
        if (now >= fill_to_) {
            filled_ = true;
            cv_.notify_all();
            return;
        }
        cv_.wait_until(lock, deadline_, [&] { return filled_; });
    }

    std::atomic<int> now_{0};
    std::atomic<int> peak_{0};
    int fill_to_;
    steady::time_point deadline_ = steady::now() + bounded_wait;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool filled_ = false;
};

/// A logger that records every line, from any thread.
class log_capture {
  public:
    ferry::logger sink() {
        return [this](ferry::log_level level, std::string_view line) {
            std::lock_guard lock(mutex_);
            lines_.emplace_back(level, std::string(line));
        };
    }
    std::vector<std::pair<ferry::log_level, std::string>> lines() {
        std::lock_guard lock(mutex_);
        return lines_;
    }

  private:
    std::mutex mutex_;
    std::vector<std::pair<ferry::log_level, std::string>> lines_;
};

/// A stand-in for an asynchronous service (an RPC client, a GPU queue): runs posted jobs on its
/// own threads, each after a random delay of up to `max_delay`, so completions arrive out of
/// order. Destruction runs every job still queued, then joins: declare it before the pipeline
/// that uses it, so the pipeline goes first.
class async_service {
  public:
    explicit async_service(int threads = 2,
                           std::chrono::microseconds max_delay = std::chrono::microseconds(0))
        : max_delay_(max_delay) {
        for (int i = 0; i < threads; ++i) {
            threads_.emplace_back([this, i] { run(static_cast<unsigned>(i)); });
        }
    }
    ~async_service() {
        {
            std::lock_guard lock(mutex_);
            closing_ = true;
        }
        cv_.notify_all();
        for (auto& t : threads_) t.join();
    }
    async_service(const async_service&) = delete;
    async_service& operator=(const async_service&) = delete;

    void post(std::function<void()> job) {
        {
            std::lock_guard lock(mutex_);
            jobs_.push_back(std::move(job));
        }
        cv_.notify_one();
    }

  private:
    void run(unsigned seed) {
        std::minstd_rand rng(seed + 1);
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock lock(mutex_);
                cv_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
                if (jobs_.empty()) return;
                job = std::move(jobs_.front());
                jobs_.pop_front();
            }
            if (max_delay_.count() > 0) {
                std::this_thread::sleep_for(std::chrono::microseconds(
                    static_cast<long>(rng() % static_cast<unsigned long>(max_delay_.count()))));
            }
            job();
        }
    }

    std::chrono::microseconds max_delay_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    bool closing_ = false;
    std::vector<std::thread> threads_;
};

/// An exception type of the user's own, to check that its type survives nesting.
struct bad_record : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace ferry_test
