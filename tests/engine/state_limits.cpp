// SPDX-License-Identifier: Apache-2.0
/// \file
/// Saved states are files a user can be handed: pipeline_state::parse refuses one whose parts
/// disagree, saying what disagrees, and what a state read back costs (merge, resumed_sampler) is
/// bounded by its own size, not by the numbers written in it.
#include <boost/test/unit_test.hpp>
#include <ferry/error.hpp>
#include <ferry/sampling.hpp>
#include <ferry/state.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace state_limits_test {

/// A merged state of a saved world of `world` ranks over `n` items with these rank positions.
std::string merged_text(std::uint64_t n, std::size_t world, const std::string& ranks) {
    return "ferry-state 1 epoch=0 position=0 children= failed=0 shape=map sampler=n:" +
           std::to_string(n) + ",seed:1,rank:0,world:" + std::to_string(world) +
           ",remainder:pad,shuffle:1 ranks=" + ranks + " merged=1";
}

/// The message `parse(text)` throws as ferry::invalid_argument (empty if it throws none).
std::string refusal(const std::string& text) {
    try {
        (void)ferry::pipeline_state::parse(text);
    } catch (const ferry::invalid_argument& e) {
        return e.what();
    }
    return {};
}

/// The rest of a merged epoch computed the long way: every global position of the saved world's
/// epoch that its ranks had not delivered, in order, dealt to rank `rank` of `world_size` (padded
/// by starting over, or cut), as dataset indices.
std::vector<std::uint64_t> brute_force_share(std::uint64_t n, const ferry::sampling& saved,
                                             const std::vector<std::uint64_t>& positions,
                                             std::size_t rank, std::size_t world_size,
                                             const std::vector<std::uint64_t>& window = {}) {
    const std::size_t w = positions.size();
    const std::uint64_t per_rank = ferry::sampler(n, saved).size();
    std::vector<std::uint64_t> rest;
    for (std::uint64_t g = 0; g < per_rank * w; ++g) {
        if (g / w >= positions[g % w] && std::find(window.begin(), window.end(), g) == window.end())
            rest.push_back(g);
    }
    std::vector<std::uint64_t> out;
    if (rest.empty()) return out;
    const std::uint64_t size = saved.remainder == ferry::remainder::pad
                                   ? (rest.size() + world_size - 1) / world_size
                                   : rest.size() / world_size;
    for (std::uint64_t i = 0; i < size; ++i) {
        const auto g = rest[(rank + i * world_size) % rest.size()];
        ferry::sampling at = saved;
        at.rank = g % w;
        out.push_back(ferry::sampler(n, at).index(0, g / w));
    }
    return out;
}

}  // namespace state_limits_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(state_limits)
using namespace state_limits_test;

