// SPDX-License-Identifier: Apache-2.0
/// \file
/// batch_by's grouping against the simplest loop that follows its documented rule: `group_by_cost`
/// on thousands of seeded random windows, and whole batch_by pipelines (windows of `buffer`,
/// `drop_last`) on hundreds of random streams.

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cost_groups.hpp"
#include "support.hpp"

using namespace ferry_test;

namespace cost_groups_reference_test {

/// One batch as the reference makes it: its elements and whether the cost rule closed it.
struct reference_batch {
    std::vector<std::size_t> items;
    bool closed = false;
    friend bool operator==(const reference_batch&, const reference_batch&) = default;
};

/// The rule of `batch_by_options`, as plainly as it can be written: walk the elements in order;
/// one that costs more than `max_cost` is a closed batch of its own; any other joins the bucket
/// numbered by how many bounds are at or below its cost, and when the bucket's sum with it would
/// pass `max_cost`, the bucket goes out first, closed. At the end the buckets still open go out,
/// unclosed, in the order of their first elements.
std::vector<reference_batch> reference_groups(const std::vector<double>& costs,
                                              const std::vector<double>& bounds, double max_cost,
                                              std::size_t& oversized) {
    std::vector<reference_batch> out;
    std::vector<std::vector<std::size_t>> bucket(bounds.size() + 1);
    std::vector<double> sum(bounds.size() + 1, 0.0);
    oversized = 0;
    for (std::size_t i = 0; i < costs.size(); ++i) {
        if (costs[i] > max_cost) {
            out.push_back({{i}, true});
            ++oversized;
            continue;
        }
        std::size_t b = 0;
        for (const double bound : bounds) {
            if (bound <= costs[i]) ++b;
        }
        if (!bucket[b].empty() && sum[b] + costs[i] > max_cost) {
            out.push_back({bucket[b], true});
            bucket[b].clear();
            sum[b] = 0;
        }
        bucket[b].push_back(i);
        sum[b] += costs[i];
    }
    for (std::size_t i = 0; i < costs.size(); ++i) {
        for (auto& open : bucket) {
            if (!open.empty() && open.front() == i) {
                out.push_back({open, false});
                open.clear();
            }
        }
    }
    return out;
}

/// A random window: costs drawn from a few integers (ties with the bounds and with `max_cost`),
/// halves, and a spread of reals; ascending bounds (batch_by refuses repeats); a `max_cost` that
/// some costs pass.
struct random_window {
    std::vector<double> costs;
    std::vector<double> bounds;
    double max_cost = 1;
};

double random_cost(std::mt19937_64& rng) {
    switch (rng() % 4) {
        case 0:
            return static_cast<double>(rng() % 11);  // 0..10, ties likely
        case 1:
            return static_cast<double>(rng() % 21) * 0.5;  // halves
        case 2:
            return std::uniform_real_distribution<double>(0, 12)(rng);
        default:
            return static_cast<double>(rng() % 4);  // many cheap ones
    }
}

random_window make_window(std::mt19937_64& rng, std::size_t max_size) {
    random_window w;
    w.max_cost = static_cast<double>(1 + rng() % 12) * (rng() % 3 == 0 ? 0.5 : 1.0);
    const std::size_t n_bounds = rng() % 5;
    for (std::size_t i = 0; i < n_bounds; ++i) w.bounds.push_back(random_cost(rng));
    std::sort(w.bounds.begin(), w.bounds.end());
    w.bounds.erase(std::unique(w.bounds.begin(), w.bounds.end()), w.bounds.end());
    const std::size_t n = rng() % (max_size + 1);
    for (std::size_t i = 0; i < n; ++i) w.costs.push_back(random_cost(rng));
    return w;
}

std::string describe(const random_window& w) {
    std::ostringstream s;
    s << "max_cost " << w.max_cost << ", bounds {";
    for (const double b : w.bounds) s << b << ' ';
    s << "}, costs {";
    for (const double c : w.costs) s << c << ' ';
    s << '}';
    return s.str();
}

}  // namespace cost_groups_reference_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(cost_groups_reference)
using namespace cost_groups_reference_test;

