// SPDX-License-Identifier: Apache-2.0
/// \file
/// A weighted mix's draws pinned by hand: the source sequences of small mixes, worked out apart
/// from `mix_sampler` (by `mix_draws_oracle.py`, written from the rule documented in
/// ops/core/mix_sampler.cpp), checked against `mix_sampler` and against a `ferry::mix` pipeline.

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ferry/mix.hpp"
#include "support.hpp"

using namespace ferry_test;

namespace mix_draws_test {

/// One small mix and the (source, item) of each of its draws, worked out apart.
struct pinned_mix {
    std::string what;
    std::vector<std::uint64_t> sizes;
    std::vector<double> weights;
    std::uint64_t seed = 0;
    std::uint64_t epoch = 0;
    ferry::mix_stop stop = ferry::mix_stop::first_exhausted;
    std::vector<std::pair<std::size_t, std::uint64_t>> draws;  ///< the first draws, or all
    bool whole_epoch = false;  ///< `draws` is the whole epoch (it ends after them)
};

// Derived by tests/engine/mix_draws_oracle.py (python3, not ferry's code): key = splitmix64's
// finaliser of (seed ^ finaliser(epoch + golden)); at position g, u = the top 53 bits of
// finaliser(key ^ finaliser(g + golden)) over 2^53; the draw is the first source in the draw
// whose running weight sum is above u * total; no shuffle and one rank, so the c-th draw of a
// source takes its item c. Regenerate with `python3 tests/engine/mix_draws_oracle.py`.
std::vector<pinned_mix> pinned() {
    using ferry::mix_stop;
    return {
        {"two sources 0.7 / 0.3, seed 42, epoch 0",
         {100, 100},
         {0.7, 0.3},
         42,
         0,
         mix_stop::first_exhausted,
         {{0, 0}, {0, 1},  {0, 2},  {0, 3}, {0, 4},  {0, 5},  {0, 6}, {0, 7},  {0, 8},  {0, 9},
          {1, 0}, {0, 10}, {0, 11}, {1, 1}, {0, 12}, {0, 13}, {1, 2}, {0, 14}, {0, 15}, {0, 16}}},
        {"the same mix in epoch 1",
         {100, 100},
         {0.7, 0.3},
         42,
         1,
         mix_stop::first_exhausted,
         {{0, 0}, {0, 1}, {1, 0}, {0, 2}, {0, 3}, {1, 1}, {0, 4}, {1, 2},  {0, 5},  {0, 6},
          {0, 7}, {0, 8}, {0, 9}, {1, 3}, {1, 4}, {1, 5}, {1, 6}, {0, 10}, {0, 11}, {1, 7}}},
        // Source 1 leaves the draw after its 4th item (position 18), source 0 after its 3rd
        // (position 24): the draws after each use the smaller total.
        {"three sources 1 / 2 / 5 of 3, 4 and 20 items, seed 7, all_exhausted",
         {3, 4, 20},
         {1, 2, 5},
         7,
         0,
         mix_stop::all_exhausted,
         {{1, 0}, {2, 0},  {0, 0},  {0, 1},  {2, 1},  {2, 2},  {2, 3}, {2, 4},  {2, 5},
          {2, 6}, {2, 7},  {2, 8},  {2, 9},  {2, 10}, {1, 1},  {1, 2}, {2, 11}, {2, 12},
          {1, 3}, {2, 13}, {2, 14}, {2, 15}, {2, 16}, {2, 17}, {0, 2}, {2, 18}, {2, 19}},
         true},
        // The same draws, ended at position 21, which draws source 1 with nothing left.
        {"the same mix under first_exhausted",
         {3, 4, 20},
         {1, 2, 5},
         7,
         0,
         mix_stop::first_exhausted,
         {{1, 0}, {2, 0}, {0, 0},  {0, 1},  {2, 1}, {2, 2},  {2, 3},
          {2, 4}, {2, 5}, {2, 6},  {2, 7},  {2, 8}, {2, 9},  {2, 10},
          {1, 1}, {1, 2}, {2, 11}, {2, 12}, {1, 3}, {2, 13}, {2, 14}},
         true},
        {"two sources 3 / 1 of 6 and 9 items, seed 2, first_exhausted",
         {6, 9},
         {3, 1},
         2,
         0,
         mix_stop::first_exhausted,
         {{1, 0}, {0, 0}, {0, 1}, {0, 2}, {1, 1}, {0, 3}, {0, 4}, {1, 2}, {1, 3}, {1, 4}, {0, 5}},
         true},
    };
}

/// `m`'s first `count` draws of `epoch` (fewer where the epoch ends), as (source, index).
std::vector<std::pair<std::size_t, std::uint64_t>> first_draws(const ferry::mix_sampler& m,
                                                               std::uint64_t epoch,
                                                               std::size_t count) {
    std::vector<std::pair<std::size_t, std::uint64_t>> out;
    auto c = m.open(epoch);
    while (out.size() < count) {
        const auto p = c.next();
        if (!p) break;
        out.emplace_back(p->source, p->index);
    }
    return out;
}

ferry::mix_sampler sampler_of(const pinned_mix& p) {
    std::vector<ferry::mix_sampler::source> sources;
    for (std::size_t k = 0; k < p.sizes.size(); ++k) {
        sources.push_back({.size = p.sizes[k], .weight = p.weights[k]});
    }
    return ferry::mix_sampler(sources, {.seed = p.seed, .stop = p.stop});
}

/// Source k's items as 1000 * k + i.
std::vector<int> items_of(std::size_t k, std::uint64_t size) {
    std::vector<int> v;
    for (std::uint64_t i = 0; i < size; ++i) v.push_back(static_cast<int>(1000 * k + i));
    return v;
}

}  // namespace mix_draws_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(mix_draws)
using namespace mix_draws_test;

