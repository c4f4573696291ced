// SPDX-License-Identifier: Apache-2.0
/// \file
/// map_async: futures and completions, failures through either, dropped and repeated
/// completions, completions made synchronously inside the call, and completions that say when
/// their result is no longer wanted.
#include <algorithm>
#include <atomic>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ferry_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace async_test {

/// Reads `p` until it fails, which it must, with a stage_error that names `stage`, `item` and
/// `cause` and nests the bad_record thrown; returns the items delivered before it.
std::vector<int> drain_until_stage_error(ferry::pipeline<int>& p, const std::string& stage,
                                         std::uint64_t item, const std::string& cause) {
    std::vector<int> got;
    const auto e = expect_throw<ferry::stage_error>([&] {
        while (auto x = p.next()) got.push_back(*x);
    });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->stage() == stage);
    BOOST_TEST(e->item() == item);
    BOOST_TEST(e->cause() == cause);
    BOOST_TEST(nests<bad_record>(*e));
    return got;
}

}  // namespace async_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(async)
using namespace async_test;

// A completion tells the work behind it when its result is no longer wanted: once given, and for
// every pending one once the pipeline stops, so that work which gives up then (here a helper
// that fails each with errc::cancelled) lets stop() and the loop end at once.
BOOST_AUTO_TEST_CASE(completions_say_when_their_result_is_no_longer_wanted) {
    std::mutex mutex;
    std::vector<ferry::completion<int>> pending;
    // What the completion of item 0 said once given: 0 not asked yet, 1 wanted, 2 unwanted. Its
    // item may reach next() before the call asks (the output can run on the completing thread).
    std::atomic<int> given_said{0};
    auto p = ferry::from(iota(100))
                 .map_async<int>(
                     [&](int x, ferry::completion<int> done) {
                         if (x == 0) {
                             done(x);
                             given_said = done.stop_requested() ? 2 : 1;
                             return;
                         }
                         const std::lock_guard lock(mutex);
                         pending.push_back(std::move(done));
                     },
                     8)
                 .build({.threads = 2});
    BOOST_TEST(p.next().value() == 0);
    for (int i = 0; i < 5000 && given_said.load() == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    BOOST_TEST(given_said.load() == 2);
    const auto outstanding = [&] {
        const std::lock_guard lock(mutex);
        return pending.size();
    };
    for (int i = 0; i < 5000 && outstanding() < 8; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    {
        const std::lock_guard lock(mutex);
        BOOST_TEST_REQUIRE(pending.size() == 8u);
        for (const auto& c : pending) BOOST_TEST(!c.stop_requested());
    }
    std::atomic<int> told{0};
    std::thread helper([&] {
        for (int i = 0; i < 10000 && told.load() < 8; ++i) {
            const std::lock_guard lock(mutex);
            // One look per completion: the stop may land between two looks at the same one.
            const auto told_now = [&](ferry::completion<int>& c) {
                if (!c.stop_requested()) return false;
                c.fail(std::make_exception_ptr(ferry::error(ferry::errc::cancelled, "told")));
                ++told;
                return true;
            };
            pending.erase(std::remove_if(pending.begin(), pending.end(), told_now), pending.end());
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    });
    p.stop();
    while (p.next()) {
    }
    helper.join();
    BOOST_TEST(told.load() == 8);
}

// Completions made inside the call itself (a cache hit) deliver everything, in order, however
// many items queue behind a single slot.
BOOST_DATA_TEST_CASE(synchronous_completions_deliver_everything_in_order, bdata::make({1, 4}),
                     conc) {
    auto p = ferry::from(iota(3000))
                 .map_async<int>([](int x, ferry::completion<int> done) { done(x); }, conc)
                 .build({.threads = 2});
    BOOST_TEST(drain(p) == iota(3000), boost::test_tools::per_element());
    check_complete_accounting(p.stats());
}

// Futures that are already ready when returned are delivered, in order.
BOOST_AUTO_TEST_CASE(ready_futures_are_delivered_in_order) {
    auto p = ferry::from(iota(300))
                 .map_async(
                     [](int x) {
                         std::promise<int> promise;
                         promise.set_value(x * 2);
                         return promise.get_future();
                     },
                     4)
                 .build({.threads = 2});
    std::vector<int> want;
    for (int i = 0; i < 300; ++i) want.push_back(2 * i);
    BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
}

// A future that holds an exception fails its item; the cause keeps its type.
BOOST_AUTO_TEST_CASE(future_exception_fails_the_item) {
    async_service service(2);
    auto p =
        ferry::from(iota(50))
            .map_async(
                [&](int x) {
                    auto promise = std::make_shared<std::promise<int>>();
                    auto result = promise->get_future();
                    service.post([promise, x] {
                        if (x == 12) {
                            promise->set_exception(std::make_exception_ptr(bad_record("timeout")));
                        } else {
                            promise->set_value(x);
                        }
                    });
                    return result;
                },
                {.concurrency = 4, .name = "rpc"})
            .build({.threads = 2, .logger = quiet});
    const std::vector<int> got = drain_until_stage_error(p, "rpc", 12, "timeout");
    BOOST_TEST(got == iota(12), boost::test_tools::per_element());
}

// completion::fail(e) fails the item with e; under skip the item is recorded and left out.
BOOST_AUTO_TEST_CASE(completion_fail_skips_the_item_under_skip) {
    async_service service(2);
    auto p = ferry::from(iota(50))
                 .map_async<int>(
                     [&](int x, ferry::completion<int> done) {
                         service.post([done, x] {
                             if (x % 10 == 1) {
                                 done.fail(std::make_exception_ptr(bad_record("503")));
                             } else {
                                 done(x);
                             }
                         });
                     },
                     {.concurrency = 8, .name = "fetch", .on_error = ferry::skip})
                 .build({.threads = 2, .logger = quiet});
    std::vector<int> want;
    for (int i = 0; i < 50; ++i)
        if (i % 10 != 1) want.push_back(i);
    BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
    const auto f = p.failures();
    BOOST_TEST(f.size() == 5u);
    for (const auto& x : f) {
        BOOST_TEST(x.stage == "fetch");
        BOOST_TEST(x.item % 10 == 1u);
        BOOST_TEST(x.message == "503");
    }
    check_complete_accounting(p.stats());
}

// A completion dropped without a result fails its item instead of losing it or hanging.
BOOST_AUTO_TEST_CASE(dropped_completion_fails_the_item) {
    auto p = ferry::from(iota(20))
                 .map_async<int>(
                     [](int x, ferry::completion<int> done) {
                         if (x != 3) done(x);
                         // for x == 3, `done` is dropped here
                     },
                     {.on_error = ferry::skip})
                 .build({.threads = 2, .logger = quiet});
    const auto got = drain(p);
    BOOST_TEST(got.size() == 19u);
    BOOST_TEST((std::find(got.begin(), got.end(), 3) == got.end()));
    const auto f = p.failures();
    BOOST_REQUIRE(f.size() == 1u);
    BOOST_TEST(f[0].item == 3u);
    BOOST_TEST(f[0].message.find("completion dropped without a result") != std::string::npos);
}

// Only the first result of a completion counts; later calls are ignored.
BOOST_AUTO_TEST_CASE(repeated_completion_delivers_once) {
    auto p = ferry::from(iota(100))
                 .map_async<int>(
                     [](int x, ferry::completion<int> done) {
                         done(x);
                         done(-1);
                         done.fail(std::make_exception_ptr(bad_record("late")));
                     },
                     4)
                 .build({.threads = 2});
    BOOST_TEST(drain(p) == iota(100), boost::test_tools::per_element());
    BOOST_TEST(p.failures().empty());
}

// A call that throws before handing its completion anywhere fails its item.
BOOST_AUTO_TEST_CASE(throwing_async_call_fails_the_item) {
    auto p = ferry::from(iota(30))
                 .map_async<int>(
                     [](int x, ferry::completion<int> done) {
                         if (x == 9) throw bad_record("cannot submit");
                         done(x);
                     },
                     {.concurrency = 2, .name = "submit"})
                 .build({.threads = 2, .logger = quiet});
    const std::vector<int> got = drain_until_stage_error(p, "submit", 9, "cannot submit");
    BOOST_TEST(got == iota(9), boost::test_tools::per_element());
}

// Retry policies cannot apply to map_async (the input was handed over): asking for one is a
// clear error at build() rather than a policy silently ignored.
BOOST_AUTO_TEST_CASE(retry_on_map_async_is_rejected_at_build) {
    auto b = ferry::from(iota(20)).map_async<int>(
        [](int x, ferry::completion<int> done) { done(x); },
        {.on_error =
             ferry::retry{.attempts = 3, .backoff = 1ms, .then = ferry::error_action::skip}});
    BOOST_CHECK_EXCEPTION((void)b.build({.threads = 2, .logger = quiet}), ferry::invalid_argument,
                          [](const ferry::invalid_argument& e) {
                              return std::string(e.what()).find(
                                         "retry does not apply to map_async") != std::string::npos;
                          });
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
