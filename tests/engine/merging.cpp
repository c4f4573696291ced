// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::merge: sub-pipelines with sources of their own types and stages of their own, merged
/// in the weights' order written out by hand, the same at any concurrency and thread count;
/// branch names in stats and failures, every item accounted for; exact resume from any output;
/// bad weights and branches refused.

#include <boost/test/unit_test.hpp>

#include <limits>
#include <string>
#include <vector>

#include "ferry/merge.hpp"
#include "ferry/mix.hpp"
#include "resume_support.hpp"

namespace merging_test {

using namespace resume_test;

/// Branch 0: ints 0..4 shown as "a0".."a4"; branch 1: strings "10".."19" shown as "b0".."b9".
struct two_branches {
    std::vector<int> a = iota_vec(5);
    std::vector<std::string> b = [] {
        std::vector<std::string> v;
        for (int i = 10; i < 20; ++i) v.push_back(std::to_string(i));
        return v;
    }();
    ferry::builder<std::string> left(int concurrency) const {
        return ferry::from(a).map([](int x) { return "a" + std::to_string(x); }, concurrency);
    }
    ferry::builder<std::string> right(int concurrency, ferry::executor exec) const {
        return ferry::from(b).map(
            [](const std::string& s) { return "b" + std::to_string(std::stoi(s) - 10); },
            {.concurrency = concurrency, .executor = exec});
    }
};

}  // namespace merging_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(merging)
using namespace merging_test;

// The order, worked out by hand from the documented rule (every branch in the draw gains its
// weight, the one with the most credit, the lower on a tie, gives the item and pays the total):
// {1, 3} cycles b a b b; when b runs out at its eleventh turn it leaves the draw and that turn
// goes to a. The same at concurrency 1 and 8, threads 1 and 4, with an I/O branch.
BOOST_AUTO_TEST_CASE(merges_in_the_weights_order_at_any_concurrency) {
    const two_branches s;
    const auto weighted = words("b0 a0 b1 b2 b3 a1 b4 b5 b6 a2 b7 b8 b9 a3 a4");
    const auto first_out = words("b0 a0 b1 b2 b3 a1 b4 b5 b6 a2 b7 b8 b9 a3");
    const auto round_robin = words("a0 b0 a1 b1 a2 b2 a3 b3 a4 b4 b5 b6 b7 b8 b9");
    for (const int concurrency : {1, 8}) {
        for (const int threads : {1, 4}) {
            BOOST_TEST_CONTEXT("concurrency " << concurrency << ", threads " << threads) {
                const auto exec = concurrency == 8 ? ferry::io : ferry::compute;
                auto p = ferry::merge({s.left(concurrency), s.right(concurrency, exec)},
                                      {.weights = {1, 3}})
                             .build({.threads = threads});
                BOOST_TEST(drain(p) == weighted, boost::test_tools::per_element());
                BOOST_TEST(drain(p) == weighted, boost::test_tools::per_element());  // epoch 2
                auto q = ferry::merge({s.left(concurrency), s.right(concurrency, exec)},
                                      {.weights = {1, 3}, .stop = ferry::mix_stop::first_exhausted})
                             .build({.threads = threads});
                BOOST_TEST(drain(q) == first_out, boost::test_tools::per_element());
                auto r = ferry::merge({s.left(concurrency), s.right(concurrency, exec)})
                             .build({.threads = threads});
                BOOST_TEST(drain(r) == round_robin, boost::test_tools::per_element());
            }
        }
    }
}

// A branch of weight 0 takes no turn; an empty branch leaves the draw at once (or, under
// first_exhausted, ends the epoch at its first turn); stages after the merge see one stream.
BOOST_AUTO_TEST_CASE(weight_zero_and_empty_branches) {
    const two_branches s;
    auto p = ferry::merge({s.left(1), s.right(1, ferry::compute)}, {.weights = {0, 1}}).build();
    BOOST_TEST(drain(p) == words("b0 b1 b2 b3 b4 b5 b6 b7 b8 b9"),
               boost::test_tools::per_element());
    const auto none = ferry::from(std::vector<int>{}).map([](int x) { return std::to_string(x); });
    auto q = ferry::merge({none, s.left(1)}).batch(2).build();
    const auto got = drain(q);
    BOOST_TEST_REQUIRE(got.size() == 3U);
    BOOST_TEST(got[0] == (std::vector<std::string>{"a0", "a1"}), boost::test_tools::per_element());
    auto r = ferry::merge({none, s.left(1)}, {.stop = ferry::mix_stop::first_exhausted}).build();
    BOOST_TEST(drain(r).empty());
}

