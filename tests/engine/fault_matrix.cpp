// SPDX-License-Identifier: Apache-2.0
/// \file
/// The exit-and-fault matrix (in the spirit of PyTorch's test_proper_exit): one pipeline of every
/// stage kind, a fault injected at one place on item 7, under one policy, left in one way. Every
/// cell must end in bounded time, leave no thread or file descriptor behind, surface the error
/// where the policy says, and account for every item the source produced.
///
/// The pipeline: source -> compute (map) -> io (map, executor io) -> async (map_async) ->
/// batch(4) -> after_batch (map on batches) -> the consumer. Each stage checks its input and
/// throws `decode_error` on garbage (a negative number). Where: the source's pull, one of the
/// three stages, the stage after the batch (a fault there fails the 4 items of batch 1), or the
/// consumer's loop body. Faults, all on the first attempt only (a retry succeeds):
///  * throws: a transient `io_error`;
///  * hangs: blocks until told to give up (`this_call::stop_requested()`), which the stages'
///    50 ms timeout does; the source has no timeout and the consumer no policy: they pause
///    300 ms unless stopped;
///  * garbage: returns -1, which the next stage rejects under the same policy (a decode_error is
///    not transient: retry then skips it); garbage from the last stage reaches the consumer.
/// Policies: fail, skip, retry{3 attempts, then skip} on the faulty stage and the one after it
/// (map_async refuses retry at build()). Exits: run to the end, break after the first batch,
/// stop() from another thread after the first batch, destroy after the first batch.

#include <boost/test/unit_test.hpp>

#include <dirent.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "support.hpp"

using namespace ferry_test;

