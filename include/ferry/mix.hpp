// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::mix`: several datasets of one element type drawn by weight into one source, each with
/// its own order, exactly resumable.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/from.hpp"
#include "ferry/mixing.hpp"

namespace ferry {
namespace detail {

/// A range's value and reference types; void for what is not a range.
template <class R>
struct range_parts {
    using value = void;
    using reference = void;
};
template <std::ranges::range R>
struct range_parts<R> {
    using value = std::ranges::range_value_t<R>;
    using reference = std::ranges::range_reference_t<R>;
};

/// What `mix_input<T>` checks of a dataset `R`: one condition per message, each true when the
/// one before failed, so that a mistake gives one error (detail/builder_checks.hpp says why).
template <class R, class T>
struct mix_input_check {
    static constexpr bool random_access =
        std::ranges::random_access_range<R> && std::ranges::sized_range<R>;
    static constexpr bool same_type =
        !random_access || std::is_same_v<typename range_parts<R>::value, T>;
    static constexpr bool copyable = !random_access || !same_type ||
                                     std::is_constructible_v<T, typename range_parts<R>::reference>;
    static constexpr bool ok = random_access && same_type && copyable;
};

/// Asserts, in words, what a mix's source needs (`mix_input_check`'s conditions); true when
/// it can be read.
template <class R, class T>
consteval bool accept_mix_input() {
    using check = mix_input_check<R, T>;
    static_assert(check::random_access,
                  "ferry::mix_input: a mix's source must be a sized random-access range (a "
                  "std::vector, ferry::sources::labelled_files, ...)");
    static_assert(check::same_type,
                  "ferry::mix_input<T>: every source of a mix must have elements of the mix's "
                  "type T (its dataset's range_value_t differs); map them to one type first");
    static_assert(check::copyable,
                  "ferry::mix_input: the elements must be copyable: an element can be delivered "
                  "again (next epoch, next pass, or as padding)");
    return check::ok;
}

}  // namespace detail

/// One source of a mix: a dataset (a sized random-access range whose elements are `T`), its
/// weight and how it is visited. As with `ferry::from(dataset, sampling)`, an lvalue dataset is
/// read in place (keep it alive), an rvalue is owned; its size is read again every epoch.
/// \code
///   ferry::mix_input<sample> a{imagenet, 0.7, {.shuffle = true, .seed = 1}};
///   ferry::mix_input b{webcrawl, 0.3};   // T deduced from the dataset
/// \endcode
template <class T>
class mix_input {
  public:
    /// `dataset` with `weight` (relative to the other sources', >= 0) and `options`.
    template <class R>
    requires(!std::same_as<std::remove_cvref_t<R>, mix_input>)
        mix_input(R&& dataset, double weight, mix_source_options options = {})
        : weight_(weight), options_(options) {
        // A mistake's first error is the check's static_assert; the rest compiles only without.
        if constexpr (detail::accept_mix_input<R, T>()) {
            auto holder = detail::hold_range(std::forward<R>(dataset));
            size_ = [holder] { return static_cast<std::uint64_t>(std::ranges::size(*holder)); };
            at_ = [holder](std::uint64_t i, detail::any_value& out) {
                out.emplace<T>(std::ranges::begin(
                    *holder)[static_cast<std::ranges::range_difference_t<R>>(i)]);
            };
        }
    }

    /// The weight as given.
    [[nodiscard]] double weight() const noexcept { return weight_; }
    /// The options as given.
    [[nodiscard]] const mix_source_options& options() const noexcept { return options_; }
    /// The dataset's size now.
    [[nodiscard]] std::uint64_t size() const { return size_(); }
    /// Puts a copy of element `i` (below `size()`) into `out` (engine side).
    void copy_to(std::uint64_t i, detail::any_value& out) const { at_(i, out); }