// Stats name each branch's stages under the merge; failures name the branch; every item is
// accounted for, in total and per branch, with skips and filters in one branch only.
BOOST_AUTO_TEST_CASE(stats_and_failures_name_the_branch) {
    const two_branches s;
    const auto flaky = ferry::from(s.b)
                           .filter([](const std::string& x) { return x != "13"; })
                           .map(
                               [](const std::string& x) {
                                   if (x == "15" || x == "17") throw ferry::decode_error("bad");
                                   return x;
                               },
                               {.concurrency = 2, .on_error = ferry::skip});
    auto p = ferry::merge({s.left(1), flaky}, {.weights = {1, 1}, .name = "both"})
                 .build({.logger = quiet});
    const auto got = drain(p);
    const auto st = settled_stats(p);
    check_complete_accounting(st);
    BOOST_TEST(st.produced == 15U);
    BOOST_TEST(st.filtered == 1U);
    BOOST_TEST(st.failed == 2U);
    BOOST_TEST(got.size() == 12U);
    BOOST_TEST(row_named(st, "both").items_in == 15U);
    BOOST_TEST(row_named(st, "both/0 map#2").items_in == 5U);
    BOOST_TEST(row_named(st, "both/1 filter#3").items_in == 10U);
    BOOST_TEST(row_named(st, "both/1 filter#3").filtered == 1U);
    BOOST_TEST(row_named(st, "both/1 map#4").items_in == 9U);
    BOOST_TEST(row_named(st, "both/1 map#4").failed == 2U);
    const auto failures = p.failures();
    BOOST_TEST_REQUIRE(failures.size() == 2U);
    BOOST_TEST(failures[0].stage == "both/1 map#4");
    BOOST_TEST(failures[0].message.find("bad") != std::string::npos);
    // Named branches: their names stand for their indices.
    auto q = ferry::merge({s.left(1), flaky}, {.name = "both", .names = {"local", "remote"}})
                 .build({.logger = quiet});
    BOOST_TEST(drain(q).size() == 12U);
    const auto named = settled_stats(q);
    BOOST_TEST(row_named(named, "both/local map#2").items_in == 5U);
    BOOST_TEST(row_named(named, "both/remote map#4").failed == 2U);
    BOOST_TEST_REQUIRE(q.failures().size() == 2U);
    BOOST_TEST(q.failures()[0].stage == "both/remote map#4");
}

// Each branch's source keeps its own descriptions and exclusions: "12" is left out of branch 1
// only (branch 0 describes its items as "a<n>"), counted as filtered; a failure names the item
// as its branch's source described it.
BOOST_AUTO_TEST_CASE(branches_keep_their_descriptions_and_exclusions) {
    const two_branches s;
    const auto left = ferry::from(s.a)
                          .describe([](int x) { return "12" + std::to_string(x); })
                          .exclude({"122"})
                          .map([](int x) { return "a" + std::to_string(x); });
    const auto right = ferry::from(s.b)
                           .describe([](const std::string& x) { return x; })
                           .exclude({"12"})
                           .map(
                               [](const std::string& x) {
                                   if (x == "15") throw ferry::decode_error("bad");
                                   return x;
                               },
                               {.on_error = ferry::skip});
    auto p = ferry::merge({left, right}).build({.logger = quiet});
    const auto got = drain(p);
    BOOST_TEST(got == words("a0 10 a1 11 a3 13 a4 14 16 17 18 19"),
               boost::test_tools::per_element());
    const auto st = settled_stats(p);
    check_complete_accounting(st);
    BOOST_TEST(st.filtered == 2U);  // "122" in branch 0, "12" in branch 1
    const auto failures = p.failures();
    BOOST_TEST_REQUIRE(failures.size() == 1U);
    BOOST_TEST(failures[0].input == "15");
}

// A state taken after any output resumes exactly (2 epochs, concurrency 1 and 4), alone and with
// a filter in a branch and batch_by after the merge: the sequences written out by hand.
BOOST_AUTO_TEST_CASE(resumes_exactly_from_any_output) {
    const two_branches s;
    const auto once = words("b0 a0 b1 b2 b3 a1 b4 b5 b6 a2 b7 b8 b9 a3 a4");
    std::vector<std::string> want;
    for (int e = 0; e < epochs; ++e) want.insert(want.end(), once.begin(), once.end());
    for (const int concurrency : {1, 4}) {
        const factory make = [&s, concurrency](const ferry::pipeline_options& o) {
            return ferry::merge({s.left(concurrency), s.right(concurrency, ferry::io)},
                                {.weights = {1, 3}})
                .build(o);
        };
        check_resume("merge, concurrency " + std::to_string(concurrency), make, want);
    }
    // Numbers: branch 0 gives 0..39 less multiples of 7, branch 1 gives 100..129; round robin;
    // then batches by cost (the number mod 5) up to 6 over windows of 8.
    const auto cost = [](int x) { return static_cast<double>(x % 5); };
    std::vector<int> merged;
    for (int i = 0, j = 0; i < 40 || j < 30;) {
        // Round robin over what the branches' sources give (the filter runs after the draw).
        if (i < 40) {
            if (i % 7 != 0) merged.push_back(i);
            ++i;
        }
        if (j < 30) merged.push_back(100 + j++);
    }
    std::vector<std::string> batched;
    for (int e = 0; e < epochs; ++e) {
        for (const auto& b : by_cost(merged, cost, {2}, 6, 8)) batched.push_back(text(b));
    }
    for (const int concurrency : {1, 4}) {
        const factory make = [cost, concurrency](const ferry::pipeline_options& o) {
            return ferry::merge(
                       {ferry::from(iota_vec(40)).filter([](int x) { return x % 7 != 0; }),
                        ferry::from(iota_vec(30)).map([](int x) { return 100 + x; }, concurrency)})
                .batch_by(cost, {.max_cost = 6, .buckets = {2}, .buffer = 8})
                .map([](const std::vector<int>& v) { return text(v); })
                .build(o);
        };
        check_resume("merge + batch_by, concurrency " + std::to_string(concurrency), make, batched);
    }
}

