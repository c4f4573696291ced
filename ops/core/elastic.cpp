// SPDX-License-Identifier: Apache-2.0
/// \file
/// Elastic resume: merging the ranks' states of one distributed run, and the new ranks' shares
/// of what the saved ranks had not delivered.
///
/// In the saved world of w ranks, rank r's position i is the epoch's global position r + i * w
/// (ferry::sampler's layout), so rank r at position p_r has delivered the globals r, r + w, ...,
/// r + (p_r - 1) * w. With m = min p_r, everything before m * w is delivered; between m * w and
/// max p_r * w lie the few globals the ranks ahead have delivered. The rest, in global order, is
/// split over the new world the way a sampler splits an epoch.

#include <algorithm>
#include <numeric>
#include <set>

#include "ferry/error.hpp"
#include "ferry/pipeline_state.hpp"

namespace ferry {
namespace {

[[noreturn]] void refuse(const std::string& why) {
    throw invalid_argument("pipeline_state::merge: " + why);
}

bool same_dataset(const sampler_identity& a, const sampler_identity& b) {
    return a.n == b.n && a.seed == b.seed && a.shuffle == b.shuffle && a.remainder == b.remainder;
}

}  // namespace

pipeline_state pipeline_state::merge(const std::vector<pipeline_state>& states) {
    if (states.empty()) refuse("no states");
    const pipeline_state& first = states.front();
    if (!first.sampler_) {
        refuse(
            "the states are not of a sampled pipeline (ferry::from(dataset, sampling)); only "
            "those can be split anew over another world");
    }
    const std::size_t w = first.sampler_->world_size;
    if (states.size() != w) {
        refuse(std::to_string(states.size()) + " states for a world of " + std::to_string(w) +
               " ranks: merge needs every rank's");
    }
    std::vector<std::uint64_t> positions(w, 0);
    std::set<std::size_t> seen;
    std::vector<std::uint64_t> window;
    std::uint64_t failed = 0;
    for (const auto& s : states) {
        if (!s.sampler_ || !same_dataset(*s.sampler_, *first.sampler_) ||
            s.sampler_->world_size != w) {
            refuse("the states are of different datasets or worlds");
        }
        if (s.shape_ != first.shape_) {
            refuse("the states are of pipelines of different stages ('" + first.shape_ + "' and '" +
                   s.shape_ + "')");
        }
        if (s.epoch_ != first.epoch_) {
            refuse("rank " + std::to_string(first.sampler_->rank) + " is in epoch " +
                   std::to_string(first.epoch_) + ", rank " + std::to_string(s.sampler_->rank) +
                   " in epoch " + std::to_string(s.epoch_) +
                   ": take the states at the same training step");
        }
        if (!s.ranks_.empty() || s.merged_) {
            refuse(
                "a state taken while an epoch resumed from a merged state runs cannot be "
                "merged again; finish that epoch first");
        }
        if (!s.done_.empty()) {
            refuse(
                "the states are of an unordered pipeline, with items done past their "
                "positions; merge takes ordered pipelines' states");
        }
        if (s.sampler_->rank >= w) {
            refuse("a state of rank " + std::to_string(s.sampler_->rank) + " in a world of " +
                   std::to_string(w) + " ranks");
        }
        if (!seen.insert(s.sampler_->rank).second) {
            refuse("two states of rank " + std::to_string(s.sampler_->rank));
        }
        positions[s.sampler_->rank] = s.position_;
        failed += s.failed_;
        // A batch_by window partly delivered: its delivered positions, as the saved world's
        // globals, stay out of the rest.
        for (const auto p : s.window_) {
            if (p < s.position_) refuse("a window position lies before its state's position");
            window.push_back(s.sampler_->rank + p * w);
        }
    }
    pipeline_state out(first.epoch_, 0);
    out.sampler_ = first.sampler_;
    out.sampler_->rank = 0;
    out.shape_ = first.shape_;
    out.ranks_ = std::move(positions);
    std::sort(window.begin(), window.end());
    out.window_ = std::move(window);
    out.merged_ = true;
    (void)failed;  // the new ranks' budgets start afresh for the rest of the epoch
    return out;
}

resumed_sampler::resumed_sampler(const pipeline_state& st, std::size_t rank, std::size_t world_size)
    : epoch_(st.epoch()), rank_(rank), world_size_(world_size) {
    const auto& saved = st.saved_sampler();
    if (st.rank_positions().empty() || !saved) {
        throw invalid_argument(
            "resumed_sampler: the state is not a merged one (pipeline_state::merge)");
    }
    if (world_size == 0 || rank >= world_size) {
        throw invalid_argument("resumed_sampler: rank " + std::to_string(rank) +
                               " is not below world_size " + std::to_string(world_size));
    }
    const std::size_t w = st.rank_positions().size();
    if (w != saved->world_size) {
        throw invalid_argument("resumed_sampler: the state holds " + std::to_string(w) +
                               " rank positions for a saved world of " +
                               std::to_string(saved->world_size) + " ranks");
    }
    saved_ = {.shuffle = saved->shuffle,
              .seed = saved->seed,
              .rank = 0,
              .world_size = w,
              .remainder = saved->remainder};
    n_ = saved->n;
    const std::uint64_t per_rank = sampler(n_, saved_).size();
    positions_.reserve(w);
    for (const auto p : st.rank_positions()) positions_.push_back(std::min(p, per_rank));
    // Row i (i >= the lowest position) holds one global not delivered for each rank whose
    // position is at most i: as many as sorted positions up to i. Between two sorted positions
    // that count is constant, so the globals not delivered before each sorted position add up
    // in one pass, and never a list of the globals themselves (a state's few bytes could name
    // an epoch's worth).
    rows_ = positions_;
    std::sort(rows_.begin(), rows_.end());
    before_.assign(w, 0);
    for (std::size_t j = 1; j < w; ++j) {
        before_[j] = before_[j - 1] + (rows_[j] - rows_[j - 1]) * j;
    }
    rest_ = before_[w - 1] + (per_rank - rows_[w - 1]) * w;
    leave_out(st.saved_window(), per_rank);
    if (rest_ == 0) {
        size_ = 0;
    } else if (saved->remainder == remainder::pad) {
        size_ = (rest_ + world_size - 1) / world_size;
    } else {
        size_ = rest_ / world_size;
    }
}

void resumed_sampler::leave_out(const std::vector<std::uint64_t>& window, std::uint64_t per_rank) {
    // Each delivered global's place in the base rest (every global at or past its rank's
    // position, in global order): the undelivered ones in the rows before its own, and in its
    // row, the ranks before it whose positions are at most the row. The rows come in ascending
    // order, so a sweep adds each rank to a Fenwick tree over ranks once its position is reached:
    // O((window + w) log w), whatever the world size.
    const std::size_t w = positions_.size();
    std::vector<std::size_t> by_position(w);
    std::iota(by_position.begin(), by_position.end(), std::size_t{0});
    std::sort(by_position.begin(), by_position.end(),
              [&](std::size_t a, std::size_t b) { return positions_[a] < positions_[b]; });
    std::vector<std::uint64_t> tree(w + 1, 0);
    std::size_t added = 0;
    std::vector<std::uint64_t> places;
    for (const auto g : window) {
        const std::uint64_t row = g / w;
        const auto r = static_cast<std::size_t>(g % w);
        if (row >= per_rank || row < positions_[r]) continue;  // not in the rest
        for (; added < w && positions_[by_position[added]] <= row; ++added) {
            for (std::size_t x = by_position[added] + 1; x <= w; x += x & (~x + 1)) ++tree[x];
        }
        std::uint64_t col = 0;  // ranks before r whose positions are at most the row
        for (std::size_t x = r; x > 0; x -= x & (~x + 1)) col += tree[x];
        const auto j = static_cast<std::size_t>(std::upper_bound(rows_.begin(), rows_.end(), row) -
                                                rows_.begin() - 1);
        places.push_back(before_[j] + (row - rows_[j]) * (j + 1) + col);
    }
    // The window lists globals ascending, so their places ascend too; skipped_[i] is how many
    // of the rest come before the i-th, with the earlier ones left out.
    skipped_.reserve(places.size());
    for (std::size_t i = 0; i < places.size(); ++i) skipped_.push_back(places[i] - i);
    rest_ -= places.size();
}

std::uint64_t resumed_sampler::index(std::uint64_t i) const {
    if (i >= size_) {
        throw invalid_argument("resumed_sampler::index: position " + std::to_string(i) +
                               " is past the share's " + std::to_string(size_) + " items");
    }
    // The position in the rest (padding starts the rest over), then its global position: the
    // k-th global from the lowest saved position's row on that was not delivered. Its row lies
    // in the last stretch between sorted positions that starts at or before k, where each row
    // holds j + 1 such globals; within its row it is the col-th rank whose position is at most
    // the row.
    std::uint64_t k = (rank_ + i * world_size_) % rest_;
    // Past the positions a window delivered: the k-th of what is left is the base rest's
    // (k + those at or before it)-th, and those are the ones whose skipped_ value is at most k.
    k += static_cast<std::uint64_t>(std::upper_bound(skipped_.begin(), skipped_.end(), k) -
                                    skipped_.begin());
    const auto j = static_cast<std::size_t>(std::upper_bound(before_.begin(), before_.end(), k) -
                                            before_.begin() - 1);
    const std::uint64_t into = k - before_[j];
    const std::uint64_t row = rows_[j] + into / (j + 1);
    std::uint64_t col = into % (j + 1);
    std::size_t r = 0;
    for (;; ++r) {
        if (positions_[r] <= row && col-- == 0) break;
    }
    sampling options = saved_;
    options.rank = r;
    return sampler(n_, options).index(epoch_, row);
}

}  // namespace ferry
