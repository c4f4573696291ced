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
///  * hangs: blocks until told to give up (`this_call::stop_requested()`), which the hanging
///    stage's 250 ms timeout does (the other stages time out after 10 s). Every call of the
///    hanging stage is timed, the trivial ones too, so its limit is one a thread preempted on a
///    loaded machine (2 cores, ASan) does not reach; the source has no timeout and the
///    consumer no policy: they pause 300 ms unless stopped;
///  * garbage: returns -1, which the next stage rejects under the same policy (a decode_error is
///    not transient: retry then skips it); garbage from the last stage reaches the consumer.
/// Policies: fail, skip, retry{3 attempts, then skip} on the faulty stage and the one after it.
/// map_async refuses retry at build() (its input is handed over): under retry it skips, and the
/// stage after it (after_batch) retries. Exits: run to the end, break, stop() from another
/// thread, destroy (with the epoch running). A throw or garbage exits after the batch that holds
/// item 7 (batch 1), so its error has surfaced by then; a hang exits after batch 0, while the
/// call may still hang, so that the exit itself must cut it short.
///
/// Every cell ends with the accounting checked: produced equals the source's pulls, counted here,
/// and delivered + filtered + failed + cancelled + pending == produced, with pending 0 once the
/// calls of a stopped epoch have returned; a destroyed pipeline's stats are taken just before
/// its destruction, with the epoch still running.

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

namespace fault_matrix_test {

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
    const bool after_async = c.at == where::async && c.pol == policy::retry && s == where::batch;
    const bool faulty_or_next =
        s == c.at || after_async ||
        (c.f == fault::garbage && static_cast<int>(s) == static_cast<int>(c.at) + 1);
    if (!faulty_or_next) return ferry::fail;
    // map_async refuses retry: it skips instead, and the stage after it retries.
    if (s == where::async && c.pol == policy::retry) return ferry::skip;
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
    std::vector<int> got;                  ///< items delivered and kept, flattened
    std::uint64_t taken = 0;               ///< items the consumer received (kept or not)
    int garbage_seen = 0;                  ///< negative items the consumer received
    /// At the exit: once nothing is pending (stop: the calls have returned), or for a destroyed
    /// pipeline just before its destruction.
    std::optional<ferry::pipeline_stats> stats;
    int pulls = 0;
};

/// The batches a cell takes before it leaves (break, stop, destroy): past the faulty item's
/// batch for a throw or garbage, and only batch 0 for a hang, which the exit then cuts short.
int exit_after(const cell& c) {
    return c.f == fault::hangs ? 1 : 2;
}

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
                                    .timeout = c.f == fault::hangs && c.at == me ? 250ms : 10s};
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
        std::atomic<bool> exit_point{false};
        if (c.exit == exit_by::stop_from_thread) {
            stopper = std::thread([&] {
                while (!exit_point) std::this_thread::sleep_for(100us);
                p.stop();
            });
        }
        // The loop's body: true once the cell has taken the batches it takes before it leaves.
        int batches = 0;
        auto take = [&](const std::vector<int>& b) {
            ++batches;
            o.taken += b.size();
            for (const int x : b) o.garbage_seen += x < 0;
            if (c.at == where::consumer && batches == 2) {
                if (c.f == fault::throws) throw bad_record("consumer failed");
                if (c.f == fault::hangs) std::this_thread::sleep_for(300ms);
                if (c.f == fault::garbage) return false;  // drops the batch it was given
            }
            o.got.insert(o.got.end(), b.begin(), b.end());
            return batches >= exit_after(c);
        };
        try {
            if (c.exit == exit_by::destroy) {
                while (auto b = p.next()) {
                    if (take(*b)) break;
                }
            } else {
                for (auto& b : p) {
                    if (!take(b)) continue;
                    exit_point = true;
                    if (c.exit == exit_by::break_early) break;
                }
            }
        } catch (const ferry::stage_error& e) {
            o.stage_err = e;
        } catch (const std::exception& e) {
            o.other_err = e.what();
        }
        exit_point = true;
        if (stopper.joinable()) stopper.join();
        o.stats = c.exit == exit_by::destroy ? p.stats() : settled_stats(p);
    } catch (const std::exception& e) {
        o.other_err = e.what();  // build() refused the options
    }
    o.pulls = pulls.load();
    return o;
}

