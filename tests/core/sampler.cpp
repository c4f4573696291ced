// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::sampler: every epoch a permutation, split over the ranks disjointly, completely and
/// evenly (pad and drop), the same on every machine, new each epoch and seed; n = 0, 1, fewer
/// items than ranks, a billion items; bad options rejected.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <ferry/sampling.hpp>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "../support/ops_support.hpp"

using ops_test::expect_throw;

namespace sampler_test {

using indices = std::vector<std::uint64_t>;

indices epoch_of(const ferry::sampler& s, std::uint64_t epoch) {
    indices out;
    out.reserve(s.size());
    for (std::uint64_t i = 0; i < s.size(); ++i) out.push_back(s.index(epoch, i));
    return out;
}

/// The whole epoch by position, put together from every rank's part (rank r has positions r,
/// r + w, r + 2w, ...). Checks on the way that every rank has the same count.
indices positions(std::uint64_t n, ferry::sampling o, std::uint64_t epoch) {
    const std::size_t w = o.world_size;
    std::vector<indices> parts;
    for (std::size_t r = 0; r < w; ++r) {
        o.rank = r;
        parts.push_back(epoch_of(ferry::sampler(n, o), epoch));
        BOOST_TEST(parts.back().size() == parts.front().size());
    }
    indices all(parts.front().size() * w);
    for (std::size_t r = 0; r < w; ++r) {
        for (std::size_t i = 0; i < parts[r].size(); ++i) all[r + i * w] = parts[r][i];
    }
    return all;
}

bool is_permutation_of_range(indices v) {
    std::sort(v.begin(), v.end());
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] != i) return false;
    }
    return true;
}

}  // namespace sampler_test

// The sampler is a small value: copy it to another thread or keep it in a state for free.
static_assert(std::is_trivially_copyable_v<ferry::sampler>);
static_assert(sizeof(ferry::sampler) <= 64);

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(sampler)
using namespace sampler_test;

// Over many (n, world, remainder, shuffle, seed, epoch): equal counts (ceil or floor of n/w),
// indices below n; pad: the first n positions are a permutation of [0, n) and the rest repeat it
// from its start (so duplicates only in the padding, and the ranks' union is all of [0, n));
// drop: w * floor(n/w) distinct indices (disjoint ranks, no index twice), the same as pad's first
// positions (only the tail is dropped).
BOOST_AUTO_TEST_CASE(ranks_split_every_epoch_disjointly_completely_and_evenly) {
    const std::uint64_t sizes[] = {0, 1, 2, 3, 5, 7, 16, 100, 101, 1000, 1023, 1024, 1025};
    const std::size_t worlds[] = {1, 2, 3, 4, 8};
    for (const std::uint64_t n : sizes) {
        for (const std::size_t w : worlds) {
            for (const bool shuffle : {false, true}) {
                for (const std::uint64_t seed : {0ULL, 42ULL}) {
                    for (const std::uint64_t epoch : {0ULL, 1ULL, 5ULL}) {
                        BOOST_TEST_CONTEXT("n " << n << ", world " << w << ", shuffle " << shuffle
                                                << ", seed " << seed << ", epoch " << epoch) {
                            const ferry::sampling o{
                                .shuffle = shuffle, .seed = seed, .world_size = w};
                            const auto pad = positions(n, o, epoch);
                            auto od = o;
                            od.remainder = ferry::remainder::drop;
                            const auto drop = positions(n, od, epoch);

                            BOOST_TEST(pad.size() == (n + w - 1) / w * w);
                            BOOST_TEST(drop.size() == n / w * w);
                            BOOST_TEST(ferry::sampler(n, o).size() == (n + w - 1) / w);
                            BOOST_TEST(ferry::sampler(n, od).size() == n / w);

                            const indices first(
                                pad.begin(),
                                pad.begin() + static_cast<std::ptrdiff_t>(
                                                  std::min<std::uint64_t>(n, pad.size())));
                            BOOST_TEST(is_permutation_of_range(first));
                            for (std::size_t p = n; p < pad.size(); ++p) {
                                BOOST_TEST(pad[p] == pad[(p - n) % n]);
                            }
                            BOOST_TEST(std::set<std::uint64_t>(drop.begin(), drop.end()).size() ==
                                       drop.size());
                            BOOST_TEST(std::equal(drop.begin(), drop.end(), pad.begin()));
                        }
                    }
                }
            }
        }
    }
}

