// SPDX-License-Identifier: Apache-2.0
/// \file
/// Elastic resume: the ranks' states of one run merged (pipeline_state::merge), and the rest of
/// the epoch delivered by a world of another size. Ranks are pipelines in one process here; the
/// MPI test does the same across processes.

#include <boost/test/unit_test.hpp>

#include <map>

#include "support.hpp"

using namespace ferry_test;

namespace elastic_test {

constexpr int n = 103;

std::vector<int> dataset() {
    std::vector<int> v(n);
    std::iota(v.begin(), v.end(), 0);
    return v;
}

ferry::sampling sampled(std::size_t rank, std::size_t world, ferry::remainder rem) {
    return {.shuffle = true, .seed = 5, .rank = rank, .world_size = world, .remainder = rem};
}

/// Rank `rank` of `world`: items in batches of 4; each item checks that item_info names it.
ferry::pipeline<std::vector<int>> rank_pipeline(const std::vector<int>& data, std::size_t rank,
                                                std::size_t world, ferry::remainder rem,
                                                std::optional<ferry::pipeline_state> from) {
    return ferry::from(data, sampled(rank, world, rem))
        .map(
            [&data](int x, const ferry::item_info& info) {
                if (data[info.index] != x) throw std::logic_error("item_info names another item");
                return x;
            },
            3)
        .batch(4)
        .build({.threads = 2, .resume_from = std::move(from)});
}

/// The saved run: rank r of 4 takes `steps[r]` batches of epoch 1 (after a whole epoch 0) and
/// saves its state; returns the states and appends what each delivered in epoch 1.
std::vector<ferry::pipeline_state> saved_run(const std::vector<int>& data,
                                             const std::vector<int>& steps, ferry::remainder rem,
                                             std::vector<int>& delivered) {
    std::vector<ferry::pipeline_state> states;
    for (std::size_t r = 0; r < steps.size(); ++r) {
        auto p = rank_pipeline(data, r, steps.size(), rem, std::nullopt);
        for (auto& b : p) (void)b;  // epoch 0
        int taken = 0;
        for (auto& b : p) {
            delivered.insert(delivered.end(), b.begin(), b.end());
            if (++taken == steps[static_cast<std::size_t>(r)]) {
                states.push_back(ferry::pipeline_state::parse(p.state().serialize()));
                break;
            }
        }
    }
    return states;
}

/// The merged state of a padded saved_run (when what the ranks delivered does not matter).
ferry::pipeline_state merged_run(const std::vector<int>& data, const std::vector<int>& steps) {
    std::vector<int> delivered;
    return ferry::pipeline_state::merge(saved_run(data, steps, ferry::remainder::pad, delivered));
}

std::map<int, int> counts(const std::vector<int>& items) {
    std::map<int, int> c;
    for (const int x : items) ++c[x];
    return c;
}

}  // namespace elastic_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(elastic)
using namespace elastic_test;

BOOST_AUTO_TEST_CASE(four_ranks_saved_three_resume_and_every_item_comes_once) {
    const auto data = dataset();
    for (const std::size_t new_world : {3U, 4U, 1U, 5U}) {
        BOOST_TEST_CONTEXT("resumed on " << new_world << " ranks") {
            std::vector<int> delivered;
            // Ranks a few steps apart, as they are when one saves a little later.
            const auto states = saved_run(data, {3, 4, 3, 5}, ferry::remainder::pad, delivered);
            const auto before = delivered.size();
            // Merge in any order.
            const auto merged =
                ferry::pipeline_state::merge({states[2], states[0], states[3], states[1]});
            BOOST_TEST(merged.merged());
            BOOST_TEST(merged.epoch() == 1U);
            BOOST_TEST(merged.rank_positions() == (std::vector<std::uint64_t>{12, 16, 12, 20}),
                       boost::test_tools::per_element());
            const auto blob = merged.serialize();
            BOOST_TEST((ferry::pipeline_state::parse(blob) == merged));
            std::vector<std::size_t> shares;
            for (std::size_t r = 0; r < new_world; ++r) {
                auto p = rank_pipeline(data, r, new_world, ferry::remainder::pad,
                                       ferry::pipeline_state::parse(blob));
                std::size_t mine = 0;
                for (auto& b : p) {
                    delivered.insert(delivered.end(), b.begin(), b.end());
                    mine += b.size();
                }
                shares.push_back(mine);
            }
            // Equal shares on the new ranks.
            const bool equal = std::adjacent_find(shares.begin(), shares.end(),
                                                  std::not_equal_to<>()) == shares.end();
            BOOST_TEST(equal);
            // The old epoch laid out 4 x 26 = 104 positions (1 padded); the rest of it,
            // 104 - 60 = 44, is split evenly over the new ranks (padded up to a multiple).
            const std::size_t rest = 104 - before;
            const std::size_t share = (rest + new_world - 1) / new_world;
            BOOST_TEST(shares.front() == share);
            const auto c = counts(delivered);
            BOOST_TEST(c.size() == std::size_t{n});  // every item of the epoch
            std::size_t repeats = 0;
            for (const auto& [item, k] : c) repeats += static_cast<std::size_t>(k - 1);
            // Repeats only where padding repeats: 1 in the old layout, share * w - rest new.
            BOOST_TEST(repeats == 1 + share * new_world - rest);
        }
    }
}

