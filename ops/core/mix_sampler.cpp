// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::mix_sampler`: the draw at each position of a weighted mix, and each source's item.
///
/// A position's draw is splitmix64 over a key from (seed, epoch) and the position: 53 bits make
/// a uniform double u in [0, 1), and the source is the first whose running weight sum passes
/// u times the total (IEEE arithmetic in a fixed order: the same on every machine). Sources that
/// leave the draw are taken out of the running sums, so the others keep their relative odds.

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "ferry/error.hpp"
#include "ferry/mixing.hpp"
#include "ferry/this_call.hpp"

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
    // Only the counts matter before the position: no item index is worked out. An endless mix
    // resumed far in stops when its pipeline is stopped (a resume opens it inside a stage call).
    while (c.position() < position) {
        if (this_call::stop_requested()) {
            throw error(errc::cancelled, "mix: stopped while drawing to the saved position " +
                                             std::to_string(position) + " (at " +
                                             std::to_string(c.position()) + ")");
        }
        if (!c.draw()) {
            throw invalid_argument("mix: the saved position " + std::to_string(position) +
                                   " is past the end of epoch " + std::to_string(epoch) +
                                   ", which has " + std::to_string(c.position()) + " items");
        }
    }
    return c;
}

std::uint64_t mix_sampler::first_size(std::size_t k, std::uint64_t epoch) const {
    return resumed(epoch) ? rest_[k]->size() : shares_[k].size();
}

std::uint64_t mix_sampler::index_of(std::size_t k, std::uint64_t epoch, std::uint64_t c) const {
    const std::uint64_t first = first_size(k, epoch);
    if (c < first) {
        return resumed(epoch) ? rest_[k]->index(c) : shares_[k].index(pass_key(epoch, 0), c);
    }
    const std::uint64_t share = shares_[k].size();
    const std::uint64_t pass = 1 + (c - first) / share;
    return shares_[k].index(pass_key(epoch, pass), (c - first) % share);
}

mix_sampler::mix_sampler(std::vector<source> sources, const mix_options& options,
                         const pipeline_state& merged)
    : mix_sampler(std::move(sources), options) {
    const auto& saved = merged.saved_sampler();
    const auto& positions = merged.rank_positions();
    if (!saved || positions.empty()) {
        refuse_mix("the state to resume the rest of is not merged (pipeline_state::merge)");
    }
    // Every saved rank drew the same sources: how far each source had got at each rank's
    // position is one replay of the saved world's draws.
    mix_options was = options_;
    was.rank = 0;
    was.world_size = saved->world_size;
    const mix_sampler before(sources_, was);
    std::vector<std::size_t> order(positions.size());
    for (std::size_t r = 0; r < order.size(); ++r) order[r] = r;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return positions[a] < positions[b]; });
    std::vector<std::vector<std::uint64_t>> taken(sources_.size(),
                                                  std::vector<std::uint64_t>(positions.size()));
    auto c = before.open(merged.epoch());
    for (const std::size_t r : order) {
        while (c.position() < positions[r] && c.draw()) {
        }
        for (std::size_t k = 0; k < sources_.size(); ++k) {
            // Passes after the first are the repeating sources' own: the first is what resumes.
            taken[k][r] = std::min(c.taken(k), before.share(k));
        }
    }
    // A batch_by window delivered past a rank's position (the saved world's globals): each of
    // its mix positions is an item of the source drawn there, at that source's count, which
    // the source's rest leaves out. One more replay, over the window's positions in order.
    const std::size_t w = positions.size();
    std::vector<std::vector<std::vector<std::uint64_t>>> windows(
        sources_.size(), std::vector<std::vector<std::uint64_t>>(w));
    std::vector<std::pair<std::uint64_t, std::size_t>> delivered;  // (position, rank)
    for (const auto g : merged.saved_window()) delivered.emplace_back(g / w, g % w);
    std::sort(delivered.begin(), delivered.end());
    auto d = before.open(merged.epoch());
    std::optional<std::size_t> drawn;  // the source at `drawn_at`, and its count there
    std::uint64_t drawn_at = 0;
    std::uint64_t count = 0;
    for (const auto& [p, r] : delivered) {
        if (!drawn || drawn_at != p) {
            while (d.position() < p && d.draw()) {
            }
            if (d.position() != p) break;  // past the epoch's end
            drawn = d.draw();
            if (!drawn) break;
            drawn_at = p;
            count = d.taken(*drawn) - 1;
        }
        if (count < before.share(*drawn)) windows[*drawn][r].push_back(count);
    }
    // Each source's rest: its saved ranks' states at those counts, merged and split anew.
    for (std::size_t k = 0; k < sources_.size(); ++k) {
        std::vector<pipeline_state> states;
        for (std::size_t r = 0; r < positions.size(); ++r) {
            pipeline_state st(merged.epoch(), taken[k][r]);
            st.set_window(std::move(windows[k][r]));
            st.set_sampler(sampler_identity{sources_[k].size, sources_[k].options.seed, r,
                                            saved->world_size, sources_[k].options.remainder,
                                            sources_[k].options.shuffle});
            states.push_back(std::move(st));
        }
        rest_.push_back(std::make_shared<const resumed_sampler>(pipeline_state::merge(states),
                                                                options.rank, options.world_size));
    }
    rest_epoch_ = merged.epoch();
}

