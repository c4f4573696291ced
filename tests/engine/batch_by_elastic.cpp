// SPDX-License-Identifier: Apache-2.0
/// \file
/// batch_by on another world: ranks save in the middle of a window, the states are merged, and a
/// world of another size delivers the rest of the epoch with each item once up to padding: the
/// window's batches delivered before the save are left out of the rest, the others come again.

#include <boost/test/unit_test.hpp>

#include <map>
#include <numeric>
#include <vector>

#include "ferry/mix.hpp"
#include "support.hpp"

using namespace ferry_test;

namespace batch_by_elastic_test {

constexpr int n = 203;

std::vector<int> dataset() {
    std::vector<int> v(n);
    std::iota(v.begin(), v.end(), 0);
    return v;
}

/// Rank `rank` of `world`: a shuffled share, a map at concurrency 3, batches by cost (the item
/// mod 7, buckets splitting cheap from dear) over windows of 16.
ferry::pipeline<std::vector<int>> rank_pipeline(const std::vector<int>& data, std::size_t rank,
                                                std::size_t world,
                                                std::optional<ferry::pipeline_state> from) {
    return ferry::from(
               data, ferry::sampling{.shuffle = true, .seed = 8, .rank = rank, .world_size = world})
        .map([](int x) { return x; }, 3)
        .batch_by([](int x) { return static_cast<double>(x % 7); },
                  {.max_cost = 9, .buckets = {3}, .buffer = 16})
        .build({.threads = 2, .resume_from = std::move(from)});
}

/// Rank `rank` of `world` over a mix of two sources (items 1000 * k + i) that do not repeat,
/// batched by cost.
ferry::pipeline<std::vector<int>> mixed_pipeline(const std::vector<int>& a,
                                                 const std::vector<int>& b, std::size_t rank,
                                                 std::size_t world,
                                                 std::optional<ferry::pipeline_state> from) {
    return ferry::mix<int>(
               {{a, 2, {.shuffle = true, .seed = 1}}, {b, 1, {.shuffle = true, .seed = 2}}},
               {.seed = 3,
                .stop = ferry::mix_stop::all_exhausted,
                .rank = rank,
                .world_size = world})
        .map([](int x) { return x; }, 2)
        .batch_by([](int x) { return static_cast<double>(x % 5); },
                  {.max_cost = 6, .buckets = {2}, .buffer = 12})
        .build({.threads = 2, .resume_from = std::move(from)});
}

std::vector<int> numbered(int k, int size) {
    std::vector<int> v(static_cast<std::size_t>(size));
    for (int i = 0; i < size; ++i) v[static_cast<std::size_t>(i)] = 1000 * k + i;
    return v;
}

}  // namespace batch_by_elastic_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(batch_by_elastic)
using namespace batch_by_elastic_test;

// Four ranks take 3, 9, 1 and 5 batches (each stops inside a window), save, and their states
// are merged; 1, 3 and 5 ranks deliver the rest. Each new rank gets the same count, every item
// of the epoch comes, and the only repeats are padding: the saved world's one padded position
// and the new world's evening of the rest.
BOOST_AUTO_TEST_CASE(saved_mid_window_on_four_ranks_resumed_on_one_three_five) {
    const auto data = dataset();
    const std::vector<int> steps{3, 9, 1, 5};
    std::vector<int> before;
    std::vector<ferry::pipeline_state> states;
    for (std::size_t r = 0; r < steps.size(); ++r) {
        auto p = rank_pipeline(data, r, steps.size(), std::nullopt);
        for (int i = 0; i < steps[r]; ++i) {
            const auto b = p.next();
            BOOST_REQUIRE(b.has_value());
            before.insert(before.end(), b->begin(), b->end());
        }
        states.push_back(ferry::pipeline_state::parse(p.state().serialize()));
        // Inside a window: its delivered positions are in the state, past the window's start.
        BOOST_TEST(states.back().children().size() == 1U);
        BOOST_REQUIRE(!states.back().window().empty());
        BOOST_TEST(states.back().window().front() >= states.back().position());
    }
    const auto merged =
        ferry::pipeline_state::parse(ferry::pipeline_state::merge(states).serialize());
    std::size_t in_windows = 0;
    for (const auto& st : states) in_windows += st.window().size();
    BOOST_TEST(merged.window().size() == in_windows);  // one global per position
    for (const std::size_t world : {1U, 3U, 5U}) {
        BOOST_TEST_CONTEXT("resumed on " << world << " ranks") {
            std::vector<int> all = before;
            std::vector<std::size_t> shares;
            for (std::size_t r = 0; r < world; ++r) {
                auto p = rank_pipeline(data, r, world, merged);
                std::size_t mine = 0;
                for (const auto& b : p) {
                    all.insert(all.end(), b.begin(), b.end());
                    mine += b.size();
                }
                shares.push_back(mine);
            }
            for (const auto s : shares) BOOST_TEST(s == shares.front());
            std::map<int, int> seen;
            for (const int x : all) ++seen[x];
            BOOST_TEST(seen.size() == std::size_t{n});  // every item of the epoch
            // The old layout: 4 x 51 = 204 positions, 1 padded. The rest after the saved run is
            // split evenly over the new ranks, padded up to a multiple of the world.
            const std::size_t rest = 204 - before.size();
            const std::size_t share = (rest + world - 1) / world;
            BOOST_TEST(shares.front() == share);
            std::size_t repeats = 0;
            for (const auto& [item, k] : seen) repeats += static_cast<std::size_t>(k - 1);
            BOOST_TEST(repeats == 1 + share * world - rest);
        }
    }
}