// Elastic resume against sequences written out by hand from the documented rule (the rest is
// every undelivered position of the saved epoch, in its order; new rank r takes the rest's
// positions r, r + w, ..., started over to even the counts), not against resumed_sampler.
BOOST_AUTO_TEST_CASE(elastic_resume_gives_the_hand_written_shares) {
    using shares = std::vector<std::vector<int>>;
    const auto data = dataset();
    const std::vector<int> ten(data.begin(), data.begin() + 10);
    // Two ranks take `taken[r]` items of epoch 0 and save; four (or three) ranks resume.
    const auto run = [&](bool shuffle, const std::vector<std::size_t>& taken, std::size_t world) {
        std::vector<ferry::pipeline_state> states;
        for (std::size_t r = 0; r < taken.size(); ++r) {
            auto p = ferry::from(
                         ten,
                         ferry::sampling{
                             .shuffle = shuffle, .seed = 42, .rank = r, .world_size = taken.size()})
                         .build({.threads = 2});
            std::size_t k = 0;
            for (const int x : p) {
                (void)x;
                if (++k == taken[r]) {
                    states.push_back(ferry::pipeline_state::parse(p.state().serialize()));
                    break;
                }
            }
        }
        const auto merged = ferry::pipeline_state::merge(states);
        shares out;
        for (std::size_t r = 0; r < world; ++r) {
            auto p =
                ferry::from(
                    ten,
                    ferry::sampling{.shuffle = shuffle, .seed = 42, .rank = r, .world_size = world})
                    .build({.threads = 2, .resume_from = merged});
            out.push_back(drain(p));
        }
        return out;
    };
    // In order: rank 0 of 2 delivered positions 0, 2, 4; rank 1 position 1. The rest is
    // 3, 5, 6, 7, 8, 9, started over (3, 5) to 8 = 4 x 2 positions.
    BOOST_TEST((run(false, {3, 1}, 4) == (shares{{3, 8}, {5, 9}, {6, 3}, {7, 5}})));
    // Shuffled, epoch 0 is 1 8 3 2 4 0 6 5 9 7 (pinned): both ranks delivered two positions
    // (1, 3 and 8, 2); the rest 4 0 6 5 9 7 goes to three ranks.
    BOOST_TEST((run(true, {2, 2}, 3) == (shares{{4, 5}, {0, 9}, {6, 7}})));
}

BOOST_AUTO_TEST_CASE(with_drop_no_item_comes_twice) {
    const auto data = dataset();
    std::vector<int> delivered;
    const auto states = saved_run(data, {2, 2, 2, 2}, ferry::remainder::drop, delivered);
    const auto merged = ferry::pipeline_state::merge(states);
    for (std::size_t r = 0; r < 3; ++r) {
        auto p = rank_pipeline(data, r, 3, ferry::remainder::drop, merged);
        for (auto& b : p) delivered.insert(delivered.end(), b.begin(), b.end());
    }
    const auto c = counts(delivered);
    for (const auto& [item, k] : c) BOOST_TEST(k == 1, "item " << item << " came " << k << "x");
    // The old layout dropped 3 (4 x 25 = 100 of 103); the rest, 100 - 32 = 68, drops 2 on 3.
    BOOST_TEST(delivered.size() == 32U + 66U);
}