// Without shuffle, rank r of w gets r, r + w, r + 2w, ...: index order, whatever the seed and
// epoch.
BOOST_AUTO_TEST_CASE(unshuffled_is_index_order) {
    const ferry::sampler one(10, {.seed = 99});
    for (const std::uint64_t epoch : {0ULL, 3ULL}) {
        BOOST_TEST(epoch_of(one, epoch) == (indices{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}),
                   boost::test_tools::per_element());
    }
    BOOST_TEST(
        epoch_of(ferry::sampler(10, {.rank = 1, .world_size = 3}), 2) == (indices{1, 4, 7, 0}),
        boost::test_tools::per_element());
    BOOST_TEST(epoch_of(ferry::sampler(
                            10, {.rank = 1, .world_size = 3, .remainder = ferry::remainder::drop}),
                        2) == (indices{1, 4, 7}),
               boost::test_tools::per_element());
}

// The permutations are pinned: a saved state names positions, so a change of the shuffle for a
// given (n, seed, epoch) would make every checkpoint taken before it resume other items. These
// values were computed once and are kept; never update them without a state format version.
BOOST_AUTO_TEST_CASE(permutations_are_pinned_across_versions) {
    BOOST_TEST(epoch_of(ferry::sampler(10, {.shuffle = true, .seed = 42}), 0) ==
                   (indices{1, 8, 3, 2, 4, 0, 6, 5, 9, 7}),
               boost::test_tools::per_element());
    BOOST_TEST(epoch_of(ferry::sampler(10, {.shuffle = true, .seed = 42}), 1) ==
                   (indices{1, 3, 4, 0, 9, 7, 2, 6, 8, 5}),
               boost::test_tools::per_element());
    BOOST_TEST(
        epoch_of(ferry::sampler(45, {.shuffle = true, .seed = 7, .rank = 1, .world_size = 4}), 1) ==
            (indices{30, 35, 17, 27, 25, 15, 39, 28, 42, 16, 9, 7}),
        boost::test_tools::per_element());
    const ferry::sampler thousand(1000, {.shuffle = true, .seed = 7});
    const indices first{537, 186, 422, 28, 704, 874, 308, 936, 345, 219, 846, 57};
    for (std::size_t i = 0; i < first.size(); ++i) BOOST_TEST(thousand.index(3, i) == first[i]);
    const ferry::sampler billion(1000000007ULL, {.shuffle = true, .seed = 123});
    const indices big{767088248, 342804217, 40572557, 786846681, 120740784, 612310470};
    for (std::size_t i = 0; i < big.size(); ++i) BOOST_TEST(billion.index(0, i) == big[i]);
}

// The order is a pure function of (n, options, epoch): two samplers made apart agree, as do
// copies (every machine computes the same permutation).
BOOST_AUTO_TEST_CASE(same_options_give_the_same_order) {
    const ferry::sampling o{.shuffle = true, .seed = 7, .rank = 2, .world_size = 5};
    const ferry::sampler a(12345, o);
    const ferry::sampler b(12345, o);
    const ferry::sampler c = a;
    for (const std::uint64_t epoch : {0ULL, 1ULL, 1000000ULL}) {
        const auto want = epoch_of(a, epoch);
        BOOST_TEST(epoch_of(b, epoch) == want, boost::test_tools::per_element());
        BOOST_TEST(epoch_of(c, epoch) == want, boost::test_tools::per_element());
    }
}

