// SPDX-License-Identifier: Apache-2.0
/// \file
/// Branches that expand: a merge whose branch flat_maps shards into samples (the shape of
/// `merge({local_files, remote_shards})`), and routes whose branches flat_map and unbatch. The
/// orders written out by hand or from the documented rule, at any concurrency and thread count;
/// every item accounted for; exact resume from any output, also in the middle of an item's
/// outputs; an abandoned epoch leaves nothing behind; what still cannot be in a branch refused.

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "ferry/merge.hpp"
#include "resume_support.hpp"

namespace expanding_branches_test {

using namespace resume_test;

/// Branch "files": 0..4 as "a0".."a4" (an I/O map). Branch "shards": shard s of 0..5 holds
/// samples 10s + j for j below {2, 0, 3, 1, 2, 1}[s]; a filter drops samples ending in 2 (shard
/// 2's last one), and a map names the rest "s<sample>".
struct files_and_shards {
    static std::vector<int> samples_of(int shard) {
        static const int sizes[] = {2, 0, 3, 1, 2, 1};
        std::vector<int> out;
        for (int j = 0; j < sizes[shard]; ++j) out.push_back(10 * shard + j);
        return out;
    }
    static ferry::builder<std::string> files(int concurrency) {
        return ferry::from(iota_vec(5))
            .map([](int x) { return "a" + std::to_string(x); },
                 {.concurrency = concurrency, .executor = ferry::io});
    }
    static ferry::builder<std::string> shards(int concurrency) {
        return ferry::from(iota_vec(6))
            .flat_map(&samples_of, {.concurrency = concurrency, .executor = ferry::io})
            .filter([](int x) { return x % 10 != 2; })
            .map([](int x) { return "s" + std::to_string(x); }, concurrency);
    }
    static ferry::builder<std::string> merged(int concurrency, ferry::mix_stop stop) {
        return ferry::merge({files(concurrency), shards(concurrency)},
                            {.weights = {1, 3}, .stop = stop, .names = {"files", "shards"}});
    }
};

/// `x`'s outputs on a route by x % 3: 0 -> x * 10; 1 -> {x, x + 1000} unbatched; 2 -> x % 4
/// copies of x + 500 (none for x % 4 == 0), where x = 29 fails (skipped).
std::vector<int> routed_outputs(int x) {
    if (x % 3 == 0) return {x * 10};
    if (x % 3 == 1) return {x, x + 1000};
    if (x == 29) return {};
    return std::vector<int>(static_cast<std::size_t>(x % 4), x + 500);
}

ferry::builder<int> routed(const ferry::builder<int>& in, int concurrency) {
    return in.route(
        {.name = "kind"}, [](int x) { return x % 3; },
        [=](auto b) { return b.map([](int x) { return x * 10; }, concurrency); },
        [=](auto b) {
            return b.map([](int x) { return std::vector<int>{x, x + 1000}; }).unbatch();
        },
        [=](auto b) {
            return b
                .flat_map(
                    [](int x) {
                        if (x == 29) throw ferry::decode_error("bad clip 29");
                        return std::vector<int>(static_cast<std::size_t>(x % 4), x + 500);
                    },
                    {.concurrency = concurrency, .on_error = ferry::skip})
                .map([](int x) { return x; }, concurrency);
        });
}

}  // namespace expanding_branches_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(expanding_branches)
using namespace expanding_branches_test;

// Weights {1, 3} draw source items: shards s0 f0 s1 s2 | s3 f1 s4 s5 | then the shards are out
// and the files take every turn. Each shard's samples come in a row at its turn; shard 1 has
// none and shard 2's last is filtered.
BOOST_AUTO_TEST_CASE(a_merge_with_a_flat_map_branch_keeps_the_weights_order) {
    const auto all = words("s0 s1 a0 s20 s21 s30 a1 s40 s41 s50 a2 a3 a4");
    const auto first = words("s0 s1 a0 s20 s21 s30 a1 s40 s41 s50");
    for (const int concurrency : {1, 8}) {
        for (const int threads : {1, 4}) {
            BOOST_TEST_CONTEXT("concurrency " << concurrency << ", threads " << threads) {
                auto p = files_and_shards::merged(concurrency, ferry::mix_stop::all_exhausted)
                             .build({.threads = threads});
                BOOST_TEST(drain(p) == all, boost::test_tools::per_element());
                BOOST_TEST(drain(p) == all, boost::test_tools::per_element());  // epoch 2
                const auto s = settled_stats(p);
                check_complete_accounting(s);
                BOOST_TEST(s.produced == 22U);  // 11 source items, 2 epochs
                BOOST_TEST(s.filtered == 4U);   // shard 1 (no samples) and shard 2, twice
                BOOST_TEST(row_named(s, "merge/shards flat_map#3").items_in == 12U);
                BOOST_TEST(row_named(s, "merge/shards flat_map#3").items_out == 18U);
                BOOST_TEST(row_named(s, "merge/shards filter#4").filtered == 2U);
                auto q = files_and_shards::merged(concurrency, ferry::mix_stop::first_exhausted)
                             .build({.threads = threads});
                BOOST_TEST(drain(q) == first, boost::test_tools::per_element());
            }
        }
    }
}

