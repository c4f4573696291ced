// This program demonstrates epochs and stopping: an epoch factory that reshuffles every epoch,
// leaving a loop early, and stop() called from another thread over an endless generator.
//
// A pipeline is built once and iterated again for every epoch, on the same graph and threads.
// Breaking out of a loop ends that epoch's work (its unread items count as cancelled); stop()
// ends the pipeline for good, from any thread, and a consumer blocked in next() returns.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <ferry/ferry.hpp>

#include "checks.hpp"

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

using ferry_examples::check;

double ms_since(steady::time_point t0) {
    return std::chrono::duration<double, std::milli>(steady::now() - t0).count();
}

void print_accounting(const ferry::pipeline_stats& st) {
    std::cout << "  accounting: produced " << st.produced << " = delivered " << st.delivered
              << " + filtered " << st.filtered << " + failed " << st.failed << " + cancelled "
              << st.cancelled << " + pending " << st.pending << '\n';
    check(st.produced == st.delivered + st.filtered + st.failed + st.cancelled + st.pending &&
              st.pending == 0,
          "every produced item is accounted for");
}

void reshuffled_epochs() {
    std::cout << "1. an epoch factory reshuffles at the start of every epoch\n";
    // Called at the start of every epoch with its number: seed the shuffle with it, so each
    // epoch has its own order and a rerun reproduces it.
    auto pipe = ferry::from([](std::uint64_t epoch) {
                    std::vector<int> v(12);
                    std::iota(v.begin(), v.end(), 0);
                    std::mt19937_64 rng(epoch);
                    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
                    return v;
                })
                    .map([](int x) { return x; }, 2)  // some work; order is kept
                    .build({.threads = 2});

    std::vector<std::vector<int>> orders;
    for (int epoch = 0; epoch < 3; ++epoch) {
        auto& order = orders.emplace_back();
        for (int x : pipe) order.push_back(x);
        std::cout << "  epoch " << epoch << ":";
        for (int x : order) std::cout << ' ' << x;
        std::cout << '\n';
    }
    bool each_once = true;
    for (auto order : orders) {
        std::sort(order.begin(), order.end());
        std::vector<int> want(12);
        std::iota(want.begin(), want.end(), 0);
        each_once = each_once && order == want;
    }
    const bool differ = orders[0] != orders[1] && orders[1] != orders[2];
    std::cout << "  every epoch saw each item once: " << (each_once ? "yes" : "no") << '\n';
    std::cout << "  orders differ between epochs: " << (differ ? "yes" : "no") << '\n';
    std::cout << "  stats: " << pipe.stats().epochs << " epochs started\n";
    check(each_once && differ, "reshuffled epochs");
}

void early_break() {
    std::cout << "\n2. leaving a loop early ends the epoch; the next loop starts a new one\n";
    std::vector<int> data(10000);
    std::iota(data.begin(), data.end(), 0);
    auto pipe = ferry::from(std::move(data))
                    .map([](int x) { return x * 2; }, 2)
                    .build({.threads = 2, .in_flight = 64});

    std::vector<int> first;
    const auto t0 = steady::now();
    for (int x : pipe) {
        first.push_back(x);
        if (first.size() == 5) break;
    }
    std::cout << "  left after " << first.size() << " items; the epoch's work ended within "
              << static_cast<int>(ms_since(t0)) << " ms\n";
    const auto st = pipe.stats();
    print_accounting(st);
    std::cout << "  (in_flight 64 bounds how much was read ahead: cancelled " << st.cancelled
              << ")\n";
    check(st.delivered == 5 && st.cancelled > 0 && st.cancelled <= 64, "early break accounting");

    std::optional<int> again;
    for (int x : pipe) {
        again = x;
        break;
    }
    const bool restarted = again && *again == 0;
    std::cout << "  next epoch starts again from the beginning: " << (restarted ? "yes" : "no")
              << " (first item " << (again ? std::to_string(*again) : "none") << ")\n";
    check(restarted, "a new epoch re-reads the range from begin()");
}

void stop_from_another_thread() {
    std::cout << "\n3. stop() from another thread ends an endless generator\n";
    // A generator never returns std::nullopt: this source is endless.
    auto pipe = ferry::from([i = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
                    return i++;
                })
                    .map(
                        [](std::uint64_t x) {
                            std::this_thread::sleep_for(100us);  // pretend to decode
                            return x;
                        },
                        2)
                    .batch(16)
                    .build({.threads = 2});

    // The stopper waits for the first batch (so the run does not depend on how fast a loaded
    // machine starts the threads), lets the loop run a little longer, then stops the pipeline.
    std::atomic<bool> started{false};
    std::atomic<std::int64_t> stop_called_ns{0};
    std::thread stopper([&] {
        while (!started.load()) std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(100ms);
        stop_called_ns = steady::now().time_since_epoch().count();
        pipe.stop();
    });
    std::uint64_t items = 0, batches = 0;
    for (const auto& batch : pipe) {
        items += batch.size();
        ++batches;
        started = true;
    }
    const auto ended = steady::now().time_since_epoch().count();
    stopper.join();
    const double after_ms = static_cast<double>(ended - stop_called_ns.load()) / 1e6;
    std::cout << "  stop() ended the loop after " << items << " items (" << batches << " batches), "
              << (after_ms < 1.0 ? "<1" : std::to_string(static_cast<int>(after_ms)))
              << " ms after the call\n";
    check(items > 0 && after_ms < 1000, "stop() ends the loop promptly");

    const auto more = pipe.next();
    std::cout << "  next() after stop(): " << (more ? "a value" : "nullopt") << '\n';
    check(!more, "a stopped pipeline yields nothing");
    // Items inside calls that were running at the stop are `pending` until those calls return
    // (here within 100 us); then ferry counts them as cancelled.
    auto st = pipe.stats();
    for (const auto until = steady::now() + 10s; st.pending > 0 && steady::now() < until;
         st = pipe.stats()) {
        std::this_thread::sleep_for(1ms);
    }
    print_accounting(st);
}

}  // namespace

int main() {
    reshuffled_epochs();
    early_break();
    stop_from_another_thread();
    return ferry_examples::checks_verdict();
}