std::uint64_t mix_sampler::fingerprint() const noexcept {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    const auto add = [&h](std::uint64_t v) { h = draw_bits(h ^ (v + draw_golden)); };
    add(sources_.size());
    for (const auto& s : sources_) {
        add(s.size);
        add(std::bit_cast<std::uint64_t>(s.weight));
        add(s.options.seed);
        add((s.options.shuffle ? 1U : 0U) | (s.options.repeat ? 2U : 0U) |
            (s.options.remainder == remainder::pad ? 4U : 0U));
    }
    add(static_cast<std::uint64_t>(options_.stop));
    add(options_.epoch_length);
    // Kept below 2^63: it stands where a dataset size does.
    return h >> 1;
}

mix_sampler::cursor::cursor(const mix_sampler& owner, std::uint64_t epoch)
    : owner_(&owner),
      epoch_(epoch),
      // The rest of a merged epoch draws with keys of its own.
      key_(draw_bits(owner.options_.seed ^ draw_bits(epoch + draw_golden)) ^
           (owner.resumed(epoch) ? draw_bits(~epoch) : 0)),
      taken_(owner.sources_.size(), 0),
      in_draw_(owner.sources_.size(), false),
      upto_(owner.sources_.size(), 0.0) {
    const bool keep_empty = owner.options_.stop == mix_stop::first_exhausted;
    bool finite_sources = false;
    for (std::size_t k = 0; k < in_draw_.size(); ++k) {
        // An empty source has nothing to give, even on repeat: under first_exhausted its first
        // draw ends the epoch; under the other rules it never takes part.
        const bool repeats =
            owner.sources_[k].options.repeat || owner.options_.stop == mix_stop::never;
        const bool has_items = owner.first_size(k, epoch) > 0 || (repeats && owner.share(k) > 0);
        in_draw_[k] = owner.sources_[k].weight > 0 && (keep_empty || has_items);
        if (in_draw_[k] && !owner.sources_[k].options.repeat) ++finite_;
        if (owner.sources_[k].weight > 0 && !owner.sources_[k].options.repeat)
            finite_sources = true;
    }
    // all_exhausted with every source that does not repeat empty from the start (the rest of a
    // merged epoch that the saved ranks had finished): nothing is left to end on, so nothing
    // is drawn.
    if (owner.options_.stop == mix_stop::all_exhausted && finite_sources && finite_ == 0) {
        ended_ = true;
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
    const auto k = draw();
    if (!k) return std::nullopt;
    const std::uint64_t c = taken_[*k] - 1;
    const std::uint64_t first = owner_->first_size(*k, epoch_);
    return pick{*k, owner_->index_of(*k, epoch_, c),
                c < first ? 0 : 1 + (c - first) / owner_->share(*k)};
}

std::optional<std::size_t> mix_sampler::cursor::draw() {
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
        const std::uint64_t first = owner_->first_size(k, epoch_);
        const bool repeats = src.options.repeat || opts.stop == mix_stop::never;
        const bool used_up =
            repeats ? (taken_[k] >= first && owner_->share(k) == 0) : taken_[k] == first;
        if (used_up) {
            if (opts.stop == mix_stop::first_exhausted) {
                ended_ = true;
                return std::nullopt;
            }
            leave(k);  // draw again at the same position among the rest
            if (ended_) return std::nullopt;
            continue;
        }
        ++taken_[k];
        ++position_;
        // all_exhausted: a source leaves once its last item is taken, so the epoch ends right
        // after the last item of the last source rather than at a draw that finds nothing.
        if (!repeats && taken_[k] == first && opts.stop != mix_stop::first_exhausted) leave(k);
        return k;
    }
}

}  // namespace ferry
