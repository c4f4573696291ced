// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::mix_sampler`: the draw at each position of a weighted mix, and each source's item.
///
/// A position's draw is splitmix64 over a key from (seed, epoch) and the position: 53 bits make
/// a uniform double u in [0, 1), and the source is the first whose running weight sum passes
/// u times the total (IEEE arithmetic in a fixed order: the same on every machine). Sources that
/// leave the draw are taken out of the running sums, so the others keep their relative odds.

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "ferry/error.hpp"
#include "ferry/mixing.hpp"

namespace ferry {
namespace {

constexpr std::uint64_t draw_golden = 0x9e3779b97f4a7c15ULL;

constexpr std::uint64_t draw_bits(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// The sampler epoch of pass `pass` over a source in mix epoch `epoch`: the first pass is the
/// epoch itself (so a source that does not repeat is visited as `from(dataset, sampling)`
/// visits it), later passes have keys of their own.
constexpr std::uint64_t pass_key(std::uint64_t epoch, std::uint64_t pass) noexcept {
    return pass == 0 ? epoch : draw_bits(epoch ^ draw_bits(pass * draw_golden));
}

[[noreturn]] void refuse_mix(const std::string& why) {
    throw invalid_argument("ferry::mix: " + why);
}

}  // namespace

mix_sampler::mix_sampler(std::vector<source> sources, const mix_options& options)
    : sources_(std::move(sources)), options_(options) {
    if (sources_.empty()) refuse_mix("no sources; give at least one {dataset, weight}");
    if (options.world_size == 0) refuse_mix("world_size is 0; it must be at least 1");
    if (options.rank >= options.world_size) {
        refuse_mix("rank " + std::to_string(options.rank) + " is not below world_size " +
                   std::to_string(options.world_size) + " (ranks count from 0)");
    }
    bool any_weight = false;
    for (std::size_t k = 0; k < sources_.size(); ++k) {
        const double w = sources_[k].weight;
        if (std::isnan(w) || std::isinf(w)) {
            refuse_mix("source " + std::to_string(k) + " has weight " + std::to_string(w) +
                       "; a weight must be a finite number >= 0");
        }
        if (w < 0) {
            refuse_mix("source " + std::to_string(k) + " has a negative weight (" +
                       std::to_string(w) + "); a weight must be >= 0");
        }
        any_weight = any_weight || w > 0;
        shares_.emplace_back(sources_[k].size,
                             sampling{.shuffle = sources_[k].options.shuffle,
                                      .seed = sources_[k].options.seed,
                                      .rank = options.rank,
                                      .world_size = options.world_size,
                                      .remainder = sources_[k].options.remainder});
    }
    if (!any_weight) {
        refuse_mix("every weight is 0 (" + std::to_string(sources_.size()) +
                   " sources); at least one must be above 0");
    }
    if (options.stop != mix_stop::never && options.epoch_length == 0) {
        const bool ends = std::any_of(sources_.begin(), sources_.end(), [](const source& s) {
            return s.weight > 0 && !s.options.repeat;
        });
        if (!ends) {
            refuse_mix(
                "every source with a weight above 0 repeats, so an epoch would never end; use "
                "stop = mix_stop::never (with an epoch_length, or for one endless epoch), or "
                "set an epoch_length");
        }
    }
}

mix_sampler::cursor mix_sampler::open(std::uint64_t epoch, std::uint64_t position) const {
    cursor c(*this, epoch);
    while (c.position() < position && c.next()) {
    }
    return c;
}

mix_sampler::cursor::cursor(const mix_sampler& owner, std::uint64_t epoch)
    : owner_(&owner),
      epoch_(epoch),
      key_(draw_bits(owner.options_.seed ^ draw_bits(epoch + draw_golden))),
      taken_(owner.sources_.size(), 0),
      in_draw_(owner.sources_.size(), false),
      upto_(owner.sources_.size(), 0.0) {
    const bool keep_empty = owner.options_.stop == mix_stop::first_exhausted;
    for (std::size_t k = 0; k < in_draw_.size(); ++k) {
        // An empty source has nothing to give, even on repeat: under first_exhausted its first
        // draw ends the epoch; under the other rules it never takes part.
        in_draw_[k] = owner.sources_[k].weight > 0 && (keep_empty || owner.share(k) > 0);
        if (in_draw_[k] && !owner.sources_[k].options.repeat) ++finite_;
    }
    // all_exhausted ends when the last source that does not repeat leaves; with none, only the
    // epoch_length does.
    if (owner.options_.stop == mix_stop::never) finite_ = 0;
    leave(in_draw_.size());  // computes the running sums
}

void mix_sampler::cursor::leave(std::size_t k) {
    if (k < in_draw_.size()) {
        in_draw_[k] = false;
        if (!owner_->sources_[k].options.repeat && finite_ > 0 && --finite_ == 0 &&
            owner_->options_.stop == mix_stop::all_exhausted) {
            ended_ = true;
        }
    }
    double sum = 0;
    for (std::size_t i = 0; i < in_draw_.size(); ++i) {
        if (in_draw_[i]) sum += owner_->sources_[i].weight;
        upto_[i] = sum;
    }
}

std::optional<mix_sampler::pick> mix_sampler::cursor::next() {
    const auto& opts = owner_->options_;
    if (ended_ || (opts.epoch_length != 0 && position_ >= opts.epoch_length)) return std::nullopt;
    for (;;) {
        const double total = upto_.back();
        if (total <= 0) {
            ended_ = true;  // every source has left the draw
            return std::nullopt;
        }
        const double u =
            static_cast<double>(draw_bits(key_ ^ draw_bits(position_ + draw_golden)) >> 11) *
            0x1.0p-53;
        const double at = u * total;
        auto it = std::upper_bound(upto_.begin(), upto_.end(), at);
        // Rounding can put `at` on the total itself: the last source in the draw takes it.
        while (it == upto_.end() || !in_draw_[static_cast<std::size_t>(it - upto_.begin())]) {
            if (it == upto_.begin()) break;
            --it;
        }
        const auto k = static_cast<std::size_t>(it - upto_.begin());
        const auto& src = owner_->sources_[k];
        const std::uint64_t share = owner_->share(k);
        const bool repeats = src.options.repeat || opts.stop == mix_stop::never;
        const bool used_up = share == 0 || (!repeats && taken_[k] == share);
        if (used_up) {
            if (opts.stop == mix_stop::first_exhausted) {
                ended_ = true;
                return std::nullopt;
            }
            leave(k);  // draw again at the same position among the rest
            if (ended_) return std::nullopt;
            continue;
        }
        const std::uint64_t c = taken_[k]++;
        const std::uint64_t pass = c / share;
        pick p{k, owner_->shares_[k].index(pass_key(epoch_, pass), c % share), pass};
        ++position_;
        // all_exhausted: a source leaves once its last item is taken, so the epoch ends right
        // after the last item of the last source rather than at a draw that finds nothing.
        if (!repeats && taken_[k] == share && opts.stop != mix_stop::first_exhausted) leave(k);
        return p;
    }
}

}  // namespace ferry
