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
#include <set>

#include "ferry/error.hpp"
#include "ferry/state.hpp"

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
        if (!seen.insert(s.sampler_->rank).second) {
            refuse("two states of rank " + std::to_string(s.sampler_->rank));
        }
        positions[s.sampler_->rank] = s.position_;
        failed += s.failed_;
    }
    pipeline_state out(first.epoch_, 0);
    out.sampler_ = first.sampler_;
    out.sampler_->rank = 0;
    out.shape_ = first.shape_;
    out.ranks_ = std::move(positions);
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
    sampling options{.shuffle = saved->shuffle,
                     .seed = saved->seed,
                     .rank = 0,
                     .world_size = w,
                     .remainder = saved->remainder};
    for (std::size_t r = 0; r < w; ++r) {
        options.rank = r;
        ranks_.emplace_back(saved->n, options);
    }
    const std::uint64_t per_rank = ranks_.front().size();
    const std::uint64_t total = per_rank * w;
    std::uint64_t done = 0;
    std::uint64_t m = per_rank;
    for (std::size_t r = 0; r < w; ++r) {
        const auto p = std::min(st.rank_positions()[r], per_rank);
        done += p;
        m = std::min(m, p);
    }
    first_ = m * w;
    for (std::size_t r = 0; r < w; ++r) {
        const auto p = std::min(st.rank_positions()[r], per_rank);
        for (std::uint64_t i = m; i < p; ++i) delivered_.push_back(r + i * w);
    }
    std::sort(delivered_.begin(), delivered_.end());
    rest_ = total - done;
    if (rest_ == 0) {
        size_ = 0;
    } else if (saved->remainder == remainder::pad) {
        size_ = (rest_ + world_size - 1) / world_size;
    } else {
        size_ = rest_ / world_size;
    }
}

std::uint64_t resumed_sampler::index(std::uint64_t i) const {
    if (i >= size_) {
        throw invalid_argument("resumed_sampler::index: position " + std::to_string(i) +
                               " is past the share's " + std::to_string(size_) + " items");
    }
    // The position in the rest (padding starts the rest over), then its global position: the
    // k-th global from first_ on that was not delivered.
    const std::uint64_t k = (rank_ + i * world_size_) % rest_;
    std::uint64_t g = first_ + k;
    for (const auto d : delivered_) {
        if (d > g) break;
        ++g;
    }
    const std::size_t w = ranks_.size();
    return ranks_[g % w].index(epoch_, g / w);
}

}  // namespace ferry