/// Checks where the error surfaced, and what was lost to it, in a cell that ran to its end or
/// left after the fault (`to_end` false: a throw or garbage, with every exit but run to end).
void check_error(const cell& c, const outcome& o, bool to_end) {
    const ferry::pipeline_stats& s = *o.stats;
    const bool retried = c.pol == policy::retry && c.f != fault::garbage && c.at != where::async;
    // Items up to the end of the batch that holds the faulty one: what an early exit has seen.
    const auto seen_items = static_cast<std::uint64_t>(to_end ? items : 8);
    // Where the error surfaces: the faulty stage, or for garbage the one after it.
    const where seen =
        c.f == fault::garbage ? static_cast<where>(static_cast<int>(c.at) + 1) : c.at;
    const std::uint64_t lost = seen == where::batch ? 4 : 1;
    if (c.at == where::consumer) {
        if (c.f == fault::throws) {
            BOOST_TEST(o.other_err.value_or("") == "consumer failed");
        } else {
            BOOST_TEST(!o.stage_err.has_value());
            BOOST_TEST(!o.other_err.has_value(), o.other_err.value_or(""));
            if (to_end) BOOST_TEST(s.delivered == std::uint64_t{items});
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
        BOOST_TEST(s.failed == 0U);
        if (to_end) BOOST_TEST(s.delivered == std::uint64_t{items});
        return;
    }
    switch (c.pol) {
        case policy::fail:
            BOOST_REQUIRE(o.stage_err.has_value());
            BOOST_TEST(o.stage_err->stage() == name(seen));
            BOOST_TEST(o.stage_err->item() == (seen == where::batch ? 4U : std::uint64_t{faulty}));
            if (c.f == fault::hangs) BOOST_TEST(nests<ferry::timeout_error>(*o.stage_err));
            // Ordered output: everything before the faulty item's output, nothing from it on.
            BOOST_TEST(o.got == iota(4), boost::test_tools::per_element());
            BOOST_TEST(s.failed == lost);
            break;
        case policy::skip:
        case policy::retry:
            BOOST_TEST(!o.stage_err.has_value());
            BOOST_TEST(!o.other_err.has_value(), o.other_err.value_or(""));
            if (retried) {
                BOOST_TEST(o.got.size() >= seen_items);
                BOOST_TEST(o.got == iota(static_cast<int>(o.got.size())),
                           boost::test_tools::per_element());
                BOOST_TEST(row_named(s, name(seen)).retries == 1U);
                BOOST_TEST(s.failed == 0U);
            } else {
                BOOST_TEST(s.failed == lost);
                BOOST_TEST(row_named(s, name(seen)).failed == 1U);
                if (to_end) BOOST_TEST(s.delivered == items - lost);
                // The faulty item's output is missing, and only it.
                std::vector<int> expected = iota(static_cast<int>(o.got.size() + lost));
                std::erase_if(expected, [&](int x) {
                    return seen == where::batch ? x >= 4 && x < 8 : x == faulty;
                });
                BOOST_TEST(o.got.size() + lost >= seen_items);
                BOOST_TEST(o.got == expected, boost::test_tools::per_element());
            }
            break;
    }
}

}  // namespace fault_matrix_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(fault_matrix)
using namespace fault_matrix_test;

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
                        BOOST_REQUIRE_MESSAGE(o.stats.has_value(), o.other_err.value_or(""));
                        const auto& s = *o.stats;
                        BOOST_TEST(s.produced ==
                                   s.delivered + s.filtered + s.failed + s.cancelled + s.pending);
                        BOOST_TEST(s.delivered == o.taken);
                        BOOST_TEST(s.cancelled <= s.in_flight);
                        BOOST_TEST(s.pending <= s.in_flight);
                        if (ex == exit_by::destroy) {
                            // Taken with the epoch running: the source may pull on after it.
                            BOOST_TEST(s.produced <= std::uint64_t(o.pulls));
                        } else {
                            BOOST_TEST(s.produced == std::uint64_t(o.pulls));
                            BOOST_TEST(s.pending == 0U);
                        }
                        if (ex == exit_by::run_to_end) {
                            check_error(c, o, true);
                        } else if (f != fault::hangs) {
                            check_error(c, o, false);  // the fault came before the exit
                        }
                    }
                }
            }
        }
    }
    BOOST_TEST(cells == 6 * 3 * 3 * 4);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
