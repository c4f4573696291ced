// SPDX-License-Identifier: Apache-2.0
/// \file
/// Error policies (fail, skip, failure budget), the accounting invariant under each, and
/// exceptions thrown by the source, a stage or the consumer's own loop body; retry is in
/// retry.cpp.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <ranges>
#include <stdexcept>
#include <string>

#include "support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ferry_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace errors_test {

constexpr int n_items = 300;

/// What the one stage of a one_failing_stage pipeline is.
enum class stage_call { map, filter, flat_map, map_async_completion, map_async_future };

/// A kind of stage for one_failing_stage: its call, where it runs, and its default name.
struct stage_kind {
    stage_call call;
    bool on_io;  ///< on the I/O executor, else in the compute arena
    const char* name;
};

/// map, filter, flat_map (compute, then io), map_async with a completion, map_async with a future.
const std::vector<stage_kind> stage_kind_table{
    {stage_call::map, false, "map#1"},
    {stage_call::filter, false, "filter#1"},
    {stage_call::flat_map, false, "flat_map#1"},
    {stage_call::map, true, "map#1"},
    {stage_call::filter, true, "filter#1"},
    {stage_call::flat_map, true, "flat_map#1"},
    {stage_call::map_async_completion, false, "map_async#1"},
    {stage_call::map_async_future, false, "map_async#1"},
};

/// A pipeline over 0..n-1 with one stage of kind `kind` (an index into `stage_kind_table`) whose
/// call fails on item `bad` with bad_record("bad <item>"), under `action`; its default name is
/// `*name`.
ferry::pipeline<int> one_failing_stage(int kind, int n, int bad, ferry::error_action action,
                                       async_service& service, std::string* name) {
    const auto check = [bad](int x) {
        if (x == bad) throw bad_record("bad " + std::to_string(x));
    };
    const stage_kind& k = stage_kind_table.at(static_cast<std::size_t>(kind));
    ferry::stage_options stage{.concurrency = 4, .on_error = action};
    if (k.on_io) stage.executor = ferry::io;
    *name = k.name;
    const auto src = ferry::from(iota(n));
    const ferry::pipeline_options options{.threads = 2, .logger = quiet};
    const auto map = [check](int x) {
        check(x);
        return x;
    };
    const auto filter = [check](int x) {
        check(x);
        return true;
    };
    const auto flat_map = [check](int x) {
        check(x);
        return std::vector<int>{x};
    };
    switch (k.call) {
        case stage_call::map:
            return src.map(map, stage).build(options);
        case stage_call::filter:
            return src.filter(filter, stage).build(options);
        case stage_call::flat_map:
            return src.flat_map(flat_map, stage).build(options);
        case stage_call::map_async_completion:
            return src
                .map_async<int>(
                    [&service, bad](int x, ferry::completion<int> done) {
                        service.post([done, x, bad] {
                            if (x == bad) {
                                done.fail(std::make_exception_ptr(
                                    bad_record("bad " + std::to_string(x))));
                            } else {
                                done(x);
                            }
                        });
                    },
                    stage)
                .build(options);
        case stage_call::map_async_future:
            return src
                .map_async(
                    [&service, bad](int x) {
                        auto promise = std::make_shared<std::promise<int>>();
                        auto result = promise->get_future();
                        service.post([promise, x, bad] {
                            if (x == bad) {
                                promise->set_exception(std::make_exception_ptr(
                                    bad_record("bad " + std::to_string(x))));
                            } else {
                                promise->set_value(x);
                            }
                        });
                        return result;
                    },
                    stage)
                .build(options);
    }
    throw std::logic_error("one_failing_stage: no such stage call");
}

/// Stage kinds for one_failing_stage: every index into `stage_kind_table`.
const std::vector<int> stage_kinds = iota(static_cast<int>(stage_kind_table.size()));

}  // namespace errors_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(errors)
using namespace errors_test;

// Under `fail`, the consumer gets every item before the failing one, then a stage_error that
// names the stage, the item and the cause, and nests the original exception.
BOOST_DATA_TEST_CASE(fail_policy_reports_stage_item_and_cause, bdata::make(error_concurrencies),
                     conc) {
    auto p = ferry::from(iota(n_items))
                 .map(
                     [](int x) {
                         if (x == 17) throw bad_record("truncated record");
                         return x;
                     },
                     {.concurrency = conc, .name = "decode"})
                 .build({.threads = 2, .logger = quiet});
    std::vector<int> got;
    const auto e = expect_throw<ferry::stage_error>([&] {
        while (auto x = p.next()) got.push_back(*x);
    });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(got == iota(17), boost::test_tools::per_element());
    BOOST_TEST(e->stage() == "decode");
    BOOST_TEST(e->item() == 17u);
    BOOST_TEST(e->items() == 1u);
    BOOST_TEST(e->cause() == "truncated record");
    BOOST_TEST(std::string(e->what()) == "stage 'decode' failed on item 17: truncated record");
    BOOST_TEST((e->code() == ferry::errc::stage_failed));
    BOOST_TEST(nests<bad_record>(*e));
    const auto f = p.failures();
    BOOST_REQUIRE(f.size() == 1u);
    BOOST_TEST(f[0].stage == "decode");
    BOOST_TEST(f[0].item == 17u);
    BOOST_TEST(f[0].message == "truncated record");
    check_accounting(p.stats());
}