  private:
    double weight_;
    mix_source_options options_;
    std::function<std::uint64_t()> size_;
    std::function<void(std::uint64_t, detail::any_value&)> at_;
};

/// `mix_input{dataset, weight}` is a `mix_input` of the dataset's elements.
template <class R>
mix_input(R&&, double, mix_source_options = {}) -> mix_input<std::ranges::range_value_t<R>>;

namespace detail {

/// The sources' sizes, weights and options now, as `mix_sampler` takes them.
template <class T>
std::vector<mix_sampler::source> mix_sources(const std::vector<mix_input<T>>& inputs) {
    std::vector<mix_sampler::source> sources;
    sources.reserve(inputs.size());
    for (const auto& in : inputs) sources.push_back({in.size(), in.weight(), in.options()});
    return sources;
}

/// A cursor over epoch `epoch` of the mix `numbers` from `position` on.
template <class T>
source_cursor mix_cursor(std::shared_ptr<const std::vector<mix_input<T>>> inputs,
                         mix_sampler numbers, std::uint64_t epoch, std::uint64_t position) {
    struct state {
        state(std::shared_ptr<const std::vector<mix_input<T>>> in, mix_sampler m, std::uint64_t e,
              std::uint64_t p)
            : inputs(std::move(in)), numbers(std::move(m)), at(numbers.open(e, p)) {}
        std::shared_ptr<const std::vector<mix_input<T>>> inputs;
        mix_sampler numbers;
        mix_sampler::cursor at;  // refers to `numbers`: the state stays where it was made
    };
    auto st = std::make_shared<state>(std::move(inputs), std::move(numbers), epoch, position);
    return [st](any_value& out) {
        const auto pick = st->at.next();
        if (!pick) return false;
        (*st->inputs)[pick->source].copy_to(pick->index, out);
        return true;
    };
}

}  // namespace detail

/// Draws several datasets of one element type into one source by weight: position `g` of epoch
/// `e` takes the source that `ferry::mix_sampler`'s draw from (`options.seed`, `e`, `g`) names —
/// the same on every machine and independent of threads and concurrency, so the realised
/// proportions follow the weights within binomial noise and a run is reproducible — and that
/// source's next item in its own order (`mix_source_options`: shuffled or not, repeated or not).
/// The epoch ends by `options.stop`; with `options.world_size` > 1 every source is split over
/// the ranks and every rank gets the same count.
///
/// The result is a `source_builder<T>`: add stages to it, or pass it to `ferry::from`. Its state
/// is a position, as a plain source's, so `pipeline::state()` and `resume_from` resume it exactly
/// (opening a saved epoch replays the draws before the position, about 20 ns each); the ranks'
/// states merge (`pipeline_state::merge`) to resume on another world size, each item of the
/// epoch once over both runs up to padding (`mix_sampler`'s merged constructor says how). The
/// state names the mix by `mix_sampler::fingerprint()`: another mix's state is refused.
/// `item_info::index` is the mix position; `item_info::seed` is `options.seed`.
///
/// Throws `ferry::invalid_argument` at once (see `mix_sampler`) for no sources, a weight that is
/// negative, NaN or infinite, all weights 0, a bad rank, or rules that never end an epoch.
/// Sources with another element type do not compile (`mix_input<T>`'s `static_assert`).
/// \code
///   auto mixed = ferry::mix<sample>({{imagenet, 0.7, {.shuffle = true, .seed = 1}},
///                                    {webcrawl, 0.3, {.shuffle = true, .seed = 2}}},
///                                   {.seed = 42, .stop = ferry::mix_stop::first_exhausted,
///                                    .rank = w.rank, .world_size = w.size});
///   auto pipe = ferry::from(mixed).map(load, 8).batch(64).build({.resume_from = saved});
/// \endcode
/// The element type is named (`mix<sample>`) because C++ deduces nothing from nested braces;
/// `ferry::mix({ferry::mix_input{a, 0.7}, ferry::mix_input{b, 0.3}})` deduces it.
template <class T>
[[nodiscard]] source_builder<T> mix(std::vector<mix_input<T>> sources,
                                    const mix_options& options = {}) {
    // Refuses bad weights and rules now; names the mix in saved states.
    const mix_sampler now(detail::mix_sources(sources), options);
    const sampler_identity identity{now.fingerprint(),  options.seed,   options.rank,
                                    options.world_size, remainder::pad, true,
                                    sampled_source::mix};
    auto inputs = std::make_shared<const std::vector<mix_input<T>>>(std::move(sources));
    auto open_at = [inputs, options](std::uint64_t epoch, std::uint64_t position) {
        return detail::mix_cursor<T>(inputs, mix_sampler(detail::mix_sources(*inputs), options),
                                     epoch, position);
    };
    auto open = [open_at](std::uint64_t epoch) { return open_at(epoch, 0); };
    // The rest of a merged epoch (pipeline_state::merge), this rank's share of it.
    auto open_resumed = [inputs, options](const pipeline_state& st) {
        return detail::mix_cursor<T>(inputs, mix_sampler(detail::mix_sources(*inputs), options, st),
                                     st.epoch(), st.position());
    };
    return detail::make_source<T>(std::move(open), {}, options.seed, std::move(open_at), identity,
                                  std::move(open_resumed));
}

/// `mix` over a braced list: `ferry::mix<T>({{a, 0.7}, {b, 0.3}}, options)`.
template <class T>
[[nodiscard]] source_builder<T> mix(std::initializer_list<mix_input<T>> sources,
                                    const mix_options& options = {}) {
    return mix<T>(std::vector<mix_input<T>>(sources), options);
}

}  // namespace ferry
