// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::mix_sampler: the proportions of a weighted mix, its stop rules, its split over ranks,
/// a cursor opened at a position, and the errors for weights and rules that cannot work.

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/mixing.hpp"
#include "ferry/pipeline_state.hpp"

namespace mix_sampler_test {

using source = ferry::mix_sampler::source;

/// Every pick of `epoch`, as (source, index) pairs.
std::vector<std::pair<std::size_t, std::uint64_t>> picks(const ferry::mix_sampler& m,
                                                         std::uint64_t epoch = 0) {
    std::vector<std::pair<std::size_t, std::uint64_t>> out;
    auto c = m.open(epoch);
    while (auto p = c.next()) out.emplace_back(p->source, p->index);
    return out;
}

/// The message of the `ferry::invalid_argument` that `f` throws ("" when it does not throw).
template <class F>
std::string refusal(F&& f) {
    try {
        f();
    } catch (const ferry::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace mix_sampler_test

BOOST_AUTO_TEST_SUITE(core)
BOOST_AUTO_TEST_SUITE(mix_sampler)
using namespace mix_sampler_test;

// 10 000 draws land on each source as often as its weight says, within 4 standard deviations
// of the binomial count, for two weightings.
BOOST_AUTO_TEST_CASE(proportions_follow_the_weights) {
    const std::vector<std::vector<double>> weightings{{0.7, 0.3}, {1, 1, 8}};
    for (const auto& weights : weightings) {
        std::vector<source> sources;
        for (const double w : weights) {
            sources.push_back({.size = 100, .weight = w, .options = {.repeat = true}});
        }
        for (const std::uint64_t seed : {1U, 2U, 3U}) {
            ferry::mix_sampler m(
                sources, {.seed = seed, .stop = ferry::mix_stop::never, .epoch_length = 10'000});
            std::vector<double> count(weights.size(), 0);
            for (const auto& [k, i] : picks(m)) count[k] += 1;
            double total = 0;
            for (const double w : weights) total += w;
            for (std::size_t k = 0; k < weights.size(); ++k) {
                const double p = weights[k] / total;
                const double sd = std::sqrt(10'000 * p * (1 - p));
                BOOST_TEST(std::abs(count[k] - 10'000 * p) < 4 * sd,
                           "seed " << seed << ", source " << k << " of weight " << weights[k]
                                   << ": " << count[k] << " draws, expected " << 10'000 * p
                                   << " +- " << 4 * sd);
            }
        }
    }
}

// Each source's items come in its own order (here the index order, then a shuffled one), and
// a source that repeats starts over with a new pass once its items are used up.
BOOST_AUTO_TEST_CASE(each_source_keeps_its_own_order_and_passes) {
    ferry::mix_sampler m({{.size = 5, .weight = 1, .options = {.repeat = true}},
                          {.size = 40, .weight = 1, .options = {.shuffle = true, .seed = 9}}},
                         {.seed = 4, .stop = ferry::mix_stop::first_exhausted});
    std::vector<std::uint64_t> small, large;
    for (const auto& [k, i] : picks(m)) (k == 0 ? small : large).push_back(i);
    // The large source ends the epoch: it was drawn 41 times (the 41st finds nothing left).
    BOOST_TEST(large.size() == 40U);
    for (std::size_t j = 0; j < small.size(); ++j) BOOST_TEST(small[j] == j % 5);
    BOOST_TEST(small.size() > 10U);  // the small source went round several times
    // The shuffled one is a permutation, and it is the sampler's own order for this epoch.
    const ferry::sampler own(40, {.shuffle = true, .seed = 9});
    for (std::uint64_t j = 0; j < 40; ++j) BOOST_TEST(large[j] == own.index(0, j));
    BOOST_TEST(std::set(large.begin(), large.end()).size() == 40U);
}

// The stop rules on sources of unequal length, worked out by hand: first_exhausted ends at
// the first draw that finds a source empty; all_exhausted gives every item once; never runs
// for epoch_length items.
BOOST_AUTO_TEST_CASE(each_stop_rule_ends_where_it_says) {
    const std::vector<source> sources{{.size = 3, .weight = 1}, {.size = 20, .weight = 1}};
    {
        ferry::mix_sampler m(sources, {.seed = 5, .stop = ferry::mix_stop::first_exhausted});
        const auto all = picks(m);
        std::size_t small = 0;
        for (const auto& [k, i] : all) small += k == 0 ? 1 : 0;
        BOOST_TEST(small == 3U);  // the small source is the one that ran out
        BOOST_TEST(all.size() < 23U);
        // Every rule draws the same sources up to the end of first_exhausted.
        ferry::mix_sampler every(sources, {.seed = 5, .stop = ferry::mix_stop::all_exhausted});
        const auto longer = picks(every);
        BOOST_TEST(std::vector(longer.begin(),
                               longer.begin() + static_cast<std::ptrdiff_t>(all.size())) == all);
    }
    {
        ferry::mix_sampler m(sources, {.seed = 5, .stop = ferry::mix_stop::all_exhausted});
        std::map<std::size_t, std::vector<std::uint64_t>> by_source;
        for (const auto& [k, i] : picks(m)) by_source[k].push_back(i);
        BOOST_TEST(by_source[0] == (std::vector<std::uint64_t>{0, 1, 2}));
        std::vector<std::uint64_t> twenty(20);
        for (std::uint64_t j = 0; j < 20; ++j) twenty[j] = j;
        BOOST_TEST(by_source[1] == twenty);
    }
    {
        ferry::mix_sampler m(sources,
                             {.seed = 5, .stop = ferry::mix_stop::never, .epoch_length = 100});
        std::map<std::size_t, std::vector<std::uint64_t>> by_source;
        const auto all = picks(m);
        BOOST_TEST(all.size() == 100U);
        for (const auto& [k, i] : all) by_source[k].push_back(i);
        for (std::size_t j = 0; j < by_source[0].size(); ++j) BOOST_TEST(by_source[0][j] == j % 3);
        for (std::size_t j = 0; j < by_source[1].size(); ++j) BOOST_TEST(by_source[1][j] == j % 20);
    }
}

// An empty source: first_exhausted ends the epoch at its first draw; all_exhausted and never
// leave it out of the draw; a mix of only empty sources has empty epochs.
BOOST_AUTO_TEST_CASE(an_empty_source_ends_or_leaves_the_draw) {
    const std::vector<source> sources{{.size = 0, .weight = 1}, {.size = 10, .weight = 1}};
    {
        ferry::mix_sampler m(sources, {.seed = 2, .stop = ferry::mix_stop::first_exhausted});
        const auto all = picks(m);
        // Every pick before the end is the other source's, in order.
        for (std::size_t j = 0; j < all.size(); ++j) {
            BOOST_TEST(all[j].first == 1U);
            BOOST_TEST(all[j].second == j);
        }
        BOOST_TEST(all.size() < 10U);  // with odds of 1 in 1024 this seed would draw 10 first
    }
    for (const auto stop : {ferry::mix_stop::all_exhausted, ferry::mix_stop::never}) {
        ferry::mix_sampler m(sources, {.seed = 2, .stop = stop, .epoch_length = 30});
        const auto all = picks(m);
        BOOST_TEST(all.size() == (stop == ferry::mix_stop::never ? 30U : 10U));
        for (const auto& [k, i] : all) BOOST_TEST(k == 1U);
    }
    ferry::mix_sampler none({{.size = 0, .weight = 1}}, {.stop = ferry::mix_stop::never});
    BOOST_TEST(picks(none).empty());
}

// A weight of 0 is never drawn; weights {7, 3} and {0.7, 0.3} mix alike.
BOOST_AUTO_TEST_CASE(weights_are_relative_and_zero_is_never_drawn) {
    const auto run = [](double a, double b, double c) {
        return picks(ferry::mix_sampler(
            {{.size = 50, .weight = a}, {.size = 50, .weight = b}, {.size = 50, .weight = c}},
            {.seed = 8, .stop = ferry::mix_stop::all_exhausted}));
    };
    const auto scaled = run(7, 3, 0);
    BOOST_TEST(scaled.size() == 100U);
    for (const auto& [k, i] : scaled) BOOST_TEST(k != 2U);
    BOOST_TEST(run(0.7, 0.3, 0) == scaled);
}

// Opening a cursor at a position gives exactly what a cursor from the start gives from there;
// the same seed gives the same epoch, another epoch or seed another one.
BOOST_AUTO_TEST_CASE(a_cursor_opened_at_a_position_continues_the_epoch) {
    const std::vector<source> sources{
        {.size = 30, .weight = 2, .options = {.shuffle = true, .seed = 1}},
        {.size = 7, .weight = 1, .options = {.shuffle = true, .seed = 2, .repeat = true}},
        {.size = 12, .weight = 1}};
    ferry::mix_sampler m(sources, {.seed = 11, .stop = ferry::mix_stop::all_exhausted});
    for (const std::uint64_t epoch : {0U, 3U}) {
        const auto all = picks(m, epoch);
        for (std::uint64_t at = 0; at <= all.size(); at += 5) {
            auto c = m.open(epoch, at);
            BOOST_TEST(c.position() == at);
            std::vector<std::pair<std::size_t, std::uint64_t>> rest;
            while (auto p = c.next()) rest.emplace_back(p->source, p->index);
            BOOST_TEST(rest ==
                       std::vector(all.begin() + static_cast<std::ptrdiff_t>(at), all.end()));
        }
    }
    BOOST_TEST(picks(m, 0) == picks(ferry::mix_sampler(sources, m.options()), 0));
    BOOST_TEST(picks(m, 0) != picks(m, 1));
    auto other = m.options();
    other.seed = 12;
    BOOST_TEST(picks(m, 0) != picks(ferry::mix_sampler(sources, other), 0));
}

// Over ranks, every rank draws the same sources in the same order (so every rank's epoch has
// the same length), and the ranks' items of a source are disjoint and cover it.
BOOST_AUTO_TEST_CASE(ranks_get_equal_counts_and_disjoint_shares) {
    const std::vector<source> sources{{.size = 23, .weight = 1, .options = {.shuffle = true}},
                                      {.size = 41, .weight = 2, .options = {.shuffle = true}}};
    for (const auto stop : {ferry::mix_stop::first_exhausted, ferry::mix_stop::all_exhausted}) {
        const std::size_t world = 4;
        std::vector<std::vector<std::pair<std::size_t, std::uint64_t>>> ranks;
        for (std::size_t r = 0; r < world; ++r) {
            ranks.push_back(picks(ferry::mix_sampler(
                sources, {.seed = 6, .stop = stop, .rank = r, .world_size = world})));
        }
        std::map<std::size_t, std::multiset<std::uint64_t>> seen;
        for (std::size_t r = 0; r < world; ++r) {
            BOOST_TEST(ranks[r].size() == ranks[0].size());
            for (std::size_t j = 0; j < ranks[r].size(); ++j) {
                BOOST_TEST(ranks[r][j].first == ranks[0][j].first);
                seen[ranks[r][j].first].insert(ranks[r][j].second);
            }
        }
        if (stop == ferry::mix_stop::all_exhausted) {
            // pad: ceil(23 / 4) = 6 and ceil(41 / 4) = 11 a rank; 1 and 3 items come twice.
            BOOST_TEST(seen[0].size() == 24U);
            BOOST_TEST(std::set(seen[0].begin(), seen[0].end()).size() == 23U);
            BOOST_TEST(seen[1].size() == 44U);
            BOOST_TEST(std::set(seen[1].begin(), seen[1].end()).size() == 41U);
        }
    }
}

// The rest of a merged epoch, as numbers: two saved ranks stopped at positions 5 and 2, three
// new ranks share what they had not taken, each source's items once over both worlds (source 0
// pads 1 item in the saved world, 0 or more in the new), with equal counts on the new ranks; a
// state that is not merged is refused.
BOOST_AUTO_TEST_CASE(the_rest_of_a_merged_epoch_splits_over_a_new_world) {
    const std::vector<source> sources{{.size = 21, .weight = 1, .options = {.shuffle = true}},
                                      {.size = 12, .weight = 1, .options = {.shuffle = true}}};
    const auto mix = [&](std::size_t r, std::size_t w) {
        return ferry::mix_sampler(
            sources,
            {.seed = 3, .stop = ferry::mix_stop::all_exhausted, .rank = r, .world_size = w});
    };
    std::vector<ferry::pipeline_state> states;
    std::map<std::size_t, std::multiset<std::uint64_t>> seen;
    const std::uint64_t stopped[] = {5, 2};
    for (std::size_t r = 0; r < 2; ++r) {
        const auto m = mix(r, 2);
        auto c = m.open(0);
        for (std::uint64_t i = 0; i < stopped[r]; ++i) {
            const auto p = c.next();
            seen[p->source].insert(p->index);
        }
        ferry::pipeline_state st(0, stopped[r]);
        st.set_sampler(
            ferry::sampler_identity{m.fingerprint(), 3, r, 2, ferry::remainder::pad, true});
        states.push_back(st);
    }
    const auto merged = ferry::pipeline_state::merge(states);
    std::size_t count = 0;
    for (std::size_t r = 0; r < 3; ++r) {
        ferry::mix_sampler rest(
            sources,
            {.seed = 3, .stop = ferry::mix_stop::all_exhausted, .rank = r, .world_size = 3},
            merged);
        auto c = rest.open(0);
        std::size_t n = 0;
        while (auto p = c.next()) {
            seen[p->source].insert(p->index);
            ++n;
        }
        if (r == 0) count = n;
        BOOST_TEST(n == count);
        // Epoch 1 is the new world's usual epoch.
        BOOST_TEST(picks(rest, 1) == picks(mix(r, 3), 1));
    }
    for (const auto& [k, n] : {std::pair<std::size_t, std::size_t>{0, 21}, {1, 12}}) {
        BOOST_TEST(std::set(seen[k].begin(), seen[k].end()).size() == n);
        BOOST_TEST(seen[k].size() < n + 1 + 3);  // padding only
    }
    BOOST_TEST(refusal([&] {
                   (void)ferry::mix_sampler(sources, {}, states[0]);
               }).find("not merged") != std::string::npos);
}

// Weights and rules that cannot work are refused, naming the source and the reason.
BOOST_AUTO_TEST_CASE(refuses_bad_weights_and_endless_rules) {
    const auto make = [](std::vector<source> s, ferry::mix_options o = {}) {
        return [s = std::move(s), o] { (void)ferry::mix_sampler(s, o); };
    };
    BOOST_TEST(refusal(make({})).find("no sources") != std::string::npos);
    BOOST_TEST(refusal(make({{.size = 3, .weight = 1}, {.size = 3, .weight = -0.5}}))
                   .find("source 1 has a negative weight") != std::string::npos);
    BOOST_TEST(refusal(make({{.size = 3, .weight = std::numeric_limits<double>::quiet_NaN()}}))
                   .find("source 0 has weight nan") != std::string::npos);
    BOOST_TEST(refusal(make({{.size = 3, .weight = std::numeric_limits<double>::infinity()}}))
                   .find("a weight must be a finite number") != std::string::npos);
    BOOST_TEST(refusal(make({{.size = 3, .weight = 0}, {.size = 3, .weight = 0}}))
                   .find("every weight is 0") != std::string::npos);
    BOOST_TEST(refusal(make({{.size = 3, .weight = 1}}, {.rank = 2, .world_size = 2}))
                   .find("rank 2 is not below world_size 2") != std::string::npos);
    BOOST_TEST(refusal(make({{.size = 3, .weight = 1, .options = {.repeat = true}}},
                            {.stop = ferry::mix_stop::all_exhausted}))
                   .find("an epoch would never end") != std::string::npos);
    // Accepted: an endless mix, and repeating sources with a length.
    BOOST_TEST(refusal(make({{.size = 3, .weight = 1, .options = {.repeat = true}}},
                            {.epoch_length = 9})) == "");
    BOOST_TEST(refusal(make({{.size = 3, .weight = 1}}, {.stop = ferry::mix_stop::never})) == "");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