// Each epoch and each seed has its own permutation; a rank's share of the items changes from
// epoch to epoch too (not only their order).
BOOST_AUTO_TEST_CASE(each_epoch_and_seed_has_its_own_order) {
    std::set<indices> orders;
    for (std::uint64_t epoch = 0; epoch < 10; ++epoch) {
        orders.insert(epoch_of(ferry::sampler(1000, {.shuffle = true, .seed = 1}), epoch));
    }
    for (std::uint64_t seed = 2; seed < 12; ++seed) {
        orders.insert(epoch_of(ferry::sampler(1000, {.shuffle = true, .seed = seed}), 0));
    }
    BOOST_TEST(orders.size() == 20u);

    indices identity(1000);
    std::iota(identity.begin(), identity.end(), 0);
    BOOST_TEST(orders.count(identity) == 0u);

    const ferry::sampler rank0(1000, {.shuffle = true, .seed = 1, .world_size = 4});
    const auto share = [&](std::uint64_t epoch) {
        const auto v = epoch_of(rank0, epoch);
        return std::set<std::uint64_t>(v.begin(), v.end());
    };
    BOOST_TEST((share(0) != share(1)));
}

// Over many epochs, an item lands at every position equally often: the shuffle is not biased
// (10 000 epochs; n = 5 and 10 are where a bare Feistel network with cycle walking was: some
// positions 20% too likely).
BOOST_AUTO_TEST_CASE(positions_are_spread_evenly_over_epochs) {
    for (const std::uint64_t n : {5ULL, 10ULL}) {
        const ferry::sampler s(n, {.shuffle = true, .seed = 5});
        std::vector<int> where_0_lands(n, 0);
        for (std::uint64_t epoch = 0; epoch < 10000; ++epoch) {
            for (std::uint64_t i = 0; i < n; ++i) {
                if (s.index(epoch, i) == 0) ++where_0_lands[i];
            }
        }
        const double expected = 10000.0 / static_cast<double>(n);
        for (std::size_t i = 0; i < n; ++i) {
            // At least 5 standard deviations either side.
            BOOST_TEST_CONTEXT("n " << n << ", position " << i) {
                BOOST_TEST(where_0_lands[i] > expected * 0.85);
                BOOST_TEST(where_0_lands[i] < expected * 1.15);
            }
        }
    }
}

// n = 0 has no items under either rule; one item over four ranks is padded to one each (pad) or
// dropped (drop); three items over four ranks: the fourth rank repeats the first.
BOOST_AUTO_TEST_CASE(tiny_datasets_and_more_ranks_than_items) {
    for (const auto rem : {ferry::remainder::pad, ferry::remainder::drop}) {
        const ferry::sampler empty(0,
                                   {.shuffle = true, .rank = 2, .world_size = 3, .remainder = rem});
        BOOST_TEST(empty.size() == 0u);
        BOOST_TEST(expect_throw<ferry::invalid_argument>([&] { (void)empty.index(0, 0); })
                       .what()
                       .find("size() 0") != std::string::npos);
    }
    for (std::size_t r = 0; r < 4; ++r) {
        const ferry::sampler one(1, {.shuffle = true, .seed = 3, .rank = r, .world_size = 4});
        BOOST_TEST(one.size() == 1u);
        BOOST_TEST(one.index(7, 0) == 0u);
        BOOST_TEST(
            ferry::sampler(1, {.rank = r, .world_size = 4, .remainder = ferry::remainder::drop})
                .size() == 0u);
    }
    const auto three = positions(3, {.shuffle = true, .seed = 8, .world_size = 4}, 1);
    BOOST_TEST(three.size() == 4u);
    BOOST_TEST(is_permutation_of_range(indices(three.begin(), three.begin() + 3)));
    BOOST_TEST(three[3] == three[0]);
}

