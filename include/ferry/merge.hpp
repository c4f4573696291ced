// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::merge`: sub-pipelines, each with its own source and stages, merged into one pipeline
/// in a deterministic order, exactly resumable.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/builder.hpp"
#include "ferry/error.hpp"
#include "ferry/mixing.hpp"

namespace ferry {

/// How `ferry::merge` orders its branches' items.
struct merge_options {
    /// Each branch's share of the merged stream, relative (>= 0, finite, not all 0), one per
    /// branch; empty: round robin (every branch 1). The order is a smooth weighted round robin:
    /// at each position every branch in the draw gains its weight, the one with the most credit
    /// gives the item and pays the total back (a tie goes to the lower branch), so that {1, 3}
    /// gives b1 b0 b1 b1 | b1 b0 b1 b1 ...
    /// and every prefix keeps the proportions within one item per branch. No seed: the order is
    /// the weights'. A weight counts its branch's *source* items: a branch that flat_maps (a
    /// shard into its samples) gives all outputs of an item, in their order, at the item's turn.
    std::vector<double> weights{};
    /// When the epoch ends: `all_exhausted` (the default: a branch whose source ends leaves the
    /// draw and the others share its turns) or `first_exhausted` (at the first position whose
    /// branch has no item left). `never` is refused (a merge knows no source sizes).
    mix_stop stop = mix_stop::all_exhausted;
    /// Name in stats and failures: the branches' stages are `<name>/<branch> <stage>`.
    std::string name = "merge";
    /// Keep the merged order across the branches' stages (the default); false: completion order
    /// (the pipeline then resumes as an unordered one does). A merge with a flat_map or unbatch
    /// in a branch keeps the merged order always.
    bool ordered = true;
    /// The branches' names, one per branch, in their stages' names (`merge/local map#2`) and so
    /// in stats and failures; empty: their indices (`merge/0 map#2`).
    std::vector<std::string> names{};
};

namespace detail {

/// A merged source's element on its way to the merge's route: the branch it came from and the
/// branch source's element.
struct merge_item {
    std::size_t branch = 0;
    any_value value;
};

/// The smooth weighted round robin of `merge_options::weights` over the branches in the draw.
class merge_order {
  public:
    explicit merge_order(std::vector<double> weights)
        : weights_(std::move(weights)),
          credit_(weights_.size(), 0.0),
          in_draw_(weights_.size(), true) {
        for (std::size_t b = 0; b < weights_.size(); ++b) {
            if (weights_[b] <= 0) in_draw_[b] = false;
        }
    }
    /// The branch of the next position; nothing when no branch is left.
    std::optional<std::size_t> draw() {
        double total = 0;
        std::optional<std::size_t> best;
        for (std::size_t b = 0; b < weights_.size(); ++b) {
            if (!in_draw_[b]) continue;
            credit_[b] += weights_[b];
            total += weights_[b];
            if (!best || credit_[b] > credit_[*best]) best = b;
        }
        if (best) credit_[*best] -= total;
        return best;
    }
    /// Branch `b` has no item left: it leaves the draw, and the turn it took is undone.
    void leave(std::size_t b) {
        double total = 0;
        for (std::size_t k = 0; k < weights_.size(); ++k) {
            if (in_draw_[k]) total += weights_[k];
        }
        credit_[b] += total;
        for (std::size_t k = 0; k < weights_.size(); ++k) {
            if (in_draw_[k]) credit_[k] -= weights_[k];
        }
        in_draw_[b] = false;
    }