// A state taken while the rest of such a merged epoch runs (inside one of its own windows)
// resumes it exactly again on that world: the rest still leaves out the saved world's windows.
BOOST_AUTO_TEST_CASE(a_resumed_rest_resumes_again_on_its_world) {
    const auto data = dataset();
    std::vector<ferry::pipeline_state> states;
    for (std::size_t r = 0; r < 4; ++r) {
        auto p = rank_pipeline(data, r, 4, std::nullopt);
        for (std::size_t i = 0; i < 2 + 3 * r; ++i) (void)p.next();
        states.push_back(p.state());
    }
    const auto merged = ferry::pipeline_state::merge(states);
    BOOST_REQUIRE(!merged.window().empty());
    auto whole = rank_pipeline(data, 1, 3, merged);
    std::vector<std::vector<int>> want;
    for (const auto& b : whole) want.push_back(b);
    auto first = rank_pipeline(data, 1, 3, merged);
    std::vector<std::vector<int>> got{*first.next(), *first.next()};
    const auto text = first.state().serialize();
    const auto again = ferry::pipeline_state::parse(text);
    BOOST_TEST(again.saved_window() == merged.window(), boost::test_tools::per_element());
    auto second = rank_pipeline(data, 1, 3, again);
    for (const auto& b : second) got.push_back(b);
    BOOST_TEST((got == want), text);
}

// The same over a mix: the window's delivered mix positions are items of the sources drawn
// there, which each source's rest leaves out.
BOOST_AUTO_TEST_CASE(a_mix_batched_by_cost_resumes_on_another_world_size) {
    const auto a = numbered(0, 90), b = numbered(1, 41);
    const std::vector<int> steps{2, 6, 1, 4};
    std::vector<int> before;
    std::vector<ferry::pipeline_state> states;
    for (std::size_t r = 0; r < steps.size(); ++r) {
        auto p = mixed_pipeline(a, b, r, steps.size(), std::nullopt);
        for (int i = 0; i < steps[r]; ++i) {
            const auto got = p.next();
            BOOST_REQUIRE(got.has_value());
            before.insert(before.end(), got->begin(), got->end());
        }
        states.push_back(ferry::pipeline_state::parse(p.state().serialize()));
    }
    std::size_t in_windows = 0;
    for (const auto& st : states) in_windows += st.window().size();
    BOOST_TEST(in_windows > 8U);  // saves inside windows: what this test is about
    const auto merged =
        ferry::pipeline_state::parse(ferry::pipeline_state::merge(states).serialize());
    for (const std::size_t world : {1U, 3U, 5U}) {
        BOOST_TEST_CONTEXT("resumed on " << world << " ranks") {
            std::vector<int> all = before;
            std::vector<std::size_t> shares;
            for (std::size_t r = 0; r < world; ++r) {
                auto p = mixed_pipeline(a, b, r, world, merged);
                std::size_t mine = 0;
                for (const auto& got : p) {
                    all.insert(all.end(), got.begin(), got.end());
                    mine += got.size();
                }
                shares.push_back(mine);
            }
            for (const auto s : shares) BOOST_TEST(s == shares.front());
            for (const auto& [k, size] : {std::pair{0, 90}, std::pair{1, 41}}) {
                std::map<int, int> seen;
                for (const int x : all) {
                    if (x / 1000 == k) ++seen[x % 1000];
                }
                BOOST_TEST(seen.size() == static_cast<std::size_t>(size), "source " << k);
                int extra = 0;
                for (const auto& [item, times] : seen) extra += times - 1;
                // Padding only: the saved world's (under 4) and the new world's (under world).
                BOOST_TEST(extra < static_cast<int>(steps.size() + world), "source " << k);
            }
        }
    }
}

// Saved again on the same world, such a state still resumes exactly (the window is gathered
// again, the delivered batches skipped), and a state taken after a resumed window's next batch
// still names the batches delivered before the first save.
BOOST_AUTO_TEST_CASE(a_resumed_window_keeps_the_positions_delivered_before) {
    const auto data = dataset();
    auto whole = rank_pipeline(data, 1, 2, std::nullopt);
    std::vector<std::vector<int>> want;
    for (const auto& b : whole) want.push_back(b);
    auto first = rank_pipeline(data, 1, 2, std::nullopt);
    std::vector<std::vector<int>> got{*first.next(), *first.next()};
    const auto saved = ferry::pipeline_state::parse(first.state().serialize());
    BOOST_REQUIRE(!saved.window().empty());
    auto second = rank_pipeline(data, 1, 2, saved);
    got.push_back(*second.next());
    const auto again = second.state();
    // Still the same window (16 items of costs up to 6 under 9 make more than 3 batches): the new
    // state lists what both runs delivered of it.
    BOOST_REQUIRE(again.position() == saved.position());
    BOOST_TEST(again.window().size() == saved.window().size() + got.back().size());
    BOOST_TEST(std::includes(again.window().begin(), again.window().end(), saved.window().begin(),
                             saved.window().end()));
    for (const auto& b : second) got.push_back(b);
    BOOST_TEST((got == want));
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