// A 160-byte merged state whose one rank delivered 20 million items resumes the right items
// (what its share costs the heap is measured by state_limits_heap.cpp, outside ASan).
BOOST_AUTO_TEST_CASE(a_small_state_of_a_large_rest_resumes_the_right_items) {
    const auto text = merged_text(40'000'000, 2, "0,20000000");
    BOOST_TEST(text.size() < 200U);
    const auto st = ferry::pipeline_state::parse(text);
    BOOST_TEST(st.rank_positions().size() == 2U);
    const ferry::resumed_sampler share(st, 0, 1);
    // Rank 0 delivered nothing, rank 1 everything: the rest is rank 0's share, in order.
    BOOST_TEST(share.size() == 20'000'000U);
    const ferry::sampler rank0(40'000'000,
                               {.shuffle = true, .seed = 1, .rank = 0, .world_size = 2});
    for (const std::uint64_t i : {0ULL, 1ULL, 12'345ULL, 19'999'999ULL}) {
        BOOST_TEST(share.index(i) == rank0.index(0, i));
    }
}

// States whose parts disagree are refused by parse, with a message that says what disagrees.
BOOST_AUTO_TEST_CASE(a_state_whose_parts_disagree_is_refused) {
    BOOST_TEST(refusal(merged_text(40'000'000, 1, "0,20000000")) ==
               "pipeline_state::parse: the state holds 2 rank positions for a saved world of 1 "
               "ranks");
    BOOST_TEST(refusal(merged_text(10, 2, "0,6")) ==
               "pipeline_state::parse: rank 1's position 6 is past the saved epoch's 5 items per "
               "rank");
    BOOST_TEST(refusal("ferry-state 1 epoch=0 position=0 children= failed=0 shape=map "
                       "sampler=n:10,seed:1,rank:3,world:2,remainder:pad,shuffle:0") ==
               "pipeline_state::parse: the sampler's rank 3 is not below its world size 2");
    // A state taken while a merged epoch ran: its saved world's positions against that world.
    BOOST_TEST(refusal("ferry-state 1 epoch=0 position=3 children= failed=0 shape=map "
                       "sampler=n:10,seed:1,rank:0,world:1,remainder:pad,shuffle:0 ranks=1,2,3 "
                       "saved=n:10,seed:1,rank:0,world:2,remainder:pad,shuffle:0") ==
               "pipeline_state::parse: the state holds 3 rank positions for a saved world of 2 "
               "ranks");
    // What a state written by ferry holds still reads back.
    const auto good = merged_text(10, 2, "5,3");
    BOOST_TEST(ferry::pipeline_state::parse(good).serialize() == good);
}

// A state that would deliver an item twice or resume into an empty epoch is refused: the done
// positions of an unordered pipeline ascend and lie past the position, the position lies within
// the sampled epoch of this rank, and the shape holds no control character (quoted escaped).
BOOST_AUTO_TEST_CASE(a_state_that_would_repeat_or_skip_items_is_refused) {
    const std::string head = "ferry-state 1 epoch=0 position=4 children= failed=0 shape=map ";
    BOOST_TEST(refusal(head + "done=9,7") ==
               "pipeline_state::parse: the done positions are not ascending (7 after 9): an item "
               "would be delivered twice");
    BOOST_TEST(refusal(head + "done=7,7") ==
               "pipeline_state::parse: the done positions are not ascending (7 after 7): an item "
               "would be delivered twice");
    BOOST_TEST(refusal(head + "done=2,7") ==
               "pipeline_state::parse: done position 2 lies before the state's position 4");
    const std::string sampled = " sampler=n:10,seed:1,rank:1,world:2,remainder:drop,shuffle:0";
    BOOST_TEST(refusal("ferry-state 1 epoch=0 position=6 children= failed=0 shape=map" + sampled) ==
               "pipeline_state::parse: the position 6 is past the sampled epoch's 5 items for "
               "this rank");
    BOOST_TEST(refusal(head + "done=5" + sampled) ==
               "pipeline_state::parse: done position 5 is past the sampled epoch's 5 items for "
               "this rank");
    BOOST_TEST(refusal("ferry-state 1 epoch=0 position=0 children= failed=0 shape=map\x1b[2J") ==
               "pipeline_state::parse: the shape 'map\\x1b[2J' holds a control character");
    // At the end of its epoch, with items done past the position: still a state ferry writes.
    for (const auto* good : {"ferry-state 1 epoch=0 position=5 children= failed=0 shape=map "
                             "sampler=n:10,seed:1,rank:1,world:2,remainder:drop,shuffle:0",
                             "ferry-state 1 epoch=0 position=4 children= done=5,7 failed=0 "
                             "shape=map"}) {
        BOOST_TEST(ferry::pipeline_state::parse(good).serialize() == good);
    }
}

// A megabyte of junk in a field: the message quotes a few characters of it, escaped.
BOOST_AUTO_TEST_CASE(a_refusal_quotes_a_bounded_escaped_piece) {
    const auto message = refusal("ferry-state 1 epoch=\x1b[2J" + std::string(1 << 20, '7') +
                                 " position=0 children= failed=0 shape=map");
    BOOST_TEST(message.size() < 200U, message.size());
    BOOST_TEST(message.find("is not a number: '\\x1b[2J777") != std::string::npos, message);
}

// merge() refuses a state whose rank lies outside its world (made in code, not parsed) instead
// of writing past its positions.
BOOST_AUTO_TEST_CASE(merge_refuses_a_rank_outside_the_world) {
    std::vector<ferry::pipeline_state> states(2);
    for (std::size_t i = 0; i < states.size(); ++i) {
        states[i] = ferry::pipeline_state(0, 1);
        states[i].set_sampler(ferry::sampler_identity{
            .n = 10, .seed = 1, .rank = i == 0 ? std::size_t{0} : std::size_t{5}, .world_size = 2});
    }
    try {
        (void)ferry::pipeline_state::merge(states);
        BOOST_FAIL("merged a state of rank 5 in a world of 2");
    } catch (const ferry::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()) ==
                   "pipeline_state::merge: a state of rank 5 in a world of 2 ranks");
    }
}