// mix_sampler draws exactly the sequences worked out apart from it, draw for draw, and a
// pinned whole epoch ends where the stop rule says.
BOOST_AUTO_TEST_CASE(draws_equal_the_sequences_worked_out_apart) {
    for (const auto& p : pinned()) {
        BOOST_TEST_CONTEXT(p.what) {
            const auto m = sampler_of(p);
            const auto got = first_draws(m, p.epoch, p.draws.size() + 1);
            const std::vector want(p.draws.begin(), p.draws.end());
            BOOST_TEST(got.size() == (p.whole_epoch ? want.size() : want.size() + 1));
            BOOST_REQUIRE(got.size() >= want.size());
            for (std::size_t i = 0; i < want.size(); ++i) {
                BOOST_TEST((got[i] == want[i]), "draw " << i << ": source " << got[i].first
                                                        << " item " << got[i].second
                                                        << ", worked out: source " << want[i].first
                                                        << " item " << want[i].second);
            }
        }
    }
}

// A ferry::mix pipeline over the pinned mixes delivers the pinned items in that order, at
// map concurrency 1 and 4.
BOOST_AUTO_TEST_CASE(a_mix_pipeline_delivers_the_pinned_items) {
    for (const auto& p : pinned()) {
        if (p.epoch != 0) continue;  // a pipeline's first epoch is 0
        for (const std::size_t concurrency : {1U, 4U}) {
            BOOST_TEST_CONTEXT(p.what << ", concurrency " << concurrency) {
                std::vector<std::vector<int>> data;
                std::vector<ferry::mix_input<int>> inputs;
                for (std::size_t k = 0; k < p.sizes.size(); ++k) {
                    data.push_back(items_of(k, p.sizes[k]));
                }
                for (std::size_t k = 0; k < p.sizes.size(); ++k) {
                    inputs.emplace_back(data[k], p.weights[k]);
                }
                auto pipe = ferry::mix<int>(inputs, {.seed = p.seed, .stop = p.stop})
                                .map([](int x) { return x; }, concurrency)
                                .build({.threads = 2});
                std::vector<int> got;
                while (got.size() < p.draws.size() + 1) {
                    auto x = pipe.next();
                    if (!x) break;
                    got.push_back(*x);
                }
                std::vector<int> want;
                for (const auto& [k, i] : p.draws) want.push_back(static_cast<int>(1000 * k + i));
                if (p.whole_epoch) {
                    BOOST_TEST(got == want, boost::test_tools::per_element());
                } else {
                    BOOST_REQUIRE(got.size() == want.size() + 1);
                    got.pop_back();
                    BOOST_TEST(got == want, boost::test_tools::per_element());
                }
            }
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