// All together: a merge of a mix and a zip, routed after the merge, batched by cost, resumes
// exactly from any output (the mix's and the zip's orders worked out from their own rules).
BOOST_AUTO_TEST_CASE(mix_zip_merge_route_and_batch_by_together_resume_exactly) {
    const auto a = numbered_source(0, 30), b = numbered_source(1, 12);
    const std::vector<ferry::mix_sampler::source> numbers{
        {.size = 30, .weight = 2, .options = {.shuffle = true, .seed = 1}},
        {.size = 12, .weight = 1, .options = {.shuffle = true, .seed = 2}}};
    const ferry::mix_options o{.seed = 6, .stop = ferry::mix_stop::all_exhausted};
    const std::vector<int> left = iota_vec(20);
    std::vector<int> right(20);
    for (int i = 0; i < 20; ++i) right[static_cast<std::size_t>(i)] = 5000 + i;
    const auto cost = [](int x) { return static_cast<double>(x % 4); };
    std::vector<std::string> want;
    for (std::uint64_t e = 0; e < static_cast<std::uint64_t>(epochs); ++e) {
        const auto mixed = mixed_items(numbers, o, e);
        // Weights {2, 1}: the credits make the cycle "mix zip mix"; the zip's item i is
        // left[i] + right[i] (5000 + 2i), and the route adds 1 to odd numbers.
        std::vector<int> merged;
        std::size_t m = 0;
        int z = 0;
        const auto routed = [](int x) { return x % 2 == 1 ? x + 1 : x; };
        for (int turn = 0; m < mixed.size() || z < 20; ++turn) {
            const bool zip_turn = turn % 3 == 1;
            if ((zip_turn && z < 20) || m >= mixed.size()) {
                merged.push_back(routed(5000 + 2 * z++));
            } else {
                merged.push_back(routed(mixed[m++]));
            }
        }
        for (const auto& batch : by_cost(merged, cost, {1}, 5, 10)) want.push_back(text(batch));
    }
    for (const int concurrency : {1, 4}) {
        const factory make = [&, concurrency](const ferry::pipeline_options& po) {
            auto mixed = ferry::from(ferry::mix<int>(
                {{a, 2, {.shuffle = true, .seed = 1}}, {b, 1, {.shuffle = true, .seed = 2}}}, o));
            auto zipped = ferry::zip(left, right)
                              .map([](const std::pair<int, int>& p) { return p.first + p.second; },
                                   concurrency);
            return ferry::merge<int>({mixed, zipped}, {.weights = {2, 1}})
                .route([](int x) { return x % 2; },
                       [](auto br) { return br.map([](int x) { return x; }); },
                       [=](auto br) { return br.map([](int x) { return x + 1; }, concurrency); })
                .batch_by(cost, {.max_cost = 5, .buckets = {1}, .buffer = 10})
                .map([](const std::vector<int>& v) { return text(v); })
                .build(po);
        };
        check_resume(
            "mix + zip + merge + route + batch_by, concurrency " + std::to_string(concurrency),
            make, want);
    }
}

// Bad weights, rules and branches are refused when the merge is made, saying what is wrong.
BOOST_AUTO_TEST_CASE(refuses_what_cannot_merge) {
    const two_branches s;
    const auto a = s.left(1);
    const auto b = s.right(1, ferry::compute);
    const auto refused = [&](ferry::merge_options o, const std::string& says) {
        expect_saying<ferry::invalid_argument>([&] { (void)ferry::merge({a, b}, o); }, says);
    };
    refused({.weights = {1}}, "1 weights for 2 branches");
    refused({.names = {"a", "b", "c"}}, "3 names for 2 branches");
    refused({.weights = {1, -2}}, "branch 1's weight -2");
    refused({.weights = {std::numeric_limits<double>::quiet_NaN(), 1}}, "branch 0's weight");
    refused({.weights = {1, std::numeric_limits<double>::infinity()}}, "branch 1's weight inf");
    refused({.weights = {0, 0}}, "every weight is 0");
    refused({.stop = ferry::mix_stop::never}, "never is not a merge's rule");
    expect_saying<ferry::invalid_argument>(
        [&] { (void)ferry::merge(std::vector<ferry::builder<std::string>>{}); }, "no branches");
    // Branches that batch: expanding_branches.cpp.
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