namespace {

enum class where { source, compute, io, async, batch, consumer };
enum class fault { throws, hangs, garbage };
enum class policy { fail, skip, retry };
enum class exit_by { run_to_end, break_early, stop_from_thread, destroy };

const char* name(where w) {
    static const char* const names[] = {"source", "compute",     "io",
                                        "async",  "after_batch", "consumer"};
    return names[static_cast<int>(w)];
}

constexpr int items = 40;
constexpr int faulty = 7;  // the item (batch 1 holds items 4..7)

/// Entries of a /proc/self directory (threads, file descriptors).
int entries(const char* dir) {
    int n = 0;
    if (DIR* d = ::opendir(dir)) {
        while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
        ::closedir(d);
    }
    return n;
}

/// Whether the entries of `dir` come back to at most `n` within a second: a thread that is
/// still leaving (a TBB worker going back to sleep) passes, one left running does not.
bool back_to(const char* dir, int n) {
    const auto until = steady::now() + 1s;
    while (entries(dir) > n) {
        if (steady::now() >= until) return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

/// The first attempt of a fault: true once per cell.
class once {
  public:
    bool operator()() { return !fired_.exchange(true); }

  private:
    std::atomic<bool> fired_{false};
};

/// Blocks until the call is told to give up, or `limit` passes.
void hang(std::chrono::milliseconds limit) {
    const auto until = steady::now() + limit;
    while (!ferry::this_call::stop_requested() && steady::now() < until) {
        std::this_thread::sleep_for(1ms);
    }
    if (ferry::this_call::stop_requested()) {
        throw ferry::error(ferry::errc::cancelled, "gave up");
    }
}

struct cell {
    where at;
    fault f;
    policy pol;
    exit_by exit;
};

std::string describe(const cell& c) {
    static const char* const faults[] = {"throws", "hangs", "garbage"};
    static const char* const policies[] = {"fail", "skip", "retry"};
    static const char* const exits[] = {"run to end", "break early", "stop()", "destroy"};
    return std::string(name(c.at)) + " " + faults[static_cast<int>(c.f)] + ", " +
           policies[static_cast<int>(c.pol)] + ", " + exits[static_cast<int>(c.exit)];
}

/// The policy of stage `s` in cell `c`: the cell's on the faulty stage and on the one after it
/// (which sees the garbage), fail elsewhere (where nothing goes wrong).
ferry::error_policy policy_of(const cell& c, where s) {
    const bool faulty_or_next =
        s == c.at || (c.f == fault::garbage && static_cast<int>(s) == static_cast<int>(c.at) + 1);
    if (!faulty_or_next) return ferry::fail;
    // map_async refuses retry: where it only checks another stage's garbage, it skips instead
    // (a decode_error is not retried anyway).
    if (s == where::async && c.at != where::async && c.pol == policy::retry) return ferry::skip;
    switch (c.pol) {
        case policy::fail:
            return ferry::fail;
        case policy::skip:
            return ferry::skip;
        case policy::retry:
            return ferry::retry{.attempts = 3, .backoff = 1ms, .then = ferry::skip};
    }
    return ferry::fail;
}

/// What one cell observed.
struct outcome {
    std::optional<ferry::stage_error> stage_err;
    std::optional<std::string> other_err;  ///< any other exception out of the loop or build
    std::vector<int> got;                  ///< items delivered, flattened
    int garbage_seen = 0;                  ///< negative items the consumer received
    std::optional<ferry::pipeline_stats> stats;
    int pulls = 0;
};

/// Runs one cell; returns what it saw.
outcome run(const cell& c) {
    outcome o;
    once first;
    std::atomic<int> pulls{0};
    std::mutex held_mutex;
    std::vector<ferry::completion<int>> held;  // a hanging async call's completion, never called
    auto inject = [&](where me, int x) {
        if (x < 0) throw ferry::decode_error("garbage: " + std::to_string(x));
        if (me != c.at || x != faulty || !first()) return x;
        switch (c.f) {
            case fault::throws:
                throw ferry::io_error("injected failure");
            case fault::hangs:
                hang(me == where::source ? 300ms : 20s);
                return x;
            case fault::garbage:
                return -1;
        }
        return x;
    };
    auto stage = [&](where me) {
        return ferry::stage_options{.concurrency = 2,
                                    .name = name(me),
                                    .on_error = policy_of(c, me),
                                    .executor = me == where::io ? ferry::io : ferry::compute,
                                    .timeout = 50ms};
    };
    try {
        auto p = ferry::from([&, i = 0]() mutable -> std::optional<int> {
                     if (i >= items) return std::nullopt;
                     const int x = inject(where::source, i++);
                     ++pulls;  // produced: a pull that threw produced nothing
                     return x;
                 })
                     .map([&](int x) { return inject(where::compute, x); }, stage(where::compute))
                     .map([&](int x) { return inject(where::io, x); }, stage(where::io))
                     .map_async<int>(
                         [&](int x, ferry::completion<int> done) {
                             try {
                                 if (c.at == where::async && c.f == fault::hangs && x == faulty &&
                                     first()) {
                                     const std::lock_guard lock(held_mutex);
                                     held.push_back(done);  // never completes: timed out
                                     return;
                                 }
                                 done(inject(where::async, x));
                             } catch (...) {
                                 done.fail(std::current_exception());
                             }
                         },
                         stage(where::async))
                     .batch(4)
                     .map(
                         [&](std::vector<int> b) {
                             for (int& x : b) {
                                 if (x < 0)
                                     throw ferry::decode_error("garbage: " + std::to_string(x));
                             }
                             if (b.front() == 4) b.back() = inject(where::batch, b.back());
                             return b;
                         },
                         stage(where::batch))
                     .build({.threads = 2, .in_flight = 16, .logger = quiet});
        std::thread stopper;
        std::atomic<bool> first_batch{false};
        if (c.exit == exit_by::stop_from_thread) {
            stopper = std::thread([&] {
                while (!first_batch) std::this_thread::sleep_for(100us);
                p.stop();
            });
        }
        try {
            if (c.exit == exit_by::destroy) {
                if (auto b = p.next()) o.got.insert(o.got.end(), b->begin(), b->end());
            } else {
                int batches = 0;
                for (auto& b : p) {
                    ++batches;
                    for (const int x : b) o.garbage_seen += x < 0;
                    if (c.at == where::consumer && batches == 2) {
                        if (c.f == fault::throws) throw bad_record("consumer failed");
                        if (c.f == fault::hangs) std::this_thread::sleep_for(300ms);
                        if (c.f == fault::garbage) continue;  // drops the batch it was given
                    }
                    o.got.insert(o.got.end(), b.begin(), b.end());
                    first_batch = true;
                    if (c.exit == exit_by::break_early) break;
                }
            }
        } catch (const ferry::stage_error& e) {
            o.stage_err = e;
        } catch (const std::exception& e) {
            o.other_err = e.what();
        }
        first_batch = true;
        if (stopper.joinable()) stopper.join();
        if (c.exit != exit_by::destroy) o.stats = p.stats();
    } catch (const std::exception& e) {
        o.other_err = e.what();  // build() refused the options
    }
    o.pulls = pulls.load();
    return o;
}

/// Checks what a cell that ran to its end must show.
void check_run_to_end(const cell& c, const outcome& o) {
    const ferry::pipeline_stats& s = *o.stats;
    const bool retried = c.pol == policy::retry && c.f != fault::garbage;
    // Where the error surfaces: the faulty stage, or for garbage the one after it.
    const where seen =
        c.f == fault::garbage ? static_cast<where>(static_cast<int>(c.at) + 1) : c.at;
    const std::uint64_t lost = seen == where::batch ? 4 : 1;
    if (c.at == where::consumer) {
        if (c.f == fault::throws) {
            BOOST_TEST(o.other_err.value_or("") == "consumer failed");
        } else {
            BOOST_TEST(!o.stage_err.has_value());
            BOOST_TEST(s.delivered == std::uint64_t{items});
        }
        return;
    }
    if (c.at == where::source && c.f == fault::throws) {
        // A source has no policy: its failure ends the epoch.
        BOOST_REQUIRE(o.stage_err.has_value());
        BOOST_TEST(o.stage_err->stage() == "source");
        BOOST_TEST(o.stage_err->item() == std::uint64_t{faulty});
        return;
    }
    if (c.f == fault::hangs && c.at == where::source) {
        BOOST_TEST(!o.stage_err.has_value());
        BOOST_TEST(s.delivered == std::uint64_t{items});
        return;
    }
    if (c.at == where::batch && c.f == fault::garbage) {
        // Nothing checks after the last stage: the consumer gets it.
        BOOST_TEST(!o.stage_err.has_value());
        BOOST_TEST(o.garbage_seen == 1);
        BOOST_TEST(s.delivered == std::uint64_t{items});
        return;
    }
    switch (c.pol) {
        case policy::fail:
            BOOST_REQUIRE(o.stage_err.has_value());
            BOOST_TEST(o.stage_err->stage() == name(seen));
            if (c.f == fault::hangs) BOOST_TEST(nests<ferry::timeout_error>(*o.stage_err));
            BOOST_TEST(s.delivered < std::uint64_t{items});
            break;
        case policy::skip:
        case policy::retry:
            BOOST_TEST(!o.stage_err.has_value());
            BOOST_TEST(!o.other_err.has_value(), o.other_err.value_or(""));
            if (retried) {
                BOOST_TEST(o.got == iota(items), boost::test_tools::per_element());
                BOOST_TEST(row_named(s, name(seen)).retries >= 1U);
                BOOST_TEST(s.failed == 0U);
            } else {
                BOOST_TEST(s.failed == lost);
                BOOST_TEST(s.delivered == items - lost);
                BOOST_TEST(row_named(s, name(seen)).failed == 1U);
            }
            break;
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(fault_matrix)

// Every cell of {where} x {fault} x {policy} x {exit}: bounded time, no thread or descriptor
// left, the error where the policy says, and every produced item accounted for.
BOOST_AUTO_TEST_CASE(every_fault_every_policy_every_exit) {
    // A warm-up cell, so that oneTBB's workers (which outlive pipelines) exist before counting.
    (void)run({where::compute, fault::throws, policy::skip, exit_by::run_to_end});
    const int threads_before = entries("/proc/self/task");
    const int fds_before = entries("/proc/self/fd");
    int cells = 0;
    for (const where at :
         {where::source, where::compute, where::io, where::async, where::batch, where::consumer}) {
        for (const fault f : {fault::throws, fault::hangs, fault::garbage}) {
            for (const policy pol : {policy::fail, policy::skip, policy::retry}) {
                for (const exit_by ex : {exit_by::run_to_end, exit_by::break_early,
                                         exit_by::stop_from_thread, exit_by::destroy}) {
                    const cell c{at, f, pol, ex};
                    BOOST_TEST_CONTEXT(describe(c)) {
                        ++cells;
                        const auto t0 = steady::now();
                        const outcome o = run(c);
                        BOOST_TEST(since(t0) < prompt);
                        BOOST_TEST(back_to("/proc/self/task", threads_before),
                                   entries("/proc/self/task")
                                       << " threads, " << threads_before << " before");
                        BOOST_TEST(back_to("/proc/self/fd", fds_before),
                                   entries("/proc/self/fd")
                                       << " descriptors, " << fds_before << " before");
                        const bool async_retry = at == where::async && pol == policy::retry;
                        if (async_retry) {
                            // map_async hands its input over: build() refuses a retry.
                            BOOST_TEST(o.other_err.value_or("").find(
                                           "retry does not apply to map_async") !=
                                       std::string::npos);
                            continue;
                        }
                        if (!o.stats) continue;  // destroyed: counted by threads and time only
                        const auto& s = *o.stats;
                        BOOST_TEST(s.produced == std::uint64_t(o.pulls));
                        BOOST_TEST(s.produced == s.delivered + s.filtered + s.failed + s.cancelled);
                        BOOST_TEST(s.cancelled <= s.in_flight);
                        if (ex == exit_by::run_to_end) check_run_to_end(c, o);
                    }
                }
            }
        }
    }
    BOOST_TEST(cells == 6 * 3 * 3 * 4);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