// Each element's outputs come at its place in the input order, whichever branch made them and
// however many (none, one, two); a failure in one branch is one item failed; every element is
// accounted for once.
BOOST_AUTO_TEST_CASE(a_route_with_flat_map_and_unbatch_branches_keeps_input_order) {
    std::vector<int> want;
    for (int x = 0; x < 60; ++x) {
        for (const int y : routed_outputs(x)) want.push_back(y);
    }
    for (const int concurrency : {1, 4}) {
        BOOST_TEST_CONTEXT("concurrency " << concurrency) {
            auto p = routed(ferry::from(iota_vec(60)), concurrency)
                         .build({.threads = 2, .logger = quiet});
            BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
            const auto s = settled_stats(p);
            check_complete_accounting(s);
            BOOST_TEST(s.produced == 60U);
            BOOST_TEST(s.failed == 1U);    // 29
            BOOST_TEST(s.filtered == 5U);  // no outputs: 8, 20, 32, 44, 56
            BOOST_TEST(row_named(s, "kind").items_in == 60U);
            BOOST_TEST(row_named(s, "kind/1 unbatch#4").items_out == 40U);
        }
    }
}

// A state taken after any output — also between two outputs of one shard or element — resumes
// exactly, over two epochs at concurrency 1 and 4: the merge alone, with a flat_map after it
// (the state then counts outputs at two depths) and with batches after it; the route alone.
BOOST_AUTO_TEST_CASE(resumes_exactly_from_any_output) {
    const auto once = words("s0 s1 a0 s20 s21 s30 a1 s40 s41 s50 a2 a3 a4");
    std::vector<std::string> want, doubled, batched;
    for (int e = 0; e < resume_test::epochs; ++e) {
        want.insert(want.end(), once.begin(), once.end());
        for (const auto& w : once) {
            doubled.push_back(w);
            doubled.push_back(w + "'");
        }
        for (std::size_t i = 0; i < once.size(); i += 4) {
            std::string b;
            for (std::size_t j = i; j < std::min(once.size(), i + 4); ++j) b += once[j] + ",";
            batched.push_back(b);
        }
    }
    const auto join = [](const std::vector<std::string>& v) {
        std::string b;
        for (const auto& w : v) b += w + ",";
        return b;
    };
    for (const int concurrency : {1, 4}) {
        const std::string at = ", concurrency " + std::to_string(concurrency);
        check_resume(
            "merge" + at,
            [=](const ferry::pipeline_options& o) {
                return files_and_shards::merged(concurrency, ferry::mix_stop::all_exhausted)
                    .build(o);
            },
            want);
        check_resume(
            "merge + flat_map" + at,
            [=](const ferry::pipeline_options& o) {
                return files_and_shards::merged(concurrency, ferry::mix_stop::all_exhausted)
                    .flat_map(
                        [](const std::string& w) {
                            return std::vector<std::string>{w, w + "'"};
                        },
                        concurrency)
                    .build(o);
            },
            doubled);
        check_resume(
            "merge + batch" + at,
            [=](const ferry::pipeline_options& o) {
                return files_and_shards::merged(concurrency, ferry::mix_stop::all_exhausted)
                    .batch(4)
                    .map(join)
                    .build(o);
            },
            batched);
    }
    std::vector<std::string> routed_want;
    const positioned_numbers numbers{.n = 40};
    for (std::uint64_t e = 0; e < static_cast<std::uint64_t>(resume_test::epochs); ++e) {
        for (const int x : numbers.numbers(e)) {
            for (const int y : routed_outputs(x)) routed_want.push_back(text(y));
        }
    }
    for (const int concurrency : {1, 4}) {
        check_resume(
            "route, concurrency " + std::to_string(concurrency),
            [=](const ferry::pipeline_options& o) {
                auto po = o;
                po.logger = quiet;
                return routed(ferry::from(numbers), concurrency)
                    .map([](int x) { return text(x); })
                    .build(po);
            },
            routed_want);
    }
}

// An epoch left in the middle (the join holding outputs of one branch while it waits for the
// other) leaves nothing behind: the next epoch is whole and in order.
BOOST_AUTO_TEST_CASE(an_abandoned_epoch_leaves_nothing_behind) {
    const auto all = words("s0 s1 a0 s20 s21 s30 a1 s40 s41 s50 a2 a3 a4");
    for (const std::size_t left_after : {1U, 4U, 9U}) {
        auto p = files_and_shards::merged(4, ferry::mix_stop::all_exhausted).build({.threads = 2});
        std::size_t n = 0;
        for (auto& x : p) {
            (void)x;
            if (++n == left_after) break;
        }
        BOOST_TEST(drain(p) == all, boost::test_tools::per_element());
        check_accounting(settled_stats(p));
    }
}

// batch, batch_by and route cannot be in a branch: refused when the route or merge is made,
// naming the branch.
BOOST_AUTO_TEST_CASE(refuses_batches_and_routes_in_branches) {
    const auto b = ferry::from(iota_vec(4));
    const auto plain = [](auto br) { return br.map([](int x) { return std::vector{x}; }); };
    expect_saying<ferry::invalid_argument>(
        [&] { (void)b.route([](int) { return 0; }, [](auto br) { return br.batch(2); }, plain); },
        "route: branch 0 has a batch, batch_by or route");
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)b.route(
                [](int) { return 0; }, plain,
                [](auto br) { return br.flat_map([](int x) { return std::vector{x}; }).batch(1); });
        },
        "route: branch 1 has a batch, batch_by or route");
    const auto batched = ferry::from(iota_vec(4)).batch(2);
    const auto single = ferry::from(iota_vec(4)).map([](int x) { return std::vector{x}; });
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)ferry::merge({single, batched});
        },
        "ferry::merge: branch 1 has a batch, batch_by or route");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