// resumed_sampler's shares, swept over saved positions, new worlds, pad and drop, are the rest
// computed the long way (every global position listed).
BOOST_AUTO_TEST_CASE(resumed_shares_are_the_rest_listed_the_long_way) {
    const std::vector<std::vector<std::uint64_t>> spreads{
        {2, 5, 3}, {0, 0, 0}, {8, 8, 8}, {8, 0, 4}, {1, 7, 7}};
    for (const auto rem : {ferry::remainder::pad, ferry::remainder::drop}) {
        const ferry::sampling saved{.shuffle = true, .seed = 9, .world_size = 3, .remainder = rem};
        const std::uint64_t n = 23;  // 8 per rank padded, 7 dropped
        for (auto positions : spreads) {
            const std::uint64_t per_rank = ferry::sampler(n, saved).size();
            for (auto& p : positions) p = std::min(p, per_rank);
            std::string ranks;
            for (const auto p : positions) ranks += (ranks.empty() ? "" : ",") + std::to_string(p);
            const auto st = ferry::pipeline_state::parse(
                "ferry-state 1 epoch=0 position=0 children= failed=0 shape=map sampler=n:23,"
                "seed:9,rank:0,world:3,remainder:" +
                std::string(rem == ferry::remainder::pad ? "pad" : "drop") +
                ",shuffle:1 ranks=" + ranks + " merged=1");
            for (const std::size_t world : {1U, 2U, 4U}) {
                for (std::size_t r = 0; r < world; ++r) {
                    const ferry::resumed_sampler share(st, r, world);
                    std::vector<std::uint64_t> got;
                    for (std::uint64_t i = 0; i < share.size(); ++i) got.push_back(share.index(i));
                    BOOST_TEST(got == brute_force_share(n, saved, positions, r, world),
                               boost::test_tools::per_element());
                }
            }
        }
    }
}

// With a batch_by window's delivered positions left out (the merged state's `window`, as the
// saved world's globals), the shares are still the rest listed the long way, minus those.
BOOST_AUTO_TEST_CASE(resumed_shares_leave_out_a_windows_delivered_positions) {
    const ferry::sampling saved{.shuffle = true, .seed = 9, .world_size = 3};
    const std::uint64_t n = 23;
    const std::vector<std::uint64_t> positions{2, 5, 3};
    // Rank 0 delivered its positions 3 and 5 (globals 9, 15), rank 1 its 6 (19), rank 2 its 3,
    // 4 and 7 (11, 14, 23): all past their ranks' positions.
    const std::vector<std::uint64_t> window{9, 11, 14, 15, 19, 23};
    const auto st = ferry::pipeline_state::parse(
        "ferry-state 1 epoch=0 position=0 children= failed=0 shape=batch_by sampler=n:23,seed:9,"
        "rank:0,world:3,remainder:pad,shuffle:1 ranks=2,5,3 merged=1 window=9,11,14,15,19,23");
    BOOST_TEST(st.window() == window, boost::test_tools::per_element());
    // 24 globals, 10 delivered before the positions, 6 in windows: 8 left.
    std::size_t total = 0;
    for (const std::size_t world : {1U, 2U, 3U, 5U}) {
        total = 0;
        for (std::size_t r = 0; r < world; ++r) {
            const ferry::resumed_sampler share(st, r, world);
            std::vector<std::uint64_t> got;
            for (std::uint64_t i = 0; i < share.size(); ++i) got.push_back(share.index(i));
            BOOST_TEST(got == brute_force_share(n, saved, positions, r, world, window),
                       boost::test_tools::per_element());
            total += got.size();
        }
        BOOST_TEST(total == (8 + world - 1) / world * world);
    }
    // A window position its rank had delivered, or out of order, is refused at parse.
    const std::string head =
        "ferry-state 1 epoch=0 position=0 children= failed=0 shape=batch_by sampler=n:23,seed:9,"
        "rank:0,world:3,remainder:pad,shuffle:1 ranks=2,5,3 merged=1 window=";
    BOOST_TEST(refusal(head + "3").find("window position 3 was delivered by rank 0") !=
               std::string::npos);
    BOOST_TEST(refusal(head + "11,9").find("not ascending") != std::string::npos);
    BOOST_TEST(refusal("ferry-state 1 epoch=0 position=7 children=1 failed=0 shape=batch_by "
                       "window=5")
                   .find("window position 5 lies before the state's position 7") !=
               std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