// A billion items (and a dataset near 2^64): windows at the start, middle and end of a rank's
// epoch hold distinct indices below n, and two ranks' windows share none; nothing is
// materialised (the sampler is a few words, see the static_asserts above).
BOOST_AUTO_TEST_CASE(huge_datasets_shuffle_without_a_table) {
    const std::uint64_t billion = 1'000'000'000;
    const std::uint64_t near_max = std::numeric_limits<std::uint64_t>::max() - 8;
    for (const std::uint64_t n : {billion, near_max}) {
        BOOST_TEST_CONTEXT("n " << n) {
            const ferry::sampling o{.shuffle = true, .seed = 11, .rank = 3, .world_size = 8};
            const ferry::sampler s(n, o);
            auto o4 = o;
            o4.rank = 4;
            const ferry::sampler s4(n, o4);
            BOOST_TEST(s.size() == (n + 7) / 8);
            std::set<std::uint64_t> seen;
            std::set<std::uint64_t> seen4;
            const std::uint64_t window = 20000;
            for (const std::uint64_t start : {std::uint64_t{0}, s.size() / 2, s.size() - window}) {
                for (std::uint64_t i = start; i < start + window; ++i) {
                    const auto x = s.index(2, i);
                    BOOST_TEST_REQUIRE(x < n);
                    seen.insert(x);
                    seen4.insert(s4.index(2, i));
                }
            }
            BOOST_TEST(seen.size() == 3 * window);
            BOOST_TEST(seen4.size() == 3 * window);
            std::vector<std::uint64_t> both;
            std::set_intersection(seen.begin(), seen.end(), seen4.begin(), seen4.end(),
                                  std::back_inserter(both));
            BOOST_TEST(both.empty());
        }
    }
}

// world_size 0, a rank outside the world, a dataset too large to pad and an index past size()
// are ferry::invalid_argument naming the values.
BOOST_AUTO_TEST_CASE(bad_options_are_rejected_naming_the_values) {
    const auto zero =
        expect_throw<ferry::invalid_argument>([] { (void)ferry::sampler(10, {.world_size = 0}); });
    BOOST_TEST(zero.what().find("world_size is 0") != std::string::npos);
    const auto rank = expect_throw<ferry::invalid_argument>(
        [] { (void)ferry::sampler(10, {.rank = 4, .world_size = 4}); });
    BOOST_TEST(rank.what().find("rank 4 is not below world_size 4") != std::string::npos);
    const auto huge = expect_throw<ferry::invalid_argument>(
        [] { (void)ferry::sampler(std::numeric_limits<std::uint64_t>::max(), {.world_size = 2}); });
    BOOST_TEST(huge.what().find("too large") != std::string::npos);
    const auto past = expect_throw<ferry::invalid_argument>(
        [] { (void)ferry::sampler(10, {.rank = 1, .world_size = 4}).index(0, 3); });
    BOOST_TEST(past.what().find("i 3") != std::string::npos);
    BOOST_TEST(past.what().find("size() 3") != std::string::npos);
}

// The identity holds every input of the order but the epoch: equal for the same options, unequal
// when any one of n, seed, rank, world size, remainder or shuffle differs.
BOOST_AUTO_TEST_CASE(identity_tells_samplers_apart) {
    const ferry::sampling o{.shuffle = true, .seed = 4, .rank = 1, .world_size = 2};
    const auto id = ferry::sampler(100, o).identity();
    BOOST_TEST((id == ferry::sampler(100, o).identity()));
    BOOST_TEST(id.n == 100u);
    BOOST_TEST(id.seed == 4u);
    auto changed = [&](auto edit) {
        auto x = o;
        std::uint64_t n = 100;
        edit(x, n);
        return ferry::sampler(n, x).identity() != id;
    };
    BOOST_TEST(changed([](ferry::sampling&, std::uint64_t& n) { n = 101; }));
    BOOST_TEST(changed([](ferry::sampling& x, std::uint64_t&) { x.seed = 5; }));
    BOOST_TEST(changed([](ferry::sampling& x, std::uint64_t&) { x.rank = 0; }));
    BOOST_TEST(changed([](ferry::sampling& x, std::uint64_t&) { x.world_size = 3; }));
    BOOST_TEST(
        changed([](ferry::sampling& x, std::uint64_t&) { x.remainder = ferry::remainder::drop; }));
    BOOST_TEST(changed([](ferry::sampling& x, std::uint64_t&) { x.shuffle = false; }));
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