// A failed pipeline stays failed: every later next() (and a new loop) throws the same error.
BOOST_AUTO_TEST_CASE(stage_error_is_sticky) {
    auto p = ferry::from(iota(50))
                 .map([](int x) {
                     if (x == 5) throw bad_record("boom");
                     return x;
                 })
                 .build({.threads = 2, .logger = quiet});
    BOOST_CHECK_THROW(drain(p), ferry::stage_error);
    for (int i = 0; i < 3; ++i) {
        const auto e = expect_throw<ferry::stage_error>([&] { (void)p.next(); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(e->item() == 5u);
        BOOST_TEST(nests<bad_record>(*e));
    }
    BOOST_CHECK_THROW(
        {
            for (int x : p) (void)x;
        },
        ferry::stage_error);
}

// A failing call on a batch names the batch's first source item and its size.
BOOST_AUTO_TEST_CASE(failure_on_a_batch_names_its_first_item_and_size) {
    auto p = ferry::from(iota(40))
                 .batch(4)
                 .map(
                     [](std::vector<int> b) {
                         if (b.front() == 8) throw bad_record("bad batch");
                         return b;
                     },
                     {.name = "collate"})
                 .build({.threads = 2, .logger = quiet});
    const auto e = expect_throw<ferry::stage_error>([&] { (void)drain(p); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->stage() == "collate");
    BOOST_TEST(e->item() == 8u);
    BOOST_TEST(e->items() == 4u);
    BOOST_TEST(std::string(e->what()).find("collate") != std::string::npos);
    BOOST_TEST(std::string(e->what()).find("bad batch") != std::string::npos);
    check_accounting(p.stats());
}

// An exception not derived from std::exception still becomes a stage_error, nesting it.
BOOST_AUTO_TEST_CASE(non_std_exception_becomes_stage_error) {
    auto p = ferry::from(iota(10))
                 .map([](int x) {
                     if (x == 3) throw 42;
                     return x;
                 })
                 .build({.threads = 1, .logger = quiet});
    const auto e = expect_throw<ferry::stage_error>([&] { (void)drain(p); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->item() == 3u);
    BOOST_TEST(e->cause() == "unknown exception (not derived from std::exception)");
    BOOST_TEST(nests<int>(*e));
}

// Under `skip`, every failing item is left out, and failures() lists each with its stage,
// item and message.
BOOST_DATA_TEST_CASE(skip_policy_records_every_skipped_item, bdata::make(error_concurrencies),
                     conc) {
    auto p = ferry::from(iota(n_items))
                 .map(
                     [](int x) {
                         if (x % 10 == 3) throw bad_record("bad " + std::to_string(x));
                         return x;
                     },
                     {.concurrency = conc, .name = "parse", .on_error = ferry::skip})
                 .build({.threads = 2, .logger = quiet});
    std::vector<int> want;
    std::vector<std::uint64_t> want_failed;
    for (int i = 0; i < n_items; ++i) {
        if (i % 10 == 3) {
            want_failed.push_back(static_cast<std::uint64_t>(i));
        } else {
            want.push_back(i);
        }
    }
    BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
    std::vector<std::uint64_t> failed_items;
    for (const auto& f : p.failures()) {
        BOOST_TEST(f.stage == "parse");
        BOOST_TEST(f.message == "bad " + std::to_string(f.item));
        BOOST_TEST(f.epoch == 0u);
        failed_items.push_back(f.item);
    }
    BOOST_TEST(sorted(failed_items) == want_failed, boost::test_tools::per_element());
    const auto s = p.stats();
    BOOST_TEST(s.failed == want_failed.size());
    BOOST_TEST(s.stages.at(1).failed == want_failed.size());
    check_complete_accounting(s);
}

// produced == delivered + filtered + failed, with nothing cancelled, for every non-fatal
// policy and concurrency; batches count their source items.
BOOST_DATA_TEST_CASE(accounting_balances_for_every_policy,
                     bdata::make({0, 1, 2}) * bdata::make(concurrencies), policy_index, conc) {
    const ferry::stage_options options[] = {
        {.concurrency = conc, .on_error = ferry::skip},
        {.concurrency = conc,
         .on_error =
             ferry::retry{.attempts = 2, .backoff = 1ms, .then = ferry::error_action::skip}},
        {.concurrency = conc, .on_error = ferry::skip, .max_failures = 1000},
    };
    BOOST_TEST_CONTEXT("policy " << policy_index) {
        auto p = ferry::from(iota(n_items))
                     .map(
                         [](int x) {
                             if (x % 11 == 5) throw bad_record("bad");
                             return x;
                         },
                         options[policy_index])
                     .filter([](int x) { return x % 3 != 0; }, conc)
                     .flat_map([](int x) { return std::vector<int>(x % 5 == 1 ? 0 : 1, x); }, conc)
                     .batch(8)
                     .build({.threads = 3, .logger = quiet});
        std::uint64_t items = 0;
        while (auto b = p.next()) items += b->size();
        const auto s = p.stats();
        BOOST_TEST(s.produced == std::uint64_t{n_items});
        BOOST_TEST(s.delivered == items);
        BOOST_TEST(s.failed == p.failures().size());
        check_complete_accounting(s);
    }
}

// Under `fail`, the invariant holds with the unfinished rest of the epoch counted as cancelled.
BOOST_DATA_TEST_CASE(accounting_balances_when_a_stage_fails, bdata::make(concurrencies), conc) {
    auto p = ferry::from(iota(n_items))
                 .map(
                     [](int x) {
                         if (x == 150) throw bad_record("bad");
                         return x;
                     },
                     conc)
                 .filter([](int x) { return x % 3 != 0; }, conc)
                 .batch(8)
                 .build({.threads = 3, .logger = quiet});
    std::uint64_t items = 0;
    BOOST_CHECK_THROW(
        {
            while (auto b = p.next()) items += b->size();
        },
        ferry::stage_error);
    const auto s = p.stats();
    BOOST_TEST(s.delivered == items);
    BOOST_TEST(s.failed == 1u);
    check_accounting(s);
}

// An input range that throws while being read fails the pipeline as stage 'source', naming the
// item, after delivering the items before it.
BOOST_AUTO_TEST_CASE(throwing_source_range_fails_as_source_stage) {
    auto throwing = std::views::iota(0, 100) | std::views::transform([](int i) {
                        if (i == 7) throw bad_record("disk gone");
                        return i;
                    });
    auto p = ferry::from(throwing)
                 .map([](int x) { return x; }, 4)
                 .build({.threads = 2, .logger = quiet});
    std::vector<int> got;
    const auto e = expect_throw<ferry::stage_error>([&] {
        for (int x : p) got.push_back(x);
    });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(got == iota(7), boost::test_tools::per_element());
    BOOST_TEST(e->stage() == "source");
    BOOST_TEST(e->item() == 7u);
    BOOST_TEST(e->cause() == "disk gone");
    BOOST_TEST(std::string(e->what()) == "stage 'source' failed on item 7: disk gone");
    BOOST_TEST(nests<bad_record>(*e));
    check_accounting(p.stats());
}

// A generator that throws fails the pipeline as stage 'source'.
BOOST_AUTO_TEST_CASE(throwing_generator_fails_as_source_stage) {
    auto p = ferry::from([i = 0]() mutable -> std::optional<int> {
                 if (i == 5) throw bad_record("socket closed");
                 return i++;
             })
                 .batch(2)
                 .build({.threads = 2, .logger = quiet});
    std::vector<int> got;
    const auto e = expect_throw<ferry::stage_error>([&] {
        while (auto b = p.next()) got.insert(got.end(), b->begin(), b->end());
    });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(got == iota(4), boost::test_tools::per_element());
    BOOST_TEST(e->stage() == "source");
    BOOST_TEST(e->item() == 5u);
    BOOST_TEST(nests<bad_record>(*e));
}

// An epoch factory that throws fails the loop that opens that epoch, with the epoch's number;
// the error is sticky.
BOOST_AUTO_TEST_CASE(throwing_epoch_factory_fails_that_epoch) {
    auto p = ferry::from([](std::uint64_t epoch) {
                 if (epoch == 1) throw bad_record("manifest missing");
                 return iota(10);
             }).build({.threads = 1, .logger = quiet});
    BOOST_TEST(drain(p) == iota(10), boost::test_tools::per_element());
    const auto e = expect_throw<ferry::stage_error>([&] {
        for (int x : p) (void)x;
    });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->stage() == "source");
    BOOST_TEST(e->cause() == "manifest missing");
    BOOST_TEST(std::string(e->what()).find("epoch 1") != std::string::npos, e->what());
    BOOST_TEST(nests<bad_record>(*e));
    BOOST_CHECK_THROW((void)p.next(), ferry::stage_error);
}

// An exception thrown by the consumer's loop body ends the epoch: the pipeline is destroyed
// promptly afterwards, or a new loop reads a whole new epoch.
BOOST_DATA_TEST_CASE(consumer_exception_ends_the_epoch, bdata::make(error_concurrencies), conc) {
    const auto slow_source = [](std::uint64_t) {
        return iota(1000) | std::views::transform([](int x) {
                   if (x % 100 == 0) std::this_thread::sleep_for(1ms);
                   return x;
               });
    };
    {
        auto p = ferry::from(slow_source).map([](int x) { return x; }, conc).build({.threads = 2});
        BOOST_CHECK_THROW(
            {
                for (int x : p)
                    if (x == 10) throw bad_record("loss is NaN");
            },
            bad_record);
        BOOST_TEST(drain(p) == iota(1000), boost::test_tools::per_element());
        const auto s = p.stats();
        BOOST_TEST(s.epochs == 2u);
        check_accounting(s);
    }
    const auto t0 = steady::now();
    {
        auto p = ferry::from(slow_source).map([](int x) { return x; }, conc).build({.threads = 2});
        BOOST_CHECK_THROW(
            {
                for (int x : p)
                    if (x == 10) throw bad_record("loss is NaN");
            },
            bad_record);
    }
    BOOST_TEST(since(t0) < prompt);
}

// Every node type (compute, io and async stages) fails the pipeline the same way: the items
// before the failing one, then a stage_error naming the stage and item; and the pipeline is then
// destroyed promptly.
BOOST_DATA_TEST_CASE(every_stage_kind_fails_the_pipeline_on_error, bdata::make(stage_kinds), kind) {
    async_service service(2, std::chrono::microseconds(100));
    std::string name;
    const auto t0 = steady::now();
    {
        auto p = one_failing_stage(kind, 100, 17, ferry::error_action::fail, service, &name);
        std::vector<int> got;
        const auto e = expect_throw<ferry::stage_error>([&] {
            while (auto x = p.next()) got.push_back(*x);
        });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(got == iota(17), boost::test_tools::per_element());
        BOOST_TEST(e->stage() == name);
        BOOST_TEST(e->item() == 17u);
        BOOST_TEST(e->cause() == "bad 17");
        BOOST_TEST(std::string(e->what()) == "stage '" + name + "' failed on item 17: bad 17");
        BOOST_TEST(nests<bad_record>(*e));
        check_accounting(p.stats());
    }
    BOOST_TEST(since(t0) < prompt);
}

// Every node type skips a failing item the same way and records it.
BOOST_DATA_TEST_CASE(every_stage_kind_skips_a_failing_item, bdata::make(stage_kinds), kind) {
    async_service service(2, std::chrono::microseconds(100));
    std::string name;
    auto p = one_failing_stage(kind, 100, 17, ferry::error_action::skip, service, &name);
    auto want = iota(100);
    want.erase(want.begin() + 17);
    BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
    const auto f = p.failures();
    BOOST_REQUIRE(f.size() == 1u);
    BOOST_TEST(f[0].stage == name);
    BOOST_TEST(f[0].item == 17u);
    BOOST_TEST(f[0].message == "bad 17");
    const auto s = p.stats();
    BOOST_TEST(s.failed == 1u);
    BOOST_TEST(s.stages.at(1).failed == 1u);
    check_complete_accounting(s);
}

// failures() keeps the code of a ferry::error cause (io, decode), and stage_failed for others.
BOOST_AUTO_TEST_CASE(failures_keep_the_code_of_a_ferry_error) {
    auto p = ferry::from(iota(10))
                 .map(
                     [](int x) {
                         if (x == 2) throw ferry::io_error("read timed out");
                         if (x == 4) throw ferry::decode_error("truncated jpeg");
                         if (x == 6) throw bad_record("bad");
                         return x;
                     },
                     {.on_error = ferry::skip})
                 .build({.threads = 1, .logger = quiet});
    BOOST_TEST(drain(p).size() == 7u);
    std::map<std::uint64_t, ferry::errc> codes;
    for (const auto& f : p.failures()) codes[f.item] = f.code;
    BOOST_REQUIRE(codes.size() == 3u);
    BOOST_TEST((codes[2] == ferry::errc::io));
    BOOST_TEST((codes[4] == ferry::errc::decode));
    BOOST_TEST((codes[6] == ferry::errc::stage_failed));
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
