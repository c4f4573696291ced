// SPDX-License-Identifier: Apache-2.0
/// \file
/// How batch_by groups one window of elements by cost: a pure function of the costs, so that a
/// resumed window is grouped as the saved one was (tests/engine/batch_by.cpp checks it alone).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ferry::detail {

/// One window's batches, as indices into the window, in the order they are emitted.
struct cost_grouping {
    std::vector<std::vector<std::size_t>> batches;
    /// Per batch: closed by the cost rule (or oversized), not a bucket left over at the end.
    std::vector<bool> closed;
    std::size_t oversized = 0;  ///< batches of one element that costs more than `max_cost`
};

/// Walks `costs` in order: an element of cost c joins bucket `i`, the number of `bounds` at or
/// below c; a bucket whose summed cost would pass `max_cost` with it is emitted first (closed).
/// An element above `max_cost` is a closed batch of its own. At the end, the buckets still
/// open are emitted in the order they were started. Costs are finite and >= 0.
inline cost_grouping group_by_cost(const std::vector<double>& costs,
                                   const std::vector<double>& bounds, double max_cost) {
    cost_grouping out;
    std::vector<std::vector<std::size_t>> open(bounds.size() + 1);
    std::vector<double> sum(open.size(), 0.0);
    const auto emit = [&out](std::vector<std::size_t>& b, bool closed) {
        out.batches.push_back(std::move(b));
        out.closed.push_back(closed);
        b.clear();
    };
    for (std::size_t i = 0; i < costs.size(); ++i) {
        const double c = costs[i];
        if (c > max_cost) {
            std::vector<std::size_t> alone{i};
            emit(alone, true);
            ++out.oversized;
            continue;
        }
        const auto k = static_cast<std::size_t>(std::upper_bound(bounds.begin(), bounds.end(), c) -
                                                bounds.begin());
        if (!open[k].empty() && sum[k] + c > max_cost) {
            emit(open[k], true);
            sum[k] = 0;
        }
        open[k].push_back(i);
        sum[k] += c;
    }
    std::vector<std::size_t> left;
    for (std::size_t k = 0; k < open.size(); ++k) {
        if (!open[k].empty()) left.push_back(k);
    }
    std::sort(left.begin(), left.end(),
              [&open](std::size_t a, std::size_t b) { return open[a].front() < open[b].front(); });
    for (const std::size_t k : left) emit(open[k], false);
    return out;
}

}  // namespace ferry::detail
