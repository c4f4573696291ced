// SPDX-License-Identifier: Apache-2.0
/// \file
/// Elastic resume worked out by hand: small batch_by and mix runs saved on 2 ranks, merged, and
/// resumed on 1 to 4, each new rank's batches or per-source items and the padding written out in
/// the test (the derivation is in the comments), not computed by ferry.

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "ferry/mix.hpp"
#include "support.hpp"

using namespace ferry_test;

namespace elastic_by_hand_test {

using batches = std::vector<std::vector<int>>;

/// Items 0..9 on rank `rank` of `world`, in order (rank r: r, r + world, ...), batched by cost:
/// a multiple of 3 costs 2 (bucket 1, bounds {2}), the others 1; at most 2 a batch; windows of 4.
ferry::pipeline<std::vector<int>> bucketed(const std::vector<int>& data, std::size_t rank,
                                           std::size_t world,
                                           std::optional<ferry::pipeline_state> from) {
    return ferry::from(data, ferry::sampling{.rank = rank, .world_size = world})
        .map([](int x) { return x; }, 2)
        .batch_by([](int x) { return x % 3 == 0 ? 2.0 : 1.0; },
                  {.max_cost = 2, .buckets = {2}, .buffer = 4})
        .build({.threads = 2, .resume_from = std::move(from)});
}

/// A mix of a = {0..5} and b = {100..103}, weights 1 and 1, seed 3, all_exhausted, in order, on
/// rank `rank` of `world`.
ferry::pipeline<int> mixed(const std::vector<int>& a, const std::vector<int>& b, std::size_t rank,
                           std::size_t world, std::optional<ferry::pipeline_state> from) {
    return ferry::mix<int>({{a, 1.0}, {b, 1.0}}, {.seed = 3,
                                                  .stop = ferry::mix_stop::all_exhausted,
                                                  .rank = rank,
                                                  .world_size = world})
        .map([](int x) { return x; }, 2)
        .build({.threads = 2, .resume_from = std::move(from)});
}

/// The items of `got` from source a (below 100) and from source b, each in delivered order.
std::pair<std::vector<int>, std::vector<int>> by_source(const std::vector<int>& got) {
    std::pair<std::vector<int>, std::vector<int>> out;
    for (const int x : got) (x < 100 ? out.first : out.second).push_back(x);
    return out;
}

}  // namespace elastic_by_hand_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(elastic_by_hand)
using namespace elastic_by_hand_test;

