// SPDX-License-Identifier: Apache-2.0
/// \file
/// route: each element down one branch and the branches joined again, in input order at any
/// concurrency; per-branch names, counts and failures; bad selectors failing their element;
/// branches that cannot be routed refused; exact resume, also with mix and batch_by together.

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "ferry/mix.hpp"
#include "resume_support.hpp"

namespace routing_test {

using namespace resume_test;

/// What the three-branch route below makes of `x`: x * 10 for x % 3 == 0, x + 1000 for
/// x % 3 == 1 (dropped when x % 4 == 1), x itself otherwise.
std::vector<int> routed(const std::vector<int>& in) {
    std::vector<int> out;
    for (const int x : in) {
        if (x % 3 == 0) {
            out.push_back(x * 10);
        } else if (x % 3 == 1) {
            if (x % 4 != 1) out.push_back(x + 1000);
        } else {
            out.push_back(x);
        }
    }
    return out;
}

template <class B>
auto three_branches(const B& b, int concurrency) {
    return b.route([](int x) { return x % 3; },
                   [concurrency](auto br) {
                       return br.map(
                           [](int x) {
                               // Out of order: late elements pass early ones.
                               if (x % 5 == 0) std::this_thread::sleep_for(1ms);
                               return x * 10;
                           },
                           concurrency);
                   },
                   [concurrency](auto br) {
                       return br.filter([](int x) { return x % 4 != 1; })
                           .map([](int x) { return x + 1000; }, concurrency);
                   },
                   [](auto br) { return br; });
}

}  // namespace routing_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(routing)
using namespace routing_test;

// Every element goes down the branch its selector names, and the joined output keeps input
// order, at every concurrency and thread count, epoch after epoch.
BOOST_AUTO_TEST_CASE(routes_each_element_and_keeps_input_order) {
    const auto items = iota(60);
    const auto want = routed(items);
    for (const int concurrency : {1, 4}) {
        for (const int threads : {1, 4}) {
            BOOST_TEST_CONTEXT("concurrency " << concurrency << ", threads " << threads) {
                auto p =
                    three_branches(ferry::from(items), concurrency).build({.threads = threads});
                BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
                BOOST_TEST(drain(p) == want);
            }
        }
    }
}

// A map_async branch and an unordered route deliver the same elements (the unordered one in
// any order).
BOOST_AUTO_TEST_CASE(an_async_branch_and_an_unordered_route) {
    const auto items = iota(40);
    auto p =
        ferry::from(items)
            .route([](int x) { return x % 2; },
                   [](auto b) {
                       return b.map_async(
                           [](int x) { return std::async(std::launch::async, [x] { return -x; }); },
                           4);
                   },
                   [](auto b) { return b.map([](int x) { return x; }); })
            .build();
    std::vector<int> want;
    for (const int x : items) want.push_back(x % 2 == 0 ? -x : x);
    BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
    auto q = three_branches(ferry::from(items), 4)
                 .map([](int x) { return x; })
                 .build({.threads = 2, .ordered = false});
    BOOST_TEST(sorted(drain(q)) == sorted(routed(items)));
}

// Stats name each branch's stages under the route, count each element once per stage it went
// through, and account for every element with failures in one branch only.
BOOST_AUTO_TEST_CASE(stats_name_the_branches_and_account_for_every_element) {
    const auto items = iota(30);
    auto p = ferry::from(items)
                 .route(
                     {.name = "kind"}, [](int x) { return x % 2; },
                     [](auto b) {
                         return b.map(
                             [](int x) {
                                 if (x % 6 == 0) throw ferry::decode_error("bad image");
                                 return x;
                             },
                             {.concurrency = 2, .on_error = ferry::skip});
                     },
                     [](auto b) {
                         return b.filter([](int x) { return x % 5 != 0; })
                             .map([](int x) { return x; }, {.name = "video"});
                     })
                 .build({.logger = quiet});
    const auto got = drain(p);
    const auto s = settled_stats(p);
    check_complete_accounting(s);
    BOOST_TEST(s.produced == 30U);
    BOOST_TEST(s.failed == 5U);    // 0, 6, 12, 18, 24
    BOOST_TEST(s.filtered == 3U);  // 5, 15, 25
    BOOST_TEST(got.size() == 22U);
    BOOST_TEST(row_named(s, "kind").items_in == 30U);
    BOOST_TEST(row_named(s, "kind").kind == "route");
    BOOST_TEST(row_named(s, "kind/0 map#2").items_in == 15U);
    BOOST_TEST(row_named(s, "kind/0 map#2").failed == 5U);
    BOOST_TEST(row_named(s, "kind/1 filter#3").items_in == 15U);
    BOOST_TEST(row_named(s, "kind/1 filter#3").filtered == 3U);
    BOOST_TEST(row_named(s, "video").items_in == 12U);
    const auto failures = p.failures();
    BOOST_TEST_REQUIRE(failures.size() == 5U);
    BOOST_TEST(failures[0].stage == "kind/0 map#2");
}