BOOST_AUTO_TEST_CASE(later_epochs_are_the_new_worlds_usual_ones) {
    const auto data = dataset();
    const auto merged = merged_run(data, {1, 1, 1, 1});
    auto resumed = rank_pipeline(data, 1, 3, ferry::remainder::pad, merged);
    for (auto& b : resumed) (void)b;  // the rest of epoch 1
    auto fresh = rank_pipeline(data, 1, 3, ferry::remainder::pad, std::nullopt);
    for (int e = 0; e < 2; ++e) {
        for (auto& b : fresh) (void)b;  // epochs 0 and 1
    }
    BOOST_TEST(drain_flat(resumed) == drain_flat(fresh), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_merged_epoch_resumes_exactly_again_on_the_new_world) {
    const auto data = dataset();
    const auto merged = merged_run(data, {2, 3, 2, 2});
    auto whole = rank_pipeline(data, 2, 3, ferry::remainder::pad, merged);
    const auto all = drain_flat(whole);
    BOOST_REQUIRE(all.size() > 8U);
    // Saved again after two batches of the merged epoch, on the new world.
    std::vector<int> got;
    std::optional<ferry::pipeline_state> again;
    {
        auto p = rank_pipeline(data, 2, 3, ferry::remainder::pad, merged);
        for (auto& b : p) {
            got.insert(got.end(), b.begin(), b.end());
            if (got.size() == 8) {
                again = ferry::pipeline_state::parse(p.state().serialize());
                break;
            }
        }
    }
    BOOST_REQUIRE(again.has_value());
    BOOST_TEST(!again->merged());
    BOOST_TEST(again->rank_positions() == merged.rank_positions(),
               boost::test_tools::per_element());
    BOOST_TEST(again->position() == 8U);
    auto p = rank_pipeline(data, 2, 3, ferry::remainder::pad, again);
    const auto rest = drain_flat(p);
    got.insert(got.end(), rest.begin(), rest.end());
    BOOST_TEST(got == all, boost::test_tools::per_element());
    // Such a state belongs to rank 2 of 3: another rank may not take it, nor may it be merged.
    expect_throw<ferry::invalid_argument>(
        [&] { (void)rank_pipeline(data, 1, 3, ferry::remainder::pad, again); });
    expect_throw<ferry::invalid_argument>([&] {
        (void)ferry::pipeline_state::merge({*again, *again, *again});
    });
}

BOOST_AUTO_TEST_CASE(merge_refuses_states_that_are_not_one_run) {
    const auto data = dataset();
    std::vector<int> delivered;
    const auto states = saved_run(data, {1, 2, 1, 1}, ferry::remainder::pad, delivered);
    const auto says = [](const std::vector<ferry::pipeline_state>& s, const std::string& text) {
        const auto e = expect_throw<ferry::invalid_argument>(
            [&] { (void)ferry::pipeline_state::merge(s); }, text);
        BOOST_TEST(e.what().find(text) != std::string::npos, e.what());
    };
    says({}, "no states");
    says({states[0], states[1], states[2]}, "3 states for a world of 4 ranks");
    says({states[0], states[1], states[2], states[2]}, "two states of rank 2");
    auto other_epoch = states[3];
    other_epoch = ferry::pipeline_state::parse([&] {
        auto t = other_epoch.serialize();
        t.replace(t.find("epoch=1"), 7, "epoch=2");
        return t;
    }());
    says({states[0], states[1], states[2], other_epoch}, "in epoch 2");
    says({ferry::pipeline_state(1, 3)}, "not of a sampled pipeline");
    // A merged state resumes a pipeline of the same dataset only.
    const auto merged = ferry::pipeline_state::merge(states);
    const auto other = std::vector<int>(n + 1, 0);
    const auto e = expect_throw<ferry::invalid_argument>(
        [&] { (void)rank_pipeline(other, 0, 2, ferry::remainder::pad, merged); });
    BOOST_TEST(e.what().find("only rank and world_size may differ") != std::string::npos, e.what());
}

BOOST_AUTO_TEST_CASE(resumed_sampler_gives_the_same_share_as_the_pipeline) {
    const auto data = dataset();
    const auto merged = merged_run(data, {2, 2, 3, 2});
    const ferry::resumed_sampler share(merged, 1, 2);
    auto p = rank_pipeline(data, 1, 2, ferry::remainder::pad, merged);
    const auto got = drain_flat(p);
    BOOST_REQUIRE(got.size() == share.size());
    for (std::uint64_t i = 0; i < share.size(); ++i) {
        BOOST_TEST(got[i] == data[share.index(i)]);
    }
    expect_throw<ferry::invalid_argument>([&] { (void)ferry::resumed_sampler(merged, 2, 2); });
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