  private:
    std::vector<double> weights_;
    std::vector<double> credit_;
    std::vector<bool> in_draw_;
};

/// The branch of the element the calling thread described last: the engine asks `excluded`
/// right after `describe`, on the same thread, for the same element (per thread, so that
/// pipelines built from one merge can run at once).
inline std::size_t& merge_described() {
    thread_local std::size_t branch = 0;
    return branch;
}

/// The weights `merge` draws with, checked: one per branch (or none: all 1).
inline std::vector<double> merge_weights(const merge_options& options, std::size_t branches) {
    if (branches == 0) throw invalid_argument("ferry::merge: no branches to merge");
    if (options.stop == mix_stop::never) {
        throw invalid_argument(
            "ferry::merge: stop = mix_stop::never is not a merge's rule (a merge ends with its "
            "branches' sources: all_exhausted or first_exhausted)");
    }
    if (!options.names.empty() && options.names.size() != branches) {
        throw invalid_argument("ferry::merge: " + std::to_string(options.names.size()) +
                               " names for " + std::to_string(branches) + " branches");
    }
    if (options.weights.empty()) return std::vector<double>(branches, 1.0);
    if (options.weights.size() != branches) {
        throw invalid_argument("ferry::merge: " + std::to_string(options.weights.size()) +
                               " weights for " + std::to_string(branches) + " branches");
    }
    bool any = false;
    for (std::size_t b = 0; b < branches; ++b) {
        const double w = options.weights[b];
        if (!std::isfinite(w) || w < 0) {
            throw invalid_argument("ferry::merge: branch " + std::to_string(b) + "'s weight " +
                                   std::to_string(w) + " is not a finite number >= 0");
        }
        any = any || w > 0;
    }
    if (!any) throw invalid_argument("ferry::merge: every weight is 0");
    return options.weights;
}

/// The merged source over the branches' sources: elements are `merge_item`s, in
/// `merge_order`'s order; a resume at position p replays the p positions before it, pulling and
/// dropping the branches' elements (O(p), `open_source_at`), so that each branch stands where it
/// stood.
inline source_spec merge_source(std::vector<source_spec> branches, std::vector<double> weights,
                                mix_stop stop) {
    struct shared {
        std::vector<source_spec> branches;
        std::vector<double> weights;
        mix_stop stop;
    };
    auto parts = std::make_shared<shared>(shared{std::move(branches), std::move(weights), stop});
    auto open = [parts](std::uint64_t epoch) -> source_cursor {
        struct walk {
            std::vector<source_cursor> cursors;
            merge_order order;
        };
        auto w = std::make_shared<walk>(walk{{}, merge_order(parts->weights)});
        for (const auto& b : parts->branches) w->cursors.push_back(b.open(epoch));
        return [parts, w](any_value& out) {
            any_value inner;
            for (;;) {
                const auto b = w->order.draw();
                if (!b) return false;
                if (w->cursors[*b](inner)) {
                    out.emplace<merge_item>(merge_item{*b, std::move(inner)});
                    return true;
                }
                if (parts->stop == mix_stop::first_exhausted) return false;
                w->order.leave(*b);
            }
        };
    };
    // No open_at: a resume opens the epoch and drops the positions before it
    // (detail::open_source_at), which is the replay a merge needs.
    source_spec spec;
    spec.open = open;
    bool describes = false;
    bool excludes = false;
    for (const auto& b : parts->branches) {
        describes = describes || static_cast<bool>(b.describe);
        excludes = excludes || static_cast<bool>(b.excluded);
    }
    if (describes) {
        spec.describe = [parts](any_value& v, std::string& out) {
            auto& item = v.get<merge_item>();
            merge_described() = item.branch;
            const auto& d = parts->branches[item.branch].describe;
            if (d) d(item.value, out);
        };
    }
    if (excludes) {
        spec.excluded = [parts](const std::string& input) {
            const auto& e = parts->branches[merge_described()].excluded;
            return e && e(input);
        };
    }
    return spec;
}

template <class T>
builder<T> make_merge(const std::vector<builder<T>>& branches, const merge_options& options) {
    auto weights = merge_weights(options, branches.size());
    std::vector<source_spec> sources;
    stage_spec route;
    route.kind = stage_kind::route;
    route.options.name = options.name;
    route.options.ordered = options.ordered;
    route.branch_names = options.names;
    // The branch is the merged element's own; the route hands on the branch source's element.
    route.select_fn = [](any_value& v) {
        merge_item item = v.take_as<merge_item>();
        v = std::move(item.value);
        return static_cast<std::int64_t>(item.branch);
    };
    for (std::size_t b = 0; b < branches.size(); ++b) {
        sources.push_back(source_access::source(branches[b]));
        route.branches.push_back(source_access::stages(branches[b]));
    }
    check_branches("ferry::merge", route.branches);
    const builder<T> merged(merge_source(std::move(sources), std::move(weights), options.stop));
    return source_access::with_stage<T>(merged, std::move(route));
}

}  // namespace detail

/// Merges sub-pipelines into one: each branch keeps its own source (any that `ferry::from`
/// takes, of any element type) and its own stages (map, filter, map_async, flat_map, unbatch,
/// each with its own concurrency and executor), all compiled into the one flow graph (a route,
/// no thread per branch), and every branch must end with the same element type `T`. The merged
/// stream takes the branches' source items in `merge_options::weights`' smooth round robin (all
/// outputs of an item that a branch expands come in a row), so a run is reproducible: the same
/// items in the same order at any thread count or concurrency. The
/// branches' stages are named `merge/<branch> <stage>` in stats and failures (`<branch>`: its
/// index, or its name from `merge_options::names`); every item is
/// counted once, by its branch. A pipeline over a merge resumes exactly (its state is the
/// merged position; the resume replays the positions before it, pulling and dropping the
/// branches' source elements without running their stages); its ranks' states do not merge.
/// `item_info` names the merged position.
/// \code
///   auto local  = ferry::from(files).map(read_file, {.concurrency = 4, .executor = ferry::io});
///   auto remote = ferry::from(shard_urls).flat_map(tar_samples_of).map(to_bytes);
///   auto both   = ferry::merge({local, remote}, {.weights = {1, 3}}).map(decode, 8).batch(32)
///                     .build();
/// \endcode
/// Throws `ferry::invalid_argument` for no branches, weights that are not one finite number >= 0
/// per branch or are all 0, `mix_stop::never`, or a branch with a batch, batch_by or route
/// (those go after the merge). Branches that end with different element types do not compile:
/// the call's first error is a static_assert saying so, one per branch type, each with the
/// type in the compiler's note.
template <class T>
[[nodiscard]] builder<T> merge(std::initializer_list<builder<T>> branches,
                               merge_options options = {}) {
    return detail::make_merge<T>(std::vector<builder<T>>(branches), options);
}

namespace detail {

/// One branch of `merge({a, b, ...})` whose branches' element types differ (no `T` deduces),
/// `U` its type: needed complete as the branch converts, at the call, so that its assertion
/// is the call's first error and the compiler's note names `U`, one error per type.
template <class U>
struct merge_branch_type {
    static_assert(dependent_false<U>,
                  "ferry::merge({a, b, ...}): every branch must end with the same element type T "
                  "(each a ferry::builder<T>); the branches' types differ, this one's is U (the "
                  "compiler's note names it); map the branches to one type");
};

/// A branch of `merge({a, b, ...})` when the branches' element types differ.
struct mismatched_branch {
    // NOLINTNEXTLINE(google-explicit-constructor): implicit, so that a braced list converts
    template <class U>
    mismatched_branch(const builder<U>& /*branch*/, merge_branch_type<U> /*checked*/ = {}) {}
};

}  // namespace detail

/// Branches whose element types differ: does not compile (`detail::merge_branch_type`), naming
/// each branch's type; the result's elements are `detail::rejected_element`, on which later
/// builder calls add no errors of their own. `merge({})` compiles and throws
/// `ferry::invalid_argument` (no branches), as `merge` of an empty vector does.
[[nodiscard]] inline builder<detail::rejected_element> merge(
    std::initializer_list<detail::mismatched_branch> branches, const merge_options& options = {}) {
    // Only an empty list gets here: a list with a branch did not compile.
    (void)detail::merge_weights(options, branches.size());
    return builder<detail::rejected_element>(detail::source_spec{});
}

/// `merge` over a list made at run time.
template <class T>
[[nodiscard]] builder<T> merge(const std::vector<builder<T>>& branches,
                               merge_options options = {}) {
    return detail::make_merge<T>(branches, options);
}

}  // namespace ferry