// group_by_cost groups 5000 seeded random windows (0 to 40 elements, 0 to 4 bounds, costs that
// tie with bounds and max_cost, oversized ones) exactly as the plain loop of its rule does:
// the same batches, in the same order, closed alike, the same oversized count.
BOOST_AUTO_TEST_CASE(group_by_cost_equals_the_plain_rule_on_random_windows) {
    std::mt19937_64 rng(20240611);
    int differ = 0;
    for (int trial = 0; trial < 5000 && differ < 5; ++trial) {
        const auto w = make_window(rng, 40);
        std::size_t want_oversized = 0;
        const auto want = reference_groups(w.costs, w.bounds, w.max_cost, want_oversized);
        const auto got = ferry::detail::group_by_cost(w.costs, w.bounds, w.max_cost);
        std::vector<reference_batch> as_batches;
        for (std::size_t g = 0; g < got.batches.size(); ++g) {
            as_batches.push_back({got.batches[g], g < got.closed.size() && got.closed[g]});
        }
        const bool same = as_batches == want && got.closed.size() == got.batches.size() &&
                          got.oversized == want_oversized;
        if (!same) ++differ;
        BOOST_TEST(same, "trial " << trial << ": " << describe(w) << ": " << got.batches.size()
                                  << " batches (" << got.oversized << " oversized), the rule "
                                  << want.size() << " (" << want_oversized << ")");
    }
}

// A whole batch_by stage over 300 seeded random streams (0 to 70 elements, windows of 1 to 16,
// with and without drop_last) delivers exactly the rule's batches window by window: batches
// never span two windows, and drop_last leaves out the last window's open buckets only, whether
// the stream fills that window exactly or not.
BOOST_AUTO_TEST_CASE(batch_by_delivers_the_plain_rule_window_by_window) {
    std::mt19937_64 rng(77);
    int differ = 0;
    int filled_exactly = 0;
    for (int trial = 0; trial < 300 && differ < 5; ++trial) {
        const auto w = make_window(rng, 70);
        const std::size_t buffer = 1 + rng() % 16;
        const bool drop_last = rng() % 2 == 0;
        if (drop_last && !w.costs.empty() && w.costs.size() % buffer == 0) ++filled_exactly;
        std::vector<int> items(w.costs.size());
        for (std::size_t i = 0; i < items.size(); ++i) items[i] = static_cast<int>(i);
        std::vector<std::vector<int>> want;
        for (std::size_t start = 0; start < items.size(); start += buffer) {
            const std::size_t end = std::min(items.size(), start + buffer);
            const std::vector<double> window(w.costs.begin() + static_cast<std::ptrdiff_t>(start),
                                             w.costs.begin() + static_cast<std::ptrdiff_t>(end));
            std::size_t oversized = 0;
            for (const auto& b : reference_groups(window, w.bounds, w.max_cost, oversized)) {
                if (drop_last && end == items.size() && !b.closed) continue;
                auto& batch = want.emplace_back();
                for (const std::size_t i : b.items) batch.push_back(static_cast<int>(start + i));
            }
        }
        const auto costs = w.costs;
        auto p = ferry::from(items)
                     .batch_by([costs](int i) { return costs[static_cast<std::size_t>(i)]; },
                               {.max_cost = w.max_cost,
                                .buckets = w.bounds,
                                .buffer = buffer,
                                .drop_last = drop_last})
                     .build({.threads = 1});
        std::vector<std::vector<int>> got;
        for (auto& b : p) got.push_back(b);
        const bool same = got == want;
        if (!same) ++differ;
        BOOST_TEST(same, "trial " << trial << ": buffer " << buffer << ", drop_last " << drop_last
                                  << ", " << describe(w) << ": " << got.size()
                                  << " batches, the rule " << want.size());
    }
    // The sweep holds streams that fill their last window exactly under drop_last.
    BOOST_TEST(filled_exactly >= 5);
}

// drop_last leaves out the last window's open buckets when the stream fills that window exactly
// too (4 items, windows of 2: [0 1] is kept, [2 3] is the last window's open bucket), as when it
// does not (5 items: [4] is left out).
BOOST_AUTO_TEST_CASE(drop_last_leaves_out_the_last_windows_open_buckets) {
    for (const std::size_t n : {5U, 4U}) {
        std::vector<int> items(n);
        for (std::size_t i = 0; i < n; ++i) items[i] = static_cast<int>(i);
        auto p =
            ferry::from(items)
                .batch_by([](int) { return 1.0; }, {.max_cost = 10, .buffer = 2, .drop_last = true})
                .build({.threads = 1});
        std::vector<std::vector<int>> got;
        for (auto& b : p) got.push_back(b);
        const std::vector<std::vector<int>> want{{0, 1}, {2, 3}};
        BOOST_TEST((got == std::vector(want.begin(), want.begin() + (n == 5 ? 2 : 1))),
                   n << " items: " << got.size() << " batches");
        // The elements left out count as filtered: [4], or [2 3].
        const auto s = settled_stats(p);
        check_complete_accounting(s);
        BOOST_TEST(s.filtered == (n == 5 ? 1U : 2U), n << " items: " << s.filtered << " filtered");
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