// A selector that returns a branch that does not exist, or throws, fails that element under the
// route's policy, saying which index it returned.
BOOST_AUTO_TEST_CASE(a_selector_out_of_range_fails_its_element) {
    const auto items = iota(10);
    const auto select = [](int x) {
        if (x == 7) throw ferry::decode_error("no kind");
        return x == 4 ? 5 : x % 2;
    };
    const auto branch = [](auto b) { return b.map([](int x) { return x; }); };
    auto p = ferry::from(items)
                 .route({.on_error = ferry::skip}, select, branch, branch)
                 .build({.logger = quiet});
    BOOST_TEST(drain(p) == (std::vector<int>{0, 1, 2, 3, 5, 6, 8, 9}),
               boost::test_tools::per_element());
    const auto failures = p.failures();
    BOOST_TEST_REQUIRE(failures.size() == 2U);
    BOOST_TEST(failures[0].stage == "route#1");
    BOOST_TEST(failures[0].item == 4U);
    BOOST_TEST(failures[0].message.find(
                   "the selector returned branch 5; this route's branches are 0 to 1") !=
                   std::string::npos,
               failures[0].message);
    BOOST_TEST(failures[1].message.find("no kind") != std::string::npos);
    check_complete_accounting(settled_stats(p));
    auto q = ferry::from(items)
                 .route([](int x) { return x - 3; }, branch, branch)
                 .build({.logger = quiet});
    expect_saying<ferry::stage_error>([&] { (void)drain(q); }, "the selector returned branch -3");
}

// Retries of the selector are refused (branches that batch: expanding_branches.cpp).
BOOST_AUTO_TEST_CASE(refuses_branches_that_cannot_be_routed) {
    const auto b = ferry::from(iota(4));
    const auto plain = [](auto br) { return br.map([](int x) { return std::vector{x}; }); };
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)b
                .route(
                    {.on_error = ferry::retry{.attempts = 2}}, [](int) { return 0; }, plain)
                .build();
        },
        "retry does not apply to route");
}

// A state taken after any output resumes a routed pipeline exactly (skips in one branch, a
// filter in another, batches after the join), two epochs, concurrency 1 and 4.
BOOST_AUTO_TEST_CASE(resumes_exactly_from_any_output) {
    std::vector<std::vector<int>> kept;
    for (std::uint64_t e = 0; e < resume_test::epochs; ++e) {
        auto items = positioned_numbers{.n = 90}.numbers(e);
        std::vector<int> out;
        for (const int x : items) {
            if (x % 2 == 0) {
                if (x % 11 != 5) out.push_back(x);  // noisy skips
            } else if (x % 7 != 3) {
                out.push_back(x);
            }
        }
        kept.push_back(out);
    }
    const positioned_numbers numbers{.n = 90};
    for (const int concurrency : {1, 4}) {
        const factory make = [numbers, concurrency](const ferry::pipeline_options& o) {
            auto po = o;
            po.logger = quiet;
            return ferry::from(numbers)
                .route([](int x) { return x % 2; },
                       [concurrency](auto b) {
                           return b.map(noisy,
                                        {.concurrency = concurrency, .on_error = ferry::skip});
                       },
                       [concurrency](auto b) {
                           return b.filter([](int x) { return x % 7 != 3; })
                               .map([](int x) { return x * 1000; }, concurrency);
                       })
                .batch(4)
                .map([](const std::vector<int>& v) { return text(v); })
                .build(po);
        };
        check_resume("route, concurrency " + std::to_string(concurrency), make, texts(kept, 4),
                     without_noise);
    }
}

// All together: a mix, routed by source, batched by cost, resumes exactly.
BOOST_AUTO_TEST_CASE(mix_route_and_batch_by_together_resume_exactly) {
    const auto a = numbered_source(0, 50), b = numbered_source(1, 30);
    const ferry::mix_options o{.seed = 8, .stop = ferry::mix_stop::first_exhausted};
    const std::vector<ferry::mix_sampler::source> numbers{
        {.size = 50, .weight = 3, .options = {.shuffle = true, .seed = 1}},
        {.size = 30, .weight = 2, .options = {.shuffle = true, .seed = 2, .repeat = true}}};
    const auto cost = [](int x) { return static_cast<double>(x % 9) + 1; };
    std::vector<std::string> want;
    for (std::uint64_t e = 0; e < resume_test::epochs; ++e) {
        // The route doubles the first source's items and drops the second's multiples of 4.
        std::vector<int> items;
        for (const int x : mixed_items(numbers, o, e)) {
            if (x < 1000) {
                items.push_back(x * 2);
            } else if (x % 4 != 0) {
                items.push_back(x);
            }
        }
        for (const auto& batch : by_cost(items, cost, {4}, 16, 12)) want.push_back(text(batch));
    }
    for (const int concurrency : {1, 4}) {
        const factory make = [&, concurrency](const ferry::pipeline_options& po) {
            return ferry::mix<int>({{a, 3, {.shuffle = true, .seed = 1}},
                                    {b, 2, {.shuffle = true, .seed = 2, .repeat = true}}},
                                   o)
                .route([](int x) { return x < 1000 ? 0 : 1; },
                       [concurrency](auto br) {
                           return br.map([](int x) { return x * 2; }, concurrency);
                       },
                       [](auto br) { return br.filter([](int x) { return x % 4 != 0; }); })
                .batch_by(cost, {.max_cost = 16, .buckets = {4}, .buffer = 12})
                .map([](const std::vector<int>& v) { return text(v); })
                .build(po);
        };
        check_resume("mix + route + batch_by, concurrency " + std::to_string(concurrency), make,
                     want);
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