// batch_by saved inside a window on 2 ranks and resumed on 1 and 3 delivers the batches worked
// out by hand, the padding exactly the new world's evening of the rest (2 items on 3 ranks).
BOOST_AUTO_TEST_CASE(batch_by_saved_on_two_ranks_resumes_on_one_and_three_as_worked_out) {
    // Rank 0 has 0 2 4 6 | 8 (costs 2 1 1 2 | 1): 0 opens bucket 1, 2 and 4 fill bucket 0,
    // 6 closes [0]; the open buckets go out by first element: [2 4], [6]; then [8].
    // Rank 1 has 1 3 5 7 | 9 (costs 1 2 1 1 | 2): 7 closes [1 5]; then [3], [7]; then [9].
    const std::vector<int> data{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const std::vector<batches> whole{{{0}, {2, 4}, {6}, {8}}, {{1, 5}, {3}, {7}, {9}}};
    std::vector<ferry::pipeline_state> states;
    for (std::size_t r = 0; r < 2; ++r) {
        auto p = bucketed(data, r, 2, std::nullopt);
        batches got;
        for (auto& b : p) got.push_back(b);
        BOOST_TEST((got == whole[r]), "rank " << r << " of 2, uninterrupted");
        // Each saves after its first batch, inside its first window.
        auto q = bucketed(data, r, 2, std::nullopt);
        BOOST_TEST((*q.next() == whole[r][0]));
        states.push_back(ferry::pipeline_state::parse(q.state().serialize()));
    }
    const auto merged =
        ferry::pipeline_state::parse(ferry::pipeline_state::merge(states).serialize());
    // Both windows start at position 0; delivered: rank 0's position 0 (global 0), rank 1's
    // positions 0 and 2 (globals 1 and 5).
    BOOST_TEST(merged.rank_positions() == (std::vector<std::uint64_t>{0, 0}),
               boost::test_tools::per_element());
    BOOST_TEST(merged.window() == (std::vector<std::uint64_t>{0, 1, 5}),
               boost::test_tools::per_element());
    // The rest in global order: 2 3 4 6 7 8 9.
    // On 1 rank: 2 3 4 6 | 7 8 9 (costs 1 2 1 2 | 1 1 2): 6 closes [3]; [2 4], [6]; [7 8], [9].
    std::map<std::size_t, std::vector<batches>> want;
    want[1] = {{{3}, {2, 4}, {6}, {7, 8}, {9}}};
    // On 3 ranks: rest places r, r + 3, ... padded to 9 from the rest's start (2, then 3):
    // rank 0: 2 6 9 (costs 1 2 2: 9 closes [6]; [2], [9]); rank 1: 3 7 2 (costs 2 1 1: [3],
    // [7 2]); rank 2: 4 8 3 (costs 1 1 2: [4 8], [3]).
    want[3] = {{{6}, {2}, {9}}, {{3}, {7, 2}}, {{4, 8}, {3}}};
    for (const auto& [world, ranks] : want) {
        std::map<int, int> seen{{0, 1}, {1, 1}, {5, 1}};  // delivered before the save
        for (std::size_t r = 0; r < world; ++r) {
            auto p = bucketed(data, r, world, merged);
            batches got;
            for (auto& b : p) got.push_back(b);
            BOOST_TEST((got == ranks[r]), "rank " << r << " of " << world << " after the resume");
            for (const auto& b : got) {
                for (const int x : b) ++seen[x];
            }
        }
        int repeats = 0;
        for (const auto& [x, times] : seen) repeats += times - 1;
        BOOST_TEST(seen.size() == data.size(), "on " << world << " ranks: every item");
        BOOST_TEST(repeats == (world == 3 ? 2 : 0), "on " << world << " ranks: the padding");
    }
}

// A mix saved on 2 ranks at positions 3 and 1 and resumed on 1 to 4 gives each new rank the
// items of each source worked out by hand, in each source's order, and pads exactly as the new
// world's split of each source's rest says.
BOOST_AUTO_TEST_CASE(a_mix_saved_on_two_ranks_resumes_on_one_to_four_as_worked_out) {
    // Each rank's share: a: rank 0 has 0 2 4, rank 1 has 1 3 5; b: 100 102 and 101 103. Seed 3
    // draws a b a b a for 3 and 2 items (tests/engine/mix_draws_oracle.py's rule), so rank 0
    // delivers 0 100 2 102 4 and rank 1 1 101 3 103 5.
    const std::vector<int> a{0, 1, 2, 3, 4, 5}, b{100, 101, 102, 103};
    const std::vector<std::vector<int>> whole{{0, 100, 2, 102, 4}, {1, 101, 3, 103, 5}};
    const std::vector<std::size_t> saved_at{3, 1};
    std::vector<ferry::pipeline_state> states;
    for (std::size_t r = 0; r < 2; ++r) {
        auto p = mixed(a, b, r, 2, std::nullopt);
        BOOST_TEST(drain(p) == whole[r], boost::test_tools::per_element());
        auto q = mixed(a, b, r, 2, std::nullopt);
        for (std::size_t i = 0; i < saved_at[r]; ++i) BOOST_TEST(*q.next() == whole[r][i]);
        states.push_back(q.state());
    }
    const auto merged = ferry::pipeline_state::merge(states);
    // Delivered: 0 100 2 (rank 0), 1 (rank 1). Each source's rest, in its global order:
    // a: 3 4 5; b: 101 102 103.
    struct share {
        std::vector<int> a, b;
    };
    std::map<std::size_t, std::vector<share>> want;
    want[1] = {{{3, 4, 5}, {101, 102, 103}}};
    // 2 ranks: places r, r + 2 of each rest padded to 4 from its start (3, 101).
    want[2] = {{{3, 5}, {101, 103}}, {{4, 3}, {102, 101}}};
    want[3] = {{{3}, {101}}, {{4}, {102}}, {{5}, {103}}};
    // 4 ranks: each rest padded to 4 from its start: rank 3 gets 3 and 101 again.
    want[4] = {{{3}, {101}}, {{4}, {102}}, {{5}, {103}}, {{3}, {101}}};
    for (const auto& [world, ranks] : want) {
        int delivered = 0;
        for (std::size_t r = 0; r < world; ++r) {
            auto p = mixed(a, b, r, world, merged);
            const auto got = drain(p);
            delivered += static_cast<int>(got.size());
            const auto [from_a, from_b] = by_source(got);
            BOOST_TEST(from_a == ranks[r].a, "rank " << r << " of " << world << ", source a");
            BOOST_TEST(from_b == ranks[r].b, "rank " << r << " of " << world << ", source b");
        }
        // 6 items were left; the rest is padded to a multiple of the world per source.
        const int padded = world == 2 || world == 4 ? 2 : 0;
        BOOST_TEST(delivered == 6 + padded, "on " << world << " ranks");
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
